# make passes its own flags (-s, -k, -C's w, V=1, any command-line
# variable) to every recipe in MAKEFLAGS and MFLAGS: keyed only for a step
# that runs make, or writes a value out; its command-line variables, which
# it also exports, for a step that runs anything but the GNU toolchain.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
printf 'int f(void) { return 2; }\n' > c.c
section "make's own flags: compiles hit, a step that runs make keeps them"
M=$(workdir make)
cd "$M"
printf 'int a(void) { return 1; }\n' > a.c
printf 'int b(void) { return 2; }\n' > b.c
printf 'int main(void) { return 0; }\n' > m.c
cat > Makefile <<'MK'
CC = cachet_cc
OBJS = a.o b.o m.o
all: $(OBJS)
%.o: %.c
	$(CC) -c $< -o $@
MK
# One wrapper per make: the recipe runs the step through cachet.
mkdir -p bin
printf '#!/bin/sh\nexec "%s" run -- gcc "$@"\n' "$CACHET_BIN" > bin/cachet_cc
chmod +x bin/cachet_cc
before=$(status_count)
PATH="$M/bin:$PATH" make -s
# A variable on make's command line is more than a flag: make exports it
# into every recipe's environment. Keyed by effect: a compile (gcc, cc1, as
# and ld, whose variables are known by name) does not read V.
for flags in "-s" "-k" "-s -k" "V=1" "V=2 -s" "V=1 VERBOSE=1 -k"; do
    rm -f ./*.o
    # shellcheck disable=SC2086
    PATH="$M/bin:$PATH" make $flags > /dev/null
    status_last
    [ "$LAST_RESULT" = hit ] || fail "make $flags: last compile $LAST_RESULT ($LAST_REASON)"
done
rm -f ./*.o
cd "$W"
PATH="$M/bin:$PATH" make -C "$M" > /dev/null
status_last
[ "$LAST_RESULT" = hit ] || fail "make -C: last compile $LAST_RESULT ($LAST_REASON)"
misses=$(tail -n +$((before + 1)) "$CACHET_STATUS_FILE" | grep -c '"miss"' || true)
[ "$misses" -eq 3 ] || fail "expected only the first build's 3 compiles to miss, got $misses"
# A variable the toolchain reads stays keyed by its value.
section "make CPATH=...: compiles miss"
cd "$M"
mkdir -p inc
rm -f ./*.o
PATH="$M/bin:$PATH" make -s CPATH="$M/inc" > /dev/null
status_last
[ "$LAST_RESULT" = miss ] || fail "make CPATH=...: a compile hit ($LAST_REASON)"

section "make V=1: a script that reads \$V, a recipe that expands \$(V)"
# The script's output holds no value of V, only what it chose by it.
cat > Makefile.v <<'MK'
all:
	cachet_run sh -c 'if [ "$$V" = 1 ]; then echo verbose; else echo quiet; fi > mode.txt'
	cachet_run sh -c 'echo V is $(V) > expanded.txt'
MK
printf '#!/bin/sh\nexec "%s" run -- "$@"\n' "$CACHET_BIN" > bin/cachet_run
chmod +x bin/cachet_run
# mk_v [VARS...] MODE EXPANDED: make -f Makefile.v, then what it wrote.
mk_v() {
    local want_mode=${*: -2:1} want_expanded=${*: -1}
    PATH="$M/bin:$PATH" make -s -f Makefile.v "${@:1:$#-2}" > /dev/null
    assert_content mode.txt "$want_mode"
    assert_content expanded.txt "V is${want_expanded:+ $want_expanded}"
}
before=$(status_count)
mk_v quiet ""
mk_v V=1 verbose 1
[ "$(tail -n 2 "$CACHET_STATUS_FILE" | grep -c '"miss"')" -eq 2 ] ||
    fail "make V=1 after a plain make: a step that reads V hit"
mk_v V=1 verbose 1
mk_v quiet ""
mk_v V=2 quiet 2
[ "$(tail -n +$((before + 1)) "$CACHET_STATUS_FILE" | grep -c '"hit"')" -eq 4 ] ||
    fail "the scripts under V did not hit where V was as recorded"
# A step that runs make itself: make -n prints what make would do, which
# MAKEFLAGS (here -k and a variable) changes.
cd "$M"
printf 'all:\n\t@echo V is $(V)\n' > Makefile.echo
SUB=(make -s -f Makefile.echo)
run_expect miss "new step" -- "${SUB[@]}" > out.txt
assert_content out.txt "V is"
run_expect hit "" -- "${SUB[@]}" > out.txt
MAKEFLAGS="V=9" step "${SUB[@]}" > out.txt
expect miss "inputs changed"
assert_content out.txt "V is 9"
MAKEFLAGS="V=9" step "${SUB[@]}" > out.txt
expect hit ""
assert_content out.txt "V is 9"
# A script that prints MAKEFLAGS without running make: the whole line.
SHOW=(sh -c 'echo "$MAKEFLAGS"')
MAKEFLAGS=s run_expect miss "" -- "${SHOW[@]}" > out.txt
assert_content out.txt s
MAKEFLAGS=k step "${SHOW[@]}" > out.txt
expect miss "inputs changed"
assert_content out.txt k
cd "$W"

check_status_file_format
