# pirex: the user's interface. `make` lists the targets; each is a short call into pirex.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec
.DEFAULT_GOAL := help

##@ Settings (override on the command line: make build PLATFORMS=linux/arm64 OFFLINE=1)
#: comma-separated subset of linux/amd64,linux/arm64,linux/arm/v7; all; host
PLATFORMS ?= all
#: 1: bases from Debian packages (no container registry); 0: public images; auto: probe
OFFLINE ?= auto
#: image tag; default: git describe of this checkout
TAG ?=
#: quick or paper (make compose, make fleet)
PROFILE ?= quick
#: where `make push` publishes: host[:port]/namespace
REGISTRY ?=
#: the record of published images
REGISTRY_FILE ?= registry.yaml
#: Python 3.11+ for the virtualenv
PYTHON ?= python3
#: where pirex and its dependencies are installed
VENV ?= .venv
#: 1: the virtualenv uses Debian's python3-numpy/-scipy/-matplotlib/-yaml (PyPI has no armv7 wheels); auto: on 32-bit ARM
SYSTEM_PYTHON_PACKAGES ?= auto
#: 1: `make run` and `make test` first check the host and set up what is missing (scripts/host-setup.sh); 0: skip
HOST_SETUP ?= 1
ACTIONLINT_VERSION ?= v1.7.12

PIREX = $(VENV)/bin/pirex
TAG_ARG = $(if $(TAG),--tag $(TAG))
# actionlint from PATH (scripts/host-setup.sh) or built into the venv from its Go module
ACTIONLINT = $(or $(shell command -v actionlint),$(VENV)/bin/actionlint)

# The runner's few dependencies plus the analysis extra (numpy, scipy) for the tables, and the fast extra
# (numba) where a wheel exists (not armv7: numpy reads the same files more slowly); the linters and pytest
# only for development. scripts/venv.sh: pinned wheels (constraints.txt), or Debian's packages on armv7.
$(VENV)/.installed: pyproject.toml constraints.txt
	scripts/venv.sh create $(PYTHON) $(VENV) $(SYSTEM_PYTHON_PACKAGES)
	scripts/venv.sh install $(VENV) analysis
	scripts/venv.sh optional $(VENV) analysis,fast --only-binary numba,llvmlite \
		|| echo "pirex: numba (the fast extra) not installed: MooBench's raw files are read by numpy, same results, slower"
	touch $@

$(VENV)/.dev-installed: $(VENV)/.installed
	scripts/venv.sh install $(VENV) analysis,dev,fleet
	touch $@

# A fleet's host needs only the runner (the tables are made on the controller): no numpy, scipy, matplotlib.
$(VENV)/.runner-installed: pyproject.toml constraints.txt
	scripts/venv.sh create $(PYTHON) $(VENV) $(SYSTEM_PYTHON_PACKAGES)
	scripts/venv.sh install $(VENV) ""
	touch $@

$(VENV)/.fleet-installed: $(VENV)/.installed
	scripts/venv.sh install $(VENV) analysis,fleet
	touch $@

# $(call retry,N,COMMAND): a network step (a package mirror, the Go module proxy, PyPI) tried up to N times, 5 s
# more between tries each time; the shell's status is the last try's. scripts/host-setup.sh's retry() is its twin
# for the root set-up, which runs before make can.
retry = ( for i in $$(seq $(1)); do $(2) && exit 0; [ $$i -lt $(1) ] && sleep $$((i * 5)); done; exit 1 )
BENCH_EXTRAS := analysis,fast,bench

$(VENV)/bin/actionlint: | $(VENV)/.installed
	$(call retry,3,GOBIN=$(abspath $(VENV)/bin) go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION))

##@ Experiments
#: the experiments whose claims `make run` runs and judges, space-separated (default: every experiment)
EXPERIMENTS ?=
#: the papers `make run` reproduces, space-separated (default: every paper of analysis/); only their images are made
PAPERS ?=

.PHONY: run
run: host-ready $(VENV)/.installed ## Pull (registry.yaml's digests) or build this machine's images, then reproduce every paper (PAPERS: only these, with only their images) at LEVEL (kick-the-tires: at least five repetitions of the quick profiles) within BUDGET, only the claims on EXPERIMENTS if set: a verdict per claim this machine can judge, the summary and report.html.
	$(PIREX) images ensure --platforms host --offline $(OFFLINE) $(TAG_ARG) $(foreach e,$(EXPERIMENTS),--experiment $(e)) $(foreach p,$(PAPERS),--paper $(p))
	$(PIREX) reproduce $(or $(PAPERS),all) --level $(LEVEL) $(TAG_ARG) $(foreach e,$(EXPERIMENTS),--experiment $(e)) $(budget_arg)

