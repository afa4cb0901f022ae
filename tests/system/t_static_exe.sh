# The statically linked cachet (CACHET_STATIC_EXE): it serves and stores
# runs itself, and hands what may load a plugin (subcommands other than
# run and help; runs with remotes configured) to cachet-dynamic with the
# options and command unchanged. Without its twin it still caches local
# runs, runs a step with remotes uncached with one warning, and names the
# missing file for the rest.
source "$(dirname "$0")/lib.sh"

if readelf -d "$CACHET_BIN" 2> /dev/null | grep -q NEEDED; then
    skip "cachet is linked dynamically here (a sanitizer build, or no static libc)"
fi
BUILD=$(dirname "$CACHET_BIN")
[ -x "$BUILD/cachet-dynamic" ] || fail "static cachet without $BUILD/cachet-dynamic"
readelf -d "$BUILD/cachet-dynamic" | grep -q NEEDED || fail "cachet-dynamic is not dynamic"

W=$(workdir)
cd "$W"
echo 'int f(int x) { return x * 3; }' > a.c

section "the static cachet caches a step as the plain command runs it"
mkdir -p p && cd p
plain_and_cached 'cp ../a.c .' gcc -c a.c -o a.o
cd "$W"

section "a subcommand runs in the twin"
cachet stats > stats.out || fail "cachet stats failed through the twin"
grep -q '^hits ' stats.out || fail "cachet stats printed no hits line: $(cat stats.out)"

section "a run with a remote goes to the twin, options and command unchanged"
# A remote nobody listens on: the twin's remote tier fails quietly, and the
# step is cached locally as ever. --check and -v must reach the twin.
export CACHET_REMOTE="http://127.0.0.1:9/"
rm -f b.o
set +e
cachet run -v --check 'test -f b.o' -- gcc -c a.c -o b.o 2> run.err
RC=$?
set -e
expect_rc 0
grep -q '^cachet: miss ' run.err || fail "-v did not reach the twin: $(cat run.err)"
! grep -q 'linked statically' run.err || fail "the static cachet tried a plugin: $(cat run.err)"
set +e
cachet run --check 'exit 7' -- gcc -O1 -c a.c -o c.o 2> check.err
RC=$?
set -e
expect_rc 7
run_expect hit "" -- gcc -c a.c -o b.o
run_expect miss "" -- gcc -O1 -c a.c -o c.o
unset CACHET_REMOTE

section "without the twin"
mkdir -p "$T/lone"
cp "$CACHET_BIN" "$T/lone/cachet"
cp "$BUILD"/libcachet-preload.so "$BUILD"/libcachet-audit.so "$T/lone/"
CACHET_BIN="$T/lone/cachet"
cd "$W/p"
plain_and_cached 'cp ../a.c .' gcc -O2 -c a.c -o a.o
set +e
cachet stats > lone.out 2> lone.err
RC=$?
set -e
expect_rc 1
[ "$(wc -l < lone.err)" -eq 1 ] && grep -q 'cannot run cachet-dynamic' lone.err ||
    fail "no one-line error naming cachet-dynamic: $(cat lone.err)"
rm -f a.o
set +e
CACHET_REMOTE="http://127.0.0.1:9/" cachet run -- gcc -c ../a.c -o a.o 2> remote.err
RC=$?
set -e
expect_rc 0
assert_exists a.o
grep -q 'running without the cache: cannot run cachet-dynamic' remote.err ||
    fail "no warning for a run with remotes and no twin: $(cat remote.err)"
