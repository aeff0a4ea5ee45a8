#!/usr/bin/env bash
# make's virtualenv, on the wheels PyPI has or on Debian's own Python packages.
#
#   scripts/venv.sh create PYTHON VENV MODE    MODE: 0 wheels from PyPI (pinned by constraints.txt);
#                                              1 --system-site-packages over Debian's python3-numpy,
#                                              -scipy, -matplotlib, -yaml, -jinja2, -markdown; auto: 1 on 32-bit ARM
#   scripts/venv.sh install VENV EXTRAS [PIP-ARGS...]   pip install -e .[EXTRAS] ("": -e .), with retries
#   scripts/venv.sh optional VENV EXTRAS [PIP-ARGS...]  the same, once, for an extra that may be missing
#
# PyPI has no linux armv7 wheels for numpy, scipy, matplotlib or PyYAML (ENVIRONMENT.md): pip would
# compile them for hours on a Pi 3, or fail. Debian bookworm ships them (numpy 1.24, scipy 1.10,
# matplotlib 3.6; and the report's Jinja2 3.1.2, Markdown 3.4.1), pyproject.toml's ranges accept those, and pip
# then keeps them.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PYTHON=/usr/bin/python3
DEBIAN_MODULES="numpy, scipy, matplotlib, yaml, jinja2, markdown, jsonschema"
DEBIAN_PACKAGES="python3-numpy python3-scipy python3-matplotlib python3-yaml python3-jinja2 python3-markdown python3-jsonschema"
# Where a wheel of these is missing, pip fails instead of compiling (install falls back to Debian's).
BINARY_ONLY=numpy,scipy,matplotlib,PyYAML

log() { printf 'pirex: %s\n' "$*" >&2; }

is_32bit_arm() {
	local arch
	arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
	[[ $arch == armhf || $arch == armel || $arch == armv7l || $arch == armv6l ]]
}

uses_system_packages() { grep -qi '^include-system-site-packages *= *true' "$1/pyvenv.cfg" 2>/dev/null; }

debian_packages_present() { "$DEBIAN_PYTHON" -c "import $DEBIAN_MODULES" 2>/dev/null; }

create_system() { # VENV: over Debian's interpreter and packages
	local venv=$1
	if ! debian_packages_present; then
		log "the virtualenv needs Debian's $DEBIAN_PACKAGES:"
		log "    apt-get install $DEBIAN_PACKAGES   (as root; scripts/host-setup.sh does it)"
		exit 1
	fi
	uses_system_packages "$venv" || rm -rf "$venv"
	log "virtualenv on Debian's $("$DEBIAN_PYTHON" -c 'import numpy, scipy, matplotlib; print(f"numpy {numpy.__version__}, scipy {scipy.__version__}, matplotlib {matplotlib.__version__}")') (no wheels needed)"
	"$DEBIAN_PYTHON" -m venv --system-site-packages "$venv"
}

create() { # PYTHON VENV MODE
	local python=$1 venv=$2 mode=$3
	if [[ $mode == 1 || ($mode == auto && $(is_32bit_arm && echo y) == y) ]]; then
		create_system "$venv"
		return
	fi
	uses_system_packages "$venv" && rm -rf "$venv"
	"$python" -m venv "$venv"
}

pip_install() { # TRIES VENV EXTRAS [PIP-ARGS...] (package mirrors fail now and then)
	local tries=$1 venv=$2 extras=$3 i
	shift 3
	local pins=(-c constraints.txt --only-binary "$BINARY_ONLY") target=.
	uses_system_packages "$venv" && pins=()
	[[ -n $extras ]] && target=".[$extras]" # "": the runner's own dependencies alone (make runner)
	for ((i = 1; i <= tries; i++)); do
		"$venv/bin/pip" install -q "${pins[@]}" "$@" -e "$target" && return 0
		[[ $i -lt $tries ]] && sleep $((i * 5))
	done
	return 1
}

install() { # VENV EXTRAS [PIP-ARGS...]
	local venv=$1
	pip_install 3 "$@" && return 0
	if ! uses_system_packages "$venv" && debian_packages_present; then
		log "pip found no wheel (or no network) for the pinned versions; using Debian's packages instead"
		create_system "$venv"
		pip_install 3 "$@" && return 0
	fi
	return 1
}

case ${1:-} in
create) create "$2" "$3" "${4:-auto}" ;;
install) shift && install "$@" ;;
optional) shift && pip_install 1 "$@" ;;
*)
	echo "usage: $0 create PYTHON VENV MODE | install|optional VENV EXTRAS [PIP-ARGS...]" >&2
	exit 2
	;;
esac
