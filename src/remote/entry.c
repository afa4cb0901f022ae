/*
 * The wire format of what cachet keeps on a remote cache. Everything read
 * back is untrusted: a server may be hostile, truncate, or return another
 * key's bytes. Decoders check every length, the decompressed size and every
 * digest; the result inside an entry is decoded by src/key, and its outputs
 * are checked against the output roots when restored.
 *
 * Path-set list (ac/<remote_key_pathsets(W)>):
 *   u32 magic "CRPL", u32 version, then one zstd frame (with checksum) of
 *   u32 n, n x (digest[32], bytes body, u8 signed, [pubkey[32], sig[64]])
 * Entry (ac/<remote_key_entry(S)>):
 *   u32 magic "CREN", u32 version, W[32], pathset[32], S[32], bytes result,
 *   u8 signed, [pubkey[32], sig[64]]
 * Neither holds an environment value or an argv element: the keys are
 * digests over them, and a portable result holds paths, modes and digests.
 */
#include "cachet/remote.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "cachet/bug.h"

#define PATHSETS_MAGIC 0x4c505243u /* "CRPL" */
#define ENTRY_MAGIC    0x4e455243u /* "CREN" */
#define WIRE_VERSION   2u

static void derive(const char *domain, const struct digest *in, struct digest *out)
{
	struct hasher h;
	if (hasher_init(&h, NULL) < 0)
		BUG("SHA-256 could not be started");
	hasher_update_str(&h, domain);
	hasher_update_u64(&h, WIRE_VERSION);
	hasher_update(&h, in->b, DIGEST_LEN);
	hasher_final(&h, out);
}

void remote_key_pathsets(const struct digest *w, struct digest *out)
{
	derive("cachet remote pathsets", w, out);
}

void remote_key_entry(const struct digest *s, struct digest *out)
{
	derive("cachet remote entry", s, out);
}

/* ---- path-set lists ---- */

void remote_pathsets_free(struct remote_pathsets *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->sets[i].body);
	free(p->sets);
	p->sets = NULL;
	p->n = 0;
}

void remote_pathsets_encode(const struct remote_pathsets *p, struct buf *out)
{
	struct buf plain;
	buf_init(&plain);
	buf_put_u32(&plain, (uint32_t)p->n);
	for (size_t i = 0; i < p->n; i++) {
		const struct remote_pathset *ps = &p->sets[i];
		buf_add(&plain, ps->digest.b, DIGEST_LEN);
		buf_put_bytes(&plain, ps->body, ps->len);
		buf_put_u8(&plain, ps->is_signed ? 1 : 0);
		if (ps->is_signed) {
			buf_add(&plain, ps->pubkey, REMOTE_PUBKEY_LEN);
			buf_add(&plain, ps->sig, REMOTE_SIG_LEN);
		}
	}
	buf_put_u32(out, PATHSETS_MAGIC);
	buf_put_u32(out, WIRE_VERSION);
	size_t cap = ZSTD_compressBound(plain.len);
	buf_grow(out, cap);
	ZSTD_CCtx *cx = ZSTD_createCCtx();
	if (!cx)
		xalloc_failed();
	ZSTD_CCtx_setParameter(cx, ZSTD_c_compressionLevel, 3);
	ZSTD_CCtx_setParameter(cx, ZSTD_c_checksumFlag, 1);
	size_t n = ZSTD_compress2(cx, out->data + out->len, cap, plain.data, plain.len);
	ZSTD_freeCCtx(cx);
	if (ZSTD_isError(n))
		BUG("zstd overflowed the room ZSTD_compressBound gave it");
	out->len += n;
	out->data[out->len] = '\0';
	buf_free(&plain);
}

int remote_pathsets_decode(const void *data, size_t len, struct remote_pathsets *out,
                           struct error *e)
{
	memset(out, 0, sizeof *out);
	struct reader r;
	reader_init(&r, data, len);
	if (reader_u32(&r) != PATHSETS_MAGIC || reader_u32(&r) != WIRE_VERSION || r.failed)
		return error_set(e, "remote path sets: bad magic or version");
	unsigned long long size = ZSTD_getFrameContentSize(r.p, r.left);
	/* Writers keep the list under REMOTE_MAX_PATHSETS_BYTES: more is a
	 * hostile record, refused before it is decompressed. */
	if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN ||
	    size > REMOTE_MAX_RECORD || size > REMOTE_MAX_PATHSETS_BYTES + (1u << 20))
		return error_set(e, "remote path sets: bad compressed frame");
	void *plain = xmalloc(size ? size : 1);
	size_t got = ZSTD_decompress(plain, size, r.p, r.left);
	if (ZSTD_isError(got) || got != size) {
		free(plain);
		return error_set(e, "remote path sets: corrupt compressed frame");
	}
	reader_init(&r, plain, got);
	uint32_t n = reader_u32(&r);
	if (r.failed || n > REMOTE_MAX_PATHSETS * 4 || n > r.left / (DIGEST_LEN + 4))
		goto corrupt;
	out->sets = xcalloc(n ? n : 1, sizeof *out->sets);
	for (uint32_t i = 0; i < n; i++) {
		struct remote_pathset *ps = &out->sets[i];
		reader_raw(&r, ps->digest.b, DIGEST_LEN);
		size_t blen;
		const void *body = reader_bytes(&r, &blen);
		if (!body || blen > REMOTE_MAX_PATHSET_BYTES)
			goto corrupt;
		struct digest check;
		digest_bytes(body, blen, &check);
		uint8_t is_signed = reader_u8(&r);
		if (is_signed == 1) {
			reader_raw(&r, ps->pubkey, REMOTE_PUBKEY_LEN);
			reader_raw(&r, ps->sig, REMOTE_SIG_LEN);
		}
		if (r.failed || is_signed > 1 || !digest_equal(&check, &ps->digest))
			goto corrupt;
		ps->is_signed = is_signed;
		ps->body = xmalloc(blen ? blen : 1);
		memcpy(ps->body, body, blen);
		ps->len = blen;
		out->n++;
	}
	if (r.failed || r.left != 0)
		goto corrupt;
	free(plain);
	return 0;
