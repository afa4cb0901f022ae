# The command line: usage errors, exit statuses, help and version, the
# environment switches, -v, the launcher form, masquerading, clear and stats.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

# cli_rc CMD...: runs cachet with stdout/stderr in $T/cli.out and $T/cli.err;
# sets RC.
cli_rc() {
    set +e
    cachet "$@" > "$T/cli.out" 2> "$T/cli.err"
    RC=$?
    set -e
}

expect_usage_error() {
    cli_rc "$@"
    [ "$RC" -eq 2 ] || fail "cachet $* exited $RC, expected 2 (usage error)"
    local lines
    lines=$(wc -l < "$T/cli.err")
    [ "$lines" -eq 1 ] || fail "cachet $*: usage error printed $lines lines on stderr, expected 1: $(cat "$T/cli.err")"
}

section "stats --json fields are integers and count exactly"
S=(sh -c 'echo counted > counted.txt')
run_expect miss "new step" -- "${S[@]}"
run_expect hit "" -- "${S[@]}"
run_expect hit "" -- "${S[@]}"
cachet stats --json > stats.json
python3 - stats.json <<'EOF' || fail "cachet stats --json: $(cat stats.json)"
import json, sys
o = json.load(open(sys.argv[1]))
assert isinstance(o, dict), o
for k in ("hits", "misses", "uncacheable", "errors"):
    assert isinstance(o.get(k), int) and not isinstance(o.get(k), bool), "%s: %r" % (k, o.get(k))
for k in ("entries", "bytes", "time_saved_ms"):
    if k in o:
        assert isinstance(o[k], int) and not isinstance(o[k], bool), "%s: %r" % (k, o[k])
assert o["hits"] == 2, o
assert o["misses"] == 1, o
assert o["uncacheable"] == 0, o
assert o["errors"] == 0, o
if "entries" in o:
    assert o["entries"] == 1, o
EOF
cli_rc stats
[ "$RC" -eq 0 ] || fail "cachet stats exited $RC"
[ -s "$T/cli.out" ] || fail "cachet stats printed nothing"

section "usage errors: exit 2, one line"
expect_usage_error --no-such-option
expect_usage_error run --no-such-option -- true
expect_usage_error run
expect_usage_error run --
expect_usage_error run -v

section "command not found: 127; not executable: 126"
cli_rc run -- ./no-such-command
[ "$RC" -eq 127 ] || fail "cachet run -- ./no-such-command exited $RC, expected 127"
cli_rc run -- no-such-command-on-path-xyz
[ "$RC" -eq 127 ] || fail "cachet run -- no-such-command-on-path-xyz exited $RC, expected 127"
echo 'echo hi' > not-executable.sh
chmod 644 not-executable.sh
cli_rc run -- ./not-executable.sh
[ "$RC" -eq 126 ] || fail "cachet run -- ./not-executable.sh exited $RC, expected 126"
mkdir a-directory
cli_rc run -- ./a-directory
[ "$RC" -eq 126 ] || fail "cachet run -- ./a-directory exited $RC, expected 126"

section "exit statuses pass through"
cli_rc run -- false
[ "$RC" -eq 1 ] || fail "cachet run -- false exited $RC"
cli_rc run -- sh -c 'exit 42'
[ "$RC" -eq 42 ] || fail "cachet run -- sh -c 'exit 42' exited $RC"

section "--version, --help, help run"
cli_rc --version
[ "$RC" -eq 0 ] || fail "cachet --version exited $RC"
grep -q '[0-9]\+\.[0-9]\+' "$T/cli.out" || fail "cachet --version printed no version: $(cat "$T/cli.out")"
cli_rc --help
[ "$RC" -eq 0 ] || fail "cachet --help exited $RC"
grep -q 'run' "$T/cli.out" || fail "cachet --help does not mention run"
grep -q 'stats' "$T/cli.out" || fail "cachet --help does not mention stats"
cli_rc help run
[ "$RC" -eq 0 ] || fail "cachet help run exited $RC"
grep -q 'CACHET_' "$T/cli.out" "$T/cli.err" || grep -q -- '-v' "$T/cli.out" ||
    fail "cachet help run says nothing about its options: $(cat "$T/cli.out")"
