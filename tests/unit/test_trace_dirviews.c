/* The directory views of a run: complete passes over a directory stream
 * become views, whoever makes each call; anything else is a partial read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "trace/dirents.h"
#include "trace/dirviews.h"

/* A getdents64 buffer of names (type DT_REG); d_off of record i is
 * first_off + i + 1. */
static size_t dents(unsigned char *b, const char *const *names, uint64_t first_off)
{
	size_t at = 0;
	for (size_t i = 0; names[i]; i++) {
		size_t n = strlen(names[i]);
		uint16_t reclen = (uint16_t)((19 + n + 1 + 7) / 8 * 8);
		memset(b + at, 0, reclen);
		uint64_t ino = 100 + i, off = first_off + i + 1;
		memcpy(b + at, &ino, 8);
		memcpy(b + at + 8, &off, 8);
		memcpy(b + at + 16, &reclen, 2);
		b[at + 18] = DT_REG;
		memcpy(b + at + 19, names[i], n + 1);
		at += reclen;
	}
	return at;
}

static void one_pass_in_two_calls_is_one_view(void **state)
{
	(void)state;
	struct dir_views v;
	dir_views_init(&v);
	unsigned char b[512];
	const char *first[] = {".", "..", "b", NULL}, *second[] = {"a", NULL};
	dir_views_exit(&v, "/d", 1, 0, b, dents(b, first, 0), 1);
	/* another process continues the stream where the first call left it */
	dir_views_exit(&v, "/d", 1, 3, b, dents(b, second, 3), 1);
	dir_views_exit(&v, "/d", 1, 4, NULL, 0, 1);
	dir_views_finish(&v);
	struct trace_listing *l = dir_views_take(&v, "/d");
	assert_non_null(l);
	assert_false(l->partial);
	assert_int_equal(l->nviews, 1);
	/* sorted, without . and .. */
	assert_int_equal(l->views[0].len, 6);
	assert_memory_equal(l->views[0].entries, "\10a\0\10b\0", 6);
	trace_listing_free(l);
	dir_views_free(&v);
}

static void equal_passes_are_one_view_and_different_ones_two(void **state)
{
	(void)state;
	struct dir_views v;
	dir_views_init(&v);
	unsigned char b[512];
	const char *ab[] = {"a", "b", NULL}, *ba[] = {"b", "a", NULL},
	           *abc[] = {"a", "b", "c", NULL};
	dir_views_exit(&v, "/d", 1, 0, b, dents(b, ab, 0), 1);
	dir_views_exit(&v, "/d", 1, 2, NULL, 0, 1);
	dir_views_exit(&v, "/d", 1, 0, b, dents(b, ba, 0), 1);
	dir_views_exit(&v, "/d", 1, 2, NULL, 0, 1);
	dir_views_exit(&v, "/d", 1, 0, b, dents(b, abc, 0), 1);
	dir_views_exit(&v, "/d", 1, 3, NULL, 0, 1);
	dir_views_finish(&v);
	struct trace_listing *l = dir_views_take(&v, "/d");
	assert_false(l->partial);
	assert_int_equal(l->nviews, 2);
	trace_listing_free(l);
	dir_views_free(&v);
}

static void a_read_that_stops_or_seeks_is_partial(void **state)
{
	(void)state;
	struct dir_views v;
	dir_views_init(&v);
	unsigned char b[512];
	const char *a[] = {"a", NULL};
	/* never reaches the end */
	dir_views_exit(&v, "/stops", 1, 0, b, dents(b, a, 0), 1);
	/* starts where no pass waits (seekdir, or an inherited stream) */
	dir_views_exit(&v, "/seeks", 1, 7, b, dents(b, a, 7), 1);
	dir_views_exit(&v, "/seeks", 1, 8, NULL, 0, 1);
	/* position unknown */
	dir_views_exit(&v, "/unknown", 0, 0, b, dents(b, a, 0), 1);
	dir_views_finish(&v);
	const char *dirs[] = {"/stops", "/seeks", "/unknown"};
	for (int i = 0; i < 3; i++) {
		struct trace_listing *l = dir_views_take(&v, dirs[i]);
		assert_non_null(l);
		assert_true(l->partial);
		trace_listing_free(l);
	}
	dir_views_free(&v);
}

static void old_getdents_records_parse_too(void **state)
{
	(void)state;
	/* struct linux_dirent: name at 18, d_type in the record's last byte */
	unsigned char b[24];
	memset(b, 0, sizeof b);
	uint16_t reclen = 24;
	uint64_t off = 1;
	memcpy(b + 8, &off, 8);
	memcpy(b + 16, &reclen, 2);
	memcpy(b + 18, "xy", 3);
	b[23] = DT_DIR;
	struct dir_views v;
	dir_views_init(&v);
	dir_views_exit(&v, "/d", 1, 0, b, sizeof b, 0);
	dir_views_exit(&v, "/d", 1, 1, NULL, 0, 0);
	dir_views_finish(&v);
	struct trace_listing *l = dir_views_take(&v, "/d");
	assert_int_equal(l->nviews, 1);
	assert_memory_equal(l->views[0].entries, "\4xy\0", 4);
	trace_listing_free(l);
	dir_views_free(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(one_pass_in_two_calls_is_one_view),
	    cmocka_unit_test(equal_passes_are_one_view_and_different_ones_two),
	    cmocka_unit_test(a_read_that_stops_or_seeks_is_partial),
	    cmocka_unit_test(old_getdents_records_parse_too),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
