# A cache directory is marked, and cachet never uses or cleans a directory
# that is not one: CACHET_DIR set by mistake to a directory of the user's
# files leaves them all in place (the command runs uncached; gc, clear and
# stats refuse), a new cache gets a CACHEDIR.TAG, a cache of an older cachet
# is tagged and keeps hitting, and no cleanup of a real cache removes a file
# whose name cachet does not write.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
SIG='Signature: 8a477f597d28d172789f06886806bc55'

section "a directory of the user's files is not used as a cache"
user_dir="$T/documents"
mkdir -p "$user_dir/tmp" "$user_dir/blobs/ab"
echo keep > "$user_dir/tmp/keep.txt"
echo notes > "$user_dir/tmp/notes.md"
echo mine > "$user_dir/blobs/ab/$(printf 'a%.0s' $(seq 64))"
echo letter > "$user_dir/letter.txt"
touch -d '40 days ago' "$user_dir/tmp/keep.txt" "$user_dir/tmp/notes.md" "$user_dir/blobs/ab/"*
(cd "$user_dir" && find . | sort > "$T/before.txt")
sh -c 'echo built > plain.out; echo said' > plain.stdout
set +e
CACHET_DIR=$user_dir cachet run -- sh -c 'echo built > cached.out; echo said' > cached.stdout 2> run.err
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "the step exited $rc"
assert_same plain.out cached.out
assert_same plain.stdout cached.stdout
[ "$(wc -l < run.err)" -eq 1 ] || fail "expected one line on stderr: $(cat run.err)"
grep -q "CACHEDIR.TAG" run.err || fail "the refusal does not say why: $(cat run.err)"
for cmd in gc clear stats; do
    set +e
    CACHET_DIR=$user_dir cachet $cmd > /dev/null 2> cmd.err
    rc=$?
    set -e
    [ "$rc" -ne 0 ] || fail "cachet $cmd used a directory that is not a cache"
    grep -q "not a cachet cache" cmd.err || fail "cachet $cmd: $(cat cmd.err)"
done
# Nothing a run does (its daily sweep included) touches it.
CACHET_DIR=$user_dir cachet run -- true 2> /dev/null || true
(cd "$user_dir" && find . | sort > "$T/after.txt")
diff "$T/before.txt" "$T/after.txt" || fail "cachet changed a directory that is not a cache"

section "a new cache is tagged, in an empty directory too"
run_expect miss "" -- sh -c 'echo one > one.out'
head -n 1 "$CACHET_DIR/CACHEDIR.TAG" | grep -qx "$SIG" || fail "no CACHEDIR.TAG in a new cache"
empty="$T/empty"
mkdir "$empty"
CACHET_DIR=$empty cachet run -- true
head -n 1 "$empty/CACHEDIR.TAG" | grep -qx "$SIG" || fail "an empty directory was not tagged"

section "a cache made before the tag is tagged and keeps its entries"
rm "$CACHET_DIR/CACHEDIR.TAG"
rm one.out
run_expect hit "" -- sh -c 'echo one > one.out'
assert_content one.out one
head -n 1 "$CACHET_DIR/CACHEDIR.TAG" | grep -qx "$SIG" || fail "an old cache was not tagged"

section "a cache-like directory holding anything else is refused"
rm "$CACHET_DIR/CACHEDIR.TAG"
echo mine > "$CACHET_DIR/thesis.tex"
set +e
cachet gc > /dev/null 2> gc.err
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "gc used an untagged directory holding a foreign file"
rm "$CACHET_DIR/thesis.tex"
# An SQLite database that is not cachet's index.
foreign="$T/foreign"
mkdir "$foreign"
python3 -c "import sqlite3; c = sqlite3.connect('$foreign/index.db'); c.execute('create table t(x)'); c.commit()"
set +e
CACHET_DIR=$foreign cachet stats > /dev/null 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "a foreign index.db was taken for a cache"
[ ! -e "$foreign/CACHEDIR.TAG" ] || fail "a foreign index.db was tagged"

section "cleanups remove only the names cachet writes"
cachet stats > /dev/null # tags it again
echo keep > "$CACHET_DIR/tmp/keep.txt"
echo abandoned > "$CACHET_DIR/tmp/blob.crashed"
mkdir -p "$CACHET_DIR/blobs/zz" "$CACHET_DIR/blobs/ab"
echo notes > "$CACHET_DIR/blobs/zz/notes.md"
echo notes > "$CACHET_DIR/blobs/ab/notes.md"
echo readme > "$CACHET_DIR/memo/README"
touch -d '40 days ago' "$CACHET_DIR/tmp/"* "$CACHET_DIR/blobs/zz/notes.md" "$CACHET_DIR/blobs/ab/notes.md"
cachet gc > /dev/null
assert_absent "$CACHET_DIR/tmp/blob.crashed"
cachet clear > /dev/null
for f in tmp/keep.txt blobs/zz/notes.md blobs/ab/notes.md memo/README; do
    assert_exists "$CACHET_DIR/$f"
done
rm one.out
run_expect miss "" -- sh -c 'echo one > one.out'

section "parallel first uses of a new cache all use it"
# Each tags the new directory or finds another's tag: one that looked for
# the tag just before a parallel cachet made it, then listed blobs/ and
# tmp/ made just after it, must not take the cache for a stranger's files.
for round in 1 2 3 4 5; do
    fresh="$T/fresh-$round"
    : > "$T/par.status"
    for i in 1 2 3 4 5 6; do
        CACHET_DIR=$fresh CACHET_STATUS_FILE="$T/par.status" "$CACHET_BIN" run -- sh -c "echo $i > par-$i.out" 2> "$T/par-$i.err" &
    done
    wait
    ! grep -q "not a cachet cache" "$T"/par-*.err || fail "round $round: a parallel first use refused the new cache: $(cat "$T"/par-*.err)"
    [ "$(wc -l < "$T/par.status")" -eq 6 ] || fail "round $round: $(wc -l < "$T/par.status") of 6 steps used the cache"
done
