/*
 * Private to src/store: the store's state and the functions its files share.
 *
 * Files: store.c (open, close, layout, clear, usage), index.c (SQLite schema,
 * statements, path sets, results, entries), fingerprints.c (file_id ->
 * digest cache with an in-memory queue), blobs.c (writing blobs),
 * restore.c (verifying and reading blobs back), counters.c (the shared
 * counter file), touches.c (the log of hits, folded into the index by the
 * next writer).
 *
 * A struct store belongs to one thread at a time.
 */
#ifndef CACHET_STORE_INTERNAL_H
#define CACHET_STORE_INTERNAL_H

#include <dirent.h>
#include <sqlite3.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "cachet/store.h"

/* Content at or above this size is kept raw: a restore can then reflink or
 * copy_file_range it instead of decompressing it through user space. */
#define STORE_COMPRESS_LIMIT ((uint64_t)64 << 20)
/* Level 1, as ccache's: against level 3, a Lua miss compressed its object
 * with 0.54 M instructions fewer (zstd's tables for level 3 alone are some
 * 768 KiB to zero), for 0.6% more bytes stored. Any level reads back. */
#define STORE_DEFAULT_ZSTD_LEVEL 1

/* Write transactions wait this long for the write lock. */
#define STORE_BUSY_TIMEOUT_MS 30000

/* The index schema version (PRAGMA user_version). */
#define STORE_SCHEMA_VERSION 6

/* Prepared statements, prepared on first use: a hit uses only a few. */
enum stmt_id {
	ST_GET_PATHSETS,
	ST_GET_RESULT,
	ST_PUT_STEP,
	ST_PUT_PATHSET,
	ST_OLD_PATHSETS,
	ST_DEL_PATHSET_RESULT_BLOBS,
	ST_DEL_PATHSET_RESULTS,
	ST_DEL_PATHSET,
	ST_RESULT_BLOBS,
	ST_DEL_RESULT_BLOB,
	ST_PUT_RESULT,
	ST_PUT_RESULT_BLOB,
	ST_PUT_BLOB,
	ST_TOUCH_PATHSET,
	ST_TOUCH_RESULT,
	ST_FP_GET,
	ST_FP_PUT,
	ST_USAGE_RESULTS,
	ST_USAGE_PATHSETS,
	ST_USAGE_BLOBS,
	ST_ARGV_SHAPES,
	ST_GET_ARGV_PATHSETS,
	ST_PUT_ARGV,
	ST_OLD_ARGV_IN_GROUP,
	ST_OLD_ARGV_OF_WEAK,
	ST_DEL_ARGV,
	ST_PATHSET_GROUPED,
	ST_DEL_PATHSET_ARGV,
	ST_WEAK_SIZE,
	ST_DUP_UPDATE,
	ST_DUP_UPDATE_KEEP_STRONG,
	ST_DUP_INSERT,
	ST_COUNT
};

/* One queued fingerprint. */
struct fp_pending {
	char *path;
	struct file_id id;
	struct digest digest;
};

/* Queued fingerprints with an open-addressing index by path, so that a
 * lookup of a path queued earlier in this process costs O(1). */
struct fp_queue {
	struct fp_pending *items;
	size_t n, alloc;
	uint32_t *slots; /* index + 1 into items; 0 = empty */
	size_t nslots;   /* power of two, or 0 */
};

struct counter_slot {
	char name[48];
	int64_t value;
};

struct store {
	char *dir;        /* absolute */
	char *index_path; /* dir/index.db */
	char *blobs_dir;  /* dir/blobs */
	char *tmp_dir;    /* dir/tmp */
	int root_fd;      /* O_PATH descriptor of dir: everything inside resolves from it */
	int readonly;
	int shared;       /* STORE_SHARED */
	mode_t dir_mode;  /* 0700, or 0777 less the shared cache's mask */
	mode_t file_mode; /* 0600, or 0666 less the shared cache's mask */
	int network_fs;   /* WAL cannot work there: rollback journal instead */
	int zstd_level;

	sqlite3 *db;
	sqlite3_stmt *stmts[ST_COUNT];

	struct fp_queue fpq;

	/* Counters: mapped on first use; counters_state 0 = not tried, 1 = mapped, -1 =
	 * unavailable. */
	int counters_state;
	int counters_fd;
	int counters_writable;
	struct counter_slot *counters;

	/* store_set_progress: long work (eviction) reports through it. */
	store_progress_fn progress;
	void *progress_ctx;