#: minutes of runs make run spends: at kick-the-tires every run once (whatever that takes), then rounds on the claims closest to a verdict with what is left; empty: no rounds; LEVEL=full: only if given, then a cap (a run that does not fit is not started)
BUDGET ?= 15m
# kick-the-tires: its runs whole (on a Pi they take longer than 15 min), rounds with what is left; LEVEL=full: the
# papers' profiles whole unless a BUDGET is given (the default's 15 minutes would start none), then within it
budget_arg = $(if $(and $(BUDGET),$(or $(filter kick-the-tires,$(LEVEL)),$(filter-out file,$(origin BUDGET)))),--budget $(BUDGET) $(if $(filter kick-the-tires,$(LEVEL)),--whole-pilot))

#: a paper of analysis/ (icpe18, ssp17, fork24) or all (make reproduce)
PAPER ?= all
#: kick-the-tires (every claim's code path, quick profiles, at least 5 repetitions) or full (the papers' profiles): make run and make reproduce
LEVEL ?= kick-the-tires

.PHONY: reproduce
reproduce: host-ready $(VENV)/.installed ## Reproduce PAPER at LEVEL: the plan with the time here, the missing runs, a verdict per claim (results/reproduce/).
	$(PIREX) images ensure --platforms host --offline $(OFFLINE) $(TAG_ARG)
	$(PIREX) reproduce $(PAPER) --level $(LEVEL) $(TAG_ARG) $(ARGS)

#: the experiment of make compose and make fleet (an id of experiments/, e.g. jpa-rest)
EXP ?=
need-exp = @test -n "$(EXP)" || { echo "make $@ needs EXP=<experiment> (one of: $$(ls experiments | tr '\n' ' '))"; exit 2; }

.PHONY: compose
compose: $(VENV)/.installed ## EXP's deployment on this machine with docker compose (EXP=jpa-rest: ICPE'18 Experiment 3, then Table 3).
	$(need-exp)
	$(PIREX) images ensure --platforms host --offline $(OFFLINE) $(TAG_ARG) --experiment $(EXP)
	$(PIREX) compose $(EXP) --profile $(PROFILE) $(TAG_ARG)

#: the Ansible inventory of make fleet (fleet/hosts.yml: three Pis and a server)
INVENTORY ?= fleet/hosts.yml

.PHONY: fleet
fleet: $(VENV)/.fleet-installed ## Run EXP on every host of INVENTORY through Ansible (fleet/run.yml), fetch and verify the bundles, then one column per device (ARGS="--serial").
	$(need-exp)
	$(PIREX) fleet run --inventory $(INVENTORY) $(EXP) --profile $(PROFILE) $(TAG_ARG) $(ARGS)

.PHONY: runner
runner: $(VENV)/.runner-installed ## Only the runner (click, PyYAML) in the virtualenv: what a host of a fleet needs (fleet/run.yml).

.PHONY: venv
venv: $(VENV)/.installed ## Only the virtualenv: pirex with its analysis and fleet extras in .venv (no host set-up, no images): .venv/bin/pirex.

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

.PHONY: load
load: $(VENV)/.installed ## Put this machine's platform of every built image into the Docker engine (localhost:5000/pirex/<image>:<tag>).
	$(PIREX) images load $(TAG_ARG)

.PHONY: push
push: $(VENV)/.installed ## Push every image to REGISTRY=host[:port]/namespace; write digests to registry.yaml.
	@test -n "$(REGISTRY)" || { echo "make push needs REGISTRY=host[:port]/namespace (e.g. ghcr.io/your-lab)"; exit 2; }
	$(PIREX) images push --registry $(REGISTRY) --registry-file $(REGISTRY_FILE) $(TAG_ARG)

.PHONY: pull
pull: $(VENV)/.installed ## Pull every image by the digest in registry.yaml for this machine, and verify it.
	$(PIREX) images pull --registry-file $(REGISTRY_FILE)

