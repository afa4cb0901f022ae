/*
 * Entries in the form they are stored in (portable.h): a result's output
 * paths back to this checkout, and a recorded run turned portable, with
 * the bases it is pinned to.
 */
#include "cachet/portable_record.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cachet/find.h"
#include "cachet/path.h"
#include "cachet/pathset.h"
#include "cachet/record.h"
#include "cachet/result.h"

/* ---- back to this checkout ---- */

int portable_localise_result(struct result *r, const struct step_bases *b)
{
	for (size_t i = 0; i < r->noutputs; i++) {
		struct output *o = &r->outputs[i];
		if (portable_localise_path(&o->path, b) < 0)
			return -1;
		if (output_target_is_path(o) && portable_localise_path(&o->target, b) < 0)
			return -1;
	}
	return 0;
}

/* ---- a recorded run in stored form ---- */

/* k >= 1 when path is the k-th directory above base (never "/", which is
 * above every base alike), else 0. */
static int levels_above(const char *path, const char *base)
{
	if (!strcmp(path, "/") || !strcmp(path, base) || !path_is_under(base, path))
		return 0;
	int k = 0;
	for (const char *p = base + strlen(path); *p; p++)
		k += *p == '/';
	return k;
}

/* The base (the nearest one) that path lies above, or -1; *k how far. */
static int base_below(const char *path, const struct step_bases *b, int *k)
{
	int best = -1;
	for (int i = 0; i < STEP_MAX_BASES; i++) {
		int n = portable_base_at(b, i) ? levels_above(path, b->dir[i]) : 0;
		if (n && (best < 0 || n < *k)) {
			best = i;
			*k = n;
		}
	}
	return best;
}

static int cmp_path(const void *key, const void *elem)
{
	return strcmp(key, *(char *const *)elem);
}

/* 1 when the path set (canonical: its strings sorted) looked path up. */
static int looked_up(const struct pathset *ps, const char *path)
{
	return bsearch(path, ps->paths, ps->npaths, sizeof *ps->paths, cmp_path) != NULL;
}

/* 1 when path = D/N, D the k-th directory above base, is one step of a
 * search upwards from inside the checkout: N was looked up one level
 * lower too, in the directory between D and the base (or the base). */
static int searched_upwards(const struct pathset *ps, const char *path, const char *dir,
                            const char *base)
{
	size_t dlen = strlen(dir);
	const char *next = strchr(base + dlen + (dlen > 1), '/');
	size_t clen = next ? (size_t)(next - base) : strlen(base);
	char *below = xasprintf("%.*s/%s", (int)clen, base, path_basename(path));
	int found = looked_up(ps, below);
	free(below);
	return found;
}

/* What a lookup of path (outside every base) says about where the checkout
 * lies. A step that stats or readlinks the directories above its checkout
 * (glibc's realpath does, for every absolute path) learns only that they
 * are directories, as they are above any canonical base: such a lookup is
 * written as the same number of levels above the base ("/@cachet-base0/.."),
 * so that another checkout, or another machine where the recording
 * checkout's parents do not exist, evaluates its own. A search upwards from
 * the checkout (a configuration file, node_modules, .cargo) or a listing of
 * a directory above it finds what lies next to this checkout only: the run
 * must be pinned (*pin set). A lookup beside those directories that is no
 * such search (a toolchain in ~/.pyenv, for a checkout in ~/src) is the
 * same path for every checkout, and stays as it is. Returns the path to
 * store (malloc'd). */
static char *observed_path(const struct pathset *ps, const struct observation *o, const char *path,
                           const struct step_bases *b, int *pin)
{
	*pin = -1;
	if (portable_base_of(path, b) >= 0)
		return portable_path(path, b);
	int k = 0;
	int i = base_below(path, b, &k);
	if (i >= 0 && (o->kind == OBS_STAT || o->kind == OBS_READLINK)) {
		struct buf up;
		buf_init(&up);
		buf_addf(&up, "%s%d", STEP_PORTABLE_PREFIX, i);
		while (k--)
			buf_addstr(&up, "/..");
		return buf_detach(&up, NULL);
	}
	if (i >= 0 && o->kind == OBS_LIST) {
		*pin = i;
	} else if (i < 0) {
		char *dir = path_dirname(path);
		int j = base_below(dir, b, &k);
		if (j >= 0 && searched_upwards(ps, path, dir, b->dir[j]))
			*pin = j;
		free(dir);
	}
	return portable_path(path, b);
}

/* 1 for a readlink that found no symlink in a directory above the cwd base
 * and within base_dir: a canonical cwd implies it, and the number of such
 * directories is the depth of the checkout, which must not split keys. */
