#!/usr/bin/env bash
# A remote that fails says why: the last error of each server (the HTTP
# status or the curl message, and when) is in `cachet remote status`, text
# and --json, and in the one line of a failed `remote flush`; the entries
# stay spooled and the local cache keeps hitting.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_lib.sh"

W=$(workdir)
cd "$W"
start_nginx web

# fails_with URL PATTERN: a step spooled for URL, then flush fails with one
# line matching PATTERN, and status shows it.
fails_with() {
    local url=$1 pattern=$2 name
    name=$(echo "$url" | tr -c 'a-z0-9' _)
    export CACHET_DIR="$T/cache-$name" CACHET_REMOTE="$url"
    mkdir -p "$name"
    (cd "$name" && cachet run -- sh -c 'echo out > made; echo hello') > out.txt
    expect miss
    [ "$(cat out.txt)" = hello ] || fail "$url: the step's stdout: $(cat out.txt)"

    local rc=0
    cachet remote flush > flush.out 2> flush.err || rc=$?
    [ "$rc" -eq 1 ] || fail "$url: remote flush exited $rc, expected 1"
    grep -q "left 1" flush.out || fail "$url: $(cat flush.out)"
    [ "$(wc -l < flush.err)" -eq 1 ] || fail "$url: flush said more than one line: $(cat flush.err)"
    grep -q "could not be uploaded: .*: " flush.err || fail "$url: flush gives no reason: $(cat flush.err)"
    grep -Eqi "$pattern" flush.err || fail "$url: '$pattern' not in: $(cat flush.err)"

    cachet remote status > status.txt
    grep -q "uploads waiting  *1$" status.txt || fail "$url: the entry was lost: $(cat status.txt)"
    grep -Eq "^  last error [0-9-]+ [0-9:]+ \([0-9]+ s ago\): " status.txt ||
        fail "$url: status has no last error: $(cat status.txt)"
    grep -Eqi "last error.*$pattern" status.txt || fail "$url: '$pattern' not in: $(cat status.txt)"
    cachet remote status --json | python3 -c '
import json, re, sys, time
r = json.load(sys.stdin)["remotes"][0]
err = r["last_error"]
assert err, r
assert re.search(sys.argv[1], err["message"], re.I), err
assert abs(err["at_ms"] - time.time() * 1000) < 120000, err
assert err["ago_ms"] >= 0, err' "$pattern" || fail "$url: --json last_error"

    # Nothing lost: the local entry still hits.
    rm "$name/made"
    (cd "$name" && cachet run -- sh -c 'echo out > made; echo hello') > out.txt
    expect hit
    assert_content "$name/made" out
}

section "a server answering 501 to PUT"
fails_with "http://127.0.0.1:$NGINX_PORT/no-put/" "PUT answered HTTP 501"

section "a name that does not resolve"
fails_with "http://no-such-host.invalid/cache timeout=2s" "resol"

section "a refused connection"
CLOSED=$(free_port)
fails_with "http://127.0.0.1:$CLOSED/cache" "connect"

section "a refused connection to Redis (hiredis's message)"
fails_with "redis://127.0.0.1:$CLOSED/0" "cannot connect: .*refused"

section "a server that works has no last error"
export CACHET_DIR="$T/cache-ok" CACHET_REMOTE="http://127.0.0.1:$NGINX_PORT/ok"
cachet run -- sh -c 'echo fine' > /dev/null
cachet remote flush > /dev/null
cachet remote status > status.txt
grep -q "last error" status.txt && fail "a working server shows an error: $(cat status.txt)"
cachet remote status --json | python3 -c '
import json, sys
assert json.load(sys.stdin)["remotes"][0]["last_error"] is None' || fail "--json last_error not null"
