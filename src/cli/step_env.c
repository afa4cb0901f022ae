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

int step_tmpdir_create(struct step_tmpdir *t)
{
	t->path = NULL;
	t->lock_fd = -1;
	char *tmpl = xasprintf("%s/" TMPDIR_PREFIX "XXXXXX", tmpdir_base());
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

void step_tmpdir_remove(struct step_tmpdir *t)
{
	if (!t->path)
		return;
	remove_tree(t->path);
	if (t->lock_fd >= 0)
		close(t->lock_fd);
	free(t->path);
	t->path = NULL;
	t->lock_fd = -1;
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