static int implied_by_cwd(const struct observation *o, const char *path, const void *value,
                          size_t len, const struct step_bases *b)
{
	if (o->kind != OBS_READLINK || !portable_cwd_relative(b))
		return 0;
	const char *cwd = b->dir[STEP_BASE_CWD];
	if (!strcmp(path, cwd) || !path_is_under(cwd, path) ||
	    !path_is_under(path, b->dir[STEP_BASE_DIR]))
		return 0;
	struct buf not_a_link;
	buf_init(&not_a_link);
	observe_value(OBS_READLINK, o->flags, "/", NULL, NULL, &not_a_link);
	int same = len == not_a_link.len && !memcmp(value, not_a_link.data, len);
	buf_free(&not_a_link);
	return same;
}

/* One value per observation: the concatenated buf_put_bytes of a record. */
static int split_values(const struct buf *values, size_t n, const void **p, size_t *len)
{
	struct reader r;
	reader_init(&r, values->data, values->len);
	for (size_t i = 0; i < n; i++) {
		p[i] = reader_bytes(&r, &len[i]);
		if (!p[i])
			return -1;
	}
	return r.left == 0 ? 0 : -1;
}

/* The portable path set with its values, in canonical order, with one
 * OBS_BASE observation for each base that the outputs (rec->pinned) or the
 * lookups (observed_path) pin; *pins and why[] get all of them (why[i]
 * malloc'd). */
static int portable_pathset(const struct record *rec, const struct step_bases *b,
                            struct pathset *pp, struct buf *values, size_t **perm_out,
                            unsigned *pins, char **why)
{
	const struct pathset *ps = &rec->ps;
	size_t n = ps->nobs;
	size_t total = n + STEP_MAX_BASES;
	const void **v = xcalloc(total, sizeof *v);
	size_t *vlen = xcalloc(total, sizeof *vlen);
	struct buf *conv = xcalloc(total, sizeof *conv);
	for (size_t i = 0; i < total; i++)
		buf_init(&conv[i]);
	*pins = rec->pinned;
	for (int i = 0; i < STEP_MAX_BASES; i++)
		why[i] = rec->pinned_by[i] ? xstrdup(rec->pinned_by[i]) : NULL;
	/* base_dir's real path in an output names the checkout below it, which
	 * only the real cwd tells apart. */
	if (portable_cwd_relative(b) && (*pins & (1u << STEP_BASE_DIR))) {
		*pins &= ~(1u << STEP_BASE_DIR);
		if (!(*pins & (1u << STEP_BASE_CWD))) {
			*pins |= 1u << STEP_BASE_CWD;
			free(why[STEP_BASE_CWD]);
			why[STEP_BASE_CWD] = why[STEP_BASE_DIR];
			why[STEP_BASE_DIR] = NULL;
		}
	}
	/* Observation i of the record is pp's to_pp[i] (SIZE_MAX: dropped). */
	size_t *to_pp = xcalloc(n ? n : 1, sizeof *to_pp);
	int rc = split_values(&rec->values, n, v, vlen);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct observation *o = &ps->obs[i];
		to_pp[i] = SIZE_MAX;
		if (implied_by_cwd(o, ps->paths[o->path], v[i], vlen[i], b))
			continue;
		size_t k = pp->nobs;
		int pin;
		char *p = observed_path(ps, o, ps->paths[o->path], b, &pin);
		if (pin >= 0 && !(*pins & (1u << pin))) {
			*pins |= 1u << pin;
			why[pin] = xasprintf("a search upwards from %s reached %s", b->dir[pin],
			                     ps->paths[o->path]);
		}
		if (!p || portable_value(v[i], vlen[i], b, &conv[k]) < 0) {
			free(p);
			rc = -1;
			break;
		}
		const char **excluded = pathset_excluded(ps, i);
		pathset_add(pp, (enum obs_kind)o->kind, o->flags, p, excluded);
		to_pp[i] = k;
		free(excluded);
		free(p);
	}
	for (int i = 0; i < STEP_MAX_BASES && rc == 0; i++) {
		if (!(*pins & (1u << i)) || !portable_base_at(b, i))
			continue;
		char *p = portable_path(b->dir[i], b);
		size_t k = pp->nobs;
		/* The value through the function that evaluates it later. */
		observe_value(OBS_BASE, 0, b->dir[i], NULL, NULL, &conv[k]);
		pathset_add(pp, OBS_BASE, 0, p, NULL);
		free(p);
	}
	size_t added = pp->nobs;
	size_t *perm = NULL;
	if (rc == 0) {
		pathset_canonicalise(pp, &perm);
		const struct buf **at = xcalloc(pp->nobs ? pp->nobs : 1, sizeof *at);
		for (size_t i = 0; i < added; i++)
			at[perm[i]] = &conv[i];
		for (size_t i = 0; i < pp->nobs; i++)
			buf_put_bytes(values, at[i]->data, at[i]->len);
		free(at);
		/* The record's own numbering, for its listings. */
		for (size_t i = 0; i < n; i++)
			to_pp[i] = to_pp[i] == SIZE_MAX ? SIZE_MAX : perm[to_pp[i]];
		free(perm);
		perm = to_pp;
		to_pp = NULL;
	}
	free(to_pp);
	for (size_t i = 0; i < total; i++)
		buf_free(&conv[i]);
	free(conv);
	free(v);
	free(vlen);
	*perm_out = perm;
	return rc;
}

