/*
 * Evaluating a stored path set for a step, and checking that a result's
 * blobs are all there: the two questions every hit asks, from whichever
 * tier the entry comes.
 */
#include "cachet/lookup.h"

#include <stdlib.h>

#include "cachet/dirfp.h"
#include "cachet/portable.h"
#include "cachet/result.h"
#include "cachet/store.h"

int lookup_evaluate_pathset(const struct step_bases *bases, const struct digest *weak,
                            struct digest_cache *dc, struct pathset_evaluation *ev, struct error *e)
{
	/* A path set is named by the digest of its body: a damaged row (the
	 * index has no checksums) shows as a mismatch, and is never keyed, or
	 * a damaged path set could make a wrong hit. */
	if (!ev->digest_checked) {
		struct digest body_digest;
		digest_bytes(ev->body, ev->len, &body_digest);
		if (!digest_equal(&body_digest, ev->digest)) {
			error_set(e, "path set: body does not match its digest (damaged entry)");
			return LOOKUP_PATHSET_DAMAGED;
		}
	}
	if (pathset_decode(ev->body, ev->len, &ev->ps, e) < 0)
		return LOOKUP_PATHSET_DAMAGED;
	/* Recorded under a base that is not set here: it cannot hold. */
	int rc = LOOKUP_PATHSET_KEYED;
	if (portable_localise_pathset(&ev->ps, bases) < 0)
		rc = LOOKUP_PATHSET_UNSET_BASE;
	else if (ev->rewrite && ev->rewrite(ev->rewrite_ctx, &ev->ps) < 0)
		rc = LOOKUP_PATHSET_REFUSED;
	else if (ev->admit && !ev->admit(ev->admit_ctx, &ev->ps))
		rc = LOOKUP_PATHSET_REFUSED;
	if (rc != LOOKUP_PATHSET_KEYED) {
		if (!ev->keep_pathset)
			pathset_free(&ev->ps);
		return rc;
	}
	/* With a memo, the lookups that its unchanged directories decide are
	 * skipped. */
	struct dirfp_set dirs;
	if (ev->memo && dirfp_decode(ev->memo_dirs, ev->memo_dirs_len, ev->ps.nobs, &dirs) == 0) {
		dirfp_strong_key(&dirs, &ev->ps, bases, weak, ev->digest, dc, ev->recorded_values,
		                 ev->recorded_values_len, &ev->strong);
		dirfp_free(&dirs);
	} else {
		struct pathset_lookups lk = {
		    .known = ev->known,
		    .known_ctx = ev->known_ctx,
		    .looked = ev->notes ? dirfp_note_lookup : NULL,
		    .looked_ctx = ev->notes,
		};
		pathset_strong_key_known(&ev->ps, bases, weak, ev->digest, dc, &lk, ev->values,
		                         &ev->strong);
	}
	if (!ev->keep_pathset)
		pathset_free(&ev->ps);
	return LOOKUP_PATHSET_KEYED;
}

int lookup_blobs_present(struct store *s, const struct result *res)
{
	size_t nblobs;
	struct blob_ref *blobs = result_blobs(res, &nblobs);
	int complete = 1;
	for (size_t b = 0; b < nblobs && complete; b++)
		if (blobs[b].size && !store_blob_exists(s, &blobs[b]))
			complete = 0;
	free(blobs);
	return complete;
}
