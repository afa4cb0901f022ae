/*
 * The SQLite index: schema and migrations, lazily prepared statements,
 * transactions, and the path-set and result tables.
 *
 * Tables whose rows hold bodies of unbounded size (steps, pathsets, results)
 * are rowid tables: SQLite advises against WITHOUT ROWID when rows exceed
 * about a twentieth of a page. The small, key-shaped ones (blobs,
 * result_blobs, fingerprints) are WITHOUT ROWID. Times are nanoseconds since
 * the epoch (CLOCK_REALTIME), fine enough that the LRU order of entries made
 * in one burst is still their order of use.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cachet/array.h"
#include "cachet/buf.h"
#include "store/store_internal.h"

static const char *const stmt_sql[ST_COUNT] = {
    [ST_GET_PATHSETS] = "SELECT digest, body, last_used FROM pathsets WHERE weak = ?1"
                        " ORDER BY last_used DESC, rowid DESC",
    [ST_GET_RESULT] = "SELECT body FROM results WHERE strong = ?1",
    /* A row written again as it was still costs its pages in the WAL (the
     * table's and its index's): the step of a miss is usually known. */
    [ST_PUT_STEP] = "INSERT INTO steps(weak, body, created) VALUES(?1, ?2, ?3)"
                    " ON CONFLICT(weak) DO UPDATE SET body = excluded.body"
                    " WHERE body IS NOT excluded.body",
    /* The new path set is the most recent of its weak key even if the clock
     * went back: the bound below must never drop the one just stored. */
    [ST_PUT_PATHSET] = "INSERT INTO pathsets(weak, digest, body, last_used)"
                       " VALUES(?1, ?2, ?3, max(?4, coalesce((SELECT max(last_used) + 1"
                       " FROM pathsets WHERE weak = ?1), 0)))"
                       /* The body too: a damaged one (its digest still names the
                        * right content) is repaired by the next store. */
                       " ON CONFLICT(weak, digest) DO UPDATE SET body = excluded.body,"
                       " last_used = excluded.last_used",
    [ST_OLD_PATHSETS] = "SELECT digest FROM pathsets WHERE weak = ?1"
                        " ORDER BY last_used DESC, rowid DESC LIMIT -1 OFFSET ?2",
    [ST_DEL_PATHSET_RESULT_BLOBS] =
        "DELETE FROM result_blobs WHERE strong IN"
        " (SELECT strong FROM results WHERE weak = ?1 AND pathset = ?2)",
    [ST_DEL_PATHSET_RESULTS] = "DELETE FROM results WHERE weak = ?1 AND pathset = ?2",
    [ST_DEL_PATHSET] = "DELETE FROM pathsets WHERE weak = ?1 AND digest = ?2",
    [ST_RESULT_BLOBS] = "SELECT digest FROM result_blobs WHERE strong = ?1",
    [ST_DEL_RESULT_BLOB] = "DELETE FROM result_blobs WHERE strong = ?1 AND digest = ?2",
    /* Replacing in place, not REPLACE's delete and insert (a new rowid, a
     * new place in the table and in both its indexes): the pages a result
     * stored again (--recache, a verification) leaves alone stay out of the
     * WAL. */
    [ST_PUT_RESULT] = "INSERT INTO results(strong, weak, pathset, body, size, created,"
                      " last_used, hits, duration_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?6, 0, ?7)"
                      /* weak and pathset are the strong key's own: set
                       * again, they would rewrite results_by_pathset. */
                      " ON CONFLICT(strong) DO UPDATE SET body = excluded.body,"
                      " size = excluded.size, created = excluded.created,"
                      " last_used = excluded.last_used, hits = 0,"
                      " duration_ms = excluded.duration_ms",
    [ST_PUT_RESULT_BLOB] = "INSERT OR IGNORE INTO result_blobs(strong, digest) VALUES(?1, ?2)",
    [ST_PUT_BLOB] = "INSERT INTO blobs(digest, size, stored_size, form) VALUES(?1, ?2, ?3, ?4)"
                    " ON CONFLICT(digest) DO UPDATE SET size = excluded.size,"
                    " stored_size = excluded.stored_size, form = excluded.form"
                    " WHERE (size, stored_size, form)"
                    " IS NOT (excluded.size, excluded.stored_size, excluded.form)",
    [ST_TOUCH_PATHSET] = "UPDATE pathsets SET last_used = ?3 WHERE weak = ?1 AND digest = ?2",
    [ST_TOUCH_RESULT] = "UPDATE results SET last_used = ?2, hits = hits + 1 WHERE strong = ?1",
    [ST_FP_GET] = "SELECT dev, ino, size, mtime_ns, ctime_ns, mode, digest"
                  " FROM fingerprints WHERE path = ?1",
    [ST_FP_PUT] = "INSERT OR REPLACE INTO fingerprints(path, dev, ino, size, mtime_ns, ctime_ns,"
                  " mode, digest) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [ST_USAGE_RESULTS] = "SELECT count(*) FROM results",
    [ST_USAGE_PATHSETS] = "SELECT count(*) FROM pathsets",
    [ST_USAGE_BLOBS] = "SELECT count(*), coalesce(sum(stored_size), 0) FROM blobs",
    [ST_ARGV_SHAPES] = "SELECT DISTINCT words FROM pathset_argv WHERE weak = ?1",
    [ST_GET_ARGV_PATHSETS] = "SELECT p.digest, p.body, p.last_used FROM pathset_argv a"
                             " JOIN pathsets p ON p.weak = a.weak AND p.digest = a.pathset"
                             " WHERE a.weak = ?1 AND a.words = ?2 AND a.key = ?3",
    [ST_PUT_ARGV] = "INSERT INTO pathset_argv(weak, words, key, pathset, last_used)"
                    " VALUES(?1, ?2, ?3, ?4, ?5)"
                    " ON CONFLICT DO UPDATE SET last_used = excluded.last_used",
    /* A grouping was used last when it was recorded or its path set hit
     * (for whichever group: the touch log marks path sets). */
    [ST_OLD_ARGV_IN_GROUP] = "SELECT a.words, a.key, a.pathset FROM pathset_argv a"
                             " LEFT JOIN pathsets p ON p.weak = a.weak AND p.digest = a.pathset"
                             " WHERE a.weak = ?1 AND a.words = ?2 AND a.key = ?3"
                             " ORDER BY max(a.last_used, coalesce(p.last_used, 0)) DESC"
                             " LIMIT -1 OFFSET ?4",
    [ST_OLD_ARGV_OF_WEAK] = "SELECT a.words, a.key, a.pathset FROM pathset_argv a"
                            " LEFT JOIN pathsets p ON p.weak = a.weak AND p.digest = a.pathset"
                            " WHERE a.weak = ?1"
                            " ORDER BY max(a.last_used, coalesce(p.last_used, 0)) DESC"
                            " LIMIT -1 OFFSET ?2",
    [ST_DEL_ARGV] = "DELETE FROM pathset_argv"
                    " WHERE weak = ?1 AND words = ?2 AND key = ?3 AND pathset = ?4",
    [ST_PATHSET_GROUPED] = "SELECT 1 FROM pathset_argv WHERE weak = ?1 AND pathset = ?2 LIMIT 1",
    [ST_DEL_PATHSET_ARGV] = "DELETE FROM pathset_argv WHERE weak = ?1 AND pathset = ?2",
    /* How many groupings and path sets weak has, each counted up to a
     * bound (?2, ?3): two short scans of the primary keys. */
    [ST_WEAK_SIZE] = "SELECT (SELECT count(*) FROM (SELECT 1 FROM pathset_argv WHERE weak = ?1"
                     " LIMIT ?2)), (SELECT count(*) FROM (SELECT 1 FROM pathsets WHERE weak = ?1"
                     " LIMIT ?3))",
    /* The row statements of duplicates.c, their parameters ?1..?12 the
     * columns of ST_DUP_INSERT. */
    [ST_DUP_UPDATE] = "UPDATE duplicates SET weak = ?4, pathset = ?5, strong = ?6, words = ?7,"
                      " last_used = ?8 WHERE dkey = ?1 AND shape = ?2 AND mask = ?3"
                      " AND pkey IS ?9 AND pshape IS ?10 AND pmask IS ?11 AND defines IS ?12",
    [ST_DUP_UPDATE_KEEP_STRONG] =
        "UPDATE duplicates SET weak = ?4, pathset = ?5, words = ?7, last_used = ?8"
        " WHERE dkey = ?1 AND shape = ?2 AND mask = ?3 AND strong = ?6 AND pkey IS ?9"
        " AND pshape IS ?10 AND pmask IS ?11 AND defines IS ?12",
    [ST_DUP_INSERT] = "INSERT OR REPLACE INTO duplicates(dkey, shape, mask, weak, pathset,"
                      " strong, words, last_used, pkey, pshape, pmask, defines)"
                      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
};