/* Listings refer to observations by index: renumbered as perm says. */
static void renumber_listings(const struct buf *listings, const size_t *perm, size_t n,
                              struct buf *out)
{
	struct reader r;
	reader_init(&r, listings->data, listings->len);
	while (r.left && !r.failed) {
		uint32_t idx = reader_u32(&r);
		size_t len;
		const void *l = reader_bytes(&r, &len);
		if (!l || idx >= n)
			break;
		if (perm[idx] == SIZE_MAX)
			continue;
		buf_put_u32(out, (uint32_t)perm[idx]);
		buf_put_bytes(out, l, len);
	}
}

/* The outputs in portable form, into out (empty). */
static int portable_outputs(const struct result *res, const struct step_bases *b,
                            struct result *out)
{
	for (size_t i = 0; i < res->noutputs; i++) {
		const struct output *o = &res->outputs[i];
		char *p = portable_path(o->path, b);
		int abs_target = output_target_is_path(o);
		char *t = abs_target ? portable_path(o->target, b) : NULL;
		if (!p || (abs_target && !t)) {
			free(p);
			free(t);
			return -1;
		}
		struct output *q = result_copy_output(out, o, p);
		free(p);
		if (t) {
			free(q->target);
			q->target = t;
		}
	}
	return 0;
}

/* "output /a/x.d contains /a; stdout contains /home/u" (malloc'd), or NULL. */
static char *pin_reason(unsigned pins, char *const *why, const struct step_bases *b)
{
	struct buf all;
	buf_init(&all);
	for (int i = 0; i < STEP_MAX_BASES; i++)
		if ((pins & (1u << i)) && portable_base_at(b, i))
			buf_addf(&all, "%s%s", all.len ? "; " : "", why[i] ? why[i] : "an output");
	if (!all.len) {
		buf_free(&all);
		return NULL;
	}
	return buf_detach(&all, NULL);
}

int portable_record(struct record *rec, const struct step_bases *b)
{
	if (!portable_has_bases(b))
		return 0;
	struct pathset pp;
	struct buf values, listings;
	struct result outs;
	size_t *perm = NULL;
	unsigned pins = 0;
	char *why[STEP_MAX_BASES] = {NULL};
	pathset_init(&pp);
	buf_init(&values);
	buf_init(&listings);
	result_init(&outs);
	int rc = portable_pathset(rec, b, &pp, &values, &perm, &pins, why);
	if (rc == 0)
		rc = portable_outputs(&rec->result, b, &outs);
	if (rc < 0) {
		pathset_free(&pp);
		buf_free(&values);
		result_free(&outs);
		free(perm);
		for (int i = 0; i < STEP_MAX_BASES; i++)
			free(why[i]);
		return -1;
	}
	renumber_listings(&rec->listings, perm, rec->ps.nobs, &listings);
	free(perm);

	pathset_free(&rec->ps);
	rec->ps = pp;
	buf_reset(&rec->ps_body);
	pathset_encode(&rec->ps, &rec->ps_body);
	digest_bytes(rec->ps_body.data, rec->ps_body.len, &rec->ps_digest);
	buf_free(&rec->values);
	rec->values = values;
	buf_free(&rec->listings);
	rec->listings = listings;
	/* The outputs move over; everything else of the result stays. */
	struct result *res = &rec->result;
	for (size_t i = 0; i < res->noutputs; i++) {
		free(res->outputs[i].path);
		free(res->outputs[i].target);
		free(res->outputs[i].value);
	}
	free(res->outputs);
	res->outputs = outs.outputs;
	res->noutputs = outs.noutputs;
	res->alloc = outs.alloc;
	free(res->pinned);
	res->pinned = pin_reason(pins, why, b);
	rec->pinned = pins;
	for (int i = 0; i < STEP_MAX_BASES; i++) {
		free(rec->pinned_by[i]);
		rec->pinned_by[i] = why[i];
	}
	return 0;
}
