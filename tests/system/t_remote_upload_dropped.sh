#!/usr/bin/env bash
# An upload whose blob left the local store before it could be sent is
# dropped whole: the entry and the path set go up only after every blob, so
# another machine runs the step instead of finding an entry it cannot
# restore. The rest of the spool still goes up and hits there.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_lib.sh"

start_nginx web
URL="http://127.0.0.1:$NGINX_PORT/cache"
CLOSED=$(free_port)
W=$(workdir)
# The blob file of a file's content, by its SHA-256.
blob_of() {
    local d
    d=$(sha256sum "$1" | cut -c1-64)
    ls "$CACHET_DIR/blobs/${d:0:2}/$d"* 2> /dev/null | head -n 1
}
cd "$W"

section "two uploads spooled while no server listens"
export CACHET_DIR="$T/a" CACHET_REMOTE="http://127.0.0.1:$CLOSED/cache"
run_expect miss "new step" -- sh -c 'echo one > one.o; echo two > two.o; echo built'
run_expect miss "new step" -- sh -c 'echo kept > kept.o'
cachet remote flush > flush.out 2> /dev/null || true
grep -q "left 2" flush.out || fail "the jobs did not wait: $(cat flush.out)"

section "one blob gone from the local store, then the server is up"
blob=$(blob_of two.o)
[ -n "$blob" ] || fail "no blob holds two.o"
rm -f "$blob"
CACHET_REMOTE=$URL cachet remote flush > flush.out
grep -q "uploaded 1, dropped 1, left 0" flush.out || fail "flush: $(cat flush.out)"
[ "$(CACHET_REMOTE=$URL remote_counter remote_upload_dropped)" -eq 1 ] ||
    fail "the dropped upload is not counted"
for f in "$NGINX_ROOT"/cache/ac/*; do
    if [ "$("$TESTTOOL" kind "$f")" = entry ] && "$TESTTOOL" paths "$f" | grep -q 'two\.o$'; then
        fail "the entry of a job without its blobs reached the server"
    fi
done

section "another machine runs the dropped step and hits the other"
export CACHET_DIR="$T/b" CACHET_REMOTE=$URL
rm -f one.o two.o kept.o
run_expect miss "new step" -- sh -c 'echo one > one.o; echo two > two.o; echo built'
assert_content two.o two
run_expect hit "" -- sh -c 'echo kept > kept.o'
assert_content kept.o kept
