/*
 * Memos: the last hit or store of a step, kept in one small file so that
 * the next identical run is answered without opening the index. Opening
 * SQLite (WAL, shared memory, locks, schema) and its fingerprint queries
 * were over a third of a hit.
 *
 * A memo is named by the caller (run.c: a digest of argv, cwd and program)
 * and holds the weak key, one path set with its digest, the strong key and
 * result body stored with it, and the fingerprints (file id -> content
 * digest) of the files that path set reads. The index stays the record:
 * a memo is a copy of rows, checked as they are (the path set against its
 * digest, the whole file against a CRC-32C trailer), and a hit through it
 * is the same computation as through the index (the strong key from the
 * current values). A memo that is missing, damaged or stale costs the
 * index lookup it would have saved, nothing more.
 *
 * Whatever would make an index row stale for the hit path drops every memo:
 * clearing, eviction, and marking a step nondeterministic. They are rare,
 * and the next hit of each step writes its memo again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cachet/crc32c.h"
#include "cachet/fdio.h"
#include "store/store_internal.h"

#define MEMO_DIR "memo"
/* Version 1 had a SHA-256 trailer: hashing the memo (40 KB for a small
 * compile) was a fifth of a hit's instructions. The trailer finds damage
 * (a file cut short or zero-filled by a crash), not a forger, who could
 * compute either: a CRC-32, as a zstd frame's checksum is 32 bits.
 * Version 3 has a CRC-32C: the same strength, but SSE4.2 computes it
 * (crc32c.h); zlib's CRC-32 over a compile's 43 KB memo was 4% of a hit.
 * A memo of another version is stale, not damaged (other_version). */
#define MEMO_MAGIC_STEM "cachet memo "
#define MEMO_MAGIC      MEMO_MAGIC_STEM "3\n"
#define MEMO_SUM_LEN    4
/* A memo is a path set and a result: far below this. */
#define MEMO_MAX_BYTES ((size_t)16 << 20)

static char *memo_dir(const struct store *s)
{
	return xasprintf("%s/" MEMO_DIR, s->dir);
}

static char *memo_path(const struct store *s, const struct digest *name)
{
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(name, hex);
	return xasprintf("%s/" MEMO_DIR "/%s", s->dir, hex);
}

static void put_digest(struct buf *b, const struct digest *d)
{
	buf_add(b, d->b, DIGEST_LEN);
}

static uint32_t memo_sum(const void *data, size_t len)
{
	return crc32c(0, data, len);
}

void store_memo_encode(const struct store_memo *m, struct buf *b)
{
	buf_add(b, MEMO_MAGIC, strlen(MEMO_MAGIC));
	put_digest(b, &m->weak);
	put_digest(b, &m->pathset);
	put_digest(b, &m->strong);
	buf_put_bytes(b, m->pathset_body, m->pathset_len);
	buf_put_bytes(b, m->result_body, m->result_len);
	buf_put_bytes(b, m->dirs, m->dirs_len);
	buf_put_u32(b, (uint32_t)m->nfps);
	for (size_t i = 0; i < m->nfps; i++) {
		const struct store_memo_fp *f = &m->fps[i];
		buf_put_str(b, f->path);
		file_id_encode(&f->id, b);
		put_digest(b, &f->digest);
	}
	buf_put_u32(b, memo_sum(b->data, b->len));
}

/* A part of the memo's image, which the memo keeps: not copied. */
static void *image_bytes(struct reader *r, size_t *len)
{
	return (void *)reader_bytes(r, len);
}

/* store_memo_decode of an image the memo takes (and frees) whatever the
 * outcome: its three bodies are parts of it, not copies (40 KB a hit
 * copied and faulted in for nothing). */
