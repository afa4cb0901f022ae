# Concurrency: 16 cachet processes at once on one cache, looping over
# overlapping steps (the same steps in the same directory, and different
# ones; hits and misses), first alone and then with `cachet clear` and
# eviction (`cachet gc`, a small max_size) running beside them. Every command
# must succeed with the outputs a plain run gives, no "database is locked"
# or other cache failure may reach the user, and after the first phase every
# step that was stored must still be there (nothing lost).
#
# Time-bounded: CACHET_REL_CONCURRENCY_SECONDS (default 15) per phase.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
WORKERS=16
PHASE_SECONDS=${CACHET_REL_CONCURRENCY_SECONDS:-15}

head -c 300000 /dev/urandom > big.bin
for a in 1 2 3 4; do
    printf 'input %d\n' "$a" > "in$a.txt"
done
# Step (A, B): reads in$A.txt and big.bin, writes out/A_B.txt and out/A_B.bin.
# Outputs are written to a temporary name and renamed, as compilers do, so
# that a process checking them never sees one half-written by a sibling.
cat > gen.sh <<'EOF'
set -e
a=$1 b=$2
mkdir -p out
{ cat "in$a.txt"; echo "b=$b"; } > "out/.$$.txt"
mv "out/.$$.txt" "out/${a}_$b.txt"
head -c $((a * b * 997)) big.bin > "out/.$$.bin"
mv "out/.$$.bin" "out/${a}_$b.bin"
echo "gen $a $b"
EOF

# worker ID SECONDS BMAX: runs random steps until the time is up; checks
# each one's exit status, stdout and outputs. Writes its tally to
# tally.ID and the steps it ran to steps.ID; fails by exiting nonzero.
cat > worker.sh <<'EOF'
set -u
id=$1 secs=$2 bmax=$3
end=$((SECONDS + secs))
n=0
: > "steps.$id"
while [ "$SECONDS" -lt "$end" ]; do
    a=$((RANDOM % 4 + 1))
    b=$((RANDOM % bmax + 1))
    out=$("$CACHET_BIN" run -- sh gen.sh "$a" "$b" 2>> "stderr.$id")
    rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "worker $id: step $a $b exited $rc" >&2
        exit 1
    fi
    [ "$out" = "gen $a $b" ] || { echo "worker $id: step $a $b: stdout '$out'" >&2; exit 1; }
    { cat "in$a.txt"; echo "b=$b"; } | cmp -s - "out/${a}_$b.txt" ||
        { echo "worker $id: out/${a}_$b.txt is wrong" >&2; exit 1; }
    head -c $((a * b * 997)) big.bin | cmp -s - "out/${a}_$b.bin" ||
        { echo "worker $id: out/${a}_$b.bin is wrong" >&2; exit 1; }
    echo "$a $b" >> "steps.$id"
    n=$((n + 1))
done
echo "$n" > "tally.$id"
EOF

# Runs the workers (and, with $1 = churn, clear and gc beside them).
run_phase() {
    local phase=$1 bmax=$2 pids=() i rc=0
    rm -f stderr.* tally.* steps.*
    for i in $(seq "$WORKERS"); do
        bash worker.sh "$i" "$PHASE_SECONDS" "$bmax" &
        pids+=($!)
    done
    local churn_pid=""
    if [ "$phase" = churn ]; then
        (
            end=$((SECONDS + PHASE_SECONDS))
            n=0
            while [ "$SECONDS" -lt "$end" ]; do
                sleep 0.$((RANDOM % 9 + 1))
                if [ $((n % 2)) -eq 0 ]; then
                    "$CACHET_BIN" clear > /dev/null 2>> stderr.churn || echo "clear failed" >> stderr.churn
                elif [ -n "$HAVE_GC" ]; then
                    "$CACHET_BIN" gc > /dev/null 2>> stderr.churn || echo "gc failed" >> stderr.churn
                fi
                "$CACHET_BIN" stats --json > /dev/null 2>> stderr.churn || echo "stats failed" >> stderr.churn
                n=$((n + 1))
            done
            echo "$n" > tally.churn
        ) &
        churn_pid=$!
    fi
    for i in "${pids[@]}"; do
        wait "$i" || rc=1
    done
    [ -z "$churn_pid" ] || wait "$churn_pid" || rc=1
    [ "$rc" -eq 0 ] || fail "phase $phase: a worker failed (see above)"
    # Nothing from cachet may reach the user: no locked database, no
    # warning of any kind (the steps themselves print only to stdout).
    if cat stderr.* | grep -q .; then
        cat stderr.* | sort | uniq -c | sort -rn | head -n 20 >&2
        fail "phase $phase: cachet printed to stderr (above)"
    fi
    PHASE_STEPS=$(($(cat tally.[0-9]* | paste -sd+)))
    PHASE_DISTINCT=$(cat steps.* | sort -u | wc -l)
}

HAVE_GC=""
if "$CACHET_BIN" help 2>&1 | grep -qw gc; then
    HAVE_GC=1
fi

section "$WORKERS processes, overlapping steps, ${PHASE_SECONDS}s"
run_phase plain 12
steps1=$PHASE_STEPS distinct1=$PHASE_DISTINCT
hits1=$(stats_field hits)
misses1=$(stats_field misses)
echo "FIGURE concurrency.processes=$WORKERS concurrency.plain_steps=$steps1 concurrency.plain_distinct_steps=$distinct1 concurrency.plain_hits=$hits1 concurrency.plain_misses=$misses1"
[ "$hits1" -gt 0 ] && [ "$misses1" -gt 0 ] || fail "expected both hits and misses (hits $hits1, misses $misses1)"

section "nothing was lost: every step run is a hit now, outputs restored"
rm -rf out
lost=0
while read -r a b; do
    before=$(status_count)
    o=$(cachet run -- sh gen.sh "$a" "$b")
    [ "$o" = "gen $a $b" ] || fail "step $a $b: stdout '$o'"
    status_last
    if [ "$LAST_RESULT" != hit ]; then
        echo "step $a $b: $LAST_RESULT ($LAST_REASON)" >&2
        lost=$((lost + 1))
    fi
done < <(cat steps.* | sort -u)
echo "FIGURE concurrency.lost_entries=$lost"
[ "$lost" -eq 0 ] || fail "$lost steps stored during the concurrent phase were not hits afterwards"
errors=$(stats_field errors)
[ "$errors" -eq 0 ] || fail "stats: errors = $errors after the concurrent phase"

section "$WORKERS processes with clear${HAVE_GC:+ and gc} beside them and a small max_size, ${PHASE_SECONDS}s"
# A bound small enough that storing evicts, where eviction exists.
export CACHET_MAX_SIZE=2M
run_phase churn 40
unset CACHET_MAX_SIZE
churns=$(cat tally.churn)
echo "FIGURE concurrency.churn_steps=$PHASE_STEPS concurrency.churn_distinct_steps=$PHASE_DISTINCT concurrency.clear_or_gc_runs=$churns"
[ "$churns" -ge 3 ] || fail "clear/gc ran only $churns times"

section "the cache is sound afterwards"
python3 - "$CACHET_DIR/index.db" <<'EOF' || fail "index integrity check failed"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
EOF
cachet stats --json > /dev/null || fail "stats failed"
# out/ there before both runs: a run whose `mkdir -p out` made it keys it
# as absent before, as `mkdir out` needs (README, the state before a path).
rm -rf out
mkdir out
run_expect miss "" -- sh gen.sh 1 1000
run_expect hit "" -- sh gen.sh 1 1000
