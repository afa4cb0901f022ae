#!/usr/bin/env bash
# Settings: sources and their order, cachet config, errors naming file and
# line, and the day-one settings (read_only, ignore_paths,
# uncacheable_commands, umask, env_ignore).
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
export HOME="$W/home" XDG_CONFIG_HOME="$W/home/.config"
mkdir -p "$HOME"
USER_CONF="$XDG_CONFIG_HOME/cachet/cachet.conf"

section "cachet config lists every key with its origin"
cachet config > list.txt
for key in dir max_size namespace env_ignore base_dir compression_level verify_rate remote \
    sign_key trusted_keys read_only ignore_paths uncacheable_commands stats_log umask; do
    grep -q "^$key " list.txt || fail "cachet config does not list $key"
done
grep -q "^dir .*environment (CACHET_DIR)" list.txt || fail "dir does not say it came from CACHET_DIR"
grep -q "^max_size *= 5G .*(default)" list.txt || fail "max_size default is not 5G: $(grep max_size list.txt)"

section "writing and reading; later sources win"
cachet config max_size 10G
[ "$(cachet config max_size)" = 10G ] || fail "config max_size after writing it"
grep -q "^max_size = 10G" "$USER_CONF" || fail "the user's file does not hold the value"
cachet config --cache max_size 2G
grep -q "^max_size = 2G" "$CACHET_DIR/cachet.conf" || fail "--cache did not write the cache's file"
[ "$(cachet config max_size)" = 10G ] || fail "the user's file should win over the cache's"
[ "$(CACHET_MAX_SIZE=300M cachet config max_size)" = 300M ] || fail "the environment should win"
# Only the exact name: a longer or shorter one, or another case, is no setting.
[ "$(CACHET_MAX_SIZEX=1M CACHET_MAX_SIZ=2M cachet_max_size=3M cachet config max_size)" = 10G ] ||
	fail "a variable named like CACHET_MAX_SIZE was taken for it"
[ "$(CACHET_LOG_SIZE=2M CACHET_MAX_SIZEX=1M cachet config log_size)" = 2M ] ||
	fail "CACHET_LOG_SIZE among other CACHET_ variables was not found"
cachet config | grep -q "^max_size .*$USER_CONF:1" || fail "origin of max_size is not the user's file and line"

section "bad keys and values: errors naming the file and line"
set +e
cachet config max_size lots 2> err.txt
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "a bad value exited $rc, expected 2"
grep -q "max_size" err.txt || fail "the error does not name the key: $(cat err.txt)"
printf 'compression_level = 3\nno_such_key = 1\n' >> "$USER_CONF"
set +e
cachet config > /dev/null 2> err.txt
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "an unknown key in a file was accepted"
grep -q "$USER_CONF:3: unknown key 'no_such_key'" err.txt || fail "the error does not name file and line: $(cat err.txt)"
# cachet run says so and runs the command uncached, with its own status.
set +e
cachet run -- sh -c 'echo ran; exit 4' > out.txt 2> err.txt
rc=$?
set -e
[ "$rc" -eq 4 ] || fail "a bad configuration changed the command's status to $rc"
grep -q "ran" out.txt || fail "the command did not run under a bad configuration"
grep -q "unknown key" err.txt || fail "run did not report the bad configuration"
sed -i '/no_such_key/d' "$USER_CONF"
set +e
CACHET_VERIFY_RATE=2 cachet config > /dev/null 2> err.txt
rc=$?
set -e
[ "$rc" -ne 0 ] && grep -q "CACHET_VERIFY_RATE" err.txt || fail "a bad environment value is not named"

section "read_only: hits are served, nothing is stored"
printf 'int f(void) { return 1; }\n' > a.c
run_expect miss "new step" -- gcc -c a.c -o a.o
rm a.o
CACHET_READ_ONLY=1 run_expect hit "" -- gcc -c a.c -o a.o
assert_exists a.o
before=$(stats_field entries)
CACHET_READ_ONLY=1 run_expect miss "new step" -- gcc -O1 -c a.c -o a1.o
[ "$(stats_field entries)" -eq "$before" ] || fail "read_only stored an entry"

section "uncacheable_commands"
CACHET_UNCACHEABLE_COMMANDS='ec*o' run_expect uncacheable "uncacheable_commands" -- echo hi
run_expect miss "new step" -- echo hi

section "ignore_paths: neither inputs nor outputs"
mkdir -p scratch
cat > step.sh <<'SH'
#!/bin/sh
cat scratch/noise.txt > /dev/null 2>&1
date +%s%N > scratch/noise.txt
echo out > result.txt
SH
chmod +x step.sh
CACHET_IGNORE_PATHS="$W/scratch" run_expect miss "new step" -- ./step.sh
CACHET_IGNORE_PATHS="$W/scratch" run_expect hit "" -- ./step.sh

section "env_ignore: a listed variable does not split keys"
BUILD_FLAVOUR=1 CACHET_ENV_IGNORE='BUILD_F*' run_expect miss "new step" -- gcc -O2 -c a.c -o a2.o
BUILD_FLAVOUR=2 CACHET_ENV_IGNORE='BUILD_F*' run_expect hit "" -- gcc -O2 -c a.c -o a2.o
BUILD_FLAVOUR=3 run_expect miss "new step" -- gcc -O2 -c a.c -o a2.o

section "umask for a shared cache"
rm -rf "$T/shared"
CACHET_DIR="$T/shared" CACHET_UMASK=002 run_expect miss "new step" -- gcc -O3 -c a.c -o a3.o
blob=$(find "$T/shared/blobs" -type f | head -n 1)
[ -n "$blob" ] || fail "no blob stored in the shared cache"
d=$(dirname "$blob")
[ $(( 0$(stat -c %a "$d") & 020 )) -ne 0 ] || fail "umask 002 did not make cache directories group-writable: $(stat -c %a "$d")"
