#include "cachet/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"

/* Eight bytes at a time (the keys are paths, 50 to 100 bytes), with a
 * final mix so that the low bits, which pick the slot, depend on all of
 * them. */
static uint64_t hash_key(const char *s)
{
	const uint64_t k = 0x9e3779b97f4a7c15ull;
	size_t len = strlen(s);
	uint64_t h = len * k, w;
	for (; len >= 8; s += 8, len -= 8) {
		memcpy(&w, s, 8);
		h = ((h << 5 | h >> 59) ^ w) * k;
	}
	w = 0;
	memcpy(&w, s, len);
	h = ((h << 5 | h >> 59) ^ w) * k;
	h ^= h >> 32;
	h *= 0xd6e8feb86659fd93ull;
	return h ^ (h >> 29);
}

uint64_t strmap_hash(const char *key)
{
	return hash_key(key);
}

void strmap_init(struct strmap *m)
{
	m->slots = NULL;
	m->cap = m->count = 0;
}

void strmap_free(struct strmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].key);
	free(m->slots);
	strmap_init(m);
}

static struct strmap_slot *find(const struct strmap *m, const char *key, uint64_t hash)
{
	size_t at = hash & (m->cap - 1);
	while (m->slots[at].key &&
	       (m->slots[at].hash != hash || strcmp(m->slots[at].key, key) != 0))
		at = (at + 1) & (m->cap - 1);
	return &m->slots[at];
}

void *strmap_get(const struct strmap *m, const char *key)
{
	if (!m->cap)
		return NULL;
	struct strmap_slot *s = find(m, key, hash_key(key));
	return s->key ? s->value : NULL;
}

static void resize(struct strmap *m, size_t cap)
{
	struct strmap old = *m;
	m->cap = cap;
	m->slots = xcalloc(m->cap, sizeof *m->slots);
	for (size_t i = 0; i < old.cap; i++)
		if (old.slots[i].key)
			*find(m, old.slots[i].key, old.slots[i].hash) = old.slots[i];
	free(old.slots);
}

void *strmap_get_or_new(struct strmap *m, const char *key, size_t size, int *added)
{
	if ((m->count + 1) * 2 > m->cap)
		resize(m, m->cap ? m->cap * 2 : 64);
	uint64_t hash = hash_key(key);
	struct strmap_slot *s = find(m, key, hash);
	if (added)
		*added = !s->key;
	if (!s->key) {
		s->key = xstrdup(key);
		s->value = xcalloc(1, size);
		s->hash = hash;
		m->count++;
	}
	return s->value;
}

void strmap_reserve(struct strmap *m, size_t n)
{
	size_t cap = m->cap ? m->cap : 64;
	while (n * 2 > cap)
		cap *= 2;
	if (cap != m->cap)
		resize(m, cap);
}

void *strmap_put(struct strmap *m, const char *key, void *value)
{
	if ((m->count + 1) * 2 > m->cap)
		resize(m, m->cap ? m->cap * 2 : 64);
	uint64_t hash = hash_key(key);
	struct strmap_slot *s = find(m, key, hash);
	if (s->key) {
		void *prev = s->value;
		s->value = value;
		return prev;
	}
	s->key = xstrdup(key);
	s->value = value;
	s->hash = hash;
	m->count++;
	return NULL;
}
