/*
 * The remote tier of a lookup: after a local miss, ask the remotes in turn.
 * A path set is evaluated as any other (lookup_evaluate_pathset), once its
 * signature and paths pass; an entry must match the keys it is stored
 * under and, with trusted_keys, be signed; its blobs are fetched and
 * re-hashed; the hit is restored beneath the step's roots only and stored
 * locally (lookup_store_entry) with the values found here, so the next
 * lookup of the step is a local hit.
 *
 * Keys and entries are portable (portable.h) here as in the local store, so
 * an entry goes between the tiers unchanged. Nothing here fails a step: a
 * remote that is down, slow, answers garbage or hostile entries costs a
 * miss and a counter (remote_*).
 */
#include "cachet/remote_lookup.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/lookup.h"
#include "cachet/portable.h"
#include "cachet/portable_record.h"
#include "cachet/result.h"
#include "cachet/step.h"
#include "cachet/store.h"

static void count(struct remote_lookup *x, const char *name)
{
	store_count(x->store, name, 1);
}

static void note(struct remote_lookup *x, const char *what, const struct error *e)
{
	if (x->note)
		x->note(x->note_ctx, 0, what, e);
}

/* Loads trusted_keys once. 1 when entries and path sets need a trusted
 * signature, 0 when not, -1 when they do but the keys cannot be read
 * (then nothing is trusted). */
static int trust_required(struct remote_lookup *x)
{
	if (!x->trusted_loaded) {
		char *const *items = x->trusted_keys;
		x->trusted_loaded = 1;
		x->trust_required = items[0] != NULL;
		if (items[0]) {
			struct error e = {0};
			if (trusted_keys_load(items, &x->trusted, &e) < 0) {
				/* Trust was asked for and cannot be checked: nothing is trusted. */
				if (x->note)
					x->note(x->note_ctx, 1, e.msg, NULL);
				x->trusted_loaded = -1;
			}
		}
	}
	return x->trusted_loaded < 0 ? -1 : x->trust_required;
}

/* With trusted_keys set, only what they signed counts. */
static int entry_trusted(struct remote_lookup *x, const struct remote_entry *en)
{
	int need = trust_required(x);
	return need == 0 || (need > 0 && trusted_keys_verify(&x->trusted, en));
}

static int pathset_trusted(struct remote_lookup *x, const struct digest *weak,
                           const struct remote_pathset *set)
{
	int need = trust_required(x);
	return need == 0 || (need > 0 && trusted_keys_verify_pathset(&x->trusted, weak, set));
}

/* Fetches every blob the local store lacks, re-hashing each. 0 all there,
 * 1 a blob is missing or corrupt (counted), -1 the server failed. */
static int fetch_blobs(struct remote_lookup *x, size_t tier, struct result *res)
{
	size_t n;
	struct blob_ref *refs = result_blobs(res, &n);
	int rc = 0;
	uint64_t max = remote_tier_max_blob(x->client, tier);
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (store_blob_exists(x->store, &refs[i]))
			continue;
		if (!refs[i].size) {
			/* The empty blob: nothing to fetch, but the index wants it. */
			struct blob_ref empty;
			struct error e = {0};
			if (store_put_blob_mem(x->store, "", 0, &empty, &e) < 0)
				rc = 1;
			continue;
		}
		if (refs[i].size > max || refs[i].size > SIZE_MAX / 2) {
			rc = 1;
			break;
		}
		void *data;
		size_t len;
		struct error e = {0};
		int g = remote_get(x->client, tier, "cas", &refs[i].digest, (size_t)refs[i].size,
		                   &data, &len, &e);
		if (g == REMOTE_ABSENT) {
			count(x, "remote_missing_blobs");
			rc = 1;
		} else if (g == REMOTE_TOO_LARGE) {
			count(x, "remote_corrupt");
			note(x, "blob larger than its entry says", &e);
			rc = 1;
		} else if (g != REMOTE_FOUND) {
			count(x, g == REMOTE_SKIPPED ? "remote_skipped" : "remote_errors");
			note(x, "cannot fetch a blob", &e);
			rc = -1;
		} else {
			struct digest d;
			digest_bytes(data, len, &d);
			struct blob_ref got;
			if (len != refs[i].size || !digest_equal(&d, &refs[i].digest)) {
				count(x, "remote_corrupt");
				note(x, "a blob does not match its digest", NULL);
				remote_client_fault(x->client, tier, &refs[i].digest,
				                    "a blob does not match its digest");
				rc = 1;
			} else if (store_put_blob_mem(x->store, data, len, &got, &e) < 0) {
				count(x, "errors");
				note(x, "cannot store a blob", &e);
				rc = 1;
			}
			free(data);
		}
	}
	free(refs);
	return rc;
}

