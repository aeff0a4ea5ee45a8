# pirex: the user's interface. `make` lists the targets; each is a short call into pirex.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec
.DEFAULT_GOAL := help

##@ Settings (override on the command line: make build PLATFORMS=linux/arm64 OFFLINE=1)
# Platforms to build: comma-separated subset of linux/amd64,linux/arm64,linux/arm/v7; all; host
PLATFORMS ?= all
# 1: build the bases from Debian packages (no container registry); 0: public images; auto: probe
OFFLINE ?= auto
# Image tag; default: git describe of this checkout
TAG ?=
# Where `make push` publishes: host[:port]/namespace
REGISTRY ?=
# The record of published images
REGISTRY_FILE ?= registry.yaml
PYTHON ?= python3
VENV ?= .venv

PIREX = $(VENV)/bin/pirex
TAG_ARG = $(if $(TAG),--tag $(TAG))

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	for i in 1 2 3; do $(VENV)/bin/pip install -q -e '.[dev]' && break; sleep $$((i * 5)); done
	touch $@

##@ Experiments
.PHONY: run
run: $(VENV)/.installed ## Run the quick profile of every experiment here, natively and in Docker, then the tables.
	$(PIREX) run

##@ Images
.PHONY: build
build: $(VENV)/.installed ## Build every image for PLATFORMS into the local registry (OFFLINE=1: no container registry needed).
	$(PIREX) images build --platforms $(PLATFORMS) --offline $(OFFLINE) $(TAG_ARG)

.PHONY: bootstrap
bootstrap: $(VENV)/.installed ## Build only the offline base roles (Debian, JDK 17, Maven) into the local registry.
	$(PIREX) images bootstrap --platforms $(PLATFORMS)

.PHONY: sizes
sizes: $(VENV)/.installed ## Print each image's size per platform and the collection's distinct bytes.
	$(PIREX) images sizes $(TAG_ARG)

.PHONY: push
push: $(VENV)/.installed ## Push every image to REGISTRY=host[:port]/namespace; write digests to registry.yaml.
	@test -n "$(REGISTRY)" || { echo "make push needs REGISTRY=host[:port]/namespace (e.g. ghcr.io/your-lab)"; exit 2; }
	$(PIREX) images push --registry $(REGISTRY) --registry-file $(REGISTRY_FILE) $(TAG_ARG)

.PHONY: pull
pull: $(VENV)/.installed ## Pull every image by the digest in registry.yaml for this machine, and verify it.
	$(PIREX) images pull --registry-file $(REGISTRY_FILE)

##@ Development
.PHONY: test
test: lint $(VENV)/.installed ## Lint, then every test (Docker tests skip without an engine; PIREX_REQUIRE_DOCKER=1 fails them).
	$(VENV)/bin/python -m pytest -ra

.PHONY: lint
lint: $(VENV)/.installed ## ruff, hadolint, shellcheck, actionlint.
	$(VENV)/bin/ruff check pirex tests
	$(VENV)/bin/ruff format --check pirex tests
	$(VENV)/bin/hadolint images/*/Dockerfile images/bootstrap/*/Dockerfile
	$(VENV)/bin/shellcheck scripts/*.sh .ci/run
	@if command -v actionlint >/dev/null; then actionlint; \
	else echo "actionlint missing: run scripts/host-setup.sh (or go install github.com/rhysd/actionlint/cmd/actionlint)"; exit 1; fi

.PHONY: host-setup
host-setup: ## Debian host, as root: install and start Docker, QEMU, buildx, compose, buildkitd, actionlint.
	scripts/host-setup.sh

.PHONY: clean
clean: ## Remove the virtualenv and caches of this checkout (not the machine-wide image cache).
	rm -rf $(VENV) .pytest_cache .ruff_cache

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target> [VAR=value]\n"} \
		/^[a-zA-Z_-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 } \
		/^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
