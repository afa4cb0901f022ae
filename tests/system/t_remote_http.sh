# Remote cache over HTTP, against a real nginx with its WebDAV methods: two
# cache directories stand for two machines. Hits travel between them with
# identical outputs; secrets never reach the server; corrupt blobs, hostile
# output paths and unsigned entries are refused and counted; a read-only
# remote is never written; a dead or hung server costs one timeout, not one
# per step; make -j loses no upload.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_lib.sh"

section "cachet itself links neither libcurl nor hiredis"
! ldd "$CACHET_BIN" | grep -E 'libcurl|libhiredis' || fail "cachet links a remote library"

start_nginx web
URL="http://127.0.0.1:$NGINX_PORT/cache"
W=$(workdir)
cd "$W"
OUT=$T/outside
mkdir -p "$OUT"

# The remote of the next steps (a plain variable, never exported: the
# environment of a step is part of its key).
REMOTE=

# on MACHINE [VAR=VALUE...] -- CMD...: a step with CACHET_DIR=$T/MACHINE.
on() {
    local m=$1
    shift
    local vars=()
    while [ "$1" != "--" ]; do vars+=("$1"); shift; done
    shift
    env CACHET_DIR="$T/$m" CACHET_REMOTE="${REMOTE:-$URL}" "${vars[@]}" \
        "$CACHET_BIN" run -- "$@"
}

# step_on MACHINE RESULT REASON -- CMD...: a successful step with that result.
step_on() {
    local m=$1 result=$2 reason=$3
    shift 4
    export CACHET_DIR="$T/$m" CACHET_REMOTE="${REMOTE:-$URL}"
    run_expect "$result" "$reason" -- "$@"
}

flush_on() {
    CACHET_DIR="$T/$1" CACHET_REMOTE="${REMOTE:-$URL}" cachet remote flush -q ||
        fail "cachet remote flush failed on $1"
}

counter_on() {
    CACHET_DIR="$T/$1" CACHET_REMOTE="${REMOTE:-$URL}" remote_counter "$2"
}

# timed_step CMD...: a successful step; sets ms to the wall time of cachet
# alone (the helpers around it start python).
timed_step() {
    local t0
    t0=$(date +%s%N)
    "$CACHET_BIN" run -- "$@" || fail "cachet run -- $* failed"
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}

section "a step run on one machine hits on another, with identical outputs"
printf 'int answer(void) { return 42; }\n' > a.c
step_on m1 miss "new step" -- gcc -c a.c -o a.o
step_on m1 miss "new step" -- sh -c 'echo generated; mkdir -p gen; echo x > gen/x.txt; ln -sf x.txt gen/link'
flush_on m1
[ -n "$(ls "$NGINX_ROOT/cache/cas")" ] || fail "no blob was uploaded"
mkdir ref && cp a.o ref/ && cp -a gen ref/
rm -rf a.o gen
step_on m2 hit remote -- gcc -c a.c -o a.o
assert_same a.o ref/a.o
got=$(on m2 -- sh -c 'echo generated; mkdir -p gen; echo x > gen/x.txt; ln -sf x.txt gen/link')
[ "$got" = generated ] || fail "stdout not replayed from the remote: '$got'"
expect hit remote
assert_same gen/x.txt ref/gen/x.txt
[ "$(readlink gen/link)" = x.txt ] || fail "symlink not restored"
# The remote hit was stored locally: the next one never asks the server.
step_on m2 hit "" -- gcc -c a.c -o a.o
[ "$(counter_on m2 remote_hits)" -eq 2 ] || fail "expected 2 remote hits on m2"

section "environment values and argv never reach the server"
SECRET_TOKEN=hunter2-in-env step_on m1 miss "new step" -- gcc -DAPI_KEY=sekrit-in-argv -c a.c -o b.o
flush_on m1
! grep -rqa -e hunter2-in-env -e sekrit-in-argv "$NGINX_ROOT" || fail "a secret reached the server"

section "a corrupt blob on the server is a miss, counted"
step_on m1 miss "new step" -- sh -c 'echo blob-to-corrupt > c.txt'
flush_on m1
blob=$(grep -rlx blob-to-corrupt "$NGINX_ROOT/cache/cas")
echo 'blob-TAMPERED!!' > "$blob"
rm c.txt
step_on m3 miss "new step" -- sh -c 'echo blob-to-corrupt > c.txt'
assert_content c.txt blob-to-corrupt
[ "$(counter_on m3 remote_corrupt)" -ge 1 ] || fail "the corrupt blob was not counted"

