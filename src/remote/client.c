/*
 * The client: tiers of servers tried in order, the plugin loaded on first
 * use, one lazily opened connection per server, and the circuit breaker.
 * Every HTTP server is a tier; all Redis servers form one tier whose keys are
 * spread over them by rendezvous hashing (highest SHA-256(server id, key)
 * wins), so adding a server moves only the keys it now wins.
 */
#include "cachet/remote.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cachet/bug.h"
#include "cachet/path.h"
#include "cachet/plugin.h"
#include "remote/backend.h"

/* One plugin per transport, so that a Redis-only setup never loads
 * libcurl and its thirty dependencies (about 15 ms here). */
static const char *plugin_name(enum remote_kind kind)
{
	return kind == REMOTE_REDIS ? "libcachet-remote-redis.so" : "libcachet-remote-http.so";
}

struct shard {
	const struct remote_spec *spec;
	void *conn;
	int dead; /* failed or skipped in this process: not asked again */
};

struct tier {
	struct shard **shards;
	size_t n;
};

struct plugin {
	remote_plugin_fn fn;
	int failed;
};

struct remote_client {
	const struct remote_config *config;
	char *state_dir;
	char *plugin_dir;
	struct plugin plugins[3]; /* by enum remote_kind */
	struct shard *shards;
	struct tier *tiers;
	size_t ntiers;
	int ignore_breakers;
	int64_t lookup_start_ms; /* CLOCK_MONOTONIC; 0 outside a lookup */
};

char *remote_plugin_dir(const char *self_exe)
{
	if (!self_exe)
		return NULL;
	char *dir = path_dirname(self_exe);
	char *candidates[2] = {xstrdup(dir), xasprintf("%s/../lib/cachet", dir)};
	free(dir);
	char *found = NULL;
	for (int i = 0; i < 2; i++) {
		char *http = xasprintf("%s/%s", candidates[i], plugin_name(REMOTE_HTTP));
		char *redis = xasprintf("%s/%s", candidates[i], plugin_name(REMOTE_REDIS));
		if (!found && (access(http, R_OK) == 0 || access(redis, R_OK) == 0))
			found = candidates[i];
		else
			free(candidates[i]);
		free(http);
		free(redis);
	}
	return found;
}

struct remote_client *remote_client_new(const struct remote_config *config, const char *state_dir,
                                        const char *plugin_dir)
{
	struct remote_client *c = xcalloc(1, sizeof *c);
	c->config = config;
	c->state_dir = xstrdup(state_dir);
	c->plugin_dir = plugin_dir ? xstrdup(plugin_dir) : NULL;
	c->shards = xcalloc(config->n ? config->n : 1, sizeof *c->shards);
	c->tiers = xcalloc(config->n ? config->n : 1, sizeof *c->tiers);
	struct tier *redis = NULL;
	for (size_t i = 0; i < config->n; i++) {
		struct shard *sh = &c->shards[i];
		sh->spec = &config->specs[i];
		struct tier *t;
		if (sh->spec->kind == REMOTE_REDIS && redis) {
			t = redis;
		} else {
			t = &c->tiers[c->ntiers++];
			t->shards = xcalloc(config->n, sizeof *t->shards);
			if (sh->spec->kind == REMOTE_REDIS)
				redis = t;
		}
		t->shards[t->n++] = sh;
	}
	return c;
}

static const struct remote_backend *backend_of(struct remote_client *c, const struct shard *sh)
{
	const struct plugin *p = &c->plugins[sh->spec->kind];
	return p->fn ? p->fn((int)sh->spec->kind, REMOTE_PLUGIN_ABI) : NULL;
}

void remote_client_free(struct remote_client *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->config->n; i++) {
		struct shard *sh = &c->shards[i];
		if (sh->conn)
			backend_of(c, sh)->close(sh->conn);
	}
	for (size_t i = 0; i < c->ntiers; i++)
		free(c->tiers[i].shards);
	free(c->tiers);
	free(c->shards);
	free(c->state_dir);
	free(c->plugin_dir);
	/* Plugins stay loaded: libcurl and OpenSSL register exit handlers. */
	free(c);
}

size_t remote_client_tiers(const struct remote_client *c)
{
	return c->ntiers;
}

int remote_tier_is_read_only(const struct remote_client *c, size_t tier)
{
	const struct tier *t = &c->tiers[tier];
	for (size_t i = 0; i < t->n; i++)
		if (!t->shards[i]->spec->read_only)
			return 0;
	return 1;
}

int remote_tier_is_resting(const struct remote_client *c, size_t tier)
{
	const struct tier *t = &c->tiers[tier];
	for (size_t i = 0; i < t->n; i++) {
		const struct shard *sh = t->shards[i];
		if (sh->spec->read_only || sh->dead)
			continue;
		if (c->ignore_breakers || !breaker_is_open(c->state_dir, sh->spec->id))
			return 0;
	}
	return 1;
}

