#!/usr/bin/env bash
# An option given without its value says which value is missing, not
# "unknown option", in every subcommand that takes one; exit 2, one line,
# and nothing done (the cache keeps its entries).
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
export HOME="$W/home" XDG_CONFIG_HOME="$W/home/.config"
mkdir -p "$HOME"

cachet run -- sh -c 'echo kept > made'
expect miss

# missing OPT ARGS...: `cachet ARGS...` exits 2 with one line saying OPT needs
# something, and touches nothing.
missing() {
    local opt=$1
    shift
    local rc=0
    cachet "$@" > out.txt 2> err.txt || rc=$?
    [ "$rc" -eq 2 ] || fail "cachet $*: exit $rc, expected 2"
    [ "$(wc -l < err.txt)" -eq 1 ] || fail "cachet $*: not one line: $(cat err.txt)"
    grep -qF -- "$opt needs" err.txt || fail "cachet $*: does not say $opt needs a value: $(cat err.txt)"
    grep -q "unknown option" err.txt && fail "cachet $*: says unknown option: $(cat err.txt)"
    [ ! -s out.txt ] || fail "cachet $*: printed $(cat out.txt)"
}

missing --check run --check
missing --require-symbols run --require-symbols
missing --check -v --check
missing --max-size gc --max-size
missing --max-age gc --max-age
missing --max-size gc -n --max-size
missing -n repro -n
missing --runs repro --runs
missing --vary repro --vary
missing --max-lines diff --max-lines
missing -f keygen -f
missing -n log -n
missing -n log --json -n
missing -o report -o
missing --output report --output
missing -n report -n
missing --log stats --log
missing --log stats --json --log

section "the value may look like an option: it is taken as the value"
cachet stats --log --json > /dev/null 2>&1 || true
[ -e ./--json ] && fail "stats --log wrote a file named --json"
rc=0
cachet log -n --json 2> err.txt > /dev/null || rc=$?
[ "$rc" -eq 2 ] && grep -q -- "-n takes a positive number, not '--json'" err.txt ||
    fail "log -n --json: $(cat err.txt)"

section "an unknown option is still called one"
rc=0
cachet gc --max-sise 1G 2> err.txt || rc=$?
[ "$rc" -eq 2 ] && grep -q "unknown option '--max-sise'" err.txt || fail "gc --max-sise: $(cat err.txt)"

section "every subcommand's options read alike: --opt=VALUE, -nVALUE, --, a flag given a value"
cachet gc --max-age=30d --dry-run > /dev/null || fail "gc --max-age=30d --dry-run failed"
cachet log -n1 > log.txt || fail "log -n1 failed"
[ "$(wc -l < log.txt)" -eq 1 ] || fail "log -n1 printed $(wc -l < log.txt) lines"
cachet report --output=page.html -n 1 || fail "report --output=page.html failed"
[ -s page.html ] || fail "report --output=page.html wrote no page"
rc=0
cachet gc --dry-run=yes 2> err.txt || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l < err.txt)" -eq 1 ] && grep -q -- "--dry-run takes no value" err.txt ||
    fail "gc --dry-run=yes: exit $rc, $(cat err.txt)"
rc=0
cachet stats -- --json 2> err.txt || rc=$?
[ "$rc" -eq 2 ] && grep -q "unexpected argument '--json'" err.txt ||
    fail "stats -- --json: exit $rc, $(cat err.txt)"

section "nothing was lost"
rm made
cachet run -- sh -c 'echo kept > made'
expect hit
assert_content made kept
[ ! -e "$HOME/.config/cachet/signing.key" ] || fail "keygen -f made a key"
