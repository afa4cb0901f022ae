#include "cachet/hash_index.h"

#include <stdlib.h>

#include "cachet/buf.h"

void hash_index_free(struct hash_index *h)
{
	free(h->slots);
	h->slots = NULL;
	h->cap = h->count = 0;
}

struct hash_index_slot *hash_index_find(const struct hash_index *h, uint64_t hash,
                                        int (*same)(const void *ctx, size_t index), const void *ctx)
{
	if (!h->cap)
		return NULL;
	for (size_t at = hash & (h->cap - 1);; at = (at + 1) & (h->cap - 1)) {
		struct hash_index_slot *slot = &h->slots[at];
		if (slot->index == HASH_INDEX_EMPTY ||
		    (slot->hash == hash && same(ctx, slot->index)))
			return slot;
	}
}

static void grow(struct hash_index *h)
{
	struct hash_index old = *h;
	h->cap = old.cap ? old.cap * 2 : 256;
	h->slots = xmalloc(h->cap * sizeof *h->slots);
	for (size_t i = 0; i < h->cap; i++)
		h->slots[i].index = HASH_INDEX_EMPTY;
	for (size_t i = 0; i < old.cap; i++) {
		if (old.slots[i].index == HASH_INDEX_EMPTY)
			continue;
		size_t at = old.slots[i].hash & (h->cap - 1);
		while (h->slots[at].index != HASH_INDEX_EMPTY)
			at = (at + 1) & (h->cap - 1);
		h->slots[at] = old.slots[i];
	}
	free(old.slots);
}

struct hash_index_slot *hash_index_slot(struct hash_index *h, uint64_t hash,
                                        int (*same)(const void *ctx, size_t index), const void *ctx)
{
	if ((h->count + 1) * 2 > h->cap)
		grow(h);
	return hash_index_find(h, hash, same, ctx);
}

void hash_index_fill(struct hash_index *h, struct hash_index_slot *slot, uint64_t hash,
                     size_t index)
{
	slot->hash = hash;
	slot->index = index;
	h->count++;
}

uint64_t hash_mix(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}
