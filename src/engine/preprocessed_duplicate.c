/*
 * Preprocessed duplicates (preprocessed_duplicate.h): noting an eligible
 * compile under its key without define words, and serving it to a compile
 * that preprocesses to the same text.
 */
#include "cachet/preprocessed_duplicate.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/define_words.h"
#include "cachet/duplicate.h"
#include "cachet/lookup.h"
#include "cachet/output_words.h"
#include "cachet/pathset.h"
#include "cachet/record.h"
#include "cachet/step.h"
#include "cachet/store.h"
#include "cachet/strv.h"

/* 1 when the path set reads a precompiled header: gcc and clang use one
 * only when the macros defined before it agree with those it was made
 * under, so that a -D decides whether the compile reads it or the header
 * (which -E reads in any case). */
static int reads_precompiled_header(const struct pathset *ps)
{
	for (size_t i = 0; i < ps->nobs; i++) {
		if (ps->obs[i].kind != OBS_READ)
			continue;
		const char *p = ps->paths[ps->obs[i].path];
		size_t n = strlen(p);
		if ((n > 4 && (!strcmp(p + n - 4, ".gch") || !strcmp(p + n - 4, ".pch"))) ||
		    strstr(p, ".gch/"))
			return 1;
	}
	return 0;
}

/* argv without its define words (define_words_remove). */
struct reduced {
	char **argv;
	size_t argc;
	size_t *at; /* the index in the step's argv of each word */
	char **defines;
};

static void reduced_free(struct reduced *r)
{
	strv_free(r->argv);
	strv_free(r->defines);
	free(r->at);
	memset(r, 0, sizeof *r);
}

static int reduce(char *const *argv, struct reduced *r)
{
	memset(r, 0, sizeof *r);
	r->argv = define_words_remove(argv, &r->at, &r->defines);
	if (!r->argv)
		return -1;
	r->argc = strv_len(r->argv);
	return 0;
}

/* The mask over the reduced argv of the words of mask (over the step's
 * argv): -1 when one of them is a define word. */
static int reduced_mask(const struct reduced *r, uint64_t mask, uint64_t *out)
{
	uint64_t m = 0;
	for (size_t j = 0; j < r->argc && j < OUTPUT_WORDS_MAX; j++)
		if (r->at[j] < OUTPUT_WORDS_MAX && (mask & ((uint64_t)1 << r->at[j])))
			m |= (uint64_t)1 << j;
	*out = m;
	return __builtin_popcountll(m) == __builtin_popcountll(mask) ? 0 : -1;
}

/* The mask over the step's argv of the words of mask (over the reduced
 * argv): -1 when one lies past the bits. */
static int full_mask(const struct reduced *r, uint64_t mask, uint64_t *out)
{
	uint64_t m = 0;
	for (size_t j = 0; j < r->argc && j < OUTPUT_WORDS_MAX; j++) {
		if (!(mask & ((uint64_t)1 << j)))
			continue;
		if (r->at[j] >= OUTPUT_WORDS_MAX)
			return -1;
		m |= (uint64_t)1 << r->at[j];
	}
	*out = m;
	return 0;
}

void preprocessed_duplicate_keys(const struct step *step, const struct record *rec, uint64_t mask,
                                 struct store_duplicate *d, struct buf *defines)
{
	d->has_pp = 0;
	if (define_words_ineligible(step->exe, step->argv) || reads_precompiled_header(&rec->ps))
		return;
	struct reduced r;
	uint64_t pmask;
	if (reduce(step->argv, &r) < 0 || reduced_mask(&r, mask, &pmask) < 0) {
		reduced_free(&r);
		return;
	}
	char **masked = duplicate_masked_argv(r.argv, pmask);
	if (step_defines_argv_key(step, masked, &d->pkey) == 0 &&
	    step_defines_shape_key(step, r.argc, &d->pshape) == 0) {
		d->has_pp = 1;
		d->pmask = pmask;
		for (char **w = r.defines; *w; w++)
			buf_add(defines, *w, strlen(*w) + 1);
		d->defines = defines->data;
		d->defines_len = defines->len;
	}
	strv_free(masked);
	reduced_free(&r);
}

/* ---- the preprocessor runs ---- */

/* What one preprocessor run gave: the digests compared. */
struct preprocessed {
	struct digest text, err;
	struct record *rec; /* this step's own run only */
};

static void preprocessed_free(struct preprocessed *p)
{
	if (p->rec) {
		record_free(p->rec);
		free(p->rec);
	}
	p->rec = NULL;
}

/* Runs the preprocessor for argv (the step's, output words mask) with the
 * define words given. -1 when it cannot be compared: it could not run,
 * failed, or did anything a preprocessor run must not. */
