#!/usr/bin/env bash
# Terminal or pipe. gcc is run with its colours forced on and its stderr
# stored as a terminal shows it: one entry serves `make` in a terminal and
# `make | tee log`, and each replay is byte for byte what gcc itself prints
# there (without its option hyperlinks, which cachet does not force: gcc
# would write -fdiagnostics-urls=always into every -g object). The objects
# are what gcc writes without cachet, with -g, -fverbose-asm and clang's
# -grecord-command-line too. A program cachet does not know keeps the
# terminal fact in its key.
source "$(dirname "$0")/lib.sh"

command -v script > /dev/null || skip "script (bsdutils) is needed for this test"
W=$(workdir)
cd "$W"
printf 'int g(void) { int unused; return 0; }\nint h(int a) { return a = 1, 0; }\n' > ok.c
printf 'int f(void) { int u; return 0; }\n' > other.c
export TERM=xterm-256color

# Runs CMD on a pseudo-terminal (script(1)) and saves what the terminal got.
on_tty() {
    local out=$1
    shift
    script -qec "$*" /dev/null > "$out" 2>&1 < /dev/null || true
}

ESC=$(printf '\033[')

section "the references: plain gcc on a terminal and in a pipe"
on_tty plain_tty.txt "GCC_URLS=no gcc -Wall -c ok.c -o plain.o"
grep -qF "$ESC" plain_tty.txt || skip "gcc itself does not colour on this terminal"
gcc -Wall -c ok.c -o plain.o 2> plain_pipe.txt
grep -q unused plain_pipe.txt || fail "gcc gave no warning"

section "terminal first: the miss and the hit on a terminal are what gcc prints there"
on_tty miss_tty.txt "$CACHET_BIN gcc -Wall -c ok.c -o ok.o"
expect miss "new step"
assert_same miss_tty.txt plain_tty.txt
rm ok.o
on_tty hit_tty.txt "$CACHET_BIN gcc -Wall -c ok.c -o ok.o"
expect hit
assert_same hit_tty.txt plain_tty.txt
assert_same ok.o plain.o

section "then a pipe: the same entry, without colours"
rm ok.o
cachet gcc -Wall -c ok.c -o ok.o 2> hit_pipe.txt
expect hit
assert_same hit_pipe.txt plain_pipe.txt
assert_same ok.o plain.o

section "pipe first, then a terminal"
gcc -Wall -c other.c -o plain_other.o 2> plain_other_pipe.txt
on_tty plain_other_tty.txt "GCC_URLS=no gcc -Wall -c other.c -o plain_other.o"
cachet gcc -Wall -c other.c -o other.o 2> miss_pipe.txt
expect miss "new step"
assert_same miss_pipe.txt plain_other_pipe.txt
rm other.o
on_tty other_tty.txt "$CACHET_BIN gcc -Wall -c other.c -o other.o"
expect hit
assert_same other_tty.txt plain_other_tty.txt
assert_same other.o plain_other.o

section "the objects are what the compiler writes without cachet, on a terminal and in a pipe"
# gcc -g records its options in DW_AT_producer, -fverbose-asm and
# -frecord-gcc-switches list them, clang -grecord-command-line writes its
# command line.
# objects_as_plain PIPE CC NAME ARGS: PIPE is what the pipe run after the
# terminal's gets: hit (one entry serves both) or miss (the terminal keyed).
objects_as_plain() {
    local pipe=$1 cc=$2 name=$3
    shift 3
    "$cc" "$@" -c ok.c -o "$name.o" 2> /dev/null
    mv "$name.o" "plain_$name.o"
    on_tty /dev/null "$CACHET_BIN $cc $* -c ok.c -o $name.o"
    expect miss "new step"
    assert_same "$name.o" "plain_$name.o"
    rm "$name.o"
    cachet "$cc" "$@" -c ok.c -o "$name.o" 2> /dev/null
    expect "$pipe"
    assert_same "$name.o" "plain_$name.o"
}
objects_as_plain hit gcc g -Wall -g
objects_as_plain hit gcc record -Wall -g -frecord-gcc-switches
objects_as_plain hit gcc verbose_asm -Wall -S -fverbose-asm
if command -v clang > /dev/null; then
    objects_as_plain miss clang clang_record -Wall -g -grecord-command-line
else
    echo "SKIP part: clang is not installed (its -grecord-command-line objects)"
fi

section "TERM=dumb on a terminal: no colours, as gcc itself"
on_tty plain_dumb.txt "TERM=dumb gcc -Wall -c ok.c -o plain.o"
on_tty dumb.txt "TERM=dumb $CACHET_BIN gcc -Wall -c ok.c -o ok.o"
expect hit
assert_same dumb.txt plain_dumb.txt

section "color = never: as in a pipe, even on a terminal"
on_tty never.txt "CACHET_COLOR=never $CACHET_BIN gcc -Wall -c ok.c -o ok.o"
expect hit
! grep -qF "$ESC" never.txt || fail "colour with color = never"

section "colours the command line chose are left to gcc, and the terminal stays keyed"
on_tty forced_tty.txt "$CACHET_BIN gcc -Wall -fdiagnostics-color=always -c ok.c -o ok.o"
expect miss "new step"
grep -qF "$ESC" forced_tty.txt || fail "no colour with -fdiagnostics-color=always"
cachet gcc -Wall -fdiagnostics-color=always -c ok.c -o ok.o 2> /dev/null
expect miss "new step"

section "a program cachet does not know: the terminal is keyed"
cat > tty.py <<'PY'
import sys
print("terminal" if sys.stdout.isatty() else "pipe")
PY
on_tty py_tty.txt "$CACHET_BIN python3 tty.py"
expect miss "new step"
grep -q terminal py_tty.txt || fail "the step did not see a terminal"
cachet explain -- python3 tty.py > explain.txt || true
grep -q "terminal differs" explain.txt || fail "explain does not name the terminal: $(cat explain.txt)"
cachet python3 tty.py > py_pipe.txt
expect miss
assert_content py_pipe.txt pipe
cachet python3 tty.py > py_pipe2.txt
expect hit
assert_content py_pipe2.txt pipe
