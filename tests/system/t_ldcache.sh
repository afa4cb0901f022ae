# The loader's cache (/etc/ld.so.cache) is keyed by what it maps the sonames
# the step's loaders looked up to, not by its bytes, which every ldconfig
# rewrites: an unrelated library added to the cache changes no step, a
# soname that now maps to another file (or a dlopen'ed one that appears in
# the cache) misses, and a step that reads the file itself keys its bytes.
# Run in a private mount namespace with a copy of the cache bind-mounted
# over /etc/ld.so.cache, rebuilt by `ldconfig -C`.
if [ -z "${CACHET_LDCACHE_NS:-}" ]; then
    if [ "$(id -u)" -eq 0 ] && command -v unshare > /dev/null && command -v ldconfig > /dev/null &&
        unshare -m true 2> /dev/null; then
        CACHET_LDCACHE_NS=1 exec unshare -m bash "$0" "$@"
    fi
fi
source "$(dirname "$0")/lib.sh"
[ -n "${CACHET_LDCACHE_NS:-}" ] || skip "needs root, unshare -m and ldconfig"
unset CACHET_LDCACHE_NS
command -v gcc > /dev/null || skip "no gcc"
[ -s /etc/ld.so.cache ] || skip "no /etc/ld.so.cache"

W=$(workdir)
cd "$W"
mkdir -p greetA greetB extra maybe bin src
lib() { # DIR NAME WORD: NAME.so.1 in DIR, whose greet() says WORD
    echo "const char *greet(void) { return \"$3\"; }" > "src/$2.c"
    gcc -O1 -shared -fPIC -Wl,-soname,"$2.so.1" -o "$1/$2.so.1" "src/$2.c"
}
lib greetA libgreet "A"
lib greetB libgreet "B"
lib extra libunrelated "unrelated"
lib maybe libmaybe "maybe"
ln -s libgreet.so.1 greetA/libgreet.so
cat > src/hello.c <<'EOF2'
#include <stdio.h>
const char *greet(void);
int main(void) { puts(greet()); return 0; }
EOF2
cat > src/probe.c <<'EOF2'
#include <dlfcn.h>
#include <stdio.h>
int main(void) { puts(dlopen("libmaybe.so.1", RTLD_NOW) ? "present" : "absent"); return 0; }
EOF2
gcc -O1 -o bin/hello src/hello.c -LgreetA -lgreet
gcc -O1 -o bin/probe src/probe.c -ldl
echo 'int twice(int x) { return 2 * x; }' > a.c

# CACHE DIRS...: the cache is the system's directories and DIRS.
cache() {
    ldconfig -C "$W/ld.cache.new" "$@"
    cat "$W/ld.cache.new" > "$W/ld.cache"
}
touch ld.cache
mount --bind "$W/ld.cache" /etc/ld.so.cache
cache "$W/greetA"
[ "$(bin/hello)" = A ] || fail "test setup: hello does not load greetA's library through the cache"

section "a compile, a link and a program loading a library through the cache: miss, then hit"
run_expect miss "new step" -- gcc -c a.c -o a.o
run_expect hit "" -- gcc -c a.c -o a.o
run_expect miss "new step" -- gcc a.o -shared -o liba.so -lz
run_expect hit "" -- gcc a.o -shared -o liba.so -lz
run_expect miss "new step" -- sh -c 'bin/hello > hello.txt'
run_expect hit "" -- sh -c 'bin/hello > hello.txt'
run_expect miss "new step" -- sh -c 'bin/probe > probe.txt'
assert_content probe.txt absent
run_expect hit "" -- sh -c 'bin/probe > probe.txt'
run_expect miss "new step" -- sh -c 'cat /etc/ld.so.cache > copy'
run_expect hit "" -- sh -c 'cat /etc/ld.so.cache > copy'

section "an unrelated library enters the cache: every step that used it for its sonames hits"
cp ld.cache before
cache "$W/greetA" "$W/extra"
! cmp -s before ld.cache || fail "test setup: ldconfig left the cache as it was"
run_expect hit "" -- gcc -c a.c -o a.o
run_expect hit "" -- gcc a.o -shared -o liba.so -lz
run_expect hit "" -- sh -c 'bin/hello > hello.txt'
assert_content hello.txt A
run_expect hit "" -- sh -c 'bin/probe > probe.txt'
assert_content probe.txt absent

section "a step that reads the cache itself keys its bytes"
run_expect miss "inputs changed" -- sh -c 'cat /etc/ld.so.cache > copy'
assert_same copy /etc/ld.so.cache

section "the soname now maps to another file: miss, and the new library is loaded"
cache "$W/greetB" "$W/extra"
run_expect miss "inputs changed" -- sh -c 'bin/hello > hello.txt'
assert_content hello.txt B
run_expect hit "" -- sh -c 'bin/hello > hello.txt'

section "a soname looked up and not found enters the cache: miss"
cache "$W/greetB" "$W/extra" "$W/maybe"
run_expect miss "inputs changed" -- sh -c 'bin/probe > probe.txt'
assert_content probe.txt present

section "a damaged cache is no mapping: miss, and the answers are the plain run's"
head -c 100 ld.cache.new > ld.cache
plain=$(bin/probe)
run_expect miss "inputs changed" -- sh -c 'bin/probe > probe.txt'
assert_content probe.txt "$plain"

section "the compile's answers are the plain run's"
cache "$W/greetA" "$W/extra"
mkdir -p "$W/plain"
cd "$W/plain"
plain_and_cached 'cp "$W/a.c" .' gcc -c a.c -o a.o
