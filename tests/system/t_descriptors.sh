# Descriptors and stdin. A step keeps the descriptors it is given (`3<file`,
# `4>file`, `<(cmd)`, make's jobserver) as without cachet; one that reads or
# writes such a descriptor, or reads a FIFO, socket or device, or reads stdin
# when it is not a regular file, runs uncached with the reason, since none of
# those bytes can be keyed. make's jobserver is no data: a step that takes
# tokens is cached. A step that uses none of them hits as before.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
echo "line one" > data.txt

section "an inherited descriptor read by the step: as without cachet, uncached"
sh -c 'cat <&3' 3< data.txt > plain.out
step sh -c 'cat <&3' 3< data.txt > got.out
expect_rc 0
assert_same plain.out got.out
expect uncacheable "uses inherited descriptor"

section "an inherited descriptor written by the step"
sh -c 'echo written >&4' 4> plain4.txt
step sh -c 'echo written >&4' 4> got4.txt
expect_rc 0
assert_same plain4.txt got4.txt
expect uncacheable "uses inherited descriptor"

section "an inherited descriptor the step leaves alone: cached, and hits"
run_expect miss "new step" -- sh -c 'echo untouched > u.txt' 3< data.txt
run_expect hit "" -- sh -c 'echo untouched > u.txt' 3< data.txt
assert_content u.txt untouched

section "a descriptor closed and opened again on a file is not the inherited one"
run_expect miss "new step" -- sh -c 'exec 3<&-; exec 3< data.txt; cat <&3 > copy.txt' 3< /dev/null
assert_same data.txt copy.txt

section "process substitution: the pipe opened by /dev/fd/N"
cat <(echo substituted) > plain.out
step cat <(echo substituted) > got.out
expect_rc 0
assert_same plain.out got.out
expect uncacheable "reads a fifo"

section "a named FIFO opened as an input file"
mkfifo fifo
(echo through the fifo > fifo &)
step cat fifo > got.out
expect_rc 0
assert_content got.out "through the fifo"
expect uncacheable "reads a fifo"

section "a terminal device opened by path"
if [ -c /dev/ptmx ] && python3 -c 'import os, pty' 2>/dev/null; then
    step python3 -c 'import os, pty; m, s = pty.openpty(); n = os.ttyname(s); os.write(m, b"x\n"); f = open(n, "rb", buffering=0); print(f.read(1))'
    expect_rc 0
    expect uncacheable "reads a device"
fi

section "/dev/zero and /dev/urandom are no reason to refuse"
run_expect miss "new step" -- sh -c 'head -c 4 /dev/zero | od -An -tx1 > zeros.txt'
run_expect hit "" -- sh -c 'head -c 4 /dev/zero | od -An -tx1 > zeros.txt'

section "stdin: a run that read /dev/null is no answer for a pipe (t_stdin_null)"
run_expect miss "new step" -- gcc -E -P -x c - < /dev/null > null.out
echo 'int from_the_pipe;' | gcc -E -P -x c - > plain.out
set +e
echo 'int from_the_pipe;' | cachet run -- gcc -E -P -x c - > got.out
set -e
expect uncacheable "reads stdin stream"
assert_same plain.out got.out

section "stdin copied to another descriptor and read there"
set +e
echo 'copied' | cachet run -- python3 -c 'import os; fd = os.dup2(0, 5); print(os.read(5, 100).decode().strip())' > got.out
set -e
assert_content got.out copied
expect uncacheable "duplicates stdin stream"

section "a shell's redirection that saves stdin is not a read of it"
set +e
echo 'unread' | cachet run -- sh -c 'cat < data.txt > shell.out'
set -e
expect miss "new step"
set +e
echo 'unread again' | cachet run -- sh -c 'cat < data.txt > shell.out'
set -e
expect hit
assert_same data.txt shell.out

section "a hit moves a shared stdin file's offset as the step did"
printf 'line1\nline2\nline3\n' > lines.txt
{ head -n1 > plain-a.txt; head -n1 > plain-b.txt; } < lines.txt
for round in miss hit; do
    { cachet run -- head -n1 > a.txt; cachet run -- head -n1 > b.txt; } < lines.txt
    expect "$round"
    assert_same plain-a.txt a.txt
    assert_same plain-b.txt b.txt
done
assert_content b.txt line2
# A step that reads two lines through a child: the offset it leaves is the
# file description's, shared by all its processes.
{ cachet run -- sh -c 'head -n2 > /dev/null; echo rest'; cat > after.txt; } < lines.txt
{ cachet run -- sh -c 'head -n2 > /dev/null; echo rest'; cat > after-hit.txt; } < lines.txt
expect hit
assert_content after-hit.txt line3
assert_same after.txt after-hit.txt

section "make's jobserver: a sub-make through cachet takes tokens, is cached, and does not warn"
mkdir -p sub
printf 'all: a b\na b:\n\t@echo $@ > $@.txt\n' > sub/Makefile
printf 'all:\n\t+@"$(CACHET_BIN)" run -- $(MAKE) -s -C sub\n' > Makefile
make -s -j2 > make.out 2> make.err
expect miss "new step"
if grep -i jobserver make.err; then
    fail "the sub-make warned about the jobserver"
fi
rm sub/a.txt sub/b.txt
make -s -j2 > make.out 2> make.err
expect hit
assert_content sub/a.txt a
! grep -i jobserver make.err || fail "the hit replayed a jobserver warning"

check_status_file_format
