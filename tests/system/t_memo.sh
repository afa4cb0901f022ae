# Memos: a hit answered from the step's memo, without the index, must be
# exactly the hit the index would give. A touched input (new times, same
# content) still hits and refreshes the memo; a changed input, program or
# environment misses or goes to the index; a damaged memo is counted and
# removed; clear, eviction and a step found nondeterministic drop memos.
source "$(dirname "$0")/lib.sh"
# This test writes garbage into the cache's index and removes memos: never
# anywhere but the test's own cache.
: "${CACHET_DIR:?lib.sh sets a cache for each test}"

W=$(workdir)
cd "$W"
mkdir inc
printf '#define GREETING "hello"\n' > inc/greet.h
cat > main.c <<'EOF'
#include <stdio.h>
#include "greet.h"
int main(void) { puts(GREETING); return 0; }
EOF
compile() { step gcc -Iinc -c main.c -o main.o; [ "$RC" -eq 0 ] || fail "gcc exited $RC"; }
memo_files() { find "$CACHET_DIR/memo" -type f 2> /dev/null | wc -l | tr -d ' '; }
memo_file() { find "$CACHET_DIR/memo" -type f | head -n 1; }

section "a miss leaves a memo; the next run hits through it"
compile
expect miss "new step"
[ "$(memo_files)" -eq 1 ] || fail "a stored miss left $(memo_files) memos, expected 1"
cp main.o ref.o
rm main.o
compile
expect hit
cmp -s main.o ref.o || fail "the memo hit restored a different object"

section "the index is not read on a memo hit"
# A garbage index goes unnoticed by a memo hit (nothing recreated); the
# next run that needs the index finds it and starts a new one.
cp -a "$CACHET_DIR" "$W/good-cache"
before=$(counters index_recreated)
printf 'this is no database' | dd of="$CACHET_DIR/index.db" conv=notrunc status=none
rm -f main.o
compile
expect hit
cmp -s main.o ref.o || fail "hit with a damaged index restored a different object"
[ "$(counters index_recreated)" = "$before" ] || fail "a memo hit opened the index"
rm -rf "$CACHET_DIR"
cp -a "$W/good-cache" "$CACHET_DIR"

section "a hit restoring its object in place leaves the memo as it was"
# Each hit gives main.o new times: a fingerprint of it would be stale at
# the next run, and is no reason to write the memo again. The object is
# settled here (hashed, fingerprinted); another file of the same size in
# its place is found, not taken for the object the memo knew. The sources
# settle first: the hit after that fingerprints them (a memo written for
# them), which the sections above, within a second of their writing, could
# not.
sleep 1.1
compile
expect hit
old=$(stat -c %i "$(memo_file)")
sleep 1.1
compile
expect hit
cmp -s main.o ref.o || fail "the hit restored a different object"
[ "$(stat -c %i "$(memo_file)")" = "$old" ] || fail "a hit that restored its object in place rewrote the memo"
size=$(stat -c %s main.o)
head -c "$size" /dev/zero > main.o
compile
expect miss "inputs changed"
cmp -s main.o ref.o || fail "a same-sized other main.o was left in place"

section "a touched header (same content) hits and refreshes the memo"
# (Older than the fingerprint margin by then: a file changed just now is
# hashed on every run until it settles.)
old=$(stat -c %i "$(memo_file)")
touch inc/greet.h
sleep 1.1
compile
expect hit
[ "$(stat -c %i "$(memo_file)")" != "$old" ] || fail "the memo was not refreshed with the new fingerprint"
compile
expect hit

section "a changed header misses, never a stale hit"
printf '#define GREETING "bye"\n' > inc/greet.h
compile
expect miss "inputs changed"
gcc -Iinc -c main.c -o plain.o
cmp -s main.o plain.o || fail "the object after a header change differs from a plain compile"
compile
expect hit

section "a header created where the compiler found none misses (directory fingerprints)"
# gcc looks for x.h in first/ and in not/yet/ (absent, with its parent)
# before second/: lookups that the memo skips while those directories
# keep their times. Older than the fingerprint margin first.
mkdir -p first second not
printf '#define X 1\n' > second/x.h
printf '#include <x.h>\nint v = X;\n' > x.c
sleep 1.2
xcompile() { step gcc -Ifirst -Inot/yet -Isecond -c x.c -o x.o; [ "$RC" -eq 0 ] || fail "gcc exited $RC"; }
xcompile
expect miss "new step"
xcompile
expect hit
sleep 1.2
printf '#define X 2\n' > first/x.h
xcompile
expect miss "inputs changed"
gcc -Ifirst -Inot/yet -Isecond -c x.c -o x.plain.o
cmp -s x.o x.plain.o || fail "after first/x.h appeared the object differs from a plain compile"
rm first/x.h
sleep 1.2
xcompile
expect hit
xcompile
expect hit
mkdir -p not/yet
printf '#define X 3\n' > not/yet/x.h
xcompile
expect miss "inputs changed"
gcc -Ifirst -Inot/yet -Isecond -c x.c -o x.plain.o
cmp -s x.o x.plain.o || fail "after not/yet/x.h appeared the object differs from a plain compile"

