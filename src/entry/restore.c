#include "cachet/result.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cachet/array.h"
#include "cachet/observe.h"
#include "cachet/path.h"
#include "cachet/strmap.h"
#include "cachet/unnamed.h"

/* The times a restored file gets: the ones the step set on purpose, or now
 * (NULL), as a file just written has. */
static const struct timespec *restored_times(const struct output *o, struct timespec ts[2])
{
	if (!o->has_mtime)
		return NULL;
	ts[0].tv_sec = ts[1].tv_sec = o->mtime_ns / 1000000000;
	ts[0].tv_nsec = ts[1].tv_nsec = o->mtime_ns % 1000000000;
	return ts;
}

/*
 * An output's bytes go to an unnamed file (O_TMPFILE) in its directory,
 * which gets a temporary name beside the output only once it is complete,
 * and is then renamed over it: a cachet killed while writing (SIGKILL, or
 * ^C, which a hit does not catch) leaves nothing there (unnamed.h). Where
 * the file system has no O_TMPFILE, or no /proc is mounted to name the
 * file by, the file is named from the start, as a temporary file always
 * was; and where naming it fails anyway, it is written again under a name.
 */
struct out_temp {
	int fd;
	char *name; /* relative to the directory's dirfd; NULL while unnamed */
};

/* Makes something under a fresh temporary name in dir (relative to dirfd),
 * by make(dirfd, name, arg), trying new names while the name is taken. The
 * name (malloc'd), or NULL with errno set. */
static char *make_under_temp_name(int dirfd, const char *dir,
                                  int (*make)(int dirfd, const char *name, void *arg), void *arg)
{
	for (int attempt = 0; attempt < 100; attempt++) {
		char *name =
		    xasprintf("%s/.cachet-%d-%d-%ld", dir, (int)getpid(), attempt, random());
		if (make(dirfd, name, arg) == 0)
			return name;
		free(name);
		if (errno != EEXIST)
			return NULL;
	}
	errno = EEXIST;
	return NULL;
}

static int make_file(int dirfd, const char *name, void *fd)
{
	*(int *)fd =
	    openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return *(int *)fd < 0 ? -1 : 0;
}

static int make_link(int dirfd, const char *name, void *fd)
{
	return unnamed_link(*(int *)fd, dirfd, name);
}

static int make_symlink(int dirfd, const char *name, void *target)
{
	return symlinkat(target, dirfd, name);
}

/* A file to write in dir (relative to dirfd): unnamed unless named is set
 * or the file system cannot. 0, or -1 with errno. */
static int out_temp_open(struct out_temp *t, int dirfd, const char *dir, int named)
{
	t->fd = named ? -1 : unnamed_open(dirfd, dir, O_WRONLY | O_CLOEXEC);
	t->name = t->fd >= 0 ? NULL : make_under_temp_name(dirfd, dir, make_file, &t->fd);
	return t->fd >= 0 ? 0 : -1;
}

/* Gives the unnamed file its temporary name: 0, or -1. */
static int out_temp_link(struct out_temp *t, int dirfd, const char *dir)
{
	t->name = make_under_temp_name(dirfd, dir, make_link, &t->fd);
	return t->name ? 0 : -1;
}

/* o's bytes, with mode and o's times, in a closed temporary file in dir
 * (relative to dirfd), named t->name (malloc'd), for the caller to rename
 * over the output. 0, or -1 with e set and nothing left behind. */
static int write_temp(const struct output *o, mode_t mode, struct store *s, int dirfd,
                      const char *dir, struct out_temp *t, struct error *e)
{
	for (int named = 0; named < 2; named++) {
		if (out_temp_open(t, dirfd, dir, named) < 0)
			return error_errno(e, "cannot create a temporary file beside %s", o->path);
		struct timespec ts[2];
		int rc = store_blob_write_to_fd(s, &o->blob, t->fd, e);
		if (rc == 0 && fchmod(t->fd, mode) < 0)
			rc = error_errno(e, "%s", o->path);
		if (rc == 0 && o->has_mtime && futimens(t->fd, restored_times(o, ts)) < 0)
			rc = error_errno(e, "%s", o->path);
		if (rc == 0 && !t->name && out_temp_link(t, dirfd, dir) < 0) {
			close(t->fd);
			continue; /* no name to be had for it: a named file */
		}
		if (close(t->fd) < 0 && rc == 0)
			rc = error_errno(e, "%s", o->path);
		if (rc < 0) {
			if (t->name)
				unlinkat(dirfd, t->name, 0);
			free(t->name);
			t->name = NULL;
		}
		return rc;
	}
	return error_set(e, "cannot create a temporary file beside %s", o->path);
}

