/*
 * Eviction: entries past an age or beyond the size bound, least recently
 * used first, with the blobs only they reference; blobs nothing references
 * (left by replaced results and dropped path sets); files abandoned by
 * crashed processes.
 *
 * Hazards and how they are met:
 * - A store in flight has written its blobs but not yet committed the entry
 *   that references them. Blob files are only deleted inside a BEGIN
 *   IMMEDIATE transaction after the last reference to them is gone, and
 *   store_put_entry checks under the same lock that every blob it
 *   references exists: it either commits first (the reference keeps the
 *   blob) or finds the blob gone and stores nothing. Blob files that no row
 *   names at all are exactly what a store in flight has, so those are only
 *   collected by the sweep and only after an hour.
 * - A commit that fails after the files were deleted would bring back rows
 *   whose blobs are gone. Files are therefore moved into tmp/ inside the
 *   transaction and unlinked after the commit, or moved back before the
 *   rollback.
 * - Concurrent steps must not wait long for the write lock: work is done in
 *   batches of EVICT_BATCH entries per transaction, and the least recently
 *   used order is read once, outside any write lock. An entry used since
 *   (its last_used changed) is skipped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cachet/array.h"
#include "cachet/buf.h"
#include "store/store_internal.h"

/* Entries (or blobs) handled per write transaction. */
#define EVICT_BATCH 100
/* tmp/ files and blob files without a row younger than this may belong to a
 * step still running; older ones were abandoned by a crash. */
#define ABANDONED_AFTER_S 3600
/* The running size estimate (store_evict_due). */
#define ESTIMATE_COUNTER "cache_size_estimate"
#define STAMP_FILE       "gc.stamp"
#define LOCK_FILE        "evict.lock"

enum q_id {
	Q_CANDIDATES,
	Q_RESULT,
	Q_RESULT_BLOBS,
	Q_DEL_RESULT_BLOBS,
	Q_DEL_RESULT,
	Q_DEL_DUPLICATES,
	Q_PATHSET_USED,
	Q_DEL_PATHSET,
	Q_DEL_PATHSET_ARGV,
	Q_STEP_USED,
	Q_DEL_STEP,
	Q_BLOB_USED,
	Q_BLOB_ROW,
	Q_DEL_BLOB,
	Q_DEL_FP,
	Q_ORPHAN_BLOBS,
	Q_BLOB_FPS,
	Q_TOTAL,
	Q_ENTRIES,
	Q_COUNT
};

static const char *const q_sql[Q_COUNT] = {
    [Q_CANDIDATES] = "SELECT strong, last_used FROM results ORDER BY last_used, rowid",
    [Q_RESULT] = "SELECT weak, pathset, last_used FROM results WHERE strong = ?1",
    [Q_RESULT_BLOBS] = "SELECT digest FROM result_blobs WHERE strong = ?1",
    [Q_DEL_RESULT_BLOBS] = "DELETE FROM result_blobs WHERE strong = ?1",
    [Q_DEL_RESULT] = "DELETE FROM results WHERE strong = ?1",
    [Q_DEL_DUPLICATES] = "DELETE FROM duplicates WHERE strong = ?1",
    [Q_PATHSET_USED] = "SELECT 1 FROM results WHERE weak = ?1 AND pathset = ?2 LIMIT 1",
    [Q_DEL_PATHSET] = "DELETE FROM pathsets WHERE weak = ?1 AND digest = ?2",
    [Q_DEL_PATHSET_ARGV] = "DELETE FROM pathset_argv WHERE weak = ?1 AND pathset = ?2",
    [Q_STEP_USED] = "SELECT 1 FROM pathsets WHERE weak = ?1 LIMIT 1",
    [Q_DEL_STEP] = "DELETE FROM steps WHERE weak = ?1",
    [Q_BLOB_USED] = "SELECT 1 FROM result_blobs WHERE digest = ?1 LIMIT 1",
    [Q_BLOB_ROW] = "SELECT stored_size FROM blobs WHERE digest = ?1",
    [Q_DEL_BLOB] = "DELETE FROM blobs WHERE digest = ?1",
    [Q_DEL_FP] = "DELETE FROM fingerprints WHERE path = ?1",
    [Q_ORPHAN_BLOBS] = "SELECT digest FROM blobs WHERE NOT EXISTS"
                       " (SELECT 1 FROM result_blobs r WHERE r.digest = blobs.digest)",
    [Q_BLOB_FPS] = "SELECT path FROM fingerprints WHERE path > ?1 AND path < ?2",
    [Q_TOTAL] = "SELECT coalesce(sum(stored_size), 0) FROM blobs",
    [Q_ENTRIES] = "SELECT count(*) FROM results",
};

