# Tools that decide by mtime: a file the step stat'ed but never read is keyed
# by its mtime too, a directory under the cwd that it stat'ed but neither
# listed nor looked into by its listing, and a file whose mtime the step
# copied onto an output by its mtime. A compile, which reads what it stats,
# still hits after its source is touched.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

# Runs "$@" plainly in a copy of the cwd and leaves that tree in $T/plain.
plain_in_copy() {
    rm -rf "$T/plain"
    cp -a "$W" "$T/plain"
    (cd "$T/plain" && "$@" > "$T/plain.out" 2>&1) || true
}

section "make: 'up to date' is keyed by the mtimes make compared"
printf 'out: in\n\tcp in out\n' > Makefile
echo a > in
make -s
run_expect miss "new step" -- make
run_expect hit "" -- make
# A same-size edit, made later than out: make must copy it again.
sleep 0.01
echo b > in.new && touch -d '+2 seconds' in.new && mv in.new in
plain_in_copy make
run_expect miss "inputs changed" -- make
assert_content out b
assert_same "$T/plain/out" out
cachet explain make > "$T/explain.txt" 2>&1 || true
run_expect hit "" -- make

section "[ a -nt b ]: miss when a becomes newer, as plain"
echo x > a
echo y > b
touch -d '2020-01-01' a
touch -d '2021-01-01' b
CMP=(sh -c '[ a -nt b ] && echo newer > r || echo older > r')
run_expect miss "new step" -- "${CMP[@]}"
assert_content r older
run_expect hit "" -- "${CMP[@]}"
touch -d '2022-01-01' a
run_expect miss "inputs changed" -- "${CMP[@]}"
assert_content r newer
touch -d '2023-01-01' a
cachet explain "${CMP[@]}" > "$T/why.txt" || true
grep -q "file time changed: .*a " "$T/why.txt" || { cat "$T/why.txt"; fail "explain names no file time"; }

section "cp -u: a newer source is copied, as plain"
echo 1 > src
touch -d '2020-01-01' src
cp src dst
run_expect miss "new step" -- cp -u src dst
run_expect hit "" -- cp -u src dst
echo 2 > src
plain_in_copy cp -u src dst
run_expect miss "inputs changed" -- cp -u src dst
assert_same "$T/plain/dst" dst
assert_content dst 2

section "cp -p: the copied mtime comes from the source's"
echo same > p_src
touch -d '2019-05-05 10:00' p_src
run_expect miss "new step" -- cp -p p_src p_dst
rm p_dst
run_expect hit "" -- cp -p p_src p_dst
[ "$(stat -c %Y p_dst)" = "$(stat -c %Y p_src)" ] || fail "hit restored another mtime"
touch -d '2018-03-03 10:00' p_src
rm p_dst
run_expect miss "inputs changed" -- cp -p p_src p_dst
[ "$(stat -c %Y p_dst)" = "$(stat -c %Y p_src)" ] || fail "p_dst does not have p_src's mtime"

section "a directory stat'ed and not looked into: keyed by its listing"
mkdir -p d
touch -d '2020-01-01' stamp
touch -d '2021-01-01' d
DIRCMP=(sh -c '[ d -nt stamp ] && echo changed > dr || echo same > dr')
run_expect miss "new step" -- "${DIRCMP[@]}"
run_expect hit "" -- "${DIRCMP[@]}"
touch -d '2020-01-01' d
echo new > d/entry
plain_in_copy "${DIRCMP[@]}"
run_expect miss "inputs changed" -- "${DIRCMP[@]}"
assert_same "$T/plain/dr" dr

section "a compile reads what it stats: a touched source still hits"
printf 'int f(void) { return 1; }\n' > c.c
run_expect miss "new step" -- gcc -c c.c -o c.o
touch c.c
rm c.o
run_expect hit "" -- gcc -c c.c -o c.o

check_status_file_format
