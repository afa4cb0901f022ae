/*
 * The `remote` setting: one item per server, "URL [attribute...]".
 *
 *   http://[user:password@]host[:port][/prefix]     https:// too
 *   redis://[[user:]password@]host[:port][/db]
 *   redis+unix:///path/to/socket[?db=N]
 *
 * Credentials come from the URL or from files named by attributes; they
 * are kept apart from the URL that the transport sees, and every message
 * shows the redacted URL only.
 */
#include "cachet/remote.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/redact.h"

#define DEFAULT_CONNECT_MS    100
#define DEFAULT_OP_MS         2000
#define DEFAULT_RETRY_MS      30000
#define DEFAULT_MAX_BLOB_HTTP (256ull << 20)
/* Redis keeps values in RAM and refuses bulk strings above
 * proto-max-bulk-len (512 MB by default). */
#define DEFAULT_MAX_BLOB_REDIS (64ull << 20)

static void spec_free(struct remote_spec *s)
{
	free(s->shown);
	free(s->id);
	free(s->base_url);
	free(s->host);
	free(s->socket_path);
	free(s->user);
	if (s->password)
		memset(s->password, 0, strlen(s->password));
	free(s->password);
	if (s->bearer)
		memset(s->bearer, 0, strlen(s->bearer));
	free(s->bearer);
	free(s->prefix);
	memset(s, 0, sizeof *s);
}

void remote_config_free(struct remote_config *c)
{
	for (size_t i = 0; i < c->n; i++)
		spec_free(&c->specs[i]);
	free(c->specs);
	c->specs = NULL;
	c->n = 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static char *percent_decode(const char *s, size_t n)
{
	char *out = xmalloc(n + 1);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			out[k++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else {
			out[k++] = s[i];
		}
	}
	out[k] = '\0';
	return out;
}

char *remote_redact_url(const char *url)
{
	struct buf b;
	buf_init(&b);
	const char *rest = url;
	const char *sep = strstr(url, "://");
	if (sep) {
		buf_add(&b, url, (size_t)(sep + 3 - url));
		rest = sep + 3;
		const char *end = rest + strcspn(rest, "/?#");
		const char *at = memchr(rest, '@', (size_t)(end - rest));
		if (at) {
			buf_addstr(&b, "***@");
			rest = at + 1;
		}
	}
	/* Query values whose names look secret (token=, key=, sig=...). */
	const char *q = strchr(rest, '?');
	if (!q) {
		buf_addstr(&b, rest);
		return buf_detach(&b, NULL);
	}
	buf_add(&b, rest, (size_t)(q - rest) + 1);
	for (const char *p = q + 1; *p;) {
		size_t n = strcspn(p, "&");
		const char *eq = memchr(p, '=', n);
		if (eq && (redact_is_secret_name(p, (size_t)(eq - p)) ||
		           ((size_t)(eq - p) == 3 && !strncmp(p, "sig", 3)))) {
			buf_add(&b, p, (size_t)(eq - p) + 1);
			buf_addstr(&b, "***");
		} else {
			buf_add(&b, p, n);
		}
		p += n;
		if (*p == '&')
			buf_addch(&b, *p++);
	}
	return buf_detach(&b, NULL);
}

/* One attribute as shown: bearer-token= and any other secret-named one
 * lose their value (bearer-token-file= and auth-file= name files). */
static void add_attribute_shown(struct buf *b, const char *attr, size_t n)
{
	const char *eq = memchr(attr, '=', n);
	size_t name = eq ? (size_t)(eq - attr) : n;
	int is_file = name > 5 && !strncmp(attr + name - 5, "-file", 5);
	if (eq && !is_file && redact_is_secret_name(attr, name)) {
		buf_add(b, attr, name + 1);
		buf_addstr(b, "***");
	} else {
		buf_add(b, attr, n);
	}
}

char *remote_redact_setting(const char *text)
{
	struct buf b;
	buf_init(&b);
	for (const char *item = text;;) {
		size_t n = strcspn(item, ",");
		/* Each word: the URL, then its attributes, spacing kept. */
		int first = 1;
		for (size_t i = 0; i < n;) {
			size_t sp = strspn(item + i, " \t");
			buf_add(&b, item + i, sp);
			i += sp;
			size_t w = strcspn(item + i, " \t,");
			if (w > n - i)
				w = n - i;
			if (!w)
				break;
			char *word = xstrndup(item + i, w);
			if (first && strstr(word, "://")) {
				char *shown = remote_redact_url(word);
				buf_addstr(&b, shown);
				free(shown);
			} else {
				add_attribute_shown(&b, word, w);
			}
			free(word);
			first = 0;
			i += w;
		}
		if (!item[n])
			break;
		buf_addch(&b, ',');
		item += n + 1;
	}
	return buf_detach(&b, NULL);
}

int remote_setting_has_credentials(const char *text)
{
	char *shown = remote_redact_setting(text);
	int differs = strcmp(shown, text) != 0;
	free(shown);
	return differs;
}

/* "250", "250ms", "2s", "1.5s" -> milliseconds. */
static int parse_ms(const char *v, long *out)
{
	char *end;
	errno = 0;
	double n = strtod(v, &end);
	if (end == v || errno || !(n >= 0)) /* NaN too */
		return -1;
	double mul = 1;
	if (!strcmp(end, "s"))
		mul = 1000;
	else if (*end && strcmp(end, "ms") != 0)
		return -1;
	/* A day is beyond any sensible timeout; converting a double beyond
	 * the range of long is undefined. */
	if (n * mul > 86400000.0)
		return -1;
	*out = (long)(n * mul + 0.5);
	return 0;
}

static int parse_bytes(const char *v, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (end == v || errno)
		return -1;
	uint64_t mul = 1;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		mul = 1ull << 10;
		end++;
		break;
	case 'M':
		mul = 1ull << 20;
		end++;
		break;
	case 'G':
		mul = 1ull << 30;
		end++;
		break;
	default:
		break;
	}
	if (*end || n > UINT64_MAX / mul)
		return -1;
	*out = n * mul;
	return 0;
}

