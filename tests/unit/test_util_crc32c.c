/* CRC-32C: the standard check value and known vectors (RFC 3720 B.4), and
 * the accelerated loop against the portable one over every split and
 * misalignment of an input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cachet/crc32c.h"

static void known_vectors_match(void **state)
{
	(void)state;
	unsigned char buf[32];
	assert_int_equal(crc32c(0, "123456789", 9), 0xe3069283);
	assert_int_equal(crc32c_portable(0, "123456789", 9), 0xe3069283);
	assert_int_equal(crc32c(0, "", 0), 0);
	memset(buf, 0, sizeof buf);
	assert_int_equal(crc32c(0, buf, sizeof buf), 0x8a9136aa);
	memset(buf, 0xff, sizeof buf);
	assert_int_equal(crc32c(0, buf, sizeof buf), 0x62a8ab43);
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)i;
	assert_int_equal(crc32c(0, buf, sizeof buf), 0x46dd794e);
}

static void accelerated_agrees_with_portable_over_every_split(void **state)
{
	(void)state;
	unsigned char data[300];
	uint32_t x = 12345;
	for (size_t i = 0; i < sizeof data; i++) {
		x = x * 1103515245u + 12345u;
		data[i] = (unsigned char)(x >> 16);
	}
	for (size_t start = 0; start < 9; start++) {
		size_t len = sizeof data - start;
		uint32_t whole = crc32c_portable(0, data + start, len);
		assert_int_equal(crc32c(0, data + start, len), whole);
		for (size_t cut = 0; cut <= len; cut += 7) {
			uint32_t a = crc32c(0, data + start, cut);
			assert_int_equal(crc32c(a, data + start + cut, len - cut), whole);
		}
	}
}

static void one_flipped_bit_changes_the_value(void **state)
{
	(void)state;
	unsigned char data[64] = {0};
	uint32_t clean = crc32c(0, data, sizeof data);
	for (size_t bit = 0; bit < sizeof data * 8; bit++) {
		data[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		assert_int_not_equal(crc32c(0, data, sizeof data), clean);
		data[bit / 8] ^= (unsigned char)(1u << (bit % 8));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(known_vectors_match),
	    cmocka_unit_test(accelerated_agrees_with_portable_over_every_split),
	    cmocka_unit_test(one_flipped_bit_changes_the_value),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
