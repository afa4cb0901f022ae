/*
 * Paths inside the cache, opened beneath its root without following
 * symlinks.
 *
 * A cache shared by a group (umask 002) lets every member rename and create
 * entries in its directories: one member can replace tmp/, memo/, blobs/xx
 * or index.db by a symlink to another member's directory or file. Opened by
 * path, the victim's eviction, gc or clear would then unlink files there,
 * and its chmod would widen a private file. Every open, unlink and rename
 * here resolves from a descriptor of the cache root with openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS (or, on kernels before 5.6, one
 * component at a time with O_NOFOLLOW), so a symlink on the way fails with
 * ELOOP instead of leading elsewhere. The root itself is what the user
 * configured, symlinks included.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "store/store_internal.h"

int store_root_open(struct store *s)
{
	s->root_fd = open(s->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return s->root_fd < 0 ? -1 : 0;
}

const char *store_rel(const struct store *s, const char *path)
{
	size_t n = strlen(s->dir);
	if (strncmp(path, s->dir, n) != 0)
		return NULL;
	if (path[n] == '\0')
		return ".";
	return path[n] == '/' ? path + n + 1 : NULL;
}

/* Kernels before 5.6: each directory on the way opened with O_NOFOLLOW. */
static int open_by_components(int root, const char *rel, int flags, mode_t mode)
{
	char *copy = xstrdup(rel);
	int dir = dup(root);
	char *part = copy;
	for (char *slash; dir >= 0 && (slash = strchr(part, '/')); part = slash + 1) {
		*slash = '\0';
		if (!*part || !strcmp(part, "."))
			continue;
		int next = strcmp(part, "..")
		               ? openat(dir, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
		               : (errno = EXDEV, -1);
		int err = errno;
		close(dir);
		errno = err;
		dir = next;
	}
	int fd = -1;
	if (dir >= 0) {
		fd = strcmp(part, "..") ? openat(dir, *part ? part : ".", flags | O_NOFOLLOW, mode)
		                        : (errno = EXDEV, -1);
		int err = errno;
		close(dir);
		errno = err;
	}
	free(copy);
	return fd;
}

int store_openat(const struct store *s, const char *path, int flags, mode_t mode)
{
	const char *rel = store_rel(s, path);
	if (!rel || s->root_fd < 0) {
		errno = EXDEV;
		return -1;
	}
	flags |= O_CLOEXEC;
	/* O_PATH with O_NOFOLLOW would open a final symlink itself. */
	if (!(flags & O_PATH))
		flags |= O_NOFOLLOW;
	static int no_openat2;
	if (!no_openat2) {
		struct open_how how = {
		    .flags = (uint64_t)flags,
		    .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		int fd = (int)syscall(SYS_openat2, s->root_fd, rel, &how, sizeof how);
		if (fd >= 0 || errno != ENOSYS)
			return fd;
		no_openat2 = 1;
	}
	return open_by_components(s->root_fd, rel, flags, mode);
}

int store_parent(const struct store *s, const char *path, const char **leaf)
{
	const char *slash = strrchr(path, '/');
	if (!slash || !store_rel(s, path) || !slash[1] || !strcmp(slash + 1, "..") ||
	    !strcmp(slash + 1, ".")) {
		errno = EXDEV;
		return -1;
	}
	*leaf = slash + 1;
	char *dir = xstrndup(path, (size_t)(slash - path));
	int fd = store_openat(s, dir, O_PATH | O_DIRECTORY, 0);
	free(dir);
	return fd;
}

int store_unlink(const struct store *s, const char *path)
{
	const char *leaf;
	int dir = store_parent(s, path, &leaf);
	if (dir < 0)
		return -1;
	int rc = unlinkat(dir, leaf, 0);
	int err = errno;
	close(dir);
	errno = err;
	return rc;
}

int store_rename(const struct store *s, const char *from, const char *to, unsigned flags)
{
	const char *from_leaf, *to_leaf;
	int from_dir = store_parent(s, from, &from_leaf);
	if (from_dir < 0)
		return -1;
	int to_dir = store_parent(s, to, &to_leaf);
	int rc = -1;
	if (to_dir >= 0)
		rc = flags ? renameat2(from_dir, from_leaf, to_dir, to_leaf, flags)
		           : renameat(from_dir, from_leaf, to_dir, to_leaf);
	int err = errno;
	close(from_dir);
	if (to_dir >= 0)
		close(to_dir);
	errno = err;
	return rc;
}

DIR *store_opendir(const struct store *s, const char *path)
{
	int fd = store_openat(s, path, O_RDONLY | O_DIRECTORY, 0);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0)
		close(fd);
	return d;
}

int store_mkdir(const struct store *s, const char *path)
{
	const char *leaf;
	const char *rel = store_rel(s, path);
	/* A directory of the root itself (blobs/ and tmp/, made or found at
	 * every open, a hit's included): made through the root's descriptor,
	 * which is that directory, not through one opened for the purpose. */
	int in_root = rel && s->root_fd >= 0 && *rel && !strchr(rel, '/') && strcmp(rel, ".") &&
	              strcmp(rel, "..");
	int parent = in_root ? s->root_fd : store_parent(s, path, &leaf);
	if (parent < 0)
		return -1;
	if (in_root)
		leaf = rel;
	int rc = mkdirat(parent, leaf, s->dir_mode);
	int err = errno;
	/* The process umask must not narrow a shared cache's modes, and the
	 * setgid bit the directory inherits from a group cache's root must
	 * stay: without it, another member's files in it take that member's
	 * primary group and the rest of the group can no longer store there. */
	if (rc == 0 && s->shared) {
		int fd = openat(parent, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0)
			fchmod(fd, s->dir_mode | (st.st_mode & S_ISGID));
		if (fd >= 0)
			close(fd);
	}
	if (!in_root)
		close(parent);
	errno = err;
	return rc;
}

int store_replace(const struct store *s, const char *tmp, const char *path, int may_exist)
{
	/* As replace_file (util/replace.c), with both names beneath the root. */
	if (may_exist && store_rename(s, tmp, path, RENAME_EXCHANGE) == 0) {
		if (store_unlink(s, tmp) == 0 || errno == ENOENT)
			return 0;
		store_rename(s, tmp, path, RENAME_EXCHANGE);
	}
	return store_rename(s, tmp, path, 0);
}

int store_mkstemp(const struct store *s, char *tmpl)
{
	/* mkostemp opens by path: the same, beneath the root. */
	size_t len = strlen(tmpl);
	if (len < 6 || strcmp(tmpl + len - 6, "XXXXXX") != 0) {
		errno = EINVAL;
		return -1;
	}
	static const char chars[] =
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	for (int attempt = 0; attempt < 100; attempt++) {
		unsigned char r[6];
		if (getentropy(r, sizeof r) < 0)
			return -1;
		for (int i = 0; i < 6; i++)
			tmpl[len - 6 + i] = chars[r[i] % (sizeof chars - 1)];
		int fd = store_openat(s, tmpl, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}