void remote_client_ignore_breakers(struct remote_client *c, int ignore)
{
	c->ignore_breakers = ignore;
}

uint64_t remote_tier_max_blob(const struct remote_client *c, size_t tier)
{
	const struct tier *t = &c->tiers[tier];
	uint64_t m = UINT64_MAX;
	for (size_t i = 0; i < t->n; i++)
		if (t->shards[i]->spec->max_blob < m)
			m = t->shards[i]->spec->max_blob;
	return m;
}

static struct shard *pick(struct remote_client *c, size_t tier, const struct digest *key)
{
	struct tier *t = &c->tiers[tier];
	if (t->n == 1)
		return t->shards[0];
	struct shard *best = NULL;
	uint64_t best_score = 0;
	for (size_t i = 0; i < t->n; i++) {
		struct hasher h;
		struct digest d;
		if (hasher_init(&h, NULL) < 0)
			BUG("SHA-256 could not be started");
		hasher_update_str(&h, t->shards[i]->spec->id);
		hasher_update(&h, key->b, DIGEST_LEN);
		hasher_final(&h, &d);
		uint64_t score = 0;
		for (int k = 0; k < 8; k++)
			score = score << 8 | d.b[k];
		if (!best || score > best_score) {
			best = t->shards[i];
			best_score = score;
		}
	}
	return best;
}

static int load_plugin(struct remote_client *c, enum remote_kind kind, struct error *e)
{
	struct plugin *p = &c->plugins[kind];
	if (p->fn)
		return 0;
	if (p->failed || !c->plugin_dir)
		return error_set(e, "the remote plugin %s is not installed", plugin_name(kind));
	char *path = xasprintf("%s/%s", c->plugin_dir, plugin_name(kind));
	p->fn = (remote_plugin_fn)plugin_symbol(path, REMOTE_PLUGIN_SYMBOL, e);
	if (!p->fn)
		p->failed = 1;
	free(path);
	return p->fn ? 0 : -1;
}

static void fail_shard(struct remote_client *c, struct shard *sh, const char *reason)
{
	sh->dead = 1;
	if (sh->conn) {
		backend_of(c, sh)->close(sh->conn);
		sh->conn = NULL;
	}
	breaker_trip(c->state_dir, sh->spec->id, sh->spec->retry_after_ms, reason);
}

/* SIGPIPE blocked around network I/O: a server that closes the connection
 * while hiredis writes must not kill cachet. A SIGPIPE raised meanwhile is
 * consumed before the old mask (inherited by the step) comes back. */
struct pipe_guard {
	sigset_t old;
};

static void guard_begin(struct pipe_guard *g)
{
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGPIPE);
	sigprocmask(SIG_BLOCK, &block, &g->old);
}

