/*
 * Finding a few strings in bytes that arrive in chunks (a file while it is
 * being hashed), without holding the bytes: a match that straddles two
 * chunks is found through the last bytes of the chunk before.
 *
 * Invariants: needles are not owned and must outlive the finder; a NULL or
 * empty needle is never found; found only gains bits.
 */
#ifndef CACHET_FIND_H
#define CACHET_FIND_H

#include <stddef.h>
#include <stdint.h>

#define FINDER_MAX 64

struct finder {
	const char *needle[FINDER_MAX]; /* not owned; NULL = none */
	size_t len[FINDER_MAX];
	size_t longest;
	uint64_t want;       /* bit i: needle i is set */
	uint64_t found;      /* bit i: needle i occurred in the bytes fed so far */
	unsigned char *seam; /* the previous chunk's tail, then the current one's head */
	size_t tail;         /* bytes of the previous chunks kept at the start of seam */
};

/* n needles (at most FINDER_MAX), index i reported as bit i. */
void finder_init(struct finder *f, const char *const *needles, size_t n);
/* The next chunk of the bytes. Returns at once when every needle is found. */
void finder_feed(struct finder *f, const void *data, size_t len);
void finder_free(struct finder *f);

#endif
