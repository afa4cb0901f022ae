"""Run build steps through cachet from Python, the way subprocess.run runs them.

Pipelines that drive their compilers and code generators from Python (kernel
frameworks, code generators, test harnesses) call::

    import cachet
    r = cachet.run(["python3", "gen.py", "add_relu"], check=True)
    r.cached, r.result, r.reason   # True, "hit", None on a replay

run() takes the arguments of subprocess.run (check, capture_output, text,
cwd, env, input, timeout, stdout, stderr, ...), runs ``cachet run -- ARGS``
and returns a CachetResult: a subprocess.CompletedProcess (returncode, stdout,
stderr, and args, the step's own arguments without cachet) that also says
what the cache did:

    result       "hit", "miss" or "uncacheable"; None when cachet did not
                 report the step (CACHET_DISABLE=1, a step run under another
                 cachet, or cachet's own usage error)
    reason       why it missed or was uncacheable ("new step",
                 "inputs changed", "reads stdin stream", ...); None on a hit
    duration_ms  how long cachet took for the step, in milliseconds
    cached       True when the outputs were replayed from the cache

cachet reports each step as one JSON line in the file named by the
environment variable CACHET_STATUS_FILE; run() gives every call a private
file and reads it back. When the caller's environment already names a status
file, the line is appended there too, so a build's own accounting still sees
the step.

The cachet executable is, in order: the ``cachet`` argument, the environment
variable CACHET_BIN, ``cachet`` on PATH, and ``bin/cachet`` of the prefix this
module is installed under; the caller's environment is searched, not the
``env`` given for the step (the step's env names the step's programs).

Arguments behave as subprocess.run's:

- The program is looked up as subprocess does (os.execvpe's rule): a name
  without a slash in the PATH of ``env`` (os.defpath when ``env`` has none),
  relative to ``cwd``; a missing one raises FileNotFoundError, one that is
  not executable PermissionError, with the same errno and filename.
- ``env`` is the step's environment. cachet's own configuration follows the
  caller: its CACHET_* variables are added unless ``env`` sets them (cachet
  leaves CACHET_* out of keys), and CACHET_DIR names the cache the caller
  uses, so that a bare ``env`` does not move the cache. Settings of the
  user's file other than ``dir`` apply when ``env`` lets cachet find it
  (HOME or XDG_CONFIG_HOME); otherwise give them as CACHET_* variables.
- ``preexec_fn``, ``umask``, ``user``, ``group``, ``extra_groups``,
  ``start_new_session`` and ``process_group`` apply to the process that
  becomes cachet; the step inherits what they set (limits, umask, ids,
  session), except signal dispositions, which cachet resets as
  ``restore_signals`` does. A ``preexec_fn`` cannot run in the step's own
  process: cachet does not run Python code between its fork and exec.
- ``pass_fds``: cachet gives a step only descriptors 0-2, and a step that
  writes to another descriptor has outputs cachet cannot replay; with
  ``pass_fds`` the step runs uncached (as with CACHET_DISABLE=1), with the
  descriptors, and ``result`` is "uncacheable", reason "pass_fds".
- ``executable`` replaces the shell with ``shell=True``; without a shell it
  raises TypeError (cachet runs the program that argv[0] names).

Standard library only; Python 3.7 or later.
"""

import errno
import json
import os
import shutil
import stat
import subprocess
import tempfile

__all__ = ["CachetResult", "run", "find_cachet"]


