/*
 * The upload half of the remote tier, read top to bottom: a stored miss
 * packaged into a job, the job written to the spool, what a job puts on a
 * remote, one job sent to one tier, and the drain that sends every job to
 * every writable tier.
 *
 * Jobs stay in the spool until every writable tier has them, so nothing is
 * lost while a server is down; the step that stored the miss never waits
 * for the network (the caller starts a background drainer).
 */
#include "cachet/remote_upload.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachet/pathset.h"
#include "cachet/record.h"
#include "cachet/result.h"
#include "cachet/store.h"

static void count(struct remote_upload *u, const char *name)
{
	store_count(u->store, name, 1);
}

static void note(struct remote_upload *u, const char *what, const struct error *e)
{
	if (u->note)
		u->note(u->ctx, 0, what, e);
}

/* ---- packaging ---- */

/* The result as the remote receives it: what a reader needs to replay it,
 * nothing that is for local eyes only (values, listings, why it is
 * pinned: the receiver has its own). */
static void portable_upload_result(const struct result *res, struct result *pr)
{
	result_init(pr);
	for (size_t i = 0; i < res->noutputs; i++) {
		const struct output *o = &res->outputs[i];
		struct output *q = result_copy_output(pr, o, o->path);
		q->blob.form = BLOB_RAW; /* how a store keeps it is its own business */
	}
	pr->out = res->out;
	pr->err = res->err;
	pr->out.form = pr->err.form = BLOB_RAW;
	pr->exit_code = res->exit_code;
	pr->duration_ms = res->duration_ms;
	pr->stdin_advance = res->stdin_advance;
	if (res->nstream_runs) {
		pr->stream_runs = xmalloc(res->nstream_runs * sizeof *pr->stream_runs);
		memcpy(pr->stream_runs, res->stream_runs,
		       res->nstream_runs * sizeof *pr->stream_runs);
		pr->nstream_runs = res->nstream_runs;
	}
	pr->created = res->created;
	pr->host = xstrdup(res->host ? res->host : "");
	pr->cachet_version = xstrdup(res->cachet_version ? res->cachet_version : "");
	pr->values = xmalloc(1);
	pr->listings = xmalloc(1);
}

/* Every non-empty blob res names, once. */
static void list_blobs(const struct result *res, struct spool_job *job)
{
	size_t n;
	struct blob_ref *refs = result_blobs(res, &n);
	job->blobs = xcalloc(n ? n : 1, sizeof *job->blobs);
	job->sizes = xcalloc(n ? n : 1, sizeof *job->sizes);
	for (size_t i = 0; i < n; i++) {
		int seen = !refs[i].size;
		for (size_t k = 0; k < job->nblobs && !seen; k++)
			seen = digest_equal(&job->blobs[k], &refs[i].digest);
		if (!seen) {
			job->blobs[job->nblobs] = refs[i].digest;
			job->sizes[job->nblobs++] = refs[i].size;
		}
	}
	free(refs);
}

void remote_upload_package(const struct digest *weak, const struct record *rec,
                           struct spool_job *job)
{
	job->weak = *weak;
	buf_add(&job->pathset_body, rec->ps_body.data, rec->ps_body.len);
	job->pathset = rec->ps_digest;
	pathset_strong_key_from_values(&job->weak, &job->pathset, rec->values.data, rec->values.len,
	                               &job->strong);
	struct result pr;
	portable_upload_result(&rec->result, &pr);
	result_encode(&pr, &job->result_body);
	list_blobs(&pr, job);
	result_free(&pr);
}

/* ---- the spool ---- */

size_t remote_spool_size(const char *state_dir)
{
	char **jobs;
	size_t n;
	struct error e = {0};
	if (spool_list(state_dir, &jobs, &n, &e) < 0)
		return 0;
	spool_list_free(jobs, n);
	return n;
}

