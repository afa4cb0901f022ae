/*
 * Writing blobs: blobs/ab/<64 hex> (raw) or blobs/ab/<64 hex>.zst (one zstd
 * frame with a content checksum), named by the SHA-256 of the uncompressed
 * content.
 *
 * A blob is written to tmp/ and put in place under its name only when
 * complete, so a reader sees all of it or nothing: unnamed (O_TMPFILE) and
 * then linked where the file system can, so that a process killed while it
 * writes leaves nothing in tmp/; else under a temporary name, renamed.
 * There is no fsync per blob: the index is the commit point, and every
 * blob is in place before the index transaction that references it
 * begins (a crash leaves at worst a blob no entry references; a blob lost
 * with the page cache is found missing or corrupt by a restore, which then
 * degrades to a miss).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "cachet/buf.h"
#include "cachet/fdio.h"
#include "cachet/unnamed.h"
#include "store/store_internal.h"

#define CHUNK (256 * 1024)

char *blob_path(const struct store *s, const struct digest *d, enum blob_form form)
{
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(d, hex);
	return xasprintf("%s/%.2s/%s%s", s->blobs_dir, hex, hex, form == BLOB_ZSTD ? ".zst" : "");
}

int blob_locate(const struct store *s, const struct digest *d, enum blob_form prefer,
                enum blob_form *form, struct stat *st, char **path_out, struct error *e)
{
	enum blob_form order[2] = {prefer, prefer == BLOB_ZSTD ? BLOB_RAW : BLOB_ZSTD};
	for (int i = 0; i < 2; i++) {
		char *path = blob_path(s, d, order[i]);
		if (lstat(path, st) == 0) {
			if (!S_ISREG(st->st_mode)) {
				free(path); /* not ours: as good as missing */
				continue;
			}
			*form = order[i];
			if (path_out)
				*path_out = path;
			else
				free(path);
			return 1;
		}
		if (errno != ENOENT && errno != ENOTDIR) {
			error_errno(e, "%s", path);
			free(path);
			return -1;
		}
		free(path);
	}
	return 0;
}

int store_blob_exists(struct store *s, const struct blob_ref *ref)
{
	enum blob_form form;
	struct stat st;
	return blob_locate(s, &ref->digest, ref->form, &form, &st, NULL, NULL) == 1;
}

/* ---- temporary files ---- */

struct tmpfile {
	int fd;
	char *path; /* NULL: unnamed (O_TMPFILE) */
};

static int tmp_create(struct store *s, struct tmpfile *t, struct error *e)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		t->path = NULL;
		int dir = store_openat(s, s->tmp_dir, O_PATH | O_DIRECTORY, 0);
		t->fd = dir >= 0 ? unnamed_open(dir, ".", O_RDWR | O_CLOEXEC) : -1;
		if (dir >= 0)
			close(dir);
		if (t->fd >= 0)
			return 0;
		t->path = xasprintf("%s/blob.XXXXXX", s->tmp_dir);
		t->fd = store_mkstemp(s, t->path);
		if (t->fd >= 0)
			return 0;
		int err = errno;
		free(t->path);
		t->path = NULL;
		/* tmp/ removed by hand under a live cache: make it again. */
		if (err != ENOENT || store_mkdir(s, s->tmp_dir) < 0) {
			errno = err;
			break;
		}
	}
	return error_errno(e, "creating a temporary file in %s", s->tmp_dir);
}

static void tmp_discard(const struct store *s, struct tmpfile *t)
{
	if (t->fd >= 0)
		close(t->fd);
	if (t->path)
		store_unlink(s, t->path);
	free(t->path);
	t->fd = -1;
	t->path = NULL;
}

/* Moves the temporary file into place as the blob, read-only. When another
 * process stored the same blob meanwhile, keeps theirs (same content by
 * name) so that a blob file, once verified, is never replaced. */
