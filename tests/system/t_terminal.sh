#!/usr/bin/env bash
# Colour: when cachet's stderr is a terminal, the step's is one too, so gcc
# colours its diagnostics as it would without cachet; the fact is keyed.
source "$(dirname "$0")/lib.sh"

command -v script > /dev/null || fail "script (bsdutils) is needed for this test"
W=$(workdir)
cd "$W"
printf 'int f(void) { return undefined_x; }\nint g(void) { int unused; return 0; }\n' > warn.c
printf 'int g(void) { int unused; return 0; }\n' > ok.c
export TERM=xterm-256color

# Runs CMD on a pseudo-terminal (script(1)) and saves what the terminal got.
on_tty() {
    local out=$1
    shift
    script -qec "$*" /dev/null > "$out" 2>&1 < /dev/null || true
}

ESC=$(printf '\033[')

section "plain gcc on a terminal colours its diagnostics (the reference)"
on_tty plain.txt "gcc -Wall -c ok.c -o plain.o"
grep -qF "$ESC" plain.txt || fail "gcc itself does not colour on this terminal; cannot test"

section "through cachet on a terminal: coloured on the miss and on the hit"
on_tty miss.txt "$CACHET_BIN gcc -Wall -c ok.c -o ok.o"
grep -qF "$ESC" miss.txt || fail "no colour through cachet on a terminal: $(cat -v miss.txt)"
expect miss "new step"
rm ok.o
on_tty hit.txt "$CACHET_BIN gcc -Wall -c ok.c -o ok.o"
expect hit
grep -qF "$ESC" hit.txt || fail "the replay on a terminal lost its colour"
assert_exists ok.o

section "piped: no colour, and a separate entry (the terminal is keyed)"
cachet gcc -Wall -c ok.c -o ok.o 2> piped.txt
expect miss "new step"
! grep -qF "$ESC" piped.txt || fail "colour escapes written to a pipe"
grep -q "unused" piped.txt || fail "the warning is missing when piped"
cachet gcc -Wall -c ok.c -o ok.o 2> piped2.txt
expect hit
cmp -s piped.txt piped2.txt || fail "the piped replay differs"

section "color = never: pipes even on a terminal"
on_tty never.txt "CACHET_COLOR=never $CACHET_BIN gcc -Wall -c ok.c -o ok.o"
! grep -qF "$ESC" never.txt || fail "colour with color = never"
