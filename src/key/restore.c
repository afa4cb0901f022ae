#include "cachet/outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/path.h"

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

static char *temp_name_beside(const char *path)
{
	char *dir = path_dirname(path);
	char *tmpl = xasprintf("%s/.cachet-XXXXXX", dir);
	free(dir);
	return tmpl;
}

static int restore_file(const struct output *o, struct store *s, struct error *e)
{
	if (ensure_parent(o->path, e) < 0)
		return -1;
	char *tmp = temp_name_beside(o->path);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		error_errno(e, "cannot create a temporary file beside %s", o->path);
		free(tmp);
		return -1;
	}
	if (store_blob_write_to_fd(s, &o->blob, fd, e) < 0)
		goto fail;
	if (fchmod(fd, o->mode) < 0) {
		error_errno(e, "%s", o->path);
		goto fail;
	}
	if (o->has_mtime) {
		struct timespec ts[2];
		ts[0].tv_sec = ts[1].tv_sec = o->mtime_ns / 1000000000;
		ts[0].tv_nsec = ts[1].tv_nsec = o->mtime_ns % 1000000000;
		if (futimens(fd, ts) < 0) {
			error_errno(e, "%s", o->path);
			goto fail;
		}
	}
	if (close(fd) < 0) {
		fd = -1;
		error_errno(e, "%s", o->path);
		goto fail;
	}
	fd = -1;
	if (rename(tmp, o->path) < 0) {
		error_errno(e, "cannot put %s in place", o->path);
		goto fail;
	}
	free(tmp);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return -1;
}

static int restore_symlink(const struct output *o, struct error *e)
{
	if (ensure_parent(o->path, e) < 0)
		return -1;
	char *dir = path_dirname(o->path);
	for (int attempt = 0; attempt < 100; attempt++) {
		char *tmp = xasprintf("%s/.cachet-link-%d-%d", dir, (int)getpid(), attempt);
		if (symlink(o->target, tmp) < 0) {
			free(tmp);
			if (errno == EEXIST)
				continue;
			free(dir);
			return error_errno(e, "cannot create symlink %s", o->path);
		}
		int rc = rename(tmp, o->path);
		if (rc < 0) {
			error_errno(e, "cannot put symlink %s in place", o->path);
			unlink(tmp);
		}
		free(tmp);
		free(dir);
		return rc < 0 ? -1 : 0;
	}
	free(dir);
	return error_set(e, "cannot create a temporary symlink beside %s", o->path);
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