static int tmp_install(struct store *s, struct tmpfile *t, const struct digest *d,
                       enum blob_form form, struct error *e)
{
	if (fchmod(t->fd, 0444) < 0) {
		error_errno(e, "chmod of a temporary file in %s", s->tmp_dir);
		tmp_discard(s, t);
		return -1;
	}
	char *dest = blob_path(s, d, form);
	int rc = -1;
	for (int attempt = 0; attempt < 3; attempt++) {
		const char *leaf;
		int parent = store_parent(s, dest, &leaf);
		if (parent < 0) {
			rc = -1;
		} else if (!t->path) {
			/* A link never replaces what is there, as RENAME_NOREPLACE. */
			rc = unnamed_link(t->fd, parent, leaf);
		} else {
			rc = store_rename(s, t->path, dest, RENAME_NOREPLACE);
			if (rc < 0 && errno == EINVAL)
				rc = store_rename(s, t->path, dest,
				                  0); /* file system without RENAME_NOREPLACE */
		}
		int err = errno;
		struct stat there;
		if (rc < 0 && err == EEXIST &&
		    fstatat(parent, leaf, &there, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISREG(there.st_mode)) {
			/* A directory or symlink where the blob belongs is no blob
			 * (readers skip it): kept, it would block this content for
			 * good. */
			int gone = unlinkat(parent, leaf, 0) == 0 ||
			           unlinkat(parent, leaf, AT_REMOVEDIR) == 0;
			close(parent);
			if (!gone)
				break;
			continue;
		}
		if (parent >= 0)
			close(parent);
		errno = err;
		if (rc == 0 || errno != ENOENT)
			break;
		char *dir = xstrndup(dest, strlen(s->blobs_dir) + 3);
		int mk = store_mkdir(s, dir);
		if (mk < 0 && errno == ENOENT)
			mk = store_mkdir(s, s->blobs_dir) == 0 ? store_mkdir(s, dir) : -1;
		free(dir);
		if (mk < 0 && errno != EEXIST) {
			rc = -1;
			break;
		}
	}
	if (rc < 0 && errno == EEXIST) {
		tmp_discard(s, t);
		free(dest);
		return 0;
	}
	if (rc < 0) {
		error_errno(e, "storing blob %s", dest);
		tmp_discard(s, t);
		free(dest);
		return -1;
	}
	free(t->path);
	t->path = NULL;
	/* We hashed what we wrote: remember this file as verified so that the
	 * first restore need not hash it again (the rename or link changed its
	 * ctime, so stat it now). */
	struct stat st;
	if (form == BLOB_RAW && fstat(t->fd, &st) == 0) {
		struct file_id id;
		file_id_from_stat(&st, &id);
		store_fp_put(s, dest, &id, d);
	}
	close(t->fd);
	t->fd = -1;
	free(dest);
	return 0;
}

/* ---- zstd ---- */

static ZSTD_CCtx *cctx_for(struct store *s, uint64_t pledged, struct error *e)
{
	if (!s->cctx)
		s->cctx = ZSTD_createCCtx();
	ZSTD_CCtx *c = s->cctx;
	if (!c) {
		error_set(e, "out of memory for zstd");
		return NULL;
	}
	ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
	if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, s->zstd_level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(c, pledged))) {
		error_set(e, "cannot configure zstd");
		return NULL;
	}
	return c;
}

int store_set_compression_level(struct store *s, int level)
{
	if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
		return -1;
	s->zstd_level = level;
	return 0;
}

void blobs_free_contexts(struct store *s)
{
	ZSTD_freeCCtx(s->cctx);
	ZSTD_freeDCtx(s->dctx);
	s->cctx = NULL;
	s->dctx = NULL;
}

/* Writes the decompression of the zstd file z into raw. Used when content
 * turned out not to compress: the frame holds exactly the bytes that were
 * hashed, so the raw blob needs no second read of the (possibly changing)
 * source and no second hash. */
static int unpack(struct store *s, int z, int raw, struct error *e)
{
	if (!s->dctx)
		s->dctx = ZSTD_createDCtx();
	if (!s->dctx)
		return error_set(e, "out of memory for zstd");
	ZSTD_DCtx_reset(s->dctx, ZSTD_reset_session_only);
	char *in = xmalloc(CHUNK), *outb = xmalloc(CHUNK);
	off_t zoff = 0, roff = 0;
	size_t ret = 1;
	int rc = 0;
	for (;;) {
		ssize_t n = pread(z, in, CHUNK, zoff);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = error_errno(e, "reading a temporary file");
			break;
		}
		if (n == 0)
			break;
		zoff += n;
		ZSTD_inBuffer ib = {in, (size_t)n, 0};
		while (ib.pos < ib.size) {
			ZSTD_outBuffer ob = {outb, CHUNK, 0};
			ret = ZSTD_decompressStream(s->dctx, &ob, &ib);
			if (ZSTD_isError(ret)) {
				rc = error_set(e, "zstd: %s", ZSTD_getErrorName(ret));
				goto out;
			}
			if (pwrite_all(raw, outb, ob.pos, roff) < 0) {
				rc = error_errno(e, "writing a temporary file");
				goto out;
			}
			roff += (off_t)ob.pos;
		}
	}
	if (rc == 0 && ret != 0)
		rc = error_set(e, "zstd: truncated frame in a temporary file");
out:
	free(in);
	free(outb);
	return rc;
}

static int changed_error(struct error *e)
{
	error_set(e, "content changed while being stored");
	if (e)
		e->code = EAGAIN;
	return -1;
}