struct candidate {
	struct digest strong;
	int64_t last_used;
};

/* A blob file moved into tmp/ by the open transaction. */
struct moved {
	char *from, *to;
};

struct evict {
	struct store *s;
	sqlite3_stmt *q[Q_COUNT];
	int dry;
	int in_txn;
	unsigned done_in_txn;
	struct moved *moved;
	size_t nmoved, alloc;
	unsigned long seq;
	uint64_t total;                 /* blob bytes on disk, as the rows say */
	struct store_evict_report pend; /* counted in the open transaction */
	struct store_evict_report *rep;
};

void store_set_progress(struct store *s, store_progress_fn fn, void *ctx)
{
	s->progress = fn;
	s->progress_ctx = ctx;
}

static void progress(struct evict *ev, const char *what, uint64_t done, uint64_t total)
{
	if (ev->s->progress)
		ev->s->progress(ev->s->progress_ctx, what, done, total);
}

static sqlite3_stmt *q(struct evict *ev, enum q_id id, struct error *e)
{
	if (ev->q[id])
		return ev->q[id];
	int rc = index_prepare_own(ev->s, q_sql[id], 0, &ev->q[id]);
	if (rc != SQLITE_OK) {
		ev->q[id] = NULL;
		index_error(ev->s, rc, e, "evicting");
		return NULL;
	}
	return ev->q[id];
}

