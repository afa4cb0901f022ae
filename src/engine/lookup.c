/*
 * The local lookup of a step, as tiers: its memo, then the index. Which
 * entry holds for the step, from which tier, and what is counted when one
 * cannot be served, are decided here; restoring and replaying it are the
 * caller's (lookup.h).
 */
#include "cachet/lookup.h"

#include <stdlib.h>

#include "cachet/argv_inputs.h"
#include "cachet/digest.h"
#include "cachet/portable.h"
#include "cachet/portable_record.h"
#include "cachet/result.h"
#include "cachet/step.h"
#include "cachet/store.h"

/* Hands a keyed entry to serve once it can be served whole: localised into
 * this checkout and every blob present before anything is written, so that
 * a damaged entry costs a run, never a half-restored tree. */
int lookup_offer(struct lookup_tiers *t, struct lookup_candidate *c)
{
	/* Recorded under a base unset here: not this step's, not counted. */
	if (portable_localise_result(c->result, &t->step->bases) < 0)
		return LOOKUP_NOT_SERVED;
	if (!lookup_blobs_present(t->store, c->result)) {
		t->count(t->ctx, "errors", 1);
		t->count(t->ctx, "missing_blobs", 1);
		return LOOKUP_NOT_SERVED;
	}
	return t->serve(t->ctx, c);
}

/* The strong key of a stored path set as the file system is now; -1 when
 * it cannot hold (a damaged body is said through fault). */
static int key_pathset(struct lookup_tiers *t, struct pathset_evaluation *ev, struct digest *strong)
{
	struct error e = {0};
	int rc = lookup_evaluate_pathset(&t->step->bases, &t->step->weak, t->dc, ev, &e);
	if (rc == LOOKUP_PATHSET_DAMAGED)
		t->fault(t->ctx, "corrupt path set", &e);
	if (rc != LOOKUP_PATHSET_KEYED)
		return -1;
	*strong = ev->strong;
	return 0;
}

int lookup_memo_tier(struct lookup_tiers *t, const struct store_memo *m)
{
	if (!digest_equal(&t->step->weak, &m->weak))
		return 0;
	struct error e = {0};
	struct result res;
	/* The memo's checksum covers the result: its own is not hashed again
	 * (nor would it keep out a writer of the memo, who can compute it). */
	if (result_decode_summed(m->result_body, m->result_len, &res, &e) < 0) {
		t->fault(t->ctx, "corrupt result", &e);
		return 0;
	}
	/* The memo's own checksum covers the path set, and its directory
	 * fingerprints decide the lookups of its unchanged directories. */
	struct pathset_evaluation ev = {
	    .digest = &m->pathset,
	    .body = m->pathset_body,
	    .len = m->pathset_len,
	    .digest_checked = 1,
	    .memo = 1,
	    .memo_dirs = m->dirs,
	    .memo_dirs_len = m->dirs_len,
	    .recorded_values = res.values,
	    .recorded_values_len = res.values_len,
	};
	struct digest strong;
	if (key_pathset(t, &ev, &strong) < 0) {
		result_free(&res);
		return 0;
	}
	t->memo_keyed = 1;
	t->memo_pathset = m->pathset;
	t->memo_keyed_strong = strong;
	if (!digest_equal(&strong, &m->strong)) {
		result_free(&res);
		return 0;
	}
	struct lookup_candidate c = {
	    .tier = LOOKUP_TIER_MEMO,
	    .pathset = &m->pathset,
	    .pathset_body = m->pathset_body,
	    .pathset_len = m->pathset_len,
	    .strong = m->strong,
	    .result_body = m->result_body,
	    .result_len = m->result_len,
	    .result = &res,
	};
	int served = lookup_offer(t, &c);
	if (served == LOOKUP_PASS)
		served = 0;
	else if (served != LOOKUP_SERVED) {
		/* The index has the same entry: what made it fail here (damaged
		 * blobs) is counted once, and it is not tried again. */
		t->memo_failed = 1;
		t->memo_strong = m->strong;
	}
	if (served != LOOKUP_STOP)
		result_free(&res);
	return served;
}

/* The strong key of a path set of the index: the memo tier's, when it keyed
 * the same path set (an edited header: the memo's path set is the index's
 * newest of the group) and this row's body is that path set, else keyed
 * here. The memo's key came through its directory fingerprints, as a hit
 * from the memo does; keying again would only repeat every lookup. */
static int key_index_pathset(struct lookup_tiers *t, const struct store_pathset *set,
                             struct digest *strong)
{
	if (t->memo_keyed && digest_equal(&set->digest, &t->memo_pathset)) {
		/* A damaged row is keyed below, which says so. */
		struct digest body;
		digest_bytes(set->body, set->len, &body);
		if (digest_equal(&body, &set->digest)) {
			*strong = t->memo_keyed_strong;
			return 0;
		}
	}
	struct pathset_evaluation ev = {
	    .digest = &set->digest, .body = set->body, .len = set->len, .notes = t->notes};
	return key_pathset(t, &ev, strong);
}

static int argv_group_key(void *ctx, uint64_t words, struct digest *key)
{
	struct lookup_tiers *t = ctx;
	return argv_inputs_key(t->step, words, t->dc, key);
}

int lookup_index_tier(struct lookup_tiers *t)
{
	struct store_pathset *sets = NULL;
	size_t nsets = 0;
	struct error e = {0};
	t->had_pathsets = 0;
	/* One read snapshot for the whole lookup: the index's lock is taken
	 * once, not once per fingerprint. */
	store_snapshot_begin(t->store);
	if (store_get_pathsets_argv(t->store, &t->step->weak, argv_group_key, t, &sets, &nsets,
	                            &t->had_pathsets, &e) < 0) {
		store_snapshot_end(t->store);
		t->fault(t->ctx, "cannot read the index", &e);
		return 0;
	}
	int served = 0;
	for (size_t i = 0; i < nsets && served != LOOKUP_SERVED && served != LOOKUP_STOP; i++) {
		struct digest strong;
		served = 0;
		if (key_index_pathset(t, &sets[i], &strong) < 0)
			continue;
		if (t->memo_failed && digest_equal(&strong, &t->memo_strong))
			continue;
		void *body;
		size_t len;
		int found = store_get_result(t->store, &strong, &body, &len, &e);
		if (found < 0)
			t->fault(t->ctx, "cannot read the index", &e);
		if (found != 1)
			continue;
		struct result res;
		if (result_decode(body, len, &res, &e) < 0) {
			free(body);
			t->fault(t->ctx, "corrupt result", &e);
			continue;
		}
		struct lookup_candidate c = {
		    .tier = LOOKUP_TIER_INDEX,
		    .pathset = &sets[i].digest,
		    .pathset_body = sets[i].body,
		    .pathset_len = sets[i].len,
		    .strong = strong,
		    .result_body = body,
		    .result_len = len,
		    .result = &res,
		};
		served = lookup_offer(t, &c);
		free(body);
		if (served != LOOKUP_STOP)
			result_free(&res);
	}
	store_pathsets_free(sets, nsets);
	store_snapshot_end(t->store);
	return served == LOOKUP_SERVED || served == LOOKUP_STOP ? served : 0;
}
