/*
 * The interface between cachet and its transport plugins,
 * libcachet-remote-http.so (http.c over libcurl) and
 * libcachet-remote-redis.so (redis.c over hiredis). Plain C
 * types only: the plugin links nothing of cachet, so that the two can never
 * disagree about a struct layout; REMOTE_PLUGIN_ABI changes whenever this
 * file does.
 *
 * Conventions of every operation: err (errlen bytes) receives a one-line
 * message on failure, never holding a credential; a key is addressed by a
 * namespace ("ac" or "cas") and 64 hex digits.
 */
#ifndef CACHET_REMOTE_BACKEND_H
#define CACHET_REMOTE_BACKEND_H

#include <stddef.h>

#define REMOTE_PLUGIN_ABI    2
#define REMOTE_PLUGIN_SYMBOL "cachet_remote_plugin_v1"

struct remote_backend_spec {
	const char *base_url; /* HTTP: no credentials, no trailing '/' */
	const char *host;     /* Redis over TCP */
	int port;
	const char *socket_path; /* Redis over a Unix socket */
	int db;
	const char *user, *password, *bearer; /* NULL when unset */
	const char *prefix;                   /* Redis key prefix */
	long connect_timeout_ms, op_timeout_ms;
};

struct remote_backend {
	int abi;
	/* A connection (opened lazily by the backend or now), or NULL. */
	void *(*open)(const struct remote_backend_spec *spec, char *err, size_t errlen);
	/* 1 found (*data malloc'd, *len), 0 absent, -1 failure, -3 the value
	 * is larger than max. */
	int (*get)(void *conn, const char *ns, const char *hex, size_t max, void **data,
	           size_t *len, char *err, size_t errlen);
	/* 1 present, 0 absent, -1 failure. */
	int (*exists)(void *conn, const char *ns, const char *hex, char *err, size_t errlen);
	/* 0 stored, -1 failure. */
	int (*put)(void *conn, const char *ns, const char *hex, const void *data, size_t len,
	           char *err, size_t errlen);
	void (*close)(void *conn);
	/* The time the next request may take in all (connection, sending,
	 * waiting, receiving), in ms: what is left of a lookup's budget. */
	void (*set_timeout)(void *conn, long ms);
};

/* A plugin's one exported function, REMOTE_PLUGIN_SYMBOL: its backend when
 * kind (REMOTE_HTTP or REMOTE_REDIS of cachet/remote.h) is the one it
 * speaks and abi matches, else NULL. */
typedef const struct remote_backend *(*remote_plugin_fn)(int kind, int abi);

#endif