static void guard_end(struct pipe_guard *g)
{
	sigset_t pending, only;
	sigemptyset(&only);
	sigaddset(&only, SIGPIPE);
	if (!sigismember(&g->old, SIGPIPE) && sigpending(&pending) == 0 &&
	    sigismember(&pending, SIGPIPE)) {
		struct timespec zero = {0, 0};
		sigtimedwait(&only, NULL, &zero);
	}
	sigprocmask(SIG_SETMASK, &g->old, NULL);
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void remote_client_lookup_begin(struct remote_client *c)
{
	c->lookup_start_ms = mono_ms();
}

void remote_client_lookup_end(struct remote_client *c)
{
	c->lookup_start_ms = 0;
}

/* What the next request to sh may take: op-timeout, or within a lookup what
 * is left of it since the lookup began (a server answering each request
 * just under op-timeout would otherwise hold a step for one op-timeout per
 * path set it lists). 0 when nothing is left. */
static long budget_ms(const struct remote_client *c, const struct shard *sh)
{
	long op = sh->spec->op_timeout_ms;
	if (!c->lookup_start_ms)
		return op;
	int64_t left = (int64_t)op - (mono_ms() - c->lookup_start_ms);
	return left > 0 ? (long)left : 0;
}

/* sh, its next request given what is left of the budget; NULL (the server
 * failed: too slow) when nothing is. */
static struct shard *with_budget(struct remote_client *c, struct shard *sh, int *code,
                                 struct error *e)
{
	long ms = budget_ms(c, sh);
	if (ms <= 0) {
		fail_shard(c, sh, "the lookup took longer than op-timeout");
		*code = REMOTE_ERROR;
		error_set(e, "%s: the lookup took longer than op-timeout (%ld ms)", sh->spec->shown,
		          sh->spec->op_timeout_ms);
		return NULL;
	}
	backend_of(c, sh)->set_timeout(sh->conn, ms);
	return sh;
}

/* The server for key, connected; or NULL with *code set. */
static struct shard *ready(struct remote_client *c, size_t tier, const struct digest *key,
                           int *code, struct error *e)
{
	struct shard *sh = pick(c, tier, key);
	if (sh->dead) {
		*code = REMOTE_SKIPPED;
		error_set(e, "%s: skipped after a failure", sh->spec->shown);
		return NULL;
	}
	if (!sh->conn && !c->ignore_breakers && breaker_is_open(c->state_dir, sh->spec->id)) {
		sh->dead = 1;
		*code = REMOTE_SKIPPED;
		error_set(e, "%s: skipped for a while after a failure", sh->spec->shown);
		return NULL;
	}
	if (load_plugin(c, sh->spec->kind, e) < 0) {
		sh->dead = 1;
		*code = REMOTE_ERROR;
		return NULL;
	}
	if (sh->conn)
		return with_budget(c, sh, code, e);
	const struct remote_spec *s = sh->spec;
	struct remote_backend_spec bs = {
	    .base_url = s->base_url,
	    .host = s->host,
	    .port = s->port,
	    .socket_path = s->socket_path,
	    .db = s->db,
	    .user = s->user,
	    .password = s->password,
	    .bearer = s->bearer,
	    .prefix = s->prefix,
	    .connect_timeout_ms = s->connect_timeout_ms,
	    .op_timeout_ms = s->op_timeout_ms,
	};
	const struct remote_backend *be = backend_of(c, sh);
	if (!be) {
		sh->dead = 1;
		*code = REMOTE_ERROR;
		error_set(e, "%s: the plugin does not speak this protocol", s->shown);
		return NULL;
	}
	char err[512] = "";
	struct pipe_guard g;
	guard_begin(&g);
	sh->conn = be->open(&bs, err, sizeof err);
	guard_end(&g);
	if (!sh->conn) {
		fail_shard(c, sh, err);
		*code = REMOTE_ERROR;
		error_set(e, "%s: %s", s->shown, err);
		return NULL;
	}
	return with_budget(c, sh, code, e);
}

static void hex_of(const struct digest *key, char *hex)
{
	digest_to_hex(key, hex);
}

int remote_get(struct remote_client *c, size_t tier, const char *ns, const struct digest *key,
               size_t max, void **data, size_t *len, struct error *e)
{
	int code;
	struct shard *sh = ready(c, tier, key, &code, e);
	if (!sh)
		return code;
	char hex[DIGEST_HEX_LEN + 1], err[512] = "";
	hex_of(key, hex);
	struct pipe_guard g;
	guard_begin(&g);
	int rc = backend_of(c, sh)->get(sh->conn, ns, hex, max, data, len, err, sizeof err);
	guard_end(&g);
	if (rc == 1)
		return REMOTE_FOUND;
	if (rc == 0)
		return REMOTE_ABSENT;
	error_set(e, "%s: %s", sh->spec->shown, err);
	/* Too much is garbage: the server is skipped as if it were down. */
	fail_shard(c, sh, err);
	return rc == -3 ? REMOTE_TOO_LARGE : REMOTE_ERROR;
}

void remote_client_fault(struct remote_client *c, size_t tier, const struct digest *key,
                         const char *why)
{
	struct shard *sh = pick(c, tier, key);
	if (!sh->dead)
		fail_shard(c, sh, why);
}

int remote_exists(struct remote_client *c, size_t tier, const char *ns, const struct digest *key,
                  struct error *e)
{
	int code;
	struct shard *sh = ready(c, tier, key, &code, e);
	if (!sh)
		return code;
	char hex[DIGEST_HEX_LEN + 1], err[512] = "";
	hex_of(key, hex);
	struct pipe_guard g;
	guard_begin(&g);
	int rc = backend_of(c, sh)->exists(sh->conn, ns, hex, err, sizeof err);
	guard_end(&g);
	if (rc >= 0)
		return rc ? REMOTE_FOUND : REMOTE_ABSENT;
	error_set(e, "%s: %s", sh->spec->shown, err);
	fail_shard(c, sh, err);
	return REMOTE_ERROR;
}

int remote_put(struct remote_client *c, size_t tier, const char *ns, const struct digest *key,
               const void *data, size_t len, struct error *e)
{
	struct shard *chosen = pick(c, tier, key);
	if (chosen->spec->read_only) {
		error_set(e, "%s is read-only", chosen->spec->shown);
		return REMOTE_READ_ONLY;
	}
	int code;
	struct shard *sh = ready(c, tier, key, &code, e);
	if (!sh)
		return code;
	char hex[DIGEST_HEX_LEN + 1], err[512] = "";
	hex_of(key, hex);
	struct pipe_guard g;
	guard_begin(&g);
	int rc = backend_of(c, sh)->put(sh->conn, ns, hex, data, len, err, sizeof err);
	guard_end(&g);
	if (rc == 0)
		return REMOTE_FOUND;
	error_set(e, "%s: %s", sh->spec->shown, err);
	fail_shard(c, sh, err);
	return REMOTE_ERROR;
}
