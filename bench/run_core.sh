#!/usr/bin/env bash
# Core benchmark: the C files of a real code base (Debian's lua5.4 source
# package by default), compiled one gcc process per file, serially, in five
# modes, N times each:
#
#   plain        gcc
#   cachet cold  cachet run -- gcc, on an empty CACHET_DIR
#   cachet warm  cachet run -- gcc, on the cache the cold run filled
#   ccache cold  ccache gcc, on an empty CCACHE_DIR
#   ccache warm  ccache gcc, on the cache the cold run filled
#
# Every build starts from an empty object directory (a clean rebuild). The
# modes are interleaved in each round so that drift of the machine spreads
# over all of them. Reports medians and ratios in one table. Not a test.
#
#   bench/run_core.sh [-n ROUNDS] [-c CACHET] [-w WORKDIR]
#
#   -n ROUNDS   rounds (default 5)
#   -c CACHET   the cachet binary (default: $CACHET_BIN, else build/cachet)
#   -w WORKDIR  scratch directory (default: /tmp/cachet-bench); the unpacked
#               sources are kept there between invocations
#
# The sources come from scripts/debian-source.sh (apt-get source): when no
# deb-src entry is configured, it adds one for the Debian mirror that the deb
# entries already use (printing what it does) and runs apt-get update.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=5
CACHET=${CACHET_BIN:-$ROOT/build/cachet}
WORK=/tmp/cachet-bench
PACKAGE=lua5.4
CFLAGS=(-O2 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX)

while getopts "n:c:w:h" opt; do
    case $opt in
        n) ROUNDS=$OPTARG ;;
        c) CACHET=$OPTARG ;;
        w) WORK=$OPTARG ;;
        h) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) exit 2 ;;
    esac
done
CACHET=$(realpath "$CACHET")
[ -x "$CACHET" ] || { echo "run_core: no cachet binary at $CACHET (build it, or pass -c)" >&2; exit 1; }
for tool in gcc ccache python3 dpkg-source; do
    command -v "$tool" > /dev/null || { echo "run_core: $tool is missing (scripts/setup-debian.sh installs it)" >&2; exit 1; }
done

# ---- sources ---------------------------------------------------------------

SRC=$("$ROOT/scripts/debian-source.sh" "$PACKAGE" "$WORK/srcpkg")
cd "$SRC/src"
# Debian's patches make luaconf.h include a header that debian/rules generates.
if [ "$PACKAGE" = lua5.4 ] && [ ! -e lua5.4-deb-multiarch.h ]; then
    printf '#define DEB_HOST_MULTIARCH "%s"\n' "$(gcc -print-multiarch)" > lua5.4-deb-multiarch.h
fi
mapfile -t FILES < <(ls ./*.c | sed 's|^\./||' | sort)
[ ${#FILES[@]} -gt 0 ] || { echo "run_core: no .c files in $SRC/src" >&2; exit 1; }

# ---- builds ----------------------------------------------------------------

OBJ=$WORK/obj
REF=$WORK/ref
export CACHET_DIR=$WORK/cachet-cache
export CCACHE_DIR=$WORK/ccache-cache
unset CACHET_DISABLE CACHET_RECACHE CACHET_VERBOSE CCACHE_DISABLE CCACHE_RECACHE
STATUS=$WORK/status.jsonl
declare -A TIMES

# build MODE: one clean serial build; appends its wall time (ms) to TIMES[MODE].
build() {
    local mode=$1 wrap=() f t0 t1
    case $mode in
        plain) ;;
        cachet-*) wrap=("$CACHET" run --) ;;
        ccache-*) wrap=(ccache) ;;
    esac
    case $mode in
        cachet-cold) rm -rf "$CACHET_DIR" ;;
        ccache-cold) rm -rf "$CCACHE_DIR" ;;
    esac
    rm -rf "$OBJ"
    mkdir -p "$OBJ"
    : > "$STATUS"
    t0=$(date +%s%N)
    for f in "${FILES[@]}"; do
        CACHET_STATUS_FILE=$STATUS "${wrap[@]}" gcc "${CFLAGS[@]}" -c "$f" -o "$OBJ/${f%.c}.o"
    done
    t1=$(date +%s%N)
    TIMES[$mode]+="$(( (t1 - t0) / 1000 )) "
    check "$mode"
}

# check MODE: the objects equal the plain build's; cachet's results are what
# the mode expects (all misses cold, all hits warm).
check() {
    local mode=$1 f bad=0
    if [ "$mode" = plain ] && [ ! -d "$REF" ]; then
        cp -r "$OBJ" "$REF"
    fi
    for f in "${FILES[@]}"; do
        cmp -s "$OBJ/${f%.c}.o" "$REF/${f%.c}.o" || { echo "WARNING: $mode: ${f%.c}.o differs from the plain build" >&2; bad=1; }
    done
    case $mode in
        cachet-*)
            local want=miss
            [ "$mode" = cachet-warm ] && want=hit
            local got
            got=$(python3 -c '
import json, sys
c = {}
for l in open(sys.argv[1]):
    r = json.loads(l)["result"]
    c[r] = c.get(r, 0) + 1
print(" ".join("%s=%d" % kv for kv in sorted(c.items())))' "$STATUS")
            [ "$got" = "$want=${#FILES[@]}" ] || { echo "WARNING: $mode: expected $want=${#FILES[@]}, got $got" >&2; bad=1; }
            ;;
    esac
    WARNINGS=$((WARNINGS + bad))
}
WARNINGS=0

MODES=(plain cachet-cold cachet-warm ccache-cold ccache-warm)
echo "run_core: $PACKAGE, ${#FILES[@]} C files in $SRC/src, gcc ${CFLAGS[*]}, $ROUNDS rounds"
echo "run_core: cachet $("$CACHET" --version 2>/dev/null | head -n 1), $(ccache --version | head -n 1), $(gcc --version | head -n 1)"
echo "run_core: $(nproc) CPUs, $(uname -r)"
rm -rf "$REF"
for r in $(seq "$ROUNDS"); do
    for m in "${MODES[@]}"; do
        build "$m"
    done
    line="round $r:"
    for m in "${MODES[@]}"; do
        last=${TIMES[$m]% }
        last=${last##* }
        line+=" $m $((last / 1000)) ms;"
    done
    echo "$line"
done

# ---- report ----------------------------------------------------------------

args=()
for m in "${MODES[@]}"; do args+=("$m=${TIMES[$m]}"); done
python3 - "${#FILES[@]}" "${args[@]}" <<'EOF'
import statistics, sys
n = int(sys.argv[1])
times = {}
for a in sys.argv[2:]:
    m, v = a.split("=", 1)
    times[m] = [int(x) / 1000.0 for x in v.split()]
med = {m: statistics.median(v) for m, v in times.items()}
print()
print("%-12s %10s %10s %12s %10s" % ("mode", "median ms", "min ms", "ms per file", "vs plain"))
for m in times:
    print("%-12s %10.0f %10.0f %12.2f %9.2fx" % (m, med[m], min(times[m]), med[m] / n, med[m] / med["plain"]))
print()
print("cachet cold / ccache cold: %.2fx" % (med["cachet-cold"] / med["ccache-cold"]))
print("cachet warm / ccache warm: %.2fx" % (med["cachet-warm"] / med["ccache-warm"]))
print("plain / cachet warm:       %.1fx" % (med["plain"] / med["cachet-warm"]))
EOF
if [ "$WARNINGS" -ne 0 ]; then
    echo "run_core: $WARNINGS builds had wrong objects or unexpected cache results (see WARNING lines)"
    exit 1
fi
