/*
 * Storing an entry in the local index: one way in for a miss just recorded
 * and for a remote hit, so both keep the same forms and the same bound.
 */
#include "cachet/lookup.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cachet/record.h"
#include "cachet/result.h"
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
	    .argv_words = en->argv_words,
	    .argv_key = en->argv_key,
	    .duplicate = en->duplicate,
	    .step_ident = en->step_ident,
	};
	int rc = store_put_entry(s, &entry, LOOKUP_MAX_PATHSETS, e);
	free(blobs);
	buf_free(&step_body);
	return rc;
}

int lookup_finish_record(struct store *s, const struct step *step, struct record *rec,
                         const struct lookup_run_end *end, struct digest *strong,
                         struct buf *result_body, struct error *e)
{
	struct result *res = &rec->result;
	if (store_put_blob_mem(s, end->out, end->out_len, &res->out, e) < 0 ||
	    store_put_blob_mem(s, end->err, end->err_len, &res->err, e) < 0)
		return -1;
	res->exit_code = end->exit_code;
	res->stdin_advance = end->stdin_advance;
	res->duration_ms = end->duration_ms;
	res->created = time(NULL);
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	res->host = xstrdup(host);
	res->cachet_version = xstrdup(CACHET_VERSION);
	res->values = xmalloc(rec->values.len ? rec->values.len : 1);
	memcpy(res->values, rec->values.data, rec->values.len);
	res->values_len = rec->values.len;
	res->listings = xmalloc(rec->listings.len ? rec->listings.len : 1);
	memcpy(res->listings, rec->listings.data, rec->listings.len);
	res->listings_len = rec->listings.len;
	pathset_strong_key_from_values(&step->weak, &rec->ps_digest, rec->values.data,
	                               rec->values.len, strong);
	result_encode(res, result_body);
	return 0;
}
