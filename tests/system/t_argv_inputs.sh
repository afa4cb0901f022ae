# A command line run with many different contents of the files it names
# (`cp in out`, `gcc -c x.c -o x.o`, configure's conftest.c) keeps the path
# sets of each content: the weak key's path sets are grouped by the content
# of the argv words the step read, and bounded per group, so that twenty
# contents do not push each other out (the bound was 16 per command line).
# An output named in argv is no part of the group: a stale x.o from another
# branch must not cost the hit.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

section "twenty contents of one command line all hit the second time"
for pass in 1 2; do
    for i in $(seq 1 20); do
        printf 'content %s\n' "$i" > in.txt
        rm -f out.txt
        step cp in.txt out.txt
        [ "$RC" -eq 0 ] || fail "cp exited $RC"
        assert_content out.txt "content $i"
        status_last
        want=miss
        [ "$pass" -eq 1 ] || want=hit
        [ "$LAST_RESULT" = "$want" ] ||
            fail "pass $pass, content $i: expected $want, got $LAST_RESULT ($LAST_REASON)"
    done
done

section "under base_dir, another checkout hits all twenty: the groups hold no paths"
mkdir -p "$W/ws1/proj" "$W/ws2/deeper/proj"
for dir in "$W/ws1/proj" "$W/ws2/deeper/proj"; do
    # From the same place: OLDPWD is keyed.
    cd "$W"
    cd "$dir"
    for i in $(seq 1 20); do
        printf 'checkout content %s\n' "$i" > in.txt
        rm -f out.txt
        CACHET_BASE_DIR="$dir" step cp in.txt out.txt
        [ "$RC" -eq 0 ] || fail "cp exited $RC"
        assert_content out.txt "checkout content $i"
        status_last
        want=miss
        [ "$dir" = "$W/ws1/proj" ] || want=hit
        [ "$LAST_RESULT" = "$want" ] ||
            fail "$dir, content $i: expected $want, got $LAST_RESULT ($LAST_REASON)"
    done
done
cd "$W"

section "a changed named input misses; the stale output it names does not matter"
if command -v gcc > /dev/null; then
    printf 'int branch(void) { return 1; }\n' > x.c
    gcc -c x.c -o plain-a.o
    step gcc -c x.c -o x.o
    expect miss "new step"
    cmp -s x.o plain-a.o || fail "the miss wrote another object than plain gcc"
    # Another branch: same command line, other content.
    printf 'int branch(void) { return 2; }\n' > x.c
    gcc -c x.c -o plain-b.o
    step gcc -c x.c -o x.o
    expect miss "inputs changed"
    cmp -s x.o plain-b.o || fail "a changed x.c was served the old object"
    # Back to the first branch with the second branch's x.o in place.
    printf 'int branch(void) { return 1; }\n' > x.c
    step gcc -c x.c -o x.o
    expect hit
    cmp -s x.o plain-a.o || fail "the hit restored another object than plain gcc wrote"
else
    echo "gcc is not installed: the compile case is left out"
fi

section "a named input that is gone: the group cannot hold, the step runs"
printf 'content 1\n' > in.txt
step cp in.txt out.txt
step cp in.txt out.txt
expect hit
rm in.txt
step cp in.txt out.txt
[ "$RC" -ne 0 ] || fail "cp of a missing file succeeded"
expect miss
check_status_file_format
