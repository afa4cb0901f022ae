/* The finder: a few strings found in bytes that arrive in chunks, and
 * digest_fd_each, which hands it the chunks of the hashing read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cachet/digest.h"
#include "cachet/find.h"

static void finder_finds_needles_across_chunk_boundaries(void **state)
{
	const char *text = "depfile: /work/a/proj/src/x.c /usr/include/stdio.h /home/u/x";
	const char *needles[] = {"/work/a/proj", NULL, "/home/u", "/nowhere"};
	size_t n = strlen(text);
	for (size_t chunk = 1; chunk <= n; chunk++) {
		struct finder f;
		finder_init(&f, needles, 4);
		for (size_t off = 0; off < n; off += chunk)
			finder_feed(&f, text + off, off + chunk <= n ? chunk : n - off);
		assert_int_equal(f.found, 1u << 0 | 1u << 2);
		finder_free(&f);
	}
	/* A needle cut by every boundary but present nowhere whole. */
	struct finder f;
	const char *one[] = {"/work/a/proj"};
	finder_init(&f, one, 1);
	finder_feed(&f, "/work/a/pr", 10);
	finder_feed(&f, "x/work/a/pro", 12);
	finder_feed(&f, "", 0);
	finder_feed(&f, "/proj", 5);
	assert_int_equal(f.found, 0);
	finder_feed(&f, "j", 1);
	assert_int_equal(f.found, 0); /* "/work/a/proj" never stood whole */
	finder_feed(&f, "/work/a/proj", 12);
	assert_int_equal(f.found, 1);
	finder_free(&f);
}

static void a_needle_amid_bytes_dense_with_its_first_byte_is_found(void **state)
{
	struct finder f;
	const char *one[] = {"/work/a/proj"};
	/* Bytes dense with '/' and near misses, the needle only at the end. */
	size_t big = 1 << 20;
	char *dense = xmalloc(big + 1);
	for (size_t i = 0; i < big; i += 2)
		memcpy(dense + i, i % 64 ? "//" : "/w", 2);
	memcpy(dense + big - 12, "/work/a/proj", 12);
	finder_init(&f, one, 1);
	for (size_t off = 0; off < big - 12; off += 65536)
		finder_feed(&f, dense + off, big - 12 - off < 65536 ? big - 12 - off : 65536);
	assert_int_equal(f.found, 0);
	finder_feed(&f, dense + big - 12, 12);
	assert_int_equal(f.found, 1);
	finder_free(&f);
	free(dense);
}

static void collect(void *ctx, const void *chunk, size_t len)
{
	buf_add(ctx, chunk, len);
}

static void digest_fd_each_hands_over_every_byte_it_hashes(void **state)
{
	char path[] = "/tmp/cachet-find-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	size_t len = 200000; /* several reads */
	char *data = xmalloc(len);
	for (size_t i = 0; i < len; i++)
		data[i] = (char)(i * 7 + i / 251);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	struct buf seen;
	buf_init(&seen);
	struct digest a, b;
	uint64_t size = 0;
	struct error e = {0};
	assert_int_equal(digest_fd_each(fd, &a, &size, collect, &seen, &e), 0);
	assert_int_equal(digest_fd(fd, &b, NULL, &e), 0);
	assert_true(digest_equal(&a, &b));
	assert_int_equal(size, len);
	assert_int_equal(seen.len, len);
	assert_memory_equal(seen.data, data, len);
	buf_free(&seen);
	free(data);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(finder_finds_needles_across_chunk_boundaries),
	    cmocka_unit_test(a_needle_amid_bytes_dense_with_its_first_byte_is_found),
	    cmocka_unit_test(digest_fd_each_hands_over_every_byte_it_hashes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