/* ---- where a restore may write ---- */

/* An absolute path whose every component is a real name: no "", "." or "..". */
static int clean_absolute(const char *p)
{
	if (p[0] != '/' || !p[1])
		return 0;
	for (const char *c = p + 1;;) {
		const char *slash = strchr(c, '/');
		size_t n = slash ? (size_t)(slash - c) : strlen(c);
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
		if (!slash)
			return 1;
		c = slash + 1;
	}
}

static int usable_root(const char *r)
{
	return !strcmp(r, "/") || clean_absolute(r);
}

/* The deepest root that path equals or lies beneath, or NULL. */
static const char *root_of(const char *path, const char *const *roots)
{
	const char *best = NULL;
	for (const char *const *r = roots; r && *r; r++) {
		if (!usable_root(*r) || !path_is_under(path, *r))
			continue;
		if (!best || strlen(*r) > strlen(best))
			best = *r;
	}
	return best;
}

/* The path strictly beneath a root? */
static int beneath_a_root(const char *path, const char *const *roots)
{
	const char *root = root_of(path, roots);
	return root && strcmp(root, path) != 0;
}

static const struct output *find_output(const struct result *r, enum output_kind kind,
                                        const char *path)
{
	for (size_t i = 0; i < r->noutputs; i++)
		if (r->outputs[i].kind == kind && !strcmp(r->outputs[i].path, path))
			return &r->outputs[i];
	return NULL;
}

static int is_entry_symlink(const struct result *r, const char *path)
{
	return find_output(r, OUT_SYMLINK, path) != NULL;
}

/* Where a symlink's target leads, as the kernel will resolve it once the
 * entry is restored: ".." pops a component only while no component walked
 * so far is a symlink (the entry's own, or one on disk), because after a
 * symlink ".." climbs from wherever the symlink led ("d -> ." makes
 * "d/../x" the parent's x, not "x"). malloc'd; NULL when it climbs above
 * "/" or through a symlink, which the caller refuses. */
static char *symlink_destination(const struct result *r, const char *link, const char *target)
{
	char *dir = path_dirname(link);
	char *joined = target[0] == '/' ? xstrdup(target) : xasprintf("%s/%s", dir, target);
	/* The link's own directory is walked without symlinks by the
	 * restore: only what the target adds to it can cross one. */
	size_t trusted = target[0] == '/' ? 0 : strlen(dir);
	free(dir);
	struct buf out;
	buf_init(&out);
	int bad = 0, crossed = 0;
	for (const char *c = joined; *c && !bad;) {
		while (*c == '/')
			c++;
		const char *slash = strchr(c, '/');
		size_t n = slash ? (size_t)(slash - c) : strlen(c);
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			char *last = out.data ? strrchr(out.data, '/') : NULL;
			if (!last || crossed)
				bad = 1;
			else
				out.len = (size_t)(last - out.data), out.data[out.len] = '\0';
		} else if (n > 0 && !(n == 1 && c[0] == '.')) {
			buf_addch(&out, '/');
			buf_add(&out, c, n);
			struct stat st;
			if ((size_t)(c - joined) >= trusted &&
			    (is_entry_symlink(r, out.data) ||
			     (lstat(out.data, &st) == 0 && S_ISLNK(st.st_mode))))
				crossed = 1;
		}
		c += n;
	}
	free(joined);
	if (bad) {
		buf_free(&out);
		return NULL;
	}
	if (!out.len)
		buf_addch(&out, '/');
	return buf_detach(&out, NULL);
}

static int refuse(struct error *e, const char *path, const char *why)
{
	error_set(e, "refused output %s: %s", path, why);
	if (e)
		e->code = EPERM;
	return -1;
}

/* The checks made before anything is written. Every entry: no output
 * beneath a symlink the entry creates (restoring it would mean following
 * that symlink). With checked_targets (an entry from a remote, or from a
 * cache others can write): every output a clean path strictly beneath a
 * root, and every symlink's target leading inside the roots. */
