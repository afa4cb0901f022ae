/*
 * The remote tier of `cachet run`: its configuration from the settings; on
 * a local miss the engine's lookup of the remotes (remote_lookup.h), whose
 * hit is replayed here; a stored miss packaged into an upload job for the
 * spool, and the drain loop that uploads the jobs in the background.
 *
 * Keys and entries are portable (portable.h) here as in the local store:
 * paths under base_dir, and under HOME in the hermetic mode, are written
 * relative to them, so two users or machines whose trees live at different
 * places share entries, and an entry goes between the tiers unchanged. The
 * remote never sees an environment value or an argv element: only digests
 * over them, paths, modes and content digests.
 */
#include "cli/remote_tier.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachet/pathset.h"
#include "cachet/portable.h"
#include "cachet/record.h"
#include "cachet/remote.h"
#include "cachet/remote_lookup.h"
#include "cachet/result.h"
#include "cachet/step.h"
#include "cachet/store.h"
#include "cli/cli.h"
#include "cli/drainer.h"
#include "cli/progress.h"
#include "cli/settings.h"
#include "cli/step_colour.h"
#include "cli/tee.h"

/* The least op-timeout of the background drainer. */
#define DRAIN_OP_TIMEOUT_MS 30000
/* Jobs the spool holds while every server rests; later ones are dropped. */
#define SPOOL_MAX_JOBS 10000

static size_t spool_size(const char *state_dir);

/* ---- context: configuration and client ---- */

struct ctx {
	struct store *store;
	const struct settings *st;
	struct remote_config config;
	struct remote_client *client;
	char *state_dir;
	int verbose;
};

static void count(struct ctx *x, const char *name)
{
	store_count(x->store, name, 1);
}

static void note(struct ctx *x, const char *what, const struct error *e)
{
	if (x->verbose)
		cli_warn("remote: %s%s%s", what, e && e->msg[0] ? ": " : "", e ? e->msg : "");
}

/* What the engine's remote lookup found worth saying: always, or with -v. */
static void say(void *ctx, int always, const char *what, const struct error *e)
{
	struct ctx *x = ctx;
	if (always || x->verbose)
		cli_warn("remote: %s%s%s", what, e && e->msg[0] ? ": " : "", e ? e->msg : "");
}

/* 1 ready, 0 no remote configured, -1 configuration error (said, counted). */
static int ctx_open(struct ctx *x, struct store *s)
{
	memset(x, 0, sizeof *x);
	x->store = s;
	x->st = cli_settings();
	if (!x->st)
		return 0;
	char **items = settings_list(x->st, "remote");
	if (!items[0]) {
		settings_list_free(items);
		return 0;
	}
	x->verbose = settings_bool(x->st, "verbose");
	struct error e = {0};
	int rc = remote_config_parse(items, &x->config, &e);
	settings_list_free(items);
	if (rc < 0) {
		/* A step asks the remotes, then spools its upload: each opens a
		 * context, and one bad setting deserves one warning per step. */
		static int warned;
		if (!warned)
			cli_warn("remote caching off: %s", e.msg);
		warned = 1;
		count(x, "remote_errors");
		return -1;
	}
	x->state_dir = xasprintf("%s/remote", store_dir(s));
	char *self = cli_self_exe();
	char *plugin = remote_plugin_dir(self);
	free(self);
	x->client = remote_client_new(&x->config, x->state_dir, plugin);
	free(plugin);
	return 1;
}

static void ctx_close(struct ctx *x)
{
	remote_client_free(x->client);
	remote_config_free(&x->config);
	free(x->state_dir);
}

/* ---- the lookup ---- */

/* The blob of a recorded stream (malloc'd; NULL, 0 when empty or it
 * cannot be read). */
static void *stream_blob(struct store *s, const struct blob_ref *ref, size_t *len)
{
	void *data = NULL;
	struct error e = {0};
	*len = 0;
	if (ref->size && store_blob_read(s, ref, &data, len, &e) < 0) {
		data = NULL;
		*len = 0;
	}
	return data;
}

/* Writes the entry's stdout and stderr, in their order when they are one
 * file here (replay_streams). */