class CachetResult(subprocess.CompletedProcess):
    """A completed step: subprocess.CompletedProcess plus what cachet did."""

    def __init__(self, args, returncode, stdout=None, stderr=None, result=None,
                 reason=None, duration_ms=None):
        super().__init__(args, returncode, stdout, stderr)
        self.result = result
        self.reason = reason
        self.duration_ms = duration_ms

    @property
    def cached(self):
        """True when cachet replayed the step's outputs instead of running it."""
        return self.result == "hit"

    def __repr__(self):
        fields = ["args={!r}".format(self.args), "returncode={!r}".format(self.returncode),
                  "result={!r}".format(self.result)]
        if self.reason is not None:
            fields.append("reason={!r}".format(self.reason))
        if self.stdout is not None:
            fields.append("stdout={!r}".format(self.stdout))
        if self.stderr is not None:
            fields.append("stderr={!r}".format(self.stderr))
        return "{}({})".format(type(self).__name__, ", ".join(fields))


def find_cachet(cachet=None, env=None):
    """The path of the cachet executable (see the module's documentation),
    searched in env (default: os.environ).

    Raises FileNotFoundError when there is none."""
    if cachet:
        return os.fspath(cachet)
    environ = os.environ if env is None else env
    if environ.get("CACHET_BIN"):
        return environ["CACHET_BIN"]
    found = shutil.which("cachet", path=environ.get("PATH", os.defpath))
    if found:
        return found
    # Installed as PREFIX/share/cachet/python/cachet.py beside PREFIX/bin/cachet.
    here = os.path.dirname(os.path.abspath(__file__))
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    candidate = os.path.join(prefix, "bin", "cachet")
    if os.access(candidate, os.X_OK):
        return candidate
    raise FileNotFoundError("cachet: no cachet executable (pass cachet=, set CACHET_BIN "
                            "or put cachet on PATH)")


def _read_status(path):
    """The last status line cachet wrote to path, as a dict, or None."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line for line in f.read().splitlines() if line.strip()]
    except OSError:
        return None
    # A step that runs cachet itself runs it untraced: the outer line is last.
    for line in reversed(lines):
        try:
            status = json.loads(line)
        except ValueError:
            continue
        if isinstance(status, dict):
            return status
    return None


def _forward_status(status, path):
    """Appends the status line to the caller's own status file."""
    line = json.dumps(status) + "\n"
    try:
        # One write with O_APPEND: lines of parallel steps stay whole, as
        # cachet itself does.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    except OSError:
        pass


def _program_error(program, env, cwd):
    """The OSError subprocess would raise starting program, or None.

    The rule of CPython's _posixsubprocess (os.execvpe's): a name with a
    slash is used as is, otherwise each directory of os.get_exec_path(env)
    in turn; a candidate that does not exist is skipped, the first other
    failure (EACCES: not executable, a directory) is the one reported."""
    name = os.fsdecode(program)
    if os.path.dirname(name):
        candidates = [name]
    else:
        candidates = [os.path.join(d, name) for d in os.get_exec_path(env)]
    first = None
    last = errno.ENOENT
    for cand in candidates:
        where = cand if cwd is None else os.path.join(os.fspath(cwd), cand)
        try:
            st = os.stat(where)
        except OSError as e:
            code = e.errno
        else:
            if stat.S_ISREG(st.st_mode) and os.access(where, os.X_OK):
                return None
            code = errno.EACCES
        if code not in (errno.ENOENT, errno.ENOTDIR) and first is None:
            first = code
        last = code
    code = first or last
    return OSError(code, os.strerror(code), program)


_cache_dirs = {}