section "headers in a subdirectory an earlier -I directory lacks: created there, a miss"
# gcc probes sub/a.h and sub/b.h in early/ (which has no sub/) before
# late/: the recording answers the second probe from the lookup of
# early/sub that the first one's made. A file created there must miss,
# from the memo and from the index alike.
mkdir -p early late/sub
printf '#define A 1\n' > late/sub/a.h
printf '#define B 2\n' > late/sub/b.h
printf '#include <sub/a.h>\n#include <sub/b.h>\nint v = A + B;\n' > sub.c
sleep 1.2
scompile() { step gcc -Iearly -Ilate -c sub.c -o sub.o; [ "$RC" -eq 0 ] || fail "gcc exited $RC"; }
scompile
expect miss "new step"
scompile
expect hit
mkdir early/sub
printf '#define B 20\n' > early/sub/b.h
scompile
expect miss "inputs changed"
gcc -Iearly -Ilate -c sub.c -o sub.plain.o
cmp -s sub.o sub.plain.o || fail "after early/sub/b.h appeared the object differs from a plain compile"
scompile
expect hit

section "another environment has its own key; coming back hits through the index"
MEMO_TEST_VARIANT=1 compile
expect miss "new step"
compile
expect hit
compile
expect hit

section "a damaged memo is counted, removed, and the index answers"
# Every memo is damaged (the x.c step has one too): the one of main.c is
# among them, whichever it is.
damage_memo() {
    case $1 in
        flip) python3 - "$2" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0x10
open(p, "wb").write(b)
EOF
        ;;
        truncate) truncate -s 100 "$2" ;;
        symlink) rm -f "$2"; ln -s /etc/passwd "$2" ;;
        directory) rm -f "$2"; mkdir "$2" ;;
    esac
}
for damage in flip truncate symlink directory; do
    [ "$(memo_files)" -ge 1 ] || fail "$damage: no memo to damage"
    for memo in "$CACHET_DIR"/memo/*; do
        damage_memo "$damage" "$memo"
    done
    errors=$(counters errors)
    rm -f main.o
    compile
    expect hit
    cmp -s main.o plain.o || fail "$damage: the hit after a damaged memo restored a different object"
    [ "$(counters errors)" -gt "$errors" ] || fail "$damage: a damaged memo was not counted"
    [ "$(memo_files)" -ge 1 ] || fail "$damage: the memo was not written again"
    compile
    expect hit
done

section "a memo of another version is replaced quietly, not counted as damage"
for memo in "$CACHET_DIR"/memo/*; do
    [ -f "$memo" ] || continue # the x.c step's, still damaged from above
    python3 - "$memo" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
assert b.startswith(b"cachet memo ")
b[len(b"cachet memo ")] = ord("2")  # the CRC-32 version before this one
open(p, "wb").write(b)
EOF
done
errors=$(counters errors)
rm -f main.o
compile
expect hit
cmp -s main.o plain.o || fail "the hit after another version's memo restored a different object"
[ "$(counters errors)" = "$errors" ] || fail "another version's memo was counted as an error"
[ "$(head -c 13 "$(memo_file)")" = "cachet memo 3" ] || fail "the memo was not written again in this version"
compile
expect hit

section "clear drops every memo"
cachet clear > /dev/null
[ "$(memo_files)" -eq 0 ] || fail "clear left $(memo_files) memos"
compile
expect miss "new step"

section "a step found nondeterministic loses its memo"
printf 'od -An -N4 -tu4 /dev/urandom > rand.out\n' > gen.sh
step sh gen.sh
expect miss
step sh gen.sh
expect hit
[ "$(memo_files)" -ge 2 ] || fail "expected the generator's memo"
CACHET_VERIFY_RATE=1 step sh gen.sh
expect hit "verified: nondeterministic"
[ "$(memo_files)" -eq 0 ] || fail "marking a step nondeterministic left $(memo_files) memos"
for i in 1 2; do
    step sh gen.sh 2> gen.err
    expect hit
    grep -q "different outputs on identical runs" gen.err ||
        fail "hit $i of a nondeterministic step came without its warning"
done

section "verify_rate = 1 verifies hits that a memo would answer"
compile
compile
expect hit
CACHET_VERIFY_RATE=1 compile
expect hit "verified: same outputs"

check_status_file_format
