/*
 * Duplicate steps (duplicate.h): noting an eligible entry under its
 * duplicate key at store time, and serving it to a step that differs from
 * it only in its output words.
 */
#include "cachet/duplicate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/lookup.h"
#include "cachet/output_words.h"
#include "cachet/path.h"
#include "cachet/pathset.h"
#include "cachet/portable.h"
#include "cachet/preprocessed_duplicate.h"
#include "cachet/record.h"
#include "cachet/result.h"
#include "cachet/step.h"
#include "cachet/store.h"
#include "cachet/strmap.h"
#include "cachet/strv.h"

/* ---- the names a masked word gives ---- */

/* What the masked words of one step name: the tokens a text output may
 * hold at path boundaries (the words' paths as written and made absolute),
 * and the needles none of its other bytes may hold (those, and the paths
 * without their extension, which derived names share: x.c.gcda and
 * x.c.dwo beside x.c.o). */
struct names {
	char **tokens;
	size_t ntokens;
	char **needles;
	size_t nneedles;
};

static void names_add(struct names *nm, const char *cwd, const char *word)
{
	size_t prefix;
	const char *part = output_word_path(word, &prefix);
	char *abs = path_join(cwd, part);
	strv_push(&nm->tokens, &nm->ntokens, xstrdup(part));
	strv_push(&nm->tokens, &nm->ntokens, xstrdup(abs));
	strv_push(&nm->needles, &nm->nneedles, xstrdup(part));
	strv_push(&nm->needles, &nm->nneedles, xstrdup(abs));
	/* A relative stem without a directory ("a" of a.o) occurs in any
	 * binary by chance; the absolute stem covers it. */
	char *s = strchr(part, '/') ? output_name_stem(part) : NULL;
	if (s)
		strv_push(&nm->needles, &nm->nneedles, s);
	s = output_name_stem(abs);
	if (s)
		strv_push(&nm->needles, &nm->nneedles, s);
	free(abs);
}

static void names_free(struct names *nm)
{
	strv_free(nm->tokens);
	strv_free(nm->needles);
	memset(nm, 0, sizeof *nm);
}

