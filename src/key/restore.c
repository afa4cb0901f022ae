#include "cachet/outputs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/path.h"
#include "cachet/replace.h"
#include "cachet/unnamed.h"

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	int rc = flag == FTW_DP ? rmdir(path) : unlink(path);
	return rc < 0 && errno != ENOENT ? -1 : 0;
}

static int restore_delete(const struct output *o, struct error *e)
{
	struct stat st;
	if (lstat(o->path, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : error_errno(e, "%s", o->path);
	if (S_ISDIR(st.st_mode)) {
		if (nftw(o->path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
			return error_errno(e, "cannot remove %s", o->path);
		return 0;
	}
	if (unlink(o->path) < 0 && errno != ENOENT)
		return error_errno(e, "cannot remove %s", o->path);
	return 0;
}

static int ensure_parent(const char *path, struct error *e)
{
	char *dir = path_dirname(path);
	int rc = path_mkdirs(dir, 0777);
	if (rc < 0)
		error_errno(e, "cannot create directory %s", dir);
	free(dir);
	return rc;
}

static int restore_dir(const struct output *o, struct error *e)
{
	if (ensure_parent(o->path, e) < 0)
		return -1;
	if (mkdir(o->path, o->mode) == 0)
		return chmod(o->path, o->mode) < 0 ? error_errno(e, "%s", o->path) : 0;
	struct stat st;
	if (errno != EEXIST || lstat(o->path, &st) < 0 || !S_ISDIR(st.st_mode))
		return error_errno(e, "cannot create directory %s", o->path);
	if ((st.st_mode & 07777) != o->mode && chmod(o->path, o->mode) < 0)
		return error_errno(e, "%s", o->path);
	return 0;
}

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
		char *name = xasprintf("%s/.cachet-%d-%d-%ld", dir, (int)getpid(), attempt, random());
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
	*(int *)fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
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

/* Is the file at o->path (lstat'ed as *st) already what restoring o would
 * leave there? Then only its mode and times are set, as a restore would set
 * them: a rerun after a touch of an input (make, ninja) finds its outputs
 * unchanged, and rewriting one costs a temporary, a copy and a rename.
 * Only for compressed blobs, whose restore reads and decompresses all of the
 * content anyway; a raw blob is cloned or copied for less than hashing the
 * file costs. Only a file of ours with one name: another name for the same
 * inode would see its times change. 1 when done, 0 to restore as usual. */
static int restore_in_place(const struct output *o, const struct stat *st)
{
	if (o->blob.form != BLOB_ZSTD || !S_ISREG(st->st_mode) ||
	    (uint64_t)st->st_size != o->blob.size || st->st_uid != geteuid() || st->st_nlink != 1)
		return 0;
	int fd = open(o->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat before, after;
	struct digest d;
	struct timespec ts[2];
	/* Unchanged while it was hashed (same inode, size and times), or a
	 * writer may have been halfway through. */
	int same = fstat(fd, &before) == 0 && before.st_ino == st->st_ino &&
		   before.st_dev == st->st_dev && digest_fd(fd, &d, NULL, NULL) == 0 &&
		   digest_equal(&d, &o->blob.digest) && fstat(fd, &after) == 0 &&
		   file_id_stat_equal(&before, &after);
	if (same && (before.st_mode & 07777) != o->mode && fchmod(fd, o->mode) < 0)
		same = 0;
	if (same && futimens(fd, restored_times(o, ts)) < 0)
		same = 0;
	close(fd);
	return same;
}

static int restore_file(const struct output *o, struct store *s, struct error *e)
{
	if (ensure_parent(o->path, e) < 0)
		return -1;
	struct stat st;
	int exists = lstat(o->path, &st) == 0;
	if (exists && restore_in_place(o, &st))
		return 0;
	exists = exists && !S_ISDIR(st.st_mode);
	char *dir = path_dirname(o->path);
	struct out_temp t;
	int rc = write_temp(o, o->mode, s, AT_FDCWD, dir, &t, e);
	free(dir);
	if (rc < 0)
		return -1;
	if (replace_file(t.name, o->path, exists) < 0) {
		rc = error_errno(e, "cannot put %s in place", o->path);
		unlink(t.name);
	}
	free(t.name);
	return rc;
}

/* A symlink to o->target, made under a temporary name in dir (relative to
 * dirfd) and renamed to name. */
static int symlink_in_place(int dirfd, const char *dir, const char *name, const struct output *o,
			    struct error *e)
{
	char *tmp = make_under_temp_name(dirfd, dir, make_symlink, (void *)o->target);
	if (!tmp)
		return error_errno(e, "cannot create symlink %s", o->path);
	int rc = 0;
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		rc = error_errno(e, "cannot put symlink %s in place", o->path);
		unlinkat(dirfd, tmp, 0);
	}
	free(tmp);
	return rc;
}

static int restore_symlink(const struct output *o, struct error *e)
{
	if (ensure_parent(o->path, e) < 0)
		return -1;
	char *dir = path_dirname(o->path);
	int rc = symlink_in_place(AT_FDCWD, dir, o->path, o, e);
	free(dir);
	return rc;
}

static int cmp_output_path(const void *a, const void *b)
{
	return strcmp((*(const struct output *const *)a)->path, (*(const struct output *const *)b)->path);
}

int result_restore(const struct result *r, struct store *s, struct error *e)
{
	const struct output **sorted = xmalloc((r->noutputs + 1) * sizeof *sorted);
	for (size_t i = 0; i < r->noutputs; i++)
		sorted[i] = &r->outputs[i];
	qsort(sorted, r->noutputs, sizeof *sorted, cmp_output_path);
	int rc = 0;
	/* Deletions first (deepest first), so that a path removed and another
	 * created beneath a new directory of the same name cannot collide. */
	for (size_t i = r->noutputs; rc == 0 && i-- > 0;)
		if (sorted[i]->kind == OUT_DELETE)
			rc = restore_delete(sorted[i], e);
	for (size_t i = 0; rc == 0 && i < r->noutputs; i++)
		if (sorted[i]->kind == OUT_DIR)
			rc = restore_dir(sorted[i], e);
	for (size_t i = 0; rc == 0 && i < r->noutputs; i++)
		if (sorted[i]->kind == OUT_FILE)
			rc = restore_file(sorted[i], s, e);
	/* Symlinks last: an entry's own links must not redirect its other writes. */
	for (size_t i = 0; rc == 0 && i < r->noutputs; i++)
		if (sorted[i]->kind == OUT_SYMLINK)
			rc = restore_symlink(sorted[i], e);
	free(sorted);
	return rc;
}

/* ---- restoring an entry from a remote: only beneath the output roots ---- */

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

/* The deepest root that path lies strictly beneath, or NULL. */
static const char *root_of(const char *path, const char *const *roots)
{
	const char *best = NULL;
	for (const char *const *r = roots; r && *r; r++) {
		if (!clean_absolute(*r) || strlen(path) <= strlen(*r) || !path_is_under(path, *r))
			continue;
		if (!best || strlen(*r) > strlen(best))
			best = *r;
	}
	return best;
}

/* Where a symlink's target leads, judged by text alone: ".." pops a
 * component (conservative: a real lookup could only be stopped earlier by
 * the O_NOFOLLOW walk of whoever follows it). malloc'd, NULL when it climbs
 * above "/". */
static char *symlink_destination(const char *link, const char *target)
{
	char *dir = path_dirname(link);
	char *joined = target[0] == '/' ? xstrdup(target) : xasprintf("%s/%s", dir, target);
	free(dir);
	struct buf out;
	buf_init(&out);
	int bad = 0;
	for (const char *c = joined; *c && !bad;) {
		while (*c == '/')
			c++;
		const char *slash = strchr(c, '/');
		size_t n = slash ? (size_t)(slash - c) : strlen(c);
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			char *last = strrchr(out.data, '/');
			if (!last)
				bad = 1;
			else
				out.len = (size_t)(last - out.data), out.data[out.len] = '\0';
		} else if (n > 0 && !(n == 1 && c[0] == '.')) {
			buf_addch(&out, '/');
			buf_add(&out, c, n);
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

static int is_root(const char *path, const char *const *roots)
{
	for (const char *const *r = roots; r && *r; r++)
		if (clean_absolute(*r) && !strcmp(path, *r))
			return 1;
	return 0;
}

static int refuse(struct error *e, const char *path, const char *why)
{
	error_set(e, "refused remote output %s: %s", path, why);
	e->code = EPERM;
	return -1;
}

static int check_outputs(const struct result *r, const char *const *roots, struct error *e)
{
	for (size_t i = 0; i < r->noutputs; i++) {
		const struct output *o = &r->outputs[i];
		if (!clean_absolute(o->path))
			return refuse(e, o->path, "not a clean absolute path");
		if (!root_of(o->path, roots))
			return refuse(e, o->path, "outside the output roots");
		if (o->kind == OUT_SYMLINK) {
			if (!o->target || !o->target[0])
				return refuse(e, o->path, "empty symlink target");
			char *dest = symlink_destination(o->path, o->target);
			int inside = dest && (root_of(dest, roots) || is_root(dest, roots));
			free(dest);
			if (!inside)
				return refuse(e, o->path, "symlink target outside the output roots");
			for (size_t j = 0; j < r->noutputs; j++)
				if (j != i && path_is_under(r->outputs[j].path, o->path) &&
				    strcmp(r->outputs[j].path, o->path) != 0)
					return refuse(e, r->outputs[j].path, "beneath a symlink of the entry");
		}
	}
	return 0;
}

/* Opens the parent directory of path, walking from its root one component
 * at a time with O_NOFOLLOW. With create, missing directories are made;
 * without, a missing one ends the walk (returns -2: nothing to check below).
 * An existing symlink or non-directory on the way refuses (-1, EPERM). */
static int open_parent(const char *path, const char *const *roots, int create, const char **name,
		       struct error *e)
{
	const char *root = root_of(path, roots);
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return error_errno(e, "cannot open output root %s", root);
	const char *c = path + strlen(root) + 1;
	for (;;) {
		const char *slash = strchr(c, '/');
		if (!slash) {
			*name = c;
			return fd;
		}
		char *comp = xstrndup(c, (size_t)(slash - c));
		int next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT) {
			if (!create) {
				free(comp);
				close(fd);
				return -2;
			}
			if (mkdirat(fd, comp, 0777) < 0 && errno != EEXIST) {
				error_errno(e, "cannot create directory %.*s", (int)(slash - path), path);
				free(comp);
				close(fd);
				return -1;
			}
			next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		free(comp);
		struct stat st;
		if (next < 0 || fstat(next, &st) < 0 || !S_ISDIR(st.st_mode)) {
			int err = errno;
			if (next >= 0)
				close(next);
			close(fd);
			if (next < 0 && err != ENOTDIR && err != ELOOP)
				return error_errno(e, "%.*s", (int)(slash - path), path);
			return refuse(e, path, "a component on its way is a symlink or not a directory");
		}
		close(fd);
		fd = next;
		c = slash + 1;
	}
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

static int beneath_delete(int dirfd, const char *name, const struct output *o, struct error *e)
{
	return remove_at(dirfd, name) < 0 ? error_errno(e, "cannot remove %s", o->path) : 0;
}

static int beneath_dir(int dirfd, const char *name, const struct output *o, struct error *e)
{
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return error_errno(e, "cannot create directory %s", o->path);
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return error_errno(e, "cannot create directory %s", o->path);
	int rc = fchmod(fd, o->mode & 0777) < 0 ? error_errno(e, "%s", o->path) : 0;
	close(fd);
	return rc;
}

static int beneath_file(int dirfd, const char *name, const struct output *o, struct store *s,
			struct error *e)
{
	struct out_temp t;
	if (write_temp(o, o->mode & 0777, s, dirfd, ".", &t, e) < 0)
		return -1;
	int rc = 0;
	if (renameat(dirfd, t.name, dirfd, name) < 0) {
		rc = error_errno(e, "cannot put %s in place", o->path);
		unlinkat(dirfd, t.name, 0);
	}
	free(t.name);
	return rc;
}

static int beneath_symlink(int dirfd, const char *name, const struct output *o, struct error *e)
{
	return symlink_in_place(dirfd, ".", name, o, e);
}

static int restore_one_beneath(const struct output *o, struct store *s, const char *const *roots,
			       struct error *e)
{
	const char *name;
	int dirfd = open_parent(o->path, roots, o->kind != OUT_DELETE, &name, e);
	if (dirfd == -2)
		return 0; /* a deletion beneath a directory that is not there */
	if (dirfd < 0)
		return -1;
	int rc;
	switch (o->kind) {
	case OUT_DELETE: rc = beneath_delete(dirfd, name, o, e); break;
	case OUT_DIR: rc = beneath_dir(dirfd, name, o, e); break;
	case OUT_FILE: rc = beneath_file(dirfd, name, o, s, e); break;
	default: rc = beneath_symlink(dirfd, name, o, e); break;
	}
	close(dirfd);
	return rc;
}

int result_restore_beneath(const struct result *r, struct store *s, const char *const *roots,
			   struct error *e)
{
	if (check_outputs(r, roots, e) < 0)
		return -1;
	/* Walk every existing prefix first: a symlink or file in the way
	 * refuses the entry before anything is written. */
	for (size_t i = 0; i < r->noutputs; i++) {
		const char *name;
		int fd = open_parent(r->outputs[i].path, roots, 0, &name, e);
		if (fd == -1)
			return -1;
		if (fd >= 0)
			close(fd);
	}
	const struct output **sorted = xmalloc((r->noutputs + 1) * sizeof *sorted);
	for (size_t i = 0; i < r->noutputs; i++)
		sorted[i] = &r->outputs[i];
	qsort(sorted, r->noutputs, sizeof *sorted, cmp_output_path);
	int rc = 0;
	for (size_t i = r->noutputs; rc == 0 && i-- > 0;)
		if (sorted[i]->kind == OUT_DELETE)
			rc = restore_one_beneath(sorted[i], s, roots, e);
	/* Directories (parents first), files, and the entry's symlinks last. */
	static const uint8_t order[] = { OUT_DIR, OUT_FILE, OUT_SYMLINK };
	for (size_t k = 0; k < sizeof order; k++)
		for (size_t i = 0; rc == 0 && i < r->noutputs; i++)
			if (sorted[i]->kind == order[k])
				rc = restore_one_beneath(sorted[i], s, roots, e);
	free(sorted);
	return rc;
}
