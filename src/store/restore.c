/*
 * Reading blobs back, with integrity checks: a zstd blob by its frame
 * checksum (xxhash64 of the content, checked by zstd at the end of the
 * frame) and the size; a raw blob by SHA-256, re-hashed only when the blob
 * file's stat fingerprint differs from the one recorded when it was last
 * verified (kept in the fingerprint cache under the blob's path).
 *
 * A corrupt blob is removed, so that the next store of that content writes
 * a good copy. A blob whose content is sound but whose size disagrees with
 * the entry is not removed: the entry is what is wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "cachet/buf.h"
#include "cachet/fdio.h"
#include "store/store_internal.h"

#define CHUNK (256 * 1024)
/* Raw blobs below this are re-hashed rather than looked up when the
 * index is not open (a memo hit): 1 MiB hashes in about the time the
 * index takes to open. */
#define RAW_VERIFY_WITHOUT_INDEX ((uint64_t)1 << 20)

int blob_corrupt(struct store *s, const char *path, struct error *e, const char *why)
{
	int removed = !s->readonly && unlink(path) == 0;
	store_count(s, "corrupt_blobs", 1);
	error_set(e, "blob %s is corrupt (%s)%s", path, why, removed ? "; removed" : "");
	if (e)
		e->code = EBADMSG;
	return -1;
}

static int size_mismatch(const char *path, uint64_t want, uint64_t got, struct error *e)
{
	error_set(e, "blob %s holds %llu bytes where the entry says %llu", path,
	          (unsigned long long)got, (unsigned long long)want);
	if (e)
		e->code = EBADMSG;
	return -1;
}

/* Opens the blob in either form, the entry's form first. */
static int open_blob(struct store *s, const struct blob_ref *ref, int *fd, enum blob_form *form,
                     char **path, struct stat *st, struct error *e)
{
	enum blob_form order[2] = {ref->form, ref->form == BLOB_ZSTD ? BLOB_RAW : BLOB_ZSTD};
	for (int i = 0; i < 2; i++) {
		char *p = blob_path(s, &ref->digest, order[i]);
		int f = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (f < 0) {
			int err = errno;
			if (err == ENOENT || err == ENOTDIR) {
				free(p);
				continue;
			}
			error_errno(e, "opening blob %s", p);
			free(p);
			return -1;
		}
		if (fstat(f, st) < 0 || !S_ISREG(st->st_mode)) {
			error_set(e, "blob %s is not a regular file", p);
			if (e)
				e->code = EBADMSG;
			close(f);
			free(p);
			return -1;
		}
		*fd = f;
		*form = order[i];
		*path = p;
		return 0;
	}
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(&ref->digest, hex);
	error_set(e, "blob %s is missing from the cache", hex);
	if (e)
		e->code = ENOENT;
	return -1;
}

/* Checks a raw blob's content against its name. mem, when not NULL, holds
 * the file's bytes already. */
static int verify_raw(struct store *s, int fd, const char *path, const struct stat *st,
                      const struct blob_ref *ref, const void *mem, struct error *e)
{
	struct file_id id;
	struct digest d;
	file_id_from_stat(st, &id);
	/* A hit through a memo has no index open: for a small blob, hashing
	 * it costs less than opening the index to look up its fingerprint. */
	int small = (uint64_t)st->st_size < RAW_VERIFY_WITHOUT_INDEX;
	int known = !(small && !s->db) && store_fp_get(s, path, &id, &d) == 1 &&
	            digest_equal(&d, &ref->digest);
	if (!known) {
		if (mem)
			digest_bytes(mem, (size_t)st->st_size, &d);
		else if (digest_fd(fd, &d, NULL, e) < 0)
			return error_wrap(e, "verifying blob %s", path);
		if (!digest_equal(&d, &ref->digest))
			return blob_corrupt(s, path, e, "content does not match its name");
		store_fp_put(s, path, &id, &ref->digest);
	}
	if ((uint64_t)st->st_size != ref->size)
		return size_mismatch(path, ref->size, (uint64_t)st->st_size, e);
	return 0;
}

