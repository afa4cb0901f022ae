/*
 * An index over entries that live elsewhere (an array of the caller's): a
 * table of (hash, position) slots, open addressing with linear probing,
 * grown at half full. The caller says what makes two entries equal, so a
 * lookup builds no key and an addition copies nothing; the tracer's event
 * log and its ring's repeat check each keep one.
 */
#ifndef CACHET_HASH_INDEX_H
#define CACHET_HASH_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct hash_index_slot {
	uint64_t hash;
	size_t index; /* the entry's position; HASH_INDEX_EMPTY: a free slot */
};

#define HASH_INDEX_EMPTY SIZE_MAX

struct hash_index {
	struct hash_index_slot *slots;
	size_t cap, count;
};

/* Zero-initialised is empty. */
void hash_index_free(struct hash_index *h);
/* The slot of the entry with this hash for which same(ctx, index) is 1, or
 * the free slot where it would go; NULL when the index has no slots. */
struct hash_index_slot *hash_index_find(const struct hash_index *h, uint64_t hash,
                                        int (*same)(const void *ctx, size_t index),
                                        const void *ctx);
/* hash_index_find after making room for one more entry: the slot to fill
 * with hash_index_fill when it is free. */
struct hash_index_slot *hash_index_slot(struct hash_index *h, uint64_t hash,
                                        int (*same)(const void *ctx, size_t index),
                                        const void *ctx);
void hash_index_fill(struct hash_index *h, struct hash_index_slot *slot, uint64_t hash,
                     size_t index);
/* h with v mixed in: for hashes of several fields. */
uint64_t hash_mix(uint64_t h, uint64_t v);

#endif
