/*
 * SHA-256 content digests (sha256.h: SHA-NI accelerated where the CPU has
 * it, no crypto library on the hit path). Every content address in cachet is one of these: blobs
 * are named by the digest of their uncompressed bytes, as Bazel's remote cache names them.
 */
#ifndef CACHET_DIGEST_H
#define CACHET_DIGEST_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/error.h"
/* OpenSSL's one-shot SHA-256 functions: deprecated in 3.0 in favour of EVP,
 * but EVP initialises the provider machinery (about 5 M instructions, more
 * than a whole cache hit) while these call the same SHA-NI block code
 * directly. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#define DIGEST_LEN     32
#define DIGEST_HEX_LEN 64

struct digest {
	unsigned char b[DIGEST_LEN];
};

/* Incremental hashing. The state is held inline: a hasher needs no
 * allocation, and hasher_init cannot fail (the error argument stays for
 * callers written against a library that could). */
struct hasher {
	SHA256_CTX ctx;
};

int hasher_init(struct hasher *h, struct error *e);
void hasher_update(struct hasher *h, const void *data, size_t len);
/* Length-prefixed update, so that ("ab","c") and ("a","bc") hash apart. */
void hasher_update_str(struct hasher *h, const char *s);
void hasher_update_u64(struct hasher *h, uint64_t v);
void hasher_final(struct hasher *h, struct digest *out);
void hasher_abort(struct hasher *h); /* abandons the hash (nothing to free) */

void digest_bytes(const void *data, size_t len, struct digest *out);

/* Digest of everything readable from fd, starting at offset 0 (pread: the
 * descriptor's offset is left alone). *size_out gets the byte count if non-NULL. */
int digest_fd(int fd, struct digest *out, uint64_t *size_out, struct error *e);
/* digest_fd that also hands every chunk it reads to each(ctx, chunk, len),
 * so that another pass over the bytes (a search) rides on the hashing read
 * instead of reading the file again. */
int digest_fd_each(int fd, struct digest *out, uint64_t *size_out,
                   void (*each)(void *ctx, const void *chunk, size_t len), void *ctx,
                   struct error *e);

/* Opens path with O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC, refuses anything
 * but a regular file (never opens a FIFO or device for hashing), hashes it. */
int digest_file(const char *path, struct digest *out, uint64_t *size_out, struct error *e);

/* out must hold DIGEST_HEX_LEN + 1 bytes. */
void digest_to_hex(const struct digest *d, char *out);
/* "4b1f9a07…c1e2": enough to tell two builds apart at a glance. out must
 * hold DIGEST_SHORT_LEN + 1 bytes. */
#define DIGEST_SHORT_LEN 15
void digest_to_short_hex(const unsigned char *b, char *out);
/* Parses exactly 64 hex digits. Returns 0, or -1 on malformed input. */
int digest_from_hex(const char *hex, struct digest *out);

int digest_equal(const struct digest *a, const struct digest *b);
int digest_is_zero(const struct digest *d);

#endif
