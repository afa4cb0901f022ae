# Shared helpers for cachet's system tests. Sourced by every tests/system/t_*.sh:
#
#   source "$(dirname "$0")/lib.sh"
#
# Environment (set by tests/CMakeLists.txt, or by hand):
#   CACHET_BIN           the cachet executable under test (required)
#   CACHET_TEST_SCRATCH  where each test makes its private temp dir
#                        (default: ${TMPDIR:-/tmp}/cachet-system-tests)
#   CACHET_TEST_KEEP=1   keep the temp dir even when the test passes
#
# Each test gets its own directory $T with its own cache ($CACHET_DIR) and its
# own status file ($CACHET_STATUS_FILE), so tests can run in parallel. On
# success $T is removed; on failure it is kept and its path printed.
#
# Assertions read the JSON lines cachet appends to $CACHET_STATUS_FILE, never
# cachet's stderr (except in the test of -v itself).

set -euo pipefail

if [ -z "${CACHET_BIN:-}" ]; then
    echo "lib.sh: CACHET_BIN is not set (path to the cachet executable)" >&2
    exit 1
fi
CACHET_BIN=$(realpath "$CACHET_BIN")
if [ ! -x "$CACHET_BIN" ]; then
    echo "lib.sh: CACHET_BIN=$CACHET_BIN is not an executable" >&2
    exit 1
fi
export CACHET_BIN

TEST_NAME=$(basename "$0" .sh)
CACHET_TEST_SCRATCH=${CACHET_TEST_SCRATCH:-${TMPDIR:-/tmp}/cachet-system-tests}
mkdir -p "$CACHET_TEST_SCRATCH"
T=$(mktemp -d "$CACHET_TEST_SCRATCH/$TEST_NAME.XXXXXX")
T=$(realpath "$T")

export CACHET_DIR="$T/cache"
export CACHET_STATUS_FILE="$T/status.jsonl"
: > "$CACHET_STATUS_FILE"
# The tests decide these per call; an outer value must not leak in.
unset CACHET_DISABLE CACHET_RECACHE CACHET_VERBOSE
unset PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX
export LC_ALL=C
# A test's steps never read the terminal or ctest's stdin; stdin tests set it
# explicitly.
exec </dev/null

# Seconds one cachet call may take before the test reports it as hung.
CACHET_CALL_TIMEOUT=${CACHET_CALL_TIMEOUT:-240}

_lib_background_pids=()

_lib_on_exit() {
    local rc=$?
    local pid
    for pid in "${_lib_background_pids[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if { [ "$rc" -eq 0 ] || [ -n "${CACHET_TEST_SKIPPED:-}" ]; } && [ -z "${CACHET_TEST_KEEP:-}" ]; then
        chmod -R u+w "$T" 2>/dev/null || true
        rm -rf "$T"
        [ -n "${CACHET_TEST_SKIPPED:-}" ] || echo "PASS: $TEST_NAME"
    else
        echo "$TEST_NAME: exit status $rc; files kept in $T" >&2
        if [ -s "$CACHET_STATUS_FILE" ]; then
            echo "last status lines:" >&2
            tail -n 5 "$CACHET_STATUS_FILE" >&2
        fi
    fi
}
trap _lib_on_exit EXIT

# Remembers a background pid so that the exit trap ends it.
track_pid() {
    _lib_background_pids+=("$1")
}

