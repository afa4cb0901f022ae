#include "cachet/fplog.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"

struct fplog_entry {
	struct file_id id;
	struct digest digest;
	int used;
	int learnt; /* in this process: counted in added */
};

static struct fplog_entry *remember(struct fplog *l, const char *path, const struct file_id *id,
                                    const struct digest *d)
{
	struct fplog_entry *en = strmap_get_or_new(&l->map, path, sizeof *en, NULL);
	en->id = *id;
	en->digest = *d;
	en->learnt = 0;
	return en;
}

/* Counts en as learnt in this process (once). */
static void learnt(struct fplog *l, struct fplog_entry *en)
{
	en->used = 1;
	if (!en->learnt)
		l->added++;
	en->learnt = 1;
}

static int fplog_get(void *ctx, const char *path, const struct file_id *id, struct digest *out)
{
	struct fplog *l = ctx;
	struct fplog_entry *en = strmap_get(&l->map, path);
	if (en && file_id_equal(&en->id, id)) {
		*out = en->digest;
		en->used = 1;
		return 1;
	}
	if (!l->inner.get || l->inner.get(l->inner.ctx, path, id, out) != 1)
		return 0;
	learnt(l, remember(l, path, id, out));
	return 1;
}

static void fplog_put(void *ctx, const char *path, const struct file_id *id, const struct digest *d)
{
	struct fplog *l = ctx;
	if (l->inner.put)
		l->inner.put(l->inner.ctx, path, id, d);
	learnt(l, remember(l, path, id, d));
}

static void fplog_note(void *ctx, const char *path, const struct file_id *id,
                       const struct digest *d)
{
	struct fplog *l = ctx;
	struct fplog_entry *en = strmap_get_or_new(&l->noted, path, sizeof *en, NULL);
	en->id = *id;
	en->digest = *d;
}

static int fplog_seen(void *ctx, const char *path, const struct file_id *id, struct digest *out)
{
	struct fplog *l = ctx;
	const struct strmap *maps[] = {&l->map, &l->noted};
	for (size_t i = 0; i < 2; i++) {
		const struct fplog_entry *en = strmap_get(maps[i], path);
		if (en && file_id_equal(&en->id, id)) {
			*out = en->digest;
			return 1;
		}
	}
	return 0;
}

void fplog_forget(struct fplog *l, const char *path)
{
	struct fplog_entry *en = strmap_get(&l->map, path);
	if (!en)
		return;
	if (en->learnt)
		l->added--;
	en->learnt = 0;
	en->used = 0;
}

static int fplog_held(void *ctx, const char *path, const struct digest *d)
{
	struct fplog *l = ctx;
	return l->inner.held && l->inner.held(l->inner.ctx, path, d);
}

void fplog_init(struct fplog *l)
{
	memset(l, 0, sizeof *l);
	strmap_init(&l->map);
	strmap_init(&l->noted);
	l->dc.get = fplog_get;
	l->dc.put = fplog_put;
	l->dc.note = fplog_note;
	l->dc.seen = fplog_seen;
	l->dc.ctx = l;
	l->dc.held = fplog_held;
}

static int in_loaded(const struct fplog *l, const struct fplog_entry *en)
{
	return l->loaded && en >= l->loaded && en < l->loaded + l->nloaded;
}

void fplog_free(struct fplog *l)
{
	struct strmap *maps[] = {&l->map, &l->noted};
	for (size_t m = 0; m < 2; m++) {
		for (size_t i = 0; i < maps[m]->cap; i++)
			if (maps[m]->slots[i].key && !in_loaded(l, maps[m]->slots[i].value))
				free(maps[m]->slots[i].value);
		strmap_free(maps[m]);
	}
	free(l->loaded);
}

void fplog_load(struct fplog *l, const struct store_memo *m)
{
	strmap_reserve(&l->map, l->map.count + m->nfps);
	size_t i = 0;
	if (!l->loaded) {
		l->loaded = xcalloc(m->nfps ? m->nfps : 1, sizeof *l->loaded);
		for (; i < m->nfps; i++) {
			const char *path = m->fps[i].path;
			struct fplog_entry *en = strmap_get(&l->map, path);
			if (!en) {
				/* (A path the memo names twice, which a
				 * damaged one could, takes one entry.) */
				en = &l->loaded[l->nloaded++];
				strmap_put(&l->map, path, en);
			}
			en->id = m->fps[i].id;
			en->digest = m->fps[i].digest;
			en->learnt = 0;
		}
	}
	/* A second memo's (not done today): entries of their own. */
	for (; i < m->nfps; i++)
		remember(l, m->fps[i].path, &m->fps[i].id, &m->fps[i].digest);
}

void fplog_set_inner(struct fplog *l, const struct digest_cache *inner)
{
	l->inner = *inner;
}

struct store_memo_fp *fplog_used(const struct fplog *l, size_t *n)
{
	struct store_memo_fp *out = xmalloc((l->map.count ? l->map.count : 1) * sizeof *out);
	*n = 0;
	for (size_t i = 0; i < l->map.cap; i++) {
		const struct fplog_entry *en = l->map.slots[i].value;
		if (!l->map.slots[i].key || !en->used)
			continue;
		out[*n].path = l->map.slots[i].key;
		out[*n].id = en->id;
		out[*n].digest = en->digest;
		(*n)++;
	}
	return out;
}