cli_rc help no-such-subcommand
[ "$RC" -eq 2 ] || fail "cachet help no-such-subcommand exited $RC, expected 2"

section "-v and CACHET_VERBOSE=1: one line at the start of stderr"
S=(sh -c 'echo verbose > verbose.txt; printf step-stderr >&2')
set +e
cachet run -v -- "${S[@]}" 2> v1.err
set -e
# On a miss the line may follow the step's output (the reason can be known
# only at the end), but it starts a line of its own.
# Each line names the step (with make -j8, bare "hit" lines say nothing).
N="sh -c 'echo verbose > verbose.txt; printf step-stderr >&2'"
grep -qxF "cachet: miss $N (new step)" v1.err || fail "-v on a miss printed: $(cat v1.err)"
[ "$(grep -c '^cachet:' v1.err)" -eq 1 ] || fail "-v printed more than one line: $(cat v1.err)"
grep -q 'step-stderr' v1.err || fail "-v lost the step's stderr"
cachet run -v -- "${S[@]}" 2> v2.err
printf 'cachet: hit %s\nstep-stderr' "$N" > v2.want
assert_same v2.err v2.want
CACHET_VERBOSE=1 cachet run -- "${S[@]}" 2> v3.err
assert_same v3.err v2.want
echo changed > verbose-input.txt
S2=(sh -c 'cat verbose-input.txt > verbose2.txt')
CACHET_VERBOSE=1 cachet run -- "${S2[@]}" 2> /dev/null
echo changed-again > verbose-input.txt
CACHET_VERBOSE=1 cachet run -- "${S2[@]}" 2> v4.err
[ "$(cat v4.err)" = "cachet: miss sh -c 'cat verbose-input.txt > verbose2.txt' (inputs changed)" ] || fail "verbose miss after an edit printed: $(cat v4.err)"
set +e
CACHET_VERBOSE=1 cachet run -- sh -c 'exit 5' 2> v5.err
set -e
[ "$(cat v5.err)" = "cachet: miss sh -c 'exit 5' (command failed (not stored))" ] || fail "verbose failed step printed: $(cat v5.err)"
# Without -v, a hit prints nothing of cachet's own.
cachet run -- "${S[@]}" 2> v6.err
[ "$(cat v6.err)" = step-stderr ] || fail "a quiet hit printed on stderr: $(cat v6.err)"

section "a status file whose last line was cut (cachet killed in its write): the next line stands alone"
SF="$T/cut-status.jsonl"
printf '{"result": "miss", "reason": "new st' > "$SF"
CACHET_STATUS_FILE="$SF" cachet run -- "${S[@]}" 2> /dev/null
[ "$(sed -n 2p "$SF" | cut -c1-11)" = '{"result": ' ] || fail "the line after a cut one: $(cat "$SF")"
[ "$(wc -l < "$SF")" -eq 2 ] || fail "expected the cut line and one whole line: $(cat "$SF")"
CACHET_STATUS_FILE="$SF" cachet run -- "${S[@]}" 2> /dev/null
[ "$(wc -l < "$SF")" -eq 3 ] || fail "a whole last line got a newline before the next: $(cat "$SF")"

section "launcher form: cachet CMD ARGS, same step as cachet run -- CMD ARGS"
printf 'const char tag[] = "LAUNCH_END";\n' > l.c
before=$(status_count)
cachet gcc -c l.c -o l.o
[ "$(status_count)" -eq $((before + 1)) ] || fail "launcher form wrote no status line"
expect miss "new step"
assert_contains_bytes l.o LAUNCH_END
rm l.o
run_expect hit "" -- gcc -c l.c -o l.o
assert_contains_bytes l.o LAUNCH_END
rm l.o
cachet gcc -c l.c -o l.o
expect hit
# Anything containing '/' is a command, even if it looks like a subcommand.
mkdir -p sub
printf '#!/bin/sh\necho i-am-sub-stats\n' > sub/stats
chmod +x sub/stats
[ "$(cachet sub/stats)" = i-am-sub-stats ] || fail "cachet sub/stats did not run the script"
# Option parsing stops at the first non-option.
[ "$(cachet run sh -c 'echo no-dashdash')" = no-dashdash ] || fail "cachet run sh -c ... without -- failed"