fail() {
    # The line of the test script's top-level command that failed (helpers
    # in lib.sh call fail from deeper frames).
    local n=${#BASH_LINENO[@]}
    local line=${BASH_LINENO[$((n - 2))]:-${BASH_LINENO[0]}}
    echo "FAIL: $TEST_NAME (line $line): $*" >&2
    exit 1
}

# Ends the test as skipped (CTest counts exit status 77 as skipped, not
# passed: tests/CMakeLists.txt sets SKIP_RETURN_CODE): for a tool or a
# permission this machine lacks. Nothing is cleaned as for a pass.
skip() {
    echo "SKIP: $TEST_NAME: $*"
    CACHET_TEST_SKIPPED=1
    exit 77
}

# Prints a section heading in the test log.
section() {
    echo "--- $TEST_NAME: $*"
}

# cachet with a hang guard. Usable with a prefix env assignment
# (`CACHET_DISABLE=1 cachet run -- ...`): bash exports it to the child.
cachet() {
    timeout -k 10 "$CACHET_CALL_TIMEOUT" "$CACHET_BIN" "$@"
}

# ---- the status file -----------------------------------------------------

# Complete status lines: a cachet killed while it wrote leaves part of one
# (see check_status_file_format), which is not a line of a run.
status_count() {
    grep -c '}$' "$CACHET_STATUS_FILE" || true
}

# Prints field $1 of status line number $2 (1-based; default: the last one).
status_field() {
    python3 - "$CACHET_STATUS_FILE" "$1" "${2:-0}" <<'EOF'
import json, sys
path, field, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [l for l in open(path, encoding="utf-8", errors="replace").read().splitlines() if l.strip()]
if not lines:
    sys.exit("status file is empty")
line = lines[n - 1] if n > 0 else lines[-1]
try:
    obj = json.loads(line)
except ValueError as e:
    sys.exit("status line is not JSON: %r (%s)" % (line, e))
v = obj.get(field)
print("" if v is None else v)
EOF
}

last_result() { status_field result; }
last_reason() { status_field reason; }

# Sets LAST_RESULT and LAST_REASON from the last status line without
# starting python: for loops of hundreds of steps. (Reasons with quotes or
# escapes come back escaped as in the JSON.)
status_last() {
    local line
    line=$(tail -n 1 "$CACHET_STATUS_FILE")
    LAST_RESULT=${line#*\"result\": \"}
    LAST_RESULT=${LAST_RESULT%%\"*}
    LAST_REASON=${line#*\"reason\": }
    LAST_REASON=${LAST_REASON%%, \"duration_ms\"*}
    LAST_REASON=${LAST_REASON#\"}
    LAST_REASON=${LAST_REASON%\"}
}

# Checks that every line of the status file is a JSON object with the
# specified fields and types. With "killed": the test SIGKILLed cachet,
# which the kernel may stop in the middle of its write (at a page boundary
# of the file): a line cut there is allowed, never one that runs on into
# the next.
check_status_file_format() {
    python3 - "$CACHET_STATUS_FILE" "${1:-}" <<'EOF' || fail "malformed status file $CACHET_STATUS_FILE"
import json, sys
killed = sys.argv[2] == "killed"
for i, line in enumerate(open(sys.argv[1]).read().splitlines(), 1):
    if killed and line.startswith('{"result": ') and not line.endswith("}") and line.count('{"result": ') == 1:
        continue
    o = json.loads(line)
    assert isinstance(o, dict), "line %d is not an object" % i
    assert o.get("result") in ("hit", "miss", "uncacheable"), "line %d: result %r" % (i, o.get("result"))
    r = o.get("reason")
    # a plain hit has no reason; a remote or verified hit says which
    assert isinstance(r, str) or (r is None and o["result"] == "hit"), "line %d: reason %r" % (i, r)
    d = o.get("duration_ms")
    assert isinstance(d, int) and not isinstance(d, bool) and d >= 0, "line %d: duration_ms %r" % (i, d)
    # a traced run's cost: all three, counts
    costs = [o.get(k) for k in ("stops", "exit_stops", "preload_calls")]
    assert costs == [None] * 3 or all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in costs), \
        "line %d: stops, exit_stops, preload_calls %r" % (i, costs)
EOF
}

# ---- running steps -------------------------------------------------------

# step CMD...: runs `cachet run -- CMD...` and sets RC to its exit status.
# Fails unless exactly one status line was appended.
step() {
    local before after
    before=$(status_count)
    set +e
    cachet run -- "$@"
    RC=$?
    set -e
    [ "$RC" -ne 124 ] || fail "cachet run -- $* timed out after ${CACHET_CALL_TIMEOUT}s"
    after=$(status_count)
    [ "$after" -eq $((before + 1)) ] ||
        fail "cachet run -- $* appended $((after - before)) status lines, expected 1 (exit status $RC)"
}

# expect RESULT [REASON]: the last step's result, and its reason if given
# (exact match; for "uncacheable" use expect_reason_contains).
expect() {
    local got reason
    got=$(last_result)
    reason=$(last_reason)
    [ "$got" = "$1" ] || fail "expected result '$1', got '$got' (reason: '$reason')"
    if [ $# -ge 2 ] && [ -n "$2" ]; then
        [ "$reason" = "$2" ] || fail "expected reason '$2', got '$reason' (result: $got)"
    fi
}

expect_reason_contains() {
    local reason
    reason=$(last_reason)
    case "$reason" in
        *"$1"*) ;;
        *) fail "expected a reason containing '$1', got '$reason'" ;;
    esac
}

# expect_rc N: the last step's exit status.
expect_rc() {
    [ "$RC" -eq "$1" ] || fail "expected exit status $1, got $RC"
}

# run_expect RESULT REASON -- CMD...: a successful step (exit 0) with that
# result; REASON "" means any reason.
run_expect() {
    local result=$1 reason=$2
    shift 2
    [ "${1:-}" = "--" ] && shift
    step "$@"
    [ "$RC" -eq 0 ] || fail "cachet run -- $* exited $RC, expected 0"
    expect "$result" "$reason"
}

# ---- file assertions -----------------------------------------------------

# assert_content FILE TEXT: FILE holds exactly TEXT (trailing newlines of the
# file are ignored, as by $(cat)).
assert_content() {
    [ -f "$1" ] || fail "$1: missing (expected content '$2')"
    local got
    got=$(cat "$1")
    [ "$got" = "$2" ] || fail "$1: expected content '$2', got '$got'"
}

assert_same() {
    cmp -s "$1" "$2" || fail "$1 and $2 differ"
}

assert_differ() {
    ! cmp -s "$1" "$2" || fail "$1 and $2 are identical, expected them to differ"
}

assert_exists() { [ -e "$1" ] || [ -L "$1" ] || fail "$1: expected to exist"; }
assert_absent() { [ ! -e "$1" ] && [ ! -L "$1" ] || fail "$1: expected to be absent"; }

# assert_contains_bytes FILE STRING: the (binary) file contains STRING.
assert_contains_bytes() {
    grep -aqF -- "$2" "$1" || fail "$1 does not contain '$2'"
}
assert_lacks_bytes() {
    ! grep -aqF -- "$2" "$1" || fail "$1 still contains '$2'"
}

# Sets $2's mtime back to that of $1 (the saved copy).
restore_mtime() { touch -r "$1" "$2"; }

# Prints a JSON integer field of `cachet stats --json`.
stats_field() {
    cachet stats --json | python3 -c '
import json, sys
o = json.load(sys.stdin)
v = o[sys.argv[1]]
assert isinstance(v, int) and not isinstance(v, bool), "%s is not an integer: %r" % (sys.argv[1], v)
print(v)' "$1"
}

# Named counters from the counters file (what `stats --json` totals), one
# per argument, on one line.
counters() {
    python3 - "$CACHET_DIR/stats" "$@" <<'EOF'
import struct, sys
data = open(sys.argv[1], "rb").read()
found = {}
for i in range(len(data) // 56):
    name, value = struct.unpack_from("<48sq", data, i * 56)
    found[name.split(b"\0")[0].decode(errors="replace")] = value
print(" ".join(str(found.get(n, 0)) for n in sys.argv[2:]))
EOF
}

# A directory inside $T for the test's work; prints its path.
workdir() {
    local d="$T/${1:-work}"
    mkdir -p "$d"
    echo "$d"
}

# ---- the whole resulting tree --------------------------------------------

# tree_state DIR: one line per entry beneath DIR (sorted, DIR itself
# excluded): path, type, mode, link count, owner, extended attributes, and
# the content's digest or the symlink's target. Times are left out: a hit
# sets them to now where the step did not choose them. Two trees that a
# step left alike print the same.
tree_state() {
    python3 - "$1" <<'EOF_TREE'
import hashlib, os, stat, sys
top = sys.argv[1]
lines = []
for root, dirs, files in os.walk(top):
    for n in dirs + files:
        p = os.path.join(root, n)
        st = os.lstat(p)
        try:
            xattrs = sorted((a, os.getxattr(p, a, follow_symlinks=False).hex())
                            for a in os.listxattr(p, follow_symlinks=False))
        except OSError:
            xattrs = []
        if stat.S_ISLNK(st.st_mode):
            what = "-> " + os.readlink(p)
        elif stat.S_ISREG(st.st_mode):
            what = hashlib.sha256(open(p, "rb").read()).hexdigest()[:16]
        else:
            what = ""
        nlink = "" if stat.S_ISDIR(st.st_mode) else st.st_nlink
        lines.append("%s %s %o %s %d:%d %s %s" % (os.path.relpath(p, top), stat.filemode(st.st_mode)[0],
                     stat.S_IMODE(st.st_mode), nlink, st.st_uid, st.st_gid,
                     ",".join("%s=%s" % x for x in xattrs), what))
print("\n".join(sorted(lines)))
EOF_TREE
}

# assert_same_tree NAME EXPECTED ACTUAL: two tree_state outputs agree.
assert_same_tree() {
    [ "$2" = "$3" ] || fail "$1: the tree differs from the plain run's:
$(diff <(echo "$2") <(echo "$3") || true)"
}

# plain_and_cached SETUP CMD...: runs CMD plainly, through cachet (a miss)
# and again (expected a hit), each in $PWD made afresh by the shell code
# SETUP (run in an emptied $PWD); compares exit status, stdout, stderr and
# the whole tree (tree_state) of the cached runs with the plain run's.
# Leaves the hit's tree in place; sets RC.
plain_and_cached() {
    local setup=$1
    shift
    local dir=$PWD plain_rc plain_tree plain_out plain_err pass
    find "$dir" -mindepth 1 -delete
    eval "$setup"
    set +e
    "$@" > "$T/plain.out" 2> "$T/plain.err"
    plain_rc=$?
    set -e
    plain_tree=$(tree_state "$dir")
    for pass in miss hit; do
        find "$dir" -mindepth 1 -delete
        eval "$setup"
        step "$@" > "$T/cached.out" 2> "$T/cached.err"
        [ "$RC" -eq "$plain_rc" ] || fail "$pass of $*: exit status $RC, plainly $plain_rc"
        cmp -s "$T/plain.out" "$T/cached.out" || fail "$pass of $*: stdout differs"
        cmp -s "$T/plain.err" "$T/cached.err" || fail "$pass of $*: stderr differs"
        assert_same_tree "$pass of $*" "$plain_tree" "$(tree_state "$dir")"
        expect "$pass"
    done
}