static int preprocess(struct lookup_tiers *t, uint64_t mask, char *const *defines, int want_record,
                      struct preprocessed *out)
{
	memset(out, 0, sizeof *out);
	char **argv = define_words_preprocess_argv(t->step->argv, mask, defines);
	if (!argv)
		return -1;
	struct lookup_preprocessed pp = {.ok = 0};
	buf_init(&pp.out);
	buf_init(&pp.err);
	int ok =
	    t->preprocess(t->ctx, argv, want_record, &pp) == 0 && pp.ok && (!want_record || pp.rec);
	strv_free(argv);
	if (ok) {
		define_words_text_digest(pp.out.data, pp.out.len, &out->text);
		digest_bytes(pp.err.data, pp.err.len, &out->err);
		out->rec = pp.rec;
	} else if (pp.rec) {
		record_free(pp.rec);
		free(pp.rec);
	}
	buf_free(&pp.out);
	buf_free(&pp.err);
	return ok ? 0 : -1;
}

/* This step's own preprocessor run, made once for the siblings tried
 * under one mask. */
struct own_run {
	int done, ok;
	uint64_t mask;
	struct preprocessed pp;
};

/* ---- the union of two path sets ---- */

/* Adds the observations of ps, with their values (buf_put_bytes each, in
 * ps's order), to u; v and vlen get the values at the indexes added. */
static int add_observations(struct pathset *u, const struct pathset *ps, const void *values,
                            size_t values_len, const unsigned char ***v, size_t **vlen, size_t *nv)
{
	struct reader r;
	reader_init(&r, values, values_len);
	for (size_t i = 0; i < ps->nobs; i++) {
		size_t len;
		const unsigned char *value = reader_bytes(&r, &len);
		if (!value)
			return -1;
		const char **excluded = pathset_excluded(ps, i);
		size_t k = pathset_add(u, (enum obs_kind)ps->obs[i].kind, ps->obs[i].flags,
		                       ps->paths[ps->obs[i].path], excluded);
		free(excluded);
		if (k >= *nv) {
			size_t n = k + 1 > 2 * *nv ? k + 1 : 2 * *nv;
			*v = xrealloc(*v, n * sizeof **v);
			*vlen = xrealloc(*vlen, n * sizeof **vlen);
			memset(*v + *nv, 0, (n - *nv) * sizeof **v);
			*nv = n;
		}
		(*v)[k] = value;
		(*vlen)[k] = len;
	}
	return r.left == 0 ? 0 : -1;
}

/* Makes m's path set the union of the sibling's (renamed to this step's
 * outputs, with the values found now) and this step's preprocessor run's
 * (own, stored form). Every fact in either held when it was looked at
 * just now, so together they hold; and they cover what this step's
 * compile reads: the driver, cc1 and as are the sibling's programs, run
 * with the same options on the same text, and the headers, probes and
 * absences that decide that text (a `#if defined(X) &&
 * __has_include(<y.h>)` probes y.h only under -DX) are this step's own
 * run's. A fact both looked at must have one value in both, else a file
 * changed between them: -1, nothing is served. */
static int unite(const struct step *step, struct duplicate_entry *m, const struct record *own)
{
	struct pathset sib, u;
	struct error e = {0};
	if (pathset_decode(m->ps_body.data, m->ps_body.len, &sib, &e) < 0)
		return -1;
	pathset_init(&u);
	const unsigned char **v = NULL;
	size_t *vlen = NULL, nv = 0;
	int rc = add_observations(&u, &sib, m->values.data, m->values.len, &v, &vlen, &nv);
	if (rc == 0)
		rc = add_observations(&u, &own->ps, own->values.data, own->values.len, &v, &vlen,
		                      &nv);
	struct buf values;
	buf_init(&values);
	if (rc == 0)
		rc = pathset_canonicalise_values(&u, v, vlen, &values);
	if (rc == 0) {
		buf_reset(&m->ps_body);
		pathset_encode(&u, &m->ps_body);
		digest_bytes(m->ps_body.data, m->ps_body.len, &m->ps_digest);
		buf_free(&m->values);
		m->values = values;
		buf_init(&values);
		pathset_strong_key_from_values(&step->weak, &m->ps_digest, m->values.data,
		                               m->values.len, &m->strong);
	}
	buf_free(&values);
	free(v);
	free(vlen);
	pathset_free(&u);
	pathset_free(&sib);
	return rc;
}

/* ---- the tier ---- */

