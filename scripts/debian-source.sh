#!/usr/bin/env bash
# Fetches and unpacks a Debian source package, once: later calls with the same
# CACHEDIR reuse the unpacked tree. Prints the tree's absolute path on stdout
# (everything else goes to stderr).
#
#   scripts/debian-source.sh [--skip-patches] PACKAGE CACHEDIR
#
#   --skip-patches   unpack the upstream sources without Debian's patches
#                    (tree CACHEDIR/PACKAGE-upstream instead of CACHEDIR/PACKAGE)
#
# `apt-get source` needs a deb-src entry. A fresh Debian machine has none:
# then this script adds /etc/apt/sources.list.d/cachet-deb-src.sources, a
# deb-src twin of every Debian deb entry (one-line or deb822 format), and runs
# apt-get update (with sudo when not root). It needs python3 and dpkg-dev
# (scripts/setup-debian.sh installs them). Concurrent calls are serialized
# with flock, so parallel tests do not race on apt or on CACHEDIR.
#
# Used by bench/run_core.sh and by the build-system tests in tests/system.
set -euo pipefail

SKIP_PATCHES=0
if [ "${1:-}" = --skip-patches ]; then
    SKIP_PATCHES=1
    shift
fi
if [ $# -ne 2 ]; then
    echo "usage: debian-source.sh [--skip-patches] PACKAGE CACHEDIR" >&2
    exit 2
fi
PACKAGE=$1
mkdir -p "$2"
CACHEDIR=$(realpath "$2")
TREE=$CACHEDIR/$PACKAGE
[ "$SKIP_PATCHES" -eq 0 ] || TREE=$CACHEDIR/$PACKAGE-upstream
DOWNLOADS=$CACHEDIR/$PACKAGE.download

say() { echo "debian-source: $*" >&2; }
die() { say "$*"; exit 1; }

for tool in python3 dpkg-source apt-get flock; do
    command -v "$tool" > /dev/null || die "$tool is missing (scripts/setup-debian.sh installs it)"
done
SUDO=()
[ "$(id -u)" -eq 0 ] || SUDO=(sudo)

# One lock for this cache directory: a second caller waits, then reuses.
exec 8> "$CACHEDIR/.lock"
flock 8
if [ -d "$TREE" ]; then
    echo "$TREE"
    exit 0
fi

has_deb_src() {
    grep -qsE '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list ||
        grep -qsE '^Types:(.*[[:space:]])?deb-src([[:space:]]|$)' /etc/apt/sources.list.d/*.sources
}

add_deb_src() {
    local out=/etc/apt/sources.list.d/cachet-deb-src.sources
    say "no deb-src entry configured; adding $out:"
    "${SUDO[@]}" python3 - "$out" <<'EOF' >&2
import glob, os, re, sys

out = sys.argv[1]
stanzas = []

def debian_uri(uri):
    return "debian" in uri

for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
    if not os.path.exists(path):
        continue
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        m = re.match(r"^deb\s+(\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s*(.*)$", line)
        if m and debian_uri(m.group(2)):
            opts = m.group(1) or ""
            signed = re.search(r"signed-by=(\S+?)\]?(\s|$)", opts)
            stanzas.append({"URIs": m.group(2), "Suites": m.group(3), "Components": m.group(4) or "main",
                            **({"Signed-By": signed.group(1)} if signed else {})})

for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    if os.path.abspath(path) == os.path.abspath(out):
        continue
    for block in re.split(r"\n\s*\n", open(path).read()):
        fields = {}
        for line in block.splitlines():
            if line.startswith("#") or ":" not in line or line[0].isspace():
                continue
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
        if "deb" not in fields.get("Types", "").split():
            continue
        if fields.get("Enabled", "yes").lower() == "no" or not debian_uri(fields.get("URIs", "")):
            continue
        stanzas.append({k: fields[k] for k in ("URIs", "Suites", "Components", "Signed-By") if k in fields})

if not stanzas:
    sys.exit("debian-source: found no Debian deb entry to mirror as deb-src")
text = "# Added by cachet's scripts/debian-source.sh: source packages for tests and benchmarks.\n"
for s in stanzas:
    text += "\nTypes: deb-src\n" + "".join("%s: %s\n" % (k, v) for k, v in s.items())
with open(out, "w") as f:
    f.write(text)
print(text)
EOF
}

# apt's lists are machine-wide: one apt-get update at a time, whatever the
# cache directory.
apt_update() {
    say "apt-get update"
    (
        flock 9
        "${SUDO[@]}" apt-get update -q >&2
    ) 9> "${TMPDIR:-/tmp}/cachet-debian-source-apt.lock"
}

# The newest version first; then each other version the lists name: a
# mirror may lack the source of a security update whose binary it has.
download() {
    (cd "$DOWNLOADS" && apt-get source --download-only "$PACKAGE" >&2) && return 0
    local v
    for v in $(apt-cache showsrc "$PACKAGE" 2> /dev/null | awk '/^Version:/ {print $2}'); do
        say "trying $PACKAGE=$v"
        rm -f "$DOWNLOADS"/*
        (cd "$DOWNLOADS" && apt-get source --download-only "$PACKAGE=$v" >&2) && return 0
    done
    return 1
}

if [ -z "$(ls "$DOWNLOADS"/*.dsc 2> /dev/null)" ]; then
    rm -rf "$DOWNLOADS"
    mkdir -p "$DOWNLOADS"
    if ! has_deb_src; then
        add_deb_src
        apt_update
    fi
    say "apt-get source --download-only $PACKAGE (into $DOWNLOADS)"
    if ! download; then
        # Stale lists name files the mirror no longer has.
        say "retrying after apt-get update"
        apt_update
        download || die "apt-get source $PACKAGE failed (see above): no such source package, or the Debian mirror is unreachable"
    fi
fi
dsc=$(ls "$DOWNLOADS"/*.dsc | head -n 1)
[ -n "$dsc" ] || die "no .dsc for $PACKAGE in $DOWNLOADS"

# Unpack beside the tree, then rename: an interrupted run leaves no half tree.
tmp=$(mktemp -d "$CACHEDIR/.unpack.XXXXXX")
opts=(--no-check)
[ "$SKIP_PATCHES" -eq 0 ] || opts+=(--skip-patches)
say "dpkg-source ${opts[*]} -x $(basename "$dsc")"
if ! dpkg-source "${opts[@]}" -x "$dsc" "$tmp/tree" >&2; then
    rm -rf "$tmp"
    die "unpacking $dsc failed"
fi
mv "$tmp/tree" "$TREE"
rm -rf "$tmp" # dpkg-source leaves a link or copy of the upstream tarball there
echo "$TREE"
