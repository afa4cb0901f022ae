/*
 * Queries for cachet report: the largest results and the steps found
 * nondeterministic. Never on the hit path, so each prepares its statement
 * when called. The step description comes along by a LEFT JOIN: a result
 * whose step row is gone still counts, it is just shown without a command.
 */
#include <stdlib.h>
#include <string.h>

#include "cachet/array.h"
#include "cachet/buf.h"
#include "store/store_internal.h"

/* A malloc'd copy of a BLOB column, or NULL when the column is NULL. */
static void *blob_column(sqlite3_stmt *st, int col, size_t *len)
{
	*len = 0;
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return NULL;
	return index_column_copy(st, col, len);
}

int store_largest_results(struct store *s, size_t limit, struct store_sized_result **out, size_t *n,
                          struct error *e)
{
	sqlite3_stmt *st;
	*out = NULL;
	*n = 0;
	if (index_prepare(s,
	                  "SELECT r.strong, r.weak, r.size, r.hits, r.duration_ms, r.created,"
	                  " r.last_used, s.body FROM results r LEFT JOIN steps s ON s.weak = r.weak"
	                  " ORDER BY r.size DESC, r.last_used DESC LIMIT ?1",
	                  &st, e) < 0)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)limit);
	size_t alloc = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ARRAY_RESERVE(*out, alloc, *n + 1, 32);
		struct store_sized_result *row = &(*out)[(*n)++];
		index_column_digest_or_zero(st, 0, &row->strong);
		index_column_digest_or_zero(st, 1, &row->weak);
		sqlite3_int64 size = sqlite3_column_int64(st, 2);
		row->size = size > 0 ? (uint64_t)size : 0;
		row->hits = sqlite3_column_int64(st, 3);
		row->duration_ms = sqlite3_column_int64(st, 4);
		row->created_ns = sqlite3_column_int64(st, 5);
		row->last_used_ns = sqlite3_column_int64(st, 6);
		row->step_body = blob_column(st, 7, &row->step_len);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		store_sized_results_free(*out, *n);
		*out = NULL;
		*n = 0;
		return index_error(s, rc, e, "listing the largest results");
	}
	return 0;
}

void store_sized_results_free(struct store_sized_result *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(rows[i].step_body);
	free(rows);
}

int store_nondet_steps(struct store *s, size_t limit, struct store_nondet_step **out, size_t *n,
                       struct error *e)
{
	sqlite3_stmt *st;
	*out = NULL;
	*n = 0;
	if (index_prepare(s,
	                  "SELECT d.weak, d.summary, d.count, d.first_seen, d.last_seen, s.body"
	                  " FROM nondeterministic d LEFT JOIN steps s ON s.weak = d.weak"
	                  " ORDER BY d.last_seen DESC LIMIT ?1",
	                  &st, e) < 0)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)limit);
	size_t alloc = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ARRAY_RESERVE(*out, alloc, *n + 1, 16);
		struct store_nondet_step *row = &(*out)[(*n)++];
		index_column_digest_or_zero(st, 0, &row->weak);
		const char *summary = (const char *)sqlite3_column_text(st, 1);
		row->summary = xstrdup(summary ? summary : "");
		row->count = sqlite3_column_int64(st, 2);
		row->first_seen_ns = sqlite3_column_int64(st, 3);
		row->last_seen_ns = sqlite3_column_int64(st, 4);
		row->step_body = blob_column(st, 5, &row->step_len);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		store_nondet_steps_free(*out, *n);
		*out = NULL;
		*n = 0;
		return index_error(s, rc, e, "listing nondeterministic steps");
	}
	return 0;
}

void store_nondet_steps_free(struct store_nondet_step *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(rows[i].summary);
		free(rows[i].step_body);
	}
	free(rows);
}
