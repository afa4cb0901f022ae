/*
 * Queries for explain, show and log. They are not on the hit path, so each
 * prepares its statement when called instead of keeping it.
 */
#include <stdlib.h>
#include <string.h>

#include "cachet/array.h"
#include "cachet/buf.h"
#include "store/store_internal.h"

/* Runs a query expected to return at most one row with a body in column 0. */
static int get_one_body(struct store *s, const char *sql, const struct digest *k1,
                        const struct digest *k2, void **body, size_t *len, struct error *e)
{
	sqlite3_stmt *st;
	if (index_prepare(s, sql, &st, e) < 0)
		return -1;
	sqlite3_bind_blob(st, 1, k1->b, DIGEST_LEN, SQLITE_STATIC);
	if (k2)
		sqlite3_bind_blob(st, 2, k2->b, DIGEST_LEN, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	int found = 0;
	if (rc == SQLITE_ROW) {
		*body = index_column_copy(st, 0, len);
		found = 1;
	} else if (rc != SQLITE_DONE) {
		found = index_error(s, rc, e, "querying the cache index");
	}
	sqlite3_finalize(st);
	return found;
}

int store_get_step(struct store *s, const struct digest *weak, void **body, size_t *len,
                   struct error *e)
{
	return get_one_body(s, "SELECT body FROM steps WHERE weak = ?1", weak, NULL, body, len, e);
}

int store_get_pathset(struct store *s, const struct digest *weak, const struct digest *pathset,
                      void **body, size_t *len, struct error *e)
{
	return get_one_body(s, "SELECT body FROM pathsets WHERE weak = ?1 AND digest = ?2", weak,
	                    pathset, body, len, e);
}

int store_recent_steps(struct store *s, size_t limit, struct store_step **out, size_t *n,
                       struct error *e)
{
	sqlite3_stmt *st;
	*out = NULL;
	*n = 0;
	if (index_prepare(s, "SELECT weak, body, created FROM steps ORDER BY created DESC LIMIT ?1",
	                  &st, e) < 0)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)limit);
	size_t alloc = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ARRAY_RESERVE(*out, alloc, *n + 1, 64);
		struct store_step *row = &(*out)[(*n)++];
		index_column_digest_or_zero(st, 0, &row->weak);
		row->body = index_column_copy(st, 1, &row->len);
		row->created_ns = sqlite3_column_int64(st, 2);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		store_steps_free(*out, *n);
		*out = NULL;
		*n = 0;
		return index_error(s, rc, e, "listing recorded steps");
	}
	return 0;
}

void store_steps_free(struct store_step *steps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(steps[i].body);
	free(steps);
}

static int result_rows(struct store *s, sqlite3_stmt *st, struct store_result_row **out, size_t *n,
                       struct error *e)
{
	size_t alloc = 0;
	int rc;
	*out = NULL;
	*n = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ARRAY_RESERVE(*out, alloc, *n + 1, 16);
		struct store_result_row *row = &(*out)[(*n)++];
		index_column_digest_or_zero(st, 0, &row->strong);
		index_column_digest_or_zero(st, 1, &row->weak);
		index_column_digest_or_zero(st, 2, &row->pathset);
		row->body = index_column_copy(st, 3, &row->len);
		row->created_ns = sqlite3_column_int64(st, 4);
		row->last_used_ns = sqlite3_column_int64(st, 5);
		row->hits = sqlite3_column_int64(st, 6);
		row->duration_ms = sqlite3_column_int64(st, 7);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		store_result_rows_free(*out, *n);
		*out = NULL;
		*n = 0;
		return index_error(s, rc, e, "reading recorded results");
	}
	return 0;
}

#define RESULT_COLUMNS                                                                             \
	"r.strong, r.weak, r.pathset, r.body, r.created, r.last_used, r.hits, r.duration_ms"

int store_results_for_pathset(struct store *s, const struct digest *weak,
                              const struct digest *pathset, struct store_result_row **out,
                              size_t *n, struct error *e)
{
	sqlite3_stmt *st;
	if (index_prepare(s,
	                  "SELECT " RESULT_COLUMNS
	                  " FROM results r WHERE r.weak = ?1 AND r.pathset = ?2"
	                  " ORDER BY r.created DESC",
	                  &st, e) < 0)
		return -1;
	sqlite3_bind_blob(st, 1, weak->b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, pathset->b, DIGEST_LEN, SQLITE_STATIC);
	return result_rows(s, st, out, n, e);
}

