/*
 * The upload spool: <state_dir>/spool/<ms>-<pid>-<n>.job, one file per
 * entry to upload, written to a temporary name and renamed, so a drainer
 * never reads half a job. The blobs stay in the local store; a job names
 * them by digest. One drainer at a time holds <state_dir>/spool/.lock
 * (flock: released by the kernel when a drainer dies).
 *
 * Job: u32 magic "CRJB", u32 version, W[32], pathset[32], S[32],
 * bytes pathset body, bytes result body, u32 n, n x (digest[32], u64 size).
 */
#include "cachet/remote.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cachet/array.h"
#include "cachet/fdio.h"

#define JOB_MAGIC     0x424a5243u /* "CRJB" */
#define JOB_VERSION   1u
#define JOB_MAX_BYTES (256u << 20)

void spool_job_init(struct spool_job *j)
{
	memset(j, 0, sizeof *j);
	buf_init(&j->pathset_body);
	buf_init(&j->result_body);
}

void spool_job_free(struct spool_job *j)
{
	buf_free(&j->pathset_body);
	buf_free(&j->result_body);
	free(j->blobs);
	free(j->sizes);
	memset(j, 0, sizeof *j);
}

static char *spool_dir(const char *state_dir)
{
	return xasprintf("%s/spool", state_dir);
}

static int ensure_dirs(const char *state_dir, struct error *e)
{
	if (mkdir(state_dir, 0700) < 0 && errno != EEXIST)
		return error_errno(e, "cannot create %s", state_dir);
	char *dir = spool_dir(state_dir);
	int rc =
	    mkdir(dir, 0700) < 0 && errno != EEXIST ? error_errno(e, "cannot create %s", dir) : 0;
	free(dir);
	return rc;
}

int spool_write(const char *state_dir, const struct spool_job *j, struct error *e)
{
	if (ensure_dirs(state_dir, e) < 0)
		return -1;
	struct buf b;
	buf_init(&b);
	buf_put_u32(&b, JOB_MAGIC);
	buf_put_u32(&b, JOB_VERSION);
	buf_add(&b, j->weak.b, DIGEST_LEN);
	buf_add(&b, j->pathset.b, DIGEST_LEN);
	buf_add(&b, j->strong.b, DIGEST_LEN);
	buf_put_bytes(&b, j->pathset_body.data, j->pathset_body.len);
	buf_put_bytes(&b, j->result_body.data, j->result_body.len);
	buf_put_u32(&b, (uint32_t)j->nblobs);
	for (size_t i = 0; i < j->nblobs; i++) {
		buf_add(&b, j->blobs[i].b, DIGEST_LEN);
		buf_put_u64(&b, j->sizes[i]);
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char *dir = spool_dir(state_dir);
	/* Names sort by time, so the oldest job goes first. */
	char *name = xasprintf("%s/%013lld-%d-%ld.job", dir,
	                       (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, (int)getpid(),
	                       (long)(ts.tv_nsec % 100000));
	char *tmp = xasprintf("%s/.tmp-%d-%ld", dir, (int)getpid(), (long)ts.tv_nsec);
	int rc = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = error_errno(e, "cannot create %s", tmp);
	} else {
		if (write_all(fd, b.data, b.len) < 0)
			rc = error_errno(e, "cannot write %s", tmp);
		if (close(fd) < 0 && rc == 0)
			rc = error_errno(e, "cannot write %s", tmp);
		if (rc == 0 && rename(tmp, name) < 0)
			rc = error_errno(e, "cannot rename %s", tmp);
		if (rc < 0)
			unlink(tmp);
	}
	free(tmp);
	free(name);
	free(dir);
	buf_free(&b);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int spool_list(const char *state_dir, char ***paths, size_t *n, struct error *e)
{
	*paths = NULL;
	*n = 0;
	char *dir = spool_dir(state_dir);
	DIR *d = opendir(dir);
	if (!d) {
		int rc = errno == ENOENT ? 0 : error_errno(e, "cannot list %s", dir);
		free(dir);
		return rc;
	}
	size_t alloc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len < 5 || strcmp(de->d_name + len - 4, ".job") != 0)
			continue;
		ARRAY_RESERVE(*paths, alloc, *n + 1, 16);
		(*paths)[(*n)++] = xasprintf("%s/%s", dir, de->d_name);
	}
	closedir(d);
	free(dir);
	if (*n)
		qsort(*paths, *n, sizeof **paths, cmp_str);
	return 0;
}

void spool_list_free(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

int spool_read(const char *path, struct spool_job *j, struct error *e)
{
	spool_job_init(j);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return error_errno(e, "cannot read %s", path);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > JOB_MAX_BYTES) {
		close(fd);
		return error_set(e, "%s: not a spool job", path);
	}
	size_t len = (size_t)st.st_size;
	char *data = xmalloc(len ? len : 1);
	ssize_t n = read_full(fd, data, len);
	size_t got = n < 0 ? 0 : (size_t)n;
	close(fd);
	struct reader r;
	reader_init(&r, data, got);
	int ok = got == len && reader_u32(&r) == JOB_MAGIC && reader_u32(&r) == JOB_VERSION;
	reader_raw(&r, j->weak.b, DIGEST_LEN);
	reader_raw(&r, j->pathset.b, DIGEST_LEN);
	reader_raw(&r, j->strong.b, DIGEST_LEN);
	size_t plen = 0, rlen = 0;
	const void *p = reader_bytes(&r, &plen);
	const void *res = reader_bytes(&r, &rlen);
	uint32_t nb = reader_u32(&r);
	ok = ok && p && res && !r.failed && nb <= r.left / (DIGEST_LEN + 8);
	if (ok) {
		buf_add(&j->pathset_body, p, plen);
		buf_add(&j->result_body, res, rlen);
		j->blobs = xcalloc(nb ? nb : 1, sizeof *j->blobs);
		j->sizes = xcalloc(nb ? nb : 1, sizeof *j->sizes);
		for (uint32_t i = 0; i < nb; i++) {
			reader_raw(&r, j->blobs[i].b, DIGEST_LEN);
			j->sizes[i] = reader_u64(&r);
		}
		j->nblobs = nb;
		ok = !r.failed && r.left == 0;
	}
	free(data);
	if (!ok) {
		spool_job_free(j);
		spool_job_init(j);
		return error_set(e, "%s: corrupt spool job", path);
	}
	return 0;
}

int spool_lock(const char *state_dir, int wait)
{
	struct error e = {0};
	if (ensure_dirs(state_dir, &e) < 0)
		return -1;
	char *path = xasprintf("%s/spool/.lock", state_dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	free(path);
	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0) {
		if (errno == EINTR)
			continue;
		close(fd);
		return -1;
	}
	return fd;
}

void spool_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* closing the only descriptor releases the flock */
}
