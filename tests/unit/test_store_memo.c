/* Memos decode into parts of the bytes read, not copies: what was encoded
 * comes back whole, every part lies inside the image the memo keeps, and
 * damage is refused with everything freed (ASan's leak pass). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cachet/store.h"

static void encode_example(struct buf *b)
{
	static const char pathset[] = "a path set body", result[] = "a result body",
	                  dirs[] = "dirs";
	struct store_memo_fp fp = {.path = "/usr/include/stdio.h"};
	fp.id.ino = 7;
	fp.digest.b[0] = 9;
	struct store_memo m = {
	    .pathset_body = (void *)pathset,
	    .pathset_len = sizeof pathset,
	    .result_body = (void *)result,
	    .result_len = sizeof result,
	    .dirs = (void *)dirs,
	    .dirs_len = sizeof dirs,
	    .fps = &fp,
	    .nfps = 1,
	};
	m.weak.b[0] = 1;
	m.strong.b[0] = 2;
	buf_init(b);
	store_memo_encode(&m, b);
}

static int inside(const struct store_memo *m, size_t len, const void *p, size_t n)
{
	const char *image = m->image;
	return (const char *)p >= image && (const char *)p + n <= image + len;
}

static void a_memo_decodes_into_parts_of_its_image(void **state)
{
	(void)state;
	struct buf b;
	encode_example(&b);
	struct store_memo m;
	assert_int_equal(store_memo_decode(b.data, b.len, &m), 0);
	assert_non_null(m.image);
	assert_true(inside(&m, b.len, m.pathset_body, m.pathset_len));
	assert_true(inside(&m, b.len, m.result_body, m.result_len));
	assert_true(inside(&m, b.len, m.dirs, m.dirs_len));
	assert_string_equal(m.pathset_body, "a path set body");
	assert_string_equal(m.result_body, "a result body");
	assert_string_equal(m.dirs, "dirs");
	assert_int_equal(m.weak.b[0], 1);
	assert_int_equal(m.strong.b[0], 2);
	assert_int_equal(m.nfps, 1);
	assert_string_equal(m.fps[0].path, "/usr/include/stdio.h");
	assert_int_equal(m.fps[0].id.ino, 7);
	/* Encoded again, the same bytes. */
	struct buf again;
	buf_init(&again);
	store_memo_encode(&m, &again);
	assert_int_equal(again.len, b.len);
	assert_memory_equal(again.data, b.data, b.len);
	buf_free(&again);
	store_memo_free(&m);
	buf_free(&b);
}

static void a_damaged_memo_is_refused_and_freed(void **state)
{
	(void)state;
	struct buf b;
	encode_example(&b);
	struct store_memo m;
	for (size_t i = 0; i < b.len; i++) {
		b.data[i] ^= 0x20;
		assert_int_equal(store_memo_decode(b.data, b.len, &m), -1);
		store_memo_free(&m);
		b.data[i] ^= 0x20;
	}
	for (size_t n = 0; n < b.len; n++) {
		assert_int_equal(store_memo_decode(b.data, n, &m), -1);
		store_memo_free(&m);
	}
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(a_memo_decodes_into_parts_of_its_image),
	    cmocka_unit_test(a_damaged_memo_is_refused_and_freed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
