#!/usr/bin/env bash
# Installs the Debian 12 packages that cachet's build, tests and benchmark
# need, and only those that are missing. `apt-get update` runs only when
# something is missing. Extra package names may be given as arguments.
#
#   scripts/setup-debian.sh [PACKAGE...]
set -euo pipefail

PACKAGES=(
    # build
    build-essential cmake ninja-build pkg-config
    libssl-dev libzstd-dev libsqlite3-dev libelf-dev
    # unit tests
    libcmocka-dev
    # system tests: python3 drives generators, listeners and JSON checks;
    # gcc -static needs libc6-dev's libc.a; readelf comes with binutils
    python3 libc6-dev binutils coreutils
    # benchmark: ccache to compare with, hyperfine, apt-get source + dpkg-source
    ccache hyperfine dpkg-dev xz-utils
)
PACKAGES+=("$@")

missing=()
for p in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    if [ "$status" != "install ok installed" ]; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "setup-debian: all ${#PACKAGES[@]} packages are installed"
    exit 0
fi

echo "setup-debian: installing ${missing[*]}"
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    SUDO=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update
"${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
