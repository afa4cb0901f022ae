/* Memos decode into parts of the bytes read, not copies: what was encoded
 * comes back whole, every part lies inside the image the memo keeps, and
 * damage is refused with everything freed (ASan's leak pass). A memo file
 * of a store is mapped, unless another user may write to it; damage is
 * refused either way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cachet/store.h"
#include "test_store_fixture.h"

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

static char *memo_file(const struct digest *name)
{
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(name, hex);
	return xasprintf("%s/cache/memo/%s", scratch_dir, hex);
}

/* Reads the memo named name back: 1 with its parts checked, or what
 * store_memo_read returned. mapped: whether it is to be a mapping. */
static int read_back(struct store *s, const struct digest *name, int mapped)
{
	struct store_memo m;
	struct error e = {0};
	int rc = store_memo_read(s, name, &m, &e);
	if (rc == 1) {
		assert_int_equal(m.image_mapped != 0, mapped);
		assert_string_equal(m.pathset_body, "a path set body");
		assert_string_equal(m.result_body, "a result body");
		assert_int_equal(m.nfps, 1);
		assert_string_equal(m.fps[0].path, "/usr/include/stdio.h");
	}
	store_memo_free(&m);
	return rc;
}

static void a_memo_file_is_mapped_unless_others_may_write_it(void **state)
{
	(void)state;
	char *dir = xasprintf("%s/cache", scratch_dir);
	struct store *s;
	struct error e = {0};
	assert_int_equal(store_open(dir, STORE_DEFER_INDEX, &s, &e), 0);
	struct buf b;
	encode_example(&b);
	struct store_memo m;
	assert_int_equal(store_memo_decode(b.data, b.len, &m), 0);
	struct digest name = {{3}};
	assert_int_equal(store_memo_write(s, &name, &m, &e), 0);
	store_memo_free(&m);
	buf_free(&b);
	char *file = memo_file(&name);
	assert_int_equal(read_back(s, &name, 1), 1);
	/* Another user could cut it short under a mapping (SIGBUS): read. */
	assert_int_equal(chmod(file, 0664), 0);
	assert_int_equal(read_back(s, &name, 0), 1);
	assert_int_equal(chmod(file, 0644), 0);
	/* A byte flipped in the file: refused, and dropped. */
	int fd = open(file, O_RDWR);
	assert_true(fd >= 0);
	char c;
	assert_int_equal(pread(fd, &c, 1, 40), 1);
	c ^= 0x20;
	assert_int_equal(pwrite(fd, &c, 1, 40), 1);
	close(fd);
	assert_int_equal(read_back(s, &name, 1), -1);
	assert_int_equal(access(file, F_OK), -1);
	assert_int_equal(read_back(s, &name, 1), 0);
	free(file);
	store_close(s);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(a_memo_decodes_into_parts_of_its_image),
	    cmocka_unit_test(a_damaged_memo_is_refused_and_freed),
	    cmocka_unit_test_setup_teardown(a_memo_file_is_mapped_unless_others_may_write_it,
	                                    scratch_setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
