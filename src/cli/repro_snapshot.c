#include "cli/repro_snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/array.h"
#include "cachet/buf.h"
#include "cachet/fdio.h"
#include "cachet/path.h"
#include "cachet/strmap.h"

struct snap_entry {
	char *path;
	enum snapshot_kind kind;
	unsigned mode; /* permission bits */
	struct timespec mtime;
	char *copy;      /* SNAP_FILE, or a directory saved with its tree */
	char *target;    /* SNAP_SYMLINK */
	size_t seq;      /* order of the first save */
	size_t tree_seq; /* a directory's tree: when it was saved; 0 = not */
	unsigned depth;  /* number of components */
};

struct snapshot {
	char *dir;
	struct snap_entry *entries;
	size_t n, alloc;
	struct strmap index; /* path -> entry number + 1 */
	size_t seq;
	size_t ncopies; /* names of the copies in dir */
};

struct snapshot *snapshot_new(const char *dir)
{
	struct snapshot *s = xcalloc(1, sizeof *s);
	s->dir = xstrdup(dir);
	strmap_init(&s->index);
	return s;
}

void snapshot_free(struct snapshot *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->entries[i].path);
		free(s->entries[i].copy);
		free(s->entries[i].target);
	}
	free(s->entries);
	strmap_free(&s->index);
	free(s->dir);
	free(s);
}

size_t snapshot_count(const struct snapshot *s)
{
	return s->n;
}

const char *snapshot_path(const struct snapshot *s, size_t i)
{
	return s->entries[i].path;
}

enum snapshot_kind snapshot_kind(const struct snapshot *s, size_t i)
{
	return s->entries[i].kind;
}

/* ---- copying and removing ---- */

static int set_times(int at, const char *name, const struct stat *st, int nofollow)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};
	return utimensat(at, name, ts, nofollow ? AT_SYMLINK_NOFOLLOW : 0);
}

static int set_fd_times(int fd, const struct stat *st)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};
	return futimens(fd, ts);
}

static int copy_file(const char *from, const char *to, const struct stat *st, struct error *e)
{
	int in = open(from, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return error_errno(e, "cannot read %s", from);
	int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return error_errno(e, "cannot create %s", to);
	}
	uint64_t copied;
	int rc = copy_fd_data(in, out, &copied);
	if (rc < 0)
		error_errno(e, "cannot copy %s to %s", from, to);
	else if (fchmod(out, st->st_mode & 07777) < 0 || set_fd_times(out, st) < 0)
		rc = error_errno(e, "cannot set the mode or times of %s", to);
	close(in);
	if (close(out) < 0 && rc == 0)
		rc = error_errno(e, "cannot write %s", to);
	return rc;
}

static int copy_dir(const char *from, const char *to, const struct stat *st, int recursive,
                    struct error *e)
{
	/* Writable while it is filled, its own mode at the end: a read-only
	 * directory still gets its entries. */
	if (mkdir(to, 0700) < 0)
		return error_errno(e, "cannot create %s", to);
	if (recursive) {
		DIR *d = opendir(from);
		if (!d)
			return error_errno(e, "cannot list %s", from);
		struct dirent *de;
		int rc = 0;
		while (rc == 0 && (errno = 0, de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			char *f = xasprintf("%s/%s", from, de->d_name);
			char *t = xasprintf("%s/%s", to, de->d_name);
			rc = snapshot_copy(f, t, 1, e);
			free(f);
			free(t);
		}
		if (rc == 0 && errno)
			rc = error_errno(e, "cannot list %s", from);
		closedir(d);
		if (rc < 0)
			return -1;
	}
	if (chmod(to, st->st_mode & 07777) < 0 || set_times(AT_FDCWD, to, st, 0) < 0)
		return error_errno(e, "cannot set the mode or times of %s", to);
	return 0;
}

int snapshot_copy(const char *from, const char *to, int recursive, struct error *e)
{
	struct stat st;
	if (lstat(from, &st) < 0)
		return error_errno(e, "cannot inspect %s", from);
	if (S_ISREG(st.st_mode))
		return copy_file(from, to, &st, e);
	if (S_ISDIR(st.st_mode))
		return copy_dir(from, to, &st, recursive, e);
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(from, target, sizeof target - 1);
		if (n < 0)
			return error_errno(e, "cannot read the symlink %s", from);
		target[n] = '\0';
		if (symlink(target, to) < 0)
			return error_errno(e, "cannot create the symlink %s", to);
		set_times(AT_FDCWD, to, &st, 1);
		return 0;
	}
	if (S_ISFIFO(st.st_mode)) {
		if (mkfifo(to, st.st_mode & 07777) < 0)
			return error_errno(e, "cannot create the FIFO %s", to);
		return 0;
	}
	return error_set(e, "%s is a socket or device: cannot copy it", from);
}