char **duplicate_masked_argv(char *const *argv, uint64_t mask)
{
	size_t n = strv_len(argv);
	char **v = xcalloc(n + 1, sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = i < OUTPUT_WORDS_MAX && (mask & ((uint64_t)1 << i))
		           ? output_word_placeholder(argv[i])
		           : xstrdup(argv[i]);
	return v;
}

/* ---- noting a stored miss ---- */

/* 1 when bytes of a blob may be served under other names (within
 * *budget): as output_bytes_rewritable finds them, from what the search
 * made while the output was recorded, and only where that cannot tell (a
 * text that holds a name, an output not searched) from the bytes read back
 * from the store. */
static int blob_rewritable(struct store *s, const struct record *rec, const struct blob_ref *ref,
                           const struct names *nm, size_t *budget)
{
	if (!ref->size)
		return 1;
	if (ref->size > *budget)
		return 0;
	*budget -= (size_t)ref->size;
	int has_nul = 0;
	int held = record_names_held(rec, &ref->digest, nm->needles, nm->nneedles, &has_nul);
	if (held == 0)
		return 1;
	if (held == 1 && has_nul)
		return 0;
	void *data;
	size_t len;
	struct error e = {0};
	if (store_blob_read(s, ref, &data, &len, &e) < 0)
		return 0;
	int ok =
	    output_bytes_rewritable(data, len, nm->tokens, nm->ntokens, nm->needles, nm->nneedles);
	free(data);
	return ok;
}

/* A stream is replayed as it is: it must not name an output at all. */
static int stream_clean(const void *data, size_t len, const struct names *nm)
{
	return output_bytes_rewritable(data, len, NULL, 0, nm->needles, nm->nneedles);
}

/* The reason step is not eligible, or NULL; *mask gets its output words. */
static const char *eligibility(struct store *s, const struct step *step, const struct record *rec,
                               const struct duplicate_streams *streams, uint64_t *mask)
{
	const struct result *res = &rec->result;
	if (!res->noutputs)
		return "no outputs";
	if (!output_program_name_blind(step->exe))
		return "not a compiler";
	for (size_t i = 0; i < rec->ps.nobs; i++)
		if (rec->ps.obs[i].kind == OBS_EXEC &&
		    !output_program_name_blind(rec->ps.paths[rec->ps.obs[i].path]))
			return "runs a program other than a compiler";
	char **outputs = xcalloc(res->noutputs, sizeof *outputs);
	const char *why = NULL;
	for (size_t k = 0; k < res->noutputs && !why; k++) {
		/* Files only: a directory, link or deletion is named otherwise. */
		if (res->outputs[k].kind != OUT_FILE)
			why = "an output that is not a file";
		else if (!(outputs[k] = portable_local_path(res->outputs[k].path, &step->bases)))
			why = "an output under an unset base";
	}
	int all_named = 0;
	if (!why) {
		*mask =
		    output_words_mask(step->argv, step->cwd, outputs, res->noutputs, &all_named);
		if (!*mask)
			why = "no argv word names an output";
		else if (!all_named)
			why = "an output whose name no argv word gives";
	}
	for (size_t k = 0; k < res->noutputs; k++)
		free(outputs[k]);
	free(outputs);
	if (why)
		return why;
	struct names nm = {0};
	for (size_t i = 1; i < OUTPUT_WORDS_MAX && step->argv[i]; i++)
		if (*mask & ((uint64_t)1 << i))
			names_add(&nm, step->cwd, step->argv[i]);
	size_t budget = DUPLICATE_MAX_SCAN;
	if (streams->out_len + streams->err_len > budget ||
	    !stream_clean(streams->out, streams->out_len, &nm) ||
	    !stream_clean(streams->err, streams->err_len, &nm))
		why = "stdout or stderr names an output";
	for (size_t k = 0; k < res->noutputs && !why; k++)
		if (!blob_rewritable(s, rec, &res->outputs[k].blob, &nm, &budget))
			why = "an output holds an output's name";
	names_free(&nm);
	return why;
}

int duplicate_note(struct store *s, const struct step *step, const struct record *rec,
                   const struct digest *strong, const struct duplicate_streams *streams,
                   struct store_duplicate *out, const char **why)
{
	memset(out, 0, sizeof *out);
	uint64_t mask = 0;
	const char *no = eligibility(s, step, rec, streams, &mask);
	if (why)
		*why = no;
	if (no)
		return 0;
	out->mask = mask;
	out->weak = step->weak;
	out->pathset = rec->ps_digest;
	out->strong = *strong;
	char **masked = duplicate_masked_argv(step->argv, mask);
	int keyed =
	    step_argv_key(step, masked, &out->dkey) == 0 && step_shape_key(step, &out->shape) == 0;
	strv_free(masked);
	if (!keyed) {
		if (why)
			*why = "cannot be keyed under base_dir";
		return 0;
	}
	struct buf words;
	buf_init(&words);
	for (size_t i = 1; i < OUTPUT_WORDS_MAX && step->argv[i]; i++)
		if (mask & ((uint64_t)1 << i))
			buf_add(&words, step->argv[i], strlen(step->argv[i]) + 1);
	/* Owned as store_duplicate_get's are: store_duplicate_free. */
	out->words = buf_detach(&words, &out->words_len);
	/* A compile may also serve those whose define words differ. */
	struct buf defines;
	buf_init(&defines);
	preprocessed_duplicate_keys(step, rec, mask, out, &defines);
	if (out->has_pp)
		out->defines = buf_detach(&defines, &out->defines_len);
	else
		buf_free(&defines);
	return 1;
}

/* ---- renaming paths ---- */

/* Old paths to new ones: a pair renames its path and, unless exact, what
 * lies under it. */
struct renames {
	char **from, **to;
	unsigned char *exact;
	size_t n;
	int conflict; /* one path renamed two ways */
};

static void renames_add(struct renames *m, const char *from, const char *to, int exact)
{
	/* A path that keeps its name is kept too: an output of this step
	 * at the sibling's path (a compile whose define words changed,
	 * preprocessed_duplicate.h) is still one it names. */
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->from[i], from)) {
			if (strcmp(m->to[i], to))
				m->conflict = 1;
			return;
		}
	m->from = xrealloc(m->from, (m->n + 1) * sizeof *m->from);
	m->to = xrealloc(m->to, (m->n + 1) * sizeof *m->to);
	m->exact = xrealloc(m->exact, m->n + 1);
	m->from[m->n] = xstrdup(from);
	m->to[m->n] = xstrdup(to);
	m->exact[m->n] = (unsigned char)exact;
	m->n++;
}

