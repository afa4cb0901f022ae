# Remote cache over Redis, against real redis-servers: keys spread over two
# servers by rendezvous hashing, hits travel between two cache directories
# with identical outputs, AUTH and Unix sockets work and passwords never
# show, a read-only server is never written, large blobs stay home, and a
# server killed mid-build costs neither a failure nor a stall.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_lib.sh"

redis_keys() { # PORT [EXTRA ARGS]: the number of keys in db 0
    local port=$1
    shift
    redis-cli -p "$port" "$@" --no-auth-warning DBSIZE
}

start_redis r1
P1=$REDIS_PORT
PID1=$REDIS_PID
start_redis r2
P2=$REDIS_PORT
SHARDS="redis://127.0.0.1:$P1/0, redis://127.0.0.1:$P2"
W=$(workdir)
cd "$W"

section "two machines share hits through two sharded servers"
printf 'int answer(void) { return 42; }\n' > a.c
export CACHET_DIR=$T/m1 CACHET_REMOTE="$SHARDS"
run_expect miss "new step" -- gcc -c a.c -o a.o
for i in 1 2 3 4 5 6; do
    run_expect miss "new step" -- sh -c "echo shard$i > s$i.txt"
done
cachet remote flush -q || fail "flush failed"
k1=$(redis_keys "$P1")
k2=$(redis_keys "$P2")
echo "keys: $k1 on the first server, $k2 on the second"
[ "$k1" -gt 0 ] && [ "$k2" -gt 0 ] || fail "keys were not spread over both servers"
redis-cli -p "$P1" --scan | grep -qv '^cachet:\(ac\|cas\):[0-9a-f]\{64\}$' && fail "a key without the prefix"
mkdir ref && cp a.o s*.txt ref/
rm a.o s*.txt
export CACHET_DIR=$T/m2
run_expect hit remote -- gcc -c a.c -o a.o
assert_same a.o ref/a.o
for i in 1 2 3 4 5 6; do
    run_expect hit remote -- sh -c "echo shard$i > s$i.txt"
    assert_same "s$i.txt" "ref/s$i.txt"
done
run_expect hit "" -- gcc -c a.c -o a.o

section "AUTH from the URL or a file, over TCP or a Unix socket; passwords never show"
d=$T/r3
mkdir -p "$d"
P3=$(free_port)
redis-server --port "$P3" --bind 127.0.0.1 --unixsocket "$d/redis.sock" --unixsocketperm 700 \
    --requirepass 'pa55-w0rd' --save '' --appendonly no --dir "$d" --daemonize no \
    </dev/null >"$d/redis.log" 2>&1 &
track_pid $!
wait_port "$P3"
export CACHET_DIR=$T/m3 CACHET_REMOTE="redis://pa55-w0rd@127.0.0.1:$P3"
CACHET_VERBOSE=1 run_expect miss "new step" -- sh -c 'echo auth > auth.txt' 2> "$T/m3.err"
cachet remote flush -q || fail "flush with AUTH failed"
[ "$(redis_keys "$P3" -a pa55-w0rd)" -gt 0 ] || fail "nothing stored with AUTH"
printf 'pa55-w0rd\n' > "$T/redis.pass"
chmod 600 "$T/redis.pass"
rm auth.txt
export CACHET_DIR=$T/m4 CACHET_REMOTE="redis+unix://$d/redis.sock auth-file=$T/redis.pass"
run_expect hit remote -- sh -c 'echo auth > auth.txt'
export CACHET_DIR=$T/m5 CACHET_REMOTE="redis://wrong-pass@127.0.0.1:$P3"
CACHET_VERBOSE=1 run_expect miss "new step" -- sh -c 'echo auth > auth.txt' 2>> "$T/m3.err"
[ "$(remote_counter remote_errors)" -eq 1 ] || fail "a failed AUTH was not counted"
cachet remote status >> "$T/m3.err"
grep -q 'redis://\*\*\*@127.0.0.1' "$T/m3.err" || fail "status does not show the redacted URL"
! grep -q -e pa55-w0rd -e wrong-pass "$T/m3.err" || fail "a password was shown"

section "a read-only server is never written; blobs over max-size stay home"
start_redis r4
export CACHET_DIR=$T/m6 CACHET_REMOTE="redis://127.0.0.1:$REDIS_PORT read-only"
run_expect miss "new step" -- sh -c 'echo ro > ro.txt'
cachet remote flush -q || fail "flush failed"
[ "$(redis_keys "$REDIS_PORT")" -eq 0 ] || fail "the read-only server was written"
export CACHET_DIR=$T/m7 CACHET_REMOTE="redis://127.0.0.1:$REDIS_PORT max-size=1K"
run_expect miss "new step" -- sh -c 'head -c 4096 /dev/zero | tr "\0" x > big.txt'
cachet remote flush -q || fail "flush failed"
[ "$(redis_keys "$REDIS_PORT")" -eq 0 ] || fail "an entry with a blob over max-size was uploaded"
[ "$(remote_counter remote_too_large)" -eq 1 ] || fail "the large blob was not counted"

section "a server killed mid-build: every step succeeds, quickly"
export CACHET_DIR=$T/m8 CACHET_REMOTE="$SHARDS"
run_expect miss "new step" -- sh -c 'echo before > k0.txt'
kill "$PID1"
wait "$PID1" 2>/dev/null || true
# Keys fall on the two shards by their hash, so step on until at least two
# lookups have met the dead server (one in 2^40 runs needs more than 40).
i=0
while :; do
    i=$((i + 1))
    t0=$(date +%s%N)
    "$CACHET_BIN" run -- sh -c "echo after$i > k$i.txt" || fail "step $i failed"
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    [ "$ms" -lt 2000 ] || fail "step $i took ${ms} ms with a server down"
    assert_content "k$i.txt" "after$i"
    errors=$(remote_counter remote_errors)
    skipped=$(remote_counter remote_skipped)
    [ $((errors + skipped)) -ge 2 ] && [ "$i" -ge 12 ] && break
    [ "$i" -lt 40 ] || fail "40 steps neither skipped nor asked the dead server twice"
done
echo "with one of two servers down: $errors errors, $skipped lookups skipped in $i steps"
# The first failure (of a lookup, or of a background upload) rests the dead
# server for every later step.
[ "$errors" -le 2 ] || fail "the dead server was asked again and again ($errors errors)"

check_status_file_format
