# CMake: libuv (Debian's libuv1 source package) configured with
# CMAKE_C_COMPILER_LAUNCHER=cachet (and CMAKE_C_LINKER_LAUNCHER=cachet), its
# shared library built by the Makefile generator. A second build from a clean
# build directory is all hits with byte-identical objects and library; an
# edited source file re-runs exactly its compile and the library's link, and
# undoing the edit brings the first build's library back from the cache.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/build_lib.sh"

require_tools cmake make gcc nm
SRC=$(debian_source libuv1)
S="$T/libuv"       # a private copy: the test edits it
B="$T/build"       # the same path for every build
cp -a "$SRC" "$S"
LIB=libuv.so.1.0.0

configure() {
    rm -rf "$B"
    mkdir "$B"
    new_build
    timed "$1" cmake -S "$S" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
        "-DCMAKE_C_COMPILER_LAUNCHER=$CACHET_BIN" "-DCMAKE_C_LINKER_LAUNCHER=$CACHET_BIN"
}

build() {
    new_build
    timed "$1" cmake --build "$B" --target uv -j2
}

keep() {
    rm -rf "$T/$1"
    mkdir -p "$T/$1"
    (cd "$B" && cp --parents "$LIB" "$T/$1/" && find CMakeFiles/uv.dir -name '*.o' -exec cp --parents {} "$T/$1/" \;)
}

section "first build from a clean build directory: every step misses"
configure configure-1
build build-1
N_O=$(find "$B/CMakeFiles/uv.dir" -name '*.o' | wc -l)
[ "$N_O" -ge 20 ] || fail "only $N_O objects: did the build change?"
N_STEPS=$((N_O + 1))   # one compile per object, one link
expect_counts 0 "$N_STEPS"
grep -q "$CACHET_BIN" "$B/CMakeFiles/uv.dir/link.txt" || fail "the link does not go through cachet"
keep first
(cd "$T/first" && find . -type f) > "$T/files"
mapfile -t FILES < "$T/files"

section "second build from a clean build directory: all hits, identical files"
configure configure-2
build build-2
expect_counts "$N_STEPS" 0
assert_same_files "$T/first" "$B" "${FILES[@]}"
# (grep reads whole outputs here: an early exit would fail the pipe under pipefail)
grep -q 'SONAME.*libuv\.so\.1' <<< "$(readelf -d "$B/$LIB")" || fail "$LIB lacks its SONAME"

section "an edited source file: its compile and the link miss, nothing else"
echo 'int cachet_test_added(void) { return 42; }' >> "$S/src/unix/tcp.c"
configure configure-3
build build-3
expect_counts $((N_STEPS - 2)) 2
expect_missed '-o CMakeFiles/uv\.dir/src/unix/tcp\.c\.o ' "-o $LIB "
assert_defines "$B/CMakeFiles/uv.dir/src/unix/tcp.c.o" cachet_test_added
assert_differ "$T/first/$LIB" "$B/$LIB"

section "the edit undone, incremental: cmake re-runs the compile and the link, both hit"
cp "$SRC/src/unix/tcp.c" "$S/src/unix/tcp.c"
build build-4
expect_counts 2 0
assert_same_files "$T/first" "$B" "${FILES[@]}"
check_status_file_format
