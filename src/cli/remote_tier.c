/*
 * The remote tier: local first; on a local miss ask the remotes; a remote
 * hit is restored beneath the output roots only and stored locally too; a
 * stored miss is spooled and uploaded in the background.
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
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cachet/outputs.h"
#include "cachet/pathset.h"
#include "cachet/portable.h"
#include "cachet/record.h"
#include "cachet/remote.h"
#include "cachet/step.h"
#include "cachet/store.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/settings.h"
#include "cli/step_colour.h"
#include "cli/tee.h"

extern char **environ;

/* Path sets kept per weak key locally (as run.c keeps them). */
#define LOCAL_MAX_PATHSETS 16
/* The least op-timeout of the background drainer. */
#define DRAIN_OP_TIMEOUT_MS 30000
/* Jobs the spool holds while every server rests; later ones are dropped. */
#define SPOOL_MAX_JOBS 10000

static size_t spool_size(const char *state_dir);

/* What remote_tier_prepare learned before the environment was narrowed. */
static struct {
	int hermetic;
	char *home;        /* canonical HOME of the caller, in the hermetic mode */
	char **caller_env; /* the caller's environment, for the drainer */
} prepared;

/* ---- the hermetic environment ---- */

static int listed(const char *entry, char *const *names)
{
	const char *eq = strchr(entry, '=');
	size_t n = eq ? (size_t)(eq - entry) : strlen(entry);
	if (n >= 7 && !strncmp(entry, "CACHET_", 7))
		return 1; /* cachet's own settings: neutral, and the drainer needs them */
	for (char *const *p = names; *p; p++) {
		size_t pl = strlen(*p);
		if (pl && (*p)[pl - 1] == '*' ? n >= pl - 1 && !strncmp(entry, *p, pl - 1)
					       : pl == n && !strncmp(entry, *p, n))
			return 1;
	}
	return 0;
}

void remote_tier_prepare(const struct settings *st)
{
	if (!st || prepared.hermetic)
		return; /* once: a second call would see the narrowed environment */
	char **names = settings_list(st, "hermetic_env");
	if (!names[0]) {
		settings_list_free(names);
		return;
	}
	prepared.hermetic = 1;
	const char *home = getenv("HOME");
	if (home && home[0] == '/')
		prepared.home = realpath(home, NULL);
	size_t n = 0;
	while (environ[n])
		n++;
	char **keep = xmalloc((n + 1) * sizeof *keep);
	prepared.caller_env = xmalloc((n + 1) * sizeof *prepared.caller_env);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		prepared.caller_env[i] = xstrdup(environ[i]);
		if (listed(environ[i], names))
			keep[k++] = xstrdup(environ[i]);
	}
	prepared.caller_env[n] = NULL;
	keep[k] = NULL;
	/* Replaced whole: the step's key (step_init) and its environment
	 * (step_environment) both read environ. Never freed: the process
	 * execs or exits with it. */
	environ = keep;
	settings_list_free(names);
}

const char *remote_tier_home(void)
{
	return prepared.home;
}

/* ---- context: configuration and client ---- */

struct ctx {
	struct store *store;
	const struct settings *st;
	struct remote_config config;
	struct remote_client *client;
	char *state_dir;
	int verbose;
	int trusted_loaded; /* 0 not yet, 1 loaded (or none configured), -1 failed */
	int trust_required; /* trusted_keys is set */
	struct trusted_keys trusted;
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
	struct error e = { 0 };
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
	trusted_keys_free(&x->trusted);
	free(x->state_dir);
}

/* Loads trusted_keys once. 1 when entries and path sets need a trusted
 * signature, 0 when not, -1 when they do but the keys cannot be read
 * (then nothing is trusted). */
