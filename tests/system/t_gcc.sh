# gcc through cachet: hits only while every header, include-path probe,
# environment variable and stdin byte the compile relied on is unchanged.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
mkdir a b
cat > a.c <<'EOF'
#include "x.h"
#include "y.h"
#define STR2(v) #v
#define STR(v) STR2(v)
const char tag[] = "TAG_X" STR(X) "_Y" STR(Y) "_END";
int f(void) { return X + Y; }
EOF
echo '#define X 1' > b/x.h
echo '#define Y 10' > y.h
CC=(gcc -O1 -Ia -Ib -c a.c -o a.o)

section "compile twice: miss, then hit with an identical object"
run_expect miss "new step" -- "${CC[@]}"
assert_contains_bytes a.o TAG_X1_Y10_END
cp a.o first.o
run_expect hit "" -- "${CC[@]}"
assert_same a.o first.o

section "a deleted object is restored by a hit"
rm a.o
run_expect hit "" -- "${CC[@]}"
assert_same a.o first.o

section "a corrupted object is replaced: a miss, as a file the user wrote there"
# cachet cannot tell it from a file that `[ -e f ] || cp` would keep
# (README, the state before a path the step creates): the step runs.
echo garbage > a.o
run_expect miss "inputs changed" -- "${CC[@]}"
assert_same a.o first.o
run_expect hit "" -- "${CC[@]}"
assert_same a.o first.o

section "editing a header misses and rebuilds"
echo '#define Y 20' > y.h
run_expect miss "inputs changed" -- "${CC[@]}"
assert_contains_bytes a.o TAG_X1_Y20_END
assert_differ a.o first.o
cp a.o second.o
run_expect hit "" -- "${CC[@]}"
assert_same a.o second.o

section "restoring the old header hits the old result"
echo '#define Y 10' > y.h
run_expect hit "" -- "${CC[@]}"
assert_same a.o first.o
echo '#define Y 20' > y.h
run_expect hit "" -- "${CC[@]}"
assert_same a.o second.o

section "a header in an earlier -I directory shadows the later one: miss"
echo '#define X 7' > a/x.h
run_expect miss "inputs changed" -- "${CC[@]}"
assert_contains_bytes a.o TAG_X7_Y20_END
run_expect hit "" -- "${CC[@]}"
assert_contains_bytes a.o TAG_X7_Y20_END
rm a/x.h
run_expect hit "" -- "${CC[@]}"
assert_same a.o second.o

section "an environment variable gcc reads (SOURCE_DATE_EPOCH, __DATE__) is keyed"
cat > d.c <<'EOF'
const char built[] = "DATE[" __DATE__ "]";
EOF
SOURCE_DATE_EPOCH=0 run_expect miss "" -- gcc -c d.c -o d.o
assert_contains_bytes d.o "DATE[Jan  1 1970]"
SOURCE_DATE_EPOCH=0 run_expect hit "" -- gcc -c d.c -o d.o
assert_contains_bytes d.o "DATE[Jan  1 1970]"
SOURCE_DATE_EPOCH=1000000000 run_expect miss "" -- gcc -c d.c -o d.o
assert_contains_bytes d.o "DATE[Sep  9 2001]"
SOURCE_DATE_EPOCH=0 run_expect hit "" -- gcc -c d.c -o d.o
assert_contains_bytes d.o "DATE[Jan  1 1970]"

section "CPATH chooses the header directory: keyed"
mkdir c1 c2
echo '#define P 1' > c1/p.h
echo '#define P 2' > c2/p.h
cat > p.c <<'EOF'
#include <p.h>
#define STR2(v) #v
#define STR(v) STR2(v)
const char tag[] = "PVAL_" STR(P) "_END";
EOF
CPATH=$W/c1 run_expect miss "" -- gcc -c p.c -o p.o
assert_contains_bytes p.o PVAL_1_END
CPATH=$W/c2 run_expect miss "" -- gcc -c p.c -o p.o
assert_contains_bytes p.o PVAL_2_END
CPATH=$W/c1 run_expect hit "" -- gcc -c p.c -o p.o
assert_contains_bytes p.o PVAL_1_END

section "source on stdin (a regular file) is keyed by its content"
echo 'const char tag[] = "STDIN_1_END";' > s.c
cp s.c s-copy.c
run_expect miss "new step" -- gcc -x c - -c -o s.o < s.c
assert_contains_bytes s.o STDIN_1_END
cp s.o s-first.o
run_expect hit "" -- gcc -x c - -c -o s.o < s.c
assert_same s.o s-first.o
# Same content under another name: same step.
rm s.o
run_expect hit "" -- gcc -x c - -c -o s.o < s-copy.c
assert_same s.o s-first.o
echo 'const char tag[] = "STDIN_2_END";' > s.c
run_expect miss "" -- gcc -x c - -c -o s.o < s.c
assert_contains_bytes s.o STDIN_2_END
assert_lacks_bytes s.o STDIN_1_END
run_expect hit "" -- gcc -x c - -c -o s.o < s.c
assert_contains_bytes s.o STDIN_2_END