/* Content below the compression limit: one pass that hashes and compresses.
 * The pledged size makes zstd itself notice content that grew or shrank. */
static int put_fd_small(struct store *s, int fd, uint64_t size, const struct digest *expected,
                        struct blob_ref *out, struct error *e)
{
	ZSTD_CCtx *c = cctx_for(s, size, e);
	if (!c)
		return -1;
	struct hasher h;
	if (hasher_init(&h, e) < 0)
		return -1;
	struct tmpfile z = {-1, NULL};
	if (tmp_create(s, &z, e) < 0) {
		hasher_abort(&h);
		return -1;
	}
	char *in = xmalloc(CHUNK);
	size_t outcap = ZSTD_CStreamOutSize();
	char *outb = xmalloc(outcap);
	uint64_t total = 0, zsize = 0;
	int rc = 0, changed = 0;
	for (int done = 0; !done && rc == 0;) {
		ssize_t n = pread(fd, in, CHUNK, (off_t)total);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = error_errno(e, "reading content to store");
			break;
		}
		if (total + (uint64_t)n > size) {
			changed = 1; /* grew since fstat */
			break;
		}
		hasher_update(&h, in, (size_t)n);
		total += (uint64_t)n;
		done = n == 0;
		ZSTD_inBuffer ib = {in, (size_t)n, 0};
		ZSTD_EndDirective mode = done ? ZSTD_e_end : ZSTD_e_continue;
		for (;;) {
			ZSTD_outBuffer ob = {outb, outcap, 0};
			size_t left = ZSTD_compressStream2(c, &ob, &ib, mode);
			if (ZSTD_isError(left)) {
				/* srcSize_wrong: fewer bytes than pledged, the file shrank */
				if (ZSTD_getErrorCode(left) == ZSTD_error_srcSize_wrong)
					changed = 1;
				else
					rc = error_set(e, "zstd: %s", ZSTD_getErrorName(left));
				break;
			}
			if (pwrite_all(z.fd, outb, ob.pos, (off_t)zsize) < 0) {
				rc = error_errno(e, "writing a temporary file");
				break;
			}
			zsize += ob.pos;
			if (done ? left == 0 : ib.pos == ib.size)
				break;
		}
		if (changed)
			break;
	}
	free(in);
	free(outb);
	struct digest got;
	if (rc == 0 && !changed) {
		hasher_final(&h, &got);
		changed = total != size || !digest_equal(&got, expected);
	} else {
		hasher_abort(&h);
	}
	if (rc < 0 || changed) {
		tmp_discard(s, &z);
		return rc < 0 ? -1 : changed_error(e);
	}
	out->digest = *expected;
	out->size = size;
	/* Worth it only when it saves at least 10%. */
	if (size > 0 && zsize * 10 <= size * 9) {
		out->form = BLOB_ZSTD;
		return tmp_install(s, &z, expected, BLOB_ZSTD, e);
	}
	struct tmpfile r = {-1, NULL};
	if (tmp_create(s, &r, e) < 0 || unpack(s, z.fd, r.fd, e) < 0) {
		tmp_discard(s, &z);
		tmp_discard(s, &r);
		return -1;
	}
	tmp_discard(s, &z);
	out->form = BLOB_RAW;
	return tmp_install(s, &r, expected, BLOB_RAW, e);
}

/* Large content: copied as it is (a reflink where possible), then the copy
 * is hashed, so what is stored is exactly what was checked. */
static int put_fd_large(struct store *s, int fd, const struct digest *expected,
                        struct blob_ref *out, struct error *e)
{
	struct tmpfile r = {-1, NULL};
	if (tmp_create(s, &r, e) < 0)
		return -1;
	uint64_t copied = 0, hashed = 0;
	struct digest got;
	if ((copy_fd_data(fd, r.fd, &copied) < 0 && error_errno(e, "copying") < 0) ||
	    digest_fd(r.fd, &got, &hashed, e) < 0) {
		tmp_discard(s, &r);
		return error_wrap(e, "storing content");
	}
	if (!digest_equal(&got, expected)) {
		tmp_discard(s, &r);
		return changed_error(e);
	}
	out->digest = *expected;
	out->size = hashed;
	out->form = BLOB_RAW;
	return tmp_install(s, &r, expected, BLOB_RAW, e);
}

/* The uncompressed size of a stored .zst blob, from its frame header. */
static int zstd_blob_size(const struct store *s, const char *path, uint64_t *size)
{
	int fd = store_openat(s, path, O_RDONLY, 0);
	if (fd < 0)
		return -1;
	unsigned char head[18]; /* ZSTD_FRAMEHEADERSIZE_MAX */
	ssize_t n = pread(fd, head, sizeof head, 0);
	close(fd);
	if (n <= 0)
		return -1;
	unsigned long long v = ZSTD_getFrameContentSize(head, (size_t)n);
	if (v == ZSTD_CONTENTSIZE_ERROR || v == ZSTD_CONTENTSIZE_UNKNOWN)
		return -1;
	*size = v;
	return 0;
}