section "hostile output paths are refused; nothing is written outside"
# m4 reads only, so its own uploads cannot repair the tampered entries.
tamper_and_check() { # NAME NEW_PATH CHECK_ABSENT
    local name=$1 new=$2 absent=$3
    step_on m1 miss "new step" -- sh -c "echo $name > $name.txt"
    flush_on m1
    "$TESTTOOL" set-path "$(entry_with_output "$W/$name.txt")" "$W/$name.txt" "$new"
    rm "$name.txt"
    local before
    before=$(counter_on m4 remote_refused)
    REMOTE="$URL read-only"
    step_on m4 miss "new step" -- sh -c "echo $name > $name.txt"
    REMOTE=
    assert_content "$name.txt" "$name"
    [ "$(counter_on m4 remote_refused)" -eq $((before + 1)) ] || fail "$new: not counted as refused"
    assert_absent "$absent"
}
tamper_and_check dotdot "$W/../../cachet-remote-escape-$$" "$(dirname "$T")/cachet-remote-escape-$$"
tamper_and_check absolute "$OUT/absolute.txt" "$OUT/absolute.txt"
ln -s "$OUT" "$W/escape"
tamper_and_check symlinked "$W/escape/symlinked.txt" "$OUT/symlinked.txt"
[ -z "$(ls "$OUT")" ] || fail "something was written outside: $(ls "$OUT")"

section "with trusted_keys, unsigned and badly signed entries are ignored"
cachet keygen -f "$T/ci.key" > "$T/keygen.out"
[ "$(stat -c %a "$T/ci.key")" = 600 ] || fail "the private key is not mode 0600"
HEXKEY=$(sed -n 's/^trusted_keys = //p' "$T/keygen.out")
step_on m1 miss "new step" -- sh -c 'echo unsigned > u.txt'
flush_on m1
CACHET_TRUSTED_KEYS="$T/ci.key.pub" step_on m5 miss "new step" -- sh -c 'echo unsigned > u.txt'
[ "$(counter_on m5 remote_untrusted)" -eq 1 ] || fail "the unsigned entry was not counted"
# CI signs; a developer who trusts its key hits.
CACHET_SIGN_KEY="$T/ci.key" step_on ci miss "new step" -- sh -c 'echo signed > s.txt'
CACHET_SIGN_KEY="$T/ci.key" flush_on ci
rm s.txt
CACHET_TRUSTED_KEYS="$HEXKEY" step_on m5 hit remote -- sh -c 'echo signed > s.txt'
assert_content s.txt signed
# The signature covers the result: altered, it no longer verifies.
CACHET_SIGN_KEY="$T/ci.key" step_on ci miss "new step" -- sh -c 'echo signed2 > s2.txt'
CACHET_SIGN_KEY="$T/ci.key" flush_on ci
f=$(entry_with_output "$W/s2.txt")
[ "$("$TESTTOOL" signed "$f")" = 1 ] || fail "the CI entry is not signed"
"$TESTTOOL" set-path "$f" "$W/s2.txt" "$W/s2-moved.txt"
rm s2.txt
CACHET_TRUSTED_KEYS="$T/ci.key.pub" step_on m6 miss "new step" -- sh -c 'echo signed2 > s2.txt'
[ "$(counter_on m6 remote_untrusted)" -eq 1 ] || fail "the altered entry was not refused"
assert_absent s2-moved.txt

section "Basic auth and bearer tokens, from the URL or a file, never shown"
printf 'ci:ci-s3cret\n' > "$T/basic.auth"
printf 'tok-s3cret\n' > "$T/bearer.token"
BASIC="http://ci:ci-s3cret@127.0.0.1:$NGINX_PORT/basic"
REMOTE=$BASIC
step_on a1 miss "new step" -- sh -c 'echo basic > basic.txt'
flush_on a1
REMOTE="http://127.0.0.1:$NGINX_PORT/bearer bearer-token-file=$T/bearer.token"
step_on a1 miss "new step" -- sh -c 'echo bearer > bearer.txt'
flush_on a1
[ -n "$(ls "$NGINX_ROOT/basic/cas")" ] && [ -n "$(ls "$NGINX_ROOT/bearer/cas")" ] ||
    fail "an authenticated upload did not arrive"
rm basic.txt bearer.txt
REMOTE="http://127.0.0.1:$NGINX_PORT/basic auth-file=$T/basic.auth"
step_on a2 hit remote -- sh -c 'echo basic > basic.txt'
REMOTE="http://127.0.0.1:$NGINX_PORT/bearer bearer-token=tok-s3cret"
step_on a2 hit remote -- sh -c 'echo bearer > bearer.txt'
# Wrong credentials: a miss, an error counted, and no secret in any message.
REMOTE="http://ci:wrong-pw@127.0.0.1:$NGINX_PORT/basic"
rm basic.txt
CACHET_VERBOSE=1 step_on a3 miss "new step" -- sh -c 'echo basic > basic.txt' 2> "$T/a3.err"
[ "$(counter_on a3 remote_errors)" -eq 1 ] || fail "the refused credentials were not counted"
REMOTE=$BASIC
CACHET_DIR=$T/a3 CACHET_REMOTE="$REMOTE" cachet remote status >> "$T/a3.err"
cat "$T/a3.err"
grep -q '401' "$T/a3.err" || fail "the refusal was not reported"
! grep -q -e wrong-pw -e ci-s3cret -e tok-s3cret "$T/a3.err" || fail "a credential was shown"
REMOTE=

