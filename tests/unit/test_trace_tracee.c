/*
 * The primitives that read a tracee (src/trace/tracee.c): the lines of
 * /proc/PID/maps, parsed by hand, and which file a mapping holds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "trace/tracee.h"

static void maps_lines_parse_as_the_kernel_writes_them(void **state)
{
	(void)state;
	struct maps_line m;
	assert_int_equal(maps_line_parse("7f3a1c2d4000-7f3a1c2fa000 r-xp 00001000 fd:01 1835263"
	                                 "                    /usr/lib/x86_64-linux-gnu/ld.so\n",
	                                 &m),
	                 0);
	assert_true(m.lo == 0x7f3a1c2d4000ull && m.hi == 0x7f3a1c2fa000ull);
	assert_int_equal(m.dev_major, 0xfd);
	assert_int_equal(m.dev_minor, 1);
	assert_true(m.inode == 1835263);
	/* Anonymous, a three-digit major, the last line without a newline. */
	assert_int_equal(maps_line_parse("7ffd1000-7ffd2000 rw-p 00000000 00:00 0 [stack]", &m), 0);
	assert_true(m.inode == 0);
	assert_int_equal(maps_line_parse("1000-2000 r--p 00000000 103:02 42", &m), 0);
	assert_int_equal(m.dev_major, 0x103);
	assert_int_equal(m.dev_minor, 2);
	assert_true(m.inode == 42);
	/* Not a maps line: the rest of a long path, garbage, a cut line. */
	assert_int_equal(maps_line_parse("ory/file.so\n", &m), -1);
	assert_int_equal(maps_line_parse("", &m), -1);
	assert_int_equal(maps_line_parse("1000-2000 r--p 00000000 fd:01\n", &m), -1);
	assert_int_equal(maps_line_parse("1000 2000 r--p 00000000 fd:01 5\n", &m), -1);
}

static void a_mapping_holds_the_file_of_another(void **state)
{
	(void)state;
	/* This test's own loader: where it begins, and the code of it that
	 * ran (its entry point), are the same file; the stack is none. */
	uint64_t base = getauxval(AT_BASE);
	if (!base)
		skip();
	char *stack_var = malloc(1);
	int on_stack = 0;
	uint64_t in_ld = 0;
	/* An address inside the loader's code: the first executable range
	 * of its file (found by the parser's own reading of the maps). */
	FILE *f = fopen("/proc/self/maps", "re");
	assert_non_null(f);
	char line[512];
	struct maps_line m, first = {0};
	int have_first = 0;
	while (fgets(line, sizeof line, f)) {
		if (maps_line_parse(line, &m) < 0)
			continue;
		if (m.lo == base) {
			first = m;
			have_first = 1;
		}
		if (have_first && m.inode == first.inode && strstr(line, " r-xp ") && !in_ld)
			in_ld = m.lo + (m.hi - m.lo) / 2;
	}
	fclose(f);
	assert_true(have_first && in_ld);
	assert_int_equal(tracee_maps_same_file(getpid(), base, in_ld), 1);
	assert_int_equal(tracee_maps_same_file(getpid(), base, (uint64_t)(uintptr_t)&on_stack), 0);
	/* No mapping begins at an address inside one. */
	assert_int_equal(tracee_maps_same_file(getpid(), base + 1, in_ld), 0);
	assert_int_equal(tracee_maps_same_file(getpid(), base, (uint64_t)(uintptr_t)stack_var), 0);
	free(stack_var);
	assert_int_equal(tracee_maps_same_file(-1, base, in_ld), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(maps_lines_parse_as_the_kernel_writes_them),
	    cmocka_unit_test(a_mapping_holds_the_file_of_another),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
