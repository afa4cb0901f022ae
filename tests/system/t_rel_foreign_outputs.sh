# Outputs that another process writes beside a step are never stored as the
# step's. This is the chain behind the empty out/4_2.bin that
# t_rel_concurrency.sh once stored, replayed step by step with FIFOs so that
# it happens every time:
#
#   1. step X creates out/ and writes out/x.txt; meanwhile a sibling step Y
#      has just created its temporary out/.y.tmp (empty: the shell opened it
#      with O_TRUNC, head has not written yet). X must not take it for one
#      of its own outputs.
#   2. Y fills out/.y.tmp; before Y renames it into place as out/y.bin, a
#      hit of X restores X's outputs. Had X's entry kept out/.y.tmp, the hit
#      would put the empty file back over Y's temporary, Y would rename that
#      into place, and Y's cachet would store an empty out/y.bin: a wrong
#      hit for every later run of Y.
#
# The FIFOs live under ignore_paths, so the steps' waits are neither inputs
# nor outputs; a step waits only while its sync/*.wait file exists.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
mkdir sync
export CACHET_IGNORE_PATHS="$W/sync"
head -c 5000 /dev/urandom > big.bin
head -c 5000 big.bin > expected-y.bin

# out/ is there before X's first run, as before every later one: a run
# whose mkdir made it keys it as absent before (README, the state before a
# path the step creates), and `mkdir out` over an existing one fails.
mkdir out
cat > x.sh <<'EOF'
mkdir -p out
echo x > out/x.txt
if [ -e sync/x.wait ]; then
    echo ready > sync/x.ready
    read -r _ < sync/x.go
fi
echo "x done"
EOF
cat > y.sh <<'EOF'
head -c 5000 big.bin > out/.y.tmp
if [ -e sync/y.wait ]; then
    echo ready > sync/y.ready
    read -r _ < sync/y.go
fi
mv out/.y.tmp out/y.bin
echo "y done"
EOF
mkfifo sync/x.ready sync/x.go sync/y.ready sync/y.go

# A failed check must not leave a step waiting on its FIFO (ctest would wait
# for it): release every waiter on the way out.
release_waiters() {
    local f
    rm -f sync/*.wait
    for f in sync/x.go sync/y.go; do
        timeout 2 bash -c "echo go > $f" 2> /dev/null || true
    done
}
trap 'rc=$?; release_waiters; (exit $rc); _lib_on_exit' EXIT

# bg_step NAME SCRIPT: `cachet run -- sh SCRIPT` in the background; its exit
# status goes to NAME.rc, its stdout to NAME.out.
bg_step() {
    ( set +e; cachet run -- sh "$2" > "$1.out"; echo $? > "$1.rc" ) &
    track_pid $!
}

# wait_step NAME: waits for a bg_step and checks that it succeeded.
wait_step() {
    local i
    for i in $(seq 600); do
        [ -s "$1.rc" ] && break
        sleep 0.1
    done
    [ -s "$1.rc" ] || fail "step $1 did not finish"
    [ "$(cat "$1.rc")" = 0 ] || fail "step $1 exited $(cat "$1.rc")"
}

section "a sibling's temporary beside a step's output is not the step's output"
touch sync/x.wait
bg_step x1 x.sh
read -r _ < sync/x.ready        # X has made out/ and written out/x.txt
: > out/.y.tmp                  # Y's shell opens its temporary
echo go > sync/x.go
wait_step x1
assert_content x1.out "x done"
status_last
[ "$LAST_RESULT" = miss ] || fail "step X: expected a miss, got $LAST_RESULT ($LAST_REASON)"
rm -f out/.y.tmp sync/x.wait

section "a hit of that step while the sibling runs leaves the sibling's files alone"
touch sync/y.wait
bg_step y1 y.sh
read -r _ < sync/y.ready        # Y has filled out/.y.tmp, not yet renamed it
cmp -s out/.y.tmp expected-y.bin || fail "out/.y.tmp is not what Y wrote"
run_expect hit "" -- sh x.sh    # X again: a hit, restored while Y waits
cmp -s out/.y.tmp expected-y.bin || fail "X's hit overwrote Y's temporary out/.y.tmp"
echo go > sync/y.go
wait_step y1
assert_content y1.out "y done"
cmp -s out/y.bin expected-y.bin || fail "out/y.bin is not what Y wrote"
rm -f sync/y.wait

section "the sibling's entry is right: its hit restores what it wrote"
rm -rf out
run_expect hit "" -- sh x.sh
assert_content out/x.txt x
assert_absent out/.y.tmp
assert_absent out/y.bin
run_expect hit "" -- sh y.sh
cmp -s out/y.bin expected-y.bin || fail "a hit of Y restored a wrong out/y.bin ($(wc -c < out/y.bin) bytes)"
