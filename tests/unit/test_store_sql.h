/*
 * Looking into the index from a store test: one integer a query selects.
 * Included (not linked) by tests/unit/test_store_*.c after
 * test_store_fixture.h.
 */
#ifndef CACHET_TEST_STORE_SQL_H
#define CACHET_TEST_STORE_SQL_H

#include <sqlite3.h>

#include "store/store_internal.h"

/* The integer in the first column of the one row sql selects. */
static int64_t count_rows(struct store *s, const char *sql)
{
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(s->db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

#endif
