# Hostile input: paths with newlines, bytes that are not UTF-8 and names of
# 4,000 bytes; argv and environments close to the kernel's limit; binary
# stdout and stderr; outputs that are symlinks pointing outside the step's
# directory; an output directory replaced by a symlink between runs. Each is
# run twice (a miss, then a hit after the outputs are deleted): the hit must
# give the plain run's bytes, and nothing may be written outside the step's
# directory.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
OUTSIDE="$T/outside"
mkdir -p "$OUTSIDE"
echo "precious" > "$OUTSIDE/precious.txt"
tried=0

# A snapshot of everything outside the work directory that a step could
# reach: the test's own tree but $W and the cache.
outside_state() { find "$OUTSIDE" -printf '%p %y %s %T@ %l\n' | sort; }
OUTSIDE_BEFORE=$(outside_state)
check_outside() {
    [ "$(outside_state)" = "$OUTSIDE_BEFORE" ] || fail "$1: something was written outside the work directory"
}

# twice NAME CMD...: miss then (outputs deleted by CLEAN) hit, same stdout.
twice() {
    local name=$1
    shift
    step "$@" > "$name.1"
    expect_rc 0
    expect miss
    eval "$CLEAN"
    step "$@" > "$name.2"
    expect_rc 0
    expect hit
    cmp -s "$name.1" "$name.2" || fail "$name: the hit's stdout differs"
    tried=$((tried + 1))
}

section "file names with newlines, tabs, quotes, backslashes, non-UTF-8 bytes"
mkdir -p names && cd names
cat > mk.py <<'EOF'
import os
names = [b"new\nline", b"tab\there", b"quote\"'`$(x)", b"back\\slash", b"\xff\xfe latin1 \xe9",
         b"-dash", b" space ", b"\xed\xa0\x80 surrogate", b"emoji \xf0\x9f\x98\x80"]
os.makedirs(b"out", exist_ok=True)
for i, n in enumerate(names):
    with open(b"out/" + n, "wb") as f:
        f.write(b"content %d " % i + n)
    os.symlink(n, b"out/link-" + n)
print("made", len(names))
EOF
CLEAN='rm -rf out'
twice names python3 mk.py
python3 - <<'EOF' || fail "names: a restored file is wrong"
import os
for n in os.listdir(b"out"):
    p = b"out/" + n
    if n.startswith(b"link-"):
        assert os.readlink(p) == n[5:], p
    else:
        assert open(p, "rb").read().endswith(n), p
assert len(os.listdir(b"out")) == 18, os.listdir(b"out")
EOF
# The names go through the status file, the log, show and explain unharmed.
check_status_file_format
cachet log > /dev/null || fail "cachet log failed on odd names"
# show exits 0 (current) or 1 (stale, or modified): anything else is a failure.
rc=0
cachet show "$(printf 'out/new\nline')" > /dev/null || rc=$?
[ "$rc" -le 1 ] || fail "cachet show failed on a name with a newline"
# explain exits 0 (would hit) or 1 (would miss: out/, which the step made,
# is there now).
rc=0
cachet explain python3 mk.py > /dev/null || rc=$?
[ "$rc" -le 1 ] || fail "cachet explain failed"
cd "$W"

