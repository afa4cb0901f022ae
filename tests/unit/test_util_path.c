/* Search lists (PATH): an entry found earlier in the list is a repeat,
 * compared whole (a prefix or an extension of an earlier entry is not),
 * and the empty entry (the cwd) repeats only another empty one. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(an_entry_seen_before_repeats),
	    cmocka_unit_test(entries_are_compared_whole),
	    cmocka_unit_test(the_empty_entry_repeats_only_itself),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