	/* zstd contexts, created on first use and reused. */
	void *cctx;
	void *dctx;

	/* Touch-log records folded into the open write transaction, appended
	 * again if it rolls back (touches.c). */
	unsigned char *touch_undo;
	size_t touch_undo_len;
	/* A read transaction opened by store_snapshot_begin. */
	int in_snapshot;
	/* The WAL was checkpointed whole: index_wal_restart starts it again. */
	int wal_restart_due;
};

/* ---- store.c ---- */
/* 1 for file systems where SQLite's WAL (shared memory between processes)
 * cannot be trusted: NFS, SMB/CIFS, FUSE, cluster file systems. */
int store_fs_is_network(long f_type);
/* Sets a "store is read-only" error (code EROFS). Returns -1. */
int store_readonly_error(struct error *e);

/* Gives a file just opened with O_CREAT the store's file mode in a shared
 * cache. Returns fd. */
int store_create_mode(const struct store *s, int fd);

/* ---- beneath.c: paths inside the cache (absolute, under dir), resolved
 * from root_fd without following any symlink; EXDEV for a path outside,
 * ELOOP for a symlink on the way. ---- */
int store_root_open(struct store *s);
/* path relative to the cache root ("." for the root), or NULL. */
const char *store_rel(const struct store *s, const char *path);
/* openat2 beneath the root; adds O_CLOEXEC, and O_NOFOLLOW unless O_PATH. */
int store_openat(const struct store *s, const char *path, int flags, mode_t mode);
/* An O_PATH descriptor of path's directory, *leaf pointing at its last name. */
int store_parent(const struct store *s, const char *path, const char **leaf);
int store_unlink(const struct store *s, const char *path);
/* renameat2 with flags (0: renameat). */
int store_rename(const struct store *s, const char *from, const char *to, unsigned flags);
DIR *store_opendir(const struct store *s, const char *path);
/* replace_file (cachet/replace.h) and mkostemp, beneath the root. */
int store_replace(const struct store *s, const char *tmp, const char *path, int may_exist);
int store_mkstemp(const struct store *s, char *tmpl);
/* mkdir with the store's directory mode, exactly (chmod in a shared
 * cache, where the process umask may be narrower), keeping an inherited
 * setgid bit. 0 or -1 with errno. */
int store_mkdir(const struct store *s, const char *path);

/* ---- cachedir.c ---- */
/* Checks that the open root is a cache (CACHEDIR.TAG), tagging an empty
 * directory or one made by an older cachet. 0, or -1 with e set. */
int store_claim_dir(struct store *s, struct error *e);
/* 1 when name is one cachet gives files in tmp/ (cleanups remove nothing
 * else), two hex digits (a directory in blobs/), a digest in hex (a memo),
 * or a blob file's name (a digest in hex, then ".zst" when compressed). */
int store_tmp_name(const char *name);
int store_blob_dir_name(const char *name);
int store_digest_name(const char *name);
int store_blob_name(const char *name);

/* ---- index.c ---- */
/* Configures the connection (journal mode, pragmas) and creates or migrates
 * the schema. Returns SQLITE_OK or an SQLite result code with e set; the
 * caller recovers from SQLITE_CORRUPT and SQLITE_NOTADB. */
int index_setup(struct store *s, struct error *e);
/* SQLITE_OK when the schema in the index is the one this version creates,
 * SQLITE_CORRUPT when it differs (a damaged page of sqlite_master can rename
 * a column and still pass quick_check), or another SQLite code. */
int index_schema_check(struct store *s);
void index_finalize_all(struct store *s);
/* The statement, prepared on first use; NULL with e set on failure. */
sqlite3_stmt *index_stmt(struct store *s, enum stmt_id id, struct error *e);
/* Sets e from an SQLite result code: a message with context, and code =
 * EBUSY, ENOSPC, EBADMSG (corrupt index) or EIO. Returns -1. A corrupt index
 * is counted and marked so that the next store_open checks it. */
int index_error(struct store *s, int rc, struct error *e, const char *what);
int index_exec(struct store *s, const char *sql, struct error *e);
/* BEGIN IMMEDIATE with the normal busy timeout. */
int index_begin(struct store *s, struct error *e);
int index_commit(struct store *s, struct error *e);
void index_rollback(struct store *s);
/* BEGIN IMMEDIATE that gives up at once if another process writes: returns
 * 1 when begun, 0 when busy, -1 on another error. The busy timeout stays 0
 * until index_end_nowait, which commits (when commit is set) or rolls back
 * and returns 1 when it committed. */