static int check_outputs(const struct result *r, const char *const *roots, int checked_targets,
                         struct error *e)
{
	for (size_t i = 0; i < r->noutputs; i++) {
		const struct output *o = &r->outputs[i];
		if (checked_targets && !clean_absolute(o->path))
			return refuse(e, o->path, "not a clean absolute path");
		if (!beneath_a_root(o->path, roots))
			return refuse(e, o->path, "outside the output roots");
		if (o->kind == OUT_HARDLINK && !find_output(r, OUT_FILE, o->target))
			return refuse(e, o->path, "a hard link to no file of the entry");
		if ((o->kind == OUT_XATTR || o->kind == OUT_OWNER) &&
		    !find_output(r, OUT_FILE, o->path) && !find_output(r, OUT_DIR, o->path))
			return refuse(e, o->path, "an attribute of no output of the entry");
		if (o->kind == OUT_XATTR && (!o->target || strncmp(o->target, "user.", 5) != 0))
			return refuse(e, o->path, "an extended attribute outside user.*");
		if (o->kind != OUT_SYMLINK)
			continue;
		if (!o->target || !o->target[0])
			return refuse(e, o->path, "empty symlink target");
		if (checked_targets) {
			char *dest = symlink_destination(r, o->path, o->target);
			int inside = dest && root_of(dest, roots);
			free(dest);
			if (!inside)
				return refuse(e, o->path,
				              "symlink target outside the output roots");
		}
		for (size_t j = 0; j < r->noutputs; j++)
			if (j != i && path_is_under(r->outputs[j].path, o->path) &&
			    strcmp(r->outputs[j].path, o->path) != 0)
				return refuse(e, r->outputs[j].path,
				              "beneath a symlink of the entry");
	}
	return 0;
}

/* ---- the transaction: every change kept until all are made ---- */

/* What undoes one change. The previous entry at a replaced or deleted
 * path is kept under a temporary name beside it until the commit. */
enum undo_kind {
	UNDO_REMOVE = 1, /* a file or symlink placed where nothing was */
	UNDO_RMDIR,      /* a directory created */
	UNDO_PUT_BACK,   /* the previous entry waits under aside */
	UNDO_ATTRS,      /* an entry left in place whose mode (and times) were set */
};

struct undo {
	uint8_t kind;
	char *dir;  /* the parent directory, reopened beneath its root */
	char *name; /* in dir */
	char *aside;
	mode_t mode;
	struct timespec times[2];
};

/* Directories kept open for the transaction, at most this many: an entry
 * with more directories reopens the rest as it needs them. */
#define TXN_MAX_OPEN_DIRS 256

struct txn {
	const struct result *r;
	struct store *s;
	const char *const *roots;
	mode_t mode_mask;
	struct digest_cache *seen; /* digests this process took: dc->seen, or NULL */
	struct strmap dirs;        /* directory path -> (void *)(intptr_t)(O_PATH fd + 1) */
	struct undo *undo;
	size_t nundo, alloc;
};

static struct undo *txn_note(struct txn *t, enum undo_kind kind, const char *dir, const char *name)
{
	ARRAY_RESERVE(t->undo, t->alloc, t->nundo + 1, 16);
	struct undo *u = &t->undo[t->nundo++];
	memset(u, 0, sizeof *u);
	u->kind = (uint8_t)kind;
	u->dir = xstrdup(dir);
	u->name = xstrdup(name);
	return u;
}

static const char SYMLINK_ON_THE_WAY[] = "a component on its way is a symlink or not a directory";

static int open_beneath(int rootfd, const char *rel)
{
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	                       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	/* Beneath "/" is everywhere: an absolute path from no descriptor
	 * spares opening "/" (the usual case of a local hit). */
	if (rootfd != AT_FDCWD)
		how.resolve |= RESOLVE_BENEATH;
	return (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof how);
}

/* Opens dir (equal to or beneath a root) without following any symlink
 * below its root: with openat2 in one call, else one component at a time
 * with O_NOFOLLOW. With create, missing directories are made (and noted
 * for the rollback); without, a missing one returns -2. A symlink or a
 * non-directory on the way refuses (-1, EPERM). */