static int decode_image(unsigned char *data, size_t len, struct store_memo *m)
{
	memset(m, 0, sizeof *m);
	m->image = data;
	size_t magic = strlen(MEMO_MAGIC);
	if (len < magic + MEMO_SUM_LEN || memcmp(data, MEMO_MAGIC, magic) != 0)
		return -1;
	struct reader sum;
	reader_init(&sum, data + len - MEMO_SUM_LEN, MEMO_SUM_LEN);
	if (reader_u32(&sum) != memo_sum(data, len - MEMO_SUM_LEN))
		return -1;
	struct reader r;
	reader_init(&r, data + magic, len - magic - MEMO_SUM_LEN);
	reader_raw(&r, m->weak.b, DIGEST_LEN);
	reader_raw(&r, m->pathset.b, DIGEST_LEN);
	reader_raw(&r, m->strong.b, DIGEST_LEN);
	m->pathset_body = image_bytes(&r, &m->pathset_len);
	m->result_body = image_bytes(&r, &m->result_len);
	m->dirs = image_bytes(&r, &m->dirs_len);
	uint32_t n = reader_u32(&r);
	/* Each fingerprint takes at least 81 bytes: a count beyond what is
	 * left is damage, not a reason to allocate. */
	if (r.failed || n > r.left / 81)
		return -1;
	m->fps = xcalloc(n ? n : 1, sizeof *m->fps);
	/* The paths with their NULs take at most the bytes left and n. */
	char *at = m->fp_paths = xmalloc(r.left + n + 1);
	for (uint32_t i = 0; i < n && !r.failed; i++) {
		struct store_memo_fp *f = &m->fps[i];
		size_t plen;
		const char *p = reader_bytes(&r, &plen);
		if (!p || memchr(p, '\0', plen))
			return -1;
		memcpy(at, p, plen);
		at[plen] = '\0';
		f->path = at;
		at += plen + 1;
		file_id_decode(&r, &f->id);
		reader_raw(&r, f->digest.b, DIGEST_LEN);
		m->nfps = i + 1;
	}
	return r.failed || r.left != 0 || !m->pathset_body || !m->result_body || !m->dirs ? -1 : 0;
}

int store_memo_decode(const void *bytes, size_t len, struct store_memo *m)
{
	unsigned char *copy = xmalloc(len ? len : 1);
	memcpy(copy, bytes, len);
	return decode_image(copy, len, m);
}

static int other_version(const unsigned char *data, size_t len)
{
	size_t stem = strlen(MEMO_MAGIC_STEM), magic = strlen(MEMO_MAGIC);
	return len >= magic && memcmp(data, MEMO_MAGIC_STEM, stem) == 0 &&
	       memcmp(data, MEMO_MAGIC, magic) != 0;
}

/* The memo's bytes mapped read-only into *data: its length, or 0 when it
 * is to be read. Reading copied 40 KB into pages the process touched for
 * the first time (a fault each) for a hit that only reads them. A memo is
 * replaced by a rename, never changed in place, so the mapping cannot
 * shrink under the reader (which would end it with SIGBUS) unless another
 * user can write to the file (a shared cache's group-writable umask): that
 * one is read. */