section "make CC=\"cachet gcc\", also with make -j2 (jobserver flags are not keyed)"
mkdir proj
cd proj
for i in 1 2 3; do
    printf 'int part%d(void) { return %d; }\n' "$i" "$i" > "p$i.c"
done
printf 'int part1(void), part2(void), part3(void);\nint main(void) { return part1() + part2() + part3() == 6 ? 0 : 1; }\n' > main.c
cat > Makefile <<'EOF'
OBJS = p1.o p2.o p3.o main.o
prog: $(OBJS)
	$(CC) -o $@ $(OBJS)
%.o: %.c
	$(CC) -O1 -c $< -o $@
clean:
	rm -f prog $(OBJS)
EOF
make_with_cachet() {
    local before
    before=$(status_count)
    make -s "$@" CC="$CACHET_BIN gcc" > /dev/null || fail "make $* CC=\"cachet gcc\" failed"
    ./prog || fail "the program built by make $* is wrong"
    # One status line per compile and one for the link.
    [ "$(status_count)" -eq $((before + 5)) ] || fail "make $*: $(($(status_count) - before)) status lines, expected 5"
    python3 - "$CACHET_STATUS_FILE" "$before" <<'EOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()[int(sys.argv[2]):]
print("make: " + " ".join(json.loads(l)["result"] for l in lines))
EOF
}
make_with_cachet
make -s clean
make_with_cachet
[ "$(grep -c '"hit"' <(tail -n 5 "$CACHET_STATUS_FILE"))" -eq 5 ] || fail "a rebuild after make clean did not hit all 5 steps"
make -s clean
make_with_cachet -j2
[ "$(grep -c '"hit"' <(tail -n 5 "$CACHET_STATUS_FILE"))" -eq 5 ] || fail "make -j2 after make clean did not hit all 5 steps (make -j gives every job but one a broken pipe as stdin: a step that never reads stdin must not be keyed by it)"
cd ..

section "what the step left in its private TMPDIR is gone when cachet returns"
# cachet empties it beside the record, and waits for that before it exits:
# after a stored miss, a failed step and a refused check alike. The
# directory stays, empty and private, for the next step (step_env.h).
mkdir -p tmproot tmpstep && cd tmpstep
printf 'int t(void) { return 1; }\n' > t.c
leftover() {
    local left
    left=$(find ../tmproot -mindepth 1 ! -path "../tmproot/cachet-step-$(id -u)-*" -o -mindepth 2)
    [ -z "$left" ] || fail "$1: left in TMPDIR: $left"
    for d in ../tmproot/cachet-step-*; do
        [ -e "$d" ] || continue
        [ "$(stat -c %a "$d")" = 700 ] || fail "$1: $d is not private: $(stat -c %a "$d")"
    done
}
TMPDIR=$PWD/../tmproot step sh -c 'echo kept > "$TMPDIR/scratch" && gcc -c t.c -o t.o'
expect_rc 0
expect miss
leftover "a stored miss"
TMPDIR=$PWD/../tmproot step sh -c 'echo kept > "$TMPDIR/scratch"; exit 3'
expect_rc 3
leftover "a failed step"
set +e
TMPDIR=$PWD/../tmproot cachet run --check false -- sh -c 'echo kept > "$TMPDIR/scratch"; echo x > c.o'
RC=$?
set -e
[ "$RC" -ne 0 ] || fail "--check false: exit status 0"
leftover "a refused check"
cd ..

section "the next step gets the same TMPDIR, empty and private again"
mkdir -p tmppool && cd tmppool
# Each command differs: every one runs.
TMPDIR=$PWD/../tmproot step sh -c 'echo "$TMPDIR" > first.dir; echo x > "$TMPDIR/f"; chmod 755 "$TMPDIR"'
TMPDIR=$PWD/../tmproot step sh -c 'echo "$TMPDIR" > second.dir; ls -A "$TMPDIR" > second.ls; stat -c %a "$TMPDIR" > second.mode'
[ "$(cat first.dir)" = "$(cat second.dir)" ] || fail "a free TMPDIR of the pool was not used again"
[ ! -s second.ls ] || fail "the next step saw what the last one left: $(cat second.ls)"
[ "$(cat second.mode)" = 700 ] || fail "the next step's TMPDIR is not private: $(cat second.mode)"
# A directory of the pool that is not empty (a killed run's) or not a
# directory of this user's is passed over, and left as it is.
pool=$(cat first.dir)
echo partial > "$pool/partial"
mkdir -p ../elsewhere && echo keep > ../elsewhere/target
next="${pool%-*}-$(( ${pool##*-} + 1 ))"
rm -rf "$next" && ln -s "$PWD/../elsewhere" "$next"
TMPDIR=$PWD/../tmproot step sh -c 'echo "$TMPDIR" > third.dir; ls -A "$TMPDIR" > third.ls'
[ "$(cat third.dir)" != "$pool" ] || fail "a TMPDIR holding a killed run's file was used"
[ "$(cat third.dir)" != "$next" ] || fail "a symlink of the pool's name was used"
[ ! -s third.ls ] || fail "the step's TMPDIR was not empty: $(cat third.ls)"
assert_content "$pool/partial" partial
assert_content ../elsewhere/target keep
rm -f "$pool/partial" "$next"
cd ..

check_status_file_format