static int walk_to(struct txn *t, int rootfd, const char *dir, const char *rel, int create,
                   struct error *e)
{
	int fd = *rel ? open_beneath(rootfd, rel) : fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
	if (fd >= 0)
		return fd;
	if (errno == ELOOP || errno == ENOTDIR || errno == EXDEV)
		return refuse(e, dir, SYMLINK_ON_THE_WAY);
	if (errno != ENOENT && errno != ENOSYS && errno != EPERM && errno != EINVAL)
		return error_errno(e, "cannot open directory %s", dir);
	if (errno == ENOENT && !create)
		return -2;
	fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
	size_t root_len = strlen(dir) - strlen(rel);
	for (const char *c = rel; fd >= 0 && *c;) {
		const char *slash = strchr(c, '/');
		size_t n = slash ? (size_t)(slash - c) : strlen(c);
		char *comp = xstrndup(c, n);
		int next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create) {
			char *made = xstrndup(dir, root_len + (size_t)(c - rel) + n);
			char *parent = path_dirname(made);
			if (mkdirat(fd, comp, 0777) == 0)
				txn_note(t, UNDO_RMDIR, parent, comp);
			else if (errno != EEXIST)
				error_errno(e, "cannot create directory %s", made);
			free(parent);
			free(made);
			next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		int err = errno;
		free(comp);
		close(fd);
		fd = next;
		if (fd < 0 && err == ENOENT && !create)
			return -2;
		if (fd < 0) {
			if (err == ELOOP || err == ENOTDIR)
				return refuse(e, dir, SYMLINK_ON_THE_WAY);
			if (!e || !e->msg[0]) {
				errno = err;
				error_errno(e, "cannot open directory %s", dir);
			}
			return -1;
		}
		c += n;
		while (*c == '/')
			c++;
	}
	if (fd < 0)
		return error_errno(e, "cannot open directory %s", dir);
	return fd;
}

/* A descriptor of dir, walked to beneath its root (see walk_to). *owned
 * says whether the caller closes it (the transaction keeps the others). */
static int txn_dir(struct txn *t, const char *dir, int create, int *owned, struct error *e)
{
	*owned = 0;
	intptr_t cached = (intptr_t)strmap_get(&t->dirs, dir);
	if (cached)
		return (int)cached - 1;
	const char *root = root_of(dir, t->roots);
	if (!root)
		return refuse(e, dir, "outside the output roots");
	if (!strcmp(root, "/") && strcmp(dir, "/") != 0) {
		int fd = open_beneath(AT_FDCWD, dir);
		if (fd >= 0) {
			if (t->dirs.count < TXN_MAX_OPEN_DIRS)
				strmap_put(&t->dirs, dir, (void *)(intptr_t)(fd + 1));
			else
				*owned = 1;
			return fd;
		}
		/* Else walked from a descriptor of "/", as any root. */
	}
	intptr_t rootfd = (intptr_t)strmap_get(&t->dirs, root) - 1;
	if (rootfd < 0) {
		rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rootfd < 0)
			return error_errno(e, "cannot open output root %s", root);
		strmap_put(&t->dirs, root, (void *)(rootfd + 1));
		if (!strcmp(root, dir))
			return (int)rootfd;
	}
	const char *rel = dir + strlen(root);
	while (*rel == '/')
		rel++;
	int fd = walk_to(t, (int)rootfd, dir, rel, create, e);
	if (fd < 0)
		return fd;
	if (t->dirs.count < TXN_MAX_OPEN_DIRS)
		strmap_put(&t->dirs, dir, (void *)(intptr_t)(fd + 1));
	else
		*owned = 1;
	return fd;
}

/* Renames dirfd/name aside to a fresh temporary name: malloc'd, or NULL. */
static int rename_noreplace(int dirfd, const char *name, void *from)
{
	return renameat2(dirfd, (const char *)from, dirfd, name, RENAME_NOREPLACE);
}

static char *move_aside(int dirfd, const char *name)
{
	return make_under_temp_name(dirfd, ".", rename_noreplace, (void *)name);
}

/* Puts tmp (in dirfd) at name: exchanged with what is there, which then
 * waits under tmp for the commit, or moved where nothing was. */
static int put_in_place(struct txn *t, int dirfd, const char *dir, const char *name, char *tmp,
                        int exists)
{
	if (exists && renameat2(dirfd, tmp, dirfd, name, RENAME_EXCHANGE) == 0) {
		txn_note(t, UNDO_PUT_BACK, dir, name)->aside = tmp;
		return 0;
	}
	if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) == 0) {
		txn_note(t, UNDO_REMOVE, dir, name);
		free(tmp);
		return 0;
	}
	int err = errno;
	unlinkat(dirfd, tmp, 0);
	free(tmp);
	errno = err;
	return -1;
}

