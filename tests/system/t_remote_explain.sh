#!/usr/bin/env bash
# `cachet explain` asks the remote too: a developer whose build missed CI's
# cache learns whether the remote would serve the step here, or whether it
# knows the step at all (then the command, environment or compiler differ)
# or only its inputs differ; read-only, with the lookups' trust checks.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_lib.sh"

start_nginx web
URL="http://127.0.0.1:$NGINX_PORT/cache timeout=2s"
W=$(workdir)
cd "$W"
printf '#include "h.h"\nint f(void) { return H; }\n' > x.c
echo '#define H 1' > h.h

# on_ci / on_dev CMD...: with the CI's cache (which writes the remote) or
# the developer's (which only reads it).
on_ci() { CACHET_DIR="$T/ci" CACHET_REMOTE="$URL" "$@"; }
on_dev() { CACHET_DIR="$T/dev" CACHET_REMOTE="$URL read-only" "$@"; }
explain_dev() {
    set +e
    on_dev "$CACHET_BIN" explain "$@" > explain.txt 2>&1
    RC=$?
    set -e
}

section "CI records and uploads"
on_ci step gcc -c x.c -o x.o
expect miss "new step"
on_ci "$CACHET_BIN" remote flush -q || fail "flush failed"
plain=$(cat x.o | sha256sum)

section "the developer's explain says the remote would serve it"
explain_dev gcc -c x.c -o x.o
[ "$RC" -eq 0 ] || fail "explain exit $RC: $(cat explain.txt)"
grep -q "^hit: from the remote" explain.txt || fail "explain: $(cat explain.txt)"
[ "$(cat x.o | sha256sum)" = "$plain" ] || fail "explain changed the object"
[ ! -e "$T/dev/index.db" ] || [ "$(sqlite3 "$T/dev/index.db" 'select count(*) from results')" = 0 ] ||
    fail "explain stored the remote's entry"
on_dev "$CACHET_BIN" explain --json gcc -c x.c -o x.o > explain.json || true
grep -q '"remote": {"result": "hit"' explain.json || fail "json: $(cat explain.json)"

section "a header that differs: the remote knows the step, its inputs differ"
echo '#define H 2' > h.h
explain_dev gcc -c x.c -o x.o
[ "$RC" -eq 1 ] || fail "explain exit $RC: $(cat explain.txt)"
grep -q "^remote: inputs changed: the remote knows this step (1 path set" explain.txt ||
    fail "explain: $(cat explain.txt)"

section "another command line: the remote knows no such step"
explain_dev gcc -O2 -c x.c -o x.o
[ "$RC" -eq 1 ] || fail "explain exit $RC"
grep -q "^remote: new step there too" explain.txt || fail "explain: $(cat explain.txt)"

section "with trusted_keys, CI's unsigned path set is not even evaluated"
echo '#define H 1' > h.h
cachet keygen -f "$T/dev.key" > /dev/null
CACHET_TRUSTED_KEYS="$T/dev.key.pub" explain_dev gcc -c x.c -o x.o
[ "$RC" -eq 1 ] || fail "an unsigned entry was trusted: $(cat explain.txt)"
grep -q "1 not signed by a trusted key" explain.txt || fail "explain: $(cat explain.txt)"

section "a dead remote: said, and explain still answers from the local cache"
stop_nginx
explain_dev gcc -c x.c -o x.o
[ "$RC" -eq 1 ] || fail "explain exit $RC"
grep -q "^remote: not asked" explain.txt || fail "explain: $(cat explain.txt)"
