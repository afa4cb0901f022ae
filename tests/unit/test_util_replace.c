/* replace_file, which puts restored outputs and memos in place: over a
 * file, where nothing is, over a directory (refused, both left as they
 * were), and into a directory that is not there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/replace.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/cachet-replace-XXXXXX";
	if (!mkdtemp(tmpl))
		return -1;
	snprintf(dir, sizeof dir, "%s", tmpl);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void at(char *out, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s", dir, name);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void assert_holds(const char *path, const char *text)
{
	char got[64] = "";
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(got, 1, sizeof got - 1, f);
	fclose(f);
	got[n] = '\0';
	assert_string_equal(got, text);
}

static ino_t inode_of(const char *path)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	return st.st_ino;
}

static void replaces_a_file_and_leaves_no_temporary(void **state)
{
	(void)state;
	char tmp[PATH_MAX], path[PATH_MAX];
	at(tmp, "over.tmp");
	at(path, "over");
	write_file(path, "old");
	write_file(tmp, "new");
	ino_t moved = inode_of(tmp);
	assert_int_equal(replace_file(tmp, path, 1), 0);
	assert_holds(path, "new");
	assert_int_equal(inode_of(path), moved);
	assert_int_equal(access(tmp, F_OK), -1);
	assert_int_equal(errno, ENOENT);
}

static void puts_a_file_where_none_is_whatever_the_hint(void **state)
{
	(void)state;
	for (int hint = 0; hint <= 1; hint++) {
		char tmp[PATH_MAX], path[PATH_MAX];
		at(tmp, hint ? "absent1.tmp" : "absent0.tmp");
		at(path, hint ? "absent1" : "absent0");
		write_file(tmp, "only");
		assert_int_equal(replace_file(tmp, path, hint), 0);
		assert_holds(path, "only");
		assert_int_equal(access(tmp, F_OK), -1);
	}
}

static void refuses_a_directory_and_leaves_both(void **state)
{
	(void)state;
	char tmp[PATH_MAX], path[PATH_MAX], inside[PATH_MAX];
	at(tmp, "dir.tmp");
	at(path, "dir");
	at(inside, "dir/kept");
	assert_int_equal(mkdir(path, 0700), 0);
	write_file(inside, "kept");
	write_file(tmp, "file");
	errno = 0;
	assert_int_equal(replace_file(tmp, path, 1), -1);
	assert_true(errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_holds(inside, "kept");
	assert_holds(tmp, "file");
}

static void says_enoent_when_the_directory_is_missing(void **state)
{
	(void)state;
	char tmp[PATH_MAX], path[PATH_MAX];
	at(tmp, "lost.tmp");
	at(path, "no/such/dir/lost");
	write_file(tmp, "lost");
	errno = 0;
	assert_int_equal(replace_file(tmp, path, 1), -1);
	assert_int_equal(errno, ENOENT);
	assert_holds(tmp, "lost");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(replaces_a_file_and_leaves_no_temporary),
	    cmocka_unit_test(puts_a_file_where_none_is_whatever_the_hint),
	    cmocka_unit_test(refuses_a_directory_and_leaves_both),
	    cmocka_unit_test(says_enoent_when_the_directory_is_missing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
