# Hostile remote servers never stall a build: against servers written here
# (python3 on 127.0.0.1) that trickle a byte a second, announce a 1.5 GB
# value, announce 2^31-1 nested elements, answer every request in 1.9 s (just
# under op-timeout) with sixteen path sets to try, or answer random bytes, a
# lookup's whole remote time stays within op-timeout, and the server is then
# skipped (the circuit breaker) by the next steps like one that is down. The
# figures are printed (docs/reliability.md quotes them).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_lib.sh"

W=$(workdir)
cd "$W"
OP_MS=2000
# What the step itself and cachet take beside the lookup, on a loaded machine.
SLACK_MS=3000
LOG="$T/requests.log"

# A server on a free port; its mode in $T/mode; each request a line in $LOG.
cat > "$T/hostile_redis.py" <<'PY'
import socket, sys, threading, time
port, mode, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(16)
def serve(c):
    try:
        c.recv(65536)
        open(log, "a").write("request\n")
        if mode == "trickle":
            for b in b"$5\r\nhello\r\n" * 100:
                c.sendall(bytes([b]))
                time.sleep(1)
        elif mode == "huge":
            c.sendall(b"$1500000000\r\n" + b"x" * 65536)
            time.sleep(60)
        elif mode == "nested":
            c.sendall(b"*2147483647\r\n" * 64)
            time.sleep(60)
    except OSError:
        pass
    finally:
        c.close()
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
cat > "$T/hostile_http.py" <<'PY'
import http.server, os, sys, time
port, root, log, modefile = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def path_of(self):
        return os.path.join(root, self.path.strip("/").replace("/", "_"))
    def mode(self):
        try: return open(modefile).read().strip()
        except OSError: return "honest"
    def do_PUT(self):
        n = int(self.headers["Content-Length"])
        data = self.rfile.read(n)
        open(self.path_of(), "wb").write(data)
        self.send_response(201); self.send_header("Content-Length", "0"); self.end_headers()
    def answer(self, body):
        open(log, "a").write(self.command + "\n")
        m = self.mode()
        if m == "slow": time.sleep(1.9)
        if m == "garbage" and body is not None: body = os.urandom(4096)
        if body is None:
            self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers()
            return
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        if self.command == "GET": self.wfile.write(body)
    def read(self):
        try: return open(self.path_of(), "rb").read()
        except OSError: return None
    def do_GET(self): self.answer(self.read())
    def do_HEAD(self): self.answer(self.read())
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY

now_ms() { date +%s%3N; }
requests() { [ -f "$LOG" ] && wc -l < "$LOG" || echo 0; }
# timed NAME CMD...: runs a step, prints how long it took; sets MS.
timed() {
    local name=$1 t0
    shift
    t0=$(now_ms)
    step "$@"
    MS=$(($(now_ms) - t0))
    echo "figure: $name: ${MS} ms"
}

section "hostile Redis servers: one lookup stays within op-timeout, then the server is skipped"
for mode in trickle huge nested; do
    port=$(free_port)
    # $PY, not the python3 function of remote_lib.sh: $! must be the server itself,
    # for the exit trap to stop it.
    "$PY" "$T/hostile_redis.py" "$port" "$mode" "$LOG" &
    track_pid $!
    wait_port "$port"
    export CACHET_DIR="$T/cache-$mode" CACHET_REMOTE="redis://127.0.0.1:$port op-timeout=${OP_MS}ms"
    : > "$LOG"
    timed "redis $mode, first step" sh -c "echo $mode > $mode.out"
    expect miss
    [ "$MS" -lt $((OP_MS + SLACK_MS)) ] || fail "redis $mode: the step took $MS ms (op-timeout $OP_MS ms)"
    [ $(($(remote_counter remote_errors) + $(remote_counter remote_corrupt))) -ge 1 ] ||
        fail "redis $mode: neither an error nor a corrupt answer counted"
    before=$(requests)
    timed "redis $mode, next step" sh -c "echo $mode again > $mode.2.out"
    [ "$(requests)" -eq "$before" ] || fail "redis $mode: the next step asked the server again"
    [ "$MS" -lt "$OP_MS" ] || fail "redis $mode: the next step took $MS ms"
    [ "$(remote_counter remote_skipped)" -ge 1 ] || fail "redis $mode: not skipped"
done

section "an HTTP server answering each request in 1.9 s, with 16 path sets to try"
port=$(free_port)
mkdir -p "$T/web"
"$PY" "$T/hostile_http.py" "$port" "$T/web" "$LOG" "$T/mode" &
track_pid $!
wait_port "$port"
export CACHET_REMOTE="http://127.0.0.1:$port op-timeout=${OP_MS}ms"
export CACHET_DIR="$T/writer"
# Sixteen path sets under one weak key: the step reads the file sel names.
for i in $(seq 16); do echo "content $i" > "f$i"; done
for i in $(seq 16); do
    echo "f$i" > sel
    step sh -c 'cat "$(cat sel)"'
done
cachet remote flush -q || fail "flush failed"
echo slow > "$T/mode"
echo f17 > sel
echo "content 17" > f17
export CACHET_DIR="$T/reader"
: > "$LOG"
timed "http 1.9 s per request, 16 path sets" sh -c 'cat "$(cat sel)"'
expect miss
echo "figure: requests: $(requests)"
[ "$MS" -lt $((OP_MS + SLACK_MS)) ] || fail "slow HTTP: the lookup took $MS ms (op-timeout $OP_MS ms)"
before=$(requests)
echo f16 > sel
timed "http slow, next step" sh -c 'cat "$(cat sel)"'
[ "$(requests)" -eq "$before" ] || fail "slow HTTP: the next step asked the server again"

section "an HTTP server answering random bytes is skipped after one step"
echo garbage > "$T/mode"
export CACHET_DIR="$T/reader2"
echo f3 > sel
: > "$LOG"
timed "http random bytes" sh -c 'cat "$(cat sel)"'
expect miss
[ "$(remote_counter remote_corrupt)" -ge 1 ] || fail "random bytes not counted corrupt"
before=$(requests)
echo f4 > sel
timed "http random bytes, next step" sh -c 'cat "$(cat sel)"'
expect miss
[ "$(requests)" -eq "$before" ] || fail "garbage: the next step asked the server again"
[ "$(remote_counter remote_skipped)" -ge 1 ] || fail "garbage: the server was not skipped"

section "honest again, after retry-after: the server serves hits"
rm "$T/mode"
export CACHET_DIR="$T/reader3"
echo f5 > sel
step sh -c 'cat "$(cat sel)"'
expect hit remote
