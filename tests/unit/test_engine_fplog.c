/* The fingerprint log: a memo's fingerprints answer by file id, entries
 * learnt later sit beside them, the used ones are what a memo keeps, and
 * freeing releases both kinds (LeakSanitizer runs the unit tests). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cachet/fplog.h"

static struct store_memo_fp fp(char *path, uint64_t ino, unsigned char fill)
{
	struct store_memo_fp f;
	memset(&f, 0, sizeof f);
	f.path = path;
	f.id.dev = 1;
	f.id.ino = ino;
	f.id.size = 10;
	memset(f.digest.b, fill, DIGEST_LEN);
	return f;
}

static void loaded_fingerprints_answer_by_file_id(void **state)
{
	(void)state;
	struct store_memo_fp fps[] = {fp("/a", 1, 0xaa), fp("/b", 2, 0xbb),
	                              fp("/a", 3, 0xcc)}; /* a damaged memo's repeat */
	struct store_memo m;
	memset(&m, 0, sizeof m);
	m.fps = fps;
	m.nfps = 3;
	struct fplog l;
	fplog_init(&l);
	fplog_load(&l, &m);
	struct digest d;
	/* The later fingerprint of a repeated path is the one kept. */
	assert_int_equal(l.dc.get(l.dc.ctx, "/a", &fps[2].id, &d), 1);
	assert_int_equal(d.b[0], 0xcc);
	assert_int_equal(l.dc.get(l.dc.ctx, "/a", &fps[0].id, &d), 0);
	/* Another file at the path (another id) is not vouched for. */
	struct file_id other = fps[1].id;
	other.mtime_ns = 5;
	assert_int_equal(l.dc.get(l.dc.ctx, "/b", &other, &d), 0);
	/* Learnt in this process: an entry of its own, beside the loaded. */
	struct store_memo_fp c = fp("/c", 4, 0xdd);
	l.dc.put(l.dc.ctx, "/c", &c.id, &c.digest);
	/* A loaded path learnt again: the same entry, now with the new id. */
	l.dc.put(l.dc.ctx, "/b", &other, &c.digest);
	assert_int_equal(l.dc.get(l.dc.ctx, "/b", &other, &d), 1);
	assert_int_equal(d.b[0], 0xdd);
	assert_int_equal(l.added, 2);
	size_t n;
	struct store_memo_fp *used = fplog_used(&l, &n);
	assert_int_equal(n, 3); /* /a was used, /b and /c learnt */
	free(used);
	fplog_free(&l);
}

static void a_second_load_keeps_the_first(void **state)
{
	(void)state;
	struct store_memo_fp one[] = {fp("/a", 1, 0xaa)};
	struct store_memo_fp two[] = {fp("/a", 2, 0xbb), fp("/b", 3, 0xcc)};
	struct store_memo m;
	memset(&m, 0, sizeof m);
	struct fplog l;
	fplog_init(&l);
	m.fps = one;
	m.nfps = 1;
	fplog_load(&l, &m);
	m.fps = two;
	m.nfps = 2;
	fplog_load(&l, &m);
	struct digest d;
	assert_int_equal(l.dc.get(l.dc.ctx, "/a", &two[0].id, &d), 1);
	assert_int_equal(d.b[0], 0xbb);
	assert_int_equal(l.dc.get(l.dc.ctx, "/b", &two[1].id, &d), 1);
	fplog_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(loaded_fingerprints_answer_by_file_id),
	    cmocka_unit_test(a_second_load_keeps_the_first),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
