#include "cachet/crc32c.h"

#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#if defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#define CACHET_GLIBC_CPUID 1
#endif
#endif
#endif

/* The reflected polynomial 0x82f63b78 applied to each 4-bit value: two
 * lookups a byte. Only CPUs without the instruction take this loop, so a
 * 16-entry table (no start-up work, one cache line) beats a fast one. */
static const uint32_t nibble_table[16] = {
    0x00000000, 0x105ec76f, 0x20bd8ede, 0x30e349b1, 0x417b1dbc, 0x5125dad3, 0x61c69362, 0x7198540d,
    0x82f63b78, 0x92a8fc17, 0xa24bb5a6, 0xb21572c9, 0xc38d26c4, 0xd3d3e1ab, 0xe330a81a, 0xf36e6f75,
};

uint32_t crc32c_portable(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;
	crc = ~crc;
	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		crc = (crc >> 4) ^ nibble_table[crc & 15];
		crc = (crc >> 4) ^ nibble_table[crc & 15];
	}
	return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const void *data,
                                                               size_t len)
{
	const unsigned char *p = data;
	uint64_t c = ~crc;
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w;
		memcpy(&w, p, 8); /* unaligned: the memo's fields are packed */
		c = _mm_crc32_u64(c, w);
	}
	uint32_t c32 = (uint32_t)c;
	for (; len; p++, len--)
		c32 = _mm_crc32_u8(c32, *p);
	return ~c32;
}
#endif

#if defined(__x86_64__)
/* glibc's answer, from the CPUID its loader ran anyway. Not
 * __builtin_cpu_supports: that links libgcc's constructor, which runs a
 * dozen CPUID instructions of its own at every start, and in a virtual
 * machine each one traps to the hypervisor. */
static int have_sse42(void)
{
#ifdef CACHET_GLIBC_CPUID
	return CPU_FEATURE_ACTIVE(SSE4_2);
#else
	return __builtin_cpu_supports("sse4.2");
#endif
}
#endif

uint32_t crc32c(uint32_t crc, const void *data, size_t len)
{
#if defined(__x86_64__)
	if (have_sse42())
		return crc32c_sse42(crc, data, len);
#endif
	return crc32c_portable(crc, data, len);
}
