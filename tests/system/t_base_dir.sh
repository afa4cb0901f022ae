#!/usr/bin/env bash
# base_dir: two checkouts of one small C project at different paths share
# one cache. The second checkout's clean build is all hits with
# byte-identical objects; an edit in either misses exactly the steps that
# read the edited file; a step whose output or stdout holds the checkout's
# absolute path (a depfile, `pwd`, debug info without -ffile-prefix-map)
# hits only in the checkout that recorded it, and re-runs in the other, so
# that checkout gets its own paths.
source "$(dirname "$0")/lib.sh"

A="$T/a/proj"
B="$T/ci-worker-2/b/proj"

make_project() {
    mkdir -p "$1/src" "$1/include" "$1/build"
    cat > "$1/include/util.h" <<'C'
int add(int a, int b);
C
    cat > "$1/src/util.c" <<'C'
#include "util.h"
int add(int a, int b) { return a + b; }
C
    cat > "$1/src/main.c" <<'C'
#include <stdio.h>
#include "util.h"
int main(void) { printf("%d\n", add(2, 3)); return 0; }
C
}

# in_checkout DIR CMD...: a step run in checkout DIR with DIR as base_dir.
in_checkout() {
    local dir=$1
    shift
    (cd "$dir" && CACHET_BASE_DIR="$dir" step "$@" && [ "$RC" -eq 0 ]) ||
        fail "cachet run -- $* failed in $dir"
}

# build DIR: the project's three steps; prints each step's result.
build() {
    local dir=$1 results=()
    in_checkout "$dir" gcc -O2 -Iinclude -c src/main.c -o build/main.o
    results+=("main.o:$(last_result)")
    # Debug info names the compile directory, unless it is mapped away.
    in_checkout "$dir" gcc -O2 -g -ffile-prefix-map="$dir"=. -Iinclude -c src/util.c -o build/util.o
    results+=("util.o:$(last_result)")
    in_checkout "$dir" gcc build/main.o build/util.o -o build/app
    results+=("app:$(last_result)")
    echo "${results[*]}"
}

section "the first checkout records, the second one hits every step"
make_project "$A"
got=$(build "$A")
[ "$got" = "main.o:miss util.o:miss app:miss" ] || fail "first build: $got"
make_project "$B"
got=$(build "$B")
[ "$got" = "main.o:hit util.o:hit app:hit" ] || fail "second checkout's clean build: $got"
for f in main.o util.o app; do
    assert_same "$A/build/$f" "$B/build/$f"
done
assert_lacks_bytes "$B/build/util.o" "$A"
[ "$("$B/build/app")" = 5 ] || fail "the second checkout's program does not run"

section "an edit in one checkout misses exactly the step that reads it"
echo '/* a comment changes no object */' >> "$B/src/util.c"
got=$(build "$B")
[ "$got" = "main.o:hit util.o:miss app:hit" ] || fail "after an edit of b's util.c: $got"
got=$(build "$A")
[ "$got" = "main.o:hit util.o:hit app:hit" ] || fail "a, untouched, after b's edit: $got"

section "a header that differs under either checkout misses the steps that include it"
echo 'int sub(int a, int b);' >> "$A/include/util.h"
got=$(build "$A")
[ "$got" = "main.o:miss util.o:miss app:hit" ] || fail "after an edit of a's header: $got"
got=$(build "$B")
[ "$got" = "main.o:hit util.o:hit app:hit" ] || fail "b, whose header is unchanged: $got"

section "a depfile naming the checkout hits in the same checkout, re-runs in the other"
dep_step() {
    in_checkout "$1" gcc -MD -MF build/dep.d -Iinclude -c "$1/src/main.c" -o build/dep.o
}
dep_step "$A"
expect miss
assert_contains_bytes "$A/build/dep.d" "$A/src/main.c"
rm "$A/build/dep.d" "$A/build/dep.o"
dep_step "$A"
expect hit
assert_contains_bytes "$A/build/dep.d" "$A/src/main.c"
set +e
OUT=$(cd "$B" && CACHET_BASE_DIR="$B" cachet explain gcc -MD -MF build/dep.d -Iinclude \
    -c "$B/src/main.c" -o build/dep.o 2>&1)
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "explain in b should say miss: $OUT"
case "$OUT" in
    *"keyed on the real path"*"dep.d contains $A"*) ;;
    *) fail "explain does not say why the depfile step is keyed on a's real path: $OUT" ;;