static size_t memo_map(int fd, const struct stat *st, unsigned char **data)
{
	if (st->st_size <= 0 || st->st_uid != geteuid() || (st->st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	void *p = mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return 0;
	*data = p;
	return (size_t)st->st_size;
}

int store_memo_read(struct store *s, const struct digest *name, struct store_memo *out,
                    struct error *e)
{
	memset(out, 0, sizeof *out);
	/* There, hits are logged in the index itself (touches.c). */
	if (s->network_fs)
		return 0;
	char *path = memo_path(s, name);
	int fd = store_openat(s, path, O_RDONLY | O_NONBLOCK, 0);
	if (fd < 0) {
		int err = errno;
		if (err == ELOOP && !s->readonly)
			store_unlink(s, path); /* a symlink where a memo belongs */
		free(path);
		if (err == ENOENT)
			return 0;
		errno = err;
		return error_errno(e, "reading a memo");
	}
	struct stat st;
	unsigned char *data = NULL;
	size_t mapped = 0; /* data is a mapping of this length */
	int rc = -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > MEMO_MAX_BYTES) {
		error_set(e, "memo %s: not a memo file", path);
		if (!s->readonly && (store_unlink(s, path) < 0 && errno == EISDIR)) {
			const char *leaf;
			int dir = store_parent(s, path, &leaf);
			if (dir >= 0) {
				unlinkat(dir, leaf, AT_REMOVEDIR);
				close(dir);
			}
		}
		goto out;
	}
	size_t len = (size_t)st.st_size;
	mapped = memo_map(fd, &st, &data);
	int whole = mapped != 0;
	if (!mapped) {
		data = xmalloc(len ? len : 1);
		whole = read_full(fd, data, len) == (ssize_t)len;
	}
	if (whole && other_version(data, len)) {
		/* Left by a cachet before or after this one: not damage, and
		 * this run's hit or store writes it again in this version. */
		if (!s->readonly)
			store_unlink(s, path);
		rc = 0;
		goto out;
	}
	int decoded = whole && decode_image(data, len, out) == 0;
	if (whole) {
		/* the memo's image now, freed with it */
		out->image_mapped = mapped;
		data = NULL;
		mapped = 0;
	}
	if (!decoded) {
		store_memo_free(out);
		/* Damaged (or cut short by a crash of a file system without
		 * ordered renames): drop it, the index still has the entry. */
		if (!s->readonly)
			store_unlink(s, path);
		error_set(e, "memo %s: damaged", path);
		goto out;
	}
	rc = 1;
out:
	if (mapped)
		munmap(data, mapped);
	else
		free(data);
	close(fd);
	free(path);
	return rc;
}

int store_keeps_memos(const struct store *s)
{
	return !s->readonly && !s->network_fs;
}

int store_memo_write(struct store *s, const struct digest *name, const struct store_memo *m,
                     struct error *e)
{
	if (s->readonly)
		return store_readonly_error(e);
	if (s->network_fs)
		return 0;
	struct buf b;
	buf_init(&b);
	store_memo_encode(m, &b);
	char *dir = memo_dir(s);
	char *path = memo_path(s, name);
	char *tmp = xasprintf("%s/memo.XXXXXX", s->tmp_dir);
	int rc = -1;
	int fd = store_create_mode(s, store_mkstemp(s, tmp));
	if (fd < 0) {
		error_errno(e, "writing a memo");
		goto out;
	}
	int wrote = write_all(fd, b.data, b.len);
	if (close(fd) < 0 || wrote < 0) {
		error_errno(e, "writing a memo");
		store_unlink(s, tmp);
		goto out;
	}
	/* The step's memo is there from its last run, as a rule. */
	if (store_replace(s, tmp, path, 1) < 0 &&
	    (errno != ENOENT || store_mkdir(s, dir) < 0 || store_replace(s, tmp, path, 0) < 0)) {
		error_errno(e, "writing a memo");
		store_unlink(s, tmp);
		goto out;
	}
	rc = 0;
out:
	free(tmp);
	free(path);
	free(dir);
	buf_free(&b);
	return rc;
}

void store_memo_free(struct store_memo *m)
{
	if (m->image_mapped)
		munmap(m->image, m->image_mapped);
	else
		free(m->image);
	for (size_t i = 0; !m->fp_paths && i < m->nfps; i++)
		free(m->fps[i].path);
	free(m->fp_paths);
	free(m->fps);
	memset(m, 0, sizeof *m);
}

void store_memo_drop_all(struct store *s)
{
	if (s->readonly)
		return;
	char *dir = memo_dir(s);
	DIR *d = store_opendir(s, dir);
	if (d) {
		int dfd = dirfd(d);
		struct dirent *de;
		while ((de = readdir(d)) != NULL)
			if (store_digest_name(de->d_name))
				unlinkat(dfd, de->d_name, 0);
		closedir(d);
	}
	free(dir);
}
