/*
 * Remote caches: existing HTTP caches (Bazel's /ac/ + /cas/ layout: nginx
 * with WebDAV, bazel-remote, object-store gateways) and Redis, shared by a
 * team and its CI.
 *
 * This layer holds everything but the network: configuration, the wire
 * format of remote entries, signatures, the circuit breaker and the upload
 * spool. The transports live in plugins, libcachet-remote-http.so (libcurl)
 * and libcachet-remote-redis.so (hiredis), that the client loads with dlopen
 * on the first network operation of their kind, so that a process that
 * never talks to a remote (every local hit) never loads them. The layer
 * never prints and never exits.
 *
 * What goes where (prefix = the HTTP URL's path, or the Redis key prefix):
 *   ac/<remote_key_pathsets(W)>  the path sets of portable weak key W, newest
 *                                first, bodies inline, zstd-compressed
 *   ac/<remote_key_entry(S)>     the entry of portable strong key S: W, the
 *                                path set's digest, S, the portable result
 *                                and an optional Ed25519 signature over them
 *   cas/<sha256 of content>      blobs, uncompressed
 * A hit costs two round trips (path sets, entry) plus one per output blob
 * that the local store does not already hold.
 */
#ifndef CACHET_REMOTE_H
#define CACHET_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/buf.h"
#include "cachet/digest.h"
#include "cachet/error.h"

/* ---- configuration ---- */

enum remote_kind {
	REMOTE_HTTP = 1,
	REMOTE_REDIS = 2,
};

/* One configured server: "URL [attribute...]". */
struct remote_spec {
	enum remote_kind kind;
	char *shown;    /* the URL with credentials replaced by "***": for messages */
	char *id;       /* 16 hex digits from the URL without credentials */
	char *base_url; /* HTTP: scheme://host[:port][/path], no credentials, no trailing '/' */
	char *host;     /* Redis over TCP */
	int port;
	char *socket_path; /* Redis over a Unix socket (redis+unix://) */
	int db;
	char *user, *password; /* Basic auth / Redis AUTH; NULL when none */
	char *bearer;          /* HTTP bearer token; NULL when none */
	char *prefix;          /* Redis key prefix (default "cachet") */
	int read_only;
	long connect_timeout_ms; /* timeout=, default 100 ms */
	long op_timeout_ms;      /* op-timeout=, default 2 s: one request, start to end */
	long retry_after_ms; /* retry-after=, default 30 s: how long a failed server is skipped */
	uint64_t max_blob;   /* max-size=: larger blobs are neither sent nor fetched */
};

struct remote_config {
	struct remote_spec *specs;
	size_t n;
};

/* Parses the `remote` setting, one item per server. Attributes: read-only,
 * timeout=, op-timeout=, retry-after= (a number of milliseconds, or with
 * an ms or s suffix), prefix=, max-size= (bytes, K/M/G suffix),
 * bearer-token=, bearer-token-file=, auth-file= (a file holding
 * "user:password", or a Redis password). Files are read now; credentials
 * never appear in messages. */
int remote_config_parse(char *const *items, struct remote_config *out, struct error *e);
/* The same parse without reading the files that attributes name: for
 * validating the setting when it is written. */
int remote_config_check(char *const *items, struct error *e);
void remote_config_free(struct remote_config *c);

/* url with any user:password@ and secret-looking query values replaced by
 * "***" (malloc'd). */
char *remote_redact_url(const char *url);
/* A whole `remote` setting (comma-separated URLs with attributes) as shown:
 * every URL through remote_redact_url, bearer-token= and other secret
 * attributes as "***". malloc'd. */
char *remote_redact_setting(const char *text);
/* 1 when the setting holds a credential (what remote_redact_setting hides). */
int remote_setting_has_credentials(const char *text);

/* ---- the client: tiers of servers, tried in order ---- */

/* Every HTTP server is a tier of its own; all Redis servers together form
 * one tier whose keys are spread by rendezvous hashing. */

enum {
	REMOTE_FOUND = 1,
	REMOTE_ABSENT = 0,
	REMOTE_ERROR = -1,     /* the server failed: its breaker is now open */
	REMOTE_SKIPPED = -2,   /* the server's breaker is open: not asked */
	REMOTE_TOO_LARGE = -3, /* the answer was larger than allowed: garbage */
	REMOTE_READ_ONLY = -4, /* a write to a read-only server: not sent */
};

struct remote_client;

/* A client over config (which must outlive it). state_dir holds the
 * breaker files (created if needed). plugin_dir holds the transport
 * plugins, libcachet-remote-http.so and libcachet-remote-redis.so; each is
 * loaded on the first network operation of its kind. */
