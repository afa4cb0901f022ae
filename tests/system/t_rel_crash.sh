# Crashes: cachet killed with SIGKILL at random points of misses and hits
# (while the step runs under the tracer, while blobs are stored, while the
# index is written, while a hit restores), hundreds of times; and the traced
# command itself killed. After every kill a normal run must give exactly the
# outputs a plain run gives, the cache must stay usable and `cachet stats`
# must answer; the private TMPDIRs that the kills leave are removed by gc.
# Runs killed while they write a large file leave no temporary file beside
# the output or in the cache; without /proc a miss runs uncached.
#
# Time-bounded: CACHET_REL_CRASH_SECONDS (default 30) for the cachet kills,
# longer (up to twice that) only until enough kills have landed in misses
# and in hits; a quarter of it for the command kills. The figures go to the
# log.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
# The steps' private TMPDIRs, where the test can count what the kills leave.
export TMPDIR="$W/steps-tmp"
mkdir "$TMPDIR"
SECONDS_CACHET=${CACHET_REL_CRASH_SECONDS:-30}
SECONDS_COMMAND=$((SECONDS_CACHET / 4 + 1))

# A step with a raw (incompressible) output, a compressible one, a small one
# and stdout, all depending on in.txt; its helper processes are traced too.
head -c 1000000 /dev/urandom > big.bin
python3 -c '
import sys
sys.stdout.write("".join("line %d of a compressible text file\n" % i for i in range(30000)))' > text.txt
cat > step.sh <<'EOF'
set -e
v=$(cat in.txt)
mkdir -p out
head -c $((500000 + v % 400 * 1000)) big.bin > out/a.bin
cat in.txt text.txt in.txt > out/b.txt
[ -z "${SLOW:-}" ] || sleep 0.3
printf 'v=%s\n' "$v" > out/v.txt
echo "step ran with v=$v"
EOF

# What a plain run leaves for input v, in ref/v/.
make_ref() {
    local v=$1 d="ref/$1"
    mkdir -p "$d"
    head -c $((500000 + v % 400 * 1000)) big.bin > "$d/a.bin"
    printf '%s\n' "$v" > "$d/in.txt"
    cat "$d/in.txt" text.txt "$d/in.txt" > "$d/b.txt"
    printf 'v=%s\n' "$v" > "$d/v.txt"
    echo "step ran with v=$v" > "$d/stdout"
}
VALUES=8
for v in $(seq "$VALUES"); do make_ref "$v"; done

check_outputs() {
    local v=$1 what=$2 f
    for f in a.bin b.txt v.txt; do
        cmp -s "out/$f" "ref/$v/$f" || fail "$what: out/$f differs from a plain run's for v=$v"
    done
    cmp -s stdout.txt "ref/$v/stdout" || fail "$what: stdout differs from a plain run's for v=$v"
}

# A normal, complete run after a kill: correct outputs, whatever the cache
# holds. Sets TOOK_US to how long it took, as seen from here.
verify_run() {
    local v=$1 what=$2 before rc start
    before=$(status_count)
    now_us; start=$NOW_US
    set +e
    cachet run -- sh step.sh > stdout.txt
    rc=$?
    set -e
    now_us; TOOK_US=$((NOW_US - start))
    [ "$rc" -eq 0 ] || fail "$what: the run after the kill exited $rc"
    [ "$(status_count)" -eq $((before + 1)) ] || fail "$what: no status line for the run after the kill"
    check_outputs "$v" "$what"
    status_last
    case "$LAST_RESULT" in
        hit) verify_hits=$((verify_hits + 1)) ;;
        miss) verify_misses=$((verify_misses + 1)) ;;
        *) fail "$what: unexpected result $LAST_RESULT ($LAST_REASON)" ;;
    esac
}

# Sleeps $1 microseconds without starting a process: `read -t` on a FIFO
# that nobody writes. A `sleep` costs a fork and an exec, a few ms here and
# tens of ms on a loaded machine, as long as a whole hit or a fast miss: the
# kills it timed came after the runs they were aimed at.
mkfifo "$T/never"
exec {NEVER}<> "$T/never"
sleep_us() {
    local t
    printf -v t '%d.%06d' $(($1 / 1000000)) $(($1 % 1000000))
    read -r -t "$t" -u "$NEVER" _ || true
}
# The time in microseconds, without a subshell (bash 5; LC_ALL=C gives '.').
now_us() { NOW_US=${EPOCHREALTIME/./}; }