corrupt:
	free(plain);
	remote_pathsets_free(out);
	return error_set(e, "remote path sets: corrupt encoding");
}

int remote_pathsets_add(struct remote_pathsets *p, const struct remote_pathset *set)
{
	for (size_t i = 0; i < p->n; i++) {
		struct remote_pathset *old = &p->sets[i];
		if (!digest_equal(&old->digest, &set->digest))
			continue;
		if (old->is_signed || !set->is_signed)
			return 0;
		/* A signature for a path set an unsigned writer put there. */
		old->is_signed = 1;
		memcpy(old->pubkey, set->pubkey, REMOTE_PUBKEY_LEN);
		memcpy(old->sig, set->sig, REMOTE_SIG_LEN);
		return 1;
	}
	p->sets = xrealloc(p->sets, (p->n + 1) * sizeof *p->sets);
	memmove(p->sets + 1, p->sets, p->n * sizeof *p->sets);
	p->sets[0] = *set;
	p->sets[0].body = xmalloc(set->len ? set->len : 1);
	memcpy(p->sets[0].body, set->body, set->len);
	p->n++;
	/* The newest stays even when it alone is over the byte bound. */
	size_t keep = 1, bytes = set->len;
	while (keep < p->n && keep < REMOTE_MAX_PATHSETS &&
	       bytes + p->sets[keep].len <= REMOTE_MAX_PATHSETS_BYTES)
		bytes += p->sets[keep++].len;
	for (size_t i = keep; i < p->n; i++)
		free(p->sets[i].body);
	p->n = keep;
	return 1;
}

void remote_pathset_message(const struct digest *weak, const struct remote_pathset *set,
                            struct digest *out)
{
	struct hasher h;
	if (hasher_init(&h, NULL) < 0)
		BUG("SHA-256 could not be started");
	hasher_update_str(&h, "cachet remote pathset signature");
	hasher_update_u64(&h, WIRE_VERSION);
	hasher_update(&h, weak->b, DIGEST_LEN);
	hasher_update(&h, set->digest.b, DIGEST_LEN);
	hasher_final(&h, out);
}

/* ---- entries ---- */

void remote_entry_free(struct remote_entry *en)
{
	free(en->result);
	memset(en, 0, sizeof *en);
}

void remote_entry_message(const struct remote_entry *en, struct digest *out)
{
	struct digest result;
	digest_bytes(en->result, en->result_len, &result);
	struct hasher h;
	if (hasher_init(&h, NULL) < 0)
		BUG("SHA-256 could not be started");
	hasher_update_str(&h, "cachet remote entry signature");
	hasher_update_u64(&h, WIRE_VERSION);
	hasher_update(&h, en->weak.b, DIGEST_LEN);
	hasher_update(&h, en->pathset.b, DIGEST_LEN);
	hasher_update(&h, en->strong.b, DIGEST_LEN);
	hasher_update(&h, result.b, DIGEST_LEN);
	hasher_final(&h, out);
}

void remote_entry_encode(const struct remote_entry *en, struct buf *out)
{
	buf_put_u32(out, ENTRY_MAGIC);
	buf_put_u32(out, WIRE_VERSION);
	buf_add(out, en->weak.b, DIGEST_LEN);
	buf_add(out, en->pathset.b, DIGEST_LEN);
	buf_add(out, en->strong.b, DIGEST_LEN);
	buf_put_bytes(out, en->result, en->result_len);
	buf_put_u8(out, en->is_signed ? 1 : 0);
	if (en->is_signed) {
		buf_add(out, en->pubkey, REMOTE_PUBKEY_LEN);
		buf_add(out, en->sig, REMOTE_SIG_LEN);
	}
}

int remote_entry_decode(const void *data, size_t len, struct remote_entry *out, struct error *e)
{
	memset(out, 0, sizeof *out);
	struct reader r;
	reader_init(&r, data, len);
	if (reader_u32(&r) != ENTRY_MAGIC || reader_u32(&r) != WIRE_VERSION || r.failed)
		return error_set(e, "remote entry: bad magic or version");
	reader_raw(&r, out->weak.b, DIGEST_LEN);
	reader_raw(&r, out->pathset.b, DIGEST_LEN);
	reader_raw(&r, out->strong.b, DIGEST_LEN);
	size_t rlen;
	const void *result = reader_bytes(&r, &rlen);
	uint8_t is_signed = reader_u8(&r);
	if (is_signed == 1) {
		reader_raw(&r, out->pubkey, REMOTE_PUBKEY_LEN);
		reader_raw(&r, out->sig, REMOTE_SIG_LEN);
	}
	if (r.failed || !result || is_signed > 1 || r.left != 0) {
		memset(out, 0, sizeof *out);
		return error_set(e, "remote entry: corrupt encoding");
	}
	out->is_signed = is_signed;
	out->result = xmalloc(rlen ? rlen : 1);
	memcpy(out->result, result, rlen);
	out->result_len = rlen;
	return 0;
}
