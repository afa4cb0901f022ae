#include "cachet/result.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/array.h"

#define RESULT_MAGIC       0x53525443u /* "CTRS" */
#define RESULT_MAX_OUTPUTS (1u << 20)

void result_init(struct result *r)
{
	memset(r, 0, sizeof *r);
}

void result_free(struct result *r)
{
	for (size_t i = 0; i < r->noutputs; i++) {
		free(r->outputs[i].path);
		free(r->outputs[i].target);
		free(r->outputs[i].value);
	}
	free(r->outputs);
	free(r->host);
	free(r->cachet_version);
	free(r->values);
	free(r->listings);
	free(r->pinned);
	free(r->stream_runs);
	result_init(r);
}

struct output *result_add_output(struct result *r, enum output_kind kind, const char *path)
{
	ARRAY_RESERVE(r->outputs, r->alloc, r->noutputs + 1, 16);
	struct output *o = &r->outputs[r->noutputs++];
	memset(o, 0, sizeof *o);
	o->kind = (uint8_t)kind;
	o->path = xstrdup(path);
	return o;
}

struct output *result_copy_output(struct result *r, const struct output *o, const char *path)
{
	struct output *q = result_add_output(r, (enum output_kind)o->kind, path);
	char *qpath = q->path;
	*q = *o;
	q->path = qpath;
	q->target = o->target ? xstrdup(o->target) : NULL;
	if (o->value) {
		q->value = xmalloc(o->value_len ? o->value_len : 1);
		memcpy(q->value, o->value, o->value_len);
	}
	return q;
}

int output_target_is_path(const struct output *o)
{
	return o->target &&
	       ((o->kind == OUT_SYMLINK && o->target[0] == '/') || o->kind == OUT_HARDLINK);
}

static void put_blob(struct buf *b, const struct blob_ref *ref)
{
	buf_add(b, ref->digest.b, DIGEST_LEN);
	buf_put_u64(b, ref->size);
	buf_put_u8(b, (uint8_t)ref->form);
}

static int get_blob(struct reader *r, struct blob_ref *ref)
{
	reader_raw(r, ref->digest.b, DIGEST_LEN);
	ref->size = reader_u64(r);
	uint8_t form = reader_u8(r);
	if (form != BLOB_RAW && form != BLOB_ZSTD)
		return -1;
	ref->form = (enum blob_form)form;
	return r->failed ? -1 : 0;
}

/* Every encoding ends with the SHA-256 of the bytes before it. The index
 * keeps results without checksums of its own, and a flipped bit in an
 * output's path or mode, or in the exit status, would otherwise decode into
 * a plausible, wrong result. */
void result_encode(const struct result *r, struct buf *out)
{
	size_t start = out->len;
	buf_put_u32(out, RESULT_MAGIC);
	buf_put_u32(out, (uint32_t)r->noutputs);
	for (size_t i = 0; i < r->noutputs; i++) {
		const struct output *o = &r->outputs[i];
		buf_put_u8(out, o->kind);
		buf_put_str(out, o->path);
		buf_put_u32(out, o->mode);
		if (o->kind == OUT_FILE) {
			put_blob(out, &o->blob);
			buf_put_u8(out, (uint8_t)o->has_mtime);
			buf_put_u64(out, (uint64_t)o->mtime_ns);
		} else if (o->kind == OUT_SYMLINK || o->kind == OUT_HARDLINK) {
			buf_put_str(out, o->target);
		} else if (o->kind == OUT_XATTR) {
			buf_put_str(out, o->target);
			buf_put_bytes(out, o->value, o->value_len);
		} else if (o->kind == OUT_OWNER) {
			buf_put_u32(out, o->uid);
			buf_put_u32(out, o->gid);
		}
	}
	put_blob(out, &r->out);
	put_blob(out, &r->err);
	buf_put_u32(out, (uint32_t)r->exit_code);
	buf_put_u64(out, (uint64_t)r->duration_ms);
	buf_put_u64(out, (uint64_t)r->created);
	buf_put_str(out, r->host ? r->host : "");
	buf_put_str(out, r->cachet_version ? r->cachet_version : "");
	buf_put_bytes(out, r->values, r->values_len);
	buf_put_bytes(out, r->listings, r->listings_len);
	if (r->pinned || r->stdin_advance || r->nstream_runs)
		buf_put_str(out, r->pinned ? r->pinned : "");
	if (r->stdin_advance || r->nstream_runs)
		buf_put_u64(out, (uint64_t)r->stdin_advance);
	if (r->nstream_runs) {
		buf_put_u32(out, (uint32_t)r->nstream_runs);
		for (size_t i = 0; i < r->nstream_runs; i++)
			buf_put_u64(out, r->stream_runs[i]);
	}
	struct digest sum;
	digest_bytes(out->data + start, out->len - start, &sum);
	buf_add(out, sum.b, DIGEST_LEN);
}

static int valid_output_path(const char *p)
{
	return p && p[0] == '/';
}

/* The order of stdout and stderr (result.stream_runs), after the blobs it
 * divides: runs that alternate, none empty, adding up to each blob. */
