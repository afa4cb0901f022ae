/* The loader's cache read as a map from sonames to paths: the format glibc
 * writes, and every truncation or damage of it read as no map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cachet/ldcache.h"
#include "cachet/observe.h"

struct entry {
	uint32_t flags;
	const char *key, *value;
	uint64_t hwcap;
};

/* A cache image as ldconfig writes one: header, entries, string table. */
static unsigned char *image_of(const struct entry *e, size_t n, size_t *len)
{
	size_t strings = 48 + n * 24, size = strings;
	for (size_t i = 0; i < n; i++)
		size += strlen(e[i].key) + 1 + strlen(e[i].value) + 1;
	unsigned char *img = calloc(1, size);
	memcpy(img, "glibc-ld.so.cache1.1", 20);
	uint32_t nlibs = (uint32_t)n, len_strings = (uint32_t)(size - strings);
	memcpy(img + 20, &nlibs, 4);
	memcpy(img + 24, &len_strings, 4);
	size_t at = strings;
	for (size_t i = 0; i < n; i++) {
		unsigned char *p = img + 48 + i * 24;
		uint32_t key = (uint32_t)at;
		at += strlen(e[i].key) + 1;
		uint32_t value = (uint32_t)at;
		at += strlen(e[i].value) + 1;
		memcpy(p, &e[i].flags, 4);
		memcpy(p + 4, &key, 4);
		memcpy(p + 8, &value, 4);
		memcpy(p + 16, &e[i].hwcap, 8);
		strcpy((char *)img + key, e[i].key);
		strcpy((char *)img + value, e[i].value);
	}
	*len = size;
	return img;
}

static const struct entry sample[] = {
    {0x0303, "libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1", 0},
    {0x0303, "libm.so.6", "/usr/lib/glibc-hwcaps/x86-64-v3/libm.so.6", 1ull << 62},
    {0x0303, "libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", 0},
    {0x0003, "libz.so.1", "/usr/lib/i386-linux-gnu/libz.so.1", 0},
};

static void a_soname_maps_to_its_entries(void **state)
{
	(void)state;
	size_t len;
	unsigned char *img = image_of(sample, 4, &len);
	struct buf v;
	buf_init(&v);
	assert_int_equal(ldcache_lookup(img, len, "libm.so.6", &v), 0);
	assert_string_equal(v.data, "/usr/lib/glibc-hwcaps/x86-64-v3/libm.so.6 (hwcap "
	                            "0x4000000000000000); /usr/lib/x86_64-linux-gnu/libm.so.6");
	buf_reset(&v);
	assert_int_equal(ldcache_lookup(img, len, "libfoo.so.2", &v), 0);
	assert_string_equal(v.data, "libfoo.so.2 not in the cache");
#if defined(__x86_64__) && !defined(__ILP32__)
	/* Another architecture's library is no answer of this host's loader. */
	buf_reset(&v);
	assert_int_equal(ldcache_lookup(img, len, "libz.so.1", &v), 0);
	assert_string_equal(v.data, "/usr/lib/x86_64-linux-gnu/libz.so.1");
#endif
	buf_free(&v);
	free(img);
}

/* Every shorter image is refused or read within its bounds (ASan checks
 * the copies, which end exactly where the image does); none gives the
 * whole image's mapping for a soname whose string was cut. */
static void a_truncated_cache_is_no_map(void **state)
{
	(void)state;
	size_t len;
	unsigned char *img = image_of(sample, 4, &len);
	struct buf v;
	buf_init(&v);
	for (size_t cut = 0; cut < len; cut++) {
		unsigned char *part = malloc(cut ? cut : 1);
		memcpy(part, img, cut);
		buf_reset(&v);
		int r = ldcache_lookup(part, cut, "libz.so.1", &v);
		/* The last string is the i386 path: every cut before its
		 * end leaves a string that does not end in the image. */
		assert_int_equal(r, -1);
		assert_int_equal(v.len, 0);
		free(part);
	}
	free(img);
	buf_free(&v);
}