/* migrations[v] takes schema version v to v + 1. */
static const char *const migrations[STORE_SCHEMA_VERSION] = {
    "CREATE TABLE steps("
    "  weak BLOB PRIMARY KEY NOT NULL,"
    "  body BLOB NOT NULL,"
    "  created INTEGER NOT NULL);"
    "CREATE TABLE pathsets("
    "  weak BLOB NOT NULL,"
    "  digest BLOB NOT NULL,"
    "  body BLOB NOT NULL,"
    "  last_used INTEGER NOT NULL,"
    "  PRIMARY KEY(weak, digest));"
    "CREATE TABLE results("
    "  strong BLOB PRIMARY KEY NOT NULL,"
    "  weak BLOB NOT NULL,"
    "  pathset BLOB NOT NULL,"
    "  body BLOB NOT NULL,"
    "  size INTEGER NOT NULL," /* uncompressed bytes of the blobs it references */
    "  created INTEGER NOT NULL,"
    "  last_used INTEGER NOT NULL,"
    "  hits INTEGER NOT NULL DEFAULT 0,"
    "  duration_ms INTEGER NOT NULL);"
    "CREATE INDEX results_by_pathset ON results(weak, pathset);"
    "CREATE TABLE blobs("
    "  digest BLOB PRIMARY KEY NOT NULL,"
    "  size INTEGER NOT NULL,"
    "  stored_size INTEGER NOT NULL,"
    "  form INTEGER NOT NULL) WITHOUT ROWID;"
    /* The reference set of blobs: eviction (issue 8) deletes a blob file
     * only when no row here names it. */
    "CREATE TABLE result_blobs("
    "  strong BLOB NOT NULL,"
    "  digest BLOB NOT NULL,"
    "  PRIMARY KEY(strong, digest)) WITHOUT ROWID;"
    "CREATE INDEX result_blobs_by_digest ON result_blobs(digest);"
    "CREATE TABLE fingerprints("
    "  path TEXT PRIMARY KEY NOT NULL,"
    "  dev INTEGER NOT NULL,"
    "  ino INTEGER NOT NULL,"
    "  size INTEGER NOT NULL,"
    "  mtime_ns INTEGER NOT NULL,"
    "  ctime_ns INTEGER NOT NULL,"
    "  mode INTEGER NOT NULL,"
    "  digest BLOB NOT NULL) WITHOUT ROWID;",
    /* 2: steps found to give different outputs on identical runs. */
    "CREATE TABLE nondeterministic("
    "  weak BLOB PRIMARY KEY NOT NULL,"
    "  count INTEGER NOT NULL,"
    "  first_seen INTEGER NOT NULL,"
    "  last_seen INTEGER NOT NULL,"
    "  summary TEXT NOT NULL) WITHOUT ROWID;",
    /* 3: the newest weak key of each step identity (step_names.c), so
     * that a new step's miss can say what changed. */
    "CREATE TABLE step_names("
    "  ident BLOB PRIMARY KEY NOT NULL,"
    "  weak BLOB NOT NULL) WITHOUT ROWID;",
    /* 4: the path sets of a weak key grouped by the contents of the files
     * its argv names and reads (argv_inputs.h); words 0 with an empty key
     * is the group of steps that name none. */
    "CREATE TABLE pathset_argv("
    "  weak BLOB NOT NULL,"
    "  words INTEGER NOT NULL,"
    "  key BLOB NOT NULL,"
    "  pathset BLOB NOT NULL,"
    "  last_used INTEGER NOT NULL,"
    "  PRIMARY KEY(weak, words, key, pathset)) WITHOUT ROWID;"
    "INSERT INTO pathset_argv SELECT weak, 0, x'', digest, last_used FROM pathsets;",
    /* 5: the entries of steps that may serve duplicates (duplicate.h), by
     * their key with the output words masked; per shape, the masks seen. */
    "CREATE TABLE duplicates("
    "  dkey BLOB PRIMARY KEY NOT NULL,"
    "  shape BLOB NOT NULL,"
    "  mask INTEGER NOT NULL,"
    "  weak BLOB NOT NULL,"
    "  pathset BLOB NOT NULL,"
    "  strong BLOB NOT NULL,"
    "  words BLOB NOT NULL,"
    "  last_used INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE INDEX duplicates_by_shape ON duplicates(shape, mask);"
    "CREATE INDEX duplicates_by_strong ON duplicates(strong);",
    /* 6: the same entries by their key with the define words removed too
     * (preprocessed_duplicate.h), the masks seen per shape of that argv,
     * and the define words removed. NULL for a step not eligible. */
    "ALTER TABLE duplicates ADD COLUMN pkey BLOB;"
    "ALTER TABLE duplicates ADD COLUMN pshape BLOB;"
    "ALTER TABLE duplicates ADD COLUMN pmask INTEGER;"
    "ALTER TABLE duplicates ADD COLUMN defines BLOB;"
    "CREATE INDEX duplicates_by_pkey ON duplicates(pkey);"
    "CREATE INDEX duplicates_by_pshape ON duplicates(pshape, pmask);",
};