static int trust_required(struct ctx *x)
{
	if (!x->trusted_loaded) {
		char **items = settings_list(x->st, "trusted_keys");
		x->trusted_loaded = 1;
		x->trust_required = items[0] != NULL;
		if (items[0]) {
			struct error e = { 0 };
			if (trusted_keys_load(items, &x->trusted, &e) < 0) {
				/* Trust was asked for and cannot be checked: nothing is trusted. */
				cli_warn("remote: %s", e.msg);
				x->trusted_loaded = -1;
			}
		}
		settings_list_free(items);
	}
	return x->trusted_loaded < 0 ? -1 : x->trust_required;
}

/* With trusted_keys set, only what they signed counts. */
static int entry_trusted(struct ctx *x, const struct remote_entry *en)
{
	int need = trust_required(x);
	return need == 0 || (need > 0 && trusted_keys_verify(&x->trusted, en));
}

static int pathset_trusted(struct ctx *x, const struct digest *weak,
			   const struct remote_pathset *set)
{
	int need = trust_required(x);
	return need == 0 || (need > 0 && trusted_keys_verify_pathset(&x->trusted, weak, set));
}

/* ---- the lookup ---- */

static void replay(struct store *s, const struct blob_ref *ref, int fd, const struct step *step)
{
	if (!ref->size)
		return;
	void *data;
	size_t len;
	struct error e = { 0 };
	if (store_blob_read(s, ref, &data, &len, &e) == 0) {
		if (fd == 2)
			step_colour_write_stderr(step, data, len);
		else
			write_all(fd, data, len);
		free(data);
	}
}

/* Fetches every blob the local store lacks, re-hashing each. 0 all there,
 * 1 a blob is missing or corrupt (counted), -1 the server failed. */
static int fetch_blobs(struct ctx *x, size_t tier, struct result *res)
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
			struct error e = { 0 };
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
		struct error e = { 0 };
		int g = remote_get(x->client, tier, "cas", &refs[i].digest, (size_t)refs[i].size, &data,
				   &len, &e);
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

/* Stores a remote hit in the local index. Keys and forms are the same in
 * both tiers: the path set goes in as the remote has it, the result (still
 * portable) with the values found here, for explain. */
static void store_locally(struct ctx *x, const struct step *step, const struct remote_pathset *set,
			  const struct digest *strong, const struct buf *result_body,
			  const struct result *res)
{
	struct buf step_body;
	buf_init(&step_body);
	step_encode(step, &step_body);
	size_t nblobs;
	struct blob_ref *blobs = result_blobs(res, &nblobs);
	struct store_entry entry = {
		.weak = &step->weak,
		.step_body = step_body.data,
		.step_len = step_body.len,
		.pathset = &set->digest,
		.pathset_body = set->body,
		.pathset_len = set->len,
		.strong = strong,
		.result_body = result_body->data,
		.result_len = result_body->len,
		.blobs = blobs,
		.nblobs = nblobs,
		.duration_ms = res->duration_ms,
	};
	struct error e = { 0 };
	if (store_put_entry(x->store, &entry, LOCAL_MAX_PATHSETS, &e) < 0) {
		count(x, "errors");
		note(x, "cannot store the remote hit locally", &e);
	}
	free(blobs);
	buf_free(&step_body);
}

/* Tries one path set of the list. 1 hit, 0 not this one, -1 the server
 * failed (stop asking this tier). */
