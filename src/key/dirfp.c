#include "cachet/dirfp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cachet/array.h"
#include "cachet/ldcache.h"
#include "cachet/observe.h"
#include "cachet/path.h"
#include "cachet/strmap.h"

/* Bounds for decoding untrusted bytes; far above any real path set. */
#define DIRFP_MAX_DIRS (1u << 20)

/* Splits values (buf_put_bytes each) into one pointer and length per
 * observation. 0 when they are exactly n values. */
static int split_values(const void *values, size_t len, size_t n, const unsigned char ***vals,
                        size_t **lens)
{
	*vals = xcalloc(n ? n : 1, sizeof **vals);
	*lens = xcalloc(n ? n : 1, sizeof **lens);
	struct reader r;
	reader_init(&r, values, len);
	for (size_t i = 0; i < n; i++) {
		(*vals)[i] = reader_bytes(&r, &(*lens)[i]);
		if (!(*vals)[i])
			return -1;
	}
	return r.failed || r.left ? -1 : 0;
}

static int is_errno(const unsigned char *v, size_t len, int err)
{
	if (len != 5 || v[0] != 'E')
		return 0;
	struct reader r;
	reader_init(&r, v + 1, 4);
	return reader_u32(&r) == (uint32_t)err;
}

static int is_real_name(const char *path)
{
	const char *base = path_basename(path);
	return *base && strcmp(base, ".") && strcmp(base, "..") && path[strlen(path) - 1] != '/';
}

/* lstat of an ancestor, through the answers of this collection: the
 * include directories that a compiler probes for every header are the
 * same few. 0 if it exists, else the errno. */
static int ancestor_lookup(struct strmap *ancestors, const char *dir)
{
	intptr_t known = (intptr_t)strmap_get(ancestors, dir);
	if (known)
		return (int)(known - 1);
	struct stat st;
	int err = lstat(dir, &st) == 0 ? 0 : errno;
	strmap_put(ancestors, dir, (void *)(intptr_t)(err + 1));
	return err;
}

/* For a path that is absent: the nearest ancestor that exists, whose
 * missing entry (the next component, a real name, absent itself and not a
 * dangling symlink) makes the lookup fail. Ancestors are taken as text,
 * component by component from the end, so ".." is never folded: the
 * kernel resolves the ancestor as it resolved that part of the path. An
 * ancestor that changes while this runs cannot mislead: its directory's
 * fingerprint, taken after, is then too recent to be kept. */
static char *absent_from(const char *p, struct strmap *ancestors)
{
	struct stat st;
	if (lstat(p, &st) == 0 || errno != ENOENT)
		return NULL;
	char *child = xstrdup(p);
	for (;;) {
		char *dir = path_dirname(child);
		int err = ancestor_lookup(ancestors, dir);
		if (err == 0) {
			int ok = is_real_name(child);
			free(child);
			if (ok)
				return dir;
			free(dir);
			return NULL;
		}
		if (err != ENOENT || !strcmp(dir, child)) {
			free(dir);
			free(child);
			return NULL;
		}
		free(child);
		child = dir;
	}
}

/* A recorded listing is the one the step saw (record.h), which a sibling
 * may have changed before the run was stored: a fingerprint of the
 * directory as it is now must not vouch for it unless it is also the
 * listing now. */
static int listing_holds(const struct pathset *ps, const struct observation *o,
                         const unsigned char *v, size_t len)
{
	const char **excluded = pathset_excluded(ps, (size_t)(o - ps->obs));
	struct buf now;
	buf_init(&now);
	observe_value(OBS_LIST, o->flags, ps->paths[o->path], excluded, NULL, &now);
	int same = now.len == len && memcmp(now.data, v, len) == 0;
	buf_free(&now);
	free(excluded);
	return same;
}

/* 1 for a fact that the loader's cache answers (facts.c): its value is a
 * function of that file's bytes alone. */
static int is_ldcache_fact(const struct observation *o, const char *name)
{
	return o->kind == OBS_FACT &&
	       !strncmp(name, OBSERVE_FACT_LDCACHE, strlen(OBSERVE_FACT_LDCACHE));
}