def _caller_cache_dir(program):
    """The cache the caller's environment names (`cachet config dir`), or None."""
    key = (program, os.environ.get("CACHET_DIR"), os.environ.get("HOME"),
           os.environ.get("XDG_CONFIG_HOME"), os.environ.get("XDG_CACHE_HOME"))
    if key not in _cache_dirs:
        try:
            out = subprocess.run([program, "config", "dir"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
            _cache_dirs[key] = os.fsdecode(out.stdout).strip() if out.returncode == 0 else None
        except OSError:
            _cache_dirs[key] = None
    return _cache_dirs[key] or None


def _cachet_env(env, program):
    """The environment cachet runs with: the step's, plus cachet's own
    settings from the caller when env is given."""
    if env is None:
        return dict(os.environ)
    child = dict(env)
    for name, value in os.environ.items():
        if name.startswith("CACHET_") and name not in child:
            child[name] = value
    if "CACHET_DIR" not in child:
        where = _caller_cache_dir(program)
        if where:
            child["CACHET_DIR"] = where
    return child


def run(*popenargs, cachet=None, cachet_options=(), input=None, capture_output=False,
        timeout=None, check=False, **kwargs):
    """Runs a step through cachet like subprocess.run; returns a CachetResult.

    Takes subprocess.run's arguments (positional ones too), with its
    meaning, exceptions and result (see the module's documentation for the
    few that act on cachet's process). cachet_options are options for
    ``cachet run`` (for example ["--verify"] or ["--check", "test -s out.c"]).
    With check=True a failed step raises subprocess.CalledProcessError with
    the step's own args; a timeout raises subprocess.TimeoutExpired (cachet
    and the step are killed).
    """
    if len(popenargs) > 1 or (popenargs and "args" in kwargs):
        import inspect
        bound = inspect.signature(subprocess.Popen).bind(*popenargs, **kwargs)
        kwargs = dict(bound.arguments)
        kwargs.update(kwargs.pop("kwargs", {}))
    elif popenargs:
        kwargs["args"] = popenargs[0]
    if "args" not in kwargs:
        raise TypeError("run() missing required argument: 'args'")
    args = kwargs.pop("args")
    shell = kwargs.pop("shell", False)
    env = kwargs.pop("env", None)
    executable = kwargs.pop("executable", None)
    pass_fds = kwargs.get("pass_fds", ())

    if shell:
        if isinstance(args, (str, bytes, os.PathLike)):
            command = [os.fsdecode(args)]
        else:
            command = [os.fsdecode(a) for a in args]
        step = [os.fsdecode(executable) if executable else "/bin/sh", "-c", *command]
    elif executable is not None:
        raise TypeError("cachet.run() supports executable= only with shell=True "
                        "(cachet runs the program argv[0] names)")
    elif isinstance(args, (str, bytes, os.PathLike)):
        step = [os.fsdecode(args)]
    else:
        step = [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else a for a in args]
    if not step:
        raise IndexError("list index out of range")  # subprocess's error for []

    program = find_cachet(cachet)
    # cachet would say "command not found" and exit 127; subprocess raises.
    # A bad cwd is left to subprocess: it raises for cachet's own start.
    if kwargs.get("cwd") is None or os.path.isdir(kwargs["cwd"]):
        problem = _program_error(step[0], env, kwargs.get("cwd"))
        if problem is not None:
            raise problem
    child_env = _cachet_env(env, program)
    outer_status = child_env.get("CACHET_STATUS_FILE")
    if pass_fds:
        child_env["CACHET_DISABLE"] = "1"
    fd, status_path = tempfile.mkstemp(prefix="cachet-status-", suffix=".jsonl")
    os.close(fd)
    try:
        child_env["CACHET_STATUS_FILE"] = status_path
        cmd = [program, "run", *cachet_options, "--", *step]
        try:
            proc = subprocess.run(cmd, env=child_env, input=input,
                                  capture_output=capture_output, timeout=timeout, **kwargs)
        except subprocess.TimeoutExpired as e:
            raise subprocess.TimeoutExpired(args, e.timeout, output=e.output,
                                            stderr=e.stderr) from None
        status = _read_status(status_path)
    finally:
        os.unlink(status_path)

    if status is not None and outer_status:
        _forward_status(status, outer_status)
    if pass_fds:
        status = {"result": "uncacheable", "reason": "pass_fds"}
    status = status or {}
    result = CachetResult(args, proc.returncode, proc.stdout, proc.stderr,
                          result=status.get("result"), reason=status.get("reason"),
                          duration_ms=status.get("duration_ms"))
    if check:
        result.check_returncode()
    return result
