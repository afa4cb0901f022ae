# Eviction: a cache filled past max_size stays under it, keeps the entries
# used most recently and still serves them; evicted steps re-run correctly;
# `cachet gc` applies max_age and removes abandoned files (and the private
# TMPDIRs of killed runs, not those of running ones); eviction running
# beside parallel steps never breaks one; stats_log counts each build alone.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

# Incompressible inputs of 50 KB: a step copying one stores a 50 KB blob.
for i in $(seq 16); do
    head -c 50000 /dev/urandom > "seed$i.bin"
done

# The step for seed i: copies it and says so on stdout.
gen() {
    step sh -c "cp seed$1.bin out$1.bin && echo copied $1"
}

# Quicker than lib.sh's expect and stats_field, which start python3 per
# call: this test checks after almost every step.
json_int() { sed -n "s/.*\"$1\": \([0-9-]*\).*/\1/p"; }
stats_field() { cachet stats --json | json_int "$1"; }
expect() {
    local line
    line=$(tail -n 1 "$CACHET_STATUS_FILE")
    case "$line" in *"\"result\": \"$1\""*) ;; *) fail "expected $1, got: $line" ;; esac
    if [ -n "${2:-}" ]; then
        case "$line" in *"\"reason\": \"$2\""*) ;; *) fail "expected $1 ($2), got: $line" ;; esac
    fi
}

# The cache's bytes on disk, as the index counts them and as the files are.
index_bytes() { stats_field bytes; }
file_bytes() {
    find "$CACHET_DIR/blobs" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'
}

# 200 KiB: room for four entries (200,000 bytes), not five.
export CACHET_MAX_SIZE=200K
MAX=204800

assert_under_max() {
    local b f
    b=$(index_bytes)
    f=$(file_bytes)
    [ "$b" -le "$MAX" ] || fail "index counts $b bytes, over max_size $MAX"
    [ "$f" -le "$MAX" ] || fail "blob files hold $f bytes, over max_size $MAX"
}

section "a cache filled past max_size stays under it"
for i in 1 2 3 4; do
    gen "$i"
    expect miss "new step"
    assert_under_max
done
[ "$(stats_field entries)" -eq 4 ] || fail "four entries fit, have $(stats_field entries)"
rm out1.bin
gen 1
expect hit
assert_same out1.bin seed1.bin
for i in 5 6 7 8 9 10; do
    gen "$i"
    expect miss "new step"
    assert_under_max
done
entries=$(stats_field entries)
[ "$entries" -ge 3 ] && [ "$entries" -le 4 ] || fail "expected 3 or 4 entries, have $entries"
[ "$(stats_field misses)" -eq 10 ] || fail "misses: $(stats_field misses)"

section "the most recently used entries survive and still hit"
rm -f out*.bin
gen 10
expect hit
assert_same out10.bin seed10.bin
out=$(cachet run -- sh -c "cp seed9.bin out9.bin && echo copied 9")
[ "$out" = "copied 9" ] || fail "a hit replayed stdout '$out'"
expect hit
assert_same out9.bin seed9.bin

section "evicted entries miss and re-run correctly"
gen 2
expect miss "new step"
assert_same out2.bin seed2.bin
out=$(cachet run -- sh -c "cp seed2.bin out2.bin && echo copied 2")
[ "$out" = "copied 2" ] || fail "stdout after re-run: '$out'"
expect hit
assert_under_max
[ "$(stats_field errors)" -eq 0 ] || fail "errors: $(stats_field errors)"

section "cachet gc reports what it freed"
out=$(cachet gc)
echo "$out"
grep -Eq '^removed [0-9]+ entr(y|ies) and [0-9]+ blobs?, freed [0-9.]+ [A-Za-z]+; cache now [0-9.]+ [A-Za-z]+ of 200.0 KiB' <<< "$out" ||
    fail "unexpected gc output: $out"
before=$(stats_field entries)
out=$(cachet gc --max-size 60K --dry-run)
echo "$out"
grep -q '^would remove' <<< "$out" || fail "dry run output: $out"
[ "$(stats_field entries)" -eq "$before" ] || fail "a dry run removed entries"
out=$(cachet gc --max-size 60K)
echo "$out"
grep -Eq "^removed $((before - 1)) entries" <<< "$out" || fail "expected $((before - 1)) entries removed: $out"
[ "$(stats_field entries)" -eq 1 ] || fail "entries after gc --max-size 60K: $(stats_field entries)"
[ "$(index_bytes)" -le 61440 ] || fail "bytes after gc --max-size 60K: $(index_bytes)"
set +e
err=$(cachet gc --max-size lots 2>&1)
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "gc with a bad size exited $rc"
case "$err" in *max_size*lots*) ;; *) fail "bad size message: $err" ;; esac