/* The directory whose entries decide observation o's value v, malloc'd,
 * or NULL when they do not decide it alone. For a fact the loader's cache
 * answered, that file instead: ldconfig replaces it by a rename (another
 * inode), and an edit in place moves its times, as a new entry moves a
 * directory's. Reading and indexing it (44 KB here) was the costliest
 * fact of a compile's hit. */
static char *deciding_dir(const struct pathset *ps, const struct observation *o,
                          const unsigned char *v, size_t len, struct strmap *ancestors)
{
	const char *p = ps->paths[o->path];
	if (is_ldcache_fact(o, p))
		return len > 0 && v[0] == 'P' ? xstrdup(LDCACHE_PATH) : NULL;
	if (p[0] != '/')
		return NULL;
	if (o->kind == OBS_LIST)
		return len > 0 && v[0] == 'L' && listing_holds(ps, o, v, len) ? xstrdup(p) : NULL;
	if (o->kind != OBS_STAT && o->kind != OBS_READLINK)
		return NULL;
	if (is_errno(v, len, ENOENT))
		return absent_from(p, ancestors);
	/* A directory's own stat, following symlinks as its fingerprint is
	 * taken (stat of the same path): its type and permission bits are in
	 * the fingerprint, and chmod moves its ctime. The include directories
	 * that gcc stats are the ones whose entries decide its other lookups:
	 * their stats were made twice. */
	if (o->kind == OBS_STAT && !(o->flags & OBS_F_NOFOLLOW) && len >= 2 &&
	    (v[0] == 'S' || v[0] == 's') && v[1] == (S_IFDIR >> 12))
		return xstrdup(p);
	/* readlink found the entry, a symlink or not: the entry named by the
	 * last component, which must be a real name. */
	if (o->kind == OBS_READLINK && ((len > 0 && v[0] == 'R') || is_errno(v, len, EINVAL)) &&
	    is_real_name(p))
		return path_dirname(p);
	return NULL;
}

void dirfp_collect(const struct pathset *ps, const void *values, size_t values_len,
                   struct dirfp_set *out)
{
	memset(out, 0, sizeof *out);
	const unsigned char **vals;
	size_t *lens;
	int ok = split_values(values, values_len, ps->nobs, &vals, &lens) == 0;
	out->nobs = ps->nobs;
	out->obs_dir = xcalloc(ps->nobs ? ps->nobs : 1, sizeof *out->obs_dir);
	struct strmap index;     /* dir -> index + 1 into out->dirs, or -1 if unusable */
	struct strmap ancestors; /* dir -> its lstat's errno + 1 */
	strmap_init(&index);
	strmap_init(&ancestors);
	size_t alloc = 0;
	for (size_t i = 0; ok && i < ps->nobs; i++) {
		char *dir = deciding_dir(ps, &ps->obs[i], vals[i], lens[i], &ancestors);
		if (!dir)
			continue;
		intptr_t at = (intptr_t)strmap_get(&index, dir);
		if (at == 0) {
			struct stat st;
			at = -1;
			if (stat(dir, &st) == 0 &&
			    (S_ISDIR(st.st_mode) ||
			     (S_ISREG(st.st_mode) && !strcmp(dir, LDCACHE_PATH)))) {
				struct file_id id;
				file_id_from_stat(&st, &id);
				if (file_id_settled(&id) && file_id_fs_trusted(-1, dir)) {
					ARRAY_RESERVE(out->dirs, alloc, out->ndirs + 1, 16);
					out->dirs[out->ndirs].dir = xstrdup(dir);
					out->dirs[out->ndirs].id = id;
					out->dirs[out->ndirs].state = 0;
					at = (intptr_t)++out->ndirs;
				}
			}
			strmap_put(&index, dir, (void *)at);
		}
		if (at > 0)
			out->obs_dir[i] = (uint32_t)at;
		free(dir);
	}
	strmap_free(&index);
	strmap_free(&ancestors);
	free(vals);
	free(lens);
}

