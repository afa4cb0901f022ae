# Corruption: damaged blobs (bytes flipped, truncated, deleted, replaced by
# something that is not a file), damaged index rows (path set and result
# bodies overwritten, truncated, bits flipped, rows deleted) and a damaged
# index file (header overwritten, truncated, deleted, random bytes flipped
# anywhere). Each time: the damage is detected, the step runs as a miss with
# the outputs, stdout and exit status of a plain run, the damage is
# repaired or removed (the next run hits) and it is counted.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

# A step with a compressible output (a zstd blob), an incompressible one (a
# raw blob), stdout, stderr and an exit status of its own choosing (0).
head -c 200000 /dev/urandom > random.bin
cat > s.sh <<'EOF'
python3 -c 'print("stdout line " * 50)'
echo "to stderr" >&2
{ cat in.txt; seq 1 3000; } > out.txt
cp random.bin out.bin
EOF
echo "first input" > in.txt
sh s.sh > ref.stdout 2> ref.stderr
cp out.txt ref.out.txt
cp out.bin ref.out.bin

# Runs the step through cachet and checks it against the plain run.
check_run() {
    local what=$1
    rm -f out.txt out.bin
    step sh s.sh > got.stdout 2> got.stderr
    [ "$RC" -eq 0 ] || fail "$what: exit status $RC"
    cmp -s got.stdout ref.stdout || fail "$what: stdout differs from a plain run"
    grep -qx "to stderr" got.stderr || fail "$what: stderr lacks the step's line"
    cmp -s out.txt ref.out.txt || fail "$what: out.txt differs from a plain run"
    cmp -s out.bin ref.out.bin || fail "$what: out.bin differs from a plain run"
}

detected=0
# damage WHAT COUNTER CMD...: with a stored, hitting entry, runs CMD to
# damage it; the next run must be a miss with correct outputs and bump
# COUNTER ("" for none) and errors; the run after it a hit.
damage() {
    local what=$1 name=${2:-hits}
    shift 2
    section "$what"
    check_run "$what: before the damage"
    status_last
    [ "$LAST_RESULT" = hit ] || check_run "$what: before the damage (second run)"
    status_last
    [ "$LAST_RESULT" = hit ] || fail "$what: no hit before the damage ($LAST_RESULT, $LAST_REASON)"
    local before after
    before=$(counters errors "$name")
    "$@"
    check_run "$what: the run after the damage"
    status_last
    [ "$LAST_RESULT" = miss ] || fail "$what: the damaged entry was a $LAST_RESULT, expected a miss"
    after=$(counters errors "$name")
    [ "${after% *}" -gt "${before% *}" ] || fail "$what: not counted in errors ($before -> $after)"
    [ "$name" = hits ] || [ "${after#* }" -gt "${before#* }" ] || fail "$what: counter $name not incremented"
    check_run "$what: the run after the repair"
    status_last
    [ "$LAST_RESULT" = hit ] || fail "$what: not repaired: $LAST_RESULT ($LAST_REASON)"
    detected=$((detected + 1))
}

# The blob file of a content, by its SHA-256.
blob_of() {
    local d
    d=$(sha256sum "$1" | cut -c1-64)
    ls "$CACHET_DIR/blobs/${d:0:2}/$d"* 2> /dev/null | head -n 1
}
flip() { # flip FILE OFFSET(negative: from the end)
    chmod u+w "$1"
    python3 - "$1" "$2" <<'EOF'
import sys
p, off = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read())
b[off] ^= 0x5a
open(p, "wb").write(b)
EOF
}
truncate_half() { chmod u+w "$1"; truncate -s $(($(stat -c %s "$1") / 2)) "$1"; }
sql() { python3 - "$CACHET_DIR/index.db" "$1" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
db.execute(sys.argv[2])
db.commit()
EOF
}