int64_t store_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A corrupt index found by a query: leave a marker so that the next
 * store_open runs quick_check and recreates the index if needed, instead of
 * every later run failing on the same page. */
static void mark_for_check(struct store *s)
{
	if (s->readonly)
		return;
	char *marker = xasprintf("%s.check", s->index_path);
	int fd = store_create_mode(s, store_openat(s, marker, O_WRONLY | O_CREAT, s->file_mode));
	if (fd >= 0)
		close(fd);
	free(marker);
}

int index_error(struct store *s, int rc, struct error *e, const char *what)
{
	const char *detail = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
	int code;
	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		store_count(s, "index_busy", 1);
		error_set(e, "%s: cache index %s is busy: %s", what, s->index_path, detail);
		code = EBUSY;
		break;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		store_count(s, "index_corrupt", 1);
		mark_for_check(s);
		error_set(e,
		          "%s: cache index %s is corrupt (%s); it is checked and recreated when "
		          "the cache is next opened",
		          what, s->index_path, detail);
		code = EBADMSG;
		break;
	case SQLITE_FULL:
		error_set(e, "%s: cache index %s: %s", what, s->index_path, detail);
		code = ENOSPC;
		break;
	case SQLITE_READONLY:
		error_set(e, "%s: cache index %s is read-only: %s", what, s->index_path, detail);
		code = EROFS;
		break;
	default:
		error_set(e, "%s: cache index %s: %s", what, s->index_path, detail);
		code = EIO;
		break;
	}
	if (e)
		e->code = code;
	return -1;
}

sqlite3_stmt *index_stmt(struct store *s, enum stmt_id id, struct error *e)
{
	if (s->stmts[id])
		return s->stmts[id];
	/* Opened with STORE_DEFER_INDEX and not yet needed until now. */
	if (store_index_open(s, e) < 0)
		return NULL;
	int rc = index_prepare_own(s, stmt_sql[id], SQLITE_PREPARE_PERSISTENT, &s->stmts[id]);
	if (rc != SQLITE_OK) {
		s->stmts[id] = NULL;
		index_error(s, rc, e, "preparing a statement");
		return NULL;
	}
	return s->stmts[id];
}

void store_prepare_entry_statements(struct store *s, unsigned what)
{
	/* What every entry runs, in the order it runs them. */
	static const enum stmt_id ids[] = {
	    ST_PUT_STEP,   ST_PUT_PATHSET, ST_PUT_ARGV,        ST_RESULT_BLOBS,
	    ST_PUT_RESULT, ST_PUT_BLOB,    ST_PUT_RESULT_BLOB, ST_WEAK_SIZE,
	};
	if (s->readonly || !s->db)
		return;
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
		if (!index_stmt(s, ids[i], NULL))
			return;
	if (!(what & STORE_ENTRY_DUPLICATE))
		return;
	/* duplicate_row_put's: a strong key stored again finds its row with
	 * the first; a step recorded again (its key the same with the output
	 * words masked) with the second; a new step, as a rule, inserts. */
	if (what & STORE_ENTRY_AGAIN) {
		index_stmt(s, ST_DUP_UPDATE_KEEP_STRONG, NULL);
		return;
	}
	if (index_stmt(s, ST_DUP_UPDATE, NULL) && (what & STORE_ENTRY_NEW_STEP))
		index_stmt(s, ST_DUP_INSERT, NULL);
}

void index_finalize_all(struct store *s)
{
	for (int i = 0; i < ST_COUNT; i++) {
		sqlite3_finalize(s->stmts[i]);
		s->stmts[i] = NULL;
	}
}

int index_exec(struct store *s, const char *sql, struct error *e)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return index_error(s, rc, e, sql);
	return 0;
}

int index_begin(struct store *s, struct error *e)
{
	store_snapshot_end(s);
	if (index_exec(s, "BEGIN IMMEDIATE", e) < 0)
		return -1;
	touches_fold(s);
	return 0;
}

int index_commit(struct store *s, struct error *e)
{
	int rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		index_error(s, rc, e, "committing to the cache index");
		index_rollback(s);
		return -1;
	}
	index_wal_restart(s);
	return 0;
}

void index_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

int index_begin_nowait(struct store *s)
{
	store_snapshot_end(s);
	sqlite3_busy_timeout(s->db, 0);
	int rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc == SQLITE_OK) {
		touches_fold(s);
		return 1;
	}
	sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
	return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED ? 0 : -1;
}

int index_end_nowait(struct store *s, int commit)
{
	int committed = commit && sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
	if (!committed)
		index_rollback(s);
	else
		index_wal_restart(s);
	sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
	return committed;
}

static int read_user_version(struct store *s, int *version, struct error *e);

void index_wal_restart(struct store *s)
{
	if (!s->wal_restart_due || !sqlite3_get_autocommit(s->db))
		return;
	s->wal_restart_due = 0;
	/* The write that restarts the WAL is the header's user_version, set to
	 * what it is: read in the same transaction, so that a newer cachet's
	 * migration committed meanwhile is never undone. */
	sqlite3_busy_timeout(s->db, 0);
	if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK) {
		int version;
		int ok = read_user_version(s, &version, NULL) == SQLITE_OK;
		if (ok) {
			char sql[64];
			snprintf(sql, sizeof sql, "PRAGMA user_version = %d", version);
			ok = sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK &&
			     sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
		}
		if (!ok)
			index_rollback(s);
	}
	sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
}

