/*
 * The touch log: which path set and result each hit used, appended to the
 * file `touches` instead of written to the index. A hit that wrote to the
 * index would take the write lock, and would leave WAL frames that the last
 * connection to close must checkpoint: four fdatasyncs, more than all the
 * rest of a hit costs.
 *
 * Each record is one write(2) of TOUCH_RECORD bytes with O_APPEND, which
 * local file systems keep whole against concurrent appenders (a network
 * file system does not: there, store_touch_hit writes the index as before).
 * Every write transaction (index_begin) first folds the log into the index
 * and empties it, so that whatever reads last_used under the write lock
 * (eviction, the path-set bound) sees every hit; a hit that finds the log
 * long folds it itself, with a lock it does not wait for. Until then,
 * store_get_pathsets merges the log into its order.
 *
 * Best effort, like the LRU updates it replaces: a record appended in the
 * instant between the fold's read and its truncation is lost, and so is
 * the log when the file cannot be written. If the transaction that folded
 * the log rolls back (a dry run of eviction), the records are appended
 * again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "store/store_internal.h"

#define TOUCH_FILE "touches"
/* weak, path set, strong, time (ns, little-endian). */
#define TOUCH_RECORD (3 * DIGEST_LEN + 8)
/* A log of this many records is folded by the hit that finds it. */
#define TOUCH_FOLD_RECORDS 256
/* More than this is not read (a file grown by something else). */
#define TOUCH_MAX_BYTES ((size_t)TOUCH_RECORD * 65536)

static char *touch_path(const struct store *s)
{
	return xasprintf("%s/" TOUCH_FILE, s->dir);
}

static int append_bytes(const struct store *s, const void *data, size_t len)
{
	char *path = touch_path(s);
	int fd = store_create_mode(
	    s, store_openat(s, path, O_WRONLY | O_APPEND | O_CREAT, s->file_mode));
	free(path);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, data, len);
	struct stat st;
	int records = -1;
	if (w == (ssize_t)len && fstat(fd, &st) == 0)
		records = (int)((uint64_t)st.st_size / TOUCH_RECORD);
	close(fd);
	return records;
}

int touches_append(struct store *s, const struct digest *weak, const struct digest *pathset,
                   const struct digest *strong, int64_t now_ns)
{
	unsigned char rec[TOUCH_RECORD];
	memcpy(rec, weak->b, DIGEST_LEN);
	memcpy(rec + DIGEST_LEN, pathset->b, DIGEST_LEN);
	memcpy(rec + 2 * DIGEST_LEN, strong->b, DIGEST_LEN);
	for (int i = 0; i < 8; i++)
		rec[3 * DIGEST_LEN + i] = (unsigned char)((uint64_t)now_ns >> (8 * i));
	int records = append_bytes(s, rec, sizeof rec);
	return records < 0 ? -1 : records >= TOUCH_FOLD_RECORDS;
}

static int64_t record_time(const unsigned char *rec)
{
	uint64_t t = 0;
	for (int i = 0; i < 8; i++)
		t |= (uint64_t)rec[3 * DIGEST_LEN + i] << (8 * i);
	return (int64_t)t;
}

/* The whole records in the log (malloc'd, *n of them); NULL when none. */
static unsigned char *read_log(int fd, size_t *n)
{
	*n = 0;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < TOUCH_RECORD)
		return NULL;
	size_t want = (size_t)st.st_size < TOUCH_MAX_BYTES ? (size_t)st.st_size : TOUCH_MAX_BYTES;
	want -= want % TOUCH_RECORD;
	unsigned char *data = xmalloc(want);
	size_t got = 0;
	while (got < want) {
		ssize_t r = pread(fd, data + got, want - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	*n = got / TOUCH_RECORD;
	if (!*n) {
		free(data);
		return NULL;
	}
	return data;
}

static int bind_digest_at(sqlite3_stmt *st, int col, const unsigned char *b)
{
	return sqlite3_bind_blob(st, col, b, DIGEST_LEN, SQLITE_STATIC);
}

static int run_update(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

void touches_fold(struct store *s)
{
	if (s->readonly || s->network_fs)
		return;
	char *path = touch_path(s);
	int fd = store_openat(s, path, O_RDWR, 0);
	free(path);
	if (fd < 0)
		return;
	size_t n;
	unsigned char *recs = read_log(fd, &n);
	if (!recs) {
		close(fd);
		return;
	}
	sqlite3_stmt *tp = index_stmt(s, ST_TOUCH_PATHSET, NULL);
	sqlite3_stmt *tr = index_stmt(s, ST_TOUCH_RESULT, NULL);
	int ok = tp && tr;
	for (size_t i = 0; ok && i < n; i++) {
		const unsigned char *r = recs + i * TOUCH_RECORD;
		int64_t t = record_time(r);
		bind_digest_at(tp, 1, r);
		bind_digest_at(tp, 2, r + DIGEST_LEN);
		sqlite3_bind_int64(tp, 3, t);
		bind_digest_at(tr, 1, r + 2 * DIGEST_LEN);
		sqlite3_bind_int64(tr, 2, t);
		ok = run_update(tp) == 0 && run_update(tr) == 0;
	}
	if (ok && ftruncate(fd, 0) == 0) {
		/* Kept until the transaction ends: a rollback appends them again. */
		free(s->touch_undo);
		s->touch_undo = recs;
		s->touch_undo_len = n * TOUCH_RECORD;
		recs = NULL;
	}
	free(recs);
	close(fd);
}

void touches_transaction_ended(struct store *s, int committed)
{
	if (!s->touch_undo)
		return;
	if (!committed)
		append_bytes(s, s->touch_undo, s->touch_undo_len);
	free(s->touch_undo);
	s->touch_undo = NULL;
	s->touch_undo_len = 0;
}

void touches_merge(struct store *s, const struct digest *weak, const struct digest *pathsets,
                   int64_t *last_used, size_t count)
{
	if (s->network_fs || count == 0)
		return;
	char *path = touch_path(s);
	int fd = store_openat(s, path, O_RDONLY, 0);
	free(path);
	if (fd < 0)
		return;
	size_t n;
	unsigned char *recs = read_log(fd, &n);
	close(fd);
	for (size_t i = 0; i < n; i++) {
		const unsigned char *r = recs + i * TOUCH_RECORD;
		if (memcmp(r, weak->b, DIGEST_LEN) != 0)
			continue;
		for (size_t k = 0; k < count; k++)
			if (memcmp(r + DIGEST_LEN, pathsets[k].b, DIGEST_LEN) == 0 &&
			    record_time(r) > last_used[k])
				last_used[k] = record_time(r);
	}
	free(recs);
}
