# stdout and stderr that are one file (`> log 2>&1`, `2>&1 | tee`, `|&`):
# the lines come out in the order a plain run gives, on the miss (while the
# step runs) and on the hit (the entry keeps the order of the step's
# writes). Keys do not depend on whether the streams are one file: an entry
# recorded one way is a hit the other way, and replays right.
source "$(dirname "$0")/lib.sh"
command -v gcc > /dev/null || skip "gcc not installed"

W=$(workdir)
cd "$W"
cat > alt.c <<'EOF_C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* alt N MODE: N lines to stdout and stderr in turn; MODE "raw" writes them
 * unbuffered, "line" line-buffered, "burst" two to one, three to the other. */
int main(int argc, char **argv)
{
	int n = atoi(argv[1]);
	if (!strcmp(argv[2], "raw"))
		setvbuf(stdout, NULL, _IONBF, 0);
	else
		setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < n; i++) {
		int k = !strcmp(argv[2], "burst") ? 2 + i % 2 : 1;
		for (int j = 0; j < k; j++)
			printf("out %d.%d\n", i, j);
		fprintf(stderr, "err %d\n", i);
	}
	return 0;
}
EOF_C
gcc -O2 -o alt alt.c

# same_as_plain NAME CMD...: CMD `> log 2>&1` plainly, then through cachet
# (a miss, then a hit), byte for byte.
same_as_plain() {
    local name=$1
    shift
    "$@" > "plain-$name.log" 2>&1
    for pass in miss hit; do
        step "$@" > "got-$name.log" 2>&1
        expect_rc 0
        expect "$pass"
        cmp "plain-$name.log" "got-$name.log" ||
            fail "$name, $pass: the merged output differs from the plain run's:
$(diff "plain-$name.log" "got-$name.log" || true)"
    done
}

section "> log 2>&1: a C program, unbuffered, line-buffered, in bursts"
same_as_plain raw ./alt 40 raw
same_as_plain line ./alt 40 line
same_as_plain burst ./alt 20 burst

section "> log 2>&1: python, unbuffered and line-buffered"
command -v python3 > /dev/null || skip "python3 not installed"
same_as_plain py-u python3 -u -c '
import sys
for i in range(30):
    print("out", i); sys.stderr.write("err %d\n" % i)'
same_as_plain py-line python3 -c '
import sys
sys.stdout.reconfigure(line_buffering=True)
for i in range(30):
    print("out", i); print("err", i, file=sys.stderr)'

section "> log 2>&1: sh -c mixing echo and echo >&2"
same_as_plain sh sh -c 'for i in 1 2 3 4 5; do echo "out $i"; echo "err $i" >&2; done; printf tail'

section "recorded merged, replayed separately: a hit, each stream whole"
step ./alt 10 line > merged.log 2>&1
expect miss "new step"
step ./alt 10 line > sep.out 2> sep.err
expect hit
./alt 10 line > plain-sep.out 2> plain-sep.err
assert_same plain-sep.out sep.out
assert_same plain-sep.err sep.err

section "recorded separately, replayed merged: a hit, in the step's order"
./alt 12 burst > plain-m.log 2>&1
step ./alt 12 burst > s.out 2> s.err
expect miss "new step"
step ./alt 12 burst > m.log 2>&1
expect hit
assert_same plain-m.log m.log

section "2>&1 | cat and >> log 2>> log (one file opened twice, appending)"
./alt 8 raw 2>&1 | cat > plain-pipe.log
for pass in miss hit; do
    cachet run -- ./alt 8 raw 2>&1 | cat > got-pipe.log
    expect "$pass"
    assert_same plain-pipe.log got-pipe.log
done
: > plain-app.log
./alt 8 raw >> plain-app.log 2>> plain-app.log
: > got-app.log
step ./alt 8 raw >> got-app.log 2>> got-app.log
expect hit
assert_same plain-app.log got-app.log

section "one terminal for both: the order as a plain run shows it"
if [ -c /dev/ptmx ] && python3 -c 'import pty' 2> /dev/null; then
    cat > onetty.py <<'EOF_PY'
import os, pty, sys
# Runs argv[1:] with stdout and stderr one pseudo-terminal; prints what it showed.
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
EOF_PY
    python3 onetty.py ./alt 10 raw > plain-tty.log
    for pass in miss hit; do
        python3 onetty.py "$CACHET_BIN" run -- ./alt 10 raw > got-tty.log
        expect "$pass"
        assert_same plain-tty.log got-tty.log
    done
else
    echo "skipped: no pseudo-terminals"
fi