struct remote_client *remote_client_new(const struct remote_config *config, const char *state_dir,
                                        const char *plugin_dir);
/* Closes connections. The plugin stays loaded. */
void remote_client_free(struct remote_client *c);

size_t remote_client_tiers(const struct remote_client *c);
/* 1 when every server of the tier is read-only. */
int remote_tier_is_read_only(const struct remote_client *c, size_t tier);
/* 1 when every server of the tier that could take a write is skipped
 * because its breaker is open (or the tier is read-only). */
int remote_tier_is_resting(const struct remote_client *c, size_t tier);
/* Ignore the breakers (cachet remote flush tries anyway). */
void remote_client_ignore_breakers(struct remote_client *c, int ignore);
/* Between these, op-timeout is the budget of all the requests to a server
 * together (one lookup), not of each. */
void remote_client_lookup_begin(struct remote_client *c);
void remote_client_lookup_end(struct remote_client *c);
/* The server that holds key answered garbage (a record that does not
 * decode, a blob that does not match its digest): it is skipped, by every
 * process on this cache, as one that is down (the circuit breaker), with
 * why as its last error. */
void remote_client_fault(struct remote_client *c, size_t tier, const struct digest *key,
                         const char *why);

/* ns is "ac" or "cas". get: REMOTE_FOUND with *data (malloc'd, at most max
 * bytes), REMOTE_ABSENT, or a failure code with e set. A failing server
 * opens its breaker (for every process on this cache) and is not asked
 * again by this client. SIGPIPE is blocked during network I/O. */
int remote_get(struct remote_client *c, size_t tier, const char *ns, const struct digest *key,
               size_t max, void **data, size_t *len, struct error *e);
int remote_exists(struct remote_client *c, size_t tier, const char *ns, const struct digest *key,
                  struct error *e);
/* REMOTE_FOUND (stored) or a failure code. */
int remote_put(struct remote_client *c, size_t tier, const char *ns, const struct digest *key,
               const void *data, size_t len, struct error *e);
/* The largest blob the tier takes (the smallest max-size of its servers). */
uint64_t remote_tier_max_blob(const struct remote_client *c, size_t tier);

/* Where the plugins are, given the running binary: beside it (the build
 * tree), or in ../lib/cachet/ (the installed layout). malloc'd; NULL when
 * neither holds one. */
char *remote_plugin_dir(const char *self_exe);

/* ---- the circuit breaker: one small file per server in state_dir ---- */

/* 1 while the server named id is to be skipped. */
int breaker_is_open(const char *state_dir, const char *id);
/* Skips the server for retry_ms from now, for every process, and keeps
 * reason (the failure, made one line) with the time it happened. */
void breaker_trip(const char *state_dir, const char *id, long retry_ms, const char *reason);
/* Milliseconds (unix time) until which the server is skipped; 0 when not. */
int64_t breaker_until(const char *state_dir, const char *id);
/* The server's last failure: 1 with *when_ms (unix time) and reason set,
 * 0 when none is known. */
#define BREAKER_REASON_MAX 512
int breaker_last_error(const char *state_dir, const char *id, int64_t *when_ms, char *reason,
                       size_t len);

/* ---- the wire format ---- */

/* Remote names of the path-set list of portable weak key w and of the
 * entry of portable strong key s. */
void remote_key_pathsets(const struct digest *w, struct digest *out);
void remote_key_entry(const struct digest *s, struct digest *out);

#define REMOTE_MAX_PATHSETS       16 /* kept per weak key, newest first */
#define REMOTE_MAX_PATHSETS_BYTES (8u << 20)
/* Largest path set a reader decodes (some 170,000 observations): a hostile
 * record of millions of observations costs every step seconds of CPU. A
 * real build step's is tens of kilobytes. */
#define REMOTE_MAX_PATHSET_BYTES (1u << 20)
#define REMOTE_MAX_RECORD        (64u << 20) /* largest path-set list or entry accepted */

#define REMOTE_PUBKEY_LEN 32
#define REMOTE_SIG_LEN    64

struct remote_pathset {
	struct digest digest; /* SHA-256 of body */
	void *body;           /* a portable path set; owned */
	size_t len;
	/* Path sets are signed too: evaluating one reads the files it names,
	 * and the key looked up next tells the server what they hold, so a
	 * reader that trusts keys evaluates only path sets a trusted key
	 * signed. */
	int is_signed;
	unsigned char pubkey[REMOTE_PUBKEY_LEN];
	unsigned char sig[REMOTE_SIG_LEN];
};

struct remote_pathsets {
	struct remote_pathset *sets;
	size_t n;
};