section "cachet gc removes files abandoned in tmp/ and blobs no entry names"
echo junk > "$CACHET_DIR/tmp/blob.crashed"
touch -d '2 hours ago' "$CACHET_DIR/tmp/blob.crashed"
echo fresh > "$CACHET_DIR/tmp/blob.writing"
orphan="$CACHET_DIR/blobs/00/$(printf '0%.0s' $(seq 64))"
mkdir -p "$(dirname "$orphan")"
echo orphan > "$orphan"
touch -d '2 hours ago' "$orphan"
out=$(cachet gc)
echo "$out"
grep -q 'removed 1 abandoned temporary file' <<< "$out" || fail "tmp file not reported: $out"
assert_absent "$CACHET_DIR/tmp/blob.crashed"
assert_exists "$CACHET_DIR/tmp/blob.writing"
assert_absent "$orphan"
rm "$CACHET_DIR/tmp/blob.writing"

section "cachet gc removes the private TMPDIRs of killed runs, and only those"
steps_tmp="$W/steps-tmp"
mkdir -p "$steps_tmp" "$W/elsewhere"
# A run killed while its step ran (SIGKILL: nothing of cachet's own runs).
# The step's other processes die with the tracer, leaving what they wrote
# (which keeps the next step out of that directory of the pool).
TMPDIR="$steps_tmp" "$CACHET_BIN" run -- sh -c 'echo "$TMPDIR" > killed.dir
    echo partial > "$TMPDIR/partial"; sleep 30' &
killed=$!
track_pid "$killed"
for _ in $(seq 100); do [ -s killed.dir ] && break; sleep 0.1; done
[ -s killed.dir ] || fail "the step to kill never started"
kill -KILL "$killed"
wait "$killed" 2>/dev/null || true
killed_dir=$(cat killed.dir)
assert_exists "$killed_dir"
# A run still going, whose directory has not changed for hours.
TMPDIR="$steps_tmp" "$CACHET_BIN" run -- sh -c 'echo "$TMPDIR" > live.dir
    for i in $(seq 600); do [ -e live.go ] && break; sleep 0.1; done' &
live=$!
track_pid "$live"
for _ in $(seq 100); do [ -s live.dir ] && break; sleep 0.1; done
[ -s live.dir ] || fail "the running step never started"
live_dir=$(cat live.dir)
# Left by a killed run a minute ago (its cachet may be one that has just
# made it), and things that are not cachet's to remove.
mkdir "$steps_tmp/cachet-step-recent"
mkdir "$steps_tmp/cachet-step-old" "$steps_tmp/other-old"
echo keep > "$W/elsewhere/target"
ln -s "$W/elsewhere" "$steps_tmp/cachet-step-link"
touch -d '2 hours ago' "$killed_dir" "$live_dir" "$steps_tmp/cachet-step-old" "$steps_tmp/other-old"
touch -h -d '2 hours ago' "$steps_tmp/cachet-step-link" "$W/elsewhere"
if [ "$(id -u)" -eq 0 ]; then
    mkdir "$steps_tmp/cachet-step-nobody"
    chown nobody "$steps_tmp/cachet-step-nobody"
    touch -d '2 hours ago' "$steps_tmp/cachet-step-nobody"
fi
out=$(TMPDIR="$steps_tmp" cachet gc --dry-run)
echo "$out"
grep -q '^would remove 2 private TMPDIRs of killed runs$' <<< "$out" || fail "dry run: $out"
assert_exists "$killed_dir"
out=$(TMPDIR="$steps_tmp" cachet gc)
echo "$out"
grep -q '^removed 2 private TMPDIRs of killed runs$' <<< "$out" || fail "gc: $out"
assert_absent "$killed_dir"
assert_absent "$steps_tmp/cachet-step-old"
assert_exists "$live_dir"
assert_exists "$steps_tmp/cachet-step-recent"
assert_exists "$steps_tmp/other-old"
assert_exists "$steps_tmp/cachet-step-link"
assert_content "$W/elsewhere/target" keep
[ "$(id -u)" -ne 0 ] || assert_exists "$steps_tmp/cachet-step-nobody"
touch live.go
wait "$live" || fail "the running step failed beside gc"
# Emptied, and kept for the next step (step_env.h).
[ -z "$(ls -A "$live_dir")" ] || fail "left in the live run's TMPDIR: $(ls -A "$live_dir")"
rm -rf "$steps_tmp" "$W/elsewhere" killed.dir live.dir live.go

section "gc --max-age removes entries not used for that long"
unset CACHET_MAX_SIZE
for i in 11 12; do gen "$i"; done
sleep 3
gen 13
expect miss "new step"
out=$(cachet gc --max-age 2s)
echo "$out"
[ "$(stats_field entries)" -eq 1 ] || fail "entries after gc --max-age 2s: $(stats_field entries)"
gen 13
expect hit
gen 11
expect miss "new step"
assert_same out11.bin seed11.bin