int store_snapshot_begin(struct store *s)
{
	if (s->in_snapshot || !sqlite3_get_autocommit(s->db))
		return 0;
	if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	s->in_snapshot = 1;
	return 0;
}

void store_snapshot_end(struct store *s)
{
	if (!s->in_snapshot)
		return;
	s->in_snapshot = 0;
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
}

/* Runs a statement that returns no rows and resets it. */
static int step_done(struct store *s, sqlite3_stmt *st, struct error *e, const char *what)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return index_error(s, rc, e, what);
	return 0;
}

static int bind_digest(sqlite3_stmt *st, int col, const struct digest *d)
{
	return sqlite3_bind_blob(st, col, d->b, DIGEST_LEN, SQLITE_STATIC);
}

/* sqlite3_bind_blob with a NULL pointer binds NULL, which NOT NULL rejects. */
static int bind_body(sqlite3_stmt *st, int col, const void *data, size_t len)
{
	static const char empty[1];
	return sqlite3_bind_blob64(st, col, data ? data : empty, len, SQLITE_STATIC);
}

int index_column_digest(sqlite3_stmt *st, int col, struct digest *out)
{
	const void *p = sqlite3_column_blob(st, col);
	if (!p || sqlite3_column_bytes(st, col) != DIGEST_LEN)
		return -1;
	memcpy(out->b, p, DIGEST_LEN);
	return 0;
}

int index_prepare_own(struct store *s, const char *sql, unsigned flags, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v3(s->db, sql, -1, flags, st, NULL);
	/* The statements are this version's own, for this version's schema:
	 * one that does not compile ("no such column") is a damaged schema,
	 * and is checked as corruption is. */
	return (rc & 0xff) == SQLITE_ERROR ? SQLITE_CORRUPT : rc;
}

int index_prepare(struct store *s, const char *sql, sqlite3_stmt **st, struct error *e)
{
	int rc = index_prepare_own(s, sql, 0, st);
	if (rc != SQLITE_OK)
		return index_error(s, rc, e, "querying the cache index");
	return 0;
}

void index_column_digest_or_zero(sqlite3_stmt *st, int col, struct digest *out)
{
	if (index_column_digest(st, col, out) < 0)
		memset(out->b, 0, DIGEST_LEN);
}

void *index_column_copy(sqlite3_stmt *st, int col, size_t *len)
{
	const void *p = sqlite3_column_blob(st, col);
	size_t n = (size_t)sqlite3_column_bytes(st, col);
	void *out = xmalloc(n + 1);
	if (n)
		memcpy(out, p, n);
	((char *)out)[n] = '\0';
	*len = n;
	return out;
}

/* ---- schema ---- */

static int read_user_version(struct store *s, int *version, struct error *e)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL);
	if (rc != SQLITE_OK) {
		index_error(s, rc, e, "reading the index schema version");
		return rc;
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*version = sqlite3_column_int(st, 0);
		rc = SQLITE_OK;
	} else {
		index_error(s, rc, e, "reading the index schema version");
		/* No row is a failure whatever step said: the caller must not
		 * read *version. */
		if (rc == SQLITE_OK)
			rc = SQLITE_ERROR;
	}
	sqlite3_finalize(st);
	return rc;
}

/* Runs a journal_mode pragma; out gets the mode in force afterwards. */
static int journal_mode(struct store *s, const char *sql, char *out, size_t cap)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			const char *m = (const char *)sqlite3_column_text(st, 0);
			snprintf(out, cap, "%s", m ? m : "");
			rc = SQLITE_OK;
		}
	}
	sqlite3_finalize(st);
	return rc;
}

/* WAL lets readers run beside a writer; it needs shared memory that network
 * file systems do not provide, where the rollback journal is used instead. */
static int set_journal_mode(struct store *s, struct error *e)
{
	const char *want = s->network_fs ? "delete" : "wal";
	const char *sql = s->network_fs ? "PRAGMA journal_mode=DELETE" : "PRAGMA journal_mode=WAL";
	char mode[32];
	int rc = journal_mode(s, "PRAGMA journal_mode", mode, sizeof mode);
	if (rc == SQLITE_OK && strcmp(mode, want) == 0)
		return SQLITE_OK;
	/* Changing the mode needs the database to itself for a moment; processes
	 * opening a fresh cache together can get SQLITE_BUSY here, so retry for
	 * up to the busy timeout. */
	for (int waited_ms = 0;; waited_ms += 10) {
		rc = journal_mode(s, sql, mode, sizeof mode);
		if ((rc & 0xff) != SQLITE_BUSY || waited_ms >= STORE_BUSY_TIMEOUT_MS)
			break;
		struct timespec ts = {0, 10 * 1000000};
		nanosleep(&ts, NULL);
	}
	if (rc != SQLITE_OK)
		index_error(s, rc, e, "setting the index journal mode");
	/* If another process keeps the other mode in force, the index still
	 * works; the mode is only a matter of speed. */
	return rc;
}

static int migrate(struct store *s, struct error *e)
{
	int rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		index_error(s, rc, e, "creating the index schema");
		return rc;
	}
	/* Another process may have migrated while this one waited. */
	int version = 0;
	rc = read_user_version(s, &version, e);
	for (; rc == SQLITE_OK && version < STORE_SCHEMA_VERSION; version++) {
		rc = sqlite3_exec(s->db, migrations[version], NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			index_error(s, rc, e, "creating the index schema");
	}
	if (rc == SQLITE_OK) {
		char sql[64];
		snprintf(sql, sizeof sql, "PRAGMA user_version = %d", version);
		rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			index_error(s, rc, e, "creating the index schema");
	}
	if (rc != SQLITE_OK)
		index_rollback(s);
	return rc;
}