enum remote_spooled remote_upload_spool(struct remote_upload *u, const struct digest *weak,
                                        const struct record *rec, struct error *e)
{
	int writable = 0, awake = 0;
	for (size_t t = 0; t < remote_client_tiers(u->client); t++) {
		if (!remote_tier_is_read_only(u->client, t)) {
			writable = 1;
			if (!remote_tier_is_resting(u->client, t))
				awake = 1;
		}
	}
	if (!writable)
		return REMOTE_SPOOLED_NO_WRITABLE;
	/* A server down for hours must not fill the disk with jobs. */
	if (!awake && remote_spool_size(u->state_dir) >= REMOTE_SPOOL_MAX_JOBS) {
		count(u, "remote_spool_full");
		return REMOTE_SPOOLED_FULL;
	}
	struct spool_job job;
	spool_job_init(&job);
	remote_upload_package(weak, rec, &job);
	int rc = spool_write(u->state_dir, &job, e);
	spool_job_free(&job);
	if (rc < 0) {
		count(u, "remote_errors");
		return REMOTE_SPOOLED_FAILED;
	}
	count(u, "remote_queued");
	/* While every writable server rests, jobs wait for the next drainer
	 * instead of starting one per step. */
	return awake ? REMOTE_SPOOLED_QUEUED : REMOTE_SPOOLED_WAITING;
}

/* ---- what a job puts on a remote ---- */

int remote_upload_entry(const struct spool_job *job, struct remote_signer *signer, struct buf *out,
                        struct error *e)
{
	struct remote_entry en = {
	    .weak = job->weak, .pathset = job->pathset, .strong = job->strong};
	en.result = job->result_body.data;
	en.result_len = job->result_body.len;
	if (signer && sign_entry(signer, &en, e) < 0)
		return -1;
	remote_entry_encode(&en, out);
	return 0;
}

int remote_upload_pathset(const struct spool_job *job, struct remote_signer *signer,
                          struct remote_pathset *out, struct error *e)
{
	*out = (struct remote_pathset){
	    .digest = job->pathset, .body = job->pathset_body.data, .len = job->pathset_body.len};
	if (signer && sign_pathset(signer, &job->weak, out, e) < 0)
		return -1;
	return 0;
}

/* ---- one job to one tier ---- */

/* Puts the job's path set first in the weak key's list. HTTP has no atomic
 * append: read, merge, write. Two writers racing may lose one path set;
 * that costs a later miss, never a wrong hit. 1 done, 0 drop the job (it
 * cannot be signed), -1 the server failed. */
static int add_pathset(struct remote_upload *u, size_t tier, const struct spool_job *job,
                       struct remote_signer *signer, struct error *e)
{
	struct digest key;
	remote_key_pathsets(&job->weak, &key);
	void *data = NULL;
	size_t len = 0;
	struct remote_pathsets list = {0};
	int g = remote_get(u->client, tier, "ac", &key, REMOTE_MAX_RECORD, &data, &len, e);
	if (g == REMOTE_ERROR || g == REMOTE_SKIPPED)
		return -1;
	if (g == REMOTE_FOUND && remote_pathsets_decode(data, len, &list, e) < 0)
		memset(&list, 0, sizeof list); /* garbage: start afresh */
	free(data);
	struct remote_pathset set;
	if (remote_upload_pathset(job, signer, &set, e) < 0) {
		remote_pathsets_free(&list);
		return 0;
	}
	int rc = 1;
	if (remote_pathsets_add(&list, &set)) {
		struct buf body;
		buf_init(&body);
		remote_pathsets_encode(&list, &body);
		if (remote_put(u->client, tier, "ac", &key, body.data, body.len, e) !=
		    REMOTE_FOUND) {
			note(u, "upload failed", e);
			rc = -1;
		}
		buf_free(&body);
	}
	remote_pathsets_free(&list);
	return rc;
}

/* Sends one job to one tier: blobs first, then the entry, then the path
 * set into the weak key's list, so a reader never finds a path set whose
 * entry or blobs are not there yet. 1 done, 0 drop the job (its blobs are
 * gone from the local store, or it cannot be signed), -1 the server
 * failed. */
static int send_job(struct remote_upload *u, size_t tier, const struct spool_job *job,
                    struct remote_signer *signer)
{
	struct error e = {0};
	uint64_t max = remote_tier_max_blob(u->client, tier);
	for (size_t i = 0; i < job->nblobs; i++)
		if (job->sizes[i] > max) {
			count(u, "remote_too_large");
			return 1; /* this server cannot take it: nothing to do */
		}
	for (size_t i = 0; i < job->nblobs; i++) {
		int g = remote_exists(u->client, tier, "cas", &job->blobs[i], &e);
		if (g == REMOTE_FOUND)
			continue;
		if (g != REMOTE_ABSENT)
			return -1;
		struct blob_ref ref = {
		    .digest = job->blobs[i], .size = job->sizes[i], .form = BLOB_RAW};
		void *data;
		size_t len;
		if (store_blob_read(u->store, &ref, &data, &len, &e) < 0)
			return 0;
		g = remote_put(u->client, tier, "cas", &job->blobs[i], data, len, &e);
		free(data);
		if (g != REMOTE_FOUND)
			return -1;
	}
	struct buf body;
	buf_init(&body);
	if (remote_upload_entry(job, signer, &body, &e) < 0) {
		buf_free(&body);
		return 0;
	}
	struct digest key;
	remote_key_entry(&job->strong, &key);
	int g = remote_put(u->client, tier, "ac", &key, body.data, body.len, &e);
	buf_free(&body);
	if (g != REMOTE_FOUND)
		return -1;
	return add_pathset(u, tier, job, signer, &e);
}

