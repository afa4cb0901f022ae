/*
 * A hash map from NUL-terminated strings to pointers. Keys are copied and
 * owned by the map; values are not. Open addressing, grows at half full.
 */
#ifndef CACHET_STRMAP_H
#define CACHET_STRMAP_H

#include <stddef.h>
#include <stdint.h>

struct strmap_slot {
	char *key;
	void *value;
	uint64_t hash; /* of key: growing never hashes again, probing compares it first */
};

struct strmap {
	struct strmap_slot *slots;
	size_t cap, count;
};

void strmap_init(struct strmap *m);
void strmap_free(struct strmap *m); /* frees keys, not values */
/* The value for key, or NULL. */
void *strmap_get(const struct strmap *m, const char *key);
/* Sets key's value; returns the previous one (NULL when new). */
void *strmap_put(struct strmap *m, const char *key, void *value);
/* The value for key; when there is none, a new zeroed allocation of size
 * bytes, added under key (values stay the caller's to free). *added (may
 * be NULL) says which. One lookup where get and put make two. */
void *strmap_get_or_new(struct strmap *m, const char *key, size_t size, int *added);
/* Makes room for n keys in all, so that adding them never grows the map. */
void strmap_reserve(struct strmap *m, size_t n);
/* The hash the map keeps of key: for tables of their own over strings
 * (the tracer's event log compares events, not keys). */
uint64_t strmap_hash(const char *key);
/* Iteration: for (size_t i = 0; i < m.cap; i++) if (m.slots[i].key) ... */

#endif
