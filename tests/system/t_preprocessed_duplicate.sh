# Preprocessed duplicates: CMake compiles a source for a static and a
# shared library with argvs that differ in -o, -MF, -MT and the shared
# library's -D<target>_EXPORTS. When both preprocess to the same text (the
# source never tests the macro), the second is served from the first's
# entry ("hit", reason "preprocessed duplicate") with its own object and
# depfile, byte for byte what the plain command makes; then it hits
# directly. A -D the source uses, a probe only one of them makes, a
# warning only one of them gives, and options that write macros or the
# command line out: a miss, as plainly.
source "$(dirname "$0")/lib.sh"

command -v gcc > /dev/null || skip "no gcc"

W=$(workdir)
SRC="$W/src"
mkdir -p "$SRC"
cat > "$SRC/x.c" <<'EOF'
#include "x.h"
#if defined(WANT_EXTRA) && __has_include("extra.h")
#include "extra.h"
#endif
#ifndef EXTRA
#define EXTRA 0
#endif
int f(int a) { return a * X + EXTRA; }
#ifdef USED
int used(void) { return 1; }
#endif
EOF
echo '#define X 42' > "$SRC/x.h"
cat > "$SRC/y.cpp" <<'EOF'
#include <vector>
#include "x.h"
#ifdef lib_EXPORTS
#define API __attribute__((visibility("default")))
#else
#define API
#endif
template <typename T> struct box { T v; T twice() const { return v + v; } };
inline int sum(const std::vector<int> &v) { int s = 0; for (int x : v) s += x; return s; }
API int g(int a) { box<int> b{a * X}; return b.twice() + sum({a, a}); }
EOF
cat > "$SRC/z.cpp" <<'EOF'
#include <vector>
#include "x.h"
template <typename T> struct box { T v; T twice() const { return v + v; } };
inline int sum(const std::vector<int> &v) { int s = 0; for (int x : v) s += x; return s; }
int g(int a) { box<int> b{a * X}; return b.twice() + sum({a, a}); }
EOF
cat > "$SRC/redef.c" <<'EOF'
#define R 1
int r(void) { return R; }
EOF

# compile CC NAME SOURCE WORDS...: the CMake-style compile of SOURCE into
# CMakeFiles/NAME.dir (relative to $PWD). The producer string is left out,
# as in t_duplicates.
compile() {
    local cc=$1 d=CMakeFiles/$2.dir src=$3
    shift 3
    echo "$cc" -g -gno-record-gcc-switches -O2 -I"$SRC" "$@" -MD -MT "$d/x.c.o" -MF "$d/x.c.o.d" -o "$d/x.c.o" -c "$SRC/$src"
}

# plain CC NAME SOURCE WORDS...: the compile without cachet, its object and
# depfile kept as $P/NAME.o and $P/NAME.d, its stderr as $P/NAME.err.
P="$W/plain"
mkdir -p "$P"
plain() {
    local n=$2 d=CMakeFiles/$2.dir
    mkdir -p "$d"
    $(compile "$@") 2> "$P/$n.err"
    mv "$d/x.c.o" "$P/$n.o"
    mv "$d/x.c.o.d" "$P/$n.d"
}

# same_as_plain NAME: the cached compile's object and depfile are the plain ones.
same_as_plain() {
    assert_same "$P/$1.o" "CMakeFiles/$1.dir/x.c.o"
    assert_same "$P/$1.d" "CMakeFiles/$1.dir/x.c.o.d"
}

C="$W/top"
mkdir -p "$C"
cd "$C"

section "a -D the source never tests: the second compile is served from the first"
plain gcc a x.c
plain gcc s x.c -Dlib_EXPORTS
run_expect miss "new step" -- $(compile gcc a x.c)
run_expect hit "preprocessed duplicate" -- $(compile gcc s x.c -Dlib_EXPORTS)
same_as_plain a
same_as_plain s
grep -q '^CMakeFiles/s.dir/x.c.o:' CMakeFiles/s.dir/x.c.o.d || fail "the depfile does not name its own target"
[ "$(counters preprocessed_duplicate_hits)" = 1 ] ||
    fail "preprocessed_duplicate_hits: $(counters preprocessed_duplicate_hits)"