static void q_reset(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

static void bind_digest(sqlite3_stmt *st, int col, const struct digest *d)
{
	sqlite3_bind_blob(st, col, d->b, DIGEST_LEN, SQLITE_STATIC);
}

/* Runs a statement with up to two digest parameters. Returns 1 when it
 * produced a row (left unreset: the caller reads it and resets), 0 when
 * done (reset), -1 on error. */
static int run_q(struct evict *ev, enum q_id id, const struct digest *a, const struct digest *b,
                 struct error *e)
{
	sqlite3_stmt *st = q(ev, id, e);
	if (!st)
		return -1;
	if (a)
		bind_digest(st, 1, a);
	if (b)
		bind_digest(st, 2, b);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		return 1;
	q_reset(st);
	if (rc != SQLITE_DONE)
		return index_error(ev->s, rc, e, "evicting");
	return 0;
}

/* A statement that returns nothing, or whose row only matters as "exists". */
static int run_exists(struct evict *ev, enum q_id id, const struct digest *a,
                      const struct digest *b, struct error *e)
{
	int rc = run_q(ev, id, a, b, e);
	if (rc == 1)
		q_reset(ev->q[id]);
	return rc;
}

static int del_fp(struct evict *ev, const char *path, struct error *e)
{
	sqlite3_stmt *st = q(ev, Q_DEL_FP, e);
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	q_reset(st);
	return rc == SQLITE_DONE ? 0 : index_error(ev->s, rc, e, "evicting");
}

/* ---- transactions and the files they remove ---- */

static void moved_push(struct evict *ev, char *from, char *to)
{
	ARRAY_RESERVE(ev->moved, ev->alloc, ev->nmoved + 1, 64);
	ev->moved[ev->nmoved].from = from;
	ev->moved[ev->nmoved].to = to;
	ev->nmoved++;
}

/* Removes path on behalf of the open transaction: moved into tmp/ so that a
 * rollback can put it back. Returns 1 when removed, 0 when it was not there. */
static int remove_in_txn(struct evict *ev, const char *path)
{
	char *to = xasprintf("%s/evict.%ld.%lu", ev->s->tmp_dir, (long)getpid(), ev->seq++);
	if (store_rename(ev->s, path, to, 0) == 0) {
		moved_push(ev, xstrdup(path), to);
		return 1;
	}
	free(to);
	/* tmp/ missing or elsewhere: delete now. A failed commit then leaves
	 * an entry without its blob, which a lookup treats as a miss. */
	if (errno != ELOOP && errno != EXDEV && store_unlink(ev->s, path) == 0)
		return 1;
	return 0;
}

static void moved_finish(struct evict *ev, int committed)
{
	for (size_t i = 0; i < ev->nmoved; i++) {
		if (committed)
			store_unlink(ev->s, ev->moved[i].to);
		else
			store_rename(ev->s, ev->moved[i].to, ev->moved[i].from, 0);
		free(ev->moved[i].from);
		free(ev->moved[i].to);
	}
	ev->nmoved = 0;
}

static void pend_merge(struct evict *ev)
{
	ev->rep->entries += ev->pend.entries;
	ev->rep->blobs += ev->pend.blobs;
	ev->rep->bytes_freed += ev->pend.bytes_freed;
	memset(&ev->pend, 0, sizeof ev->pend);
}

static int txn_open(struct evict *ev, struct error *e)
{
	if (ev->in_txn)
		return 0;
	if (index_begin(ev->s, e) < 0)
		return error_wrap(e, "evicting");
	ev->in_txn = 1;
	ev->done_in_txn = 0;
	return 0;
}

static void txn_abort(struct evict *ev)
{
	if (!ev->in_txn)
		return;
	moved_finish(ev, 0);
	index_rollback(ev->s);
	ev->in_txn = 0;
	memset(&ev->pend, 0, sizeof ev->pend);
}

/* Commits the open transaction. A dry run keeps its one transaction open
 * until the end (final), and then rolls it back. */
static int txn_close(struct evict *ev, int final, struct error *e)
{
	if (!ev->in_txn)
		return 0;
	if (ev->dry) {
		if (!final)
			return 0;
		index_rollback(ev->s);
		ev->in_txn = 0;
		pend_merge(ev);
		return 0;
	}
	int rc = sqlite3_exec(ev->s->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		index_error(ev->s, rc, e, "evicting");
		txn_abort(ev);
		return -1;
	}
	ev->in_txn = 0;
	index_wal_restart(ev->s);
	moved_finish(ev, 1);
	pend_merge(ev);
	return 0;
}

/* After one unit of work: commit when the batch is full. */
static int txn_tick(struct evict *ev, struct error *e)
{
	if (++ev->done_in_txn < EVICT_BATCH)
		return 0;
	return txn_close(ev, 0, e);
}

/* ---- blobs and entries ---- */

/* Drops the blob (row, files, fingerprint) when no result references it.
 * A blob without a row is left to the sweep: it may be a store's in
 * flight. Inside the open transaction. */
static int drop_blob_if_unused(struct evict *ev, const struct digest *d, struct error *e)
{
	int used = run_exists(ev, Q_BLOB_USED, d, NULL, e);
	if (used != 0)
		return used < 0 ? -1 : 0;
	int row = run_q(ev, Q_BLOB_ROW, d, NULL, e);
	if (row <= 0)
		return row;
	uint64_t stored = (uint64_t)sqlite3_column_int64(ev->q[Q_BLOB_ROW], 0);
	q_reset(ev->q[Q_BLOB_ROW]);
	if (run_exists(ev, Q_DEL_BLOB, d, NULL, e) < 0)
		return -1;
	char *raw = blob_path(ev->s, d, BLOB_RAW);
	char *zst = blob_path(ev->s, d, BLOB_ZSTD);
	int rc = del_fp(ev, raw, e);
	if (rc == 0 && !ev->dry) {
		remove_in_txn(ev, raw);
		remove_in_txn(ev, zst);
	}
	free(raw);
	free(zst);
	if (rc < 0)
		return -1;
	ev->pend.blobs++;
	ev->pend.bytes_freed += stored;
	ev->total = ev->total > stored ? ev->total - stored : 0;
	return 0;
}

/* Evicts one entry unless it is gone or was used since the candidates
 * were read. Inside the open transaction. */
static int evict_entry(struct evict *ev, const struct candidate *c, struct error *e)
{
	int found = run_q(ev, Q_RESULT, &c->strong, NULL, e);
	if (found <= 0)
		return found;
	sqlite3_stmt *st = ev->q[Q_RESULT];
	struct digest weak, pathset;
	int ok =
	    index_column_digest(st, 0, &weak) == 0 && index_column_digest(st, 1, &pathset) == 0;
	int64_t last_used = sqlite3_column_int64(st, 2);
	q_reset(st);
	if (last_used != c->last_used)
		return 0;

	struct digest *blobs = NULL;
	size_t n = 0, alloc = 0;
	int rc;
	const struct digest *bind = &c->strong; /* bound once, then stepped */
	while ((rc = run_q(ev, Q_RESULT_BLOBS, bind, NULL, e)) == 1) {
		bind = NULL;
		ARRAY_RESERVE(blobs, alloc, n + 1, 8);
		if (index_column_digest(ev->q[Q_RESULT_BLOBS], 0, &blobs[n]) == 0)
			n++;
	}
	if (rc < 0 || run_exists(ev, Q_DEL_RESULT_BLOBS, &c->strong, NULL, e) < 0 ||
	    run_exists(ev, Q_DEL_RESULT, &c->strong, NULL, e) < 0 ||
	    run_exists(ev, Q_DEL_DUPLICATES, &c->strong, NULL, e) < 0) {
		free(blobs);
		return -1;
	}
	/* The path set goes with its last result, the step with its last path set. */
	if (ok) {
		rc = run_exists(ev, Q_PATHSET_USED, &weak, &pathset, e);
		if (rc == 0)
			rc = run_exists(ev, Q_DEL_PATHSET, &weak, &pathset, e);
		if (rc == 0)
			rc = run_exists(ev, Q_DEL_PATHSET_ARGV, &weak, &pathset, e);
		if (rc == 0) {
			rc = run_exists(ev, Q_STEP_USED, &weak, NULL, e);
			if (rc == 0)
				rc = run_exists(ev, Q_DEL_STEP, &weak, NULL, e);
		}
		if (rc < 0) {
			free(blobs);
			return -1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (drop_blob_if_unused(ev, &blobs[i], e) < 0) {
			free(blobs);
			return -1;
		}
	}
	free(blobs);
	ev->pend.entries++;
	return 0;
}

/* ---- phases ---- */

static int read_u64(struct evict *ev, enum q_id id, uint64_t *out, struct error *e)
{
	int rc = run_q(ev, id, NULL, NULL, e);
	if (rc < 0)
		return -1;
	*out = rc ? (uint64_t)sqlite3_column_int64(ev->q[id], 0) : 0;
	if (rc)
		q_reset(ev->q[id]);
	return 0;
}

/* Every digest a query returns (outside any transaction: a snapshot). */
static int read_digests(struct evict *ev, enum q_id id, struct digest **out, size_t *n,
                        struct error *e)
{
	*out = NULL;
	*n = 0;
	size_t alloc = 0;
	int rc;
	while ((rc = run_q(ev, id, NULL, NULL, e)) == 1) {
		ARRAY_RESERVE(*out, alloc, *n + 1, 64);
		if (index_column_digest(ev->q[id], 0, &(*out)[*n]) == 0)
			(*n)++;
	}
	return rc;
}

/* Blobs no result references: a replaced result's, a dropped path set's. */
static int evict_orphan_blobs(struct evict *ev, struct error *e)
{
	struct digest *d;
	size_t n;
	if (read_digests(ev, Q_ORPHAN_BLOBS, &d, &n, e) < 0) {
		free(d);
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		progress(ev, "gc: removing unreferenced blobs", i, n);
		rc = txn_open(ev, e);
		if (rc == 0)
			rc = drop_blob_if_unused(ev, &d[i], e);
		if (rc == 0)
			rc = txn_tick(ev, e);
	}
	free(d);
	return rc < 0 ? -1 : txn_close(ev, 0, e);
}

static int read_candidates(struct evict *ev, struct candidate **out, size_t *n, struct error *e)
{
	*out = NULL;
	*n = 0;
	size_t alloc = 0;
	int rc;
	while ((rc = run_q(ev, Q_CANDIDATES, NULL, NULL, e)) == 1) {
		ARRAY_RESERVE(*out, alloc, *n + 1, 256);
		sqlite3_stmt *st = ev->q[Q_CANDIDATES];
		if (index_column_digest(st, 0, &(*out)[*n].strong) == 0) {
			(*out)[*n].last_used = sqlite3_column_int64(st, 1);
			(*n)++;
		}
	}
	return rc;
}

static int evict_entries(struct evict *ev, uint64_t max_bytes, int64_t max_age_s, struct error *e)
{
	if (!max_bytes && max_age_s <= 0)
		return 0;
	struct candidate *c;
	size_t n;
	if (read_candidates(ev, &c, &n, e) < 0) {
		free(c);
		return -1;
	}
	int64_t cutoff = INT64_MIN;
	if (max_age_s > 0 && max_age_s < INT64_MAX / 1000000000 / 2)
		cutoff = store_now_ns() - max_age_s * 1000000000;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		int aged = c[i].last_used < cutoff;
		int over = max_bytes && ev->total > max_bytes;
		if (!aged && !over)
			break; /* the rest were used more recently */
		/* How many will go is known only at the end. */
		progress(ev, "gc: evicting entries", i, 0);
		rc = txn_open(ev, e);
		if (rc == 0)
			rc = evict_entry(ev, &c[i], e);
		if (rc == 0)
			rc = txn_tick(ev, e);
	}
	free(c);
	return rc < 0 ? -1 : txn_close(ev, 0, e);
}

/* By mtime: a blob file's content is written just before it is renamed
 * into place, and never changed after. */
static int64_t file_age_s(const struct stat *st)
{
	return (int64_t)(time(NULL) - st->st_mtime);
}

/* Files in tmp/ left by crashed processes (and by a crashed eviction). */
static void sweep_tmp(struct evict *ev)
{
	DIR *d = store_opendir(ev->s, ev->s->tmp_dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		/* Only what cachet itself names there: a cache directory set by
		 * mistake, or a member of a group cache, may have put others. */
		if (!store_tmp_name(de->d_name) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		/* mtime only: a rename into tmp/ (evict.*) keeps the blob's old
		 * mtime, and writes in progress keep it fresh. */
		if (!S_ISREG(st.st_mode) || file_age_s(&st) < ABANDONED_AFTER_S)
			continue;
		if (ev->dry || unlinkat(dirfd(d), de->d_name, 0) == 0)
			ev->rep->tmp_files++;
	}
	closedir(d);
}

struct loose_blob {
	struct digest digest;
	char *path;
	uint64_t size;
};

/* Blob files old enough to have been abandoned, whatever their rows say. */
static void list_old_blob_files(struct evict *ev, struct loose_blob **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t alloc = 0;
	DIR *top = store_opendir(ev->s, ev->s->blobs_dir);
	if (!top)
		return;
	struct dirent *de;
	uint64_t dirs = 0;
	while ((de = readdir(top))) {
		if (!store_blob_dir_name(de->d_name))
			continue;
		progress(ev, "gc: listing blob directories", dirs++, 256);
		int fd =
		    openat(dirfd(top), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *sub = fd >= 0 ? fdopendir(fd) : NULL;
		if (!sub) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		struct dirent *f;
		while ((f = readdir(sub))) {
			size_t len = strlen(f->d_name);
			if (len != DIGEST_HEX_LEN &&
			    (len != DIGEST_HEX_LEN + 4 ||
			     strcmp(f->d_name + DIGEST_HEX_LEN, ".zst") != 0))
				continue;
			char hex[DIGEST_HEX_LEN + 1];
			memcpy(hex, f->d_name, DIGEST_HEX_LEN);
			hex[DIGEST_HEX_LEN] = '\0';
			struct digest dg;
			struct stat st;
			if (digest_from_hex(hex, &dg) < 0 ||
			    fstatat(dirfd(sub), f->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISREG(st.st_mode) || file_age_s(&st) < ABANDONED_AFTER_S)
				continue;
			ARRAY_RESERVE(*out, alloc, *n + 1, 64);
			(*out)[*n].digest = dg;
			(*out)[*n].path =
			    xasprintf("%s/%s/%s", ev->s->blobs_dir, de->d_name, f->d_name);
			(*out)[*n].size = (uint64_t)st.st_size;
			(*n)++;
		}
		closedir(sub);
	}
	closedir(top);
}

/* Blob files no row names (a store that crashed before its commit, or whose
 * commit failed), older than an hour. Checked and removed under the write
 * lock, so that a store committing a row for one is never undercut. */
static int sweep_blob_files(struct evict *ev, struct error *e)
{
	struct loose_blob *b;
	size_t n;
	list_old_blob_files(ev, &b, &n);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		progress(ev, "gc: checking old blob files", i, n);
		rc = txn_open(ev, e);
		int row = rc == 0 ? run_exists(ev, Q_BLOB_ROW, &b[i].digest, NULL, e) : -1;
		if (row < 0)
			rc = -1;
		if (row == 0) {
			rc = del_fp(ev, b[i].path, e);
			if (rc == 0 && (ev->dry || store_unlink(ev->s, b[i].path) == 0)) {
				ev->pend.blobs++;
				ev->pend.bytes_freed += b[i].size;
			}
		}
		if (rc == 0)
			rc = txn_tick(ev, e);
	}
	for (size_t i = 0; i < n; i++)
		free(b[i].path);
	free(b);
	return rc;
}

/* Fingerprint rows of blob files that are gone (removed by corruption
 * checks, by hand, or by an older cachet). */
static int sweep_blob_fingerprints(struct evict *ev, struct error *e)
{
	if (ev->dry)
		return 0;
	sqlite3_stmt *st = q(ev, Q_BLOB_FPS, e);
	if (!st)
		return -1;
	/* '0' follows '/': the range holds exactly the paths under blobs/. */
	char *lo = xasprintf("%s/", ev->s->blobs_dir);
	char *hi = xasprintf("%s0", ev->s->blobs_dir);
	sqlite3_bind_text(st, 1, lo, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, hi, -1, SQLITE_STATIC);
	char **gone = NULL;
	size_t n = 0, alloc = 0;
	int rc;
	uint64_t seen = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		progress(ev, "gc: checking blob fingerprints", seen++, 0);
		const char *p = (const char *)sqlite3_column_text(st, 0);
		struct stat sb;
		if (!p || lstat(p, &sb) == 0 || errno != ENOENT)
			continue;
		ARRAY_RESERVE(gone, alloc, n + 1, 64);
		gone[n++] = xstrdup(p);
	}
	q_reset(st);
	free(lo);
	free(hi);
	rc = rc == SQLITE_DONE ? 0 : index_error(ev->s, rc, e, "evicting");
	for (size_t i = 0; i < n && rc == 0; i++) {
		rc = txn_open(ev, e);
		if (rc == 0)
			rc = del_fp(ev, gone[i], e);
		if (rc == 0)
			rc = txn_tick(ev, e);
	}
	for (size_t i = 0; i < n; i++)
		free(gone[i]);
	free(gone);
	return rc;
}

/* ---- the size estimate ---- */

static int64_t estimate_get(struct store *s)
{
	struct store_counter *c = NULL;
	size_t n = 0;
	int64_t v = 0;
	if (store_counters(s, &c, &n, NULL) == 0)
		for (size_t i = 0; i < n; i++)
			if (!strcmp(c[i].name, ESTIMATE_COUNTER))
				v = c[i].value;
	free(c);
	return v;
}

/* Sets the estimate (as an add: other processes may add concurrently). */
static void estimate_set(struct store *s, uint64_t bytes)
{
	store_count(s, ESTIMATE_COUNTER, (int64_t)bytes - estimate_get(s));
}

/* The blob bytes as the index counts them: a read, no lock. */
static int index_bytes(struct store *s, uint64_t *out)
{
	sqlite3_stmt *st;
	*out = 0;
	if (sqlite3_prepare_v2(s->db, q_sql[Q_TOTAL], -1, &st, NULL) != SQLITE_OK)
		return -1;
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -1;
}

static char *stamp_path(const struct store *s)
{
	return xasprintf("%s/%s", s->dir, STAMP_FILE);
}

static void stamp_touch(const struct store *s)
{
	char *p = stamp_path(s);
	int fd = store_openat(s, p, O_WRONLY | O_CREAT, 0666);
	if (fd >= 0) {
		futimens(fd, NULL);
		close(fd);
	}
	free(p);
}

unsigned store_evict_due(struct store *s, uint64_t bytes, uint64_t max_bytes,
                         int64_t sweep_interval_s)
{
	if (s->readonly)
		return 0;
	unsigned due = 0;
	if (max_bytes) {
		/* One look-up of the counter, not a copy of all of them. */
		int64_t before = 0;
		int counted = counter_add(s, ESTIMATE_COUNTER, (int64_t)bytes, &before) == 0;
		int64_t cur = before + (int64_t)bytes;
		if (!counted || before <= 0) {
			/* New cache, or counters zeroed: start from the real size
			 * (which already holds the entry just stored). */
			uint64_t real = 0;
			int known = index_bytes(s, &real) == 0;
			/* To the real size; or back to what it was, so that the
			 * next store tries again (an estimate of only this
			 * entry's bytes would hold eviction off). */
			if (counted)
				store_count(s, ESTIMATE_COUNTER,
				            known ? (int64_t)real - cur : -(int64_t)bytes);
			cur = (int64_t)real;
		}
		if ((uint64_t)cur > max_bytes)
			due |= STORE_EVICT_DUE_SIZE;
	}
	if (sweep_interval_s > 0) {
		char *p = stamp_path(s);
		struct stat st;
		if (stat(p, &st) < 0)
			stamp_touch(s); /* a new cache: its first sweep is one interval away */
		else if ((int64_t)(time(NULL) - st.st_mtime) >= sweep_interval_s)
			due |= STORE_EVICT_DUE_SWEEP;
		free(p);
	}
	return due;
}

/* ---- entry point ---- */

/* One evicting process at a time: two would race for the same LRU tail
 * and evict twice as much. Returns the locked fd, -1 with e set, or -2
 * when busy and nowait. */
static int take_lock(struct store *s, int nowait, struct error *e)
{
	char *p = xasprintf("%s/%s", s->dir, LOCK_FILE);
	/* Read-only is enough for flock: users sharing the cache can all lock. */
	int fd = store_openat(s, p, O_RDONLY | O_CREAT, 0666);
	if (fd < 0) {
		error_errno(e, "evicting: %s", p);
		free(p);
		return -1;
	}
	free(p);
	while (flock(fd, LOCK_EX | (nowait ? LOCK_NB : 0)) < 0) {
		if (errno == EINTR)
			continue;
		int busy = errno == EWOULDBLOCK;
		if (!busy)
			error_errno(e, "evicting: locking");
		close(fd);
		return busy ? -2 : -1;
	}
	return fd;
}

static int evict_locked(struct evict *ev, uint64_t max_bytes, int64_t max_age_s, unsigned flags,
                        struct error *e)
{
	if ((flags & STORE_EVICT_SWEEP))
		sweep_tmp(ev);
	/* A write transaction first folds the hits logged since the last one
	 * into last_used, so the order read below is current. A dry run keeps
	 * it open to the end: it must see its own deletions. */
	if (txn_open(ev, e) < 0 || txn_close(ev, 0, e) < 0)
		return -1;
	if (read_u64(ev, Q_TOTAL, &ev->total, e) < 0 || evict_orphan_blobs(ev, e) < 0 ||
	    evict_entries(ev, max_bytes, max_age_s, e) < 0)
		return -1;
	if ((flags & STORE_EVICT_SWEEP) &&
	    (sweep_blob_files(ev, e) < 0 || sweep_blob_fingerprints(ev, e) < 0))
		return -1;
	if (txn_close(ev, 0, e) < 0)
		return -1;
	/* What is left (inside a dry run's transaction: as it would be). */
	if (read_u64(ev, Q_TOTAL, &ev->rep->bytes_left, e) < 0 ||
	    read_u64(ev, Q_ENTRIES, &ev->rep->entries_left, e) < 0)
		return -1;
	return txn_close(ev, 1, e);
}

int store_evict(struct store *s, uint64_t max_bytes, int64_t max_age_s, unsigned flags,
                struct store_evict_report *out, struct error *e)
{
	memset(out, 0, sizeof *out);
	if (s->readonly)
		return store_readonly_error(e);
	int lock = take_lock(s, (flags & STORE_EVICT_NOWAIT) != 0, e);
	if (lock == -2) {
		out->skipped = 1;
		return 0;
	}
	if (lock < 0)
		return -1;
	struct evict ev = {.s = s, .dry = (flags & STORE_EVICT_DRY_RUN) != 0, .rep = out};
	int rc = evict_locked(&ev, max_bytes, max_age_s, flags, e);
	if (rc < 0) {
		txn_abort(&ev);
		for (int i = 0; i < Q_COUNT; i++)
			if (ev.q[i])
				sqlite3_reset(ev.q[i]);
	}
	for (int i = 0; i < Q_COUNT; i++)
		sqlite3_finalize(ev.q[i]);
	free(ev.moved);
	if (rc == 0 && !ev.dry) {
		estimate_set(s, out->bytes_left);
		if (out->entries) {
			store_count(s, "evicted_entries", (int64_t)out->entries);
			/* Memos are not accounted in the size: dropping them all
			 * keeps them bounded by what has run since. */
			store_memo_drop_all(s);
		}
		if (out->bytes_freed)
			store_count(s, "evicted_bytes", (int64_t)out->bytes_freed);
		if (flags & STORE_EVICT_SWEEP)
			stamp_touch(s);
	}
	close(lock);
	return rc;
}
