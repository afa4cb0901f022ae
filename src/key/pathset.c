#include "cachet/pathset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/array.h"
#include "cachet/bug.h"
#include "cachet/portable.h"
#include "cachet/strmap.h"
#include "cachet/strv.h"

#define PATHSET_MAGIC 0x53505443u /* "CTPS" */
/* Bounds for decoding untrusted path sets; far above any real step. */
#define PATHSET_MAX_ENTRIES (1u << 22)

/* Open-addressing table from string to index while a path set is built. */
struct intern {
	uint32_t *slots; /* index + 1; 0 = empty */
	size_t cap;
};

/* strmap's hash, eight bytes at a time: FNV-1a's byte at a time was a
 * quarter of interning a compile's paths on a miss. Only the table's
 * slots depend on it, never an index or the encoding. */
static uint64_t hash_str(const char *s)
{
	return strmap_hash(s);
}

void pathset_init(struct pathset *ps)
{
	memset(ps, 0, sizeof *ps);
}

static void intern_free(struct pathset *ps)
{
	struct intern *in = ps->intern;
	if (in) {
		free(in->slots);
		free(in);
	}
	ps->intern = NULL;
}

void pathset_free(struct pathset *ps)
{
	for (size_t i = 0; !ps->arena && i < ps->npaths; i++)
		free(ps->paths[i]);
	free(ps->arena);
	free(ps->paths);
	for (size_t i = 0; i < ps->nobs; i++)
		free(ps->obs[i].excluded);
	free(ps->obs);
	intern_free(ps);
	pathset_init(ps);
}

void pathset_own_paths(struct pathset *ps)
{
	if (!ps->arena)
		return;
	for (size_t i = 0; i < ps->npaths; i++)
		ps->paths[i] = xstrdup(ps->paths[i]);
	free(ps->arena);
	ps->arena = NULL;
}

static void intern_rehash(struct pathset *ps, size_t cap)
{
	struct intern *in = ps->intern;
	free(in->slots);
	in->slots = xcalloc(cap, sizeof *in->slots);
	in->cap = cap;
	for (size_t i = 0; i < ps->npaths; i++) {
		size_t at = hash_str(ps->paths[i]) & (cap - 1);
		while (in->slots[at])
			at = (at + 1) & (cap - 1);
		in->slots[at] = (uint32_t)i + 1;
	}
}

static uint32_t intern(struct pathset *ps, const char *s)
{
	pathset_own_paths(ps);
	if (!ps->intern) {
		ps->intern = xcalloc(1, sizeof(struct intern));
		intern_rehash(ps, 256);
	}
	struct intern *in = ps->intern;
	if ((ps->npaths + 1) * 2 > in->cap)
		intern_rehash(ps, in->cap * 2);
	size_t at = hash_str(s) & (in->cap - 1);
	while (in->slots[at]) {
		uint32_t idx = in->slots[at] - 1;
		if (strcmp(ps->paths[idx], s) == 0)
			return idx;
		at = (at + 1) & (in->cap - 1);
	}
	ARRAY_RESERVE(ps->paths, ps->alloc_paths, ps->npaths + 1, 64);
	ps->paths[ps->npaths] = xstrdup(s);
	in->slots[at] = (uint32_t)ps->npaths + 1;
	return (uint32_t)ps->npaths++;
}

static struct observation *new_obs(struct pathset *ps)
{
	ARRAY_RESERVE(ps->obs, ps->alloc_obs, ps->nobs + 1, 64);
	struct observation *o = &ps->obs[ps->nobs++];
	memset(o, 0, sizeof *o);
	return o;
}

size_t pathset_add(struct pathset *ps, enum obs_kind kind, unsigned flags, const char *path,
                   const char *const *excluded)
{
	uint32_t p = intern(ps, path);
	struct observation *o = new_obs(ps);
	o->kind = (uint8_t)kind;
	o->flags = (uint8_t)flags;
	o->path = p;
	if (excluded && *excluded) {
		size_t n = strv_len((char *const *)excluded);
		o->excluded = xmalloc(n * sizeof *o->excluded);
		for (size_t i = 0; i < n; i++)
			o->excluded[i] = intern(ps, excluded[i]);
		o->nexcluded = (uint32_t)n;
	}
	return ps->nobs - 1;
}