static int remove_at(int parent, const char *name)
{
	if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rc = remove_at(dirfd(d), de->d_name);
	closedir(d);
	if (rc == 0 && unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = -1;
	return rc;
}

/* ---- the changes ---- */

static int txn_delete(struct txn *t, int dirfd, const char *dir, const char *name,
                      const struct output *o, struct error *e)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : error_errno(e, "%s", o->path);
	char *aside = move_aside(dirfd, name);
	if (!aside)
		return error_errno(e, "cannot remove %s", o->path);
	txn_note(t, UNDO_PUT_BACK, dir, name)->aside = aside;
	return 0;
}

static int set_dir_mode(int dirfd, const char *name, mode_t mode, const struct output *o,
                        struct error *e)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return error_errno(e, "cannot create directory %s", o->path);
	int rc = fchmod(fd, mode) < 0 ? error_errno(e, "%s", o->path) : 0;
	close(fd);
	return rc;
}

static int txn_dir_output(struct txn *t, int dirfd, const char *dir, const char *name,
                          const struct output *o, struct error *e)
{
	mode_t mode = o->mode & t->mode_mask;
	if (mkdirat(dirfd, name, 0700) == 0) {
		txn_note(t, UNDO_RMDIR, dir, name);
		return set_dir_mode(dirfd, name, mode, o, e);
	}
	struct stat st;
	if (errno != EEXIST || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(st.st_mode))
		return error_errno(e, "cannot create directory %s", o->path);
	if ((st.st_mode & 07777) == mode)
		return 0;
	struct undo *u = txn_note(t, UNDO_ATTRS, dir, name);
	u->mode = st.st_mode & 07777;
	u->times[0].tv_nsec = u->times[1].tv_nsec = UTIME_OMIT;
	return set_dir_mode(dirfd, name, mode, o, e);
}

/* Is the file at name (fstat'ed as *st) already what restoring o would
 * leave there? Then only its mode and times are set, as a restore would set
 * them: a rerun after a touch of an input (make, ninja) finds its outputs
 * unchanged, and rewriting one costs a temporary, a copy and a rename.
 * Only for compressed blobs, whose restore reads and decompresses all of the
 * content anyway; a raw blob is cloned or copied for less than hashing the
 * file costs. Only a file of ours with one name: another name for the same
 * inode would see its times change. 1 when done, 0 to restore as usual. */
static int restore_in_place(struct txn *t, int dirfd, const char *dir, const char *name,
                            const struct output *o, const struct stat *st)
{
	mode_t mode = o->mode & t->mode_mask;
	if (o->blob.form != BLOB_ZSTD || !S_ISREG(st->st_mode) ||
	    (uint64_t)st->st_size != o->blob.size || st->st_uid != geteuid() || st->st_nlink != 1)
		return 0;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat before, after;
	struct digest d;
	struct timespec ts[2];
	struct file_id id;
	int same =
	    fstat(fd, &before) == 0 && before.st_ino == st->st_ino && before.st_dev == st->st_dev;
	if (same)
		file_id_from_stat(&before, &id);
	/* Hashed by this hit's lookup (the entry's created-path value) with
	 * the id it has now; else hashed here, unchanged while it was (same
	 * inode, size and times), or a writer may have been halfway through. */
	if (same && t->seen && t->seen->seen(t->seen->ctx, o->path, &id, &d) == 1)
		same = digest_equal(&d, &o->blob.digest);
	else
		same = same && digest_fd(fd, &d, NULL, NULL) == 0 &&
		       digest_equal(&d, &o->blob.digest) && fstat(fd, &after) == 0 &&
		       file_id_stat_equal(&before, &after);
	if (same) {
		struct undo *u = txn_note(t, UNDO_ATTRS, dir, name);
		u->mode = before.st_mode & 07777;
		u->times[0] = before.st_atim;
		u->times[1] = before.st_mtim;
	}
	if (same && (before.st_mode & 07777) != mode && fchmod(fd, mode) < 0)
		same = 0;
	if (same && futimens(fd, restored_times(o, ts)) < 0)
		same = 0;
	close(fd);
	return same;
}

static int txn_file(struct txn *t, int dirfd, const char *dir, const char *name,
                    const struct output *o, struct error *e)
{
	struct stat st;
	int exists = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (exists && restore_in_place(t, dirfd, dir, name, o, &st))
		return 0;
	struct out_temp tmp;
	if (write_temp(o, o->mode & t->mode_mask, t->s, dirfd, ".", &tmp, e) < 0)
		return -1;
	if (put_in_place(t, dirfd, dir, name, tmp.name, exists && !S_ISDIR(st.st_mode)) < 0)
		return error_errno(e, "cannot put %s in place", o->path);
	return 0;
}

