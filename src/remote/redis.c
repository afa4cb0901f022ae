/*
 * The Redis transport (hiredis 0.14), in the plugin: GET, EXISTS and SET on
 * "<prefix>:<ns>:<hex>", single-key commands only, so that several
 * independent servers can share a cache by rendezvous hashing (the client
 * picks the server). Debian's hiredis 0.14 has no TLS and no Cluster
 * support; `AUTH user password` needs Redis 6.
 */
#include <ctype.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include "cachet/remote.h"
#include "remote/backend.h"
#include "remote/plugin.h"

struct redis_conn {
	redisContext *c; /* hiredis connects; replies are read here, bounded */
	char *prefix;
	long timeout_ms;     /* the next request's budget in all */
	int64_t deadline_ms; /* of the request under way (CLOCK_MONOTONIC) */
	int broken;          /* a reply was left half read: the stream is lost */
	char in[16384];
	size_t pos, have;
};

/* hiredis 0.14 reads a reply whole before anything can look at it: a bulk
 * string header of 1.5 GB makes it buffer 1.5 GB, a multi-bulk header of
 * 2^31-1 elements makes it allocate per level, and its timeout is per
 * read(), so a server that trickles one byte a second holds a step for
 * ever. cachet sends four commands whose answers are a status, an error,
 * an integer or one bulk string: those are read here, each length checked
 * before a byte of the body is buffered, and every wait bounded by the
 * request's deadline. */
#define LINE_MAX_BYTES 512

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct timeval ms_to_tv(long ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
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

static void redis_set_timeout(void *conn, long ms)
{
	((struct redis_conn *)conn)->timeout_ms = ms > 0 ? ms : 1;
}

/* Waits until the socket is ready for events, within the deadline. */
static int wait_ready(struct redis_conn *r, short events, char *err, size_t errlen)
{
	for (;;) {
		int64_t left = r->deadline_ms - mono_ms();
		if (left <= 0) {
			snprintf(err, errlen, "no complete answer within %ld ms", r->timeout_ms);
			return -1;
		}
		struct pollfd p = {r->c->fd, events, 0};
		int n = poll(&p, 1, (int)(left > INT_MAX ? INT_MAX : left));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR) {
			snprintf(err, errlen, "poll: %s", strerror(errno));
			return -1;
		}
	}
}

