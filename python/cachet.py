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
module is installed under. Standard library only; Python 3.7 or later.
"""

import json
import os
import shutil
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
    """The path of the cachet executable (see the module's documentation).

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


def run(args, *, cachet=None, cachet_options=(), check=False, shell=False, env=None,
        **kwargs):
    """Runs args through cachet like subprocess.run; returns a CachetResult.

    args is a sequence of program arguments, or a string with shell=True
    (then run with /bin/sh -c, as subprocess.run does). cachet_options are
    options for ``cachet run`` (for example ["--verify"] or
    ["--check", "test -s out.c"]). Every other keyword argument is passed to
    subprocess.run, with the same meaning. With check=True a failed step
    raises subprocess.CalledProcessError with the step's own args; a timeout
    raises subprocess.TimeoutExpired (cachet and the step are killed).
    """
    if "executable" in kwargs:
        raise TypeError("cachet.run() does not support executable= (cachet chooses the program)")
    if shell:
        if not isinstance(args, (str, bytes, os.PathLike)):
            raise TypeError("cachet.run(shell=True) takes the command as one string")
        step = ["/bin/sh", "-c", os.fsdecode(args)]
    elif isinstance(args, (str, bytes, os.PathLike)):
        step = [os.fsdecode(args)]
    else:
        step = [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else a for a in args]

    child_env = dict(os.environ if env is None else env)
    program = find_cachet(cachet, child_env)
    outer_status = child_env.get("CACHET_STATUS_FILE")
    fd, status_path = tempfile.mkstemp(prefix="cachet-status-", suffix=".jsonl")
    os.close(fd)
    try:
        child_env["CACHET_STATUS_FILE"] = status_path
        cmd = [program, "run", *cachet_options, "--", *step]
        try:
            proc = subprocess.run(cmd, env=child_env, **kwargs)
        except subprocess.TimeoutExpired as e:
            raise subprocess.TimeoutExpired(args, e.timeout, output=e.output,
                                            stderr=e.stderr) from None
        status = _read_status(status_path)
    finally:
        os.unlink(status_path)

    if status is not None and outer_status:
        _forward_status(status, outer_status)
    status = status or {}
    result = CachetResult(args, proc.returncode, proc.stdout, proc.stderr,
                          result=status.get("result"), reason=status.get("reason"),
                          duration_ms=status.get("duration_ms"))
    if check:
        result.check_returncode()
    return result
