# The Python module (python/cachet.py): cachet.run runs a generator step
# through cachet like subprocess.run, returns a CompletedProcess that says
# hit or miss and why, raises CalledProcessError and TimeoutExpired as
# subprocess.run does, and leaves the caller's own status file complete.
source "$(dirname "$0")/lib.sh"

MODULE_DIR=$(cd "$(dirname "$0")/../../python" && pwd)
W=$(workdir)
cd "$W"
cat > gen.py <<'EOF'
# A code generator: writes a C kernel for each name on the command line and
# says what it wrote.
import sys
out = sys.argv[1]
with open(out, "w") as f:
    for name in sys.argv[2:]:
        f.write("float %s(float x) { return x > 0 ? x : 0; }\n" % name)
print("wrote %s (%d kernels)" % (out, len(sys.argv) - 2))
EOF

# The outer status file gets the module's steps too: count them at the end.
export PYTHONPATH="$MODULE_DIR"
python3 - "$W" <<'EOF' || fail "the Python checks failed (see the traceback above)"
import os, subprocess, sys
import cachet

w = sys.argv[1]
gen = ["python3", "gen.py", "kernels.c", "add_relu", "mul_relu"]

def expect(cond, what):
    if not cond:
        raise AssertionError(what)

print("--- a generator step: miss, then hit with identical outputs")
r1 = cachet.run(gen, capture_output=True, text=True, cwd=w)
expect(isinstance(r1, subprocess.CompletedProcess), "not a CompletedProcess: %r" % (r1,))
expect(r1.returncode == 0, "returncode %r" % r1.returncode)
expect(r1.args == gen, "args %r, expected the step's own args" % (r1.args,))
expect(r1.result == "miss" and r1.reason == "new step", "first run: %r" % (r1,))
expect(not r1.cached, "first run says cached")
expect(isinstance(r1.duration_ms, int) and r1.duration_ms >= 0, "duration_ms %r" % r1.duration_ms)
expect(r1.stdout == "wrote kernels.c (2 kernels)\n", "stdout %r" % r1.stdout)
expect(r1.stderr == "", "stderr %r" % r1.stderr)
first = open(os.path.join(w, "kernels.c"), "rb").read()
os.unlink(os.path.join(w, "kernels.c"))

r2 = cachet.run(gen, capture_output=True, text=True, cwd=w)
expect(r2.result == "hit" and r2.cached and r2.reason is None, "second run: %r" % (r2,))
expect(r2.stdout == r1.stdout, "replayed stdout %r" % r2.stdout)
expect(open(os.path.join(w, "kernels.c"), "rb").read() == first, "the replayed kernels.c differs")

print("--- bytes output, the caller's stdout untouched when not captured")
r3 = cachet.run(gen, stdout=subprocess.PIPE, cwd=w)
expect(r3.cached and r3.stdout == r1.stdout.encode(), "bytes mode: %r" % (r3,))
r4 = cachet.run(gen, stdout=subprocess.DEVNULL, cwd=w)
expect(r4.cached and r4.stdout is None, "DEVNULL: %r" % (r4,))

print("--- an edited generator misses with the reason, then hits")
with open(os.path.join(w, "gen.py"), "a") as f:
    f.write("# edited\n")
r5 = cachet.run(gen, capture_output=True, text=True, cwd=w)
expect(r5.result == "miss" and r5.reason == "inputs changed", "after the edit: %r" % (r5,))
r6 = cachet.run(gen, capture_output=True, text=True, cwd=w)
expect(r6.cached, "after the edit, again: %r" % (r6,))

print("--- env= is the step's environment, and it is keyed")
env = dict(os.environ, KERNEL_FLAVOUR="fast")
r7 = cachet.run(["sh", "-c", "echo $KERNEL_FLAVOUR > flavour.txt"], env=env, cwd=w)
expect(r7.result == "miss", "env step: %r" % (r7,))
expect(open(os.path.join(w, "flavour.txt")).read() == "fast\n", "env not passed")
r8 = cachet.run(["sh", "-c", "echo $KERNEL_FLAVOUR > flavour.txt"], env=env, cwd=w)
expect(r8.cached, "env step again: %r" % (r8,))
env["KERNEL_FLAVOUR"] = "small"
r9 = cachet.run(["sh", "-c", "echo $KERNEL_FLAVOUR > flavour.txt"], env=env, cwd=w)
expect(r9.result == "miss", "another env value: %r" % (r9,))
expect(open(os.path.join(w, "flavour.txt")).read() == "small\n", "env not passed")