section "eviction beside eight parallel steps, hits and misses"
cachet clear > /dev/null
export CACHET_MAX_SIZE=300K
for i in $(seq 16); do mkdir -p "p$i"; cp "seed$i.bin" "p$i/seed.bin"; done
gc_loop() {
    while [ ! -e "$T/stop_gc" ]; do
        cachet gc --max-size 150K > /dev/null 2>> "$T/gc.err" || echo "gc failed: $?" >> "$T/gc.err"
    done
}
gc_loop &
gc_pid=$!
track_pid "$gc_pid"
for round in "1 2 3 4 5 6 7 8" "5 6 7 8 9 10 11 12" "1 2 3 4 5 6 7 8" \
             "9 10 11 12 13 14 15 16" "13 14 15 16 1 2 3 4"; do
    pids=()
    for i in $round; do
        rm -f "p$i/out.bin"
        (cd "p$i" && cachet run -- sh -c "cp seed.bin out.bin && echo copied $i" \
            > "$T/out$i" 2> "$T/err$i") &
        pids+=($!)
    done
    rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=$?; done
    [ "$rc" -eq 0 ] || fail "a parallel step failed with status $rc (round $round)"
    for i in $round; do
        assert_same "p$i/out.bin" "p$i/seed.bin"
        [ "$(cat "$T/out$i")" = "copied $i" ] || fail "step $i printed '$(cat "$T/out$i")'"
        if grep -Eiq 'locked|busy|cachet:' "$T/err$i"; then
            fail "step $i: $(cat "$T/err$i")"
        fi
    done
done
touch "$T/stop_gc"
wait "$gc_pid" || true
if [ -s "$T/gc.err" ]; then fail "gc beside parallel steps: $(cat "$T/gc.err")"; fi
echo "last 40 steps: $(tail -n 40 "$CACHET_STATUS_FILE" | grep -c '"hit"') hits"
# No bound is checked here: while steps store beside an eviction, the size
# can pass max_size by what they store until the next eviction.
check_status_file_format

section "stats_log: two concurrent builds each count their own steps"
cachet clear > /dev/null
unset CACHET_MAX_SIZE
cachet stats -z > /dev/null
mkdir -p build_a build_b
build_a() {
    cd "$W/build_a"
    export CACHET_STATS_LOG="$T/a.log"
    for k in 1 2 3 4 5; do cachet run -- sh -c "echo a$k > out$k"; done
    for k in 1 2 3 4 5; do cachet run -- sh -c "echo a$k > out$k"; done
    cachet run -- sh -c 'exit 3' || true
}
build_b() {
    cd "$W/build_b"
    export CACHET_STATS_LOG="$T/b.log"
    for k in 1 2 3 4; do cachet run -- sh -c "echo b$k > out$k"; done
    for k in 1 2 3 4; do cachet run -- sh -c "echo b$k > out$k"; done
    CACHET_UNCACHEABLE_COMMANDS=true cachet run -- true
    CACHET_UNCACHEABLE_COMMANDS=true cachet run -- true
}
build_a & pa=$!
build_b & pb=$!
wait "$pa" || fail "build a failed"
wait "$pb" || fail "build b failed"
a_json=$(cachet stats --log "$T/a.log" --json)
b_json=$(cachet stats --log "$T/b.log" --json)
python3 -c 'import json, sys; json.loads(sys.argv[1]); json.loads(sys.argv[2])' "$a_json" "$b_json" ||
    fail "stats --log --json is not JSON: $a_json $b_json"
log_field() {
    local j=$a_json
    [ "$1" = a ] || j=$b_json
    json_int "$2" <<< "$j"
}
[ "$(wc -l < "$T/a.log")" -eq 11 ] || fail "a.log has $(wc -l < "$T/a.log") lines, expected 11"
[ "$(wc -l < "$T/b.log")" -eq 10 ] || fail "b.log has $(wc -l < "$T/b.log") lines, expected 10"
[ "$(log_field a steps)" -eq 11 ] || fail "a: steps $(log_field a steps)"
[ "$(log_field a hits)" -eq 5 ] || fail "a: hits $(log_field a hits)"
[ "$(log_field a misses)" -eq 6 ] || fail "a: misses $(log_field a misses)"
[ "$(log_field a "new step")" -eq 5 ] || fail "a: new step misses"
[ "$(log_field a uncacheable)" -eq 0 ] || fail "a: uncacheable"
[ "$(log_field a errors)" -eq 0 ] || fail "a: errors"
[ "$(log_field b steps)" -eq 10 ] || fail "b: steps $(log_field b steps)"
[ "$(log_field b hits)" -eq 4 ] || fail "b: hits $(log_field b hits)"
[ "$(log_field b misses)" -eq 4 ] || fail "b: misses $(log_field b misses)"
[ "$(log_field b uncacheable)" -eq 2 ] || fail "b: uncacheable"
[ "$(log_field b uncacheable_commands)" -eq 2 ] ||
    fail "b: uncacheable reasons"
# The cache's own counters hold both builds.
[ "$(stats_field hits)" -eq 9 ] || fail "cache hits: $(stats_field hits)"
[ "$(stats_field misses)" -eq 10 ] || fail "cache misses: $(stats_field misses)"
text=$(cachet stats --log "$T/a.log")
echo "$text"
grep -Eq '^hits +5 +\(45\.5%\)' <<< "$text" || fail "stats --log text: $text"
grep -Eq '^  new step +5' <<< "$text" || fail "stats --log reasons: $text"
set +e
cachet stats --log "$T/missing.log" > /dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "stats --log of a missing file exited $rc"