void dirfp_encode(const struct dirfp_set *set, struct buf *out)
{
	buf_put_u32(out, (uint32_t)set->ndirs);
	for (size_t i = 0; i < set->ndirs; i++) {
		buf_put_str(out, set->dirs[i].dir);
		file_id_encode(&set->dirs[i].id, out);
	}
	/* Only the observations that have a directory: most of a path set. */
	uint32_t n = 0;
	for (size_t i = 0; i < set->nobs; i++)
		n += set->obs_dir[i] != 0;
	buf_put_u32(out, n);
	for (size_t i = 0; i < set->nobs; i++)
		if (set->obs_dir[i]) {
			buf_put_u32(out, (uint32_t)i);
			buf_put_u32(out, set->obs_dir[i]);
		}
}

int dirfp_decode(const void *data, size_t len, size_t nobs, struct dirfp_set *out)
{
	memset(out, 0, sizeof *out);
	struct reader r;
	reader_init(&r, data, len);
	uint32_t ndirs = reader_u32(&r);
	if (r.failed || ndirs > DIRFP_MAX_DIRS || ndirs > r.left / 45)
		return -1;
	out->dirs = xcalloc(ndirs ? ndirs : 1, sizeof *out->dirs);
	for (uint32_t i = 0; i < ndirs && !r.failed; i++) {
		struct dirfp *d = &out->dirs[i];
		d->dir = reader_strdup(&r);
		file_id_decode(&r, &d->id);
		out->ndirs = i + 1;
		if (!d->dir || d->dir[0] != '/')
			r.failed = 1;
	}
	out->nobs = nobs;
	out->obs_dir = xcalloc(nobs ? nobs : 1, sizeof *out->obs_dir);
	uint32_t n = reader_u32(&r);
	for (uint32_t k = 0; k < n && !r.failed; k++) {
		uint32_t i = reader_u32(&r), at = reader_u32(&r);
		if (i >= nobs || at == 0 || at > ndirs)
			r.failed = 1;
		else
			out->obs_dir[i] = at;
	}
	if (r.failed || r.left) {
		dirfp_free(out);
		return -1;
	}
	return 0;
}

void dirfp_free(struct dirfp_set *set)
{
	for (size_t i = 0; i < set->ndirs; i++)
		free(set->dirs[i].dir);
	free(set->dirs);
	free(set->obs_dir);
	free(set->vals);
	free(set->val_lens);
	memset(set, 0, sizeof *set);
}

struct known_ctx {
	struct dirfp_set *set;
	size_t saved;
};

static int known_value(void *ctx, size_t i, const void **v, size_t *len)
{
	struct known_ctx *k = ctx;
	struct dirfp_set *set = k->set;
	if (i >= set->nobs || !set->obs_dir[i])
		return 0;
	struct dirfp *d = &set->dirs[set->obs_dir[i] - 1];
	if (d->state == 0) {
		struct stat st;
		struct file_id id;
		d->state = -1;
		if (stat(d->dir, &st) == 0) {
			file_id_from_stat(&st, &id);
			if (file_id_equal(&id, &d->id))
				d->state = 1;
		}
	}
	if (d->state < 0)
		return 0;
	*v = set->vals[i];
	*len = set->val_lens[i];
	k->saved++;
	return 1;
}

size_t dirfp_strong_key(struct dirfp_set *set, const struct pathset *ps, const struct step_bases *b,
                        const struct digest *weak, const struct digest *ps_digest,
                        struct digest_cache *dc, const void *values, size_t values_len,
                        struct digest *strong)
{
	struct known_ctx k = {set, 0};
	free(set->vals);
	free(set->val_lens);
	int usable = set->nobs == ps->nobs &&
	             split_values(values, values_len, ps->nobs, &set->vals, &set->val_lens) == 0;
	pathset_strong_key_known(ps, b, weak, ps_digest, dc, usable ? known_value : NULL, &k, NULL,
	                         strong);
	return k.saved;
}