/* The schema's rows of db, in a fixed order, into out. */
static int schema_text(sqlite3 *db, struct buf *out)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db,
	                            "SELECT type, name, tbl_name, sql FROM sqlite_master"
	                            " WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
	                            -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		for (int c = 0; c < 4; c++) {
			const unsigned char *t = sqlite3_column_text(st, c);
			buf_put_str(out, t ? (const char *)t : "");
		}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int index_schema_check(struct store *s)
{
	sqlite3 *fresh;
	int rc = sqlite3_open_v2(":memory:", &fresh, SQLITE_OPEN_READWRITE, NULL);
	struct buf want, have;
	buf_init(&want);
	buf_init(&have);
	for (int v = 0; rc == SQLITE_OK && v < STORE_SCHEMA_VERSION; v++)
		rc = sqlite3_exec(fresh, migrations[v], NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = schema_text(fresh, &want);
	sqlite3_close(fresh);
	if (rc == SQLITE_OK)
		rc = schema_text(s->db, &have);
	if (rc == SQLITE_OK && (want.len != have.len || memcmp(want.data, have.data, want.len)))
		rc = SQLITE_CORRUPT;
	buf_free(&want);
	buf_free(&have);
	return rc;
}

int index_setup(struct store *s, struct error *e)
{
	int version = 0;
	/* The first statement reads the file: a file that is not a database
	 * fails here with SQLITE_NOTADB. */
	int rc = read_user_version(s, &version, e);
	if (rc != SQLITE_OK)
		return rc;
	if (version > STORE_SCHEMA_VERSION) {
		error_set(e,
		          "cache index %s has schema version %d; this cachet knows up to %d "
		          "(written by a newer cachet?)",
		          s->index_path, version, STORE_SCHEMA_VERSION);
		return SQLITE_ERROR;
	}
	if (s->readonly) {
		if (version < STORE_SCHEMA_VERSION) {
			error_set(e, "cache index %s is read-only and %s", s->index_path,
			          version == 0 ? "empty"
			                       : "needs an upgrade this cachet cannot write");
			return SQLITE_READONLY;
		}
		return SQLITE_OK;
	}
	/* Commits in WAL mode with synchronous=NORMAL do not fsync: a power cut
	 * can lose the last transactions but never corrupts the index. The
	 * rollback journal needs FULL for the same guarantee. */
	rc = sqlite3_exec(s->db,
	                  s->network_fs ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL",
	                  NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(s->db, "PRAGMA journal_size_limit=8388608", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		index_error(s, rc, e, "configuring the index");
		return rc;
	}
	rc = set_journal_mode(s, e);
	if (rc != SQLITE_OK)
		return rc;
	if (version < STORE_SCHEMA_VERSION)
		rc = migrate(s, e);
	return rc;
}

int index_clear_rows(struct store *s, struct error *e)
{
	return index_exec(s,
	                  "DELETE FROM result_blobs; DELETE FROM results; DELETE FROM pathsets;"
	                  " DELETE FROM steps; DELETE FROM blobs; DELETE FROM fingerprints;"
	                  " DELETE FROM nondeterministic; DELETE FROM step_names;"
	                  " DELETE FROM pathset_argv; DELETE FROM duplicates;",
	                  e);
}

/* ---- path sets and results ---- */

/* Hits not yet folded into the index are in the touch log: a stable sort
 * by the newer of the two times keeps SQL's order among equals. */
static void order_by_recent_use(struct store *s, const struct digest *weak,
                                struct store_pathset *ps, int64_t *last, size_t n)
{
	struct digest *d = xmalloc(n * sizeof *d);
	for (size_t i = 0; i < n; i++)
		d[i] = ps[i].digest;
	touches_merge(s, weak, d, last, n);
	free(d);
	for (size_t i = 1; i < n; i++) {
		struct store_pathset p = ps[i];
		int64_t t = last[i];
		size_t j = i;
		for (; j > 0 && last[j - 1] < t; j--) {
			ps[j] = ps[j - 1];
			last[j] = last[j - 1];
		}
		ps[j] = p;
		last[j] = t;
	}
}

int store_get_pathsets(struct store *s, const struct digest *weak, struct store_pathset **out,
                       size_t *n, struct error *e)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *st = index_stmt(s, ST_GET_PATHSETS, e);
	if (!st)
		return -1;
	bind_digest(st, 1, weak);
	struct store_pathset *ps = NULL;
	int64_t *last = NULL;
	size_t count = 0, alloc = 0, alloc_last = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ARRAY_RESERVE(ps, alloc, count + 1, 4);
		ARRAY_RESERVE(last, alloc_last, count + 1, 4);
		if (index_column_digest(st, 0, &ps[count].digest) < 0)
			continue; /* a malformed row is no path set */
		ps[count].body = index_column_copy(st, 1, &ps[count].len);
		last[count] = sqlite3_column_int64(st, 2);
		count++;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE) {
		free(last);
		store_pathsets_free(ps, count);
		return index_error(s, rc, e, "reading path sets");
	}
	if (count > 1)
		order_by_recent_use(s, weak, ps, last, count);
	free(last);
	*out = ps;
	*n = count;
	return 0;
}

/* The path sets of weak in group (words, key) appended to *ps, less those
 * already there (one path set may be in several groups). */
static int append_group(struct store *s, const struct digest *weak, uint64_t words,
                        const struct digest *key, struct store_pathset **ps, int64_t **last,
                        size_t *count, size_t *alloc, struct error *e)
{
	sqlite3_stmt *st = index_stmt(s, ST_GET_ARGV_PATHSETS, e);
	if (!st)
		return -1;
	bind_digest(st, 1, weak);
	sqlite3_bind_int64(st, 2, (int64_t)words);
	if (key)
		bind_digest(st, 3, key);
	else
		sqlite3_bind_zeroblob(st, 3, 0);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (*count == *alloc) {
			*alloc = *alloc ? 2 * *alloc : 4;
			*ps = xrealloc(*ps, *alloc * sizeof **ps);
			*last = xrealloc(*last, *alloc * sizeof **last);
		}
		struct store_pathset *p = &(*ps)[*count];
		if (index_column_digest(st, 0, &p->digest) < 0)
			continue;
		int seen = 0;
		for (size_t i = 0; i < *count && !seen; i++)
			seen = digest_equal(&(*ps)[i].digest, &p->digest);
		if (seen)
			continue;
		p->body = index_column_copy(st, 1, &p->len);
		(*last)[*count] = sqlite3_column_int64(st, 2);
		(*count)++;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : index_error(s, rc, e, "reading path sets");
}

/* Most weak keys have one or two groupings; a command line that has been
 * recorded with more only looks in its first ones. */
