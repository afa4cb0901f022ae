/*
 * The HTTP transport (libcurl), in the plugin: GET, HEAD and PUT on
 * <base>/<ns>/<hex>, as Bazel's HTTP cache protocol, nginx with WebDAV and
 * bazel-remote speak it. One easy handle per server keeps its connection
 * alive between requests.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/array.h"
#include "cachet/remote.h"
#include "remote/backend.h"
#include "remote/plugin.h"

struct http_conn {
	CURL *h;
	char *base;
	char *user, *password, *bearer;
	long connect_ms, op_ms;
	struct curl_slist *headers;
	char errbuf[CURL_ERROR_SIZE];
	CURLcode curl_rc; /* of the last request */
};

struct sink {
	char *data;
	size_t len, alloc, max;
	int too_large;
};

struct source {
	const char *data;
	size_t len, off;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct sink *s = userdata;
	size_t n = size * nmemb;
	if (s->len + n > s->max) {
		s->too_large = 1;
		return 0; /* aborts the transfer */
	}
	char *grown = array_grow_try(s->data, &s->alloc, s->len + n + 1, 1, 65536);
	if (!grown)
		return 0;
	s->data = grown;
	memcpy(s->data + s->len, ptr, n);
	s->len += n;
	return n;
}

static size_t on_read(char *buffer, size_t size, size_t nitems, void *userdata)
{
	struct source *s = userdata;
	size_t n = size * nitems;
	if (n > s->len - s->off)
		n = s->len - s->off;
	memcpy(buffer, s->data + s->off, n);
	s->off += n;
	return n;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void http_close(void *conn)
{
	struct http_conn *c = conn;
	if (!c)
		return;
	if (c->h)
		curl_easy_cleanup(c->h);
	curl_slist_free_all(c->headers);
	free(c->base);
	free(c->user);
	if (c->password)
		memset(c->password, 0, strlen(c->password));
	free(c->password);
	if (c->bearer)
		memset(c->bearer, 0, strlen(c->bearer));
	free(c->bearer);
	free(c);
}

static void *http_open(const struct remote_backend_spec *spec, char *err, size_t errlen)
{
	static int initialised;
	if (!initialised) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			snprintf(err, errlen, "cannot initialise libcurl");
			return NULL;
		}
		initialised = 1;
	}
	struct http_conn *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->h = curl_easy_init();
	c->base = dup_or_null(spec->base_url);
	c->user = dup_or_null(spec->user);
	c->password = dup_or_null(spec->password);
	c->bearer = dup_or_null(spec->bearer);
	c->connect_ms = spec->connect_timeout_ms;
	c->op_ms = spec->op_timeout_ms;
	/* No "Expect: 100-continue" round trip before a PUT body. */
	c->headers = curl_slist_append(NULL, "Expect:");
	if (!c->h || !c->base || !c->headers) {
		snprintf(err, errlen, "cannot initialise libcurl");
		http_close(c);
		return NULL;
	}
	return c;
}

/* Options every request starts from (curl_easy_reset keeps the
 * connection cache, so connections are reused). */
static void prepare(struct http_conn *c, const char *ns, const char *hex)
{
	char url[4096];
	snprintf(url, sizeof url, "%s/%s/%s", c->base, ns, hex);
	curl_easy_reset(c->h);
	curl_easy_setopt(c->h, CURLOPT_URL, url);
	/* Timeouts by alarm() signals would disturb cachet: never. */
	curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_ms);
	curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, c->op_ms);
	curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(c->h, CURLOPT_PROTOCOLS_STR, "http,https");
	/* A redirect could carry credentials elsewhere: not followed. */
	curl_easy_setopt(c->h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
	if (c->user || c->password) {
		curl_easy_setopt(c->h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c->h, CURLOPT_USERNAME, c->user ? c->user : "");
		curl_easy_setopt(c->h, CURLOPT_PASSWORD, c->password ? c->password : "");
	} else if (c->bearer) {
		curl_easy_setopt(c->h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
		curl_easy_setopt(c->h, CURLOPT_XOAUTH2_BEARER, c->bearer);
	}
	c->errbuf[0] = '\0';
}

static int perform(struct http_conn *c, long *status, char *err, size_t errlen)
{
	CURLcode rc = curl_easy_perform(c->h);
	c->curl_rc = rc;
	if (rc != CURLE_OK) {
		snprintf(err, errlen, "%s", c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
		return -1;
	}
	curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, status);
	return 0;
}

static int http_get(void *conn, const char *ns, const char *hex, size_t max, void **data,
                    size_t *len, char *err, size_t errlen)
{
	struct http_conn *c = conn;
	struct sink s = {.max = max};
	prepare(c, ns, hex);
	/* A Content-Length over max fails before a byte of the body is read
	 * (on_body bounds a body sent without one). */
	curl_easy_setopt(c->h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max);
	curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &s);
	long status = 0;
	int rc = perform(c, &status, err, errlen);
	if (rc < 0 || status != 200) {
		free(s.data);
		if (s.too_large || c->curl_rc == CURLE_FILESIZE_EXCEEDED) {
			snprintf(err, errlen, "answer larger than %zu bytes", max);
			return -3;
		}
		if (rc < 0)
			return -1;
		if (status == 404)
			return 0;
		snprintf(err, errlen, "GET answered HTTP %ld", status);
		return -1;
	}
	if (!s.data)
		s.data = malloc(1);
	*data = s.data;
	*len = s.len;
	return 1;
}

static int http_exists(void *conn, const char *ns, const char *hex, char *err, size_t errlen)
{
	struct http_conn *c = conn;
	prepare(c, ns, hex);
	curl_easy_setopt(c->h, CURLOPT_NOBODY, 1L);
	long status = 0;
	if (perform(c, &status, err, errlen) < 0)
		return -1;
	if (status == 200)
		return 1;
	if (status == 404)
		return 0;
	snprintf(err, errlen, "HEAD answered HTTP %ld", status);
	return -1;
}

static int http_put(void *conn, const char *ns, const char *hex, const void *data, size_t len,
                    char *err, size_t errlen)
{
	struct http_conn *c = conn;
	struct source src = {data, len, 0};
	prepare(c, ns, hex);
	/* CURLOPT_UPLOAD with a known size sends Content-Length, which
	 * bazel-remote requires of every PUT. */
	curl_easy_setopt(c->h, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(c->h, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(c->h, CURLOPT_READDATA, &src);
	curl_easy_setopt(c->h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
	struct sink ignore = {.max = 1 << 20};
	curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &ignore);
	long status = 0;
	int rc = perform(c, &status, err, errlen);
	free(ignore.data);
	if (rc < 0)
		return -1;
	if (status < 200 || status >= 300) {
		snprintf(err, errlen, "PUT answered HTTP %ld", status);
		return -1;
	}
	return 0;
}

static void http_set_timeout(void *conn, long ms)
{
	((struct http_conn *)conn)->op_ms = ms > 0 ? ms : 1;
}

static const struct remote_backend http_backend = {
    .abi = REMOTE_PLUGIN_ABI,
    .open = http_open,
    .get = http_get,
    .exists = http_exists,
    .put = http_put,
    .close = http_close,
    .set_timeout = http_set_timeout,
};

/* The plugin's entry point (libcachet-remote-http.so). */
const struct remote_backend *cachet_remote_plugin_v1(int kind, int abi)
{
	return kind == REMOTE_HTTP && abi == REMOTE_PLUGIN_ABI ? &http_backend : NULL;
}
