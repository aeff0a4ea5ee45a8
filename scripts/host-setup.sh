#!/usr/bin/env bash
# Prepares a Debian 12 build host for pirex, from nothing, idempotently:
#   - Docker engine, QEMU user emulation with binfmt, mmdebstrap, docker-registry, skopeo
#   - buildx and compose CLI plugins and a current buildkitd, built from Go modules when missing
#   - actionlint (workflow linter used by `make test`)
#   - a running dockerd (started in the background when none answers)
#   - Python's venv module, and Debian's numpy/scipy/matplotlib/yaml (PyPI has no armv7 wheels for
#     them; there the virtualenv sees these through --system-site-packages)
# Everything built here is cached under $PIREX_CACHE so that a second run takes seconds.
# Needs root. Usage: scripts/host-setup.sh [--no-daemon]
#        scripts/host-setup.sh --ensure   (what `make run` and `make test` call first: checks in
#        about a second; when something is missing, sets up as root, through sudo, or stops
#        with the one command to run)
set -euo pipefail

PIREX_CACHE=${PIREX_CACHE:-/var/cache/pirex}
TOOLS_BIN="$PIREX_CACHE/tools/bin"
PLUGIN_DIR=/usr/local/lib/docker/cli-plugins
# Pinned tool versions (ENVIRONMENT.md: these build from the Go module proxy).
BUILDKIT_VERSION=v0.18.2
BUILDX_VERSION=v0.19.3
COMPOSE_VERSION=v2.32.4
ACTIONLINT_VERSION=v1.7.12
APT_PACKAGES=(
	apache2-utils # htpasswd, for the authenticated-registry test
	arch-test # mmdebstrap's check of foreign architectures (a recommends: not pulled in here)
	binfmt-support
	docker-registry # distribution 2.8: the local registry of offline builds
	docker.io
	dpkg-dev # dpkg-architecture, for mmdebstrap's eatmydata hook (pirex/images/bootstrap.py)
	gcc # tests/test_fork_workload.py builds forkbench on the host
	iproute2
	libc6-dev
	make
	mmdebstrap # offline base images from Debian packages
	openssh-server # tests/test_fleet.py: an sshd per simulated host of a fleet (started there, not as a service)
	python3-venv # make's virtualenv (Debian splits venv from python3)
	qemu-user-static
	skopeo
)
# PyPI has no linux armv7 wheels for these (ENVIRONMENT.md); Debian bookworm's armhf builds
# (numpy 1.24, scipy 1.10, matplotlib 3.6, PyYAML 6.0) are what make's virtualenv uses there
# (scripts/venv.sh). Installed everywhere: tests/test_debian_python.py runs the analysis on them.
APT_PACKAGES+=(
	python3-jinja2 # the report (pirex reproduce's report.html)
	python3-jsonschema # the runner: experiment.yaml, claims.yaml and manifests against pirex/core/schemas
	python3-markdown
	python3-matplotlib
	python3-numpy
	python3-scipy
	python3-yaml
)
# What only `make test` needs (it sets PIREX_TEST_TOOLS=1): a real browser for the report test, and wrk for
# bench-driver's smoke run (`make bench-driver` installs it itself).
if [[ ${PIREX_TEST_TOOLS:-0} == 1 ]]; then
	APT_PACKAGES+=(chromium wrk)
fi
# A test names a package that is not installed here to see what --ensure does then.
# shellcheck disable=SC2206  # word splitting wanted: a space-separated list
APT_PACKAGES+=(${PIREX_EXTRA_APT_PACKAGES:-})

log() { printf '[host-setup] %s\n' "$*" >&2; }

retry() { # retry N CMD...: network steps (apt mirrors, Go proxy) fail now and then
	local n=$1 i
	shift
	for ((i = 1; i <= n; i++)); do
		"$@" && return 0
		log "attempt $i/$n failed: $*"
		sleep $((i * 5))
	done
	return 1
}

need_root() {
	if [[ $(id -u) -ne 0 ]]; then
		log "must run as root (installs packages and starts dockerd); try: sudo $0"
		exit 1
	fi
}

install_packages() {
	local missing=() p
	for p in "${APT_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	if ((${#missing[@]} == 0)); then
		log "Debian packages present"
		return
	fi
	log "installing: ${missing[*]}"
	retry 4 apt-get update -q
	DEBIAN_FRONTEND=noninteractive retry 4 apt-get install -y -q --no-install-recommends "${missing[@]}"
}

quiet_packaged_registry() {
	# Debian's docker-registry package starts a service on :5000 with htpasswd auth where systemd
	# runs; pirex runs its own, without auth, on loopback only.
	if command -v systemctl >/dev/null && systemctl is-enabled docker-registry >/dev/null 2>&1; then
		log "disabling the packaged docker-registry service (pirex starts its own on 127.0.0.1:5000)"
		systemctl disable --now docker-registry || true
	fi
}

enable_binfmt() {
	if [[ ! -e /proc/sys/fs/binfmt_misc/status ]]; then
		mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
	fi
	update-binfmts --enable >/dev/null 2>&1 || true
	local a
	for a in qemu-aarch64 qemu-arm; do
		if ! grep -q '^flags: .*F' "/proc/sys/fs/binfmt_misc/$a" 2>/dev/null; then
			log "binfmt entry $a missing or without the F flag: emulated arm builds will fail"
			exit 1
		fi
	done
	log "binfmt: qemu-aarch64 and qemu-arm registered"
}