#define MAX_ARGV_SHAPES 16

int store_get_pathsets_argv(struct store *s, const struct digest *weak, store_argv_key_fn argv_key,
                            void *ctx, struct store_pathset **out, size_t *n, int *any,
                            struct error *e)
{
	*out = NULL;
	*n = 0;
	*any = 0;
	sqlite3_stmt *st = index_stmt(s, ST_ARGV_SHAPES, e);
	if (!st)
		return -1;
	bind_digest(st, 1, weak);
	uint64_t shapes[MAX_ARGV_SHAPES];
	size_t nshapes = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && nshapes < MAX_ARGV_SHAPES)
		shapes[nshapes++] = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return index_error(s, rc, e, "reading path sets");
	*any = nshapes > 0;
	struct store_pathset *ps = NULL;
	int64_t *last = NULL;
	size_t count = 0, alloc = 0;
	for (size_t i = 0; i < nshapes; i++) {
		struct digest key;
		if (shapes[i] && argv_key(ctx, shapes[i], &key) < 0)
			continue; /* a named file is gone: no path set of the group holds */
		if (append_group(s, weak, shapes[i], shapes[i] ? &key : NULL, &ps, &last, &count,
		                 &alloc, e) < 0) {
			free(last);
			store_pathsets_free(ps, count);
			return -1;
		}
	}
	if (count > 1)
		order_by_recent_use(s, weak, ps, last, count);
	free(last);
	*out = ps;
	*n = count;
	return 0;
}

void store_pathsets_free(struct store_pathset *ps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ps[i].body);
	free(ps);
}

int store_get_result(struct store *s, const struct digest *strong, void **body, size_t *len,
                     struct error *e)
{
	*body = NULL;
	*len = 0;
	sqlite3_stmt *st = index_stmt(s, ST_GET_RESULT, e);
	if (!st)
		return -1;
	bind_digest(st, 1, strong);
	int rc = sqlite3_step(st);
	int found = 0;
	if (rc == SQLITE_ROW) {
		*body = index_column_copy(st, 0, len);
		found = 1;
		rc = SQLITE_DONE;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return index_error(s, rc, e, "reading a result");
	return found;
}

/* Drops path set `digest` of weak with its results, those results' blob
 * references and its groupings. The blob files stay for eviction. */
static int drop_pathset(struct store *s, const struct digest *weak, const struct digest *digest,
                        struct error *e)
{
	static const enum stmt_id drops[] = {ST_DEL_PATHSET_RESULT_BLOBS, ST_DEL_PATHSET_RESULTS,
	                                     ST_DEL_PATHSET, ST_DEL_PATHSET_ARGV};
	for (size_t k = 0; k < sizeof drops / sizeof drops[0]; k++) {
		sqlite3_stmt *d = index_stmt(s, drops[k], e);
		if (!d)
			return -1;
		bind_digest(d, 1, weak);
		bind_digest(d, 2, digest);
		if (step_done(s, d, e, "dropping an old path set") < 0)
			return -1;
	}
	return 0;
}

/* The digests that query st (its parameters bound by the caller) returns
 * in column col; what says what failed. */
static struct digest *collect_digests(struct store *s, sqlite3_stmt *st, int col, size_t *n,
                                      const char *what, struct error *e)
{
	struct digest *out = NULL;
	size_t alloc = 0;
	*n = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ARRAY_RESERVE(out, alloc, *n + 1, 4);
		if (index_column_digest(st, col, &out[*n]) == 0)
			(*n)++;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE) {
		free(out);
		index_error(s, rc, e, what);
		return NULL;
	}
	return out ? out : xmalloc(1);
}

/* One grouping of a path set that a bound drops. */
struct grouping {
	int64_t words;
	void *key;
	size_t key_len;
	struct digest pathset;
};

/* Deletes the groupings that query st returns (columns words, key,
 * pathset) and drops each path set left in no group: unreachable by a
 * lookup, it would only wait for the bound of its weak key. */
static int drop_groupings(struct store *s, const struct digest *weak, sqlite3_stmt *st,
                          struct error *e)
{
	struct grouping *g = NULL;
	size_t n = 0, alloc = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ARRAY_RESERVE(g, alloc, n + 1, 4);
		if (index_column_digest(st, 2, &g[n].pathset) < 0)
			continue;
		g[n].words = sqlite3_column_int64(st, 0);
		g[n].key = index_column_copy(st, 1, &g[n].key_len);
		n++;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	int ret = rc == SQLITE_DONE ? 0 : index_error(s, rc, e, "finding old path sets");
	for (size_t i = 0; i < n && ret == 0; i++) {
		sqlite3_stmt *d = index_stmt(s, ST_DEL_ARGV, e);
		if (!d) {
			ret = -1;
			break;
		}
		bind_digest(d, 1, weak);
		sqlite3_bind_int64(d, 2, g[i].words);
		bind_body(d, 3, g[i].key, g[i].key_len);
		bind_digest(d, 4, &g[i].pathset);
		ret = step_done(s, d, e, "dropping an old path set");
		if (ret < 0)
			break;
		sqlite3_stmt *q = index_stmt(s, ST_PATHSET_GROUPED, e);
		if (!q) {
			ret = -1;
			break;
		}
		bind_digest(q, 1, weak);
		bind_digest(q, 2, &g[i].pathset);
		rc = sqlite3_step(q);
		sqlite3_reset(q);
		sqlite3_clear_bindings(q);
		if (rc == SQLITE_DONE)
			ret = drop_pathset(s, weak, &g[i].pathset, e);
		else if (rc != SQLITE_ROW)
			ret = index_error(s, rc, e, "finding old path sets");
	}
	for (size_t i = 0; i < n; i++)
		free(g[i].key);
	free(g);
	return ret;
}

/* The bounds on what a weak key keeps, least recently used dropped first:
 * max path sets in each group (what one lookup evaluates), and in all
 * PATHSET_GROUPS_FACTOR times as many path sets and groupings, so that a
 * command line run with hundreds of different inputs (configure's
 * conftest.c) keeps the path sets of each instead of thrashing. */
#define PATHSET_GROUPS_FACTOR 16

/* 1 when weak is within every bound drop_old_pathsets keeps: at most max
 * groupings (then no group has more, nor the weak key more than its bound
 * on groupings) and at most max * PATHSET_GROUPS_FACTOR path sets. Most
 * weak keys are, a new step's always: one query instead of three, and of
 * the three the ones that cost most to prepare. */
