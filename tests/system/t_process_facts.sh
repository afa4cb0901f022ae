# Facts of the process that are not files: the host name, ids, CPU set,
# resource limits and OLDPWD are keyed where a step asks for them, so a step
# that prints one misses where it differs; a compile asks for none of the
# first three and still hits under another host name or CPU set.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
printf 'int f(void) { return 2; }\n' > c.c

section "uname -n: another host name misses"
HOST=(sh -c 'uname -n > host.txt')
run_expect miss "new step" -- "${HOST[@]}"
run_expect hit "" -- "${HOST[@]}"
if unshare -u true 2> /dev/null; then
    # The whole call in a new UTS namespace with another host name.
    other_host() {
        unshare -u sh -c 'hostname cachet-test-other && "$@"' sh "$@"
    }
    plain_host=$(other_host uname -n)
    other_host "$CACHET_BIN" explain -- "${HOST[@]}" > "$T/why.txt" || true
    other_host "$CACHET_BIN" run -- "${HOST[@]}"
    expect miss "inputs changed"
    assert_content host.txt "$plain_host"
    run_expect hit "" -- "${HOST[@]}"
    assert_content host.txt "$(uname -n)"
    section "a compile under another host name hits"
    run_expect miss "new step" -- gcc -c c.c -o c.o
    rm c.o
    other_host "$CACHET_BIN" run -- gcc -c c.c -o c.o
    expect hit ""
else
    echo "SKIP part: unshare -u is not permitted here (host name case)"
fi

section "id -g, id -G: another group misses"
GID=(sh -c 'id -g > gid.txt')
run_expect miss "new step" -- "${GID[@]}"
run_expect hit "" -- "${GID[@]}"
if [ "$(id -u)" = 0 ] && setpriv --regid=4242 --clear-groups true 2> /dev/null; then
    setpriv --regid=4242 --clear-groups "$CACHET_BIN" run -- "${GID[@]}"
    expect miss "inputs changed"
    assert_content gid.txt 4242
    setpriv --regid=4242 --clear-groups "$CACHET_BIN" run -- "${GID[@]}"
    expect hit ""
    run_expect hit "" -- "${GID[@]}"
    assert_content gid.txt "$(id -g)"
else
    echo "SKIP part: not root (group id case)"
fi

section "id -ru: another user misses"
# Only the real uid changes, so that the cache (root's) stays usable; no
# shell in the step (a shell whose uids differ drops its privileges).
run_expect miss "new step" -- id -ru > uid.txt
run_expect hit "" -- id -ru > uid.txt
if [ "$(id -u)" = 0 ] && setpriv --ruid=4242 true 2> /dev/null; then
    setpriv --ruid=4242 "$CACHET_BIN" run -- id -ru > uid.txt
    expect miss "inputs changed"
    assert_content uid.txt 4242
    # (cachet checks that its cache is writable with access(), by the real
    # uid: this run cannot store, so there is no hit under 4242 to test.)
    run_expect hit "" -- id -ru > uid.txt
    assert_content uid.txt 0
else
    echo "SKIP part: not root (user id case)"
fi

section "nproc: another CPU set misses, a compile hits"
NPROC=(sh -c 'nproc > n.txt')
run_expect miss "new step" -- "${NPROC[@]}"
run_expect hit "" -- "${NPROC[@]}"
if [ "$(nproc)" -gt 1 ]; then
    taskset -c 0 "$CACHET_BIN" run -- "${NPROC[@]}"
    expect miss "inputs changed"
    assert_content n.txt 1
    run_expect hit "" -- "${NPROC[@]}"
    assert_content n.txt "$(nproc)"
    rm -f c.o
    taskset -c 0 "$CACHET_BIN" run -- gcc -c c.c -o c.o
    expect hit ""
else
    echo "SKIP part: one CPU only (CPU set case)"
fi

section "getconf ARG_MAX: another stack limit misses"
ARGMAX=(sh -c 'getconf ARG_MAX > argmax.txt')
run_expect miss "new step" -- "${ARGMAX[@]}"
run_expect hit "" -- "${ARGMAX[@]}"
plain_argmax=$(ulimit -s 4096 && getconf ARG_MAX)
(ulimit -s 4096 && "$CACHET_BIN" run -- "${ARGMAX[@]}") || fail "cachet run failed"
expect miss "inputs changed"
assert_content argmax.txt "$plain_argmax"
run_expect hit "" -- "${ARGMAX[@]}"
assert_content argmax.txt "$(getconf ARG_MAX)"

section "cd -: another OLDPWD misses"
mkdir -p one two
BACK=(sh -c 'cd - > /dev/null && basename "$PWD" > "$0"' "$W/back.txt")
OLDPWD="$W/one" run_expect miss "new step" -- "${BACK[@]}"
assert_content back.txt one
OLDPWD="$W/one" run_expect hit "" -- "${BACK[@]}"
OLDPWD="$W/two" run_expect miss "" -- "${BACK[@]}"
assert_content back.txt two

section "explain and show name the facts"
cachet show --inputs host.txt > "$T/show.txt"
grep -q "fact .*uname" "$T/show.txt" || fail "show lists no uname fact"
if [ -s "$T/why.txt" ]; then
    grep -q "process fact changed: uname" "$T/why.txt" || { cat "$T/why.txt"; fail "explain names no fact"; }
fi

check_status_file_format
