#!/usr/bin/env bash
# base_dir as ccache users set it: a parent of every checkout (/builds, a
# CI workspace root), once. Paths under it are keyed relative to the cwd,
# so checkouts at different depths below it share; a file that differs
# still misses, and an output that holds the checkout's real path (debug
# info without -fdebug-prefix-map, __FILE__ of an absolute source name, a
# printed cwd) hits only where it was recorded.
source "$(dirname "$0")/lib.sh"

ROOT="$T/builds"
A="$ROOT/ws1/proj"
B="$ROOT/ws2/deep/er/proj"
export CACHET_BASE_DIR="$ROOT"

make_project() {
    mkdir -p "$1/src" "$1/include" "$1/build"
    printf 'int add(int a, int b);\n' > "$1/include/util.h"
    printf '#include "util.h"\nint add(int a, int b) { return a + b; }\n' > "$1/src/util.c"
    printf '#include <stdio.h>\n#include "util.h"\nint main(void) { printf("%%d\\n", add(2, 3)); return 0; }\n' > "$1/src/main.c"
    printf 'const char *where(void) { return __FILE__; }\n' > "$1/src/where.c"
}

# build DIR: compiles from DIR/build with paths relative and absolute;
# prints each step's result.
build() {
    local dir=$1 r=()
    cd "$dir/build"
    step gcc -O2 -I../include -c ../src/main.c -o main.o; r+=("$(last_result)")
    step gcc -O2 -I"$dir/include" -c "$dir/src/util.c" -o util.o; r+=("$(last_result)")
    step gcc main.o util.o -o app; r+=("$(last_result)")
    cd "$T"
    echo "${r[*]}"
}

section "a checkout deeper below base_dir hits every step of the first one"
make_project "$A"
make_project "$B"
got=$(build "$A")
[ "$got" = "miss miss miss" ] || fail "first checkout: $got"
got=$(build "$B")
[ "$got" = "hit hit hit" ] || fail "second checkout, two levels deeper: $got"
for f in main.o util.o app; do
    assert_same "$A/build/$f" "$B/build/$f"
done
[ "$("$B/build/app")" = 5 ] || fail "the second checkout's program does not run"

section "a header that differs misses the steps that read it"
echo 'int sub(int a, int b);' >> "$B/include/util.h"
got=$(build "$B")
[ "$got" = "miss miss hit" ] || fail "after an edit of b's header: $got"

section "__FILE__ of an absolute name is the checkout's: not shared"
(cd "$A/build" && step gcc -c "$A/src/where.c" -o where.o)
expect miss
(cd "$B/build" && step gcc -c "$B/src/where.c" -o where.o)
expect miss
assert_contains_bytes "$B/build/where.o" "$B/src/where.c"
assert_lacks_bytes "$B/build/where.o" "$A"
(cd "$A/build" && step gcc -c "$A/src/where.c" -o where.o)
expect hit
assert_contains_bytes "$A/build/where.o" "$A/src/where.c"

section "debug info without -fdebug-prefix-map: keyed on the real path"
(cd "$A/build" && step gcc -g -I../include -c ../src/util.c -o util_g.o)
expect miss
(cd "$B/build" && step gcc -g -I../include -c ../src/util.c -o util_g.o)
expect miss
assert_lacks_bytes "$B/build/util_g.o" "$A"

section "two directories of one checkout do not share a step that names its cwd"
mkdir -p "$A/one" "$A/two"
(cd "$A/one" && step sh -c 'basename "$PWD" > name.txt')
expect miss
(cd "$A/two" && step sh -c 'basename "$PWD" > name.txt')
expect miss
assert_content "$A/two/name.txt" two