/* Where decompressed bytes go: a file from offset 0, or a buffer of cap. */
struct sink {
	int fd;
	char *mem;
	uint64_t len;
};

static int sink_write(struct sink *k, const void *p, size_t n, struct error *e)
{
	if (k->mem)
		memcpy(k->mem + k->len, p, n);
	else if (pwrite_all(k->fd, p, n, (off_t)k->len) < 0)
		return error_errno(e, "writing restored content");
	k->len += n;
	return 0;
}

/* A blob this small is read and decompressed in one piece: no stream
 * buffers (256 KiB in, 128 KiB out, and zstd's own window), whose pages a
 * hit would fault in to restore a 40 KB object file. */
#define WHOLE_MAX ((uint64_t)1 << 20)

static int read_all(int fd, char *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t n = pread(fd, buf + off, len - off, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			errno = EIO; /* shrank under us */
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

/* The frame's checksum is the writer's: another member of a group cache,
 * or anyone who can write the cache, can put any valid frame of the right
 * size in its place. The decompressed bytes are hashed as they come. */
static int content_matches(const void *data, size_t len, const struct blob_ref *ref)
{
	struct digest d;
	digest_bytes(data, len, &d);
	return digest_equal(&d, &ref->digest);
}

static int decompress_whole(struct store *s, int fd, const char *path, uint64_t csize,
                            const struct blob_ref *ref, struct sink *k, struct error *e)
{
	char *in = malloc(csize ? (size_t)csize : 1);
	char *out = k->mem ? k->mem : malloc(ref->size ? (size_t)ref->size : 1);
	int rc = 0;
	if (!in || !out) {
		errno = ENOMEM;
		rc = error_errno(e, "reading blob %s", path);
	} else if (read_all(fd, in, (size_t)csize) < 0) {
		rc = error_errno(e, "reading blob %s", path);
	} else if (ZSTD_findFrameCompressedSize(in, (size_t)csize) != (size_t)csize) {
		/* An error (a truncated or damaged frame) or bytes after it. */
		rc = blob_corrupt(s, path, e, "not one whole frame");
	} else {
		/* The frame's checksum is checked here as by the stream. */
		size_t n = ZSTD_decompressDCtx(s->dctx, out, (size_t)ref->size, in, (size_t)csize);
		if (ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall)
			rc = size_mismatch(path, ref->size, ref->size + 1, e);
		else if (ZSTD_isError(n))
			rc = blob_corrupt(s, path, e, ZSTD_getErrorName(n));
		else if (n != ref->size)
			rc = size_mismatch(path, ref->size, n, e);
		else if (!content_matches(out, n, ref))
			rc = blob_corrupt(s, path, e, "content does not match its name");
		else if (k->mem)
			k->len = n;
		else
			rc = sink_write(k, out, n, e);
	}
	free(in);
	if (out != k->mem)
		free(out);
	return rc;
}

static int decompress(struct store *s, int fd, const char *path, uint64_t csize,
                      const struct blob_ref *ref, struct sink *k, struct error *e)
{
	if (!s->dctx)
		s->dctx = ZSTD_createDCtx();
	if (!s->dctx)
		return error_set(e, "out of memory for zstd");
	ZSTD_DCtx_reset(s->dctx, ZSTD_reset_session_only);
	if (csize <= WHOLE_MAX && ref->size <= WHOLE_MAX)
		return decompress_whole(s, fd, path, csize, ref, k, e);
	char *in = xmalloc(CHUNK);
	size_t outcap = ZSTD_DStreamOutSize();
	char *outb = xmalloc(outcap);
	size_t ret = 1; /* 0 once a whole frame, checksum included, was decoded */
	int rc = 0;
	struct hasher h;
	hasher_init(&h, NULL);
	for (;;) {
		ssize_t n = read(fd, in, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = error_errno(e, "reading blob %s", path);
			break;
		}
		if (n == 0)
			break;
		if (ret == 0) {
			rc = blob_corrupt(s, path, e, "data after the frame");
			break;
		}
		ZSTD_inBuffer ib = {in, (size_t)n, 0};
		while (rc == 0 && ib.pos < ib.size) {
			if (ret == 0) {
				rc = blob_corrupt(s, path, e, "data after the frame");
				break;
			}
			ZSTD_outBuffer ob = {outb, outcap, 0};
			ret = ZSTD_decompressStream(s->dctx, &ob, &ib);
			if (ZSTD_isError(ret)) {
				rc = blob_corrupt(s, path, e, ZSTD_getErrorName(ret));
				break;
			}
			if (k->len + ob.pos > ref->size) {
				rc = size_mismatch(path, ref->size, k->len + ob.pos, e);
				break;
			}
			hasher_update(&h, outb, ob.pos);
			rc = sink_write(k, outb, ob.pos, e);
		}
		if (rc < 0)
			break;
	}
	free(in);
	free(outb);
	struct digest got;
	hasher_final(&h, &got);
	if (rc < 0)
		return -1;
	if (ret != 0)
		return blob_corrupt(s, path, e, "truncated frame");
	if (k->len != ref->size)
		return size_mismatch(path, ref->size, k->len, e);
	if (!digest_equal(&got, &ref->digest))
		return blob_corrupt(s, path, e, "content does not match its name");
	return 0;
}

int store_blob_write_to_fd(struct store *s, const struct blob_ref *ref, int out_fd, struct error *e)
{
	int fd;
	enum blob_form form;
	char *path;
	struct stat st;
	if (open_blob(s, ref, &fd, &form, &path, &st, e) < 0)
		return -1;
	int rc;
	if (form == BLOB_ZSTD) {
		struct sink k = {out_fd, NULL, 0};
		rc = decompress(s, fd, path, (uint64_t)st.st_size, ref, &k, e);
	} else {
		/* Verify the blob file itself, then copy: a reflink or an in-kernel
		 * copy never passes the bytes through here to hash. */
		rc = verify_raw(s, fd, path, &st, ref, NULL, e);
		uint64_t copied = 0;
		if (rc == 0 && copy_fd_data(fd, out_fd, &copied) < 0)
			rc = error_errno(e, "restoring blob %s", path);
		else if (rc == 0 && copied != ref->size)
			rc = size_mismatch(path, ref->size, copied, e);
	}
	close(fd);
	free(path);
	return rc;
}

int store_blob_read(struct store *s, const struct blob_ref *ref, void **data, size_t *len,
                    struct error *e)
{
	*data = NULL;
	*len = 0;
	int fd;
	enum blob_form form;
	char *path;
	struct stat st;
	if (open_blob(s, ref, &fd, &form, &path, &st, e) < 0)
		return -1;
	/* Sized from the file or the entry, never trusted to fit: an absurd
	 * size fails here instead of aborting in xmalloc. */
	uint64_t want = form == BLOB_RAW ? (uint64_t)st.st_size : ref->size;
	char *buf = want < SIZE_MAX ? malloc((size_t)want + 1) : NULL;
	int rc = 0;
	if (!buf) {
		errno = ENOMEM;
		rc = error_errno(e, "reading blob %s", path);
	} else if (form == BLOB_ZSTD) {
		struct sink k = {-1, buf, 0};
		rc = decompress(s, fd, path, (uint64_t)st.st_size, ref, &k, e);
	} else if (read_all(fd, buf, (size_t)want) < 0) {
		rc = error_errno(e, "reading blob %s", path);
	} else {
		rc = verify_raw(s, fd, path, &st, ref, buf, e);
	}
	close(fd);
	free(path);
	if (rc < 0) {
		free(buf);
		return -1;
	}
	buf[want] = '\0';
	*data = buf;
	*len = (size_t)want;
	return 0;
}