static void renames_free(struct renames *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->from[i]);
		free(m->to[i]);
	}
	free(m->from);
	free(m->to);
	free(m->exact);
	memset(m, 0, sizeof *m);
}

/* The new name of path (malloc'd), or NULL when it keeps its own. */
static char *renamed(const struct renames *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++) {
		size_t len = strlen(m->from[i]);
		if (strncmp(path, m->from[i], len))
			continue;
		if (!path[len])
			return xstrdup(m->to[i]);
		if (path[len] == '/' && !m->exact[i])
			return xasprintf("%s%s", m->to[i], path + len);
	}
	return NULL;
}

/* Renames the paths of ps; -1 when a new name is one ps already holds
 * (two observations of one path would then disagree). */
static int rename_pathset(void *ctx, struct pathset *ps)
{
	const struct renames *m = ctx;
	struct strmap seen;
	strmap_init(&seen);
	int rc = 0;
	pathset_own_paths(ps);
	for (size_t i = 0; i < ps->npaths; i++) {
		char *to = renamed(m, ps->paths[i]);
		if (to) {
			free(ps->paths[i]);
			ps->paths[i] = to;
		}
	}
	for (size_t i = 0; i < ps->npaths && rc == 0; i++) {
		if (strmap_get(&seen, ps->paths[i]))
			rc = -1;
		strmap_put(&seen, ps->paths[i], (void *)1);
	}
	strmap_free(&seen);
	return rc;
}

/* 1 when a word of argv outside mask names either directory (as
 * `-ICMakeFiles/a.dir` does), relative to the cwd or absolute. */
static int dir_named_elsewhere(const struct step *step, uint64_t mask, const char *a, const char *b)
{
	size_t cwd_len = strlen(step->cwd);
	const char *dirs[2] = {a, b};
	for (size_t i = 1; step->argv[i]; i++) {
		if (i < OUTPUT_WORDS_MAX && (mask & ((uint64_t)1 << i)))
			continue;
		for (int k = 0; k < 2; k++) {
			const char *rel = dirs[k];
			if (!strncmp(rel, step->cwd, cwd_len) && rel[cwd_len] == '/')
				rel += cwd_len + 1;
			if (strstr(step->argv[i], dirs[k]) || strstr(step->argv[i], rel))
				return 1;
		}
	}
	return 0;
}

/* The renames from the words an entry was noted with (old, NUL-separated)
 * to this step's words under mask, as local paths (local) and in the
 * stored form (stored); its names (old) and this step's (now) for the text
 * rewrite. -1 when they do not pair up. */