esac
dep_step "$B"
expect miss
assert_contains_bytes "$B/build/dep.d" "$B/src/main.c"
assert_lacks_bytes "$B/build/dep.d" "$A"
dep_step "$B"
expect hit
assert_lacks_bytes "$B/build/dep.d" "$A"
dep_step "$A"
expect hit
OUT=$(cd "$A" && CACHET_BASE_DIR="$A" cachet show build/dep.d)
case "$OUT" in
    *"keyed on the real path: output $A/build/dep.d contains $A"*) ;;
    *) fail "show does not say why the step is keyed on its real path: $OUT" ;;
esac

section "stdout that prints the working directory re-runs in the other checkout"
pwd_step() {
    (cd "$1/build" && CACHET_BASE_DIR="$1" cachet run -- sh -c 'pwd; echo built > out.txt')
}
[ "$(pwd_step "$A")" = "$A/build" ] || fail "pwd step in a"
expect miss
[ "$(pwd_step "$A")" = "$A/build" ] || fail "pwd step replayed in a"
expect hit
[ "$(pwd_step "$B")" = "$B/build" ] || fail "b got a's working directory on stdout"
expect miss
[ "$(pwd_step "$B")" = "$B/build" ] || fail "pwd step replayed in b"
expect hit

section "a configuration searched upwards from the checkout is found beside each checkout"
# Only b has a tool.cfg above it: a's run, which found none, must not
# serve b.
echo "b's settings" > "$T/ci-worker-2/tool.cfg"
cfg_step() {
    in_checkout "$1" sh -c 'd=$(pwd); while [ "$d" != / ]; do
        if [ -f "$d/tool.cfg" ]; then cat "$d/tool.cfg"; break; fi; d=$(dirname "$d"); done > build/cfg.txt'
}
cfg_step "$A"
expect miss
assert_content "$A/build/cfg.txt" ""
cfg_step "$A"
expect hit
cfg_step "$B"
expect miss
assert_content "$B/build/cfg.txt" "b's settings"

section "debug info without -ffile-prefix-map: correct, but not shared"
in_checkout "$A" gcc -g -Iinclude -c src/util.c -o build/util_g.o
expect miss
in_checkout "$B" gcc -g -Iinclude -c src/util.c -o build/util_g.o
expect miss
assert_contains_bytes "$B/build/util_g.o" "$B"
assert_lacks_bytes "$B/build/util_g.o" "$A"
in_checkout "$B" gcc -g -Iinclude -c src/util.c -o build/util_g.o
expect hit

section "a step run from outside base_dir is keyed by its real cwd"
(cd "$T/a" && CACHET_BASE_DIR="$A" step sh -c 'cat proj/src/util.c > proj/build/copy.c')
expect miss
(cd "$T/ci-worker-2/b" && CACHET_BASE_DIR="$B" step sh -c 'cat proj/src/util.c > proj/build/copy.c')
expect miss "new step"
assert_same "$B/src/util.c" "$B/build/copy.c"

section "base_dir through a symlink is its real path"
ln -s "$A" "$T/a-link"
(cd "$A" && CACHET_BASE_DIR="$T/a-link" step gcc -O2 -Iinclude -c src/main.c -o build/main.o)
expect hit

section "without base_dir the checkouts share nothing, and are not confused"
(cd "$B" && step gcc -O2 -Iinclude -c src/main.c -o build/main.o)
expect miss "new step"

section "a base_dir that cannot be used is said, and the command still runs"
set +e
ERR=$(cd "$A" && CACHET_BASE_DIR="$T/nowhere" "$CACHET_BIN" run -- sh -c 'echo ran' 2>&1)
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "a missing base_dir broke the command (exit $rc): $ERR"
case "$ERR" in
    *"base_dir $T/nowhere"*"ran"*) ;;
    *) fail "a missing base_dir is not said: $ERR" ;;
esac
set +e
ERR=$(cd "$A" && CACHET_BASE_DIR=/ "$CACHET_BIN" run -- true 2>&1)
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "base_dir=/ broke the command (exit $rc): $ERR"
case "$ERR" in
    *"base_dir /"*"root directory"*) ;;
    *) fail "base_dir=/ is not refused clearly: $ERR" ;;
esac
set +e
ERR=$(CACHET_BASE_DIR=relative/dir "$CACHET_BIN" config base_dir 2>&1)
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "a relative base_dir was accepted: $ERR"

check_status_file_format
