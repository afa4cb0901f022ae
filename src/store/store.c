/*
 * Opening and closing a store: the directory layout, read-only detection,
 * network file systems, recovery from a corrupt index; and the whole-store
 * operations clear and usage.
 *
 * Nothing here opens or closes the index file itself (only SQLite does):
 * closing any descriptor of a file drops every POSIX lock this process
 * holds on it, SQLite's included.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cachet/path.h"
#include "store/store_internal.h"

int store_readonly_error(struct error *e)
{
	error_set(e, "store is read-only");
	if (e)
		e->code = EROFS;
	return -1;
}

int store_fs_is_network(long f_type)
{
	switch ((unsigned long)f_type & 0xffffffffUL) {
	case 0x6969UL:     /* NFS */
	case 0x517bUL:     /* SMB */
	case 0xff534d42UL: /* CIFS */
	case 0xfe534d42UL: /* SMB2 */
	case 0x65735546UL: /* FUSE (sshfs, s3fs, ...): shared mmap unreliable */
	case 0x00c36400UL: /* Ceph */
	case 0x5346414fUL: /* AFS */
	case 0x6b414653UL: /* kAFS */
	case 0x01021997UL: /* 9p */
	case 0x73757245UL: /* Coda */
	case 0x0000564cUL: /* NCP */
	case 0x0bd00bd0UL: /* Lustre */
	case 0x01161970UL: /* GFS2 */
	case 0x7461636fUL: /* OCFS2 */
	case 0x47504653UL: /* GPFS */
	case 0xaad7aaeaUL: /* PanFS */
	case 0x786f4256UL: /* VirtualBox shared folders */
		return 1;
	default:
		return 0;
	}
}

static char *absolute_dir(const char *dir)
{
	if (dir[0] == '/')
		return path_join(NULL, dir);
	char *cwd = getcwd(NULL, 0);
	if (!cwd)
		return NULL;
	char *p = path_join(cwd, dir);
	free(cwd);
	return p;
}

/* blobs/ or tmp/ of a writable cache, made unless it is there: present
 * and writable as a rule, which one access() says (a mkdir that finds it
 * would be one more call, and the access one is needed anyway). One that
 * cannot be written makes the store read-only. 0, or -1 with errno. */
static int subdir_ready(struct store *s, const char *path)
{
	if (access(path, W_OK) == 0)
		return 0;
	if (errno == ENOENT) {
		if (store_mkdir(s, path) == 0 || errno == EEXIST)
			return 0;
	}
	if (errno != EACCES && errno != EPERM && errno != EROFS)
		return -1;
	s->readonly = 1;
	return 0;
}

/* Makes the cache directory (unless it exists), opens its root and checks
 * that it is a cache (store_claim_dir), then makes blobs/ and tmp/ in it. */
static int make_layout(struct store *s, struct error *e)
{
	struct stat st;
	int existed = stat(s->dir, &st) == 0;
	if (!s->readonly && !(existed && S_ISDIR(st.st_mode)) &&
	    path_mkdirs(s->dir, s->dir_mode) < 0) {
		if (errno != EACCES && errno != EPERM && errno != EROFS)
			return error_errno(e, "creating cache directory %s", s->dir);
		s->readonly = 1;
	}
	/* Keeps the setgid bit of a group cache's root, set by hand or
	 * inherited, which its subdirectories inherit in turn. */
	if (!existed && s->shared && !s->readonly && stat(s->dir, &st) == 0)
		chmod(s->dir, s->dir_mode | (st.st_mode & S_ISGID));
	if (store_root_open(s) < 0)
		return error_errno(e, "cache directory %s", s->dir);
	if (store_claim_dir(s, e) < 0)
		return -1;
	if (s->readonly)
		return 0;
	if (subdir_ready(s, s->blobs_dir) < 0 || (!s->readonly && subdir_ready(s, s->tmp_dir) < 0))
		return error_errno(e, "creating cache directory %s", s->dir);
	return 0;
}

/* Root passes permission checks, but not a read-only mount (EROFS); blobs/
 * and tmp/ were found writable by make_layout. */
