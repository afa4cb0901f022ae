# The state before a regular file the step creates: absent, or content that
# an entry of this cache restores at that path. A step that creates a file
# only where it is missing (`[ -e f ] || cp`, `cp -n`, `set -C`, an
# O_EXCL open)
# misses over a file the user wrote or edited there, and does what plain
# does (keeps it); a compile hits over the object that another version of
# its source left there (an undone edit, a branch switch).
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

# plain_then_cached CMD...: runs CMD plainly in a copy of the cwd, then
# through cachet in the cwd; the two exit statuses and trees must agree.
plain_then_cached() {
    rm -rf "$T/plain"
    cp -a "$W" "$T/plain"
    set +e
    (cd "$T/plain" && "$@" > /dev/null 2>&1)
    local plain_rc=$?
    set -e
    step "$@" 2> "$T/step.err"
    expect_rc "$plain_rc"
    diff -r --no-dereference "$T/plain" "$W" > /dev/null || {
        diff -r --no-dereference "$T/plain" "$W" >&2 || true
        fail "$*: the tree differs from a plain run's"
    }
}

section "[ -e config.h ] || cp config.h.in config.h over an edited config.h"
echo '#define FEATURE 1' > config.h.in
GEN=(sh -c '[ -e config.h ] || cp config.h.in config.h')
run_expect miss "new step" -- "${GEN[@]}"
rm config.h
run_expect hit "" -- "${GEN[@]}"
# Present and the entry's own output: what a hit restores, a hit.
run_expect hit "" -- "${GEN[@]}"
echo '#define FEATURE 2 /* mine */' > config.h
plain_then_cached "${GEN[@]}"
expect miss "inputs changed"
assert_content config.h '#define FEATURE 2 /* mine */'
rm config.h

section "cp -n over a file of the user's"
echo one > src.txt
run_expect miss "new step" -- cp -n src.txt dst.txt
rm dst.txt
run_expect hit "" -- cp -n src.txt dst.txt
echo mine > dst.txt
plain_then_cached cp -n src.txt dst.txt
expect miss "inputs changed"
assert_content dst.txt mine

section "the shell's noclobber (set -C) over a file of the user's"
EXCL=(sh -c 'set -C; echo generated > excl.txt')
run_expect miss "new step" -- "${EXCL[@]}"
rm excl.txt
run_expect hit "" -- "${EXCL[@]}"
rm excl.txt
echo mine > excl.txt
plain_then_cached "${EXCL[@]}"
[ "$RC" -ne 0 ] || fail "a noclobber redirection over an existing file exited 0"
assert_content excl.txt mine

section "made by a call that fails where the path exists, with no probe: O_EXCL"
# Python's open(f, "x") looks at nothing first: only absence lets it do
# what the hit does.
EXCL_PY=(python3 -c 'open("made.txt", "x").write("generated")')
run_expect miss "new step" -- "${EXCL_PY[@]}"
rm made.txt
run_expect hit "" -- "${EXCL_PY[@]}"
plain_then_cached "${EXCL_PY[@]}"
[ "$RC" -ne 0 ] || fail "open(f, 'x') over an existing file exited 0"
assert_content made.txt generated
echo mine > made.txt
plain_then_cached "${EXCL_PY[@]}"
assert_content made.txt mine
rm made.txt
if command -v gcc > /dev/null; then
    section "a compile hits after a branch switch and back"
    mkdir -p repo && cd repo
    git_q() { git -c user.name=t -c user.email=t@t "$@" > /dev/null 2>&1; }
    git_q init -b one .
    printf 'int v(void) { return 1; }\n' > v.c
    git_q add v.c
    git_q commit -m one
    git_q checkout -b two
    printf 'int v(void) { return 2; }\n' > v.c
    git_q commit -am two
    git_q checkout one
    run_expect miss "new step" -- gcc -c v.c -o v.o
    cp v.o "$T/v1.o"
    git_q checkout two
    run_expect miss "inputs changed" -- gcc -c v.c -o v.o
    cp v.o "$T/v2.o"
    # v.o is untracked: each switch leaves the other branch's object.
    git_q checkout one
    run_expect hit "" -- gcc -c v.c -o v.o
    assert_same "$T/v1.o" v.o
    git_q checkout two
    run_expect hit "" -- gcc -c v.c -o v.o
    assert_same "$T/v2.o" v.o
    cd "$W"

    section "mkdir -p out; gcc -o out/m.o: show calls the object current after its run"
    printf 'int m(void) { return 5; }\n' > m.c
    MK=(sh -c 'mkdir -p out; gcc -c m.c -o out/m.o')
    run_expect miss "new step" -- "${MK[@]}"
    state=$(cachet show --json out/m.o | python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')
    [ "$state" = current ] || fail "show calls out/m.o $state right after its run"
    # Syscall for syscall a `mkdir out` that would fail there: it runs
    # once where out/ exists, and hits from then on.
    run_expect miss "inputs changed" -- "${MK[@]}"
    run_expect hit "" -- "${MK[@]}"
    rm -rf out
    run_expect hit "" -- "${MK[@]}"
    assert_exists out/m.o
fi

check_status_file_format