/* The first line of a file, without its newline (malloc'd). */
static char *read_secret_file(const char *path, struct error *e)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		error_errno(e, "cannot read %s", path);
		return NULL;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);
	fclose(f);
	if (n < 0) {
		free(line);
		error_set(e, "%s is empty", path);
		return NULL;
	}
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	return line;
}

/* user:password, or a lone password (Redis) or user (HTTP). */
static void set_userinfo(struct remote_spec *s, const char *info, size_t n)
{
	const char *colon = memchr(info, ':', n);
	free(s->user);
	free(s->password);
	s->user = s->password = NULL;
	if (colon) {
		if (colon > info)
			s->user = percent_decode(info, (size_t)(colon - info));
		s->password = percent_decode(colon + 1, n - (size_t)(colon + 1 - info));
	} else if (s->kind == REMOTE_REDIS) {
		s->password = percent_decode(info, n);
	} else {
		s->user = percent_decode(info, n);
	}
}

static int parse_url(struct remote_spec *s, const char *url, struct error *e)
{
	const char *sep = strstr(url, "://");
	if (!sep)
		return error_set(
		    e, "not a URL (expected http://, https://, redis:// or redis+unix://)");
	size_t slen = (size_t)(sep - url);
	int is_unix = slen == 10 && !strncmp(url, "redis+unix", 10);
	if ((slen == 4 && !strncmp(url, "http", 4)) || (slen == 5 && !strncmp(url, "https", 5)))
		s->kind = REMOTE_HTTP;
	else if ((slen == 5 && !strncmp(url, "redis", 5)) || is_unix)
		s->kind = REMOTE_REDIS;
	else
		return error_set(e, "unsupported scheme '%.*s'", (int)slen, url);
	const char *auth = sep + 3;
	const char *auth_end = auth + strcspn(auth, "/?#");
	const char *at = memchr(auth, '@', (size_t)(auth_end - auth));
	const char *host = auth;
	if (at) {
		set_userinfo(s, auth, (size_t)(at - auth));
		host = at + 1;
	}
	const char *path = auth_end;

	if (is_unix) {
		if (host != auth_end)
			return error_set(
			    e, "redis+unix:// takes no host: redis+unix:///path/to/socket");
		size_t plen = strcspn(path, "?#");
		if (plen == 0 || path[0] != '/')
			return error_set(e, "redis+unix:// needs a socket path");
		s->socket_path = xstrndup(path, plen);
		const char *q = path + plen;
		if (*q == '?') {
			if (strncmp(q, "?db=", 4) != 0)
				return error_set(e, "redis+unix://: the only query is ?db=N");
			char *end;
			long db = strtol(q + 4, &end, 10);
			if (end == q + 4 || *end || db < 0 || db > 100000)
				return error_set(e, "redis+unix://: bad db number");
			s->db = (int)db;
		}
		char *clean = xasprintf("redis+unix://%s?db=%d", s->socket_path, s->db);
		s->base_url = clean;
		return 0;
	}

	/* host[:port], with [v6] brackets */
	const char *host_end = auth_end;
	const char *port = NULL;
	if (*host == '[') {
		const char *close = memchr(host, ']', (size_t)(auth_end - host));
		if (!close)
			return error_set(e, "unterminated [ in the host");
		host_end = close + 1;
		if (*host_end == ':')
			port = host_end + 1;
		else if (host_end != auth_end)
			return error_set(e, "bad host");
	} else {
		const char *colon = memchr(host, ':', (size_t)(auth_end - host));
		if (colon) {
			host_end = colon;
			port = colon + 1;
		}
	}
	if (host_end == host)
		return error_set(e, "no host");
	long port_n = 0;
	if (port) {
		char *end;
		port_n = strtol(port, &end, 10);
		if (end == port || end != auth_end || port_n < 1 || port_n > 65535)
			return error_set(e, "bad port");
	}
	if (s->kind == REMOTE_HTTP) {
		size_t plen = strlen(path);
		if (strpbrk(path, "?#"))
			return error_set(e, "an HTTP cache URL takes no query or fragment");
		while (plen > 0 && path[plen - 1] == '/')
			plen--;
		s->base_url = xasprintf("%.*s://%.*s%.*s", (int)slen, url, (int)(auth_end - host),
		                        host, (int)plen, path);
		return 0;
	}
	const char *h = host, *he = host_end;
	if (*h == '[') {
		h++;
		he--;
	}
	s->host = xstrndup(h, (size_t)(he - h));
	s->port = port ? (int)port_n : 6379;
	if (*path == '/' && path[1]) {
		char *end;
		long db = strtol(path + 1, &end, 10);
		if (end == path + 1 || *end || db < 0 || db > 100000)
			return error_set(e, "bad Redis database number '%s'", path + 1);
		s->db = (int)db;
	} else if (*path && strcmp(path, "/") != 0) {
		return error_set(e, "bad Redis URL path");
	}
	s->base_url = xasprintf("redis://%s:%d/%d", s->host, s->port, s->db);
	return 0;
}