# A memo (the step's last hit, kept beside the index) answers hits without
# reading the index: damage meant for the index drops it first, so that the
# damaged rows are what the next run reads. Memo damage: t_memo.sh.
# The WAL is folded in first (closing does not checkpoint): damage to the
# index file then lands on pages that are read from it.
index_damage() {
    rm -rf "$CACHET_DIR/memo"
    python3 - "$CACHET_DIR/index.db" <<'EOF'
import sqlite3, sys
sqlite3.connect(sys.argv[1], timeout=30).execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
EOF
    "$@"
}

zst() { blob_of ref.out.txt; }
raw() { blob_of ref.out.bin; }
out_blob() { blob_of ref.stdout; }

check_run "first run"
expect miss
check_run "second run"
expect hit
# errors must be the total that `cachet stats --json` shows.
[ "$(counters errors)" = "$(stats_field errors)" ] || fail "the errors counter is not what stats shows"
case "$(zst)" in *.zst) ;; *) fail "out.txt was not stored compressed: $(zst)" ;; esac
case "$(raw)" in *.zst) fail "out.bin was stored compressed" ;; esac

damage "a byte flipped in a compressed blob" corrupt_blobs flip "$(zst)" 40
damage "a byte flipped in a raw blob" corrupt_blobs flip "$(raw)" 1000
damage "the last byte of a raw blob flipped" corrupt_blobs flip "$(raw)" -1
damage "a compressed blob truncated" corrupt_blobs truncate_half "$(zst)"
damage "a raw blob truncated" "" truncate_half "$(raw)"
damage "a compressed blob emptied" "" truncate -s 0 "$(zst)"
damage "a compressed blob deleted" missing_blobs rm -f "$(zst)"
damage "a raw blob deleted" missing_blobs rm -f "$(raw)"
replace_by_dir() { local b; b=$(raw); rm -f "$b"; mkdir "$b"; }
damage "a blob replaced by a directory" missing_blobs replace_by_dir
replace_by_link() { local b; b=$(zst); rm -f "$b"; ln -s /etc/passwd "$b"; }
damage "a blob replaced by a symlink" missing_blobs replace_by_link
damage "the stdout blob corrupted" corrupt_blobs flip "$(out_blob)" 30
damage "every blob deleted" missing_blobs rm -rf "$CACHET_DIR/blobs"