section "a read-only remote is never written"
RO="http://127.0.0.1:$NGINX_PORT/readonly"
REMOTE="$RO read-only"
step_on ro miss "new step" -- sh -c 'echo ro > ro.txt'
step_on ro miss "new step" -- gcc -c a.c -o ro.o
flush_on ro
REMOTE=
[ ! -e "$NGINX_ROOT/readonly" ] || fail "the read-only remote was written"
! grep -q '"PUT /readonly' "$T/web/access.log" || fail "a PUT reached the read-only remote"

section "a dead server: every step succeeds, quickly; the breaker skips it"
export CACHET_DIR=$T/m7 CACHET_REMOTE="$URL"
run_expect miss "new step" -- sh -c 'echo up1 > d1.txt'
cachet remote flush -q || fail "flush failed"
stop_nginx
for i in 2 3 4 5 6; do
    timed_step sh -c "echo down$i > d$i.txt"
    expect miss "new step"
    echo "step $i with the server down: ${ms} ms"
    [ "$ms" -lt 2000 ] || fail "a step took ${ms} ms with the server down"
    assert_content "d$i.txt" "down$i"
done
[ "$(remote_counter remote_errors)" -ge 1 ] || fail "no remote error counted"
[ "$(remote_counter remote_errors)" -le 2 ] || fail "the breaker did not stop the retries"
[ "$(remote_counter remote_skipped)" -ge 3 ] || fail "later steps did not skip the dead server"
cachet remote status | grep -q "skipped for" || fail "status does not show the resting server"

section "a hung server costs one op-timeout, not one per step"
HANG_PORT=$(free_port)
# $PY, not the python3 function: $! must be the listener itself.
"$PY" -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
time.sleep(600)' "$HANG_PORT" &
track_pid $!
wait_port "$HANG_PORT"
export CACHET_DIR=$T/m8 CACHET_REMOTE="http://127.0.0.1:$HANG_PORT/cache op-timeout=400ms retry-after=60s"
for i in 1 2 3 4; do
    timed_step sh -c "echo hung$i > h$i.txt"
    expect miss "new step"
    echo "step $i against a hung server: ${ms} ms"
    [ "$ms" -lt 2000 ] || fail "a step took ${ms} ms against a hung server"
    if [ "$i" -eq 1 ]; then
        [ "$ms" -ge 400 ] || fail "the first step did not wait for the server (${ms} ms)"
    fi
done
# Only the first step waited: the others found the breaker open (their
# times above are those of the bare steps).
[ "$(remote_counter remote_errors)" -eq 1 ] || fail "expected exactly one remote error"
[ "$(remote_counter remote_skipped)" -eq 3 ] || fail "expected three steps to skip the hung server"

section "the spool keeps uploads while the server is down, flush sends them"
NGINX_PORT_WANTED=$NGINX_PORT start_nginx web
export CACHET_DIR=$T/m7 CACHET_REMOTE="$URL"
[ "$(cachet remote status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["spool"])')" -ge 5 ] ||
    fail "the uploads of the steps run while the server was down are not spooled"
cachet remote flush -q || fail "flush failed after the server came back"
rm -f d5.txt
step_on m9 hit remote -- sh -c 'echo down5 > d5.txt'

section "make -j over many steps: correct outputs, no lost upload"
mkdir -p mk && cd mk
{
    echo "all: $(seq -f 'out%g.txt' 1 24 | tr '\n' ' ') m1.o m2.o"
    echo "out%.txt: in%.txt"
    printf '\t$(CACHET) run -- sh -c "tr a-z A-Z < $< > $@"\n'
    echo "%.o: %.c"
    printf '\t$(CACHET) run -- gcc -O2 -c $< -o $@\n'
} > Makefile
for i in $(seq 24); do echo "line $i" > "in$i.txt"; done
printf 'int m1(int x) { return x * 3; }\n' > m1.c
printf 'int m2(int x) { return x - 3; }\n' > m2.c
# Eight parallel steps on two cores (or under ASan) can take longer than
# the default 100 ms to connect, which would rest the server for all of them.
export CACHET_DIR=$T/mk1 CACHET_REMOTE="$URL timeout=2s"
before=$(status_count)
make -s -j8 CACHET="$CACHET_BIN" || fail "make -j8 failed"
[ "$(status_count)" -eq $((before + 26)) ] || fail "expected 26 steps"
for i in $(seq 24); do assert_content "out$i.txt" "LINE $i"; done
cachet remote flush -q || fail "flush after make -j failed"
mkdir ../mkref && cp out*.txt m1.o m2.o ../mkref/
rm -f out*.txt m1.o m2.o
export CACHET_DIR=$T/mk2
before=$(status_count)
make -s -j8 CACHET="$CACHET_BIN" || fail "the second make -j8 failed"
remote_hits=$(tail -n 26 "$CACHET_STATUS_FILE" | grep -c '"reason": "remote"' || true)
echo "second machine: $remote_hits of 26 steps hit the remote"
[ "$remote_hits" -eq 26 ] || fail "uploads were lost: only $remote_hits of 26 steps hit"
for f in ../mkref/*; do assert_same "$f" "$(basename "$f")"; done
cd "$W"

check_status_file_format