static int remove_at(int at, const char *name, const char *shown, struct error *e)
{
	struct stat st;
	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return error_errno(e, "cannot inspect %s", shown);
	}
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(at, name, 0) < 0 && errno != ENOENT)
			return error_errno(e, "cannot remove %s", shown);
		return 0;
	}
	/* A read-only directory (0555, as some build steps leave them) cannot
	 * lose its entries otherwise. */
	if ((st.st_mode & 0700) != 0700)
		fchmodat(at, name, 0700, 0);
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return error_errno(e, "cannot open %s", shown);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return error_errno(e, "cannot list %s", shown);
	}
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *sub = xasprintf("%s/%s", shown, de->d_name);
		rc = remove_at(fd, de->d_name, sub, e);
		free(sub);
	}
	closedir(d);
	if (rc < 0)
		return -1;
	if (unlinkat(at, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return error_errno(e, "cannot remove %s", shown);
	return 0;
}

int snapshot_remove(const char *path, struct error *e)
{
	return remove_at(AT_FDCWD, path, path, e);
}

/* ---- saving ---- */

static unsigned depth_of(const char *path)
{
	unsigned d = 0;
	for (const char *p = path; *p; p++)
		d += *p == '/';
	return d;
}

static char *new_copy_name(struct snapshot *s)
{
	return xasprintf("%s/%zu", s->dir, s->ncopies++);
}

static int save_tree(struct snapshot *s, struct snap_entry *en, struct error *e)
{
	char *copy = new_copy_name(s);
	if (snapshot_copy(en->path, copy, 1, e) < 0) {
		snapshot_remove(copy, NULL);
		free(copy);
		return -1;
	}
	free(en->copy);
	en->copy = copy;
	en->tree_seq = ++s->seq;
	return 1;
}

int snapshot_save(struct snapshot *s, const char *path, unsigned flags, struct error *e)
{
	size_t idx = (size_t)(uintptr_t)strmap_get(&s->index, path);
	if (idx) {
		struct snap_entry *en = &s->entries[idx - 1];
		if ((flags & SNAPSHOT_TREE) && en->kind == SNAP_DIR && !en->tree_seq) {
			struct stat st;
			if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
				return save_tree(s, en, e);
		}
		return 0;
	}
	struct snap_entry en;
	memset(&en, 0, sizeof en);
	struct stat st;
	if (lstat(path, &st) < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			return error_errno(e, "cannot inspect %s", path);
		en.kind = SNAP_ABSENT;
	} else {
		en.mode = st.st_mode & 07777;
		en.mtime = st.st_mtim;
		if (S_ISREG(st.st_mode)) {
			en.kind = SNAP_FILE;
			en.copy = new_copy_name(s);
			if (copy_file(path, en.copy, &st, e) < 0) {
				unlink(en.copy);
				free(en.copy);
				return -1;
			}
		} else if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n = readlink(path, target, sizeof target - 1);
			if (n < 0)
				return error_errno(e, "cannot read the symlink %s", path);
			target[n] = '\0';
			en.kind = SNAP_SYMLINK;
			en.target = xstrdup(target);
		} else if (S_ISDIR(st.st_mode)) {
			en.kind = SNAP_DIR;
		} else if (S_ISFIFO(st.st_mode)) {
			en.kind = SNAP_FIFO;
		} else {
			return error_set(e, "%s is a socket or device: cannot save it", path);
		}
	}
	en.path = xstrdup(path);
	en.seq = ++s->seq;
	en.depth = depth_of(path);
	ARRAY_RESERVE(s->entries, s->alloc, s->n + 1, 64);
	s->entries[s->n++] = en;
	strmap_put(&s->index, path, (void *)(uintptr_t)s->n);
	if ((flags & SNAPSHOT_TREE) && en.kind == SNAP_DIR &&
	    save_tree(s, &s->entries[s->n - 1], e) < 0)
		return -1;
	return 1;
}

