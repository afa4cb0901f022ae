#include "cachet/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"

static uint64_t hash_key(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h ^ (h >> 29);
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

static struct strmap_slot *find(const struct strmap *m, const char *key)
{
	size_t at = hash_key(key) & (m->cap - 1);
	while (m->slots[at].key && strcmp(m->slots[at].key, key) != 0)
		at = (at + 1) & (m->cap - 1);
	return &m->slots[at];
}

void *strmap_get(const struct strmap *m, const char *key)
{
	if (!m->cap)
		return NULL;
	struct strmap_slot *s = find(m, key);
	return s->key ? s->value : NULL;
}

static void grow(struct strmap *m)
{
	struct strmap old = *m;
	m->cap = old.cap ? old.cap * 2 : 64;
	m->slots = xcalloc(m->cap, sizeof *m->slots);
	for (size_t i = 0; i < old.cap; i++)
		if (old.slots[i].key)
			*find(m, old.slots[i].key) = old.slots[i];
	free(old.slots);
}

void *strmap_put(struct strmap *m, const char *key, void *value)
{
	if ((m->count + 1) * 2 > m->cap)
		grow(m);
	struct strmap_slot *s = find(m, key);
	if (s->key) {
		void *prev = s->value;
		s->value = value;
		return prev;
	}
	s->key = xstrdup(key);
	s->value = value;
	m->count++;
	return NULL;
}
