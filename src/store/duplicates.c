/*
 * The entries that may serve duplicate steps (duplicate.h): by the key of a
 * step with its output words masked, the keys of the entry it made and the
 * words masked; per shape, the masks seen. A row whose result was evicted
 * goes with it (evict.c); one found without its result is a miss.
 */
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"

int store_duplicate_put(struct store *s, const struct store_duplicate *d, struct error *e)
{
	if (s->readonly)
		return 0;
	if (store_index_open(s, e) < 0)
		return -1;
	return duplicate_row_put(s, d, e);
}

int duplicate_row_put(struct store *s, const struct store_duplicate *d, struct error *e)
{
	sqlite3_stmt *st;
	if (index_prepare(s,
	                  "INSERT OR REPLACE INTO duplicates(dkey, shape, mask, weak, pathset,"
	                  " strong, words, last_used) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	                  &st, e) < 0)
		return -1;
	sqlite3_bind_blob(st, 1, d->dkey.b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, d->shape.b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)d->mask);
	sqlite3_bind_blob(st, 4, d->weak.b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(st, 5, d->pathset.b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(st, 6, d->strong.b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_blob64(st, 7, d->words ? d->words : "", d->words_len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, store_now_ns());
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return index_error(s, rc, e, "recording a duplicate key");
	return 0;
}

int store_duplicate_masks(struct store *s, const struct digest *shape, uint64_t *masks, size_t max,
                          size_t *n, struct error *e)
{
	*n = 0;
	sqlite3_stmt *st;
	if (store_index_open(s, e) < 0 ||
	    index_prepare(s,
	                  "SELECT mask FROM duplicates WHERE shape = ?1 GROUP BY mask"
	                  " ORDER BY max(last_used) DESC LIMIT ?2",
	                  &st, e) < 0)
		return -1;
	sqlite3_bind_blob(st, 1, shape->b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)max);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < max)
		masks[(*n)++] = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return index_error(s, rc, e, "reading duplicate keys");
	return 0;
}

int store_duplicate_get(struct store *s, const struct digest *dkey, struct store_duplicate *out,
                        struct error *e)
{
	memset(out, 0, sizeof *out);
	sqlite3_stmt *st;
	if (store_index_open(s, e) < 0 ||
	    index_prepare(s,
	                  "SELECT shape, mask, weak, pathset, strong, words FROM duplicates"
	                  " WHERE dkey = ?1",
	                  &st, e) < 0)
		return -1;
	sqlite3_bind_blob(st, 1, dkey->b, DIGEST_LEN, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	int found = 0;
	if (rc == SQLITE_ROW) {
		out->dkey = *dkey;
		out->mask = (uint64_t)sqlite3_column_int64(st, 1);
		found = index_column_digest(st, 0, &out->shape) == 0 &&
		        index_column_digest(st, 2, &out->weak) == 0 &&
		        index_column_digest(st, 3, &out->pathset) == 0 &&
		        index_column_digest(st, 4, &out->strong) == 0;
		if (found)
			out->words = index_column_copy(st, 5, &out->words_len);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return index_error(s, rc, e, "reading a duplicate key");
	return found;
}

void store_duplicate_free(struct store_duplicate *d)
{
	free(d->words);
	d->words = NULL;
}
