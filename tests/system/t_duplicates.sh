# Duplicate compiles: CMake compiles a source twice (a static and a shared
# library, or a library and a program) with argvs that differ only in -o,
# -MF and -MT. The second is served from the first's entry ("hit",
# reason "duplicate") with its own object and a depfile that names its own
# target, byte for byte what the plain command makes; then it hits directly.
# Steps whose outputs depend on their names other than literally, or whose
# inputs differ, miss.
source "$(dirname "$0")/lib.sh"

command -v gcc > /dev/null || skip "no gcc"

W=$(workdir)
SRC="$W/src"
mkdir -p "$SRC"
cat > "$SRC/x.c" <<'EOF'
#include "x.h"
int f(int a) { return a * X; }
EOF
echo '#define X 42' > "$SRC/x.h"

# compile DIR: the CMake-style compile of x.c into DIR (relative to $PWD).
# Its DWARF names the source and the cwd, not the object; the producer
# string is left out (cachet adds -fdiagnostics-urls, which gcc records).
compile() {
    local d=$1
    shift
    echo gcc -g -gno-record-gcc-switches -O2 -I"$SRC" "$@" -MD -MT "$d/x.c.o" -MF "$d/x.c.o.d" -o "$d/x.c.o" -c "$SRC/x.c"
}

