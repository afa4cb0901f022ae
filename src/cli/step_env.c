#include "cli/step_env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cachet/strv.h"
#include "cli/settings.h"

extern char **environ;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* Best effort, never following a symlink. */
static void remove_tree(const char *path)
{
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#define TMPDIR_PREFIX "cachet-step-"
/* A directory nobody holds locked is still left alone this long after its
 * last change: its cachet may be between mkdtemp and flock, or older than
 * the lock. */
#define TMPDIR_ABANDONED_AFTER_S 3600

static const char *tmpdir_base(void)
{
	const char *base = getenv("TMPDIR");
	if (!base || !*base || access(base, W_OK) < 0)
		base = "/tmp";
	return base;
}

/* Directories a user's pool may hold: as many as steps it runs at once. */
#define TMPDIR_POOL 64

/* 1 when the directory open as fd has no entries. */
static int dir_is_empty(int fd)
{
	int dup_fd = dup(fd);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return 0;
	}
	int empty = 1;
	for (struct dirent *de; empty && (de = readdir(d));)
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
	closedir(d);
	return empty;
}

/* Takes directory n of this user's pool under base, making it if it is
 * not there: 1 when t holds it, 0 when it is not to be had (in use,
 * another's, not empty), -1 when no pooled directory can be made here. A
 * name anyone can guess, in a directory anyone can write: what is there is
 * used only when it is a directory of this user's, not a symlink, empty,
 * and still the one at that name once locked (a sweep may remove it
 * between the open and the lock). */
static int take_pooled(const char *base, unsigned n, struct step_tmpdir *t)
{
	uid_t me = geteuid();
	char *path = xasprintf("%s/" TMPDIR_PREFIX "%u-%u", base, (unsigned)me, n);
	int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	int fd = open(path, flags);
	if (fd < 0 && errno == ENOENT && (mkdir(path, 0700) == 0 || errno == EEXIST))
		fd = open(path, flags);
	if (fd < 0) {
		int made = errno == ELOOP || errno == ENOTDIR;
		free(path);
		return made ? 0 : -1;
	}
	struct stat st, now;
	int ok = fstat(fd, &st) == 0 && st.st_uid == me;
	if (ok && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		/* Without locks (a file system with no flock) nothing says
		 * which directory is in use. */
		int in_use = errno == EWOULDBLOCK;
		close(fd);
		free(path);
		return in_use ? 0 : -1;
	}
	ok = ok && lstat(path, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino &&
	     dir_is_empty(fd);
	/* A step may have opened its directory to others: empty, it is
	 * made private again before the next step can use it. */
	if (ok && (st.st_mode & 07777) != 0700)
		ok = fchmod(fd, 0700) == 0;
	char *real = ok ? realpath(path, NULL) : NULL;
	free(path);
	if (!real) {
		close(fd);
		return 0;
	}
	t->path = real;
	t->lock_fd = fd;
	t->pooled = 1;
	return 1;
}

/* A directory of its own for the step, of a random name. */
static int make_own(const char *base, struct step_tmpdir *t)
{
	char *tmpl = xasprintf("%s/" TMPDIR_PREFIX "XXXXXX", base);
	if (!mkdtemp(tmpl)) {
		free(tmpl);
		return -1;
	}
	/* The step's writes under it are not recorded; a canonical path makes
	 * sure the tracer's resolved paths match it. */
	t->path = realpath(tmpl, NULL);
	if (!t->path) {
		int err = errno;
		rmdir(tmpl);
		free(tmpl);
		errno = err;
		return -1;
	}
	free(tmpl);
	/* Held until the directory is removed, or by the kernel until this
	 * process ends however it ends: a SIGKILL leaves the directory, and
	 * the lock tells a later sweep that nobody uses it any more. The step
	 * does not inherit it (close-on-exec). Without it (a file system with
	 * no flock) the directory is simply never swept. */
	t->lock_fd = open(t->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->lock_fd >= 0 && flock(t->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		close(t->lock_fd);
		t->lock_fd = -1;
	}
	return 0;
}

int step_tmpdir_create(struct step_tmpdir *t)
{
	t->path = NULL;
	t->lock_fd = -1;
	t->pooled = 0;
	const char *base = tmpdir_base();
	for (unsigned n = 0; n < TMPDIR_POOL; n++) {
		int taken = take_pooled(base, n, t);
		if (taken != 0) {
			if (taken > 0)
				return 0;
			break;
		}
	}
	return make_own(base, t);
}

/* Removes what is under the pooled directory at path, never following a
 * symlink; a symlink or file the step left in its place is removed. */
static void empty_pooled(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		remove_tree(path);
		return;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	for (struct dirent *de; (de = readdir(d));) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *entry = xasprintf("%s/%s", path, de->d_name);
		remove_tree(entry);
		free(entry);
	}
	closedir(d);
}

/* Lets the directory go: its lock and its path, nothing on disk. */
static void tmpdir_release(struct step_tmpdir *t)
{
	if (t->lock_fd >= 0)
		close(t->lock_fd);
	free(t->path);
	t->path = NULL;
	t->lock_fd = -1;
	t->pooled = 0;
}

int step_tmpdir_release_if_empty(struct step_tmpdir *t)
{
	if (!t->pooled || !t->path)
		return 0;
	int fd = open(t->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int empty = dir_is_empty(fd);
	close(fd);
	if (empty)
		tmpdir_release(t);
	return empty;
}

void step_tmpdir_remove(struct step_tmpdir *t)
{
	if (!t->path)
		return;
	if (t->pooled)
		empty_pooled(t->path);
	else
		remove_tree(t->path);
	tmpdir_release(t);
}

size_t step_tmpdir_sweep(int dry_run)
{
	const char *base = tmpdir_base();
	DIR *d = opendir(base);
	if (!d)
		return 0;
	time_t old = time(NULL) - TMPDIR_ABANDONED_AFTER_S;
	uid_t me = geteuid();
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, TMPDIR_PREFIX, strlen(TMPDIR_PREFIX)) != 0)
			continue;
		int fd =
		    openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct stat st;
		/* Taking the lock is what says its cachet is gone; closing
		 * the descriptor lets it go again. */
		if (fstat(fd, &st) == 0 && st.st_uid == me && st.st_mtime < old &&
		    flock(fd, LOCK_EX | LOCK_NB) == 0) {
			if (!dry_run) {
				char *path = xasprintf("%s/%s", base, de->d_name);
				remove_tree(path);
				free(path);
			}
			n++;
		}
		close(fd);
	}
	closedir(d);
	return n;
}

/* The caller's environment as it is, but for TMPDIR: a step must see what
 * it would see without cachet (Python's bytecode cache, which trusts
 * mtimes, is dealt with where reads are recorded, not by moving it). */
char **step_environment(const char *tmpdir)
{
	size_t n = strv_len(environ);
	char **env = xmalloc((n + 2) * sizeof *env);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "TMPDIR=", 7))
			continue;
		env[k++] = xstrdup(environ[i]);
	}
	env[k++] = xasprintf("TMPDIR=%s", tmpdir);
	env[k] = NULL;
	return env;
}

char **step_ignore_roots(const struct settings *settings, const char *tmpdir, const char *cache_dir)
{
	char **user = settings ? settings_list(settings, "ignore_paths") : NULL;
	size_t n = strv_len(user);
	char **roots = xmalloc((n + 3) * sizeof *roots);
	size_t k = 0;
	roots[k++] = xstrdup(tmpdir);
	roots[k++] = xstrdup(cache_dir);
	for (size_t i = 0; i < n; i++)
		roots[k++] = user[i];
	roots[k] = NULL;
	free(user);
	return roots;
}
