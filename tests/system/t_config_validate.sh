#!/usr/bin/env bash
# Settings are validated when written: a bad value of any kind exits 2 with
# one line naming the key and the reason, and the file keeps what it held.
# A bad value already in a file costs one warning per step, not two.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
export HOME="$W/home" XDG_CONFIG_HOME="$W/home/.config"
mkdir -p "$HOME"
USER_CONF="$XDG_CONFIG_HOME/cachet/cachet.conf"
CACHE_CONF="$CACHET_DIR/cachet.conf"

cachet config max_size 7G
cachet config remote 'http://127.0.0.1:1/cache read-only timeout=50'
mkdir -p "$CACHET_DIR"
cachet config --cache verbose false
cp "$USER_CONF" user.before
cp "$CACHE_CONF" cache.before

# rejected [--cache] KEY VALUE WANTED: exit 2, one line on stderr that
# contains WANTED, nothing on stdout, both files unchanged.
rejected() {
    local args=("$@")
    local wanted=${args[-1]}
    unset 'args[-1]'
    local rc=0
    cachet config "${args[@]}" > out.txt 2> err.txt || rc=$?
    [ "$rc" -eq 2 ] || fail "config ${args[*]}: exit $rc, expected 2"
    [ ! -s out.txt ] || fail "config ${args[*]}: printed $(cat out.txt)"
    [ "$(wc -l < err.txt)" -eq 1 ] || fail "config ${args[*]}: not one line: $(cat err.txt)"
    grep -qF -- "$wanted" err.txt || fail "config ${args[*]}: '$wanted' not in: $(cat err.txt)"
    cmp -s user.before "$USER_CONF" || fail "config ${args[*]}: the user's file changed"
    cmp -s cache.before "$CACHE_CONF" || fail "config ${args[*]}: the cache's file changed"
}

section "remote: scheme, port, host, attributes and their values"
rejected remote 'ftp://x/y' "unsupported scheme 'ftp'"
rejected remote 'cache.example.com' "not a URL"
rejected remote 'http://h:99999/' "bad port"
rejected remote 'http://h:0/' "bad port"
rejected remote 'http://h:80x/' "bad port"
rejected remote 'http:///path' "no host"
rejected remote 'http://h/?x=1' "no query"
rejected remote 'http://h/ bogus=1' "unknown attribute 'bogus'"
rejected remote 'http://h/ readonly' "unknown attribute 'readonly'"
rejected remote 'http://h/ timeout=fast' "bad timeout= 'fast'"
rejected remote 'http://h/ timeout=nan' "bad timeout= 'nan'"
rejected remote 'http://h/ op-timeout=-5' "bad op-timeout= '-5'"
rejected remote 'http://h/ retry-after=1e30' "bad retry-after= '1e30'"
rejected remote 'http://h/ max-size=99999999999999999G' "bad max-size="
rejected remote 'redis://h/abc' "bad Redis database number 'abc'"
rejected remote 'redis+unix://h/sock' "takes no host"
# The second item is wrong: the whole value is refused.
rejected remote 'http://ok/, gopher://x/' "unsupported scheme 'gopher'"
# Credentials never appear in the message.
rejected remote 'http://ci:s3cret@h:0/' "bad port"
grep -q s3cret err.txt && fail "the password is in the message: $(cat err.txt)"
rejected --cache remote 'ftp://x/y' "unsupported scheme 'ftp'"

section "every kind of value: sizes, durations, booleans, numbers, enums"
rejected max_size lots "max_size takes a size"
rejected max_size 5Q "max_size takes a size"
rejected max_size -1G "max_size takes a size"
rejected log_size 1e30T "log_size takes a size"
rejected max_age 3w "max_age takes a duration"
rejected max_age -1d "max_age takes a duration"
rejected read_only maybe "read_only takes true or false"
rejected verbose 2 "verbose takes true or false"
rejected compression_level 20 "compression_level takes a whole number from 1 to 19"
rejected compression_level 3.5 "compression_level takes a whole number"
rejected verify_rate 1.5 "verify_rate takes a number from 0 to 1"
rejected umask 999 "umask takes an octal mask"
rejected nondeterministic ignore "nondeterministic must be warn or rerun"
rejected color sometimes "color must be auto, never or always"
rejected base_dir relative/dir "base_dir must be an absolute path"
rejected no_such_key 1 "unknown key 'no_such_key'"
rejected --cache max_size lots "max_size takes a size"

section "good values are still written"
cachet config remote 'http://127.0.0.1:1/c read-only timeout=1.5s op-timeout=250ms max-size=10M, redis://127.0.0.1:2/3, redis+unix:///tmp/s?db=2'
grep -q '^remote = http://127.0.0.1:1/c read-only' "$USER_CONF" || fail "a good remote was not written"
# Files named by attributes are read where steps run, not when written.
cachet config remote "http://127.0.0.1:1/c auth-file=$W/not-yet-there"
cachet config max_age 30d
cachet config color never

section "a bad value already in a file: one warning per step"
sed -i '/^remote = /d' "$USER_CONF"
echo 'remote = ftp://x/y' >> "$USER_CONF"
rc=0
cachet run -- sh -c 'echo ran > out; echo made > made' 2> err.txt || rc=$?
[ "$rc" -eq 0 ] || fail "the step's status became $rc"
[ "$(cat out)" = ran ] || fail "the step did not run"
[ "$(grep -c "unsupported scheme 'ftp'" err.txt)" -eq 1 ] ||
    fail "not one warning for the bad remote: $(cat err.txt)"
[ "$(wc -l < err.txt)" -eq 1 ] || fail "more than the warning on stderr: $(cat err.txt)"
# The local cache keeps working: the next run hits.
rm made; cachet run -- sh -c 'echo ran > out; echo made > made' 2> err.txt
expect hit
assert_content made made
# A hit asks no remote: at most the one warning.
[ "$(grep -c "unsupported scheme" err.txt || true)" -le 1 ] || fail "warned twice on the hit: $(cat err.txt)"

sed -i '/^remote = /d' "$USER_CONF"
echo 'max_size = 5Q' >> "$USER_CONF"
rc=0
cachet run -- sh -c 'echo again; exit 0' > out.txt 2> err.txt || rc=$?
[ "$rc" -eq 0 ] && [ "$(cat out.txt)" = again ] || fail "a bad max_size broke the step"
[ "$(wc -l < err.txt)" -eq 1 ] && grep -q "cachet.conf:[0-9]*: max_size takes a size" err.txt ||
    fail "not one line naming file, line and reason: $(cat err.txt)"