go_tool() { # go_tool NAME MODULE@VERSION [VERSION_VARIABLE]: build once into $TOOLS_BIN/NAME-VERSION
	local name=$1 module=$2 version=${2##*@} version_var=${3:-}
	local target="$TOOLS_BIN/$name-$version"
	if [[ ! -x $target ]]; then
		log "building $module (cached for later runs)"
		local tmp ldflags=()
		tmp=$(mktemp -d)
		# go install leaves the version string empty; set it so that records name the real one
		[[ -z $version_var ]] || ldflags=(-ldflags "-X $version_var=$version")
		GOBIN=$tmp GOFLAGS=-mod=mod retry 3 go install "${ldflags[@]}" "$module"
		mkdir -p "$TOOLS_BIN"
		mv "$tmp"/* "$target"
		rm -rf "$tmp"
	fi
	ln -sf "$target" "$TOOLS_BIN/$name"
}

install_go_tools() {
	# Go from go.dev's tarball lives here and is not always on a non-login shell's PATH
	[[ -x /usr/local/go/bin/go ]] && PATH=$PATH:/usr/local/go/bin
	command -v go >/dev/null || {
		# bookworm's golang-go (1.19) is too old for these modules; actionlint wants Go 1.25+
		log "Go 1.25 or newer is needed to build buildx/compose/buildkitd/actionlint: install it from go.dev"
		exit 1
	}
	go_tool buildkitd "github.com/moby/buildkit/cmd/buildkitd@$BUILDKIT_VERSION"
	go_tool docker-buildx "github.com/docker/buildx/cmd/buildx@$BUILDX_VERSION" github.com/docker/buildx/version.Version
	go_tool docker-compose "github.com/docker/compose/v2/cmd@$COMPOSE_VERSION" github.com/docker/compose/v2/internal.Version
	go_tool actionlint "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
	# CLI plugins are looked up system-wide too, so a test's own DOCKER_CONFIG still finds them.
	mkdir -p "$PLUGIN_DIR"
	ln -sf "$TOOLS_BIN/docker-buildx" "$PLUGIN_DIR/docker-buildx"
	ln -sf "$TOOLS_BIN/docker-compose" "$PLUGIN_DIR/docker-compose"
	ln -sf "$TOOLS_BIN/buildkitd" /usr/local/bin/buildkitd
	ln -sf "$TOOLS_BIN/actionlint" /usr/local/bin/actionlint
	log "tools: $(docker buildx version | head -1); compose $(docker compose version --short)"
}

start_dockerd() {
	if docker info >/dev/null 2>&1; then
		log "a Docker engine is already running"
		return
	fi
	log "starting dockerd (log: /var/log/pirex-dockerd.log)"
	nohup dockerd >/var/log/pirex-dockerd.log 2>&1 &
	echo $! >/run/pirex-dockerd.pid
	local i
	for ((i = 0; i < 60; i++)); do
		docker info >/dev/null 2>&1 && {
			log "dockerd $(docker version -f '{{.Server.Version}}') is up"
			return
		}
		sleep 1
	done
	log "dockerd did not answer within 60 s; see /var/log/pirex-dockerd.log"
	tail -20 /var/log/pirex-dockerd.log >&2 || true
	exit 1
}

missing_packages() {
	local p
	for p in "${APT_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || echo "$p"
	done
}

# What this script provides, checked without changing anything; prints the first thing missing.
what_is_missing() {
	local missing
	missing=$(missing_packages | tr '\n' ' ')
	missing=${missing% }
	[[ -z $missing ]] || {
		echo "Debian packages: $missing"
		return
	}
	local a
	for a in qemu-aarch64 qemu-arm; do
		grep -q '^flags: .*F' "/proc/sys/fs/binfmt_misc/$a" 2>/dev/null || {
			echo "QEMU binfmt entry $a"
			return
		}
	done
	local tool
	for tool in "buildkitd-$BUILDKIT_VERSION" "docker-buildx-$BUILDX_VERSION" "docker-compose-$COMPOSE_VERSION" \
		"actionlint-$ACTIONLINT_VERSION"; do
		[[ -x $TOOLS_BIN/$tool ]] || {
			echo "${tool%-*} $(basename "${tool##*-}")"
			return
		}
	done
	[[ -x $PLUGIN_DIR/docker-buildx && -x $PLUGIN_DIR/docker-compose ]] || {
		echo "the docker buildx/compose plugins"
		return
	}
	docker info >/dev/null 2>&1 || echo "a running Docker engine"
}

# `make run` / `make test`: set up only when something is missing, as root, through sudo, or
# stop with the command to run.
ensure() {
	local missing
	missing=$(what_is_missing)
	[[ -n $missing ]] || return 0
	if [[ $(id -u) -eq 0 ]]; then
		log "missing: $missing; setting up this host (once; later runs skip this)"
		exec "$0"
	fi
	if command -v sudo >/dev/null 2>&1 && { sudo -n true 2>/dev/null || id -nG | grep -qwE 'sudo|wheel|admin'; }; then
		log "missing: $missing; setting up this host with: sudo $0"
		exec sudo "$0"
	fi
	log "missing: $missing. Run this once as root, then make again: $(realpath "$0")"
	exit 1
}

if [[ ${1:-} == --ensure ]]; then
	ensure
	exit 0
fi

need_root
install_packages
quiet_packaged_registry
enable_binfmt
install_go_tools
[[ ${1:-} == --no-daemon ]] || start_dockerd
