# Resource exhaustion: the cache directory on a full disk (a small tmpfs, in a
# private mount namespace; not RLIMIT_FSIZE, which the step would inherit)
# and on a read-only mount. The command still runs and succeeds with its own
# outputs, nothing half-written is left in the cache, and cachet says so
# once, clearly.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2> /dev/null; then
    skip "needs root and mount namespaces"
fi

# A process that holds a private mount namespace; cachet runs inside it.
unshare -m --propagation private sleep 3600 &
HOLDER=$!
track_pid "$HOLDER"
sleep 0.2
in_ns() { nsenter -t "$HOLDER" -m --wd="$PWD" -- "$@"; }

# nsrun EXPECTED_RESULT CMD...: `cachet run -- CMD` inside the namespace;
# its stderr goes to err.txt; exit status must be 0.
nsrun() {
    local want=$1 before
    shift
    before=$(status_count)
    set +e
    in_ns timeout -k 10 "$CACHET_CALL_TIMEOUT" "$CACHET_BIN" run -- "$@" 2> err.txt
    RC=$?
    set -e
    [ "$RC" -eq 0 ] || { cat err.txt >&2; fail "cachet run -- $* exited $RC"; }
    [ "$(status_count)" -eq $((before + 1)) ] || fail "cachet run -- $*: no status line"
    status_last
    [ -z "$want" ] || [ "$LAST_RESULT" = "$want" ] ||
        fail "cachet run -- $*: $LAST_RESULT ($LAST_REASON), expected $want"
}
# Exactly one line of warning from cachet, containing $1.
expect_one_warning() {
    local n
    n=$(grep -c '^cachet: ' err.txt || true)
    [ "$n" -eq 1 ] || { cat err.txt >&2; fail "expected one cachet warning, got $n"; }
    grep -q -- "$1" err.txt || { cat err.txt >&2; fail "the warning does not say '$1'"; }
}
expect_no_warning() {
    ! grep -q '^cachet: ' err.txt || { cat err.txt >&2; fail "unexpected cachet warning"; }
}

# Every blob file is whole: raw ones hash to their names, .zst ones pass
# zstd's own check, and tmp/ holds nothing.
check_nothing_half_written() {
    local what=$1
    in_ns python3 - "$CACHET_DIR" <<'EOF' || fail "$what: a damaged file in the cache"
import hashlib, os, subprocess, sys
root = sys.argv[1]
left = os.listdir(os.path.join(root, "tmp"))
assert not left, "tmp/ holds %r" % left
n = 0
for d, _, files in os.walk(os.path.join(root, "blobs")):
    for f in files:
        p = os.path.join(d, f)
        if f.endswith(".zst"):
            r = subprocess.run(["zstd", "-q", "-t", p], capture_output=True)
            assert r.returncode == 0, "%s: %s" % (p, r.stderr)
            out = subprocess.run(["zstd", "-q", "-d", "-c", p], capture_output=True).stdout
            assert hashlib.sha256(out).hexdigest() == f[:-4], p
        else:
            assert hashlib.sha256(open(p, "rb").read()).hexdigest() == f, p
        n += 1
import sqlite3
db = sqlite3.connect("file:%s/index.db?mode=ro" % root, uri=True)
assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
print("%d blob files, all whole" % n)
EOF
}

section "a full disk: the cache on a 512 KB tmpfs"
export CACHET_DIR="$T/full-cache"
mkdir -p "$CACHET_DIR"
in_ns mount -t tmpfs -o size=512k tmpfs "$CACHET_DIR"
echo "small input" > small.txt
nsrun miss cp small.txt small.out
nsrun hit cp small.txt small.out
expect_no_warning

section "a step whose outputs do not fit"
head -c 2000000 /dev/urandom > big.bin
nsrun miss cp big.bin big.out
cmp -s big.bin big.out || fail "big.out differs from its source"
expect_one_warning "No space left on device"
check_nothing_half_written "after the big step"
rm big.out
nsrun miss cp big.bin big.out
cmp -s big.bin big.out || fail "big.out differs on the second run"
expect_one_warning "not cached"

section "a disk with no space at all"
in_ns sh -c "dd if=/dev/zero of='$CACHET_DIR/filler' bs=4k 2> /dev/null || true"
echo "other input" > other.txt
nsrun miss cp other.txt other.out
assert_content other.out "other input"
expect_one_warning "not cached"
# A step with much output on stdout and stderr (blobs too).
nsrun miss sh -c 'seq 1 100000; seq 1 50000 >&2' > seq.out
[ "$(wc -l < seq.out)" -eq 100000 ] || fail "stdout of the step on a full disk is incomplete"
expect_one_warning "not cached"
# What was stored before the disk filled is still served.
rm small.out
nsrun hit cp small.txt small.out
assert_content small.out "small input"
expect_no_warning
check_nothing_half_written "with the disk full"
in_ns "$CACHET_BIN" stats --json > stats.json || fail "stats failed on a full disk"
in_ns "$CACHET_BIN" log > /dev/null || fail "cachet log failed on a full disk"
errors=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["errors"])' stats.json)
[ "$errors" -ge 4 ] || fail "stats: errors = $errors, expected the failed stores counted"

section "space again: storing resumes"
in_ns rm -f "$CACHET_DIR/filler"
nsrun miss cp other.txt other.out
expect_no_warning
nsrun hit cp other.txt other.out
in_ns "$CACHET_BIN" log > log.txt || fail "cachet log failed"
in_ns umount "$CACHET_DIR"

section "a read-only cache directory (read-only bind mount)"
export CACHET_DIR="$T/ro-cache"
echo "ro input" > ro.txt
nsrun miss cp ro.txt ro.out
nsrun hit cp ro.txt ro.out
in_ns mount --bind "$CACHET_DIR" "$CACHET_DIR"
in_ns mount -o remount,bind,ro "$CACHET_DIR"
! in_ns touch "$CACHET_DIR/probe" 2> /dev/null || fail "test setup: the bind mount is writable"
before=$(in_ns find "$CACHET_DIR" -printf '%p %s %T@\n' | sort)
rm ro.out
nsrun hit cp ro.txt ro.out
assert_content ro.out "ro input"
expect_no_warning
echo "new input" > new.txt
nsrun miss cp new.txt new.out
assert_content new.out "new input"
expect_one_warning "not writable"
nsrun miss cp new.txt new.out
in_ns "$CACHET_BIN" stats --json > /dev/null || fail "stats failed on a read-only cache"
after=$(in_ns find "$CACHET_DIR" -printf '%p %s %T@\n' | sort)
[ "$before" = "$after" ] || fail "the read-only cache directory changed"
# read_only = true by choice: no warning.
CACHET_READ_ONLY=1 nsrun miss cp new.txt new.out
expect_no_warning
in_ns umount "$CACHET_DIR"
echo "FIGURE resources.full_disk_steps=6 resources.read_only_steps=4"
