# Steps whose result depends on something cachet cannot key run normally and
# are never stored: a TCP connection, a pipe read on stdin.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

section "a step that opens a TCP connection to 127.0.0.1"
cat > server.py <<'EOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(8)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
n = 0
while True:
    c, _ = s.accept()
    n += 1
    c.sendall(b"pong-%d\n" % n)
    c.close()
EOF
cat > client.py <<'EOF'
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
data = b""
while True:
    chunk = c.recv(4096)
    if not chunk:
        break
    data += chunk
with open(sys.argv[2], "wb") as f:
    f.write(data)
EOF
python3 server.py "$T/port" &
track_pid $!
for _ in $(seq 100); do
    [ -s "$T/port" ] && break
    sleep 0.1
done
[ -s "$T/port" ] || fail "test setup: the TCP listener did not start"
PORT=$(cat "$T/port")

run_expect uncacheable "" -- python3 client.py "$PORT" net.out
expect_reason_contains network
assert_content net.out "pong-1"
# Not stored: it runs again and sees the server's next answer.
run_expect uncacheable "" -- python3 client.py "$PORT" net.out
expect_reason_contains network
assert_content net.out "pong-2"

section "a step that reads a pipe on stdin"
step_pipe() {
    local before
    before=$(status_count)
    set +e
    printf 'hi from a pipe\n' | cachet run -- cat > "$1"
    RC=$?
    set -e
    [ "$(status_count)" -eq $((before + 1)) ] || fail "no status line for the stdin pipe step"
}
step_pipe pipe1.out
expect_rc 0
expect uncacheable
expect_reason_contains stdin
assert_content pipe1.out "hi from a pipe"
step_pipe pipe2.out
expect_rc 0
expect uncacheable
assert_content pipe2.out "hi from a pipe"

section "a regular file on stdin is not a reason to refuse"
printf 'from a file\n' > in.txt
run_expect miss "new step" -- cat < in.txt > file1.out
assert_content file1.out "from a file"
run_expect hit "" -- cat < in.txt > file2.out
assert_content file2.out "from a file"

section "stats count the uncacheable steps"
n=$(stats_field uncacheable)
[ "$n" -ge 4 ] || fail "cachet stats --json: uncacheable = $n, expected at least 4"

section "a pipe on stdin that the step never reads does not matter"
printf 'const char tag[] = "NOREAD_END";\n' > noread.c
run_expect miss "new step" -- gcc -c noread.c -o noread.o < /dev/null
rm noread.o
set +e
# (PIPESTATUS: printf may die of SIGPIPE when nobody reads; that is fine.)
printf 'unread\n' | cachet run -- gcc -c noread.c -o noread.o
RC=${PIPESTATUS[1]}
set -e
expect_rc 0
expect hit
assert_contains_bytes noread.o NOREAD_END

check_status_file_format