section "how long one miss and one hit take"
# Running estimates (µs) of how long a miss and a hit live, from launch to
# exit as seen from here (process start and exit included), updated from
# every run that was not killed: the kill delays follow the machine's speed
# (an ASan build, a loaded CI runner, faster steps).
echo 1 > in.txt
# out/ exists before the first run, as it does before every later one: a
# run whose `mkdir -p out` made it keys it as absent before (a `mkdir out`
# there would fail), so the next run, which finds it, is one more miss.
mkdir out
verify_hits=0 verify_misses=0
verify_run 1 "first run"
MISS_US=$TOOK_US
verify_run 1 "second run"
[ "$LAST_RESULT" = hit ] || fail "second run: expected a hit, got $LAST_RESULT ($LAST_REASON)"
HIT_US=$TOOK_US
verify_hits=0 verify_misses=0
echo "first miss $((MISS_US / 1000)) ms, first hit $((HIT_US / 1000)) ms"
estimate() {
    if [ "$1" = miss ]; then
        MISS_US=$(((MISS_US * 3 + $2) / 4))
    else
        HIT_US=$(((HIT_US * 3 + $2) / 4))
    fi
}

# Enough kills of each kind that every stage is hit often: in misses while
# the step runs and after it (blobs, index), and in hits.
MIN_KILLS_DURING_STEP=${CACHET_REL_CRASH_MIN_DURING_STEP:-5}
MIN_KILLS_AFTER_STEP=${CACHET_REL_CRASH_MIN_AFTER_STEP:-5}
MIN_KILLS_IN_HITS=${CACHET_REL_CRASH_MIN_IN_HITS:-5}
enough_kills() {
    [ "$during_step" -ge "$MIN_KILLS_DURING_STEP" ] && [ "$after_step" -ge "$MIN_KILLS_AFTER_STEP" ] &&
        [ "$during_hit" -ge "$MIN_KILLS_IN_HITS" ]
}

section "SIGKILL of cachet at random points, for ${SECONDS_CACHET}s (at most $((2 * SECONDS_CACHET))s)"
kills=0 finished=0 during_step=0 after_step=0 during_hit=0 iterations=0
declare -A stored=([1]=1)
fresh=$VALUES
start=$SECONDS
while [ $((SECONDS - start)) -lt "$SECONDS_CACHET" ] ||
    { ! enough_kills && [ $((SECONDS - start)) -lt $((2 * SECONDS_CACHET)) ]; }; do
    iterations=$((iterations + 1))
    # Three rounds in four are misses (an input never seen), the fourth a
    # hit, with its outputs deleted half the time so the kill may land in
    # the restore.
    if [ $((iterations % 4)) -ne 0 ]; then
        fresh=$((fresh + 1))
        v=$fresh
        make_ref "$v"
        kind=miss span=$MISS_US
    else
        v=$((RANDOM % VALUES + 1))
        [ -n "${stored[$v]:-}" ] || v=1
        [ $((RANDOM % 2)) -eq 0 ] || rm -rf out
        kind=hit span=$HIT_US
    fi
    printf '%s\n' "$v" > in.txt
    # Did this round's step run to completion before the kill? Its last
    # output tells; a hit restores it too, so remove it first.
    rm -f out/v.txt
    # Anywhere in the run's life, from its start to its exit.
    d=$(((RANDOM * 32768 + RANDOM) % (span + 1)))
    now_us; launched=$NOW_US
    "$CACHET_BIN" run -- sh step.sh > stdout.txt 2> stderr.txt &
    pid=$!
    sleep_us "$d"
    kill -KILL "$pid" 2> /dev/null || true
    set +e
    wait "$pid" 2> /dev/null
    rc=$?
    set -e
    now_us
    # Landed only if it ended the run: a run that had finished (a zombie
    # not yet reaped takes the signal too) exits 0.
    if [ "$rc" -eq $((128 + 9)) ]; then
        kills=$((kills + 1))
        if [ -n "${stored[$v]:-}" ]; then
            during_hit=$((during_hit + 1))
        elif [ -e out/v.txt ]; then
            after_step=$((after_step + 1))
        else
            during_step=$((during_step + 1))
        fi
    elif [ "$rc" -eq 0 ]; then
        finished=$((finished + 1))
        estimate "$kind" $((NOW_US - launched))
    else
        fail "round $iterations: cachet exited $rc without being killed"
    fi
    verify_run "$v" "round $iterations (v=$v, kill after $((d / 1000)).$(printf '%03d' $((d % 1000))) ms)"
    estimate "$LAST_RESULT" "$TOOK_US"
    stored[$v]=1
    if [ $((iterations % 25)) -eq 0 ]; then
        cachet stats --json > /dev/null || fail "round $iterations: cachet stats failed"
    fi