static void replay(struct store *s, const struct step *step, const struct result *res)
{
	size_t out_len, err_len;
	void *out = stream_blob(s, &res->out, &out_len);
	void *err = stream_blob(s, &res->err, &err_len);
	step_colour_replay(step, res, out, out_len, err, err_len);
	free(out);
	free(err);
}

int remote_tier_lookup(struct store *s, const struct step *step, struct digest_cache *dc,
                       int *exit_code)
{
	if (store_is_readonly(s))
		return 0; /* a hit must be stored before it is restored */
	struct ctx x;
	if (ctx_open(&x, s) <= 0)
		return 0;
	char **trusted_keys = settings_list(x.st, "trusted_keys");
	struct remote_lookup rl = {
	    .store = s,
	    .client = x.client,
	    .trusted_keys = trusted_keys,
	    .note = say,
	    .note_ctx = &x,
	};
	struct result res;
	result_init(&res);
	int hit = remote_lookup_step(&rl, step, dc, &res);
	if (hit) {
		replay(s, step, &res);
		result_replay_stdin_advance(&res);
		*exit_code = res.exit_code;
	}
	result_free(&res);
	settings_list_free(trusted_keys);
	remote_lookup_free(&rl);
	ctx_close(&x);
	return hit;
}

/* ---- explain ---- */

void remote_tier_explain(struct store *s, const struct step *step, struct digest_cache *dc,
                         struct remote_explanation *out)
{
	memset(out, 0, sizeof *out);
	struct ctx x;
	if (ctx_open(&x, s) <= 0)
		return;
	char **trusted_keys = settings_list(x.st, "trusted_keys");
	struct remote_lookup rl = {
	    .store = s,
	    .client = x.client,
	    .trusted_keys = trusted_keys,
	};
	remote_lookup_explain(&rl, step, dc, out);
	settings_list_free(trusted_keys);
	remote_lookup_free(&rl);
	ctx_close(&x);
}

/* ---- the upload ---- */

/* The upload of a stored run: the path set and strong key as stored
 * locally (already portable), the result without what is for local eyes
 * only (values, listings, why it is pinned: the receiver has its own). */
static void make_job(const struct step *step, const struct record *rec, struct spool_job *job)
{
	job->weak = step->weak;
	buf_add(&job->pathset_body, rec->ps_body.data, rec->ps_body.len);
	job->pathset = rec->ps_digest;
	pathset_strong_key_from_values(&job->weak, &job->pathset, rec->values.data, rec->values.len,
	                               &job->strong);
	const struct result *res = &rec->result;
	struct result pr;
	result_init(&pr);
	for (size_t i = 0; i < res->noutputs; i++) {
		const struct output *o = &res->outputs[i];
		struct output *q = result_copy_output(&pr, o, o->path);
		q->blob.form = BLOB_RAW; /* how a store keeps it is its own business */
	}
	pr.out = res->out;
	pr.err = res->err;
	pr.out.form = pr.err.form = BLOB_RAW;
	pr.exit_code = res->exit_code;
	pr.duration_ms = res->duration_ms;
	pr.stdin_advance = res->stdin_advance;
	if (res->nstream_runs) {
		pr.stream_runs = xmalloc(res->nstream_runs * sizeof *pr.stream_runs);
		memcpy(pr.stream_runs, res->stream_runs,
		       res->nstream_runs * sizeof *pr.stream_runs);
		pr.nstream_runs = res->nstream_runs;
	}
	pr.created = res->created;
	pr.host = xstrdup(res->host ? res->host : "");
	pr.cachet_version = xstrdup(res->cachet_version ? res->cachet_version : "");
	pr.values = xmalloc(1);
	pr.listings = xmalloc(1);
	result_encode(&pr, &job->result_body);
	size_t n;
	struct blob_ref *refs = result_blobs(&pr, &n);
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
	result_free(&pr);
}

