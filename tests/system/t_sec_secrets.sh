# Credentials never reach what cachet shows or what others can read:
# `cachet config` hides the password of every remote and every
# bearer-token=; a user configuration holding one is written 0600, and an
# existing one readable by others is reported once; passwords on command
# lines (DB_PASS=, mysql -pPASSWORD, curl -u user:password, user:pw@ in a
# URL, Authorization: Bearer ...) reach neither `cachet log`, `cachet
# explain` nor the HTML report, which is written 0600.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
export HOME="$T/home" XDG_CONFIG_HOME=
mkdir -p "$HOME"
umask 022
CONF="$HOME/.config/cachet/cachet.conf"

section "cachet config hides every credential and writes them 0600"
cachet config remote 'https://ci:pw-first@cache.example/c bearer-token=tok-second, redis://:pw-third@127.0.0.1:1 op-timeout=50ms'
[ "$(stat -c %a "$CONF")" = 600 ] || fail "a configuration holding a password is $(stat -c %a "$CONF")"
for out in "$(cachet config 2>&1)" "$(cachet config remote 2>&1)"; do
    case "$out" in *pw-first* | *tok-second* | *pw-third*) fail "cachet config shows a credential: $out" ;; esac
    case "$out" in *cache.example*) ;; *) fail "cachet config lost the URL: $out" ;; esac
done
cachet config max_size 2G
[ "$(stat -c %a "$CONF")" = 600 ] || fail "rewriting the configuration widened it"

section "an existing configuration readable by others is reported once"
chmod 644 "$CONF"
cachet config > /dev/null 2> warn.txt
[ "$(grep -c 'readable by others' warn.txt)" -eq 1 ] || fail "no single warning: $(cat warn.txt)"
chmod 600 "$CONF"
cachet config > /dev/null 2> warn.txt
[ ! -s warn.txt ] || fail "a warning for a private file: $(cat warn.txt)"
rm "$CONF"

section "passwords on command lines reach neither log, explain nor the report"
ln -s /bin/true mysql
run_expect miss "" -- ./mysql -uroot -ppw-mysql db
run_expect miss "" -- env DB_PASS=pw-env MY_SECRET_KEY=pw-key sh -c 'echo ok' sh \
    -u ci:pw-curl 'Authorization: Bearer pw-bearer' https://ci:pw-url@cache.example/x
shown=$(cachet log; cachet explain ./mysql -uroot -ppw-mysql db; cachet explain env DB_PASS=pw-env MY_SECRET_KEY=pw-key sh -c 'echo ok' sh -u ci:pw-curl 'Authorization: Bearer pw-bearer' https://ci:pw-url@cache.example/x)
cachet report -o report.html > /dev/null
for secret in pw-mysql pw-env pw-key pw-curl pw-bearer pw-url; do
    case "$shown" in *"$secret"*) fail "$secret shown: $(grep -- "$secret" <<< "$shown")" ;; esac
    ! grep -q -- "$secret" report.html || fail "$secret in the HTML report"
done
grep -q 'cache.example' <<< "$shown" || fail "the log lost what is not secret: $shown"
[ "$(stat -c %a report.html)" = 600 ] || fail "the report is $(stat -c %a report.html)"
