# Meson: Lua 5.4 (Debian's lua5.4 source package) with a meson.build written
# here, set up with CC="cachet gcc" and built by the Ninja files Meson
# generates. A second build from a clean build directory is all hits with
# byte-identical files; an edited source file re-runs exactly its compile and
# the two links (Meson's archiver is not the compiler, so ar runs plainly).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/build_lib.sh"

require_tools meson ninja gcc nm
SRC=$(debian_source --skip-patches lua5.4)
S="$T/lua"         # a private copy: the test edits it
B="$T/lua/build"   # the same path for every build
cp -a "$SRC" "$S"

mapfile -t LIB_C < <(cd "$S/src" && ls l*.c | grep -vxE 'lua\.c|luac\.c')
N_STEPS=$((${#LIB_C[@]} + 2 + 2))   # compiles, lua.c and luac.c, two links
{
    echo "project('lua', 'c', version: '5.4', default_options: ['c_std=gnu99', 'optimization=2', 'debug=false'])"
    echo "add_project_arguments('-DLUA_COMPAT_5_3', '-DLUA_USE_LINUX', language: 'c')"
    echo "cc = meson.get_compiler('c')"
    echo "deps = [cc.find_library('m'), cc.find_library('dl')]"
    printf "liblua = static_library('lua'"
    for f in "${LIB_C[@]}"; do printf ", 'src/%s'" "$f"; done
    echo ")"
    echo "executable('lua', 'src/lua.c', link_with: liblua, dependencies: deps, link_args: '-Wl,-E')"
    echo "executable('luac', 'src/luac.c', link_with: liblua, dependencies: deps)"
} > "$S/meson.build"

setup() {
    rm -rf "$B"
    new_build
    CC="$CACHET_BIN gcc" timed "$1" meson setup "$B" "$S"
    grep -q "$CACHET_BIN" "$B/build.ninja" || fail "meson did not take CC=\"cachet gcc\""
}

build() {
    new_build
    timed "$1" ninja -C "$B" -j2
}

keep() {
    rm -rf "$T/$1"
    mkdir -p "$T/$1"
    (cd "$B" && cp --parents liblua.a lua luac "$T/$1/" && find . -name '*.o' -exec cp --parents {} "$T/$1/" \;)
}

section "first build from a clean build directory: every step misses"
setup setup-1
build meson-1
expect_counts 0 "$N_STEPS"
[ "$("$B/lua" -e 'io.write(6 * 7)')" = 42 ] || fail "the lua built through cachet does not run"
keep first
(cd "$T/first" && find . -type f) > "$T/files"
mapfile -t FILES < "$T/files"

section "second build from a clean build directory: all hits, identical files"
setup setup-2
build meson-2
expect_counts "$N_STEPS" 0
assert_same_files "$T/first" "$B" "${FILES[@]}"

section "an edited source file: its compile and the two links miss, nothing else"
echo 'int cachet_test_added(void) { return 42; }' >> "$S/src/lapi.c"
setup setup-3
build meson-3
expect_counts $((N_STEPS - 3)) 3
expect_missed '/src_lapi\.c\.o -c \.\./src/lapi\.c$' ' -o lua ' ' -o luac '
assert_defines "$B/lua" cachet_test_added

section "the edit undone, incremental: ninja re-runs the same three steps, all hit"
cp "$SRC/src/lapi.c" "$S/src/lapi.c"
build meson-4
expect_counts 3 0
assert_same_files "$T/first" "$B" "${FILES[@]}"
check_status_file_format