static void a_damaged_cache_is_no_map(void **state)
{
	(void)state;
	size_t len;
	unsigned char *img = image_of(sample, 4, &len);
	struct buf v;
	buf_init(&v);
	/* An offset past the end, a count past the entries, the old format's
	 * magic, and every byte of the header and entries flipped in turn. */
	unsigned char *bad = malloc(len);
	uint32_t far = (uint32_t)len + 100, many = 0x7fffffff;
	memcpy(bad, img, len);
	memcpy(bad + 48 + 4, &far, 4);
	assert_int_equal(ldcache_lookup(bad, len, "libz.so.1", &v), -1);
	memcpy(bad, img, len);
	memcpy(bad + 20, &many, 4);
	assert_int_equal(ldcache_lookup(bad, len, "libz.so.1", &v), -1);
	memcpy(bad, img, len);
	memcpy(bad, "ld.so-1.7.0", 11);
	assert_int_equal(ldcache_lookup(bad, len, "libz.so.1", &v), -1);
	for (size_t i = 0; i < 48 + 4 * 24; i++) {
		memcpy(bad, img, len);
		bad[i] ^= 0xff;
		buf_reset(&v);
		ldcache_lookup(bad, len, "libz.so.1", &v);
	}
	/* A string table without its last NUL. */
	memcpy(bad, img, len);
	bad[len - 1] = 'x';
	assert_int_equal(ldcache_lookup(bad, len, "libm.so.6", &v), -1);
	free(bad);
	free(img);
	buf_free(&v);
}

static void the_fact_reads_the_hosts_cache(void **state)
{
	(void)state;
	assert_true(observe_fact_known("ldcache:libc.so.6"));
	assert_false(observe_fact_known("ldcache:"));
	assert_false(observe_fact_known("ldcache:/lib/libc.so.6"));
	if (access(LDCACHE_PATH, R_OK) != 0)
		skip();
	struct buf v;
	buf_init(&v);
	observe_fact_value("ldcache:libc.so.6", &v);
	assert_int_equal(v.data[0], 'P');
	assert_non_null(strstr(v.data, "/libc.so.6"));
	buf_reset(&v);
	observe_fact_value("ldcache:no-such-library.so.99", &v);
	assert_string_equal(v.data, "Pno-such-library.so.99 not in the cache");
	buf_free(&v);
}

/* One index asked for many names answers each as a lookup of its own
 * would: names of the same length as another are told apart. */
static void an_index_answers_as_lookups_do(void **state)
{
	(void)state;
	static const struct entry names[] = {
	    {0x0303, "libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1", 0},
	    {0x0303, "libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", 0},
	    {0x0303, "libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", 0},
	    {0x0303, "libzstd.so.1", "/usr/lib/x86_64-linux-gnu/libzstd.so.1", 0},
	};
	size_t len;
	unsigned char *img = image_of(names, 4, &len);
	struct ldcache_index ix;
	assert_int_equal(ldcache_index_init(&ix, img, len), 0);
	const char *ask[] = {"libc.so.6", "libz.so.1", "libzstd.so.1", "libz.so", "libm.so.6", ""};
	struct buf got, want;
	buf_init(&got);
	buf_init(&want);
	for (size_t i = 0; i < sizeof ask / sizeof ask[0]; i++) {
		buf_reset(&got);
		buf_reset(&want);
		ldcache_index_lookup(&ix, ask[i], &got);
		assert_int_equal(ldcache_lookup(img, len, ask[i], &want), 0);
		assert_string_equal(got.data, want.data);
	}
	buf_reset(&got);
	ldcache_index_lookup(&ix, "libm.so.6", &got);
	assert_string_equal(got.data, "/usr/lib/x86_64-linux-gnu/libm.so.6");
	ldcache_index_free(&ix);
	/* A damaged image gives no index. */
	img[0] ^= 1;
	assert_int_equal(ldcache_index_init(&ix, img, len), -1);
	buf_free(&got);
	buf_free(&want);
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(a_soname_maps_to_its_entries),
	    cmocka_unit_test(a_truncated_cache_is_no_map),
	    cmocka_unit_test(a_damaged_cache_is_no_map),
	    cmocka_unit_test(the_fact_reads_the_hosts_cache),
	    cmocka_unit_test(an_index_answers_as_lookups_do),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