int index_begin_nowait(struct store *s);
int index_end_nowait(struct store *s, int commit);
/* After a commit whose WAL hook checkpointed the whole WAL (store.c,
 * on_wal): writes one page in a transaction of its own, which starts the
 * WAL again from its first frame, so that the next process to open the
 * index reads one frame instead of every frame checkpointed. Best effort,
 * and never waits for the write lock. */
void index_wal_restart(struct store *s);
/* Deletes every row of every table (inside the caller's transaction). */
int index_clear_rows(struct store *s, struct error *e);
int64_t store_now_ns(void);
/* A blob column as a malloc'd, NUL-terminated copy; *len excludes the NUL. */
void *index_column_copy(sqlite3_stmt *st, int col, size_t *len);
/* A 32-byte digest column: 0, or -1 when the column is not one. */
int index_column_digest(sqlite3_stmt *st, int col, struct digest *out);
/* The same, all zeros when the column holds no digest. */
void index_column_digest_or_zero(sqlite3_stmt *st, int col, struct digest *out);
/* Writes the row of d into the duplicates table of the open index, within
 * the caller's transaction if there is one (store_put_entry's);
 * stored_again when d's strong key was in the index before (its row most
 * likely names it already). */
int duplicate_row_put(struct store *s, const struct store_duplicate *d, int stored_again,
                      struct error *e);

/* ---- step_names.c ---- */
/* Writes weak as the newest step of ident in the open transaction (nothing
 * when it is already). */
int step_name_row_put(struct store *s, const struct digest *ident, const struct digest *weak,
                      struct error *e);
/* sqlite3_prepare_v3 of one of cachet's own statements (sql is never the
 * user's): an SQLite code, with SQLITE_ERROR reported as SQLITE_CORRUPT,
 * since such a statement fails to compile only on a damaged schema. */
int index_prepare_own(struct store *s, const char *sql, unsigned flags, sqlite3_stmt **st);
/* Prepares a statement used once (inspection queries off the hit path);
 * the caller finalizes it. 0, or -1 with e set. */
int index_prepare(struct store *s, const char *sql, sqlite3_stmt **st, struct error *e);

/* ---- fingerprints.c ---- */
void fp_queue_free(struct fp_queue *q);
/* Writes the queued fingerprints inside the caller's write transaction
 * (the caller frees the queue once it commits). 0 or -1. */
int fp_queue_write(struct store *s);

/* ---- blobs.c ---- */
/* malloc'd path of a blob in the given form. */
char *blob_path(const struct store *s, const struct digest *d, enum blob_form form);
/* Finds the blob in either form, preferring `prefer`. Returns 1 with *form,
 * *st and (if path_out) a malloc'd path; 0 when missing; -1 on error. */
int blob_locate(const struct store *s, const struct digest *d, enum blob_form prefer,
                enum blob_form *form, struct stat *st, char **path_out, struct error *e);
/* Unlinks every blob file (the caller holds the write lock). */
int blobs_remove_all(struct store *s, struct error *e);
void blobs_free_contexts(struct store *s);

/* ---- restore.c ---- */
/* The blob is corrupt: remove it (unless read-only), count it, set e with
 * code EBADMSG. Returns -1. */
int blob_corrupt(struct store *s, const char *path, struct error *e, const char *why);

/* ---- touches.c ---- */
/* Appends one hit to the touch log. 1 when the log has grown long enough
 * that the caller should fold it, 0 otherwise, -1 when it cannot be written. */
int touches_append(struct store *s, const struct digest *weak, const struct digest *pathset,
                   const struct digest *strong, int64_t now_ns);
/* Applies the log to the index and empties it; inside the caller's write
 * transaction (index_begin and index_begin_nowait call it). Best effort. */
void touches_fold(struct store *s);
/* The transaction that folded the log ended: on a rollback the records are
 * appended again. Called from SQLite's commit and rollback hooks. */
void touches_transaction_ended(struct store *s, int committed);
/* Raises last_used[k] to the newest logged use of (weak, pathsets[k]). */
void touches_merge(struct store *s, const struct digest *weak, const struct digest *pathsets,
                   int64_t *last_used, size_t count);

/* ---- counters.c ---- */
void counters_close(struct store *s);
/* store_count that also gives the counter's value before the add (one
 * atomic add: no other process's add falls between). Returns -1 when the
 * counter cannot be written (no counter file, read-only, no free slot). */
int counter_add(struct store *s, const char *name, int64_t delta, int64_t *before);

#endif
