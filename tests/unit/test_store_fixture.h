/*
 * Shared helpers for the store tests: a scratch directory per test, files
 * with given content, and checks on what is on disk. Included (not linked)
 * by tests/unit/test_store_*.c.
 */
#ifndef CACHET_TEST_STORE_FIXTURE_H
#define CACHET_TEST_STORE_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cachet/buf.h"
#include "cachet/digest.h"
#include "cachet/store.h"

/* Not every test file uses every helper. */
#define FIXTURE static __attribute__((unused))

static char scratch_dir[256];

FIXTURE int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) < 0 && errno != ENOENT ? -1 : 0;
	return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
}

FIXTURE void rm_rf(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

FIXTURE int scratch_setup(void **state)
{
	(void)state;
	const char *tmp = getenv("TMPDIR");
	snprintf(scratch_dir, sizeof scratch_dir, "%s/cachet-store-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(scratch_dir))
		return -1;
	return 0;
}

FIXTURE int scratch_teardown(void **state)
{
	(void)state;
	rm_rf(scratch_dir);
	return 0;
}

/* A malloc'd path under the scratch directory. */
FIXTURE char *scratch_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
FIXTURE char *scratch_path(const char *fmt, ...)
{
	char rel[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rel, sizeof rel, fmt, ap);
	va_end(ap);
	return xasprintf("%s/%s", scratch_dir, rel);
}

FIXTURE char *cache_dir(void)
{
	return scratch_path("cache");
}

FIXTURE struct store *open_cache(void)
{
	char *dir = cache_dir();
	struct store *s = NULL;
	struct error e = {0, ""};
	int rc = store_open(dir, 0, &s, &e);
	if (rc < 0)
		print_error("store_open: %s\n", e.msg);
	assert_int_equal(rc, 0);
	free(dir);
	return s;
}

FIXTURE void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	const char *p = data;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		assert_true(n > 0);
		p += n;
		len -= (size_t)n;
	}
	assert_int_equal(close(fd), 0);
}

/* Opens a new scratch file holding data, for reading. */
FIXTURE int content_fd(const char *name, const void *data, size_t len)
{
	char *path = scratch_path("%s", name);
	write_file(path, data, len);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	free(path);
	return fd;
}

FIXTURE void *random_bytes(size_t len)
{
	unsigned char *p = xmalloc(len);
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	size_t off = 0;
	while (off < len) {
		ssize_t n = read(fd, p + off, len - off);
		assert_true(n > 0);
		off += (size_t)n;
	}
	close(fd);
	return p;
}

/* Text that compresses well. */
FIXTURE char *text_bytes(size_t len)
{
	char *p = xmalloc(len + 64);
	size_t off = 0;
	for (unsigned i = 0; off < len; i++)
		off += (size_t)snprintf(p + off, 64, "line %u: the quick brown fox\n", i % 977);
	return p;
}

FIXTURE struct digest digest_of(const void *data, size_t len)
{
	struct digest d;
	digest_bytes(data, len, &d);
	return d;
}

/* A digest made from a small integer, for keys. */
FIXTURE struct digest key_digest(const char *kind, unsigned i)
{
	char text[64];
	snprintf(text, sizeof text, "%s-%u", kind, i);
	return digest_of(text, strlen(text));
}

FIXTURE int64_t counter_value(struct store *s, const char *name)
{
	struct store_counter *c;
	size_t n;
	struct error e;
	assert_int_equal(store_counters(s, &c, &n, &e), 0);
	int64_t v = 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(c[i].name, name) == 0)
			v = c[i].value;
	free(c);
	return v;
}

#endif
