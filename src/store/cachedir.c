/*
 * Marking a directory as a cache, and refusing one that is not.
 *
 * CACHET_DIR (or `dir`) set by mistake to a directory of the user's files
 * must not cost them: eviction and gc remove what looks abandoned. A cache
 * is marked when created with a CACHEDIR.TAG (the Cache Directory Tagging
 * Specification, https://bford.info/cachedir/, which backup tools honour
 * too); a directory without one is used only when it is empty, or when it
 * is a cache made by an older cachet (nothing in it but the names cachet
 * writes, and an index.db with cachet's schema), which is then tagged.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cachet/fdio.h"
#include "store/store_internal.h"

#define TAG_NAME      "CACHEDIR.TAG"
#define TAG_SIGNATURE "Signature: 8a477f597d28d172789f06886806bc55"
#define TAG_TEXT                                                                                   \
	TAG_SIGNATURE "\n"                                                                         \
	              "# This file is a cache directory tag created by cachet.\n"                  \
	              "# For information about cache directory tags, see:\n"                       \
	              "#\thttps://bford.info/cachedir/\n"

/* The names cachet (any version) writes at the root of a cache. */
static const char *const own_names[] = {
    "index.db",       "index.db-wal",
    "index.db-shm",   "index.db-journal",
    "index.db.check", "index.db.corrupt-*",
    "blobs",          "tmp",
    "memo",           "remote",
    "stats",          "steplog",
    "steplog.1",      "touches",
    "gc.stamp",       "evict.lock",
    "cachet.conf",    TAG_NAME,
    TAG_NAME ".*",
};

static int own_name(const char *name)
{
	for (size_t i = 0; i < sizeof own_names / sizeof own_names[0]; i++)
		if (fnmatch(own_names[i], name, 0) == 0)
			return 1;
	return 0;
}

static int has_tag(const struct store *s)
{
	int fd = openat(s->root_fd, TAG_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char head[sizeof TAG_SIGNATURE - 1];
	ssize_t n = read_full(fd, head, sizeof head);
	close(fd);
	return n == (ssize_t)sizeof head && memcmp(head, TAG_SIGNATURE, sizeof head) == 0;
}

/* Written under a private name and linked into place, so that a process
 * starting on the same new cache never reads a half-written tag. */
static int write_tag(const struct store *s)
{
	char tmp[64];
	snprintf(tmp, sizeof tmp, TAG_NAME ".%ld", (long)getpid());
	unlinkat(s->root_fd, tmp, 0);
	int fd = store_create_mode(s, openat(s->root_fd, tmp,
	                                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	                                     s->file_mode));
	if (fd < 0)
		return -1;
	int rc = write_all(fd, TAG_TEXT, strlen(TAG_TEXT));
	if (close(fd) < 0)
		rc = -1;
	if (rc == 0 && linkat(s->root_fd, tmp, s->root_fd, TAG_NAME, 0) < 0 && errno != EEXIST)
		rc = -1;
	int err = errno;
	unlinkat(s->root_fd, tmp, 0);
	errno = err;
	return rc;
}

/* cachet's tables in an index at user_version 1 or later. */
static int index_is_cachets(const struct store *s)
{
	sqlite3 *db = NULL;
	int ok = 0;
	if (sqlite3_open_v2(s->index_path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW,
	                    NULL) == SQLITE_OK) {
		sqlite3_stmt *st = NULL;
		if (sqlite3_prepare_v2(
		        db,
		        "SELECT (SELECT user_version FROM pragma_user_version) BETWEEN 1"
		        " AND ?1 AND (SELECT count(*) FROM sqlite_master WHERE type ="
		        " 'table' AND name IN ('steps', 'pathsets', 'results',"
		        " 'result_blobs', 'blobs', 'fingerprints')) = 6",
		        -1, &st, NULL) == SQLITE_OK) {
			sqlite3_bind_int(st, 1, STORE_SCHEMA_VERSION);
			ok = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return ok;
}

/* Nothing in the root but cachet's names (files left by a cachet that
 * predates the tag), and, unless the directory is all but empty, cachet's
 * own index. */
static int looks_like_old_cache(const struct store *s)
{
	int fd = openat(s->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	int foreign = 0, index = 0, other = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!own_name(de->d_name))
			foreign = 1;
		else if (!strcmp(de->d_name, "index.db"))
			index = 1;
		else if (strncmp(de->d_name, TAG_NAME, strlen(TAG_NAME)) != 0 &&
		         strcmp(de->d_name, "cachet.conf") != 0)
			other = 1;
	}
	closedir(d);
	if (foreign)
		return 0;
	/* A new cache that another process is creating (its tag comes
	 * first), or one whose settings were written before its first use. */
	if (!index && !other)
		return 1;
	return index && index_is_cachets(s);
}

int store_claim_dir(struct store *s, struct error *e)
{
	if (has_tag(s))
		return 0;
	/* A new cache's tag comes before anything else in it: what the
	 * listing found beside no tag may be a parallel cachet's blobs/ and
	 * tmp/, made just after its tag, between our look for the tag and
	 * the listing. Looked for once more, the tag is there. */
	if (!looks_like_old_cache(s)) {
		if (has_tag(s))
			return 0;
		return error_set(e,
		                 "%s is not empty and has no " TAG_NAME
		                 ": not a cachet cache (set CACHET_DIR or dir to a cache, or to"
		                 " an empty directory)",
		                 s->dir);
	}
	/* A read-only cache of an older cachet stays usable, untagged. */
	if (!s->readonly && write_tag(s) < 0 && errno != EACCES && errno != EPERM && errno != EROFS)
		return error_errno(e, "marking %s as a cache (" TAG_NAME ")", s->dir);
	return 0;
}

static int all_hex(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return 0;
	return 1;
}

int store_tmp_name(const char *name)
{
	static const char *const patterns[] = {"blob.*", "memo.*", "evict.*"};
	for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++)
		if (fnmatch(patterns[i], name, FNM_PERIOD) == 0)
			return 1;
	return 0;
}

int store_blob_dir_name(const char *name)
{
	return strlen(name) == 2 && all_hex(name, 2);
}

int store_digest_name(const char *name)
{
	size_t len = strlen(name);
	return len == DIGEST_HEX_LEN && all_hex(name, len);
}

int store_blob_name(const char *name)
{
	size_t len = strlen(name);
	if (len != DIGEST_HEX_LEN &&
	    (len != DIGEST_HEX_LEN + 4 || strcmp(name + DIGEST_HEX_LEN, ".zst")))
		return 0;
	return all_hex(name, DIGEST_HEX_LEN);
}