static int dir_writable(const struct store *s)
{
	if (access(s->dir, W_OK) < 0)
		return 0;
	return access(s->index_path, W_OK) == 0 || errno == ENOENT;
}

static int is_corrupt(int rc)
{
	return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB;
}

static void disconnect(struct store *s)
{
	index_finalize_all(s);
	sqlite3_close(s->db);
	s->db = NULL;
}

/* A query found corruption in an earlier run (see index_error): check the
 * whole index once, now. */
static int check_marked(struct store *s, struct error *e)
{
	char *marker = xasprintf("%s.check", s->index_path);
	int rc = SQLITE_OK;
	if (access(marker, F_OK) == 0) {
		sqlite3_stmt *st;
		rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(1)", -1, &st, NULL);
		if (rc == SQLITE_OK) {
			rc = sqlite3_step(st);
			if (rc == SQLITE_ROW) {
				const char *r = (const char *)sqlite3_column_text(st, 0);
				rc = r && strcmp(r, "ok") == 0 ? SQLITE_OK : SQLITE_CORRUPT;
			}
			sqlite3_finalize(st);
		}
		/* quick_check reads the pages, not what the schema says. */
		if (rc == SQLITE_OK)
			rc = index_schema_check(s);
		if (rc == SQLITE_OK)
			store_unlink(s, marker);
		else
			error_set(e, "cache index %s failed its integrity check", s->index_path);
	}
	free(marker);
	return rc;
}

int store_create_mode(const struct store *s, int fd)
{
	if (fd >= 0 && s->shared)
		fchmod(fd, s->file_mode); /* fails harmlessly on another user's file */
	return fd;
}

/* The index holds argv and environment values, which can be secrets: 0600,
 * unless the cache is shared between users on purpose (then what its mask
 * allows; SQLite gives -wal and -shm the index's mode). */
static int index_mode(const struct store *s)
{
	/* Not chmod by path: a member of a group cache could have made
	 * index.db a symlink to another member's private file. Its mode is
	 * right as a rule: looked at without following a symlink, it needs
	 * no descriptor. */
	struct stat st;
	mode_t want = s->file_mode;
	if (fstatat(s->root_fd, "index.db", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    (st.st_mode & 07777) == want)
		return 0;
	int fd = store_openat(s, s->index_path, O_RDONLY, 0);
	int rc = fd >= 0 && fstat(fd, &st) == 0 ? 0 : -1;
	if (rc == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) != want)
		rc = fchmod(fd, want);
	int err = errno;
	if (fd >= 0)
		close(fd);
	errno = err;
	return rc;
}

static int on_commit(void *arg)
{
	touches_transaction_ended(arg, 1);
	return 0;
}

static void on_rollback(void *arg)
{
	touches_transaction_ended(arg, 0);
}

/* Frames in the WAL past which a commit checkpoints it and starts it again
 * from its first frame: some six to fifteen misses' worth (a miss writes 8
 * to 21 pages: fewer when its step, result or duplicate row is known). */
#define WAL_CHECKPOINT_FRAMES 128

/* Replaces SQLite's autocheckpoint. The first process to open the index
 * after the last one closed it rebuilds the WAL's index by reading every
 * valid frame of the WAL (SQLite truncates the -shm then), and that rebuild
 * also forgets how far earlier checkpoints got: a WAL checkpointed but not
 * started again is read whole by every later process, and appended to, never
 * restarted. So the commit that grows the WAL past WAL_CHECKPOINT_FRAMES
 * copies it into the database (RESTART, which also waits for no reader: it
 * does not wait here) and, when every frame got there and no reader holds
 * the WAL, marks it for index_wal_restart, which starts it again at once.
 * The WAL keeps its length: TRUNCATE's cut to zero bytes and the regrowth
 * that follows cost the file system more (a truncate, block allocation and
 * one more sync of new blocks per cycle) than the overwrite of the frames
 * in place. With readers in (a parallel build, where the -shm stays valid
 * anyway) it does what a passive checkpoint does. */
