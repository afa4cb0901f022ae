/* The string map behind the fingerprint log, the recorder and the directory
 * fingerprints: keys of every length around the hash's 8-byte words, keys
 * that differ only in their last byte, growth and reserve. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/strmap.h"

/* "/usr/include/" followed by n copies of 'a' and a last byte c. */
static void key_of(char *out, size_t n, char c)
{
	size_t at = (size_t)sprintf(out, "/usr/include/");
	memset(out + at, 'a', n);
	out[at + n] = c;
	out[at + n + 1] = '\0';
}

static void keys_of_every_length_are_told_apart(void **state)
{
	(void)state;
	struct strmap m;
	strmap_init(&m);
	char key[128];
	/* Lengths 13 to 83: every remainder of 8, and pairs that differ only
	 * in the byte after the last whole word. */
	for (size_t n = 0; n < 70; n++)
		for (char c = 'x'; c <= 'z'; c++) {
			key_of(key, n, c);
			assert_null(strmap_put(&m, key,
			                       (void *)(uintptr_t)(n * 4 + (size_t)(c - 'x') + 1)));
		}
	assert_int_equal(m.count, 70 * 3);
	for (size_t n = 0; n < 70; n++)
		for (char c = 'x'; c <= 'z'; c++) {
			key_of(key, n, c);
			assert_ptr_equal(strmap_get(&m, key),
			                 (void *)(uintptr_t)(n * 4 + (size_t)(c - 'x') + 1));
		}
	key_of(key, 70, 'x');
	assert_null(strmap_get(&m, key));
	assert_null(strmap_get(&m, ""));
	assert_null(strmap_get(&m, "/usr/include/"));
	strmap_free(&m);
}

static void put_replaces_and_returns_the_previous_value(void **state)
{
	(void)state;
	struct strmap m;
	strmap_init(&m);
	int a, b;
	assert_null(strmap_get(&m, "k"));
	assert_null(strmap_put(&m, "", &a));
	assert_ptr_equal(strmap_put(&m, "", &b), &a);
	assert_ptr_equal(strmap_get(&m, ""), &b);
	assert_int_equal(m.count, 1);
	strmap_free(&m);
}

static void reserve_keeps_entries_and_room(void **state)
{
	(void)state;
	struct strmap m;
	strmap_init(&m);
	char key[64];
	for (int i = 0; i < 10; i++) {
		snprintf(key, sizeof key, "/src/file%d.h", i);
		strmap_put(&m, key, (void *)(intptr_t)(i + 1));
	}
	strmap_reserve(&m, 1000);
	size_t cap = m.cap;
	assert_true(cap >= 2000);
	for (int i = 10; i < 1000; i++) {
		snprintf(key, sizeof key, "/src/file%d.h", i);
		strmap_put(&m, key, (void *)(intptr_t)(i + 1));
	}
	assert_int_equal(m.cap, cap); /* no growth after the reserve */
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof key, "/src/file%d.h", i);
		assert_ptr_equal(strmap_get(&m, key), (void *)(intptr_t)(i + 1));
	}
	strmap_reserve(&m, 10); /* never shrinks */
	assert_int_equal(m.cap, cap);
	size_t seen = 0;
	for (size_t i = 0; i < m.cap; i++)
		seen += m.slots[i].key != NULL;
	assert_int_equal(seen, 1000);
	strmap_free(&m);
}

static void get_or_new_adds_once_zeroed(void **state)
{
	(void)state;
	struct strmap m;
	strmap_init(&m);
	char key[128];
	for (size_t n = 0; n < 300; n++) {
		key_of(key, n % 40, (char)('a' + n % 26));
		int added = -1;
		long *v = strmap_get_or_new(&m, key, sizeof *v, &added);
		assert_ptr_equal(strmap_get(&m, key), v);
		if (added) {
			assert_int_equal(*v, 0);
			*v = (long)n + 1;
		} else {
			assert_int_equal(added, 0);
			assert_true(*v > 0);
		}
		assert_ptr_equal(strmap_get_or_new(&m, key, sizeof *v, NULL), v);
	}
	size_t count = 0;
	for (size_t i = 0; i < m.cap; i++)
		if (m.slots[i].key) {
			free(m.slots[i].value);
			count++;
		}
	assert_int_equal(count, m.count);
	strmap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(keys_of_every_length_are_told_apart),
	    cmocka_unit_test(put_replaces_and_returns_the_previous_value),
	    cmocka_unit_test(reserve_keeps_entries_and_room),
	    cmocka_unit_test(get_or_new_adds_once_zeroed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
