# configure: a GNU-style configure script runs hundreds of different
# conftest.c contents under three command lines (compile, link,
# preprocess). A second configure of a fresh copy of the same tree must hit
# them (at least 90% of its cacheable steps: a failed compile is never
# stored) and write the same config.h:
# the path sets of one command line are grouped by the content of the
# files its argv names (argv_inputs.h), so that one configure does not push
# out what the previous one recorded.
source "$(dirname "$0")/lib.sh"
command -v gcc > /dev/null || skip "gcc is not installed"

W=$(workdir)
mkdir "$W/pristine"
# The pattern of autoconf's ac_fn_c_try_compile / try_link / try_cpp:
# confdefs.h grows with every result, each test program starts with it,
# conftest files are removed before and after each try.
cat > "$W/pristine/configure" <<'EOF'
#!/bin/sh
: "${CC:=gcc}"
: > confdefs.h
: > config.log
try_compile() {
	rm -f conftest.o
	$CC -c -g -O2 conftest.c >> config.log 2>&1 && test -s conftest.o
}
try_link() {
	rm -f conftest
	$CC -o conftest -g -O2 conftest.c >> config.log 2>&1 && test -s conftest
}
try_cpp() {
	$CC -E conftest.c > conftest.i 2>> config.log
}
define() { echo "#define $1 ${2:-1}" >> confdefs.h; }
upper() { echo "$1" | tr 'a-z./' 'A-Z__'; }
for h in stdio.h stdlib.h string.h unistd.h sys/types.h sys/stat.h fcntl.h errno.h \
	 stdint.h inttypes.h limits.h time.h sys/time.h signal.h locale.h wchar.h ctype.h \
	 math.h setjmp.h stdarg.h assert.h sys/wait.h sys/mman.h poll.h netdb.h \
	 no_such_header_cachet.h; do
	printf '%s\n' "$(cat confdefs.h)" "#include <$h>" 'int main(void) { return 0; }' > conftest.c
	if try_compile; then define "HAVE_$(upper "$h")"; fi
	rm -f conftest.c conftest.o
done
for f in malloc strdup strndup getline fork mmap clock_gettime no_such_function_cachet; do
	printf '%s\n' "$(cat confdefs.h)" "char $f(void);" \
		"int main(void) { return $f(); }" > conftest.c
	if try_link; then define "HAVE_$(upper "$f")"; fi
	rm -f conftest.c conftest
done
for h in dirent.h no_such_cpp_header_cachet.h; do
	printf '%s\n' "$(cat confdefs.h)" "#include <$h>" > conftest.c
	if try_cpp; then define "HAVE_CPP_$(upper "$h")"; fi
	rm -f conftest.c conftest.i
done
for t in int long 'void *' size_t; do
	for n in 4 8; do
		printf '%s\n' "$(cat confdefs.h)" '#include <stddef.h>' \
			"int main(void) { static int a[sizeof($t) == $n ? 1 : -1]; return a[0]; }" \
			> conftest.c
		if try_compile; then define "SIZEOF_$(upper "$t" | tr -d ' *')" "$n"; fi
		rm -f conftest.c conftest.o
	done
done
cp confdefs.h config.h
EOF
chmod +x "$W/pristine/configure"

steps_since() { tail -n +$(($1 + 1)) "$CACHET_STATUS_FILE"; }
count_of() { grep -c "\"result\": \"$1\"" || true; }

section "plain configure"
cp -a "$W/pristine" "$W/proj"
(cd "$W/proj" && ./configure) || fail "plain configure failed"
cp "$W/proj/config.h" "$W/plain-config.h"
grep -q HAVE_STDIO_H "$W/plain-config.h" || fail "the plain configure found no stdio.h"
grep -q HAVE_NO_SUCH && fail "a check that must fail passed" < "$W/plain-config.h"

section "configure through cachet, then again in a fresh copy"
for run in 1 2; do
    rm -rf "$W/proj"
    cp -a "$W/pristine" "$W/proj"
    before=$(status_count)
    (cd "$W/proj" && CC="$CACHET_BIN run -- gcc" ./configure) || fail "configure $run failed"
    cmp -s "$W/plain-config.h" "$W/proj/config.h" ||
        fail "configure $run through cachet wrote another config.h:
$(diff "$W/plain-config.h" "$W/proj/config.h" || true)"
    hits=$(steps_since "$before" | count_of hit)
    misses=$(steps_since "$before" | grep -v 'command failed' | count_of miss)
done
total=$((hits + misses))
# More header checks than a command line kept path sets before (16).
[ "$total" -ge 30 ] || fail "the second configure made $total cacheable steps, expected 30 or more"
[ $((hits * 10)) -ge $((total * 9)) ] ||
    fail "the second configure hit $hits of $total cacheable steps, expected at least 90%"
echo "second configure: $hits of $total cacheable steps hit"
check_status_file_format