static int txn_symlink(struct txn *t, int dirfd, const char *dir, const char *name,
                       const struct output *o, struct error *e)
{
	struct stat st;
	int exists = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode);
	char *tmp = make_under_temp_name(dirfd, ".", make_symlink, (void *)o->target);
	if (!tmp)
		return error_errno(e, "cannot create symlink %s", o->path);
	if (put_in_place(t, dirfd, dir, name, tmp, exists) < 0)
		return error_errno(e, "cannot put symlink %s in place", o->path);
	return 0;
}

struct link_source {
	int dirfd;
	const char *name;
};

static int make_hardlink(int dirfd, const char *name, void *source)
{
	const struct link_source *src = source;
	return linkat(src->dirfd, src->name, dirfd, name, 0);
}

/* Another name of a file the entry placed: a link to it, under a temporary
 * name, then put in place. */
static int txn_hardlink(struct txn *t, int dirfd, const char *dir, const char *name,
                        const struct output *o, struct error *e)
{
	char *first_dir = path_dirname(o->target);
	int owned;
	struct link_source src = {txn_dir(t, first_dir, 0, &owned, e), path_basename(o->target)};
	free(first_dir);
	if (src.dirfd < 0)
		return src.dirfd == -2 ? error_set(e, "%s: its first name is gone", o->path) : -1;
	struct stat st;
	int exists = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode);
	char *tmp = make_under_temp_name(dirfd, ".", make_hardlink, &src);
	int rc = 0;
	if (!tmp)
		rc = error_errno(e, "cannot link %s to %s", o->path, o->target);
	else if (put_in_place(t, dirfd, dir, name, tmp, exists) < 0)
		rc = error_errno(e, "cannot put %s in place", o->path);
	if (owned)
		close(src.dirfd);
	return rc;
}

/* An extended attribute or the owner of an output the entry placed.
 * Where the output was left in place (same content), the change is not
 * undone by a rollback: it is what the entry's run left there. */
static int txn_attribute(struct txn *t, int dirfd, const char *name, const struct output *o,
                         struct error *e)
{
	if (o->kind == OUT_OWNER && t->mode_mask != 07777)
		return 0; /* another's word: files stay the restorer's own */
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return error_errno(e, "%s", o->path);
	int rc = 0;
	if (o->kind == OUT_XATTR && fsetxattr(fd, o->target, o->value, o->value_len, 0) < 0) {
		rc = error_errno(e, "cannot set %s of %s", o->target, o->path);
	} else if (o->kind == OUT_OWNER && fchown(fd, o->uid, o->gid) < 0) {
		/* Not a refusal: this user cannot give another the file. */
		rc = error_set(e, "cannot give %s to %u:%u: %s", o->path, o->uid, o->gid,
		               strerror(errno));
	} else if (o->kind == OUT_OWNER) {
		/* chown clears setuid and setgid: the mode again, after it. */
		const struct output *f = find_output(t->r, OUT_FILE, o->path);
		if (!f)
			f = find_output(t->r, OUT_DIR, o->path);
		if (f && fchmod(fd, f->mode & t->mode_mask) < 0)
			rc = error_errno(e, "%s", o->path);
	}
	close(fd);
	return rc;
}

static int txn_output(struct txn *t, const struct output *o, struct error *e)
{
	char *dir = path_dirname(o->path);
	const char *name = path_basename(o->path);
	int owned;
	int dirfd = txn_dir(t, dir, o->kind != OUT_DELETE, &owned, e);
	int rc = dirfd == -2 ? 0 : -1; /* a deletion beneath a directory that is not there */
	if (dirfd >= 0) {
		switch (o->kind) {
		case OUT_DELETE:
			rc = txn_delete(t, dirfd, dir, name, o, e);
			break;
		case OUT_DIR:
			rc = txn_dir_output(t, dirfd, dir, name, o, e);
			break;
		case OUT_FILE:
			rc = txn_file(t, dirfd, dir, name, o, e);
			break;
		case OUT_HARDLINK:
			rc = txn_hardlink(t, dirfd, dir, name, o, e);
			break;
		case OUT_XATTR:
		case OUT_OWNER:
			rc = txn_attribute(t, dirfd, name, o, e);
			break;
		default:
			rc = txn_symlink(t, dirfd, dir, name, o, e);
			break;
		}
		if (owned)
			close(dirfd);
	}
	free(dir);
	return rc;
}