static int send_all(struct redis_conn *r, const char *data, size_t len, char *err, size_t errlen)
{
	while (len > 0) {
		if (wait_ready(r, POLLOUT, err, errlen) < 0)
			return -1;
		ssize_t n = send(r->c->fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0) {
			snprintf(err, errlen, "send: %s", strerror(errno));
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* At least one more byte in r->in. */
static int fill(struct redis_conn *r, char *err, size_t errlen)
{
	if (r->pos == r->have)
		r->pos = r->have = 0;
	for (;;) {
		if (wait_ready(r, POLLIN, err, errlen) < 0)
			return -1;
		ssize_t n = recv(r->c->fd, r->in + r->have, sizeof r->in - r->have, MSG_DONTWAIT);
		if (n > 0) {
			r->have += (size_t)n;
			return 0;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		snprintf(err, errlen, "%s", n == 0 ? "connection closed" : strerror(errno));
		return -1;
	}
}

/* One line of the answer, without its CRLF; at most LINE_MAX_BYTES. */
static int read_line(struct redis_conn *r, char *line, char *err, size_t errlen)
{
	size_t n = 0;
	for (;;) {
		if (r->pos == r->have && fill(r, err, errlen) < 0)
			return -1;
		char ch = r->in[r->pos++];
		if (ch == '\n' && n > 0 && line[n - 1] == '\r') {
			line[n - 1] = '\0';
			return 0;
		}
		if (n + 1 >= LINE_MAX_BYTES) {
			snprintf(err, errlen, "answer line longer than %d bytes", LINE_MAX_BYTES);
			return -1;
		}
		line[n++] = ch;
	}
}

static int read_exact(struct redis_conn *r, char *out, size_t len, char *err, size_t errlen)
{
	while (len > 0) {
		if (r->pos == r->have && fill(r, err, errlen) < 0)
			return -1;
		size_t n = r->have - r->pos < len ? r->have - r->pos : len;
		memcpy(out, r->in + r->pos, n);
		r->pos += n;
		out += n;
		len -= n;
	}
	return 0;
}

/* An answer: its type byte (+ - : $), the rest of its first line in line,
 * and for a bulk string its body (malloc'd, *len) unless longer than max
 * (then -3, the body left unread). Aggregates are refused unread. */
struct answer {
	char type;
	char line[LINE_MAX_BYTES];
	char *body; /* NULL for a nil bulk string */
	size_t len;
};

static int exchange(struct redis_conn *r, struct answer *a, size_t max, char *err, size_t errlen,
                    const char *fmt, ...)
{
	memset(a, 0, sizeof *a);
	if (r->broken) {
		snprintf(err, errlen, "connection lost after an earlier answer");
		return -1;
	}
	char *cmd = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = redisvFormatCommand(&cmd, fmt, ap);
	va_end(ap);
	if (n < 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r->deadline_ms = mono_ms() + r->timeout_ms;
	r->broken = 1; /* until the whole answer is read */
	int rc = send_all(r, cmd, (size_t)n, err, errlen);
	free(cmd);
	if (rc < 0 || read_line(r, a->line, err, errlen) < 0)
		return -1;
	a->type = a->line[0];
	memmove(a->line, a->line + 1, strlen(a->line));
	switch (a->type) {
	case '+':
	case '-':
	case ':':
		r->broken = 0;
		return 0;
	case '$':
		break;
	default:
		snprintf(err, errlen, "unexpected answer (type '%c')",
		         isprint((unsigned char)a->type) ? a->type : '?');
		return -1;
	}
	char *end;
	errno = 0;
	long long blen = strtoll(a->line, &end, 10);
	if (errno || end == a->line || *end || blen < -1) {
		snprintf(err, errlen, "bad bulk length");
		return -1;
	}
	if (blen == -1) {
		r->broken = 0;
		return 0;
	}
	if ((unsigned long long)blen > max) {
		snprintf(err, errlen, "answer of %lld bytes, larger than %zu", blen, max);
		return -3;
	}
	a->len = (size_t)blen;
	a->body = malloc(a->len + 2);
	if (!a->body) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (read_exact(r, a->body, a->len + 2, err, errlen) < 0)
		return -1;
	if (a->body[a->len] != '\r' || a->body[a->len + 1] != '\n') {
		snprintf(err, errlen, "bulk string not ended by CRLF");
		return -1;
	}
	r->broken = 0;
	return 0;
}

static void answer_free(struct answer *a)
{
	free(a->body);
	a->body = NULL;
}

/* An answer that must be the status "OK" (AUTH, SELECT, SET): rc and why
 * as exchange left them. */
static int expect_ok(int rc, struct answer *a, const char *why, const char *what, char *err,
                     size_t errlen)
{
	int ok = rc == 0 && a->type == '+' && !strcmp(a->line, "OK");
	/* An error answer names the failure; it never echoes the password. */
	if (!ok)
		snprintf(err, errlen, "%s: %s", what,
		         rc < 0           ? why
		         : a->type == '-' ? a->line
		                          : "unexpected answer");
	answer_free(a);
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
	r->timeout_ms = spec->op_timeout_ms > 0 ? spec->op_timeout_ms : 1;
	struct timeval ct = ms_to_tv(spec->connect_timeout_ms);
	r->c = spec->socket_path ? redisConnectUnixWithTimeout(spec->socket_path, ct)
	                         : redisConnectWithTimeout(spec->host, spec->port, ct);
	if (!r->c || r->c->err) {
		snprintf(err, errlen, "cannot connect: %s", r->c ? r->c->errstr : "out of memory");
		redis_close(r);
		return NULL;
	}
	struct answer a;
	char why[400] = "";
	if (spec->password) {
		int rc = spec->user
		             ? exchange(r, &a, 0, why, sizeof why, "AUTH %s %s", spec->user,
		                        spec->password)
		             : exchange(r, &a, 0, why, sizeof why, "AUTH %s", spec->password);
		if (expect_ok(rc, &a, why, "AUTH", err, errlen) < 0) {
			redis_close(r);
			return NULL;
		}
	}
	if (spec->db && expect_ok(exchange(r, &a, 0, why, sizeof why, "SELECT %d", spec->db), &a,
	                          why, "SELECT", err, errlen) < 0) {
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
	struct answer a;
	char why[400] = "";
	int rc = exchange(r, &a, max, why, sizeof why, "GET %s", key);
	if (rc < 0) {
		snprintf(err, errlen, "GET: %s", why);
		return rc;
	}
	if (a.type == '$' && !a.body)
		return 0;
	if (a.type != '$') {
		snprintf(err, errlen, "GET: %s", a.type == '-' ? a.line : "unexpected answer");
		return -1;
	}
	*data = a.body;
	*len = a.len;
	return 1;
}

static int redis_exists(void *conn, const char *ns, const char *hex, char *err, size_t errlen)
{
	struct redis_conn *r = conn;
	char key[512];
	key_of(r, ns, hex, key, sizeof key);
	struct answer a;
	char why[400] = "";
	int rc = exchange(r, &a, 0, why, sizeof why, "EXISTS %s", key);
	if (rc < 0) {
		snprintf(err, errlen, "EXISTS: %s", why);
		answer_free(&a);
		return -1;
	}
	answer_free(&a);
	if (a.type != ':') {
		snprintf(err, errlen, "EXISTS: unexpected answer");
		return -1;
	}
	return strtoll(a.line, NULL, 10) > 0;
}

static int redis_put(void *conn, const char *ns, const char *hex, const void *data, size_t len,
                     char *err, size_t errlen)
{
	struct redis_conn *r = conn;
	char key[512];
	key_of(r, ns, hex, key, sizeof key);
	struct answer a;
	char why[400] = "";
	return expect_ok(exchange(r, &a, 0, why, sizeof why, "SET %s %b", key, data, len), &a, why,
	                 "SET", err, errlen);
}

static const struct remote_backend redis_backend = {
    .abi = REMOTE_PLUGIN_ABI,
    .open = redis_open,
    .get = redis_get,
    .exists = redis_exists,
    .put = redis_put,
    .close = redis_close,
    .set_timeout = redis_set_timeout,
};

/* The plugin's entry point (libcachet-remote-redis.so). */
const struct remote_backend *cachet_remote_plugin_v1(int kind, int abi)
{
	return kind == REMOTE_REDIS && abi == REMOTE_PLUGIN_ABI ? &redis_backend : NULL;
}