##@ Development
.PHONY: test
test: export PIREX_TEST_TOOLS = 1
# Two sessions: the unit tests in parallel (pytest-xdist, a module per worker at a time), then the Docker and
# emulated-Pi tests one at a time (they share images, daemons and labs). Both run, whatever the first ended with;
# the time budget counts from PIREX_TEST_STARTED, over both (tests/timebudget.py). Beside the unit session the Docker
# session's images are built ahead (tests/prebuild.py: only caches are warmed; its failure is shown and the Docker
# session builds again and reports it), at the lowest CPU and I/O priority: buildkitd, QEMU and mmdebstrap are its
# children and inherit it, so the build takes only the CPU the unit tests leave (issue 55: a cold build at equal
# priority made the unit session 14.6 min instead of 2.5), and the Docker session waits for the build either way.
TEST_WORKERS ?= auto
PREBUILD_LOG ?= $(CURDIR)/.test-prebuild.log
# the lowest CPU priority, and the idle I/O class where ionice is (util-linux)
YIELD = nice -n 19 $(if $(shell command -v ionice),ionice -c 3)
test: host-ready lint ## Lint, then every test (Docker tests skip without an engine; PIREX_REQUIRE_DOCKER=1 fails them); fails past PIREX_TEST_CEILING_MIN minutes (75).
	export PIREX_TEST_STARTED=$$(date +%s); \
	OFFLINE=$(OFFLINE) $(YIELD) $(VENV)/bin/python -m tests.prebuild >$(PREBUILD_LOG) 2>&1 & prebuild=$$!; \
	unit=0; OFFLINE=$(OFFLINE) $(VENV)/bin/python -m pytest -ra --durations=20 -p tests.timebudget -n $(TEST_WORKERS) --dist loadfile -m "not docker and not emulated_pi" || unit=$$?; \
	pre=0; wait $$prebuild || pre=$$?; \
	if [ $$pre -ne 0 ]; then tail -n 30 $(PREBUILD_LOG); echo "make test: the images built ahead failed (exit $$pre, log: $(PREBUILD_LOG)); the Docker session builds them again"; else tail -n 3 $(PREBUILD_LOG); fi; \
	docker=0; OFFLINE=$(OFFLINE) $(VENV)/bin/python -m pytest -ra --durations=60 -p tests.timebudget -m "docker or emulated_pi" || docker=$$?; \
	echo "make test: unit tests exited $$unit, Docker and emulated-Pi tests $$docker"; [ $$unit -eq 0 ] && [ $$docker -eq 0 ]

.PHONY: test-emulated-pi
test-emulated-pi: host-ready $(VENV)/.dev-installed ## Only the emulated-Pi test of make test: pirex itself on arm64 and armhf Pis under QEMU.
	OFFLINE=$(OFFLINE) $(VENV)/bin/python -m pytest -ra -m emulated_pi tests/test_emulated_pi.py

.PHONY: bench-analysis bench-soak bench-driver bench-resolution bench-fleet bench-fresh-machine
#: the results folder of bench-soak's run and table
SOAK_RESULTS ?= $(CURDIR)/results
bench-soak: $(VENV)/.installed ## jpa-rest: the service under the quick load for SOAK (default 10m) in Docker; its heap and RSS per minute (ARGS="--set customers=1000": more for pirex run; SOAK_RESULTS= its folder).
	$(PIREX) run jpa-rest --variants $(or $(VARIANTS),docker) --soak $(or $(SOAK),10m) --set repetitions=1 --results-dir $(SOAK_RESULTS) $(TAG_ARG) $(ARGS)
	$(PIREX) table jpa-rest --results-dir $(SOAK_RESULTS)

bench-driver: $(VENV)/.installed ## jpa-rest: Locust's throughput and CPU against wrk's on the same endpoint (installs wrk).
	command -v wrk >/dev/null || $(call retry,3,{ apt-get update -q && apt-get install -y -q wrk; }) || { echo "bench-driver needs wrk: apt-get install wrk (as root)"; exit 1; }
	$(VENV)/bin/python scripts/bench_driver.py $(TAG_ARG) $(ARGS)

bench-fleet: $(VENV)/.fleet-installed ## Fleet wall time of three hosts (network namespaces, sshd and dockerd each), all at once vs --serial (root; ARGS="--rounds 3").
	$(VENV)/bin/python scripts/bench_fleet.py $(TAG_ARG) $(ARGS)

.PHONY: lab-reproduce
lab-reproduce: $(VENV)/.fleet-installed ## Reproduce PAPER across three lab hosts (network namespaces; root): the claims across devices; ARGS="--throttle pi-c" cuts one host's CPU.
	$(VENV)/bin/python scripts/lab_reproduce.py $(PAPER) $(TAG_ARG) $(ARGS) -- --level $(LEVEL)

