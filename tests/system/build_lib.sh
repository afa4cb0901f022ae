# Helpers for the build-system tests (t_build_*.sh): real code bases from
# Debian source packages, built through cachet by their own build systems.
# Sourced after lib.sh:
#
#   source "$(dirname "$0")/lib.sh"
#   source "$(dirname "$0")/build_lib.sh"
#
# Environment:
#   CACHET_TEST_SOURCES  where downloaded and unpacked source packages are kept
#                        between runs (default: $CACHET_TEST_SCRATCH/debian-sources)
#
# The sources come from the Debian mirror through scripts/debian-source.sh
# (which adds a deb-src entry when the machine has none). A download that
# fails fails the test: a build-system test that quietly skipped would prove
# nothing.

CACHET_SOURCE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHET_TEST_SOURCES=${CACHET_TEST_SOURCES:-$CACHET_TEST_SCRATCH/debian-sources}

# debian_source [--skip-patches] PACKAGE: prints the unpacked tree (shared
# between tests and runs: copy it before building or editing in it).
debian_source() {
    local tree
    tree=$("$CACHET_SOURCE_ROOT/scripts/debian-source.sh" "$@" "$CACHET_TEST_SOURCES") ||
        fail "could not fetch the Debian source package ${*: -1} (scripts/debian-source.sh failed; see above)"
    [ -d "$tree" ] || fail "scripts/debian-source.sh printed '$tree', which is no directory"
    echo "$tree"
}

require_tools() {
    local t
    for t in "$@"; do
        command -v "$t" > /dev/null || fail "$t is not installed (scripts/setup-debian.sh installs it)"
    done
}

# new_build: starts counting a build's steps (empties the status file).
new_build() {
    : > "$CACHET_STATUS_FILE"
}

# Prints "hit=H miss=M uncacheable=U" for the steps since new_build.
status_counts() {
    python3 - "$CACHET_STATUS_FILE" <<'EOF'
import json, sys
c = {"hit": 0, "miss": 0, "uncacheable": 0}
for line in open(sys.argv[1]):
    if line.strip():
        c[json.loads(line)["result"]] += 1
print("hit=%(hit)d miss=%(miss)d uncacheable=%(uncacheable)d" % c)
EOF
}

# expect_counts HITS MISSES: the steps since new_build, by result; nothing
# uncacheable.
expect_counts() {
    local got
    got=$(status_counts)
    [ "$got" = "hit=$1 miss=$2 uncacheable=0" ] ||
        fail "expected hit=$1 miss=$2 uncacheable=0 in this build, got $got"
}

# expect_missed PATTERN...: the steps since new_build that did not hit are
# exactly one per PATTERN (a Python regular expression searched for in the
# step's command line, as `cachet log` records it), and no others. Cross-checks
# `cachet log` against the status file.
expect_missed() {
    local n
    n=$(status_count)
    [ "$n" -gt 0 ] || fail "no steps ran through cachet in this build"
    cachet log -n "$n" --json > "$T/log.json" || fail "cachet log failed"
    python3 - "$T/log.json" "$CACHET_STATUS_FILE" "$@" <<'EOF' || fail "the steps that missed are not the expected ones (see above)"
import json, re, sys
log = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
status = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
patterns = sys.argv[3:]
ok = True
if len(log) != len(status):
    print("cachet log shows %d steps, the status file %d" % (len(log), len(status)))
    ok = False
missed = [e["command"] for e in log if e["result"] != "hit"]
n_status = sum(1 for s in status if s["result"] != "hit")
if len(missed) != n_status:
    print("cachet log shows %d steps that did not hit, the status file %d" % (len(missed), n_status))
    ok = False
left = list(missed)
for p in patterns:
    hits = [c for c in left if re.search(p, c)]
    if len(hits) != 1:
        print("expected exactly one missed step matching %r, found %d" % (p, len(hits)))
        ok = False
    for c in hits:
        left.remove(c)
for c in left:
    print("unexpected miss: %s" % c)
    ok = False
if not ok:
    print("steps that missed (%d):" % len(missed))
    for e in log:
        if e["result"] != "hit":
            print("  %s (%s): %s" % (e["result"], e["reason"], e["command"]))
sys.exit(0 if ok else 1)
EOF
}

# assert_same_files DIR_A DIR_B FILE...: each FILE is byte-identical in both.
assert_same_files() {
    local a=$1 b=$2 f
    shift 2
    for f in "$@"; do
        [ -f "$a/$f" ] || fail "$a/$f: missing"
        [ -f "$b/$f" ] || fail "$b/$f: missing"
        cmp -s "$a/$f" "$b/$f" || fail "$f differs between $a and $b"
    done
}

# assert_defines FILE SYMBOL: the object, archive or program defines SYMBOL
# as a function (nm type T).
assert_defines() {
    local syms
    syms=$(nm "$1" 2> /dev/null) || fail "nm $1 failed"
    grep -qE " T $2\$" <<< "$syms" || fail "$1 does not define $2"
}

# timed NAME CMD...: runs CMD, logging its output to $T/NAME.log and its
# wall time; fails with the log's tail when CMD fails.
timed() {
    local name=$1 t0 t1
    shift
    t0=$(date +%s%N)
    if ! "$@" > "$T/$name.log" 2>&1; then
        tail -n 30 "$T/$name.log" >&2
        fail "$name failed: $*"
    fi
    t1=$(date +%s%N)
    echo "$name: $(((t1 - t0) / 1000000)) ms ($(status_counts))"
}