/* The words of a NUL-separated list, as a vector (malloc'd). */
static char **split_words(const char *words, size_t len)
{
	char **v = xcalloc(1, sizeof *v);
	size_t n = 0;
	for (const char *w = words, *end = words + len; w < end;) {
		const char *nul = memchr(w, '\0', (size_t)(end - w));
		if (!nul) {
			strv_free(v);
			return NULL;
		}
		strv_push(&v, &n, xstrdup(w));
		w = nul + 1;
	}
	return v;
}

/* Tries the sibling noted as d, whose output words are the bits of mask
 * over this step's argv. Returns as lookup_offer, or 0. */
static int try_sibling(struct lookup_tiers *t, const struct store_duplicate *d, uint64_t mask,
                       char *const *own_defines, struct own_run *own)
{
	char **sib_defines = split_words(d->defines, d->defines_len);
	if (!sib_defines)
		return 0;
	struct duplicate_entry m;
	int served = 0;
	/* The cheap check first: the sibling's entry holds here. */
	if (duplicate_entry_hold(t, d, mask, &m) < 0)
		goto out;
	if (!own->done || own->mask != mask) {
		preprocessed_free(&own->pp);
		own->done = 1;
		own->mask = mask;
		own->ok = preprocess(t, mask, own_defines, 1, &own->pp) == 0;
	}
	if (!own->ok)
		goto out;
	struct preprocessed sib;
	if (preprocess(t, mask, sib_defines, 0, &sib) < 0)
		goto out;
	if (digest_equal(&sib.text, &own->pp.text) && digest_equal(&sib.err, &own->pp.err) &&
	    unite(t->step, &m, own->pp.rec) == 0)
		served = duplicate_entry_serve(t, &m, LOOKUP_TIER_PREPROCESSED_DUPLICATE);
	preprocessed_free(&sib);
out:
	duplicate_entry_free(&m);
	strv_free(sib_defines);
	return served;
}

static int stops(int served)
{
	return served == LOOKUP_SERVED || served == LOOKUP_STOP;
}

int lookup_preprocessed_duplicate_tier(struct lookup_tiers *t)
{
	const struct step *step = t->step;
	/* Stored before it is restored, as a duplicate's hit. */
	if (!t->preprocess || store_is_readonly(t->store) ||
	    define_words_ineligible(step->exe, step->argv))
		return 0;
	struct reduced r;
	struct digest pshape;
	if (reduce(step->argv, &r) < 0 || step_defines_shape_key(step, r.argc, &pshape) < 0) {
		reduced_free(&r);
		return 0;
	}
	uint64_t masks[DUPLICATE_MAX_MASKS];
	size_t nmasks = 0;
	struct error e = {0};
	if (store_pp_duplicate_masks(t->store, &pshape, masks, DUPLICATE_MAX_MASKS, &nmasks, &e) <
	    0) {
		t->fault(t->ctx, "cannot read the index", &e);
		nmasks = 0;
	}
	struct own_run own = {0};
	size_t tries = 0;
	int served = 0;
	for (size_t i = 0; i < nmasks && !stops(served) && tries < PREPROCESSED_DUPLICATE_MAX_TRIES;
	     i++) {
		uint64_t full;
		if ((r.argc < OUTPUT_WORDS_MAX && (masks[i] >> r.argc)) ||
		    full_mask(&r, masks[i], &full) < 0)
			continue;
		char **masked = duplicate_masked_argv(r.argv, masks[i]);
		struct digest pkey;
		int keyed = step_defines_argv_key(step, masked, &pkey) == 0;
		strv_free(masked);
		struct store_duplicate rows[PREPROCESSED_DUPLICATE_MAX_TRIES];
		size_t nrows = 0;
		if (!keyed ||
		    store_pp_duplicate_find(t->store, &pkey, rows, PREPROCESSED_DUPLICATE_MAX_TRIES,
		                            &nrows, &e) < 0)
			continue;
		for (size_t k = 0; k < nrows; k++) {
			/* The step itself, or a row that is not what its key
			 * says. */
			if (!stops(served) && tries < PREPROCESSED_DUPLICATE_MAX_TRIES &&
			    !digest_equal(&rows[k].weak, &step->weak) && rows[k].has_pp &&
			    rows[k].pmask == masks[i] && digest_equal(&rows[k].pshape, &pshape)) {
				tries++;
				served = try_sibling(t, &rows[k], full, r.defines, &own);
			}
			store_duplicate_free(&rows[k]);
		}
	}
	preprocessed_free(&own.pp);
	reduced_free(&r);
	if (served == LOOKUP_SERVED)
		t->count(t->ctx, "preprocessed_duplicate_hits", 1);
	return stops(served) ? served : 0;
}