void remote_pathsets_encode(const struct remote_pathsets *p, struct buf *out);
/* Untrusted bytes: checks lengths, decompressed size and every digest. */
int remote_pathsets_decode(const void *data, size_t len, struct remote_pathsets *out,
                           struct error *e);
/* Puts a copy of set first, unless that path set is already there with a
 * signature or set has none (returns 0: no write needed). Keeps at most
 * REMOTE_MAX_PATHSETS and REMOTE_MAX_PATHSETS_BYTES, dropping the oldest.
 * Returns 1 when changed. */
int remote_pathsets_add(struct remote_pathsets *p, const struct remote_pathset *set);
/* What a path set's signature signs: the weak key and the path set's
 * digest. */
void remote_pathset_message(const struct digest *weak, const struct remote_pathset *set,
                            struct digest *out);
void remote_pathsets_free(struct remote_pathsets *p);

struct remote_entry {
	struct digest weak, pathset, strong; /* portable keys */
	void *result;                        /* a portable result body; owned */
	size_t result_len;
	int is_signed;
	unsigned char pubkey[REMOTE_PUBKEY_LEN];
	unsigned char sig[REMOTE_SIG_LEN];
};

/* What a signature signs: SHA-256 over a domain string, the weak key, the
 * path set's digest, the strong key and the result's digest. It binds the
 * result to the keys it was stored under, so it cannot be replayed under
 * another. */
void remote_entry_message(const struct remote_entry *en, struct digest *out);
void remote_entry_encode(const struct remote_entry *en, struct buf *out);
int remote_entry_decode(const void *data, size_t len, struct remote_entry *out, struct error *e);
void remote_entry_free(struct remote_entry *en);

/* ---- signatures (Ed25519, OpenSSL) ---- */

struct remote_signer;

/* Where the signature plugin (libcachet-ed25519.so, loaded on first use)
 * is; by default where remote_plugin_dir finds the transports beside the
 * running program. */
void sign_set_plugin_dir(const char *dir);

/* Writes a new key pair: the private key to path (PEM, mode 0600, never
 * overwriting) and the public key to path.pub (PEM). hex_out (65 bytes)
 * gets the public key in the inline form trusted_keys accepts. */
int sign_keygen(const char *path, char *hex_out, struct error *e);
/* Loads a private key (PEM). */
struct remote_signer *sign_load(const char *path, struct error *e);
void sign_free(struct remote_signer *s);
/* Signs en (fills pubkey, sig, is_signed). */
int sign_entry(struct remote_signer *s, struct remote_entry *en, struct error *e);
/* Signs a path set of weak key weak. */
int sign_pathset(struct remote_signer *s, const struct digest *weak, struct remote_pathset *set,
                 struct error *e);

struct trusted_keys {
	unsigned char (*keys)[REMOTE_PUBKEY_LEN];
	size_t n;
};

/* Each item is a public key file (PEM) or 64 hex digits. */
int trusted_keys_load(char *const *items, struct trusted_keys *out, struct error *e);
void trusted_keys_free(struct trusted_keys *t);
/* 1 when en carries a valid signature by one of the trusted keys. */
int trusted_keys_verify(const struct trusted_keys *t, const struct remote_entry *en);
int trusted_keys_verify_pathset(const struct trusted_keys *t, const struct digest *weak,
                                const struct remote_pathset *set);

/* ---- the upload spool: <state_dir>/spool/ ----
 *
 * A miss that stored an entry writes one job file (temporary + rename), and
 * a background drainer uploads it; jobs stay until every writable tier has
 * them, so nothing is lost while a server is down. */

struct blob_ref;

struct spool_job {
	struct digest weak, pathset, strong; /* portable keys */
	struct buf pathset_body;             /* portable path set */
	struct buf result_body;              /* portable result */
	struct digest *blobs;                /* non-empty blobs of the result */
	uint64_t *sizes;
	size_t nblobs;
};

void spool_job_init(struct spool_job *j);
void spool_job_free(struct spool_job *j);
int spool_write(const char *state_dir, const struct spool_job *j, struct error *e);
/* The pending job files, oldest first (malloc'd paths; free with
 * spool_list_free). */
int spool_list(const char *state_dir, char ***paths, size_t *n, struct error *e);
void spool_list_free(char **paths, size_t n);
int spool_read(const char *path, struct spool_job *j, struct error *e);
/* The lock that one drainer at a time holds: an open descriptor, or -1
 * when another process holds it (nonblocking) or on error. */
int spool_lock(const char *state_dir, int wait);
void spool_unlock(int fd);

#endif
