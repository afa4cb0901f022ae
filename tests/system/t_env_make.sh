# make passes its own flags (-s, -k, -C's w, V=1, any command-line
# variable) to every recipe in MAKEFLAGS and MFLAGS: keyed only for a step
# that runs make, or writes a value out.
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
for flags in "-s" "-k" "-s -k"; do
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
# A variable on make's command line is more than a flag: make exports it
# into every recipe's environment, where any program may read it (CPATH=
# reaches gcc). Keyed as the environment is: one more build under it, then
# hits; `env_ignore = V` where no step reads it.
cd "$M"
rm -f ./*.o
PATH="$M/bin:$PATH" make V=1 > /dev/null
rm -f ./*.o
PATH="$M/bin:$PATH" make V=1 -s > /dev/null
status_last
[ "$LAST_RESULT" = hit ] || fail "make V=1 -s: last compile $LAST_RESULT ($LAST_REASON)"
rm -f ./*.o
cachet config env_ignore V
PATH="$M/bin:$PATH" make V=2 > /dev/null
status_last
[ "$LAST_RESULT" = hit ] || fail "make V=2 with env_ignore = V: $LAST_RESULT ($LAST_REASON)"
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
