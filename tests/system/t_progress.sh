#!/usr/bin/env bash
# Long work shows progress on a terminal: remote flush, gc and repro draw one
# line on stderr (what, count, rate, time), redrawn with \r and cleared at
# the end; with stderr a pipe, with --json or -q, not a byte of it. The
# output on stdout is the same either way.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_lib.sh"

W=$(workdir)
cd "$W"

# on_pty NAME CMD...: runs CMD with stderr on a pseudo-terminal (stdout to
# NAME.out, what the terminal got to NAME.tty); prints the exit status.
cat > pty_run.py <<'PY'
import fcntl, os, struct, subprocess, sys, termios
name, cmd = sys.argv[1], sys.argv[2:]
master, slave = os.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
with open(name + ".out", "wb") as out:
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=slave)
os.close(slave)
got = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:  # EIO: every writer closed the terminal
        break
    if not chunk:
        break
    got += chunk
open(name + ".tty", "wb").write(got)
print(p.wait())
PY
on_pty() {
    python3 pty_run.py "$@"
}

# shown NAME LABEL: NAME.tty drew progress lines naming LABEL with a count,
# and cleared the line last.
shown() {
    python3 - "$1.tty" "$2" <<'PY' || fail "$1: no progress as expected: $(od -c "$1.tty" | head -20)"
import re, sys
data = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
label = sys.argv[2]
lines = [l for l in data.split("\r\x1b[K") if l]
assert any(l.startswith(label) for l in lines), lines
counted = [l for l in lines if re.match(re.escape(label) + r".*: \d+(/\d+)?(, [\d.]+/s)?(, \d+ s left)?, [\d.]+ s$", l)]
assert counted, lines
assert data.endswith("\r\x1b[K"), "the line is not cleared at the end"
assert all(len(l) < 100 for l in lines), "a line wider than the terminal"
PY
}

# quiet NAME: NAME.tty got none of it.
quiet() {
    if grep -q $'\e\[K' "$1.tty"; then
        fail "$1: progress where there should be none: $(od -c "$1.tty" | head)"
    fi
}

section "remote flush: uploading N of M"
start_nginx web
export CACHET_REMOTE="http://127.0.0.1:$NGINX_PORT/cache"
# Jobs are spooled with a remote configured; one that answers nothing keeps
# the background drainer from taking them before the flush.
for i in $(seq 12); do
    CACHET_REMOTE="http://127.0.0.1:1/none" cachet run -- sh -c "echo $i > g$i" </dev/null
done
[ "$(cachet remote status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["spool"])')" -eq 12 ] ||
    fail "the jobs were not spooled"
rc=$(on_pty flush "$CACHET_BIN" remote flush)
[ "$rc" -eq 0 ] || fail "remote flush on a terminal exited $rc: $(cat flush.tty)"
shown flush "remote flush: uploading"
grep -q "uploaded 12, dropped 0, left 0" flush.out || fail "flush: $(cat flush.out)"

section "remote flush in a pipe, and with -q on a terminal: nothing"
for i in $(seq 3); do
    CACHET_REMOTE="http://127.0.0.1:1/none" cachet run -- sh -c "echo $i > h$i" </dev/null
done
rc=$(on_pty flushq "$CACHET_BIN" remote flush -q)
[ "$rc" -eq 0 ] && [ ! -s flushq.out ] || fail "flush -q: $rc $(cat flushq.out)"
quiet flushq
[ ! -s flushq.tty ] || fail "flush -q printed: $(cat flushq.tty)"
for i in $(seq 3); do
    CACHET_REMOTE="http://127.0.0.1:1/none" cachet run -- sh -c "echo $i > j$i" </dev/null
done
cachet remote flush > pipe.out 2> pipe.err
[ ! -s pipe.err ] || fail "remote flush in a pipe wrote to stderr: $(od -c pipe.err | head)"
grep -q "uploaded 3," pipe.out || fail "flush in a pipe: $(cat pipe.out)"
unset CACHET_REMOTE

section "gc: the phases with their counts"
rc=$(on_pty gc "$CACHET_BIN" gc --max-size 1)
[ "$rc" -eq 0 ] || fail "gc on a terminal exited $rc"
shown gc "gc: "
grep -q "^removed [0-9]* entries" gc.out || fail "gc: $(cat gc.out)"
for i in $(seq 5); do cachet run -- sh -c "echo $i > k$i"; done
cachet gc --max-size 1 > pipe.out 2> pipe.err
[ ! -s pipe.err ] || fail "gc in a pipe wrote to stderr: $(od -c pipe.err | head)"
grep -q "^removed [1-9][0-9]* entr" pipe.out || fail "gc in a pipe: $(cat pipe.out)"

section "repro -n 3: which run, runs done, with a rate once one is known"
rc=$(on_pty repro "$CACHET_BIN" repro -n 3 -- sh -c 'sleep 0.7; echo same > r.txt')
[ "$rc" -eq 0 ] || fail "repro on a terminal exited $rc: $(cat repro.out)"
shown repro "repro: run "
grep -a -q "repro: run 3 of 3: 2/3" repro.tty || fail "repro: no run 3 of 3: $(od -c repro.tty | head)"
grep -a -q "/s" repro.tty || fail "no rate in the repro progress: $(od -c repro.tty | head)"
rc=$(on_pty reproj "$CACHET_BIN" repro -n 2 --json -- sh -c 'echo same > r.txt')
[ "$rc" -eq 0 ] || fail "repro --json exited $rc"
quiet reproj
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' reproj.out || fail "repro --json output"
cachet repro -n 2 -- sh -c 'echo same > r.txt' > pipe.out 2> pipe.err || fail "repro in a pipe"
if grep -q $'\e\[K' pipe.err; then fail "repro in a pipe drew progress"; fi
