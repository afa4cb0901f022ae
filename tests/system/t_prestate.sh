# The state before a path the step creates: "absent, or exactly what this
# entry restores there". A step that creates only when the path is missing
# (`[ -e f ] || cp`, `cp -n`, `mkdir`, `ln -s`) misses where the path holds
# something else, and then does what a plain run does; a compile hits whether
# its object is absent or already its output. The parent of an output must
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

section "create if missing: [ -e config.h ] || cp ... keeps a user's edit"
echo '#define A 1' > config.h.in
CFG=(sh -c '[ -e config.h ] || cp config.h.in config.h')
run_expect miss "new step" -- "${CFG[@]}"
assert_content config.h '#define A 1'
rm config.h
run_expect hit "" -- "${CFG[@]}"
assert_content config.h '#define A 1'
# Present and exactly the entry's output: a hit too.
run_expect hit "" -- "${CFG[@]}"
echo '#define A 2' > config.h
plain_status "${CFG[@]}"
cachet explain "${CFG[@]}" > "$T/why.txt" || true
grep -q "path the step creates is in another state: .*config.h" "$T/why.txt" ||
    { cat "$T/why.txt"; fail "explain does not name the created path"; }
run_expect miss "inputs changed" -- "${CFG[@]}"
assert_content config.h '#define A 2'
same_tree

section "cp -n: an existing destination is kept"
echo one > n_src
run_expect miss "new step" -- cp -n n_src n_dst
rm n_dst
run_expect hit "" -- cp -n n_src n_dst
echo mine > n_dst
plain_status cp -n n_src n_dst
step cp -n n_src n_dst
expect miss
expect_rc "$PLAIN_RC"
assert_content n_dst mine
same_tree

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

section "a compile hits whether its object is absent or already its output"
printf 'int g(void) { return 3; }\n' > g.c
run_expect miss "new step" -- gcc -c g.c -o g.o
cp g.o "$T/g.o.first"
run_expect hit "" -- gcc -c g.c -o g.o
rm g.o
run_expect hit "" -- gcc -c g.c -o g.o
assert_same "$T/g.o.first" g.o

check_status_file_format