/* Stores a remote hit in the local index (lookup_store_entry). Keys and
 * forms are the same in both tiers: the path set goes in as the remote has
 * it, the result (still portable) with the values found here, for explain. */
static void store_locally(struct remote_lookup *x, const struct step *step,
                          const struct remote_pathset *set, const struct digest *strong,
                          const struct buf *result_body, const struct result *res)
{
	struct lookup_entry entry = {
	    .step = step,
	    .pathset = &set->digest,
	    .pathset_body = set->body,
	    .pathset_len = set->len,
	    .strong = strong,
	    .result_body = result_body->data,
	    .result_len = result_body->len,
	    .result = res,
	};
	struct error e = {0};
	if (lookup_store_entry(x->store, &entry, &e) < 0) {
		count(x, "errors");
		note(x, "cannot store the remote hit locally", &e);
	}
}

/* Decodes a fetched entry into *en: 1 when it names the keys it was asked
 * for, 0 when it is garbage or stored under another key than it names. */
static int entry_decode_as(const void *data, size_t len, const struct digest *weak,
                           const struct digest *pathset, const struct digest *strong,
                           struct remote_entry *en, struct error *e)
{
	return remote_entry_decode(data, len, en, e) == 0 && digest_equal(&en->weak, weak) &&
	       digest_equal(&en->pathset, pathset) && digest_equal(&en->strong, strong);
}

/* What an untrusted or empty remote path set must pass before anything it
 * names is read. */
struct admission {
	struct remote_lookup *x;
	const struct step *step;
	int explaining; /* explain's read-only look: nothing counted, nothing said */
};

static int admit_remote_pathset(void *arg, const struct pathset *ps)
{
	struct admission *a = arg;
	struct remote_lookup *x = a->x;
	/* A step observes at least its program: an entry that depends on
	 * nothing would be stored locally and hit for ever, whatever the
	 * sources hold. */
	if (ps->nobs == 0) {
		if (a->explaining)
			return 0;
		count(x, "remote_refused");
		note(x, "path set with no observation refused", NULL);
		return 0;
	}
	const char *outside = trust_required(x) == 0 ? remote_pathset_outside(ps, a->step) : NULL;
	if (outside) {
		if (a->explaining)
			return 0;
		count(x, "remote_refused");
		struct error why = {0};
		error_set(&why, "%s", outside);
		note(x, "unsigned path set naming a path outside the step's roots refused", &why);
		return 0;
	}
	return 1;
}

/* Tries one path set of the list. 1 hit, 0 not this one, -1 the server
 * failed (stop asking this tier). */
