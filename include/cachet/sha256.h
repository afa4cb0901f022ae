/*
 * SHA-256, the engine under digest.h: x86 SHA extensions where the CPU has
 * them (detected once by CPUID), portable C elsewhere. Callers normally use
 * the hasher of digest.h; this header exists so that the hasher can hold its
 * state inline (no allocation per digest) and so that tests can compare the
 * two block functions.
 */
#ifndef CACHET_SHA256_H
#define CACHET_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* Plain data: copying it forks the hash. */
struct sha256 {
	uint32_t state[8];
	uint64_t bytes;          /* total fed so far */
	unsigned fill;           /* bytes waiting in buf */
	unsigned char buf[64];
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t len);
/* Writes the 32-byte digest; c must be initialised again before reuse. */
void sha256_final(struct sha256 *c, unsigned char out[32]);

/* Tests only: with on != 0, use the portable block function even where the
 * CPU has SHA extensions. Returns 1 when the accelerated one is now in use. */
int sha256_use_portable(int on);

#endif
