# PATH is keyed by the programs a step found along it, not by its value,
# and by its value only where an output or stream holds it.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
printf 'int f(void) { return 2; }\n' > c.c
EMPTY=$(workdir empty-bin)

section "PATH with one more directory that holds no tool: a compile hits"
COMPILE=(gcc -c c.c -o c.o)
plain_and_cached "printf 'int f(void) { return 2; }\\n' > c.c" "${COMPILE[@]}"
rm -f c.o
PATH="$EMPTY:$PATH" step "${COMPILE[@]}"
expect hit ""
rm -f c.o
PATH="$PATH:$EMPTY" step "${COMPILE[@]}"
expect hit ""

section "a program put where PATH now finds it first: the step misses"
SH_CC=(sh -c 'gcc -c c.c -o c.o')
run_expect miss "new step" -- "${SH_CC[@]}"
run_expect hit "" -- "${SH_CC[@]}"
PATH="$EMPTY:$PATH" step "${SH_CC[@]}"
expect hit ""
SHADOW=$(workdir shadow-bin)
printf '#!/bin/sh\necho shadow > c.o\n' > "$SHADOW/gcc"
chmod +x "$SHADOW/gcc"
PATH="$SHADOW:$PATH" step "${SH_CC[@]}"
expect miss "inputs changed"
assert_content c.o shadow
PATH="$SHADOW:$PATH" step "${SH_CC[@]}"
expect hit ""
assert_content c.o shadow

section "a step that writes PATH out keys its value"
ECHO=(sh -c 'echo "$PATH" > p')
run_expect miss "new step" -- "${ECHO[@]}"
run_expect hit "" -- "${ECHO[@]}"
PATH="$PATH:$EMPTY" step "${ECHO[@]}"
expect miss "inputs changed"
assert_content p "$PATH:$EMPTY"
ENVDUMP=(sh -c 'env | grep "^PATH="')
run_expect miss "" -- "${ENVDUMP[@]}" > out.txt
PATH="$EMPTY:$PATH" step "${ENVDUMP[@]}" > out.txt
expect miss "inputs changed"
assert_content out.txt "PATH=$EMPTY:$PATH"
# The interpreter itself: a pyenv shim is a bash script found along PATH.
PYTHON=$(python3 -c 'import sys; print(sys.executable)' 2> /dev/null || true)
# The last entry: a pyenv shim puts its own directory first.
PY=("$PYTHON" -c 'import os; print(os.environ["PATH"].split(":")[-1])')
if [ -n "$PYTHON" ]; then
    run_expect miss "" -- "${PY[@]}" > out.txt
    PATH="$PATH:$EMPTY" step "${PY[@]}" > out.txt
    expect miss "inputs changed"
    assert_content out.txt "$EMPTY"
    # shutil.which stats each candidate: found along another PATH, a miss.
    WHICH=("$PYTHON" -c 'import shutil; print(shutil.which("gcc") is not None)')
    run_expect miss "" -- "${WHICH[@]}" > out.txt
    # (env: a PATH prefix on a shell function would hold for all of it)
    env PATH="$EMPTY" "$CACHET_BIN" run -- "${WHICH[@]}" > out.txt
    expect miss "inputs changed"
    assert_content out.txt False
fi

check_status_file_format