/* qsort has no context argument: the comparators read the path table of the
 * path set being sorted through this pointer, set only during the sort. */
static char **sort_paths;

static int cmp_index_by_name(const void *a, const void *b)
{
	return strcmp(sort_paths[*(const uint32_t *)a], sort_paths[*(const uint32_t *)b]);
}

struct obs_slot {
	struct observation o;
	size_t old_index;
};

/* Each path's place in the order of names (strcmp), equal names equal
 * places, set only during the sort: comparing two places is comparing the
 * names, without walking the long prefixes that a step's paths share
 * (/usr/lib/gcc/x86_64-linux-gnu/12/...), which made strcmp most of the
 * cost of canonicalising a compile's path set. */
static uint32_t *sort_rank;

static int cmp_rank(uint32_t a, uint32_t b)
{
	return sort_rank[a] < sort_rank[b] ? -1 : sort_rank[a] > sort_rank[b];
}

static int cmp_obs(const struct observation *x, const struct observation *y)
{
	int c = cmp_rank(x->path, y->path);
	if (c)
		return c;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->flags != y->flags)
		return x->flags < y->flags ? -1 : 1;
	if (x->nexcluded != y->nexcluded)
		return x->nexcluded < y->nexcluded ? -1 : 1;
	for (uint32_t i = 0; i < x->nexcluded; i++) {
		c = cmp_rank(x->excluded[i], y->excluded[i]);
		if (c)
			return c;
	}
	return 0;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct obs_slot *x = a, *y = b;
	int c = cmp_obs(&x->o, &y->o);
	if (c)
		return c;
	return x->old_index < y->old_index ? -1 : x->old_index > y->old_index;
}

static void dedupe_excluded(struct observation *o)
{
	if (o->nexcluded < 2)
		return;
	qsort(o->excluded, o->nexcluded, sizeof *o->excluded, cmp_index_by_name);
	uint32_t w = 1;
	for (uint32_t r = 1; r < o->nexcluded; r++)
		if (strcmp(sort_paths[o->excluded[r]], sort_paths[o->excluded[w - 1]]) != 0)
			o->excluded[w++] = o->excluded[r];
	o->nexcluded = w;
}