done
MISS_MS=$((MISS_US / 1000)) HIT_MS=$((HIT_US / 1000))
echo "FIGURE crash.cachet_kills=$kills crash.kills_in_hits=$during_hit crash.kills_in_misses_while_step_ran=$during_step crash.kills_in_misses_after_step=$after_step crash.rounds=$iterations crash.seconds=$((SECONDS - start)) crash.finished_before_kill=$finished crash.verify_hits=$verify_hits crash.verify_misses=$verify_misses crash.miss_ms=$MISS_MS crash.hit_ms=$HIT_MS"
enough_kills || fail "in $((SECONDS - start))s, $during_step kills landed while the step ran (at least $MIN_KILLS_DURING_STEP wanted), $after_step after it ($MIN_KILLS_AFTER_STEP), $during_hit in hits ($MIN_KILLS_IN_HITS)"
[ "$verify_hits" -ge 1 ] || fail "no run after a kill was a hit: the cache is not usable"

section "SIGKILL of the traced command (or one of its processes), for ${SECONDS_COMMAND}s (at most $((2 * SECONDS_COMMAND))s)"
cmd_kills=0 cmd_rounds=0 not_stored=0
# A slower step (a sleep between its outputs) leaves time to find its
# processes and pick one.
export SLOW=1
MIN_COMMAND_KILLS=3
start=$SECONDS
while [ $((SECONDS - start)) -lt "$SECONDS_COMMAND" ] ||
    { [ "$cmd_kills" -lt "$MIN_COMMAND_KILLS" ] && [ $((SECONDS - start)) -lt $((2 * SECONDS_COMMAND)) ]; }; do
    cmd_rounds=$((cmd_rounds + 1))
    # A value never stored, so that the killed run is a miss.
    v=$((100000 + cmd_rounds))
    make_ref "$v"
    printf '%s\n' "$v" > in.txt
    before=$(status_count)
    "$CACHET_BIN" run -- sh step.sh > stdout.txt 2> stderr.txt &
    pid=$!
    sleep_us $(((RANDOM % (MISS_MS + 250)) * 1000))
    # The step's processes: cachet's children and their children.
    victims=$(pgrep -P "$pid" || true)
    for c in $victims; do victims="$victims $(pgrep -P "$c" || true)"; done
    victim=$(printf '%s\n' $victims | shuf -n 1 || true)
    landed=0
    if [ -n "$victim" ] && kill -KILL "$victim" 2> /dev/null; then
        landed=1
    fi
    set +e
    wait "$pid"
    rc=$?
    set -e
    if [ "$landed" -eq 1 ] && [ "$rc" -ne 0 ]; then
        cmd_kills=$((cmd_kills + 1))
        [ "$(status_count)" -eq $((before + 1)) ] || fail "killed command: no status line"
        status_last
        case "$LAST_RESULT/$LAST_REASON" in
            # (Killing sh leaves its current child running a moment.)
            "miss/command failed (not stored)" | "uncacheable/process left running")
                not_stored=$((not_stored + 1)) ;;
            *) fail "killed command (exit $rc): $LAST_RESULT ($LAST_REASON), expected not stored" ;;
        esac
    fi
    verify_run "$v" "command round $cmd_rounds (v=$v)"
    # The failed run stored nothing: the run above was the first store.
    status_last
    [ "$landed" -eq 0 ] || [ "$rc" -eq 0 ] || [ "$LAST_RESULT" = miss ] ||
        fail "command round $cmd_rounds: the run after a killed command was a $LAST_RESULT"