static int pair_words(const struct step *step, uint64_t mask, const char *old, size_t old_len,
                      struct renames *local, struct renames *stored, struct names *was,
                      struct names *now)
{
	const char *w = old, *end = old + old_len;
	for (size_t i = 1; step->argv[i] && i < OUTPUT_WORDS_MAX; i++) {
		if (!(mask & ((uint64_t)1 << i)))
			continue;
		const char *nul = w < end ? memchr(w, '\0', (size_t)(end - w)) : NULL;
		if (!nul)
			return -1;
		size_t op, np;
		const char *old_part = output_word_path(w, &op);
		const char *new_part = output_word_path(step->argv[i], &np);
		if (op != np || strncmp(w, step->argv[i], op))
			return -1;
		char *from = path_join(step->cwd, old_part);
		char *to = path_join(step->cwd, new_part);
		renames_add(local, from, to, 0);
		char *from_dir = path_dirname(from), *to_dir = path_dirname(to);
		/* The directory an output was made in is looked at by itself
		 * (it must exist, or a restore would make it where the step
		 * fails): at the new output's. Only where nothing else of the
		 * step may have looked at it: not the cwd or above it, not one
		 * within the other, not named by a word that stays. */
		if (strcmp(from_dir, to_dir) &&
		    (path_is_under(step->cwd, from_dir) || path_is_under(step->cwd, to_dir) ||
		     path_is_under(from_dir, to_dir) || path_is_under(to_dir, from_dir) ||
		     dir_named_elsewhere(step, mask, from_dir, to_dir)))
			local->conflict = 1;
		renames_add(local, from_dir, to_dir, 1);
		char *pf = portable_path(from, &step->bases), *pt = portable_path(to, &step->bases);
		char *pfd = portable_path(from_dir, &step->bases);
		char *ptd = portable_path(to_dir, &step->bases);
		if (pf && pt && pfd && ptd) {
			renames_add(stored, pf, pt, 0);
			renames_add(stored, pfd, ptd, 1);
		} else {
			local->conflict = 1;
		}
		free(pf);
		free(pt);
		free(pfd);
		free(ptd);
		free(from_dir);
		free(to_dir);
		free(from);
		free(to);
		names_add(was, step->cwd, w);
		names_add(now, step->cwd, step->argv[i]);
		w = nul + 1;
	}
	return w == end && !local->conflict && !stored->conflict ? 0 : -1;
}

/* ---- the tier ---- */

/* The values of a path set's observations, split (pointers into values). */
struct value_list {
	const unsigned char **v;
	size_t *len;
	size_t n;
};

static int values_split(const void *values, size_t len, size_t nobs, struct value_list *out)
{
	out->v = xcalloc(nobs ? nobs : 1, sizeof *out->v);
	out->len = xcalloc(nobs ? nobs : 1, sizeof *out->len);
	out->n = nobs;
	struct reader r;
	reader_init(&r, values, len);
	for (size_t i = 0; i < nobs; i++) {
		out->v[i] = reader_bytes(&r, &out->len[i]);
		if (!out->v[i])
			return -1;
	}
	return r.left == 0 ? 0 : -1;
}

static void values_free(struct value_list *l)
{
	free(l->v);
	free(l->len);
}

/* What only duplicate.c reads of an entry being made (duplicate_entry). */
struct duplicate_parts {
	struct renames local, stored;
	struct names was, now;
	void *ps_body; /* the noted entry's path set and result, as stored */
	size_t ps_len;
	void *res_body;
	size_t res_len;
	struct result res;      /* the noted result, decoded */
	struct result made_res; /* this step's, stored form */
	struct buf result_body;
};

/* This step's path set: the noted one (stored form) renamed and put in
 * canonical order again, with the values found here in that order, and its
 * strong key. */
static int make_pathset(const struct step *step, const void *body, size_t len,
                        const struct renames *stored, const struct buf *values,
                        struct duplicate_entry *m)
{
	struct pathset ps;
	struct error e = {0};
	if (pathset_decode(body, len, &ps, &e) < 0)
		return -1;
	struct value_list vl;
	int rc = values_split(values->data, values->len, ps.nobs, &vl);
	if (rc == 0)
		rc = rename_pathset((void *)stored, &ps);
	/* Observations that became one must have agreed. */
	if (rc == 0)
		rc = pathset_canonicalise_values(&ps, vl.v, vl.len, &m->values);
	if (rc == 0) {
		pathset_encode(&ps, &m->ps_body);
		digest_bytes(m->ps_body.data, m->ps_body.len, &m->ps_digest);
		pathset_strong_key_from_values(&step->weak, &m->ps_digest, m->values.data,
		                               m->values.len, &m->strong);
	}
	values_free(&vl);
	pathset_free(&ps);
	return rc;
}

/* This step's result: the noted one (stored form, res) with its outputs
 * renamed and the names its text outputs hold rewritten (new blobs). */
