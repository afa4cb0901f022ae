# Every kind of output a step can leave is restored by a hit, as the step
# left it: files renamed into place, temporaries (not restored), directories,
# symlinks, deletions, modes, mtimes set on purpose, stdout and stderr bytes,
# and exit statuses and signals (failures are not stored).
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
started=$(date +%s)

section "a temporary name renamed into place"
S=(sh -c 'printf renamed-data > out.tmp && mv out.tmp out.txt')
run_expect miss "new step" -- "${S[@]}"
assert_content out.txt renamed-data
assert_absent out.tmp
run_expect hit "" -- "${S[@]}"
echo corrupted > out.txt
run_expect hit "" -- "${S[@]}"
assert_content out.txt renamed-data
assert_absent out.tmp
rm out.txt
touch -d '2000-01-01' out.tmp  # a leftover under the temporary name
run_expect hit "" -- "${S[@]}"
assert_content out.txt renamed-data
# A restored file that the step did not stamp gets mtime = now.
[ "$(stat -c %Y out.txt)" -ge "$started" ] || fail "restored out.txt has an old mtime"
rm -f out.tmp

section "a temporary created and removed is not restored"
S=(sh -c 'printf scratch > scratch.tmp && cat scratch.tmp > kept.txt && rm scratch.tmp')
run_expect miss "new step" -- "${S[@]}"
assert_content kept.txt scratch
assert_absent scratch.tmp
rm kept.txt
run_expect hit "" -- "${S[@]}"
assert_content kept.txt scratch
assert_absent scratch.tmp

section "a directory of outputs"
S=(sh -c 'mkdir -p outdir/sub/deeper && printf A > outdir/a && printf B > outdir/sub/b && mkdir outdir/empty')
run_expect miss "new step" -- "${S[@]}"
# The directories exist now: `mkdir outdir/empty` fails, as it does plainly
# (t_prestate.sh: a directory the step made was absent).
step "${S[@]}"
expect miss
expect_rc 1
rm -rf outdir
run_expect hit "" -- "${S[@]}"
assert_content outdir/a A
assert_content outdir/sub/b B
[ -d outdir/sub/deeper ] || fail "outdir/sub/deeper was not restored"
[ -d outdir/empty ] || fail "outdir/empty was not restored"
echo junk > outdir/sub/b
rm -rf outdir
mkdir outdir
run_expect miss "inputs changed" -- "${S[@]}"
assert_content outdir/sub/b B
echo junk > outdir/sub/b
rm -rf outdir/sub outdir/empty
run_expect hit "" -- "${S[@]}"
assert_content outdir/sub/b B

section "a symlink output is restored as a symlink with the same target"
S=(sh -c 'ln -sfn ../elsewhere/target.txt lnk')
run_expect miss "new step" -- "${S[@]}"
[ -L lnk ] && [ "$(readlink lnk)" = ../elsewhere/target.txt ] || fail "step made no symlink lnk"
# The link exists now, where the step made one: a plain `ln -s` would fail,
# so this runs (and `ln -sfn` replaces it), then hits.
run_expect miss "inputs changed" -- "${S[@]}"
run_expect hit "" -- "${S[@]}"
rm lnk
run_expect hit "" -- "${S[@]}"
[ -L lnk ] || fail "lnk was not restored as a symlink"
[ "$(readlink lnk)" = ../elsewhere/target.txt ] || fail "lnk restored with target '$(readlink lnk)'"
rm lnk
echo "not a link" > lnk
run_expect hit "" -- "${S[@]}"
[ -L lnk ] && [ "$(readlink lnk)" = ../elsewhere/target.txt ] || fail "a regular file lnk was not replaced by the symlink"

section "a symlink pair: libfoo.so -> libfoo.so.1"
S=(sh -c 'printf lib1 > libfoo.so.1 && ln -sfn libfoo.so.1 libfoo.so')
run_expect miss "new step" -- "${S[@]}"
rm libfoo.so libfoo.so.1
run_expect hit "" -- "${S[@]}"
[ -L libfoo.so ] && [ "$(readlink libfoo.so)" = libfoo.so.1 ] || fail "libfoo.so not restored as a symlink"
[ -f libfoo.so.1 ] && [ ! -L libfoo.so.1 ] || fail "libfoo.so.1 not restored as a file"
assert_content libfoo.so lib1

section "a deleted pre-existing file is deleted again by a hit"
echo old > victim.txt
S=(rm -f victim.txt)
run_expect miss "new step" -- "${S[@]}"
assert_absent victim.txt
echo old > victim.txt
run_expect hit "" -- "${S[@]}"
assert_absent victim.txt