/* read_files 0: the files named by attributes are not read (validating
 * the setting when it is written, maybe on a machine where they are not). */
static int parse_attribute(struct remote_spec *s, const char *a, int read_files, struct error *e)
{
	const char *eq = strchr(a, '=');
	size_t n = eq ? (size_t)(eq - a) : strlen(a);
	const char *v = eq ? eq + 1 : NULL;
#define IS(name) (n == strlen(name) && !strncmp(a, name, n))
	if (IS("read-only") && !v) {
		s->read_only = 1;
		return 0;
	}
	if (!v || !*v)
		return error_set(e, "unknown attribute '%.*s'", (int)n, a);
	if (IS("timeout"))
		return parse_ms(v, &s->connect_timeout_ms) < 0
		           ? error_set(e, "bad timeout= '%s'", v)
		           : 0;
	if (IS("op-timeout"))
		return parse_ms(v, &s->op_timeout_ms) < 0 ? error_set(e, "bad op-timeout= '%s'", v)
		                                          : 0;
	if (IS("retry-after"))
		return parse_ms(v, &s->retry_after_ms) < 0
		           ? error_set(e, "bad retry-after= '%s'", v)
		           : 0;
	if (IS("max-size"))
		return parse_bytes(v, &s->max_blob) < 0 ? error_set(e, "bad max-size= '%s'", v) : 0;
	if (IS("prefix")) {
		free(s->prefix);
		s->prefix = xstrdup(v);
		return 0;
	}
	if (IS("bearer-token")) {
		free(s->bearer);
		s->bearer = xstrdup(v);
		return 0;
	}
	if ((IS("bearer-token-file") || IS("auth-file")) && !read_files)
		return 0;
	if (IS("bearer-token-file")) {
		char *t = read_secret_file(v, e);
		if (!t)
			return -1;
		free(s->bearer);
		s->bearer = t;
		return 0;
	}
	if (IS("auth-file")) {
		char *t = read_secret_file(v, e);
		if (!t)
			return -1;
		set_userinfo(s, t, strlen(t));
		memset(t, 0, strlen(t));
		free(t);
		return 0;
	}
#undef IS
	return error_set(e, "unknown attribute '%.*s'", (int)n, a);
}

