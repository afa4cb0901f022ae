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
    # cachet diff and repro: archives member by member and DWARF compile
    # units (plugins, never linked into cachet itself)
    libarchive-dev libdw-dev
    # remote caches: the transport plugins (never linked into cachet itself)
    libcurl4-openssl-dev libhiredis-dev
    # unit tests
    libcmocka-dev
    # system tests: python3 drives generators, listeners and JSON checks;
    # gcc -static needs libc6-dev's libc.a; readelf comes with binutils
    python3 libc6-dev binutils coreutils
    # remote tests (t_remote_*.sh) start real cache servers: nginx with its
    # WebDAV methods, and redis-server (redis-cli comes with redis-tools)
    nginx redis-server redis-tools
    # cachet repro --vary time moves the step's clock with libfaketime
    faketime
    # only tests/system/t_report.sh needs it: it renders cachet report's page
    # in headless Chromium (and skips when chromium is absent)
    chromium
    # reliability tests (t_rel_*.sh): strace as a step that traces, zstd to
    # check blobs, valgrind for the leak pass of the normal build; the fuzz
    # build (tests/fuzz) needs clang and its libFuzzer runtime
    strace zstd valgrind clang libclang-rt-14-dev
    # benchmark: ccache to compare with, hyperfine, apt-get source + dpkg-source
    ccache hyperfine dpkg-dev xz-utils
    # build-system tests (t_build_*.sh): Debian source packages built by make,
    # CMake, Ninja and Meson (apt-get source and dpkg-source: dpkg-dev above)
    make meson
    # documentation tests: groff formats the manual, man shows the installed
    # one; bash-completion's helpers complete the command after cachet run --
    groff-base man-db bash-completion
    # tests/format.sh checks every C file against .clang-format
    clang-format
    # file-system tests: t_fs_images.sh swaps squashfs images at one mount
    # point; t_fs_xattr.sh sets and reads extended attributes
    squashfs-tools attr
    # program-start and cargo tests (t_program_start.sh, t_cargo.sh): the
    # toolchains whose start an audit library can break, and sccache to
    # compare with (ld.gold comes with binutils)
    rustc cargo default-jdk-headless nodejs perl gfortran g++ lld sccache
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