static int try_pathset(struct ctx *x, size_t tier, const struct step *step,
		       struct digest_cache *dc, const struct digest *w,
		       const struct remote_pathset *set, int *exit_code)
{
	struct error e = { 0 };
	/* An untrusted path set is not even evaluated: what it names would be
	 * read, and the key asked for next would tell its writer what the
	 * files hold. */
	if (!pathset_trusted(x, w, set)) {
		count(x, "remote_untrusted");
		note(x, "unsigned or untrusted path set", NULL);
		return 0;
	}
	struct pathset ps;
	if (pathset_decode(set->body, set->len, &ps, &e) < 0) {
		count(x, "remote_corrupt");
		note(x, "corrupt path set", &e);
		struct digest kw;
		remote_key_pathsets(w, &kw);
		remote_client_fault(x->client, tier, &kw, "corrupt path set");
		return 0;
	}
	if (portable_localise_pathset(&ps, &step->bases) < 0) {
		pathset_free(&ps);
		return 0; /* recorded under a base that is not set here */
	}
	/* A step observes at least its program: an entry that depends on
	 * nothing would be stored locally and hit for ever, whatever the
	 * sources hold. */
	if (ps.nobs == 0) {
		count(x, "remote_refused");
		note(x, "path set with no observation refused", NULL);
		pathset_free(&ps);
		return 0;
	}
	const char *outside = trust_required(x) == 0 ? remote_pathset_outside(&ps, step) : NULL;
	if (outside) {
		count(x, "remote_refused");
		struct error why = { 0 };
		error_set(&why, "%s", outside);
		note(x, "unsigned path set naming a path outside the step's roots refused", &why);
		pathset_free(&ps);
		return 0;
	}
	struct buf values, result_body;
	buf_init(&values);
	buf_init(&result_body);
	struct digest strong, key;
	pathset_strong_key(&ps, &step->bases, w, &set->digest, dc, &values, &strong);
	remote_key_entry(&strong, &key);
	void *data = NULL;
	size_t len = 0;
	int g = remote_get(x->client, tier, "ac", &key, REMOTE_MAX_RECORD, &data, &len, &e);
	int rc = 0;
	struct remote_entry en = { 0 };
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
	if (g != REMOTE_FOUND || remote_entry_decode(data, len, &en, &e) < 0 ||
	    !digest_equal(&en.weak, w) || !digest_equal(&en.pathset, &set->digest) ||
	    !digest_equal(&en.strong, &strong)) {
		/* Garbage, or an entry stored under another key than it names. */
		count(x, "remote_corrupt");
		note(x, "corrupt entry", &e);
		remote_client_fault(x->client, tier, &key, "corrupt entry");
		rc = -1;
		goto out;
	}
	if (!entry_trusted(x, &en)) {
		count(x, "remote_untrusted");
		note(x, en.is_signed ? "entry signed by an untrusted key, or badly" : "unsigned entry",
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
	const char *roots[3] = { step->cwd, step->bases.dir[STEP_BASE_DIR], NULL };
	if (result_restore_beneath(&res, x->store, roots, &e) < 0) {
		count(x, e.code == EPERM ? "remote_refused" : "errors");
		note(x, e.code == EPERM ? "entry refused" : "cannot restore", &e);
		goto out;
	}
	replay(x->store, &res.out, 1, step);
	replay(x->store, &res.err, 2, step);
	result_replay_stdin_advance(&res);
	store_locally(x, step, set, &strong, &result_body, &res);
	*exit_code = res.exit_code;
	rc = 1;
out:
	result_free(&res);
	remote_entry_free(&en);
	free(data);
	buf_free(&values);
	buf_free(&result_body);
	pathset_free(&ps);
	return rc;
}

int remote_tier_lookup(struct store *s, const struct step *step, struct digest_cache *dc,
		       int *exit_code)
{
	if (store_is_readonly(s))
		return 0; /* a hit must be stored before it is restored */
	struct ctx x;
	if (ctx_open(&x, s) <= 0)
		return 0;
	const struct digest *w = &step->weak;
	struct digest kw;
	int hit = 0, asked = 0;
	remote_key_pathsets(w, &kw);
	remote_client_lookup_begin(x.client);
	for (size_t t = 0; t < remote_client_tiers(x.client) && !hit; t++) {
		void *data = NULL;
		size_t len = 0;
		struct error e = { 0 };
		int g = remote_get(x.client, t, "ac", &kw, REMOTE_MAX_RECORD, &data, &len, &e);
		if (g == REMOTE_SKIPPED) {
			count(&x, "remote_skipped");
			continue;
		}
		if (g == REMOTE_ERROR) {
			count(&x, "remote_errors");
			note(&x, "lookup failed", &e);
			continue;
		}
		asked = 1;
		if (g == REMOTE_TOO_LARGE)
			count(&x, "remote_corrupt");
		if (g != REMOTE_FOUND) {
			note(&x, "the remote does not know this step", NULL);
			continue;
		}
		struct remote_pathsets list;
		if (remote_pathsets_decode(data, len, &list, &e) < 0) {
			count(&x, "remote_corrupt");
			note(&x, "corrupt path-set list", &e);
			remote_client_fault(x.client, t, &kw, "corrupt path-set list");
		} else {
			for (size_t i = 0; i < list.n && !hit; i++) {
				int r = try_pathset(&x, t, step, dc, w, &list.sets[i], exit_code);
				if (r < 0)
					break;
				hit = r;
			}
			remote_pathsets_free(&list);
		}
		free(data);
	}
	remote_client_lookup_end(x.client);
	if (hit) {
		store_count(s, "hits", 1);
		count(&x, "remote_hits");
	} else if (asked) {
		count(&x, "remote_misses");
	}
	ctx_close(&x);
	return hit;
}

/* ---- explain ---- */

/* 1 when set holds here and the remote has a trusted entry for it, 0 when
 * not (counted in *out), -1 when the server failed. */
static int explain_pathset(struct ctx *x, size_t tier, const struct step *step,
			   struct digest_cache *dc, const struct remote_pathset *set,
			   struct remote_explanation *out)
{
	const struct digest *w = &step->weak;
	if (!pathset_trusted(x, w, set)) {
		out->untrusted++;
		return 0;
	}
	struct error e = { 0 };
	struct pathset ps;
	if (pathset_decode(set->body, set->len, &ps, &e) < 0) {
		out->refused++;
		return 0;
	}
	if (portable_localise_pathset(&ps, &step->bases) < 0 || ps.nobs == 0 ||
	    (trust_required(x) == 0 && remote_pathset_outside(&ps, step))) {
		out->refused++;
		pathset_free(&ps);
		return 0;
	}
	struct buf values;
	buf_init(&values);
	struct digest strong, key;
	pathset_strong_key(&ps, &step->bases, w, &set->digest, dc, &values, &strong);
	buf_free(&values);
	pathset_free(&ps);
	remote_key_entry(&strong, &key);
	void *data = NULL;
	size_t len = 0;
	int g = remote_get(x->client, tier, "ac", &key, REMOTE_MAX_RECORD, &data, &len, &e);
	if (g == REMOTE_ERROR || g == REMOTE_SKIPPED)
		return -1;
	struct remote_entry en = { 0 };
	int holds = g == REMOTE_FOUND && remote_entry_decode(data, len, &en, &e) == 0 &&
		    digest_equal(&en.weak, w) && digest_equal(&en.pathset, &set->digest) &&
		    digest_equal(&en.strong, &strong);
	if (holds && !entry_trusted(x, &en)) {
		out->untrusted++;
		holds = 0;
	}
	remote_entry_free(&en);
	free(data);
	return holds;
}

int remote_tier_explain(struct store *s, const struct step *step, struct digest_cache *dc,
			struct remote_explanation *out)
{
	memset(out, 0, sizeof *out);
	struct ctx x;
	if (ctx_open(&x, s) <= 0)
		return 0;
	struct digest kw;
	remote_key_pathsets(&step->weak, &kw);
	out->verdict = REMOTE_VERDICT_UNREACHABLE;
	remote_client_lookup_begin(x.client);
	for (size_t t = 0; t < remote_client_tiers(x.client) && out->verdict != REMOTE_VERDICT_HIT; t++) {
		void *data = NULL;
		size_t len = 0;
		struct error e = { 0 };
		int g = remote_get(x.client, t, "ac", &kw, REMOTE_MAX_RECORD, &data, &len, &e);
		if (g == REMOTE_ERROR || g == REMOTE_SKIPPED) {
			if (!out->error)
				out->error = xstrdup(g == REMOTE_SKIPPED ? "resting after failures" : e.msg);
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
			int r = explain_pathset(&x, t, step, dc, &list.sets[i], out);
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
	remote_client_lookup_end(x.client);
	ctx_close(&x);
	return 0;
}

void remote_explanation_free(struct remote_explanation *x)
{
	free(x->error);
	x->error = NULL;
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

/* Starts `cachet remote drain` in the background unless one runs. The
 * drainer is a new session with no descriptor of ours beyond /dev/null, so
 * make, ctest or a pipe never wait for it. */
static void start_drainer(struct ctx *x)
{
	int lock = spool_lock(x->state_dir, 0);
	if (lock < 0)
		return; /* a drainer holds the lock and will see our job */
	spool_unlock(lock);
	char *self = cli_self_exe();
	if (!self)
		return;
	char **base = prepared.caller_env ? prepared.caller_env : environ;
	size_t n = 0;
	while (base[n])
		n++;
	char **env = xmalloc((n + 2) * sizeof *env);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(base[i], "CACHET_DIR=", 11) != 0)
			env[k++] = base[i];
	char *dir = xasprintf("CACHET_DIR=%s", store_dir(x->store));
	env[k++] = dir;
	env[k] = NULL;
	char *argv[] = { "cachet", "remote", "drain", NULL };
	pid_t pid = fork();
	if (pid == 0) {
		setsid();
		if (fork() != 0)
			_exit(0);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		close_range(3, ~0U, 0);
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = SIG_DFL;
		for (int sig = 1; sig < NSIG; sig++)
			sigaction(sig, &sa, NULL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execve(self, argv, env);
		_exit(127);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	free(dir);
	free(env);
	free(self);
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
	struct error e = { 0 };
	make_job(step, rec, &job);
	if (spool_write(x.state_dir, &job, &e) < 0) {
		count(&x, "remote_errors");
		note(&x, "cannot spool an upload", &e);
	} else {
		count(&x, "remote_queued");
		/* While every writable server rests, jobs wait for the next
		 * drainer instead of starting one per step. */
		if (awake)
			start_drainer(&x);
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
	struct error e = { 0 };
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
		struct blob_ref ref = { .digest = job->blobs[i], .size = job->sizes[i], .form = BLOB_RAW };
		void *data;
		size_t len;
		if (store_blob_read(x->store, &ref, &data, &len, &e) < 0)
			return 0;
		g = remote_put(x->client, tier, "cas", &job->blobs[i], data, len, &e);
		free(data);
		if (g != REMOTE_FOUND)
			return -1;
	}
	struct remote_entry en = { .weak = job->weak, .pathset = job->pathset, .strong = job->strong };
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
	struct remote_pathsets list = { 0 };
	g = remote_get(x->client, tier, "ac", &key, REMOTE_MAX_RECORD, &data, &len, &e);
	if (g == REMOTE_ERROR || g == REMOTE_SKIPPED)
		return -1;
	if (g == REMOTE_FOUND && remote_pathsets_decode(data, len, &list, &e) < 0)
		memset(&list, 0, sizeof list); /* garbage: start afresh */
	free(data);
	int rc = 1;
	struct remote_pathset set = { .digest = job->pathset,
				      .body = job->pathset_body.data,
				      .len = job->pathset_body.len };
	if (signer && sign_pathset(signer, &job->weak, &set, &e) < 0)
		return 0;
	if (remote_pathsets_add(&list, &set)) {
		buf_init(&body);
		remote_pathsets_encode(&list, &body);
		if (remote_put(x->client, tier, "ac", &key, body.data, body.len, &e) != REMOTE_FOUND)
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
	struct error e = { 0 };
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
	struct error e = { 0 };
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
		return rc < 0 ? error_set(e, "the remote configuration is invalid")
			      : rep->left ? error_set(e, "no remote is configured") : 0;
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
