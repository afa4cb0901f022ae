/*
 * SHA-256 (FIPS 180-4) without a crypto library: the x86 SHA extensions
 * where the CPU has them (chosen once, by CPUID), portable C elsewhere.
 *
 * Why not libcrypto: OpenSSL 3 initialises its provider machinery on the
 * first EVP digest (reading openssl.cnf, building name tables), about 5 M
 * instructions, and its shared library costs as much again to relocate:
 * together more than a whole cache hit. The SHA-NI block function below
 * is the same instruction sequence OpenSSL uses, so throughput is equal.
 */
#include "cachet/sha256.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define SHA256_X86 1
#if defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#define SHA256_GLIBC_CPUID 1
#endif
#endif
#endif

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static inline uint32_t load_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void blocks_portable(uint32_t st[8], const unsigned char *p, size_t n)
{
	for (; n--; p += 64) {
		uint32_t w[64];
		for (int t = 0; t < 16; t++)
			w[t] = load_be32(p + 4 * t);
		for (int t = 16; t < 64; t++) {
			uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^ (w[t - 15] >> 3);
			uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^ (w[t - 2] >> 10);
			w[t] = w[t - 16] + s0 + w[t - 7] + s1;
		}
		uint32_t a = st[0], b = st[1], c = st[2], d = st[3];
		uint32_t e = st[4], f = st[5], g = st[6], h = st[7];
		for (int t = 0; t < 64; t++) {
			uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) +
				      K[t] + w[t];
			uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
			h = g;
			g = f;
			f = e;
			e = d + t1;
			d = c;
			c = b;
			b = a;
			a = t1 + t2;
		}
		st[0] += a;
		st[1] += b;
		st[2] += c;
		st[3] += d;
		st[4] += e;
		st[5] += f;
		st[6] += g;
		st[7] += h;
	}
}

#ifdef SHA256_X86
/* Four rounds per step; the message schedule for step g >= 4 is
 * W[g] = msg2(msg1(W[g-4], W[g-3]) + W[g-2..g-1] shifted by one word, W[g-1]),
 * which the out-of-order core overlaps with the rounds of earlier steps. */
__attribute__((target("sha,sse4.1,ssse3"))) static void blocks_shani(uint32_t st[8],
								       const unsigned char *p,
								       size_t n)
{
	const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i tmp = _mm_loadu_si128((const __m128i *)&st[0]);
	__m128i s1 = _mm_loadu_si128((const __m128i *)&st[4]);
	tmp = _mm_shuffle_epi32(tmp, 0xB1);        /* CDAB */
	s1 = _mm_shuffle_epi32(s1, 0x1B);          /* EFGH */
	__m128i s0 = _mm_alignr_epi8(tmp, s1, 8);  /* ABEF */
	s1 = _mm_blend_epi16(s1, tmp, 0xF0);       /* CDGH */
	for (; n--; p += 64) {
		__m128i abef = s0, cdgh = s1, w[4];
#pragma GCC unroll 16
		for (int g = 0; g < 16; g++) {
			if (g < 4) {
				w[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)),
							swap);
			} else {
				__m128i x = _mm_sha256msg1_epu32(w[g & 3], w[(g - 3) & 3]);
				x = _mm_add_epi32(x, _mm_alignr_epi8(w[(g - 1) & 3], w[(g - 2) & 3], 4));
				w[g & 3] = _mm_sha256msg2_epu32(x, w[(g - 1) & 3]);
			}
			__m128i m = _mm_add_epi32(w[g & 3], _mm_loadu_si128((const __m128i *)&K[4 * g]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, m);
			s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(m, 0x0E));
		}
		s0 = _mm_add_epi32(s0, abef);
		s1 = _mm_add_epi32(s1, cdgh);
	}
	tmp = _mm_shuffle_epi32(s0, 0x1B);         /* FEBA */
	s1 = _mm_shuffle_epi32(s1, 0xB1);          /* DCHG */
	s0 = _mm_blend_epi16(tmp, s1, 0xF0);       /* DCBA */
	s1 = _mm_alignr_epi8(s1, tmp, 8);          /* HGFE */
	_mm_storeu_si128((__m128i *)&st[0], s0);
	_mm_storeu_si128((__m128i *)&st[4], s1);
}

/* glibc's loader has read CPUID already: asking it costs nothing, while
 * CPUID itself traps to the hypervisor in a virtual machine (10 us here). */
static int cpu_has_shani(void)
{
#ifdef SHA256_GLIBC_CPUID
	return CPU_FEATURE_ACTIVE(SHA) && CPU_FEATURE_ACTIVE(SSSE3) && CPU_FEATURE_ACTIVE(SSE4_1);
#else
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	int ssse3 = (c >> 9) & 1, sse41 = (c >> 19) & 1;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return 0;
	return ssse3 && sse41 && ((b >> 29) & 1);
#endif
}
#endif

typedef void (*blocks_fn)(uint32_t st[8], const unsigned char *p, size_t n);

/* Set once, on first use; a race between threads writes the same value. */
static blocks_fn blocks;
static int force_portable;

static blocks_fn choose(void)
{
	blocks_fn f = blocks;
	if (f)
		return f;
	f = blocks_portable;
#ifdef SHA256_X86
	if (!force_portable && cpu_has_shani())
		f = blocks_shani;
#endif
	__atomic_store_n(&blocks, f, __ATOMIC_RELAXED);
	return f;
}

int sha256_use_portable(int on)
{
	force_portable = on;
	blocks = NULL;
	return choose() == blocks_portable ? 0 : 1;
}

void sha256_init(struct sha256 *c)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(c->state, iv, sizeof iv);
	c->bytes = 0;
	c->fill = 0;
}

void sha256_update(struct sha256 *c, const void *data, size_t len)
{
	const unsigned char *p = data;
	blocks_fn f = choose();
	c->bytes += len;
	if (c->fill) {
		size_t take = 64 - c->fill < len ? 64 - c->fill : len;
		memcpy(c->buf + c->fill, p, take);
		c->fill += (unsigned)take;
		p += take;
		len -= take;
		if (c->fill < 64)
			return;
		f(c->state, c->buf, 1);
		c->fill = 0;
	}
	if (len >= 64) {
		f(c->state, p, len / 64);
		p += len & ~(size_t)63;
		len &= 63;
	}
	if (len) {
		memcpy(c->buf, p, len);
		c->fill = (unsigned)len;
	}
}

void sha256_final(struct sha256 *c, unsigned char out[32])
{
	uint64_t bits = c->bytes * 8;
	unsigned char pad[72];
	size_t padlen = (c->fill < 56 ? 56 : 120) - c->fill;
	memset(pad, 0, sizeof pad);
	pad[0] = 0x80;
	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_update(c, pad, padlen + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(c->state[i] >> 24);
		out[4 * i + 1] = (unsigned char)(c->state[i] >> 16);
		out[4 * i + 2] = (unsigned char)(c->state[i] >> 8);
		out[4 * i + 3] = (unsigned char)c->state[i];
	}
}