/* ---- the drain ---- */

void remote_upload_drain_timeouts(struct remote_config *config)
{
	for (size_t i = 0; i < config->n; i++)
		if (config->specs[i].op_timeout_ms < REMOTE_DRAIN_OP_TIMEOUT_MS)
			config->specs[i].op_timeout_ms = REMOTE_DRAIN_OP_TIMEOUT_MS;
}

static int any_tier_awake(const struct remote_client *c)
{
	int awake = 0;
	for (size_t t = 0; t < remote_client_tiers(c); t++)
		awake |= !remote_tier_is_resting(c, t);
	return awake;
}

/* What became of a job. */
enum job_fate { JOB_UPLOADED, JOB_DROPPED, JOB_STAYS };

/* Sends the job in the spool file path to every writable tier. */
static enum job_fate drain_job(struct remote_upload *u, const char *path,
                               struct remote_signer *signer)
{
	struct spool_job job;
	struct error e = {0};
	if (spool_read(path, &job, &e) < 0)
		return JOB_DROPPED; /* corrupt: it would never go */
	int all = 1, dropped = 0;
	for (size_t t = 0; t < remote_client_tiers(u->client) && !dropped; t++) {
		if (remote_tier_is_read_only(u->client, t))
			continue;
		int r = send_job(u, t, &job, signer);
		if (r == 0)
			dropped = 1;
		else if (r < 0)
			all = 0;
	}
	spool_job_free(&job);
	if (dropped) {
		count(u, "remote_upload_dropped");
		return JOB_DROPPED;
	}
	if (all) {
		count(u, "remote_uploads");
		return JOB_UPLOADED;
	}
	count(u, "remote_upload_errors");
	return JOB_STAYS;
}

/* One pass over the spool. Returns the number of jobs finished (uploaded
 * or dropped); *stuck is set when a job had to stay (a server failed or
 * rests). */
static size_t drain_pass(struct remote_upload *u, struct remote_signer *signer,
                         struct remote_drain_report *rep, int *stuck)
{
	char **jobs;
	size_t n, done = 0;
	struct error e = {0};
	if (spool_list(u->state_dir, &jobs, &n, &e) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!any_tier_awake(u->client)) {
			*stuck = 1;
			break;
		}
		if (u->progress)
			u->progress(u->ctx, i, n);
		enum job_fate fate = drain_job(u, jobs[i], signer);
		if (fate == JOB_STAYS) {
			*stuck = 1;
			continue;
		}
		unlink(jobs[i]);
		if (fate == JOB_UPLOADED)
			rep->uploaded++;
		else
			rep->dropped++;
		done++;
	}
	spool_list_free(jobs, n);
	return done;
}

int remote_upload_drain(struct remote_upload *u, const char *sign_key, int wait,
                        struct remote_drain_report *rep, struct error *e)
{
	memset(rep, 0, sizeof *rep);
	struct remote_signer *signer = NULL;
	if (sign_key && !(signer = sign_load(sign_key, e))) {
		rep->left = remote_spool_size(u->state_dir);
		return -1;
	}
	for (;;) {
		int lock = spool_lock(u->state_dir, wait);
		if (lock < 0)
			break; /* another drainer runs: it re-checks after it lets go */
		int stuck = 0;
		size_t done = drain_pass(u, signer, rep, &stuck);
		spool_unlock(lock);
		/* A job spooled while we held the lock saw the lock taken and
		 * started no drainer: look again after letting go. */
		if (!remote_spool_size(u->state_dir) || (stuck && !done))
			break;
	}
	rep->left = remote_spool_size(u->state_dir);
	sign_free(signer);
	return 0;
}