void pathset_canonicalise(struct pathset *ps, size_t **perm_out)
{
	pathset_own_paths(ps);
	sort_paths = ps->paths;
	/* The order of names first: the observations are sorted by it. A
	 * decoded path set may hold one name twice; both get one place, as
	 * strcmp would compare them equal. */
	uint32_t *order = xmalloc((ps->npaths ? ps->npaths : 1) * sizeof *order);
	for (size_t i = 0; i < ps->npaths; i++)
		order[i] = (uint32_t)i;
	qsort(order, ps->npaths, sizeof *order, cmp_index_by_name);
	sort_rank = xmalloc((ps->npaths ? ps->npaths : 1) * sizeof *sort_rank);
	for (size_t k = 0; k < ps->npaths; k++)
		sort_rank[order[k]] = k > 0 && !strcmp(ps->paths[order[k]], ps->paths[order[k - 1]])
		                          ? sort_rank[order[k - 1]]
		                          : (uint32_t)k;
	struct obs_slot *slots = xmalloc((ps->nobs ? ps->nobs : 1) * sizeof *slots);
	for (size_t i = 0; i < ps->nobs; i++) {
		slots[i].o = ps->obs[i];
		slots[i].old_index = i;
		dedupe_excluded(&slots[i].o);
	}
	qsort(slots, ps->nobs, sizeof *slots, cmp_slot);

	size_t *perm = perm_out ? xmalloc((ps->nobs ? ps->nobs : 1) * sizeof *perm) : NULL;
	size_t w = 0;
	for (size_t r = 0; r < ps->nobs; r++) {
		if (w > 0 && cmp_obs(&slots[r].o, &ps->obs[w - 1]) == 0) {
			free(slots[r].o.excluded);
			if (perm)
				perm[slots[r].old_index] = w - 1;
			continue;
		}
		ps->obs[w] = slots[r].o;
		if (perm)
			perm[slots[r].old_index] = w;
		w++;
	}
	ps->nobs = w;
	free(slots);

	/* Renumber strings: keep the used ones, in sorted order. */
	uint32_t *remap = xmalloc((ps->npaths ? ps->npaths : 1) * sizeof *remap);
	char *used = xcalloc(ps->npaths ? ps->npaths : 1, 1);
	for (size_t i = 0; i < ps->nobs; i++) {
		used[ps->obs[i].path] = 1;
		for (uint32_t j = 0; j < ps->obs[i].nexcluded; j++)
			used[ps->obs[i].excluded[j]] = 1;
	}
	char **paths = xmalloc((ps->npaths ? ps->npaths : 1) * sizeof *paths);
	size_t np = 0;
	for (size_t i = 0; i < ps->npaths; i++) {
		uint32_t old = order[i];
		if (!used[old]) {
			free(ps->paths[old]);
			continue;
		}
		remap[old] = (uint32_t)np;
		paths[np++] = ps->paths[old];
	}
	for (size_t i = 0; i < ps->nobs; i++) {
		ps->obs[i].path = remap[ps->obs[i].path];
		for (uint32_t j = 0; j < ps->obs[i].nexcluded; j++)
			ps->obs[i].excluded[j] = remap[ps->obs[i].excluded[j]];
	}
	free(ps->paths);
	ps->paths = paths;
	ps->npaths = np;
	ps->alloc_paths = np ? np : 1;
	free(order);
	free(remap);
	free(used);
	intern_free(ps);
	free(sort_rank);
	sort_rank = NULL;
	sort_paths = NULL;
	if (perm_out)
		*perm_out = perm;
}

int pathset_canonicalise_values(struct pathset *ps, const unsigned char *const *v,
                                const size_t *vlen, struct buf *out)
{
	size_t nold = ps->nobs;
	size_t *perm;
	pathset_canonicalise(ps, &perm);
	const unsigned char **nv = xcalloc(ps->nobs ? ps->nobs : 1, sizeof *nv);
	size_t *nlen = xcalloc(ps->nobs ? ps->nobs : 1, sizeof *nlen);
	int rc = 0;
	for (size_t i = 0; i < nold && rc == 0; i++) {
		size_t k = perm[i];
		if (!nv[k]) {
			nv[k] = v[i];
			nlen[k] = vlen[i];
		} else if (nlen[k] != vlen[i] || memcmp(nv[k], v[i], vlen[i])) {
			rc = -1;
		}
	}
	for (size_t k = 0; k < ps->nobs && rc == 0; k++)
		buf_put_bytes(out, nv[k], nlen[k]);
	free(nv);
	free(nlen);
	free(perm);
	return rc;
}

void pathset_encode(const struct pathset *ps, struct buf *out)
{
	buf_put_u32(out, PATHSET_MAGIC);
	buf_put_u32(out, (uint32_t)ps->npaths);
	for (size_t i = 0; i < ps->npaths; i++)
		buf_put_str(out, ps->paths[i]);
	buf_put_u32(out, (uint32_t)ps->nobs);
	for (size_t i = 0; i < ps->nobs; i++) {
		const struct observation *o = &ps->obs[i];
		buf_put_u8(out, o->kind);
		buf_put_u8(out, o->flags);
		buf_put_u32(out, o->path);
		if (o->kind == OBS_LIST || o->kind == OBS_CREATED) {
			buf_put_u32(out, o->nexcluded);
			for (uint32_t j = 0; j < o->nexcluded; j++)
				buf_put_u32(out, o->excluded[j]);
		}
	}
}

static int known_kind(unsigned kind)
{
	return (kind >= OBS_READ && kind <= OBS_XATTR) || kind == OBS_FACT || kind == OBS_CREATED;
}

