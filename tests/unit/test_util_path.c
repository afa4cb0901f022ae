/* Search lists (PATH): an entry found earlier in the list is a repeat,
 * compared whole (a prefix or an extension of an earlier entry is not),
 * and the empty entry (the cwd) repeats only another empty one. Tidying
 * a path collapses slashes and "." components, and leaves a tidy one as
 * it is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cachet/path.h"

/* path_list_repeats for the entry of list that starts at byte `at`. */
static int repeats_at(const char *list, size_t at)
{
	const char *entry = list + at;
	const char *end = strchr(entry, ':');
	return path_list_repeats(list, entry, end ? (size_t)(end - entry) : strlen(entry));
}

static void an_entry_seen_before_repeats(void **state)
{
	(void)state;
	const char *list = "/a/bin:/usr/bin:/a/bin:/bin";
	assert_int_equal(repeats_at(list, 0), 0);
	assert_int_equal(repeats_at(list, 7), 0);
	assert_int_equal(repeats_at(list, 16), 1);
	assert_int_equal(repeats_at(list, 23), 0);
}

static void entries_are_compared_whole(void **state)
{
	(void)state;
	const char *list = "/usr/bin:/usr:/usr/bin2:/usr";
	assert_int_equal(repeats_at(list, 9), 0);
	assert_int_equal(repeats_at(list, 14), 0);
	assert_int_equal(repeats_at(list, 24), 1);
}

static void the_empty_entry_repeats_only_itself(void **state)
{
	(void)state;
	const char *list = ":/bin::/bin:";
	assert_int_equal(repeats_at(list, 0), 0);
	assert_int_equal(repeats_at(list, 6), 1);
	assert_int_equal(repeats_at(list, 7), 1);
	assert_int_equal(repeats_at(list, 12), 1);
}

static void tidy(const char *in, const char *want)
{
	char buf[64];
	strcpy(buf, in);
	path_tidy(buf);
	assert_string_equal(buf, want);
}

static void paths_are_tidied(void **state)
{
	(void)state;
	tidy("/usr/include/stdio.h", "/usr/include/stdio.h");
	tidy("/", "/");
	tidy(".", ".");
	tidy("", ".");
	tidy("//", "/");
	tidy("/usr//lib/", "/usr/lib");
	tidy("/usr/./lib/.", "/usr/lib");
	tidy("./a/b", "a/b");
	tidy("a/./b", "a/b");
	tidy("/a/../b", "/a/../b"); /* ".." is the file system's to resolve */
	tidy("/.hidden/..x/.", "/.hidden/..x");
	tidy("/./", "/");
}

/* The tidying as it was written first, character by character: every
 * short path made of '/', '.' and 'a' tidies the same. */
static void reference_tidy(char *p)
{
	char *r = p, *w = p;
	int absolute = *p == '/';
	while (*r) {
		if (*r == '/') {
			while (r[1] == '/')
				r++;
			if (r[1] == '.' && (r[2] == '/' || r[2] == '\0')) {
				r += 2;
				continue;
			}
			*w++ = *r++;
		} else if (w == p && r[0] == '.' && r[1] == '/') {
			r += 2;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	size_t len = (size_t)(w - p);
	if (len > 1 && p[len - 1] == '/')
		p[len - 1] = '\0';
	if (*p == '\0')
		strcpy(p, absolute ? "/" : ".");
}

static void every_short_path_tidies_as_before(void **state)
{
	(void)state;
	static const char alphabet[] = "/.a";
	for (int len = 0; len <= 8; len++) {
		int total = 1;
		for (int i = 0; i < len; i++)
			total *= 3;
		for (int n = 0; n < total; n++) {
			char a[16], b[16];
			int v = n;
			for (int i = 0; i < len; i++, v /= 3)
				a[i] = alphabet[v % 3];
			a[len] = '\0';
			strcpy(b, a);
			path_tidy(a);
			reference_tidy(b);
			assert_string_equal(a, b);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(an_entry_seen_before_repeats),
	    cmocka_unit_test(entries_are_compared_whole),
	    cmocka_unit_test(the_empty_entry_repeats_only_itself),
	    cmocka_unit_test(paths_are_tidied),
	    cmocka_unit_test(every_short_path_tidies_as_before),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