done
unset SLOW
echo "FIGURE crash.command_kills=$cmd_kills crash.command_rounds=$cmd_rounds crash.command_not_stored=$not_stored"
[ "$cmd_kills" -ge "$MIN_COMMAND_KILLS" ] || fail "only $cmd_kills command kills landed in $((SECONDS - start))s"

section "the cache is sound afterwards"
cachet stats --json > stats.json || fail "cachet stats failed"
python3 - "$CACHET_DIR/index.db" <<'EOF' || fail "index integrity check failed"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
r = db.execute("PRAGMA integrity_check").fetchone()[0]
assert r == "ok", r
# Every result's blobs are recorded and present on disk.
missing = db.execute("SELECT count(*) FROM result_blobs WHERE digest NOT IN (SELECT digest FROM blobs)").fetchone()[0]
assert missing == 0, "%d result blobs without a blobs row" % missing
EOF
leftover_tmp=$(find "$CACHET_DIR/tmp" -type f | wc -l)
leftover_beside=$(find "$W/out" -name '.cachet-*' | wc -l)
leftover_steps=$(find "$TMPDIR" -mindepth 1 -maxdepth 1 -name 'cachet-step-*' | wc -l)
echo "FIGURE crash.leftover_cache_tmp_files=$leftover_tmp crash.leftover_restore_temps=$leftover_beside crash.leftover_step_tmpdirs=$leftover_steps"
# The killed runs' private TMPDIRs go at the daily sweep, or with gc, once
# an hour has passed: made to look that old here.
if [ "$leftover_steps" -gt 0 ]; then
    find "$TMPDIR" -mindepth 1 -maxdepth 1 -name 'cachet-step-*' -exec touch -d '2 hours ago' {} +
    out=$(cachet gc)
    echo "$out"
    grep -q "^removed $leftover_steps private TMPDIRs\? of killed runs$" <<< "$out" ||
        fail "gc did not remove the $leftover_steps TMPDIRs of killed runs: $out"
    left=$(find "$TMPDIR" -mindepth 1 -maxdepth 1 | wc -l)
    [ "$left" -eq 0 ] || fail "$left entries left in the steps' TMPDIR after gc"
