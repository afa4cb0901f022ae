# cachet repro: a back end that drops a random entry function on each
# compile, gcc with __DATE__/__TIME__ under a moved clock, a step that
# depends on directory order (found with dirorder, named by --bisect), every
# run starting from the same tree, the tree left as after one normal run,
# nothing stored, and usage errors.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
unset SOURCE_DATE_EPOCH FAKETIME LD_PRELOAD TZ

# repro_rc ARGS...: cachet repro with stdout in $T/repro.out, stderr in
# $T/repro.err; sets RC.
repro_rc() {
    set +e
    cachet repro "$@" > "$T/repro.out" 2> "$T/repro.err"
    RC=$?
    set -e
    [ "$RC" -ne 124 ] || fail "cachet repro $* timed out"
}

expect_repro_rc() {
    local want=$1
    shift
    repro_rc "$@"
    [ "$RC" -eq "$want" ] ||
        fail "cachet repro $* exited $RC, expected $want; stdout: $(cat "$T/repro.out"); stderr: $(cat "$T/repro.err")"
}

out_has() {
    grep -qF -- "$1" "$T/repro.out" || fail "cachet repro output lacks '$1':
$(cat "$T/repro.out")"
}

# json_check PYTHON: runs the assertion with o = the JSON report.
json_check() {
    python3 -c "
import json, sys
o = json.load(open(sys.argv[1]))
$1
" "$T/repro.out" || fail "JSON report fails '$1': $(cat "$T/repro.out")"
}

entries() { stats_field entries; }

section "nothing is stored: the cache has no entries before"
ENTRIES_BEFORE=$(entries)

section "a back end that drops a random one of 32 entry functions: -n 5 differs and names it"
# One of 32 functions is made static inline (and so inlined away) on each
# compile: five equal runs happen with probability 32^-4.
cat > kc.sh <<'EOF'
#!/bin/sh
set -e
skip=$(( $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 32 ))
src="$TMPDIR/kernel.c"
{
    i=0
    while [ $i -lt 32 ]; do
        s=""
        [ $i -eq $skip ] && s="static inline "
        echo "${s}int main_kernel_simt_$i(int x) { return x * $i + 7; }"
        i=$((i + 1))
    done
    printf 'int launch(int x) { return 0'
    i=0
    while [ $i -lt 32 ]; do printf ' + main_kernel_simt_%d(x)' $i; i=$((i + 1)); done
    echo '; }'
} > "$src"
gcc -O2 -c "$src" -o kernel.o
EOF
chmod +x kc.sh
expect_repro_rc 1 -n 5 -- ./kc.sh
out_has "cachet repro: 5 runs of ./kc.sh"
out_has "differs from run 1"
out_has "  kernel.o: 1 symbol missing in B: main_kernel_simt_"
out_has "not reproducible"
[ ! -s "$T/repro.err" ] || fail "stderr is not a terminal, yet repro wrote to it: $(cat "$T/repro.err")"
# The tree holds one run's object: 31 of the 32 entry functions.
assert_exists kernel.o
n=$(nm kernel.o | grep -c ' T main_kernel_simt_')
[ "$n" -eq 31 ] || fail "kernel.o left by repro defines $n entry functions, expected 31"

section "--json: the differing path and the missing symbol in the diff report"
expect_repro_rc 1 -n 3 --json -- ./kc.sh
json_check '
assert o["reproducible"] is False, o
assert o["runs"] == 3 and len(o["results"]) == 3, o
assert o["results"][0]["role"] == "control" and o["results"][0]["exit_code"] == 0
assert o["bisect"] is None
diffs = [d for r in o["results"][1:] for d in r["differences"]]
assert diffs, "no differences although reproducible is false"
assert all(d["path"].endswith("/kernel.o") and d["kind"] == "content" for d in diffs), diffs
assert any(d["report"]["counts"].get("symbol_missing_in_b") for d in diffs), diffs
assert [p for p in o["differing_paths"] if p.endswith("/kernel.o")], o["differing_paths"]
'

section "gcc with __DATE__ and __TIME__ differs under --vary time"
cat > stamp.c <<'EOF'
const char *build_stamp = "built " __DATE__ " " __TIME__;
EOF
expect_repro_rc 1 --vary time -- gcc -c stamp.c -o stamp.o
out_has "SOURCE_DATE_EPOCH="
out_has "  stamp.o: 1 section differs: .rodata"
out_has "not reproducible: 1 of 1 run differs from run 1"