print("--- shell=True runs the string with /bin/sh -c")
r10 = cachet.run("echo one; echo two", shell=True, capture_output=True, text=True, cwd=w)
expect(r10.stdout == "one\ntwo\n" and r10.result == "miss", "shell: %r" % (r10,))
expect(r10.args == "echo one; echo two", "shell args %r" % (r10.args,))
r11 = cachet.run("echo one; echo two", shell=True, capture_output=True, text=True, cwd=w)
expect(r11.cached and r11.stdout == "one\ntwo\n", "shell again: %r" % (r11,))

print("--- input= is a stdin stream: run every time, uncacheable")
r12 = cachet.run(["tr", "a-z", "A-Z"], input="relu\n", capture_output=True, text=True, cwd=w)
expect(r12.stdout == "RELU\n", "input: %r" % (r12,))
expect(r12.result == "uncacheable" and "stdin" in r12.reason, "input: %r" % (r12,))

print("--- failures: check=True raises CalledProcessError with the step's args")
fail_cmd = ["python3", "-c", "import sys; print('bad kernel', file=sys.stderr); sys.exit(3)"]
r13 = cachet.run(fail_cmd, capture_output=True, text=True, cwd=w)
expect(r13.returncode == 3 and r13.stderr == "bad kernel\n", "failed step: %r" % (r13,))
expect(r13.result == "miss" and r13.reason == "command failed (not stored)", "failed step: %r" % (r13,))
try:
    cachet.run(fail_cmd, capture_output=True, text=True, cwd=w, check=True)
    raise AssertionError("check=True did not raise")
except subprocess.CalledProcessError as e:
    expect(e.returncode == 3 and e.cmd == fail_cmd and e.stderr == "bad kernel\n", "error: %r" % (e,))
try:
    cachet.run(["sh", "-c", "kill -TERM $$"], check=True, cwd=w)
    raise AssertionError("check=True did not raise for a signal")
except subprocess.CalledProcessError as e:
    expect(e.returncode == -15, "killed step: returncode %r" % e.returncode)
try:
    cachet.run(["/nonexistent/generator"], capture_output=True, cwd=w)
    raise AssertionError("a missing program did not raise")
except FileNotFoundError as e:
    expect(e.filename == "/nonexistent/generator", "missing program: %r" % (e,))

print("--- timeout= raises TimeoutExpired with the step's args")
slow = ["sh", "-c", "echo $$ > slow.pid; exec sleep 30"]
try:
    cachet.run(slow, timeout=2, cwd=w)
    raise AssertionError("timeout did not raise")
except subprocess.TimeoutExpired as e:
    expect(e.cmd == slow, "timeout cmd %r" % (e.cmd,))
import time
pid = int(open(os.path.join(w, "slow.pid")).read())
for _ in range(50):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    time.sleep(0.1)
else:
    raise AssertionError("the step that timed out (pid %d) is still running" % pid)

print("--- cachet=, CACHET_BIN and PATH choose the executable")
expect(cachet.find_cachet() == os.environ["CACHET_BIN"], "CACHET_BIN not used")
env = dict(os.environ)
del env["CACHET_BIN"]
env["PATH"] = os.path.dirname(os.environ["CACHET_BIN"]) + ":" + env["PATH"]
expect(cachet.find_cachet(env=env) == os.path.join(os.path.dirname(os.environ["CACHET_BIN"]), "cachet"),
       "PATH not used")
try:
    cachet.run(["true"], cachet="/nonexistent/cachet")
    raise AssertionError("a missing cachet did not raise")
except FileNotFoundError:
    pass
EOF

section "the caller's status file got one line per step the module ran"
# 15: r1 to r13, the failing step with check=True and the killed one; not
# the missing program (raised before cachet runs) nor the step that timed
# out (cachet was killed with it).
check_status_file_format
n=$(status_count)
[ "$n" -eq 15 ] || fail "the outer status file has $n lines, expected 15"