section "paths of 4,000 bytes: a cwd of 3,749 bytes and a name of 250"
# (PATH_MAX is 4,096 with the NUL: a longer absolute path cannot be opened.)
long=$(python3 - "$W/deep" <<'EOF'
import sys
left = 3749 - len(sys.argv[1]) - 1
parts = []
while left > 0:
    n = min(200, left)
    parts.append("d" * n)
    left -= n + 1
print("/".join(parts))
EOF
)
mkdir -p "deep/$long"
cd "deep/$long"
[ ${#PWD} -ge 3740 ] || fail "test setup: cwd is only ${#PWD} bytes"
name=$(python3 -c 'print("n" * 250)')
CLEAN="rm -f $name"
twice deep sh -c "echo deep > $name && echo made"
assert_content "$name" "deep"
path_len=$(( ${#PWD} + 1 + ${#name} ))
[ "$path_len" -ge 3990 ] || fail "test setup: the output's path is only $path_len bytes"
cd "$W"

section "argv close to ARG_MAX"
arg_max=$(getconf ARG_MAX)
# The kernel counts argv and envp strings with their pointers; leave room
# for the environment and for cachet's own additions (TMPDIR and friends).
env_bytes=$(env | wc -c)
budget=$(( (arg_max - env_bytes - 65536) * 9 / 10 ))
nargs=$(( budget / 100001 ))
python3 - "$nargs" > args.txt <<'EOF'
import sys
for i in range(int(sys.argv[1])):
    print(chr(ord("a") + i % 26) * 100000)
EOF
mapfile -t big_args < args.txt
CLEAN=':'
twice argv sh -c 'echo "$# args, $(printf %s "$*" | wc -c) bytes"' sh "${big_args[@]}"
echo "argv: $(cat argv.1) (ARG_MAX $arg_max)"
grep -q "^$nargs args" argv.1 || fail "argv: the step saw $(cat argv.1)"
cachet log > /dev/null || fail "cachet log failed after a huge command line"

section "a huge environment"
big_value=$(head -c 100000 /dev/zero | tr '\0' 'v')
env_args=()
for i in $(seq 3000); do env_args+=("CACHET_TEST_V$i=value $i"); done
twice env env BIG="$big_value" "${env_args[@]}" sh -c 'echo "${#BIG} $CACHET_TEST_V3000"'
grep -qx "100000 value 3000" env.1 || fail "env: the step saw $(cat env.1)"
# A different value of one variable is another step.
step env BIG="${big_value}w" "${env_args[@]}" sh -c 'echo "${#BIG} $CACHET_TEST_V3000"' > env.3
expect miss

section "binary stdout and stderr"
head -c 300000 /dev/urandom > random.bin
printf 'a\0b\0\377\376\r\n\033[31mred' >> random.bin
CLEAN=':'
step sh -c 'cat random.bin; cat random.bin >&2' > bin.1 2> bin.1e
expect miss
step sh -c 'cat random.bin; cat random.bin >&2' > bin.2 2> bin.2e
expect hit
cmp -s bin.2 random.bin || fail "binary stdout: the hit's bytes differ"
cmp -s bin.2e random.bin || fail "binary stderr: the hit's bytes differ"
tried=$((tried + 1))

section "outputs that are symlinks pointing outside"
mkdir -p links && cd links
CLEAN='rm -rf out'
twice links sh -c "mkdir -p out && ln -s /etc/passwd out/abs && ln -s ../../../outside/precious.txt out/rel && ln -s '$OUTSIDE' out/dir && ln -s nowhere out/dangling && echo ok"
[ "$(readlink out/abs)" = /etc/passwd ] || fail "links: out/abs"
[ "$(readlink out/dir)" = "$OUTSIDE" ] || fail "links: out/dir"
[ "$(readlink out/dangling)" = nowhere ] || fail "links: out/dangling"
check_outside "symlink outputs"
# A step that writes through a symlink it created (outside): the file it
# wrote there is its output, restored where it was recorded.
cd "$W"

section "an output directory replaced by a symlink between runs"
mkdir -p replace && cd replace
echo one > in.txt
# A plain run never writes through a symlink at gen: it removes it first.
cat > gen.sh <<'EOF'
set -e
rm -rf gen
mkdir gen
cp in.txt gen/a.txt
echo generated
EOF
run_expect miss "" -- sh gen.sh
run_expect hit "" -- sh gen.sh
# Someone replaces the step's output directory by a symlink to elsewhere.
rm -rf gen
ln -s "$OUTSIDE" gen
step sh gen.sh > /dev/null
expect_rc 0
check_outside "output directory replaced by a symlink (a restore must not write through it)"
echo "replaced directory: $(last_result) ($(last_reason))"
[ -d gen ] && [ ! -L gen ] || fail "gen is not a directory again"
assert_content gen/a.txt one
# The step itself replaces its output directory by a symlink: its entries
# for either state restore without following the other's link.
cat > flip.sh <<'EOF'
set -e
rm -rf out
if [ "$(cat mode)" = dir ]; then mkdir out; echo dir > out/f; else ln -s "$1" out; fi
echo "mode $(cat mode)"
EOF
rm -rf gen
for mode in dir link dir link; do
    echo "$mode" > mode
    step sh flip.sh "$OUTSIDE"
    expect_rc 0
    check_outside "flip to $mode"
    if [ "$mode" = dir ]; then
        [ -d out ] && [ ! -L out ] && assert_content out/f dir
    else
        [ -L out ] || fail "flip to link: out is not a symlink"
    fi
    echo "flip to $mode: $(last_result) ($(last_reason))"
done
tried=$((tried + 2))
cd "$W"

check_outside "the whole test"
echo "FIGURE hostile.inputs_tried=$tried"
check_status_file_format