damage "path set bodies overwritten" "" index_damage sql "UPDATE pathsets SET body = randomblob(length(body))"
damage "path set bodies truncated" "" index_damage sql "UPDATE pathsets SET body = substr(body, 1, length(body) / 2)"
damage "result bodies overwritten" "" index_damage sql "UPDATE results SET body = randomblob(length(body))"
damage "result bodies truncated" "" index_damage sql "UPDATE results SET body = substr(body, 1, length(body) - 7)"
flip_row_byte() { # flip_row_byte TABLE KEYCOLUMN: one bit in the middle of each body
    python3 - "$CACHET_DIR/index.db" "$1" "$2" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
table, key = sys.argv[2], sys.argv[3]
for k, body in db.execute("SELECT %s, body FROM %s" % (key, table)).fetchall():
    b = bytearray(body)
    b[len(b) // 3] ^= 0x01
    db.execute("UPDATE %s SET body = ? WHERE %s = ?" % (table, key), (bytes(b), k))
db.commit()
EOF
}
damage "one bit flipped in each path set body" "" index_damage flip_row_byte pathsets rowid
damage "one bit flipped in each result body (a path, a mode, the exit status)" "" index_damage flip_row_byte results strong
# Rows gone: a miss, but no error to count; the next store repairs it.
section "path set and result rows deleted"
check_run "rows: before"
index_damage sql "DELETE FROM results"
check_run "rows: results deleted"
expect miss
check_run "rows: after"
expect hit
index_damage sql "DELETE FROM pathsets"
check_run "rows: path sets deleted"
expect miss
check_run "rows: after"
expect hit
detected=$((detected + 2))

# The index file itself.
header() { chmod u+w "$CACHET_DIR/index.db"; printf 'this is no database at all, no no no' |
    dd of="$CACHET_DIR/index.db" conv=notrunc status=none; }
damage "the index file's header overwritten" index_recreated index_damage header
damage "the index file truncated to 1 KB" "" index_damage truncate -s 1024 "$CACHET_DIR/index.db"
section "the index file deleted (its -wal and -shm left)"
check_run "deleted index: before"
index_damage rm -f "$CACHET_DIR/index.db"
check_run "deleted index"
expect miss
check_run "deleted index: after"
expect hit
section "the index file and its -wal and -shm deleted"
index_damage rm -f "$CACHET_DIR"/index.db*
check_run "deleted index files"
expect miss
check_run "deleted index files: after"
expect hit
detected=$((detected + 2))

section "a damaged page that only cachet stats reads"
# The blobs table's root page: a hit never reads it, the counts of `cachet
# stats` do. A random flip lands there now and then; stats must answer all
# the same (from the index, checked and recreated), and runs go on.
check_run "stats-only page: before"
check_run "stats-only page: before"
expect hit
damage_blobs_root() {
    python3 - "$CACHET_DIR/index.db" <<'EOF'
import sqlite3, sys
p = sys.argv[1]
db = sqlite3.connect(p)
root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'blobs'").fetchone()[0]
page = db.execute("PRAGMA page_size").fetchone()[0]
db.close()
b = bytearray(open(p, "rb").read())
b[(root - 1) * page + (100 if root == 1 else 0)] = 0xff  # no b-tree page type
open(p, "wb").write(b)
EOF
}
index_damage damage_blobs_root
check_run "stats-only page"
expect hit
cachet stats --json > "$T/stats.json" || fail "stats failed on a damaged page it reads"
# The index was recreated; the step's memo would still answer (t_memo.sh).
# Without it, one miss stores the step in the new index, where the flips
# below need it.
rm -rf "$CACHET_DIR/memo"
check_run "stats-only page: after stats"
expect miss
check_run "stats-only page: after stats"
expect hit

section "random bytes of the index file flipped, one at a time"
# Each round starts from a good copy of the cache; the run after the flip
# may be a hit (a byte nobody reads, free space) or a miss, but it is never
# wrong, and a later run hits again.
check_run "index flips: before"
check_run "index flips: before"
expect hit
index_damage cp -a "$CACHET_DIR" "$T/good-cache"
rounds=${CACHET_REL_INDEX_FLIPS:-15}
flip_hits=0 flip_misses=0
size=$(stat -c %s "$T/good-cache/index.db")
for i in $(seq "$rounds"); do
    rm -rf "$CACHET_DIR"
    cp -a "$T/good-cache" "$CACHET_DIR"
    rm -rf "$CACHET_DIR/memo"
    off=$(( (RANDOM * 32768 + RANDOM) % size ))
    python3 - "$CACHET_DIR/index.db" "$off" <<'EOF'
import sys
p, off = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read())
b[off] ^= 1 << (off % 8)
open(p, "wb").write(b)
EOF
    check_run "index flip $i at offset $off"
    status_last
    case "$LAST_RESULT" in
        hit) flip_hits=$((flip_hits + 1)) ;;
        miss) flip_misses=$((flip_misses + 1)) ;;
    esac
    cachet stats --json > /dev/null || fail "index flip $i: stats failed"
    # Healed by at most two more runs (a corrupt index found by a query is
    # checked and recreated at the next open).
    check_run "index flip $i: next run"
    status_last
    [ "$LAST_RESULT" = hit ] || check_run "index flip $i: run after next"
    status_last
    [ "$LAST_RESULT" = hit ] || fail "index flip $i at offset $off: not healed ($LAST_RESULT, $LAST_REASON)"
done

section "the counters file damaged"
chmod u+w "$CACHET_DIR/stats"
head -c 7168 /dev/urandom > "$CACHET_DIR/stats"
check_run "garbage counters"
cachet stats --json > /dev/null || fail "stats failed on a garbage counters file"
truncate -s 100 "$CACHET_DIR/stats"
check_run "truncated counters"
cachet stats --json > /dev/null || fail "stats failed on a truncated counters file"

echo "FIGURE corruption.kinds_detected=$detected corruption.index_flip_rounds=$rounds corruption.index_flip_hits=$flip_hits corruption.index_flip_misses=$flip_misses"
check_status_file_format