void remote_tier_upload(struct store *s, const struct step *step, const struct record *rec)
{
	struct ctx x;
	if (ctx_open(&x, s) <= 0)
		return;
	int writable = 0, awake = 0;
	for (size_t t = 0; t < remote_client_tiers(x.client); t++) {
		if (!remote_tier_is_read_only(x.client, t)) {
			writable = 1;
			if (!remote_tier_is_resting(x.client, t))
				awake = 1;
		}
	}
	if (!writable)
		goto out;
	if (!awake && spool_size(x.state_dir) >= SPOOL_MAX_JOBS) {
		count(&x, "remote_spool_full");
		goto out;
	}
	struct spool_job job;
	spool_job_init(&job);
	struct error e = {0};
	make_job(step, rec, &job);
	if (spool_write(x.state_dir, &job, &e) < 0) {
		count(&x, "remote_errors");
		note(&x, "cannot spool an upload", &e);
	} else {
		count(&x, "remote_queued");
		/* While every writable server rests, jobs wait for the next
		 * drainer instead of starting one per step. */
		if (awake)
			drainer_start(x.state_dir, store_dir(x.store));
	}
	spool_job_free(&job);
out:
	ctx_close(&x);
}

/* ---- draining the spool ---- */

/* Uploads one job to one tier: blobs first, then the entry, then the path
 * set into the weak key's list, so a reader never finds a path set whose
 * entry or blobs are not there yet. 1 done, 0 drop the job (its blobs are
 * gone from the local store), -1 the server failed. */
static int upload_job(struct ctx *x, size_t tier, const struct spool_job *job,
                      struct remote_signer *signer)
{
	struct error e = {0};
	uint64_t max = remote_tier_max_blob(x->client, tier);
	for (size_t i = 0; i < job->nblobs; i++)
		if (job->sizes[i] > max) {
			count(x, "remote_too_large");
			return 1; /* this server cannot take it: nothing to do */
		}
	for (size_t i = 0; i < job->nblobs; i++) {
		int g = remote_exists(x->client, tier, "cas", &job->blobs[i], &e);
		if (g == REMOTE_FOUND)
			continue;
		if (g != REMOTE_ABSENT)
			return -1;
		struct blob_ref ref = {
		    .digest = job->blobs[i], .size = job->sizes[i], .form = BLOB_RAW};
		void *data;
		size_t len;
		if (store_blob_read(x->store, &ref, &data, &len, &e) < 0)
			return 0;
		g = remote_put(x->client, tier, "cas", &job->blobs[i], data, len, &e);
		free(data);
		if (g != REMOTE_FOUND)
			return -1;
	}
	struct remote_entry en = {
	    .weak = job->weak, .pathset = job->pathset, .strong = job->strong};
	en.result = job->result_body.data;
	en.result_len = job->result_body.len;
	if (signer && sign_entry(signer, &en, &e) < 0)
		return 0;
	struct buf body;
	buf_init(&body);
	remote_entry_encode(&en, &body);
	struct digest key;
	remote_key_entry(&job->strong, &key);
	int g = remote_put(x->client, tier, "ac", &key, body.data, body.len, &e);
	buf_free(&body);
	if (g != REMOTE_FOUND)
		return -1;

	/* HTTP has no atomic append: read, merge, write. Two writers racing
	 * may lose one path set; that costs a later miss, never a wrong hit. */
	remote_key_pathsets(&job->weak, &key);
	void *data = NULL;
	size_t len = 0;
	struct remote_pathsets list = {0};
	g = remote_get(x->client, tier, "ac", &key, REMOTE_MAX_RECORD, &data, &len, &e);
	if (g == REMOTE_ERROR || g == REMOTE_SKIPPED)
		return -1;
	if (g == REMOTE_FOUND && remote_pathsets_decode(data, len, &list, &e) < 0)
		memset(&list, 0, sizeof list); /* garbage: start afresh */
	free(data);
	int rc = 1;
	struct remote_pathset set = {
	    .digest = job->pathset, .body = job->pathset_body.data, .len = job->pathset_body.len};
	if (signer && sign_pathset(signer, &job->weak, &set, &e) < 0)
		return 0;
	if (remote_pathsets_add(&list, &set)) {
		buf_init(&body);
		remote_pathsets_encode(&list, &body);
		if (remote_put(x->client, tier, "ac", &key, body.data, body.len, &e) !=
		    REMOTE_FOUND)
			rc = -1;
		buf_free(&body);
	}
	remote_pathsets_free(&list);
	if (rc < 0)
		note(x, "upload failed", &e);
	return rc;
}

