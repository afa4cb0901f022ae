# The state before a path the step creates: "absent, or exactly what this
# entry restores there" (for a regular file: an output of this cache there,
# README). A
# step that creates only when the path is missing (`[ -d d ] || mkdir d`,
# `mkdir`, `ln -s`) misses where the path holds something else, and then
# does what a plain run does; a compile hits whether its object is absent,
# already its output, or another version's object. The parent of an output must
# be a directory again unless the step made it.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

# plain_status CMD...: the exit status of CMD run plainly in a copy of the
# cwd, whose resulting tree is left in $T/plain.
plain_status() {
    rm -rf "$T/plain"
    cp -a "$W" "$T/plain"
    set +e
    (cd "$T/plain" && "$@" > /dev/null 2>&1)
    PLAIN_RC=$?
    set -e
}

# same_tree: the cwd's tree equals the plain run's, by content and type.
same_tree() {
    diff -r --no-dereference "$T/plain" "$W" > /dev/null || {
        diff -r --no-dereference "$T/plain" "$W" >&2 || true
        fail "the tree differs from a plain run's"
    }
}

section "create if missing, a directory: [ -d out ] || mkdir out keeps a file there"
DIR=(sh -c '[ -d out ] || mkdir out')
run_expect miss "new step" -- "${DIR[@]}"
rmdir out
run_expect hit "" -- "${DIR[@]}"
# Present and exactly the entry's output (a directory of that mode): a hit.
run_expect hit "" -- "${DIR[@]}"
rmdir out
echo mine > out
plain_status "${DIR[@]}"
cachet explain "${DIR[@]}" > "$T/why.txt" || true
grep -q "path the step creates is in another state: .*out" "$T/why.txt" ||
    { cat "$T/why.txt"; fail "explain does not name the created path"; }
step "${DIR[@]}"
expect miss
expect_rc "$PLAIN_RC"
[ "$RC" -ne 0 ] || fail "mkdir over a file exited 0"
assert_content out mine
same_tree
rm out

section "mkdir: fails where the directory exists, as plain"
run_expect miss "new step" -- mkdir build
rmdir build
run_expect hit "" -- mkdir build
plain_status mkdir build
step mkdir build
expect_rc "$PLAIN_RC"
[ "$RC" -ne 0 ] || fail "mkdir of an existing directory exited 0"

section "ln -s: fails over an existing link, as plain"
run_expect miss "new step" -- ln -s target_a lnk
rm lnk
run_expect hit "" -- ln -s target_a lnk
rm lnk
ln -s target_b lnk
plain_status ln -s target_a lnk
step ln -s target_a lnk
expect_rc "$PLAIN_RC"
[ "$(readlink lnk)" = target_b ] || fail "lnk was replaced"

section "an output's parent directory removed: fails as plain"
mkdir d
OUT=(sh -c 'echo x > d/out')
run_expect miss "new step" -- "${OUT[@]}"
run_expect hit "" -- "${OUT[@]}"
rm -rf d
plain_status "${OUT[@]}"
step "${OUT[@]}"
expect_rc "$PLAIN_RC"
[ "$RC" -ne 0 ] || fail "the step succeeded without its directory"
assert_absent d

section "a compile hits whether its object is absent, its output or another version's"
printf 'int g(void) { return 3; }\n' > g.c
run_expect miss "new step" -- gcc -c g.c -o g.o
cp g.o "$T/g.o.first"
run_expect hit "" -- gcc -c g.c -o g.o
rm g.o
run_expect hit "" -- gcc -c g.c -o g.o
assert_same "$T/g.o.first" g.o
printf 'int g(void) { return 4; }\n' > g.c
run_expect miss "inputs changed" -- gcc -c g.c -o g.o
# The edit undone: g.o holds the other version's object, an output of
# this cache there.
printf 'int g(void) { return 3; }\n' > g.c
run_expect hit "" -- gcc -c g.c -o g.o
assert_same "$T/g.o.first" g.o
# A file no step of this cache made there: the step runs, as plain.
echo garbage > g.o
run_expect miss "inputs changed" -- gcc -c g.c -o g.o
assert_same "$T/g.o.first" g.o

check_status_file_format
