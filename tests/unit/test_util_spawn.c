/* Running a program to its end: its exit status, its output where it is
 * sent, and why a program that cannot be executed was not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cachet/spawn.h"

static void the_wait_status_is_the_programs(void **state)
{
	(void)state;
	char *argv[] = {"sh", "-c", "exit 3", NULL};
	int exec_errno = 0;
	int st = spawn_wait("/bin/sh", argv, NULL, -1, -1, &exec_errno);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 3);
	assert_int_equal(exec_errno, 0);
}

static void output_goes_to_the_descriptors_given(void **state)
{
	(void)state;
	int out[2], err[2];
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(err), 0);
	char *argv[] = {"sh", "-c", "printf out; printf err >&2; echo \"$ONLY\"", NULL};
	char *envp[] = {"ONLY=this", NULL};
	int st = spawn_wait("/bin/sh", argv, envp, out[1], err[1], NULL);
	close(out[1]);
	close(err[1]);
	assert_int_equal(st, 0);
	char b[64] = {0};
	assert_int_equal(read(out[0], b, sizeof b - 1), 8);
	assert_string_equal(b, "outthis\n");
	memset(b, 0, sizeof b);
	assert_int_equal(read(err[0], b, sizeof b - 1), 3);
	assert_string_equal(b, "err");
	close(out[0]);
	close(err[0]);
}

static void a_program_that_cannot_run_says_why(void **state)
{
	(void)state;
	char *argv[] = {"absent", NULL};
	int exec_errno = 0;
	int st = spawn_wait("/nonexistent/absent", argv, NULL, -1, -1, &exec_errno);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 127);
	assert_int_equal(exec_errno, ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(the_wait_status_is_the_programs),
	    cmocka_unit_test(output_goes_to_the_descriptors_given),
	    cmocka_unit_test(a_program_that_cannot_run_says_why),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
