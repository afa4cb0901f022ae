/*
 * The entries that may serve duplicate steps (duplicate.h): by the key of a
 * step with its output words masked, the keys of the entry it made and the
 * words masked; per shape, the masks seen. The same rows by the key with
 * the define words removed too (preprocessed_duplicate.h). A row whose result was evicted
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
	return duplicate_row_put(s, d, 0, e);
}

/* Binds d to a statement whose parameters ?1..?12 are the columns of
 * duplicate_row_put's INSERT. */
static void bind_row(sqlite3_stmt *st, const struct store_duplicate *d)
{
	sqlite3_bind_blob(st, 1, d->dkey.b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, d->shape.b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)d->mask);
	sqlite3_bind_blob(st, 4, d->weak.b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(st, 5, d->pathset.b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(st, 6, d->strong.b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_blob64(st, 7, d->words ? d->words : "", d->words_len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, store_now_ns());
	if (d->has_pp) {
		sqlite3_bind_blob(st, 9, d->pkey.b, DIGEST_LEN, SQLITE_STATIC);
		sqlite3_bind_blob(st, 10, d->pshape.b, DIGEST_LEN, SQLITE_STATIC);
		sqlite3_bind_int64(st, 11, (int64_t)d->pmask);
		sqlite3_bind_blob64(st, 12, d->defines ? d->defines : "", d->defines_len,
		                    SQLITE_STATIC);
	}
}

/* Runs row statement id for d: 1 when it changed a row, 0 when not. */
static int run_row(struct store *s, enum stmt_id id, const struct store_duplicate *d,
                   struct error *e)
{
	sqlite3_stmt *st = index_stmt(s, id, e);
	if (!st)
		return -1;
	bind_row(st, d);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return index_error(s, rc, e, "recording a duplicate key");
	return sqlite3_changes(s->db) > 0;
}

int duplicate_row_put(struct store *s, const struct store_duplicate *d, int stored_again,
                      struct error *e)
{
	/* An entry stored again (--recache, a verification) has, as a rule,
	 * its row already naming its strong key: set again, the strong column
	 * would rewrite duplicates_by_strong too. */
	if (stored_again) {
		int updated = run_row(s, ST_DUP_UPDATE_KEEP_STRONG, d, e);
		if (updated != 0)
			return updated < 0 ? -1 : 0;
	}
	/* A step recorded again (a new entry under the same key, usually)
	 * changes the entry's columns only: updated in place, the row leaves
	 * the indexes of its shapes and keys as they were, and their pages out
	 * of the WAL. */
	int updated = run_row(s, ST_DUP_UPDATE, d, e);
	if (updated != 0)
		return updated < 0 ? -1 : 0;
	return run_row(s, ST_DUP_INSERT, d, e) < 0 ? -1 : 0;
}

/* The masks sql selects for a shape (?1), at most max (?2). */
static int masks_of_shape(struct store *s, const char *sql, const struct digest *shape,
                          uint64_t *masks, size_t max, size_t *n, struct error *e)
{
	*n = 0;
	sqlite3_stmt *st;
	if (store_index_open(s, e) < 0 || index_prepare(s, sql, &st, e) < 0)
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

int store_duplicate_masks(struct store *s, const struct digest *shape, uint64_t *masks, size_t max,
                          size_t *n, struct error *e)
{
	return masks_of_shape(s,
	                      "SELECT mask FROM duplicates WHERE shape = ?1 GROUP BY mask"
	                      " ORDER BY max(last_used) DESC LIMIT ?2",
	                      shape, masks, max, n, e);
}

int store_pp_duplicate_masks(struct store *s, const struct digest *pshape, uint64_t *masks,
                             size_t max, size_t *n, struct error *e)
{
	return masks_of_shape(s,
	                      "SELECT pmask FROM duplicates WHERE pshape = ?1 GROUP BY pmask"
	                      " ORDER BY max(last_used) DESC LIMIT ?2",
	                      pshape, masks, max, n, e);
}

/* The row st is on, from the columns of ROW_COLUMNS; 1 when it is whole. */
#define ROW_COLUMNS "dkey, shape, mask, weak, pathset, strong, words, pkey, pshape, pmask, defines"

static int read_row(sqlite3_stmt *st, struct store_duplicate *out)
{
	memset(out, 0, sizeof *out);
	out->mask = (uint64_t)sqlite3_column_int64(st, 2);
	int whole = index_column_digest(st, 0, &out->dkey) == 0 &&
	            index_column_digest(st, 1, &out->shape) == 0 &&
	            index_column_digest(st, 3, &out->weak) == 0 &&
	            index_column_digest(st, 4, &out->pathset) == 0 &&
	            index_column_digest(st, 5, &out->strong) == 0;
	if (!whole)
		return 0;
	out->words = index_column_copy(st, 6, &out->words_len);
	if (sqlite3_column_type(st, 7) != SQLITE_NULL) {
		out->has_pp = index_column_digest(st, 7, &out->pkey) == 0 &&
		              index_column_digest(st, 8, &out->pshape) == 0;
		out->pmask = (uint64_t)sqlite3_column_int64(st, 9);
		if (out->has_pp)
			out->defines = index_column_copy(st, 10, &out->defines_len);
	}
	return 1;
}

int store_duplicate_get(struct store *s, const struct digest *dkey, struct store_duplicate *out,
                        struct error *e)
{
	memset(out, 0, sizeof *out);
	sqlite3_stmt *st;
	if (store_index_open(s, e) < 0 ||
	    index_prepare(s, "SELECT " ROW_COLUMNS " FROM duplicates WHERE dkey = ?1", &st, e) < 0)
		return -1;
	sqlite3_bind_blob(st, 1, dkey->b, DIGEST_LEN, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	int found = rc == SQLITE_ROW && read_row(st, out);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return index_error(s, rc, e, "reading a duplicate key");
	return found;
}

int store_pp_duplicate_find(struct store *s, const struct digest *pkey, struct store_duplicate *out,
                            size_t max, size_t *n, struct error *e)
{
	*n = 0;
	sqlite3_stmt *st;
	if (store_index_open(s, e) < 0 ||
	    index_prepare(s,
	                  "SELECT " ROW_COLUMNS " FROM duplicates WHERE pkey = ?1"
	                  " ORDER BY last_used DESC LIMIT ?2",
	                  &st, e) < 0)
		return -1;
	sqlite3_bind_blob(st, 1, pkey->b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)max);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < max)
		if (read_row(st, &out[*n]))
			(*n)++;
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		for (size_t i = 0; i < *n; i++)
			store_duplicate_free(&out[i]);
		*n = 0;
		return index_error(s, rc, e, "reading duplicate keys");
	}
	return 0;
}

void store_duplicate_free(struct store_duplicate *d)
{
	free(d->words);
	free(d->defines);
	d->words = NULL;
	d->defines = NULL;
}