static void make_id(struct remote_spec *s)
{
	struct digest d;
	char *what = xasprintf("%d %s %s", (int)s->kind, s->base_url, s->prefix ? s->prefix : "");
	digest_bytes(what, strlen(what), &d);
	free(what);
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(&d, hex);
	s->id = xstrndup(hex, 16);
}

static int parse_item(struct remote_spec *s, const char *item, int read_files, struct error *e)
{
	memset(s, 0, sizeof *s);
	s->connect_timeout_ms = DEFAULT_CONNECT_MS;
	s->op_timeout_ms = DEFAULT_OP_MS;
	s->retry_after_ms = DEFAULT_RETRY_MS;
	char *copy = xstrdup(item);
	char *save = NULL;
	char *url = strtok_r(copy, " \t", &save);
	int rc = url ? parse_url(s, url, e) : error_set(e, "empty item");
	if (url)
		s->shown = remote_redact_url(url);
	for (char *a = strtok_r(NULL, " \t", &save); a && rc == 0; a = strtok_r(NULL, " \t", &save))
		rc = parse_attribute(s, a, read_files, e);
	if (rc == 0 && !s->max_blob)
		s->max_blob =
		    s->kind == REMOTE_REDIS ? DEFAULT_MAX_BLOB_REDIS : DEFAULT_MAX_BLOB_HTTP;
	if (rc == 0 && !s->prefix && s->kind == REMOTE_REDIS)
		s->prefix = xstrdup("cachet");
	if (rc == 0 && s->connect_timeout_ms < 1)
		s->connect_timeout_ms = 1;
	if (rc == 0 && s->op_timeout_ms < 1)
		s->op_timeout_ms = 1;
	if (rc == 0)
		make_id(s);
	if (rc < 0) {
		char *shown = url ? remote_redact_url(url) : xstrdup("");
		error_wrap(e, "remote %s", shown);
		free(shown);
	}
	memset(copy, 0, strlen(item));
	free(copy);
	return rc;
}

static int parse_items(char *const *items, int read_files, struct remote_config *out,
                       struct error *e)
{
	memset(out, 0, sizeof *out);
	size_t n = 0;
	while (items && items[n])
		n++;
	out->specs = xcalloc(n ? n : 1, sizeof *out->specs);
	for (size_t i = 0; i < n; i++) {
		if (parse_item(&out->specs[out->n], items[i], read_files, e) < 0) {
			spec_free(&out->specs[out->n]);
			remote_config_free(out);
			return -1;
		}
		out->n++;
	}
	return 0;
}

int remote_config_parse(char *const *items, struct remote_config *out, struct error *e)
{
	return parse_items(items, 1, out, e);
}

int remote_config_check(char *const *items, struct error *e)
{
	struct remote_config c;
	int rc = parse_items(items, 0, &c, e);
	if (rc == 0)
		remote_config_free(&c);
	return rc;
}