section "an ordinary compile is reproducible under --vary all"
cat > plain.c <<'EOF'
#include <stdio.h>
int add(int a, int b) { return a + b; }
int main(void) { printf("%d\n", add(2, 3)); return 0; }
EOF
expect_repro_rc 0 -n 3 --vary all -- gcc -O2 -c plain.c -o plain.o
out_has "reproducible: all 3 runs left the same outputs"
# (cpus and aslr drop out, with a note, where they cannot vary)
out_has "varied in runs 2 to 3: env, tz, locale, umask, "
out_has ", time, dirorder"
assert_exists plain.o

section "a listing in directory order: reproducible without dirorder, not with it"
mkdir -p listed
for f in alpha bravo charlie delta echo foxtrot; do echo "$f" > "listed/$f"; done
LIST=(sh -c 'ls -U listed > listing.txt')
expect_repro_rc 0 -n 3 --vary all,-dirorder -- "${LIST[@]}"
expect_repro_rc 1 --vary dirorder -- "${LIST[@]}"
out_has "directory order reversed"
out_has "  listing.txt: text differs"
expect_repro_rc 1 -n 3 --vary dirorder -- "${LIST[@]}"
out_has "directory order shuffled"

section "--bisect names dirorder among all variations"
expect_repro_rc 1 --vary all --bisect -- "${LIST[@]}"
out_has "bisect: the outputs differ with dirorder alone"
expect_repro_rc 1 --vary all --bisect --json -- "${LIST[@]}"
json_check '
assert o["bisect"] == {"control_again_differs": False, "causes": ["dirorder"]}, o["bisect"]
b = [r for r in o["results"] if r["role"] == "bisect"]
assert len(b) == 1 + len(o["vary"]), (len(b), o["vary"])
assert "dirorder" in o["vary"] and "time" in o["vary"], o["vary"]
assert b[0]["variation"] is None and b[0]["same"], b[0]
assert [r["variation"] for r in b if not r["same"]] == ["dirorder"], b
'
# The tree holds the control run's listing: the kernel's order.
ls -U listed > expected-listing.txt
assert_same listing.txt expected-listing.txt

section "varied by default: a step that embeds HOME, PATH, its user, host name, kernel release or clock"
# embeds WHAT COMMAND: a step writing what the command prints; repro with no
# options must find it not reproducible, naming the variation in run 2.
embeds() {
    local what=$1 cmd=$2
    printf '#!/bin/sh\n%s > embedded.txt\n' "$cmd" > "embed-$what.sh"
    chmod +x "embed-$what.sh"
    expect_repro_rc 1 -- "./embed-$what.sh"
    out_has "  embedded.txt: text differs"
    out_has "$3"
}
embeds home 'echo "$HOME"' "HOME=/nonexistent/cachet-repro-home"
embeds path 'echo "$PATH"' "PATH=…:/i_capture_the_path"
embeds clock 'date +%Y-%m-%d' "clock +373 days"
mkdir -p "$T/tmp"
TMPDIR="$T/tmp" embeds buildpath 'pwd' "build path $T/tmp/cachet-repro-buildpath-"
[ "$(cat embedded.txt)" = "$W" ] || fail "the tree holds another run's pwd: $(cat embedded.txt)"
# The steps' TMPDIRs stay, empty, in their pool (step_env.h).
left=$(find "$T/tmp" -mindepth 1 ! -path "$T/tmp/cachet-step-$(id -u)-*" -o -mindepth 2)
[ -z "$left" ] || fail "repro left its copy of the work tree: $left"
if grep -q "user namespace may not" "$T/repro.out"; then
    echo "user namespaces are not allowed here: user, host and kernel are not checked" >&2
else
    embeds user 'id -u; id -g' "uid and gid 1234 (user namespace)"
    embeds host 'hostname' "host name i-capture-the-hostname"
    embeds domain 'cat /proc/sys/kernel/domainname' "domain i-capture-the-domainname"
fi
if ! grep -q "may not set the UNAME26" "$T/repro.out"; then
    embeds kernel 'uname -r' "kernel release 2.6.x"
fi
# The work tree is the control's: one plain run's output.
[ "$(cat embedded.txt)" = "$(uname -r)" ] || [ ! -e embed-kernel.sh ] ||
    fail "the tree holds another run's output: $(cat embedded.txt)"
expect_repro_rc 0 --vary none -- ./embed-home.sh
out_has "reproducible"

section "which inputs differed"
mkdir -p home
echo "from home" > home/.reprorc
printf '#!/bin/sh\ncat "$HOME/.reprorc" 2>/dev/null\necho done > rc.out\n' > rc.sh
chmod +x rc.sh
HOME="$W/home" expect_repro_rc 1 --vary home -- ./rc.sh
out_has "it also relied on different inputs: "
out_has "home/.reprorc (run 1 only)"
out_has "/nonexistent/cachet-repro-home/.reprorc (this run only)"

