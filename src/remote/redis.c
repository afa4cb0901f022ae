/*
 * The Redis transport (hiredis 0.14), in the plugin: GET, EXISTS and SET on
 * "<prefix>:<ns>:<hex>", single-key commands only, so that several
 * independent servers can share a cache by rendezvous hashing (the client
 * picks the server). Debian's hiredis 0.14 has no TLS and no Cluster
 * support; `AUTH user password` needs Redis 6.
 */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "cachet/remote.h"
#include "remote/backend.h"
#include "remote/plugin.h"

struct redis_conn {
	redisContext *c;
	char *prefix;
};

static struct timeval ms_to_tv(long ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	return tv;
}

static void redis_close(void *conn)
{
	struct redis_conn *r = conn;
	if (!r)
		return;
	if (r->c)
		redisFree(r->c);
	free(r->prefix);
	free(r);
}

/* A reply that must be a status "OK" (AUTH, SELECT, SET). */
static int expect_ok(struct redis_conn *r, redisReply *rep, const char *what, char *err,
		     size_t errlen)
{
	if (!rep) {
		snprintf(err, errlen, "%s: %s", what, r->c->errstr[0] ? r->c->errstr : "no answer");
		return -1;
	}
	int ok = rep->type == REDIS_REPLY_STATUS && rep->str && !strcmp(rep->str, "OK");
	if (!ok) {
		/* An error reply names the failure; it never echoes the password. */
		snprintf(err, errlen, "%s: %s", what,
			 rep->type == REDIS_REPLY_ERROR && rep->str ? rep->str : "unexpected answer");
	}
	freeReplyObject(rep);
	return ok ? 0 : -1;
}

static void *redis_open(const struct remote_backend_spec *spec, char *err, size_t errlen)
{
	struct redis_conn *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->prefix = strdup(spec->prefix ? spec->prefix : "cachet");
	struct timeval ct = ms_to_tv(spec->connect_timeout_ms);
	r->c = spec->socket_path ? redisConnectUnixWithTimeout(spec->socket_path, ct)
				 : redisConnectWithTimeout(spec->host, spec->port, ct);
	if (!r->c || r->c->err) {
		snprintf(err, errlen, "cannot connect: %s", r->c ? r->c->errstr : "out of memory");
		redis_close(r);
		return NULL;
	}
	if (redisSetTimeout(r->c, ms_to_tv(spec->op_timeout_ms)) != REDIS_OK) {
		snprintf(err, errlen, "cannot set the timeout: %s", r->c->errstr);
		redis_close(r);
		return NULL;
	}
	if (spec->password) {
		redisReply *rep = spec->user ? redisCommand(r->c, "AUTH %s %s", spec->user, spec->password)
					     : redisCommand(r->c, "AUTH %s", spec->password);
		if (expect_ok(r, rep, "AUTH", err, errlen) < 0) {
			redis_close(r);
			return NULL;
		}
	}
	if (spec->db && expect_ok(r, redisCommand(r->c, "SELECT %d", spec->db), "SELECT", err,
				  errlen) < 0) {
		redis_close(r);
		return NULL;
	}
	return r;
}

static void key_of(const struct redis_conn *r, const char *ns, const char *hex, char *out,
		   size_t cap)
{
	snprintf(out, cap, "%s:%s:%s", r->prefix, ns, hex);
}

static int redis_get(void *conn, const char *ns, const char *hex, size_t max, void **data,
		     size_t *len, char *err, size_t errlen)
{
	struct redis_conn *r = conn;
	char key[512];
	key_of(r, ns, hex, key, sizeof key);
	redisReply *rep = redisCommand(r->c, "GET %s", key);
	if (!rep) {
		snprintf(err, errlen, "GET: %s", r->c->errstr[0] ? r->c->errstr : "no answer");
		return -1;
	}
	int rc;
	if (rep->type == REDIS_REPLY_NIL) {
		rc = 0;
	} else if (rep->type != REDIS_REPLY_STRING) {
		snprintf(err, errlen, "GET: %s",
			 rep->type == REDIS_REPLY_ERROR && rep->str ? rep->str : "unexpected answer");
		rc = -1;
	} else if ((size_t)rep->len > max) {
		snprintf(err, errlen, "answer larger than %zu bytes", max);
		rc = -3;
	} else {
		*len = (size_t)rep->len;
		*data = malloc(*len ? *len : 1);
		if (*data) {
			memcpy(*data, rep->str, *len);
			rc = 1;
		} else {
			snprintf(err, errlen, "out of memory");
			rc = -1;
		}
	}
	freeReplyObject(rep);
	return rc;
}

static int redis_exists(void *conn, const char *ns, const char *hex, char *err, size_t errlen)
{
	struct redis_conn *r = conn;
	char key[512];
	key_of(r, ns, hex, key, sizeof key);
	redisReply *rep = redisCommand(r->c, "EXISTS %s", key);
	if (!rep) {
		snprintf(err, errlen, "EXISTS: %s", r->c->errstr[0] ? r->c->errstr : "no answer");
		return -1;
	}
	int rc = rep->type == REDIS_REPLY_INTEGER ? rep->integer > 0 : -1;
	if (rc < 0)
		snprintf(err, errlen, "EXISTS: unexpected answer");
	freeReplyObject(rep);
	return rc;
}

static int redis_put(void *conn, const char *ns, const char *hex, const void *data, size_t len,
		     char *err, size_t errlen)
{
	struct redis_conn *r = conn;
	char key[512];
	key_of(r, ns, hex, key, sizeof key);
	return expect_ok(r, redisCommand(r->c, "SET %s %b", key, data, len), "SET", err, errlen);
}

static const struct remote_backend redis_backend = {
	.abi = REMOTE_PLUGIN_ABI,
	.open = redis_open,
	.get = redis_get,
	.exists = redis_exists,
	.put = redis_put,
	.close = redis_close,
};

/* The plugin's entry point (libcachet-remote-redis.so). */
const struct remote_backend *cachet_remote_plugin_v1(int kind, int abi)
{
	return kind == REMOTE_REDIS && abi == REMOTE_PLUGIN_ABI ? &redis_backend : NULL;
}