/* One pass over the spool. Returns the number of jobs finished (uploaded
 * or dropped); *stuck is set when a job had to stay (a server failed or
 * rests). */
static size_t drain_pass(struct ctx *x, struct remote_signer *signer, struct progress *shown,
                         struct drain_report *rep, int *stuck)
{
	char **jobs;
	size_t n, done = 0;
	struct error e = {0};
	if (spool_list(x->state_dir, &jobs, &n, &e) < 0)
		return 0;
	size_t ntiers = remote_client_tiers(x->client);
	for (size_t i = 0; i < n; i++) {
		int awake = 0;
		for (size_t t = 0; t < ntiers; t++)
			awake |= !remote_tier_is_resting(x->client, t);
		if (!awake) {
			*stuck = 1;
			break;
		}
		if (shown)
			progress_update(shown, i, n, "remote flush: uploading");
		struct spool_job job;
		if (spool_read(jobs[i], &job, &e) < 0) {
			unlink(jobs[i]);
			rep->dropped++;
			done++;
			continue;
		}
		int all = 1, dropped = 0;
		for (size_t t = 0; t < ntiers && !dropped; t++) {
			if (remote_tier_is_read_only(x->client, t))
				continue;
			int r = upload_job(x, t, &job, signer);
			if (r == 0)
				dropped = 1;
			else if (r < 0)
				all = 0;
		}
		spool_job_free(&job);
		if (dropped) {
			count(x, "remote_upload_dropped");
			unlink(jobs[i]);
			rep->dropped++;
			done++;
		} else if (all) {
			count(x, "remote_uploads");
			unlink(jobs[i]);
			rep->uploaded++;
			done++;
		} else {
			count(x, "remote_upload_errors");
			*stuck = 1;
		}
	}
	spool_list_free(jobs, n);
	return done;
}

static size_t spool_size(const char *state_dir)
{
	char **jobs;
	size_t n;
	struct error e = {0};
	if (spool_list(state_dir, &jobs, &n, &e) < 0)
		return 0;
	spool_list_free(jobs, n);
	return n;
}

int remote_tier_drain(struct store *s, int wait, int force, struct progress *shown,
                      struct drain_report *rep, struct error *e)
{
	memset(rep, 0, sizeof *rep);
	struct ctx x;
	int rc = ctx_open(&x, s);
	if (rc <= 0) {
		char *state = xasprintf("%s/remote", store_dir(s));
		rep->left = spool_size(state);
		free(state);
		return rc < 0      ? error_set(e, "the remote configuration is invalid")
		       : rep->left ? error_set(e, "no remote is configured")
		                   : 0;
	}
	remote_client_ignore_breakers(x.client, force);
	/* Uploads run in the background and send whole blobs: a request may
	 * take longer than a lookup may make a step wait. */
	for (size_t i = 0; i < x.config.n; i++)
		if (x.config.specs[i].op_timeout_ms < DRAIN_OP_TIMEOUT_MS)
			x.config.specs[i].op_timeout_ms = DRAIN_OP_TIMEOUT_MS;
	struct remote_signer *signer = NULL;
	const char *key = settings_str(x.st, "sign_key");
	if (key && !(signer = sign_load(key, e))) {
		/* Configured to sign and cannot: uploading unsigned would be
		 * silently worse. The jobs wait. */
		rep->left = spool_size(x.state_dir);
		ctx_close(&x);
		return -1;
	}
	for (;;) {
		int lock = spool_lock(x.state_dir, wait);
		if (lock < 0)
			break; /* another drainer runs: it re-checks after it lets go */
		int stuck = 0;
		size_t done = drain_pass(&x, signer, shown, rep, &stuck);
		spool_unlock(lock);
		/* A job spooled while we held the lock saw the lock taken and
		 * started no drainer: look again after letting go. */
		if (!spool_size(x.state_dir) || (stuck && !done))
			break;
	}
	rep->left = spool_size(x.state_dir);
	sign_free(signer);
	ctx_close(&x);
	return 0;
}