static int make_result(struct store *s, struct result *res, const struct renames *stored,
                       const struct names *was, const struct names *now, const struct buf *values,
                       struct duplicate_parts *m)
{
	for (size_t k = 0; k < res->noutputs; k++) {
		struct output *o = &res->outputs[k];
		char *to = o->kind == OUT_FILE ? renamed(stored, o->path) : NULL;
		/* Every output must be one this step names: any other would
		 * be written where the first step wrote it. */
		if (!to)
			return -1;
		free(o->path);
		o->path = to;
		if (!o->blob.size)
			continue;
		void *data;
		size_t len;
		struct error e = {0};
		if (o->blob.size > DUPLICATE_MAX_SCAN ||
		    store_blob_read(s, &o->blob, &data, &len, &e) < 0)
			return -1;
		int ok = output_bytes_rewritable(data, len, was->tokens, was->ntokens, was->needles,
		                                 was->nneedles);
		struct buf text;
		buf_init(&text);
		if (ok &&
		    output_text_rewrite(data, len, was->tokens, now->tokens, was->ntokens, &text) &&
		    store_put_blob_mem(s, text.data, text.len, &o->blob, &e) < 0)
			ok = 0;
		buf_free(&text);
		free(data);
		if (!ok)
			return -1;
	}
	/* The listings are numbered by the old order: explain's only. */
	free(res->listings);
	res->listings = NULL;
	res->listings_len = 0;
	free(res->values);
	res->values = xmalloc(values->len + 1);
	memcpy(res->values, values->data, values->len);
	res->values_len = values->len;
	m->made_res = *res;
	result_init(res);
	result_encode(&m->made_res, &m->result_body);
	return 0;
}

void duplicate_entry_free(struct duplicate_entry *m)
{
	buf_free(&m->ps_body);
	buf_free(&m->values);
	struct duplicate_parts *p = m->parts;
	if (p) {
		renames_free(&p->local);
		renames_free(&p->stored);
		names_free(&p->was);
		names_free(&p->now);
		free(p->ps_body);
		free(p->res_body);
		result_free(&p->res);
		result_free(&p->made_res);
		buf_free(&p->result_body);
		free(p);
	}
	memset(m, 0, sizeof *m);
}

int duplicate_entry_hold(struct lookup_tiers *t, const struct store_duplicate *d, uint64_t mask,
                         struct duplicate_entry *m)
{
	const struct step *step = t->step;
	memset(m, 0, sizeof *m);
	buf_init(&m->ps_body);
	buf_init(&m->values);
	struct duplicate_parts *p = m->parts = xcalloc(1, sizeof *p);
	result_init(&p->res);
	result_init(&p->made_res);
	buf_init(&p->result_body);
	struct error e = {0};
	if (pair_words(step, mask, d->words, d->words_len, &p->local, &p->stored, &p->was,
	               &p->now) < 0)
		return -1;
	if (store_get_pathset(t->store, &d->weak, &d->pathset, &p->ps_body, &p->ps_len, &e) != 1 ||
	    store_get_result(t->store, &d->strong, &p->res_body, &p->res_len, &e) != 1)
		return -1;
	if (result_decode(p->res_body, p->res_len, &p->res, &e) < 0) {
		t->fault(t->ctx, "corrupt result", &e);
		return -1;
	}
	/* Every blob there before anything is made of them. */
	if (!lookup_blobs_present(t->store, &p->res))
		return -1;
	/* The first step's path set, at this step's output paths, keyed as
	 * the first step would: its strong key, or it does not hold here. */
	struct buf values;
	buf_init(&values);
	struct pathset_evaluation ev = {
	    .digest = &d->pathset,
	    .body = p->ps_body,
	    .len = p->ps_len,
	    .rewrite = rename_pathset,
	    .rewrite_ctx = &p->local,
	    .values = &values,
	};
	int rc = lookup_evaluate_pathset(&step->bases, &d->weak, t->dc, &ev, &e);
	if (rc == LOOKUP_PATHSET_DAMAGED)
		t->fault(t->ctx, "corrupt path set", &e);
	if (rc == LOOKUP_PATHSET_KEYED && digest_equal(&ev.strong, &d->strong))
		rc = make_pathset(step, p->ps_body, p->ps_len, &p->stored, &values, m);
	else
		rc = -1;
	buf_free(&values);
	return rc;
}