int store_results_with_blob(struct store *s, const struct digest *blob,
                            struct store_result_row **out, size_t *n, struct error *e)
{
	sqlite3_stmt *st;
	if (index_prepare(s,
	                  "SELECT " RESULT_COLUMNS " FROM result_blobs b JOIN results r"
	                  " ON r.strong = b.strong WHERE b.digest = ?1 ORDER BY r.created DESC",
	                  &st, e) < 0)
		return -1;
	sqlite3_bind_blob(st, 1, blob->b, DIGEST_LEN, SQLITE_STATIC);
	return result_rows(s, st, out, n, e);
}

int store_results_naming(struct store *s, const void *needle, size_t len, size_t limit,
                         struct store_result_row **out, size_t *n, struct error *e)
{
	sqlite3_stmt *st;
	/* instr over a blob searches bytes: a path is stored as its plain text. */
	if (index_prepare(s,
	                  "SELECT " RESULT_COLUMNS " FROM results r WHERE instr(r.body, ?1) > 0"
	                  " ORDER BY r.created DESC LIMIT ?2",
	                  &st, e) < 0)
		return -1;
	sqlite3_bind_blob(st, 1, needle, (int)len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)limit);
	return result_rows(s, st, out, n, e);
}

int store_results_with_blob_naming(struct store *s, const struct digest *blob, const void *needle,
                                   size_t len, size_t limit, struct store_result_row **out,
                                   size_t *n, struct error *e)
{
	sqlite3_stmt *st;
	if (index_prepare(s,
	                  "SELECT " RESULT_COLUMNS " FROM result_blobs b JOIN results r"
	                  " ON r.strong = b.strong WHERE b.digest = ?1 AND instr(r.body, ?2) > 0"
	                  " ORDER BY r.created DESC LIMIT ?3",
	                  &st, e) < 0)
		return -1;
	sqlite3_bind_blob(st, 1, blob->b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, needle, (int)len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)limit);
	return result_rows(s, st, out, n, e);
}

void store_result_rows_free(struct store_result_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(rows[i].body);
	free(rows);
}

int store_mark_nondeterministic(struct store *s, const struct digest *weak, const char *summary,
                                struct error *e)
{
	if (s->readonly)
		return store_readonly_error(e);
	sqlite3_stmt *st;
	if (index_begin(s, e) < 0)
		return -1;
	if (index_prepare(
	        s,
	        "INSERT INTO nondeterministic(weak, count, first_seen, last_seen, summary)"
	        " VALUES(?1, 1, ?2, ?2, ?3) ON CONFLICT(weak) DO UPDATE SET"
	        " count = count + 1, last_seen = ?2, summary = ?3",
	        &st, e) < 0) {
		index_rollback(s);
		return -1;
	}
	sqlite3_bind_blob(st, 1, weak->b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, store_now_ns());
	sqlite3_bind_text(st, 3, summary, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		index_error(s, rc, e, "marking a step nondeterministic");
		index_rollback(s);
		return -1;
	}
	if (index_commit(s, e) < 0)
		return -1;
	/* A memo would serve the step's hits without the warning (or, with
	 * nondeterministic = rerun, at all). */
	store_memo_drop_all(s);
	return 0;
}

int store_nondeterministic(struct store *s, const struct digest *weak, char **summary_out,
                           int64_t *count_out, struct error *e)
{
	sqlite3_stmt *st;
	if (index_prepare(s, "SELECT summary, count FROM nondeterministic WHERE weak = ?1", &st,
	                  e) < 0)
		return -1;
	sqlite3_bind_blob(st, 1, weak->b, DIGEST_LEN, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	int found = 0;
	if (rc == SQLITE_ROW) {
		found = 1;
		if (summary_out) {
			const char *t = (const char *)sqlite3_column_text(st, 0);
			*summary_out = xstrdup(t ? t : "");
		}
		if (count_out)
			*count_out = sqlite3_column_int64(st, 1);
	} else if (rc != SQLITE_DONE) {
		found = index_error(s, rc, e, "reading nondeterministic steps");
	}
	sqlite3_finalize(st);
	return found;
}
