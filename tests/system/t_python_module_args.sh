#!/usr/bin/env bash
# cachet.run against subprocess.run, side by side, for each argument
# subprocess.run takes: the same result (status, stdout, stderr, side
# effects) or the same exception (type, errno, filename), plus hit or miss.
source "$(dirname "$0")/lib.sh"

MODULE_DIR=$(cd "$(dirname "$0")/../../python" && pwd)
W=$(workdir)
cd "$W"
export PYTHONPATH="$MODULE_DIR"
python3 - "$W" <<'PY' || fail "the side-by-side checks failed (see the traceback above)"
import errno, os, pathlib, resource, subprocess, sys, time
import cachet

w = sys.argv[1]
os.chdir(w)

def outcome(fn, args, kw):
    try:
        r = fn(args, **kw)
    except Exception as e:  # the exception is the outcome to compare
        return ("raised", type(e), getattr(e, "errno", None), getattr(e, "filename", None),
                getattr(e, "returncode", None), getattr(e, "cmd", None),
                # the time left when it expired: about the timeout given
                round(getattr(e, "timeout", 0) or 0, 1)), None
    return ("returned", r.returncode, r.stdout, r.stderr, r.args), r

def same(what, args, prepare=None, **kw):
    """Runs args with subprocess.run, then cachet.run, with fresh kw from
    prepare() when given; both outcomes must be equal. Returns cachet's."""
    kw1 = prepare() if prepare else kw
    plain, _ = outcome(subprocess.run, args, kw1)
    kw2 = prepare() if prepare else kw
    through, r = outcome(cachet.run, args, kw2)
    if plain != through:
        raise AssertionError("%s:\n subprocess.run: %r\n cachet.run:     %r" % (what, plain, through))
    if r is not None and r.result not in ("hit", "miss", "uncacheable"):
        raise AssertionError("%s: result %r" % (what, r.result))
    print("same:", what, "->", plain[0], plain[1].__name__ if plain[0] == "raised" else plain[1])
    return r

def expect(cond, what):
    if not cond:
        raise AssertionError(what)

os.makedirs("bin1"); os.makedirs("bin2"); os.makedirs("sub")
def script(path, text, mode=0o755):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + text + "\n")
    os.chmod(path, mode)
script("bin1/tool", "echo from bin1", 0o644)     # not executable
script("bin2/tool", "echo from bin2 $FOO")
script("sub/rel", "echo relative; pwd")
script("data.txt", "echo never", 0o644)

print("--- the program: lookup and errors")
same("a program that does not exist", ["no-such-prog"], capture_output=True)
same("a path that does not exist", ["/nonexistent/generator"], capture_output=True)
same("a file that is not executable", ["./data.txt"], capture_output=True)
same("a directory", ["./sub"], capture_output=True)
same("an empty args", [], capture_output=True)
path_env = {"PATH": os.path.join(w, "bin1") + ":" + os.path.join(w, "bin2"), "FOO": "1"}
r = same("env's PATH: the non-executable is skipped", ["tool"], env=path_env,
         capture_output=True, text=True)
expect(r.stdout == "from bin2 1\n", "tool: %r" % (r,))
same("env's PATH: only a non-executable", ["tool"], env={"PATH": os.path.join(w, "bin1")},
     capture_output=True)
# The caller's PATH has the tool, the step's env does not: not found.
os.environ["PATH"] = os.path.join(w, "bin2") + ":" + os.environ["PATH"]
same("env without the tool's directory", ["tool"], env={"PATH": "/usr/bin:/bin"},
     capture_output=True)
r = same("the caller's PATH when env is not given", ["tool"], capture_output=True, text=True)
expect(r.stdout == "from bin2\n", "tool: %r" % (r,))
r = same("env without PATH: os.defpath", ["sh", "-c", "echo $FOO"], env={"FOO": "1"},
         capture_output=True, text=True)
expect(r.stdout == "1\n", "env={'FOO': '1'}: %r" % (r,))
expect(cachet.run(["sh", "-c", "echo $FOO"], env={"FOO": "1"}, capture_output=True).cached,
       "env={'FOO': '1'} does not hit")
same("env without PATH, a program only on the caller's PATH", ["tool"], env={"FOO": "1"},
     capture_output=True)
r = same("cwd and a relative program", ["./rel"], cwd=os.path.join(w, "sub"),
         capture_output=True, text=True)
expect(r.stdout == "relative\n%s/sub\n" % w, "cwd: %r" % (r,))
same("cwd as a PathLike", ["./rel"], cwd=pathlib.Path(w, "sub"), capture_output=True)
same("a cwd that does not exist", ["true"], cwd=os.path.join(w, "nowhere"), capture_output=True)
same("args as one string", "true")
same("args as bytes", [b"echo", b"bytes"], capture_output=True)
same("args as PathLike", [pathlib.Path("/bin/echo"), "path"], capture_output=True)
same("args as a keyword", None, prepare=lambda: {})  # TypeError both: args=None
r = cachet.run(args=["echo", "kw"], stdout=subprocess.PIPE)
expect(r.stdout == b"kw\n" and r.args == ["echo", "kw"], "args=: %r" % (r,))
same("positional bufsize", ["echo", "pos"], stdout=subprocess.PIPE)
expect(cachet.run(["echo", "pos"], -1, None, None, subprocess.PIPE).stdout == b"pos\n",
       "positional Popen arguments")

