/* The growing byte buffer: buf_addhex against printf's %llx, for the values
 * at every nibble boundary, appended after text and across reallocations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "cachet/buf.h"

static void hex_is_printfs_llx(void **state)
{
	(void)state;
	struct buf got, want;
	buf_init(&got);
	buf_init(&want);
	for (int shift = 0; shift < 64; shift++) {
		uint64_t one = (uint64_t)1 << shift;
		const uint64_t values[] = {one - 1, one, one + 1, ~(uint64_t)0 >> (63 - shift)};
		for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
			buf_addhex(&got, values[i]);
			buf_addch(&got, ':');
			buf_addf(&want, "%llx:", (unsigned long long)values[i]);
		}
	}
	/* Many reallocations later, byte for byte and still NUL-terminated. */
	assert_int_equal(got.len, want.len);
	assert_string_equal(got.data, want.data);
	buf_free(&got);
	buf_free(&want);
}

static void hex_appends_to_what_is_there(void **state)
{
	(void)state;
	struct buf b;
	buf_init(&b);
	buf_addstr(&b, "nr=");
	buf_addhex(&b, 0);
	buf_addstr(&b, " flags=");
	buf_addhex(&b, 0x80000);
	assert_string_equal(b.data, "nr=0 flags=80000");
	assert_int_equal(b.len, strlen("nr=0 flags=80000"));
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(hex_is_printfs_llx),
	    cmocka_unit_test(hex_appends_to_what_is_there),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
