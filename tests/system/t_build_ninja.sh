# Ninja: Lua 5.4 (Debian's lua5.4 source package) built by a hand-written
# build.ninja whose compiler is "cachet gcc" (depfiles read by ninja with
# deps = gcc) and whose archiver is "cachet ar". A second build from a clean
# build directory is all hits with byte-identical files; an edited source file
# re-runs exactly its compile, the archive and the two links; undoing the edit
# in the built tree replays the first build's steps.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/build_lib.sh"

require_tools ninja gcc ar nm
SRC=$(debian_source --skip-patches lua5.4)
S="$T/lua"     # a private copy: the test edits it
B="$T/build"   # the same path for every build
cp -a "$SRC" "$S"

mapfile -t LIB_C < <(cd "$S/src" && ls l*.c | grep -vxE 'lua\.c|luac\.c')
N_STEPS=$((${#LIB_C[@]} + 2 + 3))   # compiles, lua.c and luac.c, ar, two links

write_build_ninja() {
    local f objs=()
    {
        echo "cc = $CACHET_BIN gcc"
        echo "ar = $CACHET_BIN ar"
        echo "cflags = -std=gnu99 -O2 -Wall -Wextra -DLUA_COMPAT_5_3 -DLUA_USE_LINUX"
        echo "src = $S/src"
        echo "rule cc"
        echo "  command = \$cc -MD -MF \$out.d \$cflags -c \$in -o \$out"
        echo "  depfile = \$out.d"
        echo "  deps = gcc"
        echo "rule ar"
        echo "  command = rm -f \$out && \$ar rcs \$out \$in"
        echo "rule link"
        echo "  command = \$cc -o \$out \$in -lm -Wl,-E -ldl"
        for f in "${LIB_C[@]}" lua.c luac.c; do
            echo "build obj/${f%.c}.o: cc \$src/$f"
        done
        for f in "${LIB_C[@]}"; do objs+=("obj/${f%.c}.o"); done
        echo "build liblua.a: ar ${objs[*]}"
        echo "build lua: link obj/lua.o liblua.a"
        echo "build luac: link obj/luac.o liblua.a"
    } > "$B/build.ninja"
}

clean_build_dir() {
    rm -rf "$B"
    mkdir "$B"
    write_build_ninja
}

build() {
    new_build
    timed "$1" ninja -C "$B" -j2
}

keep() {
    rm -rf "$T/$1"
    mkdir -p "$T/$1"
    (cd "$B" && cp --parents liblua.a lua luac obj/*.o "$T/$1/")
}

section "first build from a clean build directory: every step misses"
clean_build_dir
build ninja-1
expect_counts 0 "$N_STEPS"
[ "$("$B/lua" -e 'io.write(6 * 7)')" = 42 ] || fail "the lua built through cachet does not run"
keep first
(cd "$T/first" && find . -type f) > "$T/files"
mapfile -t FILES < "$T/files"

section "second build from a clean build directory: all hits, identical files"
clean_build_dir
build ninja-2
expect_counts "$N_STEPS" 0
assert_same_files "$T/first" "$B" "${FILES[@]}"
# ninja read the replayed depfiles: a header edit would rebuild lapi.o.
grep -q '/lapi\.h$' <<< "$(ninja -C "$B" -t deps obj/lapi.o)" || fail "ninja recorded no headers for lapi.o"

section "an edited source file: its compile, ar and the two links miss, nothing else"
echo 'int cachet_test_added(void) { return 42; }' >> "$S/src/lapi.c"
clean_build_dir
build ninja-3
expect_counts $((N_STEPS - 4)) 4
expect_missed ' -o obj/lapi\.o$' '^ar rcs liblua\.a ' ' -o lua obj/lua\.o ' ' -o luac obj/luac\.o '
assert_defines "$B/liblua.a" cachet_test_added
assert_defines "$B/lua" cachet_test_added

section "the edit undone, incremental: ninja re-runs the same four steps, all hit"
cp "$SRC/src/lapi.c" "$S/src/lapi.c"
build ninja-4
expect_counts 4 0
assert_same_files "$T/first" "$B" "${FILES[@]}"

section "a header edited in the built tree: the steps that include it miss"
echo '/* edited */' >> "$S/src/lundump.h"
# The objects whose recorded dependencies (ninja -t deps) name the header.
mapfile -t USERS < <(ninja -C "$B" -t deps | python3 -c '
import re, sys
obj = None
for line in sys.stdin:
    m = re.match(r"^(\S+): #deps", line)
    if m:
        obj = m.group(1)
    elif line.strip().endswith("/lundump.h"):
        print(obj)')
[ "${#USERS[@]}" -ge 3 ] || fail "ninja -t deps names only ${#USERS[@]} users of lundump.h"
build ninja-5
patterns=()
for o in "${USERS[@]}"; do patterns+=(" -o ${o//./\\.}\$"); done
# A comment changes no object: the archive and the links have the same
# inputs as before and hit.
expect_counts 3 "${#USERS[@]}"
expect_missed "${patterns[@]}"
assert_same_files "$T/first" "$B" liblua.a lua luac
check_status_file_format