bench-analysis: $(VENV)/.installed ## MooBench analysis vs pandas on the paper's volume (50 M rows; ARGS="--calls 20000 --loops 3" for a smoke run).
	$(call retry,3,$(VENV)/bin/pip install -q -e '.[$(BENCH_EXTRAS)]')
	$(VENV)/bin/python scripts/bench_analysis.py $(ARGS)

bench-fresh-machine: $(VENV)/.installed ## git clone then make run (its set-up included) on a fresh Debian 12 machine in namespaces, timed (root; 15+ min).
	$(VENV)/bin/python scripts/bench_fresh_machine.py $(ARGS)

bench-resolution: $(VENV)/.installed ## jmh B1 docker/native and native-aa/native half-widths per allocation, time spent, variance per level (ARGS="--allocations small": a smoke run; ARGS="--experiment moobench --metric kieker-text": another experiment).
	$(VENV)/bin/python scripts/bench_resolution.py $(TAG_ARG) $(if $(VARIANTS),--variants $(VARIANTS)) $(ARGS)

# make calibrate: pirex calibrate for each of these experiments (and make run then judges with their calibrations)
CALIBRATE_EXPERIMENTS ?= jmh moobench
REPETITIONS ?= 40

.PHONY: calibrate
calibrate: host-ready $(VENV)/.installed ## A long A/A run of each of CALIBRATE_EXPERIMENTS (jmh moobench) here, REPETITIONS=40 per design (about 30 min each), resampled: how pirex's intervals and rules cover on this machine's noise (results/calibration/, which make run then judges with).
	for e in $(CALIBRATE_EXPERIMENTS); do $(VENV)/bin/pirex calibrate $$e --repetitions $(REPETITIONS) $(TAG_ARG) $(ARGS) || exit 1; done

.PHONY: bench-budget
bench-budget: $(VENV)/.installed ## The budget's design beside the even split and the oracle on make run's mix at 15, 30 and 60 min, and its wrong verdicts at the rules' edges, resumed and reusing the pilot (about 30 min on a 2-vCPU VM; ARGS="--draws 20 --edge-draws 100 --minutes 15": a smoke run).
	$(VENV)/bin/python scripts/bench_budget.py $(ARGS)

.PHONY: bench-calibration
bench-calibration: $(VENV)/.installed ## jmh's calibration table on this machine: coverage, rules at their edges, power per n (ARGS="--repetitions 10 --design interleaved --set benchmarks=RecursionBenchmark.b1_default --set iterations=2 --set warmup_iterations=1": a smoke run of about a minute).
	$(VENV)/bin/pirex calibrate $(or $(EXP),jmh) --repetitions $(REPETITIONS) $(TAG_ARG) $(ARGS)

.PHONY: lint
lint: $(VENV)/.dev-installed $(ACTIONLINT) ## ruff, the layers (import-linter), hadolint, shellcheck, actionlint, and docs/ built by MkDocs (--strict: a broken link fails).
	$(VENV)/bin/ruff check pirex tests scripts images/locust
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff format --check pirex tests scripts images/locust
	$(VENV)/bin/hadolint images/*/Dockerfile images/bootstrap/*/Dockerfile images/stages/*/Dockerfile
	$(VENV)/bin/shellcheck scripts/*.sh .ci/run images/*/pirex-* images/stages/*/mvn-package
	PATH="$(abspath $(VENV))/bin:$$PATH" $(ACTIONLINT)
	site=$$(mktemp -d); trap 'rm -rf "$$site"' EXIT; $(VENV)/bin/mkdocs build --strict --site-dir "$$site"

.PHONY: host-setup
host-setup: ## Debian host, as root: install and start Docker, QEMU, buildx, compose, buildkitd, actionlint.
	scripts/host-setup.sh

# run and test start here: a quick check, and the set-up (as root or through sudo) only when something is missing.
.PHONY: host-ready
host-ready:
	$(if $(filter 1,$(HOST_SETUP)),scripts/host-setup.sh --ensure)

.PHONY: clean
clean: ## Remove the virtualenv and caches of this checkout (not the machine-wide image cache).
	rm -rf $(VENV) .pytest_cache .ruff_cache

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {printf "Usage: make <target> [VAR=value]\n"} \
		/^#: / { doc = substr($$0, 4); next } \
		/^[A-Z_]+ \?=/ && doc { v = $$0; sub(/ \?= ?/, "=", v); printf "  %-28s %s\n", v, doc; doc = ""; next } \
		/^[a-zA-Z_-]+:.*##/ { split($$0, a, ":.*## "); sub(/:.*/, "", a[1]); printf "  %-12s %s\n", a[1], a[2] } \
		/^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