print("--- status, check, timeout")
same("a failing step", ["sh", "-c", "echo out; echo err >&2; exit 3"], capture_output=True)
same("check=True", ["sh", "-c", "exit 4"], check=True, capture_output=True)
same("check=True, success", ["sh", "-c", "exit 0"], check=True)
same("a signal", ["sh", "-c", "kill -TERM $$"])
same("timeout", ["sleep", "5"], timeout=0.5)
same("timeout, in time", ["sleep", "0"], timeout=30)

print("--- input, capture, text, encodings")
same("input bytes", ["tr", "a-z", "A-Z"], input=b"relu\n", capture_output=True)
same("input text", ["tr", "a-z", "A-Z"], input="relu\n", text=True, capture_output=True)
same("universal_newlines", ["printf", "a\\r\\nb\\n"], universal_newlines=True, capture_output=True)
same("encoding", ["printf", "\\351t\\351"], encoding="latin-1", capture_output=True)
same("errors", ["printf", "\\377ok"], text=True, errors="replace", capture_output=True)
same("capture_output with stdout", ["true"], capture_output=True, stdout=subprocess.PIPE)
same("input with stdin", ["cat"], input=b"x", stdin=subprocess.DEVNULL)
same("stderr=STDOUT", ["sh", "-c", "echo a; echo b >&2"], stdout=subprocess.PIPE,
     stderr=subprocess.STDOUT)
same("stdout=DEVNULL", ["echo", "gone"], stdout=subprocess.DEVNULL)
with open("in.txt", "w") as f:
    f.write("from a file\n")
def files():
    return {"stdin": open("in.txt"), "stdout": open("out.txt", "w")}
same("stdin and stdout handles", ["cat"], prepare=files)
expect(open("out.txt").read() == "from a file\n", "out.txt: %r" % open("out.txt").read())
def fd_out():
    return {"stdout": os.open("fd.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)}
same("stdout as a descriptor number", ["echo", "fd"], prepare=fd_out)
expect(open("fd.txt").read() == "fd\n", "fd.txt")

print("--- the process: fds, session, group, preexec_fn, umask, shell")
for fn in (subprocess.run, cachet.run):
    rd, wr = os.pipe()
    r = fn(["sh", "-c", "echo through >&%d" % wr], pass_fds=(wr,))
    os.close(wr)
    got = os.read(rd, 100)
    os.close(rd)
    expect(got == b"through\n" and r.returncode == 0, "%s pass_fds: %r" % (fn.__module__, got))
expect(r.result == "uncacheable" and r.reason == "pass_fds", "pass_fds: %r" % (r,))
sid = os.getsid(0)
probe = ["python3", "-c", "import os, sys; print(os.getsid(0) != int(sys.argv[1]), os.getpgid(0) != os.getpgid(os.getppid()) or os.getpgid(0) != int(sys.argv[2]))",
         str(sid), str(os.getpgid(0))]
# The session and group are no file: each probe has its own argv, not to hit
# the other's output.
r = same("start_new_session", probe + ["session"], start_new_session=True, capture_output=True, text=True)
expect(r.stdout.startswith("True"), "start_new_session: %r" % (r,))
if sys.version_info >= (3, 11):
    r = same("process_group", probe + ["group"], process_group=0, capture_output=True, text=True)
    expect(r.stdout.split()[1] == "True", "process_group: %r" % (r,))
limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200))
r = same("preexec_fn", ["sh", "-c", "ulimit -n"], preexec_fn=limit, capture_output=True, text=True)
expect(r.stdout == "200\n", "preexec_fn: %r" % (r,))
if sys.version_info >= (3, 9):
    r = same("umask", ["sh", "-c", "umask"], umask=0o027, capture_output=True, text=True)
    expect(r.stdout == "0027\n", "umask: %r" % (r,))
same("close_fds=False", ["echo", "x"], close_fds=False, capture_output=True)
r = same("shell=True, a string", "echo one; echo two", shell=True, capture_output=True, text=True)
expect(r.args == "echo one; echo two", "shell args %r" % (r.args,))
same("shell=True, a list", ["echo $0 $1", "zero", "one"], shell=True, capture_output=True)
same("shell=True and executable", "test -n \"$BASH_VERSION\" && echo bash", shell=True,
     executable="/bin/bash", capture_output=True)
try:
    cachet.run(["true"], executable="/bin/true")
    raise AssertionError("executable= without a shell did not raise")
except TypeError:
    pass

print("--- env= keeps the caller's cache")
del os.environ["CACHET_DIR"]
os.environ["XDG_CACHE_HOME"] = os.path.join(w, "xdg-cache")
r = cachet.run(["sh", "-c", "echo $FOO > foo.txt"], env={"FOO": "2"})
expect(r.result == "miss", "bare env: %r" % (r,))
expect(os.path.isdir(os.path.join(w, "xdg-cache", "cachet")), "the caller's cache was not used")
r = cachet.run(["sh", "-c", "echo $FOO > foo.txt"], env={"FOO": "2"})
expect(r.cached and open("foo.txt").read() == "2\n", "bare env again: %r" % (r,))
PY
