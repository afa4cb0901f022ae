/*
 * The remote tier of `cachet run`: its configuration from the settings; on
 * a local miss the engine's lookup of the remotes (remote_lookup.h), whose
 * hit is replayed here; a stored miss handed to the engine's spool
 * (remote_upload.h) with a background drainer started (drainer.h), and
 * `cachet remote`'s drain.
 */
#include "cli/remote_tier.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/remote.h"
#include "cachet/remote_lookup.h"
#include "cachet/remote_upload.h"
#include "cachet/result.h"
#include "cachet/step.h"
#include "cachet/store.h"
#include "cli/cli.h"
#include "cli/drainer.h"
#include "cli/progress.h"
#include "cli/settings.h"
#include "cli/step_colour.h"

/* ---- context: configuration and client ---- */

struct ctx {
	struct store *store;
	const struct settings *st;
	struct remote_config config;
	struct remote_client *client;
	char *state_dir;
	int verbose;
	struct progress *shown; /* a drain's count of jobs, or NULL */
};

static void count(struct ctx *x, const char *name)
{
	store_count(x->store, name, 1);
}

/* What the engine's remote tier found worth saying: always, or with -v. */
static void say(void *ctx, int always, const char *what, const struct error *e)
{
	struct ctx *x = ctx;
	if (always || x->verbose)
		cli_warn("remote: %s%s%s", what, e && e->msg[0] ? ": " : "", e ? e->msg : "");
}

int remote_tier_configured(const struct settings *st)
{
	char **items = settings_list(st, "remote");
	int any = items[0] != NULL;
	settings_list_free(items);
	return any;
}

/* 1 ready, 0 no remote configured, -1 configuration error (said, counted). */
static int ctx_open(struct ctx *x, struct store *s)
{
	memset(x, 0, sizeof *x);
	x->store = s;
	x->st = cli_settings();
	if (!x->st || !remote_tier_configured(x->st))
		return 0;
	char **items = settings_list(x->st, "remote");
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

static void progress(void *ctx, size_t job, size_t njobs)
{
	struct ctx *x = ctx;
	progress_update(x->shown, job, njobs, "remote flush: uploading");
}

static struct remote_upload upload_of(struct ctx *x)
{
	return (struct remote_upload){
	    .store = x->store,
	    .client = x->client,
	    .state_dir = x->state_dir,
	    .note = say,
	    .ctx = x,
	};
}

void remote_tier_upload(struct store *s, const struct step *step, const struct record *rec)
{
	struct ctx x;
	if (ctx_open(&x, s) <= 0)
		return;
	struct remote_upload u = upload_of(&x);
	struct error e = {0};
	enum remote_spooled spooled = remote_upload_spool(&u, &step->weak, rec, &e);
	if (spooled == REMOTE_SPOOLED_FAILED)
		say(&x, 0, "cannot spool an upload", &e);
	else if (spooled == REMOTE_SPOOLED_QUEUED)
		drainer_start(x.state_dir, store_dir(x.store));
	ctx_close(&x);
}

/* ---- draining the spool ---- */

int remote_tier_drain(struct store *s, int wait, int force, struct progress *shown,
                      struct remote_drain_report *rep, struct error *e)
{
	memset(rep, 0, sizeof *rep);
	struct ctx x;
	int rc = ctx_open(&x, s);
	if (rc <= 0) {
		char *state = xasprintf("%s/remote", store_dir(s));
		rep->left = remote_spool_size(state);
		free(state);
		return rc < 0      ? error_set(e, "the remote configuration is invalid")
		       : rep->left ? error_set(e, "no remote is configured")
		                   : 0;
	}
	remote_client_ignore_breakers(x.client, force);
	remote_upload_drain_timeouts(&x.config);
	struct remote_upload u = upload_of(&x);
	x.shown = shown;
	if (shown)
		u.progress = progress;
	rc = remote_upload_drain(&u, settings_str(x.st, "sign_key"), wait, rep, e);
	ctx_close(&x);
	return rc;
}