static int get_stream_runs(struct reader *rd, struct result *r)
{
	uint32_t n = reader_u32(rd);
	if (rd->failed || n < 2 || n > rd->left / 8)
		return -1;
	r->stream_runs = xmalloc(n * sizeof *r->stream_runs);
	r->nstream_runs = n;
	uint64_t sum[2] = {0, 0};
	for (uint32_t i = 0; i < n; i++) {
		uint64_t run = reader_u64(rd);
		r->stream_runs[i] = run;
		unsigned stream = run & 1;
		uint64_t len = run >> 1;
		uint64_t size = stream ? r->err.size : r->out.size;
		if (!len || (i && (r->stream_runs[i - 1] & 1) == stream) ||
		    len > size - sum[stream])
			return -1;
		sum[stream] += len;
	}
	return rd->failed || sum[0] != r->out.size || sum[1] != r->err.size ? -1 : 0;
}

static int decode_body(const void *data, size_t len, struct result *r, struct error *e);

int result_decode(const void *data, size_t len, struct result *r, struct error *e)
{
	result_init(r);
	struct digest sum;
	if (len < DIGEST_LEN)
		return error_set(e, "result: truncated");
	digest_bytes(data, len - DIGEST_LEN, &sum);
	if (memcmp(sum.b, (const char *)data + len - DIGEST_LEN, DIGEST_LEN) != 0)
		return error_set(e, "result: checksum mismatch (damaged entry)");
	return decode_body(data, len - DIGEST_LEN, r, e);
}

int result_decode_summed(const void *data, size_t len, struct result *r, struct error *e)
{
	result_init(r);
	if (len < DIGEST_LEN)
		return error_set(e, "result: truncated");
	return decode_body(data, len - DIGEST_LEN, r, e);
}

/* The body without its trailer. */
static int decode_body(const void *data, size_t len, struct result *r, struct error *e)
{
	struct reader rd;
	reader_init(&rd, data, len);
	if (reader_u32(&rd) != RESULT_MAGIC)
		return error_set(e, "result: bad magic");
	uint32_t n = reader_u32(&rd);
	if (rd.failed || n > RESULT_MAX_OUTPUTS || n > rd.left / 9)
		return error_set(e, "result: bad output count");
	for (uint32_t i = 0; i < n; i++) {
		uint8_t kind = reader_u8(&rd);
		char *path = reader_strdup(&rd);
		if (!valid_output_path(path) || kind < OUT_FILE || kind > OUT_OWNER) {
			free(path);
			goto corrupt;
		}
		struct output *o = result_add_output(r, (enum output_kind)kind, path);
		free(path);
		o->mode = reader_u32(&rd) & 07777;
		if (kind == OUT_FILE) {
			if (get_blob(&rd, &o->blob) < 0)
				goto corrupt;
			o->has_mtime = reader_u8(&rd) != 0;
			o->mtime_ns = (int64_t)reader_u64(&rd);
		} else if (kind == OUT_SYMLINK || kind == OUT_HARDLINK || kind == OUT_XATTR) {
			o->target = reader_strdup(&rd);
			if (!o->target || (kind == OUT_HARDLINK && !valid_output_path(o->target)))
				goto corrupt;
			if (kind == OUT_XATTR) {
				size_t vlen;
				const void *v = reader_bytes(&rd, &vlen);
				if (!v)
					goto corrupt;
				o->value = xmalloc(vlen ? vlen : 1);
				memcpy(o->value, v, vlen);
				o->value_len = vlen;
			}
		} else if (kind == OUT_OWNER) {
			o->uid = reader_u32(&rd);
			o->gid = reader_u32(&rd);
		}
		if (rd.failed)
			goto corrupt;
	}
	if (get_blob(&rd, &r->out) < 0 || get_blob(&rd, &r->err) < 0)
		goto corrupt;
	r->exit_code = (int)reader_u32(&rd);
	r->duration_ms = (int64_t)reader_u64(&rd);
	r->created = (int64_t)reader_u64(&rd);
	r->host = reader_strdup(&rd);
	r->cachet_version = reader_strdup(&rd);
	size_t vlen, llen;
	const void *v = reader_bytes(&rd, &vlen);
	const void *l = reader_bytes(&rd, &llen);
	if (rd.left && !rd.failed && !(r->pinned = reader_strdup(&rd)))
		goto corrupt;
	if (r->pinned && !r->pinned[0]) {
		free(r->pinned);
		r->pinned = NULL;
	}
	if (rd.left && !rd.failed)
		r->stdin_advance = (int64_t)reader_u64(&rd);
	if (rd.left && !rd.failed && get_stream_runs(&rd, r) < 0)
		goto corrupt;
	if (rd.failed || !r->host || !r->cachet_version || !v || !l || rd.left != 0)
		goto corrupt;
	r->values = xmalloc(vlen ? vlen : 1);
	memcpy(r->values, v, vlen);
	r->values_len = vlen;
	r->listings = xmalloc(llen ? llen : 1);
	memcpy(r->listings, l, llen);
	r->listings_len = llen;
	return 0;
corrupt:
	result_free(r);
	return error_set(e, "result: corrupt encoding");
}

struct blob_ref *result_blobs(const struct result *r, size_t *n)
{
	struct blob_ref *refs = xmalloc((r->noutputs + 2) * sizeof *refs);
	size_t k = 0;
	for (size_t i = 0; i < r->noutputs; i++)
		if (r->outputs[i].kind == OUT_FILE)
			refs[k++] = r->outputs[i].blob;
	refs[k++] = r->out;
	refs[k++] = r->err;
	*n = k;
	return refs;
}

void result_replay_stdin_advance(const struct result *r)
{
	struct stat st;
	if (r->stdin_advance && fstat(0, &st) == 0 && S_ISREG(st.st_mode))
		lseek(0, (off_t)r->stdin_advance, SEEK_CUR);
}
