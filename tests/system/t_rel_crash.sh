# Crashes: cachet killed with SIGKILL at random points of misses and hits
# (while the step runs under the tracer, while blobs are stored, while the
# index is written, while a hit restores), hundreds of times; and the traced
# command itself killed. After every kill a normal run must give exactly the
# outputs a plain run gives, the cache must stay usable and `cachet stats`
# must answer.
#
# Time-bounded: CACHET_REL_CRASH_SECONDS (default 30) for the cachet kills,
# a quarter of it for the command kills. The figures go to the log.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
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

# A normal, complete run after a kill: correct outputs, whatever the cache holds.
verify_run() {
    local v=$1 what=$2 before rc
    before=$(status_count)
    set +e
    cachet run -- sh step.sh > stdout.txt
    rc=$?
    set -e
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

# Sleeps $1 milliseconds.
sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }

section "how long one miss and one hit take"
echo 1 > in.txt
cachet run -- sh step.sh > stdout.txt
check_outputs 1 "first run"
cachet run -- sh step.sh > stdout.txt
expect hit
# Running estimates (ms) of a miss and a hit, from the status lines of the
# runs after each kill: the kill delays follow the machine's speed (an ASan
# build, a loaded CI runner).
status_last_duration() { local l; l=$(tail -n 1 "$CACHET_STATUS_FILE"); l=${l##*\"duration_ms\": }; echo "${l%\}}"; }
MISS_MS=$(status_field duration_ms 1)
HIT_MS=$(status_last_duration)
echo "first miss ${MISS_MS} ms, first hit ${HIT_MS} ms"

section "SIGKILL of cachet at random points, for ${SECONDS_CACHET}s"
kills=0 finished=0 during_step=0 after_step=0 during_hit=0 iterations=0
verify_hits=0 verify_misses=0
declare -A stored=([1]=1)
fresh=$VALUES
end=$((SECONDS + SECONDS_CACHET))
while [ "$SECONDS" -lt "$end" ]; do
    iterations=$((iterations + 1))
    # Three rounds in four are misses (an input never seen), the fourth a
    # hit, with its outputs deleted half the time so the kill may land in
    # the restore.
    if [ $((iterations % 4)) -ne 0 ]; then
        fresh=$((fresh + 1))
        v=$fresh
        make_ref "$v"
        span=$((MISS_MS * 11 / 10 + 5))
    else
        v=$((RANDOM % VALUES + 1))
        [ -n "${stored[$v]:-}" ] || v=1
        [ $((RANDOM % 2)) -eq 0 ] || rm -rf out
        span=$((HIT_MS * 11 / 10 + 5))
    fi
    printf '%s\n' "$v" > in.txt
    # Did this round's step run to completion before the kill? Its last
    # output tells; a hit restores it too, so remove it first.
    rm -f out/v.txt
    d=$((RANDOM % span))
    "$CACHET_BIN" run -- sh step.sh > stdout.txt 2> stderr.txt &
    pid=$!
    sleep_ms "$d"
    if kill -KILL "$pid" 2> /dev/null; then
        wait "$pid" 2> /dev/null || true
        kills=$((kills + 1))
        if [ -n "${stored[$v]:-}" ]; then
            during_hit=$((during_hit + 1))
        elif [ -e out/v.txt ]; then
            after_step=$((after_step + 1))
        else
            during_step=$((during_step + 1))
        fi
    else
        wait "$pid" || fail "round $iterations: cachet exited $? without being killed"
        finished=$((finished + 1))
    fi
    verify_run "$v" "round $iterations (v=$v, kill after ${d} ms)"
    took=$(status_last_duration)
    if [ "$LAST_RESULT" = miss ]; then
        MISS_MS=$(((MISS_MS * 3 + took) / 4))
    else
        HIT_MS=$(((HIT_MS * 3 + took) / 4))
    fi
    stored[$v]=1
    if [ $((iterations % 25)) -eq 0 ]; then
        cachet stats --json > /dev/null || fail "round $iterations: cachet stats failed"
    fi
done
echo "FIGURE crash.cachet_kills=$kills crash.kills_in_hits=$during_hit crash.kills_in_misses_while_step_ran=$during_step crash.kills_in_misses_after_step=$after_step crash.rounds=$iterations crash.finished_before_kill=$finished crash.verify_hits=$verify_hits crash.verify_misses=$verify_misses crash.miss_ms=$MISS_MS crash.hit_ms=$HIT_MS"
[ "$kills" -ge 10 ] || fail "only $kills kills landed in ${SECONDS_CACHET}s"
[ "$verify_hits" -ge 1 ] || fail "no run after a kill was a hit: the cache is not usable"

section "SIGKILL of the traced command (or one of its processes), for ${SECONDS_COMMAND}s"
cmd_kills=0 cmd_rounds=0 not_stored=0
# A slower step (a sleep between its outputs) leaves time to find its
# processes and pick one.
export SLOW=1
end=$((SECONDS + SECONDS_COMMAND))
while [ "$SECONDS" -lt "$end" ]; do
    cmd_rounds=$((cmd_rounds + 1))
    # A value never stored, so that the killed run is a miss.
    v=$((100000 + cmd_rounds))
    make_ref "$v"
    printf '%s\n' "$v" > in.txt
    before=$(status_count)
    "$CACHET_BIN" run -- sh step.sh > stdout.txt 2> stderr.txt &
    pid=$!
    sleep_ms $((RANDOM % (MISS_MS + 250)))
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
[ "$cmd_kills" -ge 3 ] || fail "only $cmd_kills command kills landed"

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
echo "FIGURE crash.leftover_cache_tmp_files=$leftover_tmp crash.leftover_restore_temps=$leftover_beside"
# Everything stored is still served: each value once more, as a hit.
for v in $(seq "$VALUES"); do
    printf '%s\n' "$v" > in.txt
    rm -rf out
    cachet run -- sh step.sh > stdout.txt
    check_outputs "$v" "final run v=$v"
done
check_status_file_format