/* Undoes (rollback) or keeps (commit) every change, the last first, and
 * frees the transaction. Undoing is best effort: a step that fails leaves
 * the rest to be undone. */
static void txn_end(struct txn *t, int commit)
{
	for (size_t i = t->nundo; i-- > 0;) {
		struct undo *u = &t->undo[i];
		int owned = 0;
		int dirfd =
		    commit && u->kind != UNDO_PUT_BACK ? -1 : txn_dir(t, u->dir, 0, &owned, NULL);
		if (dirfd >= 0 && commit) {
			remove_at(dirfd, u->aside);
		} else if (dirfd >= 0) {
			switch (u->kind) {
			case UNDO_REMOVE:
				unlinkat(dirfd, u->name, 0);
				break;
			case UNDO_RMDIR:
				unlinkat(dirfd, u->name, AT_REMOVEDIR);
				break;
			case UNDO_PUT_BACK:
				renameat(dirfd, u->aside, dirfd, u->name);
				break;
			default: {
				int fd = openat(dirfd, u->name,
				                O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
				if (fd >= 0) {
					fchmod(fd, u->mode);
					futimens(fd, u->times);
					close(fd);
				}
			}
			}
		}
		if (dirfd >= 0 && owned)
			close(dirfd);
		free(u->dir);
		free(u->name);
		free(u->aside);
	}
	free(t->undo);
	for (size_t i = 0; i < t->dirs.cap; i++)
		if (t->dirs.slots[i].key)
			close((int)(intptr_t)t->dirs.slots[i].value - 1);
	strmap_free(&t->dirs);
}

static int cmp_output_path(const void *a, const void *b)
{
	return strcmp((*(const struct output *const *)a)->path,
	              (*(const struct output *const *)b)->path);
}

/* The one restore: checks, then every change in order, then the commit;
 * at the first failure everything done is undone. */
static int restore_outputs(const struct result *r, struct store *s, const char *const *roots,
                           int untrusted, struct digest_cache *seen, struct error *e)
{
	if (check_outputs(r, roots, untrusted, e) < 0)
		return -1;
	struct txn t = {.r = r,
	                .s = s,
	                .roots = roots,
	                .mode_mask = untrusted ? 0777 : 07777,
	                .seen = seen && seen->seen ? seen : NULL};
	strmap_init(&t.dirs);
	const struct output **sorted = xmalloc((r->noutputs + 1) * sizeof *sorted);
	for (size_t i = 0; i < r->noutputs; i++)
		sorted[i] = &r->outputs[i];
	qsort(sorted, r->noutputs, sizeof *sorted, cmp_output_path);
	int rc = 0;
	/* Deletions first (deepest first), so that a path removed and another
	 * created beneath a new directory of the same name cannot collide. */
	for (size_t i = r->noutputs; rc == 0 && i-- > 0;)
		if (sorted[i]->kind == OUT_DELETE)
			rc = txn_output(&t, sorted[i], e);
	/* Directories (parents first), files, their other names, attributes,
	 * and the entry's symlinks last: an entry's own links must not
	 * redirect its other writes. */
	static const uint8_t order[] = {OUT_DIR,   OUT_FILE,  OUT_HARDLINK,
	                                OUT_XATTR, OUT_OWNER, OUT_SYMLINK};
	for (size_t k = 0; k < sizeof order; k++)
		for (size_t i = 0; rc == 0 && i < r->noutputs; i++)
			if (sorted[i]->kind == order[k])
				rc = txn_output(&t, sorted[i], e);
	free(sorted);
	txn_end(&t, rc == 0);
	return rc;
}

int result_restore_seen(const struct result *r, struct store *s, struct digest_cache *seen,
                        struct error *e)
{
	static const char *const everywhere[] = {"/", NULL};
	return restore_outputs(r, s, everywhere, 0, seen, e);
}

int result_restore(const struct result *r, struct store *s, struct error *e)
{
	return result_restore_seen(r, s, NULL, e);
}

int result_restore_beneath(const struct result *r, struct store *s, const char *const *roots,
                           struct error *e)
{
	return restore_outputs(r, s, roots, 1, NULL, e);
}
