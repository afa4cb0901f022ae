/*
 * Storing an entry in the local index: one way in for a miss just recorded
 * and for a remote hit, so both keep the same forms and the same bound.
 */
#include "cachet/lookup.h"

#include <stdlib.h>

#include "cachet/outputs.h"
#include "cachet/step.h"
#include "cachet/store.h"

int lookup_store_entry(struct store *s, const struct lookup_entry *en, struct error *e)
{
	struct buf step_body;
	buf_init(&step_body);
	step_encode(en->step, &step_body);
	size_t nblobs;
	struct blob_ref *blobs = result_blobs(en->result, &nblobs);
	struct store_entry entry = {
		.weak = &en->step->weak,
		.step_body = step_body.data,
		.step_len = step_body.len,
		.pathset = en->pathset,
		.pathset_body = en->pathset_body,
		.pathset_len = en->pathset_len,
		.strong = en->strong,
		.result_body = en->result_body,
		.result_len = en->result_len,
		.blobs = blobs,
		.nblobs = nblobs,
		.duration_ms = en->result->duration_ms,
	};
	int rc = store_put_entry(s, &entry, LOOKUP_MAX_PATHSETS, e);
	free(blobs);
	buf_free(&step_body);
	return rc;
}
