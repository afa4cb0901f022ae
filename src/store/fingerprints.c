/*
 * The fingerprint cache: path -> (file_id, content digest), shared by every
 * path set and also used to remember which raw blobs were verified.
 *
 * New entries are queued in memory and written by store_fp_flush in one
 * short transaction that never waits for the write lock: the hit path must
 * not queue behind a writer, and a lost entry only costs one re-hash later.
 */
#include <stdlib.h>
#include <string.h>

#include "cachet/array.h"
#include "cachet/buf.h"
#include "store/store_internal.h"

static uint64_t hash_path(const char *p)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (; *p; p++) {
		h ^= (unsigned char)*p;
		h *= 1099511628211ULL;
	}
	return h;
}

/* The slot holding path, or the empty slot where it would go. */
static size_t queue_slot(const struct fp_queue *q, const char *path)
{
	size_t mask = q->nslots - 1;
	size_t i = (size_t)hash_path(path) & mask;
	while (q->slots[i] && strcmp(q->items[q->slots[i] - 1].path, path) != 0)
		i = (i + 1) & mask;
	return i;
}

static void queue_rehash(struct fp_queue *q, size_t nslots)
{
	free(q->slots);
	q->slots = xcalloc(nslots, sizeof *q->slots);
	q->nslots = nslots;
	for (size_t k = 0; k < q->n; k++)
		q->slots[queue_slot(q, q->items[k].path)] = (uint32_t)(k + 1);
}

static struct fp_pending *queue_find(const struct fp_queue *q, const char *path)
{
	if (!q->n)
		return NULL;
	uint32_t v = q->slots[queue_slot(q, path)];
	return v ? &q->items[v - 1] : NULL;
}

void fp_queue_free(struct fp_queue *q)
{
	for (size_t i = 0; i < q->n; i++)
		free(q->items[i].path);
	free(q->items);
	free(q->slots);
	memset(q, 0, sizeof *q);
}

void store_fp_put(struct store *s, const char *path, const struct file_id *id,
                  const struct digest *d)
{
	struct fp_queue *q = &s->fpq;
	struct fp_pending *p = queue_find(q, path);
	if (p) {
		p->id = *id;
		p->digest = *d;
		return;
	}
	ARRAY_RESERVE(q->items, q->alloc, q->n + 1, 64);
	q->items[q->n].path = xstrdup(path);
	q->items[q->n].id = *id;
	q->items[q->n].digest = *d;
	q->n++;
	/* Keep the table at most half full. */
	if (2 * q->n > q->nslots)
		queue_rehash(q, q->nslots ? 2 * q->nslots : 128);
	else
		q->slots[queue_slot(q, path)] = (uint32_t)q->n;
}

int store_fp_get(struct store *s, const char *path, const struct file_id *id, struct digest *out)
{
	struct fp_pending *p = queue_find(&s->fpq, path);
	if (p) {
		if (!file_id_equal(&p->id, id))
			return 0;
		*out = p->digest;
		return 1;
	}
	sqlite3_stmt *st = index_stmt(s, ST_FP_GET, NULL);
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	int found = 0;
	if (rc == SQLITE_ROW) {
		struct file_id row = {
		    .dev = (uint64_t)sqlite3_column_int64(st, 0),
		    .ino = (uint64_t)sqlite3_column_int64(st, 1),
		    .size = (uint64_t)sqlite3_column_int64(st, 2),
		    .mtime_ns = sqlite3_column_int64(st, 3),
		    .ctime_ns = sqlite3_column_int64(st, 4),
		    .mode = (uint32_t)sqlite3_column_int64(st, 5),
		};
		const void *d = sqlite3_column_blob(st, 6);
		if (d && sqlite3_column_bytes(st, 6) == DIGEST_LEN && file_id_equal(&row, id)) {
			memcpy(out->b, d, DIGEST_LEN);
			found = 1;
		}
		rc = SQLITE_DONE;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE) {
		index_error(s, rc, NULL, "reading the fingerprint cache");
		return -1;
	}
	return found;
}

int fp_queue_write(struct store *s)
{
	if (!s->fpq.n)
		return 0;
	sqlite3_stmt *st = index_stmt(s, ST_FP_PUT, NULL);
	if (!st)
		return -1;
	for (size_t i = 0; i < s->fpq.n; i++) {
		const struct fp_pending *p = &s->fpq.items[i];
		sqlite3_bind_text(st, 1, p->path, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (int64_t)p->id.dev);
		sqlite3_bind_int64(st, 3, (int64_t)p->id.ino);
		sqlite3_bind_int64(st, 4, (int64_t)p->id.size);
		sqlite3_bind_int64(st, 5, p->id.mtime_ns);
		sqlite3_bind_int64(st, 6, p->id.ctime_ns);
		sqlite3_bind_int64(st, 7, p->id.mode);
		sqlite3_bind_blob(st, 8, p->digest.b, DIGEST_LEN, SQLITE_STATIC);
		int rc = sqlite3_step(st);
		sqlite3_reset(st);
		if (rc != SQLITE_DONE) {
			sqlite3_clear_bindings(st);
			index_error(s, rc, NULL, "writing the fingerprint cache");
			return -1;
		}
	}
	sqlite3_clear_bindings(st);
	return 0;
}

void store_fp_flush(struct store *s)
{
	if (!s->fpq.n || s->readonly || !s->db)
		return;
	int begun = index_begin_nowait(s);
	if (begun <= 0) {
		/* Busy: keep the queue, a later flush may find the lock free. */
		store_count(s, "fingerprint_flushes_skipped", 1);
		return;
	}
	/* Written or not, the queue goes: a failure here is not transient. */
	index_end_nowait(s, fp_queue_write(s) == 0);
	fp_queue_free(&s->fpq);
}
