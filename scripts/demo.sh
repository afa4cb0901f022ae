#!/usr/bin/env bash
# Installs what is missing, builds cachet, and shows its main job on the local
# store: one C file compiled twice through cachet (a miss, then a hit), an
# edited header (a miss again), and the statistics.
#
#   scripts/demo.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}

"$ROOT/scripts/setup-debian.sh"
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja > /dev/null
ninja -C "$BUILD_DIR" cachet | tail -n 1
export PATH="$BUILD_DIR:$PATH"

DEMO=$(mktemp -d "${TMPDIR:-/tmp}/cachet-demo.XXXXXX")
trap 'rm -rf "$DEMO"' EXIT
export CACHET_DIR=$DEMO/cache
cd "$DEMO"
cat > greet.h <<'H'
#define GREETING "hello"
H
cat > hello.c <<'C'
#include <stdio.h>
#include "greet.h"
int main(void) { puts(GREETING); return 0; }
C

show() {
    echo
    echo "\$ $*"
    local t0 t1
    t0=$(date +%s%N)
    "$@"
    t1=$(date +%s%N)
    echo "  ($(( (t1 - t0) / 1000000 )) ms)"
}

echo "== cache: $CACHET_DIR"
show cachet run -v -- gcc -O2 -c hello.c -o hello.o
echo
echo "\$ rm hello.o"
rm hello.o
show cachet run -v -- gcc -O2 -c hello.c -o hello.o
echo
echo "\$ echo '#define GREETING \"hello, again\"' > greet.h"
echo '#define GREETING "hello, again"' > greet.h
show cachet run -v -- gcc -O2 -c hello.c -o hello.o
show cachet run -v -- gcc -O2 -c hello.c -o hello.o
gcc -o hello hello.o
echo
echo "\$ ./hello"
./hello
echo
echo "\$ cachet stats"
cachet stats
