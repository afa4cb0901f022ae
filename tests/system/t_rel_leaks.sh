# Leaks: every subcommand on the paths a build takes (a miss, a hit, an
# uncacheable step, a failed command, a corrupt entry) and the inspection
# commands, with a leak checker watching cachet:
#  - in the ASan build, LeakSanitizer (ASAN_OPTIONS=detect_leaks=1);
#  - in the normal build, Valgrind's memcheck on everything but a traced run
#    (Valgrind does not implement seccomp(2), so under it a miss runs
#    uncached: that path is checked too).
# A definite or indirect leak, or any memory error, fails the test.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

if readelf -d "$CACHET_BIN" 2> /dev/null | grep -q "libasan"; then
    MODE=lsan
elif command -v valgrind > /dev/null; then
    MODE=valgrind
else
    skip "neither an ASan build nor valgrind"
fi
echo "leak checker: $MODE"
# A statically linked cachet hands Valgrind no malloc to replace: its
# dynamic twin (the same sources) is the one checked, calling itself for
# what it hands over.
LEAK_BIN=$CACHET_BIN
TWIN=$(dirname "$CACHET_BIN")/cachet-dynamic
if [ "$MODE" = valgrind ] && ! readelf -d "$CACHET_BIN" 2> /dev/null | grep -q NEEDED; then
    [ -x "$TWIN" ] || fail "cachet is linked statically and $TWIN is missing"
    LEAK_BIN=$TWIN
fi
echo "checked binary: $LEAK_BIN"
checked=0

# checked_cachet ARGS...: cachet under the leak checker; its exit status in
# RC; fails on a leak report.
checked_cachet() {
    local log="$T/leak.$checked"
    set +e
    if [ "$MODE" = lsan ]; then
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 LSAN_OPTIONS=exitcode=23 \
            timeout -k 10 "$CACHET_CALL_TIMEOUT" "$CACHET_BIN" "$@" 2> "$log"
    else
        timeout -k 10 "$CACHET_CALL_TIMEOUT" valgrind -q --leak-check=full \
            --errors-for-leak-kinds=definite,indirect --error-exitcode=23 \
            --trace-children=no --child-silent-after-fork=yes "$LEAK_BIN" "$@" 2> "$log"
    fi
    RC=$?
    set -e
    if [ "$RC" -eq 23 ] || grep -qE 'LeakSanitizer|definitely lost|indirectly lost|Invalid (read|write)' "$log"; then
        cat "$log" >&2
        fail "leak or memory error in: cachet $*"
    fi
    checked=$((checked + 1))
}

# Valgrind costs seconds per call: under it, the calls that only repeat a
# path already checked are skipped.
also() { [ "$MODE" = valgrind ] || checked_cachet "$@"; }

printf 'int f(int x) { return x + 1; }\n' > a.c
printf 'int f(int x) { return x + 2; }\n' > b.c

section "run: a miss, a hit, a hit after the outputs went"
checked_cachet run -- gcc -c a.c -o a.o
# Under Valgrind that miss ran uncached (no seccomp): store it for real.
[ "$MODE" = lsan ] || cachet run -- gcc -c a.c -o a.o
[ "$RC" -eq 0 ] || fail "miss: exit $RC"
checked_cachet run -- gcc -c a.c -o a.o
[ "$RC" -eq 0 ] || fail "hit: exit $RC"
rm a.o
checked_cachet run -v -- gcc -c a.c -o a.o
[ -f a.o ] || fail "the hit did not restore a.o"

section "run: uncacheable, failing, not found, verify, corrupt entry"
# stdin a pipe (uncacheable: reads stdin stream). Through a process
# substitution, not `printf | also ...`: under Valgrind `also` returns at
# once, and printf, writing to a pipe nobody reads, died of SIGPIPE, which
# pipefail and set -e made the test's exit status (141).
also run -- cat < <(printf 'x\n') > /dev/null
also run -- sh -c 'exit 3'
[ "$MODE" = valgrind ] || [ "$RC" -eq 3 ] || fail "a failing command: exit $RC"
also run -- no-such-command-here
[ "$MODE" = valgrind ] || [ "$RC" -eq 127 ] || fail "command not found: exit $RC"
also run --verify -- gcc -c a.c -o a.o
python3 - "$CACHET_DIR/index.db" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE results SET body = randomblob(length(body))")
db.commit()
EOF
checked_cachet run -- gcc -c a.c -o a.o

section "inspection and maintenance commands"
gcc -c b.c -o b.o
also stats
checked_cachet stats --json
checked_cachet log
checked_cachet show a.o
checked_cachet explain gcc -c a.c -o a.o
also explain gcc -c b.c -o b.o
checked_cachet diff a.o b.o
also diff a.c b.c
also config > /dev/null
also help > /dev/null
if "$CACHET_BIN" help 2>&1 | grep -qw gc; then
    also gc
fi
checked_cachet clear
checked_cachet run -- gcc -c a.c -o a.o
echo "FIGURE leaks.commands_checked=$checked leaks.checker=$MODE"