int pathset_decode(const void *data, size_t len, struct pathset *ps, struct error *e)
{
	struct reader r;
	pathset_init(ps);
	reader_init(&r, data, len);
	if (reader_u32(&r) != PATHSET_MAGIC)
		return error_set(e, "path set: bad magic");
	uint32_t np = reader_u32(&r);
	if (r.failed || np > PATHSET_MAX_ENTRIES || np > r.left / 4)
		return error_set(e, "path set: bad path count");
	ps->paths = xcalloc(np ? np : 1, sizeof *ps->paths);
	ps->alloc_paths = np ? np : 1;
	/* The strings with their NULs take at most the bytes left and np. */
	ps->arena = xmalloc(r.left + np + 1);
	char *at = ps->arena;
	for (uint32_t i = 0; i < np; i++) {
		size_t n;
		const char *p = reader_bytes(&r, &n);
		if (!p || memchr(p, '\0', n))
			goto corrupt;
		memcpy(at, p, n);
		at[n] = '\0';
		ps->paths[i] = at;
		at += n + 1;
		ps->npaths++;
	}
	uint32_t no = reader_u32(&r);
	if (r.failed || no > PATHSET_MAX_ENTRIES || no > r.left / 6)
		goto corrupt;
	ps->obs = xcalloc(no ? no : 1, sizeof *ps->obs);
	ps->alloc_obs = no ? no : 1;
	for (uint32_t i = 0; i < no; i++) {
		struct observation *o = &ps->obs[i];
		o->kind = reader_u8(&r);
		o->flags = reader_u8(&r);
		o->path = reader_u32(&r);
		ps->nobs++;
		if (r.failed || !known_kind(o->kind) || o->path >= np ||
		    (o->flags & ~(OBS_F_NOFOLLOW | OBS_F_MTIME)))
			goto corrupt;
		/* A fact's "path" is its name, never a path to look up. */
		if (o->kind == OBS_FACT ? !observe_fact_known(ps->paths[o->path])
		                        : ps->paths[o->path][0] != '/')
			goto corrupt;
		if (o->kind == OBS_BASE && portable_base_index(ps->paths[o->path]) < 0)
			goto corrupt;
		if (o->kind == OBS_LIST || o->kind == OBS_CREATED) {
			uint32_t nx = reader_u32(&r);
			if (r.failed || nx > r.left / 4 || (o->kind == OBS_CREATED && nx != 1))
				goto corrupt;
			o->excluded = xmalloc((nx ? nx : 1) * sizeof *o->excluded);
			o->nexcluded = nx;
			for (uint32_t j = 0; j < nx; j++) {
				o->excluded[j] = reader_u32(&r);
				if (o->excluded[j] >= np)
					goto corrupt;
			}
		}
	}
	if (r.failed || r.left != 0)
		goto corrupt;
	return 0;
corrupt:
	pathset_free(ps);
	return error_set(e, "path set: corrupt encoding");
}

const char **pathset_excluded(const struct pathset *ps, size_t i)
{
	const struct observation *o = &ps->obs[i];
	if (!o->nexcluded)
		return NULL;
	const char **names = xmalloc((o->nexcluded + 1) * sizeof *names);
	for (uint32_t j = 0; j < o->nexcluded; j++)
		names[j] = ps->paths[o->excluded[j]];
	names[o->nexcluded] = NULL;
	return names;
}

static void strong_begin(struct hasher *h, const struct digest *weak,
                         const struct digest *ps_digest)
{
	if (hasher_init(h, NULL) < 0)
		BUG("SHA-256 could not be started");
	hasher_update_str(h, "cachet strong key");
	hasher_update(h, weak->b, DIGEST_LEN);
	hasher_update(h, ps_digest->b, DIGEST_LEN);
}

/* The strong key's input is hashed in pieces of this size: two SHA-256
 * updates for each of a compile's 450 values (a length and a few bytes)
 * cost more than the hashing of the bytes. A few KB amortise the calls as
 * well; 32 KB grew the buffer through 8 pages a hit faulted in fresh. */
#define STRONG_CHUNK (4 * 1024)

struct absent_ctx {
	const struct pathset *ps;
	pathset_known_fn known;
	void *known_ctx;
};