static int on_wal(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct store *s = arg;
	if (frames < WAL_CHECKPOINT_FRAMES)
		return SQLITE_OK;
	int log = -1, done = -2;
	sqlite3_busy_timeout(db, 0);
	if (sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_RESTART, &log, &done) ==
	        SQLITE_OK &&
	    log == done)
		s->wal_restart_due = 1;
	sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
	return SQLITE_OK;
}

/* Opens the connection and sets up the schema. Returns an SQLite code. */
static int connect(struct store *s, struct error *e)
{
	/* NOFOLLOW: index.db replaced by a symlink in a group cache. */
	int flags =
	    SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW |
	    (s->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
	int rc = sqlite3_open_v2(s->index_path, &s->db, flags, NULL);
	if (rc != SQLITE_OK) {
		if (s->readonly && access(s->index_path, F_OK) < 0)
			error_set(e, "no cache index at %s (and the store is read-only)",
			          s->index_path);
		else
			index_error(s, rc, e, "opening the cache index");
		return rc;
	}
	if (!s->readonly && index_mode(s) < 0) {
		error_errno(e, "chmod %s", s->index_path);
		return SQLITE_CANTOPEN;
	}
	sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
	sqlite3_commit_hook(s->db, on_commit, s);
	sqlite3_rollback_hook(s->db, on_rollback, s);
	if (!s->readonly) {
		/* Keep -wal and -shm after the last connection closes: a later
		 * read-only open (a read-only mount of this cache) cannot create
		 * the -shm and would fail without it. */
		int one = 1;
		sqlite3_file_control(s->db, "main", SQLITE_FCNTL_PERSIST_WAL, &one);
		/* The last connection to close would checkpoint the WAL: four
		 * fdatasyncs (1.7 ms measured) in every serial miss. The WAL is
		 * checkpointed by the commit that grows it past
		 * WAL_CHECKPOINT_FRAMES instead; a crash loses nothing either way. */
		sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
		sqlite3_wal_hook(s->db, on_wal, s);
	}
	rc = index_setup(s, e);
	if ((rc & 0xff) == SQLITE_CANTOPEN && s->readonly) {
		char *shm = xasprintf("%s-shm", s->index_path);
		if (access(shm, F_OK) < 0)
			error_set(
			    e,
			    "cannot read cache index %s read-only: its WAL shared-memory file "
			    "%s is missing and cannot be created here (open the cache once "
			    "where it is writable)",
			    s->index_path, shm);
		free(shm);
	}
	if (rc == SQLITE_OK && !s->readonly)
		rc = check_marked(s, e);
	return rc;
}

/* Moves a corrupt index and its WAL files aside, for inspection, so that a
 * fresh index can take its place. Another process may have done so already
 * since this one opened it: then there is nothing to move. */
static int set_aside(struct store *s, const struct stat *seen)
{
	struct stat now;
	if (stat(s->index_path, &now) < 0)
		return errno == ENOENT ? 0 : -1;
	if (seen && (now.st_dev != seen->st_dev || now.st_ino != seen->st_ino))
		return 0;
	char *aside = xasprintf("%s.corrupt-%lld", s->index_path, (long long)time(NULL));
	int rc = store_rename(s, s->index_path, aside, 0);
	static const char *const suffixes[] = {"-wal", "-shm", ".check"};
	for (size_t i = 0; rc == 0 && i < sizeof suffixes / sizeof suffixes[0]; i++) {
		char *from = xasprintf("%s%s", s->index_path, suffixes[i]);
		char *to = xasprintf("%s%s", aside, suffixes[i]);
		/* A stale -wal must never be replayed into the new index. */
		if (store_rename(s, from, to, 0) < 0 && errno != ENOENT)
			store_unlink(s, from);
		free(from);
		free(to);
	}
	free(aside);
	if (rc == 0) {
		/* A fault of the cache like any other: in the total too. */
		store_count(s, "index_recreated", 1);
		store_count(s, "errors", 1);
	}
	return rc;
}

static int open_index(struct store *s, struct error *e)
{
	for (int attempt = 0;; attempt++) {
		struct stat seen;
		int have_seen = stat(s->index_path, &seen) == 0;
		int rc = connect(s, e);
		if (rc == SQLITE_OK)
			return 0;
		disconnect(s);
		if (!is_corrupt(rc) || s->readonly || attempt > 0)
			return -1;
		if (set_aside(s, have_seen ? &seen : NULL) < 0)
			return error_errno(e, "moving the corrupt cache index %s aside",
			                   s->index_path);
	}
}

int store_open(const char *dir, unsigned flags, struct store **out, struct error *e)
{
	*out = NULL;
	if (!dir || !*dir)
		return error_set(e, "no cache directory given");
	struct store *s = xcalloc(1, sizeof *s);
	s->counters_fd = -1;
	s->root_fd = -1;
	s->zstd_level = STORE_DEFAULT_ZSTD_LEVEL;
	s->dir = absolute_dir(dir);
	if (!s->dir) {
		error_errno(e, "cache directory %s", dir);
		free(s);
		return -1;
	}
	s->index_path = xasprintf("%s/index.db", s->dir);
	s->blobs_dir = xasprintf("%s/blobs", s->dir);
	s->tmp_dir = xasprintf("%s/tmp", s->dir);
	s->readonly = (flags & STORE_READONLY) != 0;
	s->shared = (flags & STORE_SHARED) != 0;
	mode_t mask = (mode_t)((flags >> 16) & 0777);
	s->dir_mode = s->shared ? 0777 & ~mask : 0700;
	s->file_mode = s->shared ? 0666 & ~mask : 0600;
	if (make_layout(s, e) < 0) {
		store_close(s);
		return -1;
	}
	if (!s->readonly && !dir_writable(s))
		s->readonly = 1;
	struct statfs fs;
	if (statfs(s->dir, &fs) < 0) {
		error_errno(e, "cache directory %s", s->dir);
		store_close(s);
		return -1;
	}
	s->network_fs = store_fs_is_network((long)fs.f_type);
	if (!(flags & STORE_DEFER_INDEX) && open_index(s, e) < 0) {
		store_close(s);
		return -1;
	}
	*out = s;
	return 0;
}

int store_index_open(struct store *s, struct error *e)
{
	return s->db ? 0 : open_index(s, e);
}

void store_close(struct store *s)
{
	if (!s)
		return;
	if (s->db) {
		store_snapshot_end(s);
		store_fp_flush(s);
		disconnect(s);
	}
	free(s->touch_undo);
	fp_queue_free(&s->fpq);
	counters_close(s);
	blobs_free_contexts(s);
	if (s->root_fd >= 0)
		close(s->root_fd);
	free(s->dir);
	free(s->index_path);
	free(s->blobs_dir);
	free(s->tmp_dir);
	free(s);
}

const char *store_dir(const struct store *s)
{
	return s->dir;
}

int store_is_readonly(const struct store *s)
{
	return s->readonly;
}

/* Rows and files go under one write lock, so that a concurrent
 * store_put_entry either commits first (and is cleared) or finds its blobs
 * gone and stores nothing. Counters stay: like `ccache -C`, clearing the
 * cache keeps the statistics (store_counters_zero resets them). */
int store_clear(struct store *s, struct error *e)
{
	if (s->readonly)
		return store_readonly_error(e);
	fp_queue_free(&s->fpq);
	if (index_begin(s, e) < 0)
		return error_wrap(e, "clearing the cache");
	if (index_clear_rows(s, e) < 0) {
		index_rollback(s);
		return error_wrap(e, "clearing the cache");
	}
	struct error blob_err = {0, ""};
	int blobs_rc = blobs_remove_all(s, &blob_err);
	if (index_commit(s, e) < 0)
		return error_wrap(e, "clearing the cache");
	store_memo_drop_all(s);
	if (blobs_rc < 0) {
		if (e)
			*e = blob_err;
		return error_wrap(e, "clearing the cache");
	}
	return 0;
}