static int within_bounds(struct store *s, const struct digest *weak, unsigned max, struct error *e)
{
	sqlite3_stmt *st = index_stmt(s, ST_WEAK_SIZE, e);
	if (!st)
		return -1;
	bind_digest(st, 1, weak);
	sqlite3_bind_int64(st, 2, (int64_t)max + 1);
	sqlite3_bind_int64(st, 3, (int64_t)max * PATHSET_GROUPS_FACTOR + 1);
	int rc = sqlite3_step(st);
	int within = rc == SQLITE_ROW && sqlite3_column_int64(st, 0) <= max &&
	             sqlite3_column_int64(st, 1) <= (int64_t)max * PATHSET_GROUPS_FACTOR;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_ROW)
		return index_error(s, rc, e, "finding old path sets");
	return within;
}

static int drop_old_pathsets(struct store *s, const struct store_entry *en,
                             const struct digest *key, unsigned max, struct error *e)
{
	const struct digest *weak = en->weak;
	int within = within_bounds(s, weak, max, e);
	if (within != 0)
		return within < 0 ? -1 : 0;
	sqlite3_stmt *st = index_stmt(s, ST_OLD_ARGV_IN_GROUP, e);
	if (!st)
		return -1;
	bind_digest(st, 1, weak);
	sqlite3_bind_int64(st, 2, (int64_t)en->argv_words);
	if (key)
		bind_digest(st, 3, key);
	else
		sqlite3_bind_zeroblob(st, 3, 0);
	sqlite3_bind_int64(st, 4, max);
	if (drop_groupings(s, weak, st, e) < 0)
		return -1;
	st = index_stmt(s, ST_OLD_ARGV_OF_WEAK, e);
	if (!st)
		return -1;
	bind_digest(st, 1, weak);
	sqlite3_bind_int64(st, 2, (int64_t)max * PATHSET_GROUPS_FACTOR * 4);
	if (drop_groupings(s, weak, st, e) < 0)
		return -1;
	st = index_stmt(s, ST_OLD_PATHSETS, e);
	if (!st)
		return -1;
	bind_digest(st, 1, weak);
	sqlite3_bind_int64(st, 2, (int64_t)max * PATHSET_GROUPS_FACTOR);
	size_t n;
	struct digest *old = collect_digests(s, st, 0, &n, "finding old path sets", e);
	if (!old)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = drop_pathset(s, weak, &old[i], e);
	free(old);
	return rc;
}

/* Records one referenced blob. Runs inside the write transaction so that an
 * eviction that unlinks blobs under the same lock cannot remove it between
 * this check and the commit: a committed entry's blobs exist. */
static int put_entry_blob(struct store *s, const struct digest *strong, const struct blob_ref *b,
                          struct error *e)
{
	enum blob_form form;
	struct stat stbuf;
	int found = blob_locate(s, &b->digest, b->form, &form, &stbuf, NULL, e);
	if (found < 0)
		return -1;
	if (!found) {
		char hex[DIGEST_HEX_LEN + 1];
		digest_to_hex(&b->digest, hex);
		error_set(e, "blob %s is missing: not storing an entry that references it", hex);
		if (e)
			e->code = ENOENT;
		return -1;
	}
	sqlite3_stmt *st = index_stmt(s, ST_PUT_BLOB, e);
	if (!st)
		return -1;
	bind_digest(st, 1, &b->digest);
	sqlite3_bind_int64(st, 2, (int64_t)b->size);
	sqlite3_bind_int64(st, 3, (int64_t)stbuf.st_size);
	sqlite3_bind_int(st, 4, (int)form);
	if (step_done(s, st, e, "recording a blob") < 0)
		return -1;
	st = index_stmt(s, ST_PUT_RESULT_BLOB, e);
	if (!st)
		return -1;
	bind_digest(st, 1, strong);
	bind_digest(st, 2, &b->digest);
	return step_done(s, st, e, "recording a blob reference");
}

/* The result row of en, its blobs and its blob references, where old
 * are the references its strong key had: those it still names stay as
 * they are (deleted and inserted again, they cost their pages, the table's
 * and its index's, in the WAL of every re-store), the others go. */
static int put_result_and_blobs(struct store *s, const struct store_entry *en, int64_t now,
                                const struct digest *old, size_t nold, struct error *e)
{
	uint64_t size = 0;
	for (size_t i = 0; i < en->nblobs; i++)
		size += en->blobs[i].size;
	sqlite3_stmt *st = index_stmt(s, ST_PUT_RESULT, e);
	if (!st)
		return -1;
	bind_digest(st, 1, en->strong);
	bind_digest(st, 2, en->weak);
	bind_digest(st, 3, en->pathset);
	bind_body(st, 4, en->result_body, en->result_len);
	sqlite3_bind_int64(st, 5, (int64_t)size);
	sqlite3_bind_int64(st, 6, now);
	sqlite3_bind_int64(st, 7, en->duration_ms);
	if (step_done(s, st, e, "storing a result") < 0)
		return -1;
	for (size_t i = 0; i < en->nblobs; i++)
		if (put_entry_blob(s, en->strong, &en->blobs[i], e) < 0)
			return -1;
	for (size_t k = 0; k < nold; k++) {
		int named = 0;
		for (size_t i = 0; i < en->nblobs && !named; i++)
			named = digest_equal(&en->blobs[i].digest, &old[k]);
		if (named)
			continue;
		st = index_stmt(s, ST_DEL_RESULT_BLOB, e);
		if (!st)
			return -1;
		bind_digest(st, 1, en->strong);
		bind_digest(st, 2, &old[k]);
		if (step_done(s, st, e, "replacing a result") < 0)
			return -1;
	}
	return 0;
}

static int put_entry_rows(struct store *s, const struct store_entry *en, unsigned max_pathsets,
                          struct error *e)
{
	int64_t now = store_now_ns();
	sqlite3_stmt *st = index_stmt(s, ST_PUT_STEP, e);
	if (!st)
		return -1;
	bind_digest(st, 1, en->weak);
	bind_body(st, 2, en->step_body, en->step_len);
	sqlite3_bind_int64(st, 3, now);
	if (step_done(s, st, e, "storing a step") < 0)
		return -1;