cachet stats | grep -q 'preprocessed duplicates *1$' || fail "cachet stats does not count it"
# Stored as the step's own entry: it hits without the tier now.
rm -f CMakeFiles/s.dir/*
run_expect hit "" -- $(compile gcc s x.c -Dlib_EXPORTS)
[ -z "$(last_reason)" ] || fail "expected a direct hit, got reason $(last_reason)"
same_as_plain s
# -D X and -U X as two words, at another place: served too.
plain gcc s2 x.c -D lib_EXPORTS -U NEVER
run_expect hit "preprocessed duplicate" -- $(compile gcc s2 x.c -D lib_EXPORTS -U NEVER)
same_as_plain s2
check_status_file_format

section "a -D the source uses: a miss, as plainly"
plain gcc u x.c -DUSED
run_expect miss "" -- $(compile gcc u x.c -DUSED)
same_as_plain u

section "-g3 writes the macros out: not served"
plain gcc g3a x.c -g3
plain gcc g3b x.c -g3 -DOTHER
run_expect miss "" -- $(compile gcc g3a x.c -g3)
run_expect miss "" -- $(compile gcc g3b x.c -g3 -DOTHER)
same_as_plain g3b

section "-frecord-gcc-switches writes the command line out: not served"
plain gcc ra x.c -frecord-gcc-switches
plain gcc rb x.c -frecord-gcc-switches -DOTHER
run_expect miss "" -- $(compile gcc ra x.c -frecord-gcc-switches)
run_expect miss "" -- $(compile gcc rb x.c -frecord-gcc-switches -DOTHER)
same_as_plain rb

section "a header probed under one -D only: served while absent, a miss once it exists"
plain gcc pa x.c -DPROBE
plain gcc pb x.c -DPROBE -DWANT_EXTRA
# -DPROBE is never tested either: both are served from the first compile.
run_expect hit "preprocessed duplicate" -- $(compile gcc pa x.c -DPROBE)
run_expect hit "preprocessed duplicate" -- $(compile gcc pb x.c -DPROBE -DWANT_EXTRA)
same_as_plain pa
same_as_plain pb
echo '#define EXTRA 7' > "$SRC/extra.h"
plain gcc pb x.c -DPROBE -DWANT_EXTRA
rm -f CMakeFiles/pb.dir/*
run_expect miss "" -- $(compile gcc pb x.c -DPROBE -DWANT_EXTRA)
same_as_plain pb
cmp -s "$P/pa.o" CMakeFiles/pb.dir/x.c.o && fail "the object does not see extra.h"
rm "$SRC/extra.h"

section "a -D that the source redefines: the warning only one gives, a miss"
plain gcc wa redef.c
plain gcc wb redef.c -DR=2
run_expect miss "" -- $(compile gcc wa redef.c)
step $(compile gcc wb redef.c -DR=2) 2> "$T/wb.err"
expect miss
cmp -s "$P/wb.err" "$T/wb.err" || fail "stderr differs from the plain compile's"
grep -q 'redefined' "$T/wb.err" || fail "no redefinition warning"
same_as_plain wb
# Both warn alike: served with the first's warning, which is this one's.
plain gcc wc redef.c -DR=2 -DOTHER
step $(compile gcc wc redef.c -DR=2 -DOTHER) 2> "$T/wc.err"
expect hit "preprocessed duplicate"
cmp -s "$P/wc.err" "$T/wc.err" || fail "stderr differs from the plain compile's"
same_as_plain wc

if command -v clang > /dev/null; then
    section "clang: a -D the source never tests, served; with -g3, not"
    plain clang ca x.c
    plain clang cb x.c -Dlib_EXPORTS
    run_expect miss "" -- $(compile clang ca x.c)
    run_expect hit "preprocessed duplicate" -- $(compile clang cb x.c -Dlib_EXPORTS)
    same_as_plain cb
    plain clang cc x.c -g3
    plain clang cd x.c -g3 -Dlib_EXPORTS
    run_expect miss "" -- $(compile clang cc x.c -g3)
    run_expect miss "" -- $(compile clang cd x.c -g3 -Dlib_EXPORTS)
    same_as_plain cd
fi

# C++: templates and inline functions in COMDAT groups, the standard
# library's headers; a -D that only the export macro of one compile tests
# is a miss, one no header tests is served.
for cxx in g++ clang++; do
    command -v $cxx > /dev/null || { echo "(no $cxx: its C++ section is not run)"; continue; }
    section "$cxx: a -D the source never tests, served; the export macro it tests, a miss"
    n=${cxx%%+*}
    plain $cxx ${n}za z.cpp
    plain $cxx ${n}zb z.cpp -Dlib_EXPORTS
    run_expect miss "" -- $(compile $cxx ${n}za z.cpp)
    run_expect hit "preprocessed duplicate" -- $(compile $cxx ${n}zb z.cpp -Dlib_EXPORTS)
    same_as_plain ${n}zb
    plain $cxx ${n}ya y.cpp
    plain $cxx ${n}yb y.cpp -Dlib_EXPORTS
    run_expect miss "" -- $(compile $cxx ${n}ya y.cpp)
    run_expect miss "" -- $(compile $cxx ${n}yb y.cpp -Dlib_EXPORTS)
    same_as_plain ${n}yb
done
