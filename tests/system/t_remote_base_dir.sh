#!/usr/bin/env bash
# base_dir across machines: two CI workers, each with its own cache, share
# one remote. Worker 1 builds a checkout and is cleaned up; worker 2, whose
# checkout lies elsewhere (another depth, too), hits worker 1's compiles
# byte for byte, and re-runs a step whose depfile names worker 1's checkout.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_lib.sh"

start_nginx web
URL="http://127.0.0.1:$NGINX_PORT/cache timeout=2s"

A="$T/builds/w1/proj"
B="$T/other/builds/w2/proj"
for d in "$A" "$B"; do
    mkdir -p "$d/src" "$d/include" "$d/build"
    echo 'int twice(int x);' > "$d/include/twice.h"
    printf '#include "twice.h"\nint twice(int x) { return 2 * x; }\n' > "$d/src/twice.c"
done

# on WORKER DIR CMD...: a step on worker WORKER (its own cache), in checkout DIR.
on() {
    local worker=$1 dir=$2
    shift 2
    (cd "$dir" && CACHET_DIR="$T/$worker-cache" CACHET_REMOTE="$URL" CACHET_BASE_DIR="$dir" \
        step "$@" && [ "$RC" -eq 0 ]) || fail "cachet run -- $* failed on $worker"
}
compile() { on "$1" "$2" gcc -O2 -Iinclude -c "$2/src/twice.c" -o build/twice.o; }
depfile() { on "$1" "$2" gcc -O2 -Iinclude -MD -MF build/dep.d -c "$2/src/twice.c" -o build/dep.o; }

section "worker 1 builds and uploads; its checkout is then removed"
compile w1 "$A"
expect miss
depfile w1 "$A"
expect miss
assert_contains_bytes "$A/build/dep.d" "$A/src/twice.c"
CACHET_DIR="$T/w1-cache" CACHET_REMOTE="$URL" cachet remote flush -q || fail "worker 1's uploads failed"
cp "$A/build/twice.o" "$T/twice.o.w1"
rm -rf "$T/builds"

section "worker 2 hits the compile from the remote, byte for byte"
compile w2 "$B"
expect hit remote
assert_same "$T/twice.o.w1" "$B/build/twice.o"
compile w2 "$B"
expect hit ""

section "the step whose depfile names worker 1's checkout runs again on worker 2"
depfile w2 "$B"
expect miss
assert_contains_bytes "$B/build/dep.d" "$B/src/twice.c"
assert_lacks_bytes "$B/build/dep.d" "$T/builds"

check_status_file_format