	st = index_stmt(s, ST_PUT_PATHSET, e);
	if (!st)
		return -1;
	bind_digest(st, 1, en->weak);
	bind_digest(st, 2, en->pathset);
	bind_body(st, 3, en->pathset_body, en->pathset_len);
	sqlite3_bind_int64(st, 4, now);
	if (step_done(s, st, e, "storing a path set") < 0)
		return -1;

	const struct digest *key = en->argv_words ? en->argv_key : NULL;
	st = index_stmt(s, ST_PUT_ARGV, e);
	if (!st)
		return -1;
	bind_digest(st, 1, en->weak);
	sqlite3_bind_int64(st, 2, key ? (int64_t)en->argv_words : 0);
	if (key)
		bind_digest(st, 3, key);
	else
		sqlite3_bind_zeroblob(st, 3, 0);
	bind_digest(st, 4, en->pathset);
	sqlite3_bind_int64(st, 5, now);
	if (step_done(s, st, e, "storing a path set") < 0)
		return -1;

	/* Replacing a result replaces its blob references too (below). */
	st = index_stmt(s, ST_RESULT_BLOBS, e);
	if (!st)
		return -1;
	bind_digest(st, 1, en->strong);
	size_t nold;
	struct digest *old = collect_digests(s, st, 0, &nold, "replacing a result", e);
	if (!old)
		return -1;
	int rc = put_result_and_blobs(s, en, now, old, nold, e);
	free(old);
	if (rc < 0)
		return -1;

	if (max_pathsets > 0 && drop_old_pathsets(s, en, key, max_pathsets, e) < 0)
		return -1;
	/* The entry's strong key stored again: its duplicate row names it. */
	if (en->duplicate && duplicate_row_put(s, en->duplicate, nold > 0, e) < 0)
		return -1;
	if (en->step_ident && step_name_row_put(s, en->step_ident, en->weak, e) < 0)
		return -1;
	return 0;
}

int store_put_entry(struct store *s, const struct store_entry *entry, unsigned max_pathsets,
                    struct error *e)
{
	return store_put_entries(s, entry, 1, max_pathsets, e);
}

int store_put_entries(struct store *s, const struct store_entry *entries, size_t n,
                      unsigned max_pathsets, struct error *e)
{
	if (s->readonly)
		return store_readonly_error(e);
	if (index_begin(s, e) < 0)
		return error_wrap(e, "storing an entry");
	for (size_t i = 0; i < n; i++) {
		if (put_entry_rows(s, &entries[i], max_pathsets, e) < 0) {
			index_rollback(s);
			return -1;
		}
	}
	/* The write lock is held anyway: write the queued fingerprints too. */
	if (fp_queue_write(s) < 0) {
		index_rollback(s);
		return error_set(e, "storing an entry: cannot write the fingerprint cache");
	}
	if (index_commit(s, e) < 0)
		return -1;
	fp_queue_free(&s->fpq);
	return 0;
}

int store_touch_hit(struct store *s, const struct digest *weak, const struct digest *pathset,
                    const struct digest *strong)
{
	if (s->readonly)
		return 0;
	int64_t now = store_now_ns();
	/* Usually the touch goes to the log, not the index (touches.c): no write
	 * lock, no WAL frames to checkpoint. With fingerprints to write anyway,
	 * or on a network file system, it goes into the index directly. */
	if (!s->network_fs && (s->fpq.n == 0 || !s->db)) {
		int fold = touches_append(s, weak, pathset, strong, now);
		/* A hit through a memo has not opened the index: opening it once
		 * in TOUCH_FOLD_RECORDS hits is the price of an accurate LRU. */
		if (fold > 0 && store_index_open(s, NULL) == 0 && index_begin_nowait(s) == 1)
			index_end_nowait(s, 1);
		if (fold >= 0)
			return 0;
		/* The log cannot be written: try the index. */
	}
	/* A hit must never queue behind a writer: if the lock is taken, the LRU
	 * update is simply lost. */
	if (store_index_open(s, NULL) < 0)
		return 0;
	int begun = index_begin_nowait(s);
	if (begun <= 0) {
		store_count(s, "lru_updates_skipped", 1);
		return 0;
	}
	int ok = 0;
	sqlite3_stmt *st = index_stmt(s, ST_TOUCH_PATHSET, NULL);
	if (st) {
		bind_digest(st, 1, weak);
		bind_digest(st, 2, pathset);
		sqlite3_bind_int64(st, 3, now);
		ok = step_done(s, st, NULL, "touch") == 0;
	}
	st = ok ? index_stmt(s, ST_TOUCH_RESULT, NULL) : NULL;
	if (st) {
		bind_digest(st, 1, strong);
		sqlite3_bind_int64(st, 2, now);
		ok = step_done(s, st, NULL, "touch") == 0;
	} else {
		ok = 0;
	}
	/* One transaction for the hit: the queued fingerprints go with it. */
	int wrote_fps = ok && s->fpq.n && fp_queue_write(s) == 0;
	if (index_end_nowait(s, ok) && wrote_fps)
		fp_queue_free(&s->fpq);
	return 0;
}

int store_usage(struct store *s, struct store_usage *out, struct error *e)
{
	memset(out, 0, sizeof *out);
	static const enum stmt_id ids[] = {ST_USAGE_RESULTS, ST_USAGE_PATHSETS, ST_USAGE_BLOBS};
	/* One read transaction: the three counts describe one state. */
	store_snapshot_end(s);
	if (index_exec(s, "BEGIN", e) < 0)
		return -1;
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		sqlite3_stmt *st = index_stmt(s, ids[i], e);
		if (!st) {
			index_rollback(s);
			return -1;
		}
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			uint64_t v = (uint64_t)sqlite3_column_int64(st, 0);
			if (ids[i] == ST_USAGE_RESULTS) {
				out->entries = v;
			} else if (ids[i] == ST_USAGE_PATHSETS) {
				out->pathsets = v;
			} else {
				out->blobs = v;
				out->blob_bytes = (uint64_t)sqlite3_column_int64(st, 1);
			}
			rc = SQLITE_DONE;
		}
		/* The error's text before the reset, which clears it ("not an
		 * error"). */
		if (rc != SQLITE_DONE)
			index_error(s, rc, e, "counting the cache's contents");
		sqlite3_reset(st);
		if (rc != SQLITE_DONE) {
			index_rollback(s);
			return -1;
		}
	}
	index_rollback(s);
	return 0;
}