fi
section "a run killed while it writes a large file leaves nothing behind"
# 64 MB that do not compress: stored raw and restored by copies of some
# 30 ms. A hit is killed once the file it restores is open, a miss once the
# blob it stores is (each seen in /proc/PID/fd: a named temporary file, or
# an unnamed one, "#INODE (deleted)", in the output's directory or in the
# cache's tmp/). Both write unnamed files, named only once complete: nothing
# is left beside the output or in tmp/. Files named from the start were left
# by every such kill.
head -c $((64 << 20)) /dev/urandom > large.bin
cachet run -- cp large.bin large.out > /dev/null
rm large.out
cachet run -- cp large.bin large.out > /dev/null
status_last
[ "$LAST_RESULT" = hit ] || fail "large output: expected a hit, got $LAST_RESULT"
rm -f "$CACHET_DIR"/tmp/*
cat > kill_writing.py <<'EOF'
# kill_writing.py CACHET DIR PREFIX hit|miss: ten times, a hit of
# `cp large.bin large.out` through cachet, or a miss that stores a new
# blob (the copy and a line of its own); kills it once it has a file open
# in DIR whose name starts with PREFIX or that has none ("#INODE"), and
# counts what is left in DIR under PREFIX.
import os, subprocess, sys, time
cachet, d, prefix, mode = sys.argv[1:5]
kills = left = 0
for round in range(10):
    if os.path.exists("large.out"):
        os.unlink("large.out")
    step = ["cp", "large.bin", "large.out"]
    if mode == "miss":
        step = ["sh", "-c", "cp large.bin large.out && echo %d-%d >> large.out" % (os.getpid(), round)]
    p = subprocess.Popen([cachet, "run", "--"] + step,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while p.poll() is None and time.monotonic() < deadline:
        try:
            targets = [os.readlink("/proc/%d/fd/%s" % (p.pid, fd))
                       for fd in os.listdir("/proc/%d/fd" % p.pid)]
        except OSError:
            targets = []
        names = [t[len(d) + 1:] for t in targets if t.startswith(d + "/")]
        if any(n.startswith(prefix) or n.startswith("#") for n in names):
            p.kill()
            kills += 1
            break
    p.wait()
    leftovers = [n for n in os.listdir(d) if n.startswith(prefix)]
    left += len(leftovers)
    for n in leftovers:
        os.unlink(os.path.join(d, n))
print(kills, left)
EOF
python3 kill_writing.py "$CACHET_BIN" "$W" .cachet- hit > large.txt || fail "killing hits: $(cat large.txt)"
read -r hit_kills hit_left < large.txt
python3 kill_writing.py "$CACHET_BIN" "$(cd "$CACHET_DIR/tmp" && pwd -P)" blob. miss > large.txt ||
    fail "killing misses: $(cat large.txt)"
read -r miss_kills miss_left < large.txt
echo "FIGURE crash.large_hit_kills_while_writing=$hit_kills crash.large_hit_temps_left=$hit_left crash.large_miss_kills_while_storing=$miss_kills crash.large_miss_temps_left=$miss_left"
[ "$hit_kills" -ge 5 ] || fail "only $hit_kills of 10 hits were seen writing before they ended"
[ "$hit_left" -eq 0 ] || fail "$hit_left temporary files left beside the output by $hit_kills kills"
[ "$miss_kills" -ge 5 ] || fail "only $miss_kills of 10 misses were seen storing before they ended"
[ "$miss_left" -eq 0 ] || fail "$miss_left temporary files left in tmp/ by $miss_kills kills"
# Without /proc the tracer cannot resolve the step's relative paths: a miss
# runs uncached and says why (before, it stored an entry without the
# output, and the next run was a hit that restored nothing). A hit needs no
# tracer; its unnamed file cannot be named either, so it writes a named one.
# (Not in the ASan build: its runtime reads /proc before cachet starts.)
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null &&
    ! readelf -d "$CACHET_BIN" 2> /dev/null | grep -q libasan; then
    noproc() {
        unshare -m sh -c 'umount -l /proc && exec "$0" run -- sh -c "cp large.bin large.out && echo noproc >> large.out"' \
            "$CACHET_BIN"
    }
    expect_large() {
        { cat large.bin; echo noproc; } | cmp -s - large.out || fail "without /proc: large.out differs ($1)"
    }
    rm -f large.out
    noproc > /dev/null 2> noproc.err || fail "a miss without /proc failed: $(cat noproc.err)"
    status_last
    [ "$LAST_RESULT" = uncacheable ] || fail "a miss without /proc: expected uncacheable, got $LAST_RESULT"
    grep -q 'is /proc mounted' noproc.err || fail "a miss without /proc did not say why: $(cat noproc.err)"
    expect_large "miss"
    rm large.out
    cachet run -- sh -c "cp large.bin large.out && echo noproc >> large.out" > /dev/null
    status_last
    [ "$LAST_RESULT" = miss ] || fail "after a miss without /proc: expected a miss, got $LAST_RESULT"
    rm large.out
    noproc > /dev/null || fail "a hit without /proc failed"
    status_last
    [ "$LAST_RESULT" = hit ] || fail "without /proc: expected a hit, got $LAST_RESULT"
    expect_large "hit"
    [ -z "$(find . -maxdepth 1 -name '.cachet-*')" ] || fail "without /proc: a temporary file left"
    rm -f noproc.err
fi
rm -f large.bin large.out large.txt kill_writing.py

# Everything stored is still served: each value once more, as a hit.
for v in $(seq "$VALUES"); do
    printf '%s\n' "$v" > in.txt
    rm -rf out
    cachet run -- sh step.sh > stdout.txt
    check_outputs "$v" "final run v=$v"
done
check_status_file_format killed