/* An existing blob is kept, whatever form it has. Returns 1 when reused. */
static int reuse_existing(struct store *s, const struct digest *d, struct blob_ref *out,
                          struct error *e)
{
	enum blob_form form;
	struct stat st;
	char *path = NULL;
	int found = blob_locate(s, d, BLOB_ZSTD, &form, &st, &path, e);
	if (found <= 0)
		return found;
	uint64_t size = (uint64_t)st.st_size;
	if (form == BLOB_ZSTD && zstd_blob_size(s, path, &size) < 0) {
		/* Unreadable header: this copy is damaged; store a new one. */
		store_unlink(s, path);
		store_count(s, "corrupt_blobs", 1);
		free(path);
		return 0;
	}
	free(path);
	out->digest = *d;
	out->size = size;
	out->form = form;
	return 1;
}

int store_put_blob_fd(struct store *s, int fd, const struct digest *expected, struct blob_ref *out,
                      struct error *e)
{
	if (s->readonly)
		return store_readonly_error(e);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return error_errno(e, "storing content");
	if (!S_ISREG(st.st_mode)) {
		error_set(e, "storing content: not a regular file");
		if (e)
			e->code = EINVAL;
		return -1;
	}
	int r = reuse_existing(s, expected, out, e);
	if (r != 0)
		return r < 0 ? -1 : 0;
	if ((uint64_t)st.st_size < STORE_COMPRESS_LIMIT)
		return put_fd_small(s, fd, (uint64_t)st.st_size, expected, out, e);
	return put_fd_large(s, fd, expected, out, e);
}

static int write_tmp_blob(struct store *s, const void *data, size_t len, const struct digest *d,
                          enum blob_form form, struct error *e)
{
	struct tmpfile t = {-1, NULL};
	if (tmp_create(s, &t, e) < 0)
		return -1;
	if (pwrite_all(t.fd, data, len, 0) < 0) {
		error_errno(e, "writing a temporary file");
		tmp_discard(s, &t);
		return -1;
	}
	return tmp_install(s, &t, d, form, e);
}

int store_put_blob_mem(struct store *s, const void *data, size_t len, struct blob_ref *out,
                       struct error *e)
{
	if (s->readonly)
		return store_readonly_error(e);
	struct digest d;
	digest_bytes(data, len, &d);
	int r = reuse_existing(s, &d, out, e);
	if (r != 0)
		return r < 0 ? -1 : 0;
	out->digest = d;
	out->size = len;
	out->form = BLOB_RAW;
	if (len > 0 && len < STORE_COMPRESS_LIMIT) {
		ZSTD_CCtx *c = cctx_for(s, len, e);
		if (!c)
			return -1;
		size_t cap = ZSTD_compressBound(len);
		char *z = xmalloc(cap);
		ZSTD_inBuffer ib = {data, len, 0};
		ZSTD_outBuffer ob = {z, cap, 0};
		size_t left = ZSTD_compressStream2(c, &ob, &ib, ZSTD_e_end);
		if (!ZSTD_isError(left) && left == 0 && ob.pos * 10 <= len * 9) {
			out->form = BLOB_ZSTD;
			int rc = write_tmp_blob(s, z, ob.pos, &d, BLOB_ZSTD, e);
			free(z);
			return rc;
		}
		free(z);
	}
	return write_tmp_blob(s, data, len, &d, BLOB_RAW, e);
}

int blobs_remove_all(struct store *s, struct error *e)
{
	DIR *top = store_opendir(s, s->blobs_dir);
	if (!top)
		return errno == ENOENT ? 0 : error_errno(e, "%s", s->blobs_dir);
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(top))) {
		if (!store_blob_dir_name(de->d_name))
			continue;
		int sub =
		    openat(dirfd(top), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		DIR *d = fdopendir(sub);
		if (!d) {
			close(sub);
			continue;
		}
		struct dirent *f;
		while ((f = readdir(d))) {
			/* Only blobs: whatever else is there is not cachet's. */
			if (!store_blob_name(f->d_name))
				continue;
			if (unlinkat(dirfd(d), f->d_name, 0) < 0 && errno != ENOENT && rc == 0)
				rc = error_errno(e, "removing %s/%s/%s", s->blobs_dir, de->d_name,
				                 f->d_name);
		}
		closedir(d);
	}
	closedir(top);
	return rc;
}