section "an executable bit"
S=(sh -c 'printf "#!/bin/sh\necho tool-ran\n" > tool.sh && chmod 755 tool.sh')
run_expect miss "new step" -- "${S[@]}"
rm tool.sh
run_expect hit "" -- "${S[@]}"
[ -x tool.sh ] || fail "tool.sh restored without its executable bit"
[ "$(stat -c %a tool.sh)" = 755 ] || fail "tool.sh restored with mode $(stat -c %a tool.sh)"
[ "$(./tool.sh)" = tool-ran ] || fail "restored tool.sh does not run"
chmod 644 tool.sh
run_expect hit "" -- "${S[@]}"
[ "$(stat -c %a tool.sh)" = 755 ] || fail "tool.sh (chmod 644 before the hit) restored with mode $(stat -c %a tool.sh)"

section "a file whose mtime the step set with touch -d"
S=(sh -c 'printf stamped > stamped.txt && touch -d "2001-02-03 04:05:06" stamped.txt')
want=$(date -d '2001-02-03 04:05:06' +%s)
run_expect miss "new step" -- "${S[@]}"
[ "$(stat -c %Y stamped.txt)" = "$want" ] || fail "test setup: touch -d did not stamp"
rm stamped.txt
run_expect hit "" -- "${S[@]}"
assert_content stamped.txt stamped
[ "$(stat -c %Y stamped.txt)" = "$want" ] ||
    fail "stamped.txt restored with mtime $(stat -c %Y stamped.txt), expected $want"

section "a step that rewrites its own input (sed -i): a memo from before to after"
printf 'colour\n' > edit.txt
S=(sed -i 's/colour/color/' edit.txt)
run_expect miss "new step" -- "${S[@]}"
assert_content edit.txt color
printf 'colour\n' > edit.txt
run_expect hit "" -- "${S[@]}"
assert_content edit.txt color
# Now the input is the edited text: a different state before, so a miss.
run_expect miss "inputs changed" -- "${S[@]}"
assert_content edit.txt color

section "appending to an existing file: its old content is an input"
printf 'one\n' > log.txt
S=(sh -c 'echo two >> log.txt')
run_expect miss "new step" -- "${S[@]}"
[ "$(cat log.txt)" = "$(printf 'one\ntwo')" ] || fail "log.txt: $(cat log.txt)"
run_expect miss "inputs changed" -- "${S[@]}"
[ "$(cat log.txt)" = "$(printf 'one\ntwo\ntwo')" ] || fail "log.txt: $(cat log.txt)"
printf 'one\n' > log.txt
run_expect hit "" -- "${S[@]}"
[ "$(cat log.txt)" = "$(printf 'one\ntwo')" ] || fail "log.txt after a hit: $(cat log.txt)"

section "stdout and stderr, byte-exact, binary, no trailing newline"
S=(sh -c 'printf "out\000bin\377\001\nlast"; printf "err\000\376\nno-newline" >&2')
"${S[@]}" > want.out 2> want.err
run_expect miss "new step" -- "${S[@]}" > got1.out 2> got1.err
assert_same got1.out want.out
assert_same got1.err want.err
run_expect hit "" -- "${S[@]}" > got2.out 2> got2.err
assert_same got2.out want.out
assert_same got2.err want.err

section "a large binary stdout"
head -c 3000000 /dev/urandom > blob.bin
run_expect miss "new step" -- cat blob.bin > got1.bin
assert_same got1.bin blob.bin
run_expect hit "" -- cat blob.bin > got2.bin
assert_same got2.bin blob.bin

section "exit status 3 passes through and is not stored"
S=(sh -c 'printf partial; printf failing >&2; printf x > failed-output.txt; exit 3')
step "${S[@]}" > f1.out 2> f1.err
expect_rc 3
expect miss "command failed (not stored)"
assert_content f1.out partial
assert_content f1.err failing
rm failed-output.txt
step "${S[@]}" > f2.out 2> f2.err
expect_rc 3
expect miss "command failed (not stored)"
assert_content f2.out partial
assert_content failed-output.txt x

section "death by SIGTERM: cachet dies of SIGTERM, nothing stored"
S=(sh -c 'printf before-kill; kill -TERM $$; echo after-kill')
step "${S[@]}" > k1.out
expect_rc 143
expect miss "command failed (not stored)"
assert_content k1.out before-kill
# Not an exit status of 143: the process itself ends by the signal.
before=$(status_count)
how=$(python3 -c '
import subprocess, sys
print(subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode)' \
    "$CACHET_BIN" run -- "${S[@]}")
[ "$how" = -15 ] || fail "cachet did not die of SIGTERM (python returncode $how, expected -15)"
[ "$(status_count)" -eq $((before + 1)) ] || fail "no status line for the killed step"
expect miss "command failed (not stored)"

check_status_file_format