static int try_pathset(struct remote_lookup *x, size_t tier, const struct step *step,
                       struct digest_cache *dc, const struct digest *w,
                       const struct remote_pathset *set, struct result *hit)
{
	struct error e = {0};
	/* An untrusted path set is not even evaluated: what it names would be
	 * read, and the key asked for next would tell its writer what the
	 * files hold. */
	if (!pathset_trusted(x, w, set)) {
		count(x, "remote_untrusted");
		note(x, "unsigned or untrusted path set", NULL);
		return 0;
	}
	struct buf values, result_body;
	buf_init(&values);
	buf_init(&result_body);
	struct admission adm = {.x = x, .step = step};
	/* remote_pathsets_decode checked each body against its digest. */
	struct pathset_evaluation ev = {
	    .digest = &set->digest,
	    .body = set->body,
	    .len = set->len,
	    .digest_checked = 1,
	    .admit = admit_remote_pathset,
	    .admit_ctx = &adm,
	    .values = &values,
	};
	int evaluated = lookup_evaluate_pathset(&step->bases, w, dc, &ev, &e);
	if (evaluated != LOOKUP_PATHSET_KEYED) {
		if (evaluated == LOOKUP_PATHSET_DAMAGED) {
			count(x, "remote_corrupt");
			note(x, "corrupt path set", &e);
			struct digest kw;
			remote_key_pathsets(w, &kw);
			remote_client_fault(x->client, tier, &kw, "corrupt path set");
		}
		buf_free(&values);
		buf_free(&result_body);
		return 0;
	}
	struct digest strong = ev.strong, key;
	remote_key_entry(&strong, &key);
	void *data = NULL;
	size_t len = 0;
	int g = remote_get(x->client, tier, "ac", &key, REMOTE_MAX_RECORD, &data, &len, &e);
	int rc = 0;
	struct remote_entry en = {0};
	struct result res;
	result_init(&res);
	if (g == REMOTE_ABSENT) {
		note(x, "a path set of this step does not hold here", NULL);
		goto out;
	}
	if (g == REMOTE_ERROR || g == REMOTE_SKIPPED) {
		count(x, g == REMOTE_ERROR ? "remote_errors" : "remote_skipped");
		note(x, "cannot fetch an entry", &e);
		rc = -1;
		goto out;
	}
	if (g != REMOTE_FOUND || !entry_decode_as(data, len, w, &set->digest, &strong, &en, &e)) {
		/* Garbage, or an entry stored under another key than it names. */
		count(x, "remote_corrupt");
		note(x, "corrupt entry", &e);
		remote_client_fault(x->client, tier, &key, "corrupt entry");
		rc = -1;
		goto out;
	}
	if (!entry_trusted(x, &en)) {
		count(x, "remote_untrusted");
		note(x,
		     en.is_signed ? "entry signed by an untrusted key, or badly" : "unsigned entry",
		     NULL);
		goto out;
	}
	if (result_decode(en.result, en.result_len, &res, &e) < 0) {
		count(x, "remote_corrupt");
		note(x, "corrupt result", &e);
		remote_client_fault(x->client, tier, &key, "corrupt result");
		rc = -1;
		goto out;
	}
	/* The local copy keeps the portable form, with the values found
	 * here (the remote's carry none) for explain. */
	free(res.values);
	free(res.pinned); /* another machine's reason names its paths */
	res.pinned = NULL;
	res.values = xmalloc(values.len + 1);
	memcpy(res.values, values.data, values.len);
	res.values_len = values.len;
	/* Stored as restored: setuid, setgid and sticky bits and owners
	 * dropped, or the next hit, a local one, would restore them. */
	size_t kept = 0;
	for (size_t i = 0; i < res.noutputs; i++) {
		struct output *o = &res.outputs[i];
		o->mode &= 0777;
		if (o->kind == OUT_OWNER)
			free(o->path);
		else
			res.outputs[kept++] = *o;
	}
	res.noutputs = kept;
	result_encode(&res, &result_body);
	if (portable_localise_result(&res, &step->bases) < 0)
		goto out;
	int f = fetch_blobs(x, tier, &res);
	if (f != 0) {
		rc = f < 0 ? -1 : 0;
		goto out;
	}
	const char *roots[3] = {step->cwd, step->bases.dir[STEP_BASE_DIR], NULL};
	if (result_restore_beneath(&res, x->store, roots, &e) < 0) {
		count(x, e.code == EPERM ? "remote_refused" : "errors");
		note(x, e.code == EPERM ? "entry refused" : "cannot restore", &e);
		goto out;
	}
	store_locally(x, step, set, &strong, &result_body, &res);
	*hit = res;
	result_init(&res);
	rc = 1;
out:
	result_free(&res);
	remote_entry_free(&en);
	free(data);
	buf_free(&values);
	buf_free(&result_body);
	return rc;
}

int remote_lookup_step(struct remote_lookup *x, const struct step *step, struct digest_cache *dc,
                       struct result *found)
{
	struct store *s = x->store;
	if (store_is_readonly(s))
		return 0; /* a hit must be stored before it is restored */
	const struct digest *w = &step->weak;
	struct digest kw;
	int hit = 0, asked = 0;
	remote_key_pathsets(w, &kw);
	remote_client_lookup_begin(x->client);
	for (size_t t = 0; t < remote_client_tiers(x->client) && !hit; t++) {
		void *data = NULL;
		size_t len = 0;
		struct error e = {0};
		int g = remote_get(x->client, t, "ac", &kw, REMOTE_MAX_RECORD, &data, &len, &e);
		if (g == REMOTE_SKIPPED) {
			count(x, "remote_skipped");
			continue;
		}
		if (g == REMOTE_ERROR) {
			count(x, "remote_errors");
			note(x, "lookup failed", &e);
			continue;
		}
		asked = 1;
		if (g == REMOTE_TOO_LARGE)
			count(x, "remote_corrupt");
		if (g != REMOTE_FOUND) {
			note(x, "the remote does not know this step", NULL);
			continue;
		}
		struct remote_pathsets list;
		if (remote_pathsets_decode(data, len, &list, &e) < 0) {
			count(x, "remote_corrupt");
			note(x, "corrupt path-set list", &e);
			remote_client_fault(x->client, t, &kw, "corrupt path-set list");
		} else {
			for (size_t i = 0; i < list.n && !hit; i++) {
				int r = try_pathset(x, t, step, dc, w, &list.sets[i], found);
				if (r < 0)
					break;
				hit = r;
			}
			remote_pathsets_free(&list);
		}
		free(data);
	}
	remote_client_lookup_end(x->client);
	if (hit) {
		store_count(s, "hits", 1);
		count(x, "remote_hits");
	} else if (asked) {
		count(x, "remote_misses");
	}
	return hit;
}