section "two compiles that differ only in -o, -MF and -MT: the second is served from the first"
# The plain run first, in the very directory of the cached runs (the
# DWARF of -g names the cwd); its files kept aside.
C="$W/top" P="$W/plain"
mkdir -p "$C/CMakeFiles/a.dir" "$C/CMakeFiles/b.dir" "$C/sub/c.dir"
cd "$C"
$(compile CMakeFiles/a.dir) && $(compile CMakeFiles/b.dir) && $(compile sub/c.dir)
cp -a "$C" "$P"
PLAIN_TREE=$(tree_state "$C")
rm -rf "$C"/CMakeFiles/*/* "$C"/sub/c.dir/*
run_expect miss "new step" -- $(compile CMakeFiles/a.dir)
run_expect hit duplicate -- $(compile CMakeFiles/b.dir)
assert_same "$P/CMakeFiles/b.dir/x.c.o" "$C/CMakeFiles/b.dir/x.c.o"
assert_same "$P/CMakeFiles/b.dir/x.c.o.d" "$C/CMakeFiles/b.dir/x.c.o.d"
grep -q '^CMakeFiles/b.dir/x.c.o:' CMakeFiles/b.dir/x.c.o.d || fail "the depfile does not name its own target"
assert_lacks_bytes CMakeFiles/b.dir/x.c.o.d a.dir
[ "$(counters duplicate_hits)" = 1 ] || fail "duplicate_hits: $(counters duplicate_hits)"
# Stored as the step's own entry: it hits without the duplicate tier now.
rm -rf CMakeFiles/b.dir/*
run_expect hit "" -- $(compile CMakeFiles/b.dir)
[ -z "$(last_reason)" ] || fail "expected a direct hit, got reason $(last_reason)"
assert_same "$P/CMakeFiles/b.dir/x.c.o.d" "$C/CMakeFiles/b.dir/x.c.o.d"
# A third name, in a deeper directory.
run_expect hit duplicate -- $(compile sub/c.dir)
assert_same "$P/sub/c.dir/x.c.o.d" "$C/sub/c.dir/x.c.o.d"
assert_same "$P/sub/c.dir/x.c.o" "$C/sub/c.dir/x.c.o"
assert_same_tree "duplicate hits" "$PLAIN_TREE" "$(tree_state "$C")"
check_status_file_format

# The output directories below are named with a hyphen: a short name such
# as r1 could occur in the scratch directory's random suffix (in the -I
# path), and the duplicate tier rightly refuses a step whose argv names an
# output directory in another word.
section "a read-only cache: the duplicate runs (it would have to be stored), no error"
mkdir -p r-1 r-2
run_expect miss "" -- $(compile r-1 -Wp,-DRO)
errors_before=$(counters errors)
CACHET_READ_ONLY=1 run_expect miss "" -- $(compile r-2 -Wp,-DRO)
[ "$(counters errors)" = "$errors_before" ] || fail "errors counted: $(counters errors)"
run_expect hit duplicate -- $(compile r-2 -Wp,-DRO)

section "a header edited between the two: the second misses"
mkdir -p e-1 e-2
run_expect miss "" -- $(compile e-1 -Wp,-DEDIT)
echo '#define X 43' > "$SRC/x.h"
run_expect miss "" -- $(compile e-2 -Wp,-DEDIT)
gcc -g -gno-record-gcc-switches -O2 -I"$SRC" -Wp,-DEDIT -MD -MT e-2/x.c.o -MF "$W/plain-e2.d" -o "$W/plain-e2.o" -c "$SRC/x.c"
assert_same "$W/plain-e2.o" e-2/x.c.o

section "an output directory that does not exist for the second: it fails as plainly"
mkdir -p m-1
run_expect miss "" -- $(compile m-1 -Wp,-DMISSING)
set +e
$(compile m-2 -Wp,-DMISSING) 2> "$T/plain.err"
plain_rc=$?
set -e
step $(compile m-2 -Wp,-DMISSING) 2> "$T/cached.err"
[ "$RC" -ne 0 ] && [ "$RC" -eq "$plain_rc" ] || fail "exit status $RC, plainly $plain_rc"
expect miss
assert_absent m-2

section "-MD without -MF: the depfile's name derives from -o, the second misses"
mkdir -p d-1 d-2
run_expect miss "" -- gcc -c "$SRC/x.c" -I"$SRC" -o d-1/x.o -MD
run_expect miss "" -- gcc -c "$SRC/x.c" -I"$SRC" -o d-2/x.o -MD
assert_exists d-2/x.d
grep -q '^d-2/x.o:' d-2/x.d || fail "d-2/x.d does not name d-2/x.o"

section "-gsplit-dwarf: the object names its .dwo, the second misses"
mkdir -p s-1 s-2
run_expect miss "" -- gcc -g -gsplit-dwarf -c "$SRC/x.c" -I"$SRC" -o s-1/x.o
run_expect miss "" -- gcc -g -gsplit-dwarf -c "$SRC/x.c" -I"$SRC" -o s-2/x.o
assert_exists s-2/x.dwo

section "-S and -c: other outputs of other kinds, the second misses"
mkdir -p k-1 k-2
run_expect miss "" -- gcc -S "$SRC/x.c" -I"$SRC" -o k-1/x.s
run_expect miss "" -- gcc -c "$SRC/x.c" -I"$SRC" -o k-2/x.s
gcc -c "$SRC/x.c" -I"$SRC" -o "$W/plain-k2.o"
assert_same "$W/plain-k2.o" k-2/x.s

section "a generator that writes its output's name in another form: the second misses"
cat > "$W/gen.py" <<'EOF'
import os, sys
out = sys.argv[1]
guard = os.path.basename(out).upper().replace(".", "_")
with open(out, "w") as f:
    f.write("#ifndef %s\n#define %s\n#endif\n" % (guard, guard))
EOF
mkdir -p g-1 g-2
run_expect miss "" -- python3 "$W/gen.py" g-1/out1.h
run_expect miss "" -- python3 "$W/gen.py" g-2/out2.h
grep -q OUT2_H g-2/out2.h || fail "g-2/out2.h has the wrong guard"

if command -v cmake > /dev/null && command -v make > /dev/null; then
    section "CMake: two static libraries of the same source, the second compile served"
    mkdir -p "$W/proj" "$W/proj/build"
    cp "$SRC/x.c" "$SRC/x.h" "$W/proj/"
    cat > "$W/proj/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(dups C)
add_library(a STATIC x.c)
add_library(b STATIC x.c)
EOF
    : > "$CACHET_STATUS_FILE"
    cmake -S "$W/proj" -B "$W/proj/build" -G "Unix Makefiles" "-DCMAKE_C_COMPILER_LAUNCHER=$CACHET_BIN" > /dev/null
    : > "$CACHET_STATUS_FILE"
    make -C "$W/proj/build" -j1 a b > /dev/null
    grep -c '"reason": "duplicate"' "$CACHET_STATUS_FILE" | grep -qx 1 ||
        fail "no compile served as a duplicate: $(cat "$CACHET_STATUS_FILE")"
    cmp -s <(sed 's/a\.dir/b.dir/g' "$W/proj/build/CMakeFiles/a.dir/x.c.o.d") "$W/proj/build/CMakeFiles/b.dir/x.c.o.d" ||
        fail "b's depfile is not a's with its own target"
fi
