/* The value of a directory listing: the same whether it comes from the
 * entries the step's getdents calls returned or from a readdir now, so that
 * recording from the step's views keeps the keys of unchanged directories. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/observe.h"

static char root[64];

static char *at(const char *rel)
{
	static char buf[8][256];
	static int next;
	char *b = buf[next++ % 8];
	snprintf(b, sizeof buf[0], "%s/%s", root, rel);
	return b;
}

static int setup(void **state)
{
	(void)state;
	strcpy(root, "/tmp/cachet-listing-XXXXXX");
	assert_non_null(mkdtemp(root));
	assert_int_equal(mkdir(at("d"), 0755), 0);
	assert_int_equal(mkdir(at("d/sub"), 0755), 0);
	FILE *f = fopen(at("d/b.c"), "w");
	assert_non_null(f);
	fclose(f);
	f = fopen(at("d/a.h"), "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(symlink("a.h", at("d/link")), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(at("d/link"));
	unlink(at("d/a.h"));
	unlink(at("d/b.c"));
	rmdir(at("d/sub"));
	rmdir(at("d"));
	rmdir(root);
	return 0;
}

static void entries_in_any_order_have_the_value_of_a_readdir_now(void **state)
{
	(void)state;
	/* As getdents returns them: unsorted, with "." and "..". */
	struct listing_entry e[] = {
	    {"link", DT_LNK}, {"..", DT_DIR}, {"sub", DT_DIR},
	    {"b.c", DT_REG},  {".", DT_DIR},  {"a.h", DT_REG},
	};
	struct buf seen, seen_detail, now, now_detail;
	buf_init(&seen);
	buf_init(&seen_detail);
	buf_init(&now);
	buf_init(&now_detail);
	observe_listing_value(e, sizeof e / sizeof e[0], NULL, &seen, &seen_detail);
	observe_value_detail(OBS_LIST, 0, at("d"), NULL, NULL, &now, &now_detail);
	assert_int_equal(seen.len, now.len);
	assert_memory_equal(seen.data, now.data, now.len);
	assert_int_equal(seen_detail.len, now_detail.len);
	assert_memory_equal(seen_detail.data, now_detail.data, now_detail.len);
	/* The detail is sorted: type byte, name, NUL. */
	assert_int_equal(seen_detail.data[0], DT_REG);
	assert_string_equal(seen_detail.data + 1, "a.h");
	buf_free(&seen);
	buf_free(&seen_detail);
	buf_free(&now);
	buf_free(&now_detail);
}

static void excluded_names_are_left_out_alike(void **state)
{
	(void)state;
	struct listing_entry e[] = {
	    {"a.h", DT_REG}, {"b.c", DT_REG}, {"link", DT_LNK}, {"sub", DT_DIR}, {"new.o", DT_REG},
	};
	const char *excluded[] = {"new.o", "sub", NULL};
	struct listing_entry fewer[] = {{"link", DT_LNK}, {"a.h", DT_REG}, {"b.c", DT_REG}};
	struct buf with, without, now;
	buf_init(&with);
	buf_init(&without);
	buf_init(&now);
	observe_listing_value(e, 5, excluded, &with, NULL);
	observe_listing_value(fewer, 3, NULL, &without, NULL);
	observe_value(OBS_LIST, 0, at("d"), excluded, NULL, &now);
	assert_memory_equal(with.data, without.data, without.len);
	assert_memory_equal(with.data, now.data, now.len);
	buf_free(&with);
	buf_free(&without);
	buf_free(&now);
}

static void a_name_or_a_type_more_changes_the_value(void **state)
{
	(void)state;
	struct listing_entry a[] = {{"x", DT_REG}};
	struct listing_entry b[] = {{"x", DT_REG}, {"y", DT_REG}};
	struct listing_entry c[] = {{"x", DT_DIR}};
	struct buf va, vb, vc;
	buf_init(&va);
	buf_init(&vb);
	buf_init(&vc);
	observe_listing_value(a, 1, NULL, &va, NULL);
	observe_listing_value(b, 2, NULL, &vb, NULL);
	observe_listing_value(c, 1, NULL, &vc, NULL);
	assert_int_equal(va.data[0], 'L');
	assert_memory_not_equal(va.data, vb.data, va.len);
	assert_memory_not_equal(va.data, vc.data, va.len);
	buf_free(&va);
	buf_free(&vb);
	buf_free(&vc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(entries_in_any_order_have_the_value_of_a_readdir_now),
	    cmocka_unit_test(excluded_names_are_left_out_alike),
	    cmocka_unit_test(a_name_or_a_type_more_changes_the_value),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
