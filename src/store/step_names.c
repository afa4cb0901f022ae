/*
 * Step identities (step_name.h) to the newest weak key recorded under each:
 * the step a new weak key is most likely a changed version of. Written with
 * a recorded miss's entry, in its transaction (store_entry.step_ident), or
 * alone without waiting for the index lock; a row whose weak key was
 * evicted since finds no step and is only a missed explanation.
 */
#include "store/store_internal.h"

int step_name_row_put(struct store *s, const struct digest *ident, const struct digest *weak,
                      struct error *e)
{
	sqlite3_stmt *st;
	/* A row as it was is not written again (its page stays out of the
	 * WAL): a step stored again, or one whose entries were evicted. */
	if (index_prepare(s,
	                  "INSERT INTO step_names(ident, weak) VALUES(?1, ?2) ON CONFLICT(ident)"
	                  " DO UPDATE SET weak = excluded.weak WHERE weak IS NOT excluded.weak",
	                  &st, e) < 0)
		return -1;
	sqlite3_bind_blob(st, 1, ident->b, DIGEST_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, weak->b, DIGEST_LEN, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : index_error(s, rc, e, "naming a step");
}

int store_step_name_put(struct store *s, const struct digest *ident, const struct digest *weak)
{
	struct error e = {0};
	if (s->readonly || store_index_open(s, &e) < 0)
		return 0;
	if (index_begin_nowait(s) != 1)
		return 0;
	int ok = step_name_row_put(s, ident, weak, &e) == 0;
	return index_end_nowait(s, ok) == 1;
}

int store_step_name_get(struct store *s, const struct digest *ident, struct digest *weak)
{
	struct error e = {0};
	if (store_index_open(s, &e) < 0)
		return 0;
	sqlite3_stmt *st;
	if (index_prepare_own(s, "SELECT weak FROM step_names WHERE ident = ?1", 0, &st) != 0)
		return 0;
	sqlite3_bind_blob(st, 1, ident->b, DIGEST_LEN, SQLITE_STATIC);
	int found = sqlite3_step(st) == SQLITE_ROW && index_column_digest(st, 0, weak) == 0;
	sqlite3_finalize(st);
	return found;
}