int duplicate_entry_serve(struct lookup_tiers *t, struct duplicate_entry *m, enum lookup_tier tier)
{
	struct duplicate_parts *p = m->parts;
	struct error e = {0};
	if (make_result(t->store, &p->res, &p->stored, &p->was, &p->now, &m->values, p) < 0)
		return 0;
	struct lookup_entry entry = {
	    .step = t->step,
	    .pathset = &m->ps_digest,
	    .pathset_body = m->ps_body.data,
	    .pathset_len = m->ps_body.len,
	    .strong = &m->strong,
	    .result_body = p->result_body.data,
	    .result_len = p->result_body.len,
	    .result = &p->made_res,
	};
	if (lookup_store_entry(t->store, &entry, &e) < 0)
		t->fault(t->ctx, "cannot store a duplicate's entry", &e);
	struct result served_res;
	if (result_decode(p->result_body.data, p->result_body.len, &served_res, &e) < 0)
		return 0;
	struct lookup_candidate c = {
	    .tier = tier,
	    .pathset = &m->ps_digest,
	    .pathset_body = m->ps_body.data,
	    .pathset_len = m->ps_body.len,
	    .strong = m->strong,
	    .result_body = p->result_body.data,
	    .result_len = p->result_body.len,
	    .result = &served_res,
	};
	int served = lookup_offer(t, &c);
	if (served != LOOKUP_STOP)
		result_free(&served_res);
	return served;
}

/* Tries the entry noted as d for this step. Returns as lookup_offer, or 0
 * when it does not hold. */
static int try_noted(struct lookup_tiers *t, const struct store_duplicate *d)
{
	struct duplicate_entry m;
	int served = 0;
	if (duplicate_entry_hold(t, d, d->mask, &m) == 0)
		served = duplicate_entry_serve(t, &m, LOOKUP_TIER_DUPLICATE);
	duplicate_entry_free(&m);
	return served;
}

int lookup_duplicate_tier(struct lookup_tiers *t)
{
	const struct step *step = t->step;
	struct digest shape;
	/* The hit is stored (with its rewritten blobs) before it is
	 * restored, as a remote hit is: not in a read-only cache. */
	if (store_is_readonly(t->store) || step_shape_key(step, &shape) < 0)
		return 0;
	uint64_t masks[DUPLICATE_MAX_MASKS];
	size_t nmasks = 0;
	struct error e = {0};
	if (store_duplicate_masks(t->store, &shape, masks, DUPLICATE_MAX_MASKS, &nmasks, &e) < 0) {
		t->fault(t->ctx, "cannot read the index", &e);
		return 0;
	}
	size_t argc = strv_len(step->argv);
	int served = 0;
	for (size_t i = 0; i < nmasks && served != LOOKUP_SERVED && served != LOOKUP_STOP; i++) {
		/* Recorded for a longer command line: argc is in the shape,
		 * but a damaged row is not to be believed. */
		if (argc < OUTPUT_WORDS_MAX && (masks[i] >> argc))
			continue;
		char **masked = duplicate_masked_argv(step->argv, masks[i]);
		struct digest dkey;
		int keyed = step_argv_key(step, masked, &dkey) == 0;
		strv_free(masked);
		struct store_duplicate d;
		if (!keyed || store_duplicate_get(t->store, &dkey, &d, &e) != 1)
			continue;
		/* The step itself (the index tier tried it), or a row that is
		 * not what its key says. */
		if (!digest_equal(&d.weak, &step->weak) && d.mask == masks[i] &&
		    digest_equal(&d.shape, &shape))
			served = try_noted(t, &d);
		store_duplicate_free(&d);
	}
	if (served == LOOKUP_SERVED)
		t->count(t->ctx, "duplicate_hits", 1);
	return served == LOOKUP_SERVED || served == LOOKUP_STOP ? served : 0;
}