/* 1 when a stat of path (either kind) is an observation of ps whose value
 * known vouches for and which found no entry: canonical path sets are
 * sorted by path, a search; any other order only finds nothing, and the
 * caller then looks. */
static int known_absent(void *ctx, const char *path)
{
	const struct absent_ctx *a = ctx;
	const struct pathset *ps = a->ps;
	size_t lo = 0, hi = ps->nobs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(ps->paths[ps->obs[mid].path], path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < ps->nobs && !strcmp(ps->paths[ps->obs[i].path], path); i++) {
		const void *v;
		size_t len;
		if (ps->obs[i].kind != OBS_STAT || !a->known(a->known_ctx, i, &v, &len))
			continue;
		struct reader r;
		reader_init(&r, v, len);
		if (len == 5 && reader_u8(&r) == 'E' && reader_u32(&r) == (uint32_t)ENOENT)
			return 1;
	}
	return 0;
}

void pathset_strong_key_known(const struct pathset *ps, const struct step_bases *b,
                              const struct digest *weak, const struct digest *ps_digest,
                              struct digest_cache *dc, const struct pathset_lookups *lk,
                              struct buf *values_out, struct digest *strong)
{
	struct hasher h;
	struct buf value, portable, stream;
	int convert = portable_has_bases(b);
	pathset_known_fn known = lk ? lk->known : NULL;
	void *known_ctx = lk ? lk->known_ctx : NULL;
	struct observe_memo memo;
	memset(&memo, 0, sizeof memo);
	struct absent_ctx absent = {ps, known, known_ctx};
	if (known) {
		memo.known_absent = known_absent;
		memo.known_absent_ctx = &absent;
	}
	if (lk) {
		memo.looked = lk->looked;
		memo.looked_ctx = lk->looked_ctx;
	}
	buf_init(&value);
	buf_init(&portable);
	buf_init(&stream);
	strong_begin(&h, weak, ps_digest);
	for (size_t i = 0; i < ps->nobs; i++) {
		const struct observation *o = &ps->obs[i];
		const void *v;
		size_t len;
		if (!known || !known(known_ctx, i, &v, &len)) {
			/* (A known value is a recorded one: already in the
			 * form it is keyed in.) */
			buf_reset(&value);
			const char **excluded = pathset_excluded(ps, i);
			observe_value_memo(o->kind, o->flags, ps->paths[o->path], excluded, dc,
			                   &memo, &value, NULL);
			free(excluded);
			const struct buf *keyed = &value;
			if (convert) {
				buf_reset(&portable);
				portable_value(value.data, value.len, b, &portable);
				keyed = &portable;
			}
			v = keyed->data;
			len = keyed->len;
		}
		/* As hasher_update_u64 and hasher_update would take them. */
		buf_put_u64(&stream, len);
		buf_add(&stream, v, len);
		if (stream.len >= STRONG_CHUNK) {
			hasher_update(&h, stream.data, stream.len);
			buf_reset(&stream);
		}
		if (values_out)
			buf_put_bytes(values_out, v, len);
	}
	hasher_update(&h, stream.data, stream.len);
	buf_free(&stream);
	buf_free(&value);
	buf_free(&portable);
	hasher_final(&h, strong);
}

void pathset_strong_key(const struct pathset *ps, const struct step_bases *b,
                        const struct digest *weak, const struct digest *ps_digest,
                        struct digest_cache *dc, struct buf *values_out, struct digest *strong)
{
	pathset_strong_key_known(ps, b, weak, ps_digest, dc, NULL, values_out, strong);
}

void pathset_strong_key_from_values(const struct digest *weak, const struct digest *ps_digest,
                                    const void *values, size_t len, struct digest *strong)
{
	struct hasher h;
	struct reader r;
	strong_begin(&h, weak, ps_digest);
	reader_init(&r, values, len);
	while (r.left && !r.failed) {
		size_t n;
		const void *v = reader_bytes(&r, &n);
		if (!v)
			break;
		hasher_update_u64(&h, n);
		hasher_update(&h, v, n);
	}
	hasher_final(&h, strong);
}
