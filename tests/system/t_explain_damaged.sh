#!/usr/bin/env bash
# explain, show and run evaluate a stored path set the same way (lookup.h):
# a path-set row whose body no longer matches its digest is damaged, and
# explain must not call it a hit even where the damaged body happens to
# give the strong key of the stored result (here: a lookup of one absent
# file turned into a lookup of another absent file).
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

# The step looks up a file that is absent (its value: "absent") and
# writes an output.
plain_and_cached "" sh -c 'test -e absent_one || echo made > out'
expect hit
set +e
cachet explain -- sh -c 'test -e absent_one || echo made > out' > "$T/explain.out"
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "explain of the stored step exited $rc, expected 0 (a hit): $(cat "$T/explain.out")"

section "a path set body damaged into another absent path"
python3 - "$CACHET_DIR/index.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
n = 0
for rowid, body in db.execute("SELECT rowid, body FROM pathsets").fetchall():
    if b"absent_one" in body:
        db.execute("UPDATE pathsets SET body = ? WHERE rowid = ?",
                   (body.replace(b"absent_one", b"absent_two"), rowid))
        n += 1
db.commit()
sys.exit(0 if n == 1 else "expected one path set naming absent_one, found %d" % n)
PY
# The step's memo would answer run before the index: drop it, so that run
# reads the damaged row as explain does.
rm -rf "$CACHET_DIR/memo"
set +e
cachet explain -- sh -c 'test -e absent_one || echo made > out' > "$T/explain.out"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "explain called a damaged path set a hit (exit $rc): $(cat "$T/explain.out")"

before=$(counters errors)
rm -f out
run_expect miss "" -- sh -c 'test -e absent_one || echo made > out'
assert_content out made
after=$(counters errors)
[ "${after% *}" -gt "${before% *}" ] || fail "the damaged path set was not counted in errors ($before -> $after)"
# The run stored a sound path set: the step hits again, and explain agrees.
rm -f out
run_expect hit "" -- sh -c 'test -e absent_one || echo made > out'
assert_content out made
cachet explain -- sh -c 'test -e absent_one || echo made > out' > "$T/explain.out" ||
    fail "explain of the repaired step: $(cat "$T/explain.out")"