section "masquerade: a symlink named gcc runs the next gcc on PATH"
mkdir mask1 mask2
ln -s "$CACHET_BIN" mask1/gcc
ln -s "$CACHET_BIN" mask2/gcc
printf 'const char tag[] = "MASK_END";\n' > m.c
MPATH="$W/mask1:$W/mask2:$PATH"
before=$(status_count)
PATH=$MPATH timeout 120 gcc -c m.c -o m.o || fail "masqueraded gcc failed"
[ "$(status_count)" -eq $((before + 1)) ] || fail "masqueraded gcc wrote no status line"
expect miss "new step"
assert_contains_bytes m.o MASK_END
rm m.o
PATH=$MPATH timeout 120 gcc -c m.c -o m.o
[ "$(status_count)" -eq $((before + 2)) ] || fail "second masqueraded gcc wrote no status line"
expect hit
assert_contains_bytes m.o MASK_END
PATH=$MPATH timeout 120 gcc --version > mask-version.out
grep -qi 'gcc' mask-version.out || fail "masqueraded gcc --version: $(cat mask-version.out)"

section "masquerade: started by a relative name, cachet still skips itself on PATH"
# The name it was executed by is how it knows its own file (run.c).
rm m.o
PATH=$MPATH timeout 120 ./mask2/gcc -c m.c -o m.o || fail "gcc started as ./mask2/gcc failed"
expect hit
assert_contains_bytes m.o MASK_END

section "CACHET_DISABLE=1 runs the command untouched"
S=(sh -c 'date +%s%N > stamp.txt')
run_expect miss "new step" -- "${S[@]}"
first=$(cat stamp.txt)
run_expect hit "" -- "${S[@]}"
[ "$(cat stamp.txt)" = "$first" ] || fail "a hit did not restore stamp.txt"
before=$(status_count)
CACHET_DISABLE=1 cachet run -- "${S[@]}"
[ "$(cat stamp.txt)" != "$first" ] || fail "CACHET_DISABLE=1 did not run the command"
CACHET_DISABLE=1 cachet run -- sh -c 'exit 7' || [ $? -eq 7 ] || fail "CACHET_DISABLE=1 changed an exit status"
run_expect hit "" -- "${S[@]}"
[ "$(cat stamp.txt)" = "$first" ] || fail "CACHET_DISABLE=1 changed the stored result"

section "CACHET_RECACHE=1 runs and overwrites the stored result"
CACHET_RECACHE=1 cachet run -- "${S[@]}"
second=$(cat stamp.txt)
[ "$second" != "$first" ] || fail "CACHET_RECACHE=1 did not run the command"
# Said as what it was, not as a step never seen.
expect miss recache
cachet stats --json | python3 -c 'import json,sys; r=json.load(sys.stdin)["miss_reasons"]; sys.exit(0 if r.get("recache") == 1 else 1)' ||
    fail "stats --json does not count the recache as one 'recache' miss: $(cachet stats --json)"
rm stamp.txt
run_expect hit "" -- "${S[@]}"
[ "$(cat stamp.txt)" = "$second" ] || fail "after CACHET_RECACHE=1 a hit restored $(cat stamp.txt), expected $second"

section "the default cache directory is under XDG_CACHE_HOME"
(
    unset CACHET_DIR
    export XDG_CACHE_HOME="$T/xdg"
    cachet run -- sh -c 'echo xdg > xdg.txt'
)
[ -d "$T/xdg/cachet" ] || fail "without CACHET_DIR nothing was created in \$XDG_CACHE_HOME/cachet"

section "cachet clear empties the cache"
cli_rc clear
[ "$RC" -eq 0 ] || fail "cachet clear exited $RC"
run_expect miss "new step" -- "${S[@]}"
run_expect hit "" -- "${S[@]}"
cachet clear
e=$(stats_field entries 2>/dev/null || echo 0)
[ "$e" -eq 0 ] || fail "stats: entries = $e after clear"
run_expect miss "new step" -- gcc -c l.c -o l.o

check_status_file_format