/* ---- explain ---- */

/* 1 when set holds here and the remote has a trusted entry for it, 0 when
 * not (counted in *out), -1 when the server failed. Read-only: nothing is
 * counted in the store, reported as a fault, fetched beyond the entry, or
 * stored. */
static int explain_pathset(struct remote_lookup *x, size_t tier, const struct step *step,
                           struct digest_cache *dc, const struct remote_pathset *set,
                           struct remote_explanation *out)
{
	const struct digest *w = &step->weak;
	if (!pathset_trusted(x, w, set)) {
		out->untrusted++;
		return 0;
	}
	struct error e = {0};
	struct admission adm = {.x = x, .step = step, .explaining = 1};
	struct pathset_evaluation ev = {
	    .digest = &set->digest,
	    .body = set->body,
	    .len = set->len,
	    .digest_checked = 1,
	    .admit = admit_remote_pathset,
	    .admit_ctx = &adm,
	};
	if (lookup_evaluate_pathset(&step->bases, w, dc, &ev, &e) != LOOKUP_PATHSET_KEYED) {
		out->refused++;
		return 0;
	}
	struct digest key;
	remote_key_entry(&ev.strong, &key);
	void *data = NULL;
	size_t len = 0;
	int g = remote_get(x->client, tier, "ac", &key, REMOTE_MAX_RECORD, &data, &len, &e);
	if (g == REMOTE_ERROR || g == REMOTE_SKIPPED)
		return -1;
	struct remote_entry en = {0};
	int holds =
	    g == REMOTE_FOUND && entry_decode_as(data, len, w, &set->digest, &ev.strong, &en, &e);
	if (holds && !entry_trusted(x, &en)) {
		out->untrusted++;
		holds = 0;
	}
	remote_entry_free(&en);
	free(data);
	return holds;
}

void remote_lookup_explain(struct remote_lookup *x, const struct step *step,
                           struct digest_cache *dc, struct remote_explanation *out)
{
	struct digest kw;
	remote_key_pathsets(&step->weak, &kw);
	out->verdict = REMOTE_VERDICT_UNREACHABLE;
	remote_client_lookup_begin(x->client);
	for (size_t t = 0; t < remote_client_tiers(x->client) && out->verdict != REMOTE_VERDICT_HIT;
	     t++) {
		void *data = NULL;
		size_t len = 0;
		struct error e = {0};
		int g = remote_get(x->client, t, "ac", &kw, REMOTE_MAX_RECORD, &data, &len, &e);
		if (g == REMOTE_ERROR || g == REMOTE_SKIPPED) {
			if (!out->error)
				out->error =
				    xstrdup(g == REMOTE_SKIPPED ? "resting after failures" : e.msg);
			continue;
		}
		struct remote_pathsets list;
		if (g != REMOTE_FOUND || remote_pathsets_decode(data, len, &list, &e) < 0) {
			if (out->verdict == REMOTE_VERDICT_UNREACHABLE)
				out->verdict = REMOTE_VERDICT_UNKNOWN_STEP;
			free(data);
			continue;
		}
		out->pathsets += list.n;
		if (list.n)
			out->verdict = REMOTE_VERDICT_INPUTS;
		else if (out->verdict == REMOTE_VERDICT_UNREACHABLE)
			out->verdict = REMOTE_VERDICT_UNKNOWN_STEP;
		for (size_t i = 0; i < list.n; i++) {
			int r = explain_pathset(x, t, step, dc, &list.sets[i], out);
			if (r < 0)
				break;
			if (r > 0) {
				out->verdict = REMOTE_VERDICT_HIT;
				break;
			}
		}
		remote_pathsets_free(&list);
		free(data);
	}
	remote_client_lookup_end(x->client);
}

void remote_explanation_free(struct remote_explanation *x)
{
	free(x->error);
	x->error = NULL;
}

void remote_lookup_free(struct remote_lookup *rl)
{
	trusted_keys_free(&rl->trusted);
}