/* ---- restoring ---- */

static int covers(const struct snap_entry *a, size_t seq)
{
	if (a->kind == SNAP_ABSENT)
		return a->seq < seq;
	return a->tree_seq && a->tree_seq < seq;
}

int snapshot_is_covered(const struct snapshot *s, size_t i)
{
	const struct snap_entry *en = &s->entries[i];
	char *p = xstrdup(en->path);
	int covered = 0;
	for (char *slash = strrchr(p, '/'); slash && slash > p && !covered;
	     slash = strrchr(p, '/')) {
		*slash = '\0';
		size_t idx = (size_t)(uintptr_t)strmap_get(&s->index, p);
		covered = idx && covers(&s->entries[idx - 1], en->seq);
	}
	free(p);
	return covered;
}

static int restore_entry(const struct snap_entry *en, struct error *e)
{
	struct stat st;
	int exists = lstat(en->path, &st) == 0;
	switch (en->kind) {
	case SNAP_ABSENT:
		return snapshot_remove(en->path, e);
	case SNAP_DIR:
		if (en->tree_seq)
			break;
		if (exists && S_ISDIR(st.st_mode)) {
			if ((st.st_mode & 07777) != en->mode && chmod(en->path, en->mode) < 0)
				return error_errno(e, "cannot restore the mode of %s", en->path);
			return 0;
		}
		if (snapshot_remove(en->path, e) < 0)
			return -1;
		if (mkdir(en->path, 0700) < 0 || chmod(en->path, en->mode) < 0)
			return error_errno(e, "cannot restore the directory %s", en->path);
		return 0;
	case SNAP_FIFO:
		if (exists && S_ISFIFO(st.st_mode))
			return 0;
		if (snapshot_remove(en->path, e) < 0)
			return -1;
		if (mkfifo(en->path, en->mode) < 0)
			return error_errno(e, "cannot restore the FIFO %s", en->path);
		return 0;
	case SNAP_SYMLINK:
		if (snapshot_remove(en->path, e) < 0)
			return -1;
		if (symlink(en->target, en->path) < 0)
			return error_errno(e, "cannot restore the symlink %s", en->path);
		return 0;
	case SNAP_FILE:
		break;
	}
	/* A file, or a directory with its tree: replace whatever is there. */
	if (snapshot_remove(en->path, e) < 0)
		return -1;
	return snapshot_copy(en->copy, en->path, 1, e);
}

static int by_depth(const void *a, const void *b)
{
	const struct snap_entry *x = *(const struct snap_entry *const *)a;
	const struct snap_entry *y = *(const struct snap_entry *const *)b;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return strcmp(x->path, y->path);
}

int snapshot_restore(struct snapshot *s, struct error *e)
{
	struct snap_entry **order = xmalloc((s->n ? s->n : 1) * sizeof *order);
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++)
		if (!snapshot_is_covered(s, i))
			order[k++] = &s->entries[i];
	qsort(order, k, sizeof *order, by_depth);
	int rc = 0;
	for (size_t i = 0; i < k && rc == 0; i++)
		rc = restore_entry(order[i], e);
	/* Restoring the entries below a directory changed its mtime: set the
	 * saved ones last, children first. */
	for (size_t i = k; i-- > 0 && rc == 0;) {
		const struct snap_entry *en = order[i];
		if (en->kind != SNAP_DIR && en->kind != SNAP_FIFO)
			continue;
		struct timespec ts[2] = {{0, UTIME_OMIT}, en->mtime};
		if (utimensat(AT_FDCWD, en->path, ts, AT_SYMLINK_NOFOLLOW) < 0)
			rc = error_errno(e, "cannot restore the times of %s", en->path);
	}
	free(order);
	return rc;
}
