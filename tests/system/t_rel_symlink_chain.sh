# A hostile writer on the remote chains symlinks that look harmless one by
# one: "d -> ." and "s -> d/../outside" (by text s stays in the work
# directory; the kernel resolves d/.. to its parent). Another entry, stored
# locally from an earlier remote hit when s was a directory, writes s/pwned.
# The chain is judged as the kernel resolves it and refused; and no restore,
# local or remote, writes through a symlink it did not just create.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_lib.sh"

start_nginx web
URL="http://127.0.0.1:$NGINX_PORT/cache"
W=$(workdir)
OUT=$T/outside
mkdir -p "$OUT"
cd "$W"

on() { # MACHINE: the cache of that machine, with the remote
    export CACHET_DIR="$T/$1" CACHET_REMOTE="$URL"
}

section "the writer stores an entry that writes s/pwned while s is a directory"
on writer
mkdir s
run_expect miss "new step" -- sh -c 'echo pwned > s/pwned'
cachet remote flush -q
rm s/pwned

section "the reader hits it remotely, and keeps it"
on reader
run_expect hit remote -- sh -c 'echo pwned > s/pwned'
assert_content s/pwned pwned
rm -rf s

section "the writer plants the chain: s -> d/../outside through d -> ."
on writer
run_expect miss "new step" -- sh -c 'ln -s . d; ln -s d/inside s'
cachet remote flush -q
"$TESTTOOL" set-target "$(entry_with_output "$W/s")" "$W/s" "d/../outside"
rm d s

section "the reader refuses the chain and runs the step"
on reader
before=$(remote_counter remote_refused)
run_expect miss "" -- sh -c 'ln -s . d; ln -s d/inside s'
[ "$(remote_counter remote_refused)" -eq $((before + 1)) ] || fail "the chain was not refused"
[ "$(readlink s)" = d/inside ] || fail "s is not what the step made: $(readlink s)"

section "the local entry is not restored through s"
step sh -c 'echo pwned > s/pwned' 2> /dev/null
[ "$(last_result)" != hit ] || fail "s/pwned was restored through the symlink s"
assert_absent "$OUT/pwned"
[ -z "$(ls -A "$OUT")" ] || fail "something was written outside: $(ls -A "$OUT")"

section "a harmless chain still hits: s -> d/inside through d -> ."
rm -f d s
mkdir inside
run_expect miss "new step" -- sh -c 'ln -s . e; ln -s e/inside t'
cachet remote flush -q
rm e t
on reader2
run_expect hit remote -- sh -c 'ln -s . e; ln -s e/inside t'
[ "$(readlink t)" = e/inside ] && [ "$(readlink e)" = . ] || fail "the chain was not restored"