section "--bisect on a step that differs with nothing varied says so once"
expect_repro_rc 1 --bisect -- sh -c 'echo $$ > pid.txt'
out_has "bisect: the outputs differ even with nothing varied"
! grep -q "bisect: the outputs differ with" "$T/repro.out" ||
    fail "bisect blames a variation for a step that differs by itself: $(cat "$T/repro.out")"
[ "$(grep -c '^bisect: run' "$T/repro.out")" -eq 1 ] ||
    fail "bisect ran variations after the control differed by itself: $(cat "$T/repro.out")"

section "every run starts from the same tree, and the tree ends as after one normal run"
# A step that appends to an input, removes a file, renames a directory,
# creates a read-only directory and an executable, and rewrites a symlink.
mk_start() {
    rm -rf "$1"
    mkdir -p "$1/olddir/sub"
    echo "log line 0" > "$1/log.txt"
    echo "to be removed" > "$1/gone.txt"
    echo "moved content" > "$1/olddir/sub/file.txt"
    ln -s log.txt "$1/link"
}
cat > tree-step.sh <<'EOF'
#!/bin/sh
set -e
echo "appended" >> log.txt
rm gone.txt
mv olddir newdir
echo "added" > newdir/sub/added.txt
mkdir -p out/ro
printf '#!/bin/sh\necho hi\n' > out/tool
chmod +x out/tool
echo "sealed" > out/ro/sealed.txt
chmod 555 out/ro
ln -sf newdir/sub/file.txt link
EOF
chmod +x tree-step.sh
mk_start "$T/repro-tree"
mk_start "$T/normal-tree"
(cd "$T/normal-tree" && "$W/tree-step.sh")
cd "$T/repro-tree"
repro_rc -n 3 --vary all -- "$W/tree-step.sh"
cd "$W"
[ "$RC" -eq 0 ] || fail "repro of a deterministic tree step exited $RC: $(cat "$T/repro.out") $(cat "$T/repro.err")"
out_has "reproducible: all 3 runs"
diff -r --no-dereference "$T/normal-tree" "$T/repro-tree" ||
    fail "the tree after repro differs from the tree after one normal run"
# Modes too (diff -r compares contents only).
(cd "$T/normal-tree" && find . -printf '%y %m %p\n' | sort) > "$T/normal.modes"
(cd "$T/repro-tree" && find . -printf '%y %m %p\n' | sort) > "$T/repro.modes"
diff "$T/normal.modes" "$T/repro.modes" || fail "modes after repro differ from one normal run"
[ "$(grep -c appended "$T/repro-tree/log.txt")" -eq 1 ] || fail "log.txt was appended to more than once"
chmod -R u+w "$T/normal-tree" "$T/repro-tree"

section "a step that changes its input differently each time is caught, and the input restored"
echo "seed" > counter.txt
cp counter.txt counter.orig
cat > bump.sh <<'EOF'
#!/bin/sh
od -An -N8 -tx8 /dev/urandom >> counter.txt
EOF
chmod +x bump.sh
expect_repro_rc 1 -n 3 -- ./bump.sh
out_has "  counter.txt: text differs"
# One run's worth of change: the seed line and one appended line.
[ "$(wc -l < counter.txt)" -eq 2 ] || fail "counter.txt has $(wc -l < counter.txt) lines, expected 2"
[ "$(head -1 counter.txt)" = seed ] || fail "counter.txt lost its first line"

section "exit status and stdout are compared"
expect_repro_rc 0 -- sh -c 'echo same; exit 3'
out_has "run 1 (control): exit 3"
expect_repro_rc 1 -n 3 -- sh -c 'od -An -N4 -tx4 /dev/urandom'
out_has "stdout: text differs"

section "nothing was stored"
[ "$(entries)" -eq "$ENTRIES_BEFORE" ] || fail "repro stored entries: $(entries), before: $ENTRIES_BEFORE"

section "progress on a terminal"
if command -v script > /dev/null 2>&1; then
    script -qec "$CACHET_BIN repro -n 2 -- true" /dev/null > "$T/tty.out" 2>&1 || true
    grep -q "run 2 of 2" "$T/tty.out" || fail "no progress line on a terminal: $(cat -v "$T/tty.out")"
fi

section "usage errors and a missing command: exit 2"
expect_repro_rc 2
expect_repro_rc 2 -n 1 -- true
expect_repro_rc 2 -n x -- true
expect_repro_rc 2 --vary bogus -- true
expect_repro_rc 2 --no-such-option -- true
expect_repro_rc 2 -- ./no-such-command
[ "$(wc -l < "$T/repro.err")" -eq 1 ] || fail "expected one line on stderr: $(cat "$T/repro.err")"
cachet repro --help > "$T/help.out"
grep -q "dirorder" "$T/help.out" || fail "repro --help does not mention dirorder"
