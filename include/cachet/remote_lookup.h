/*
 * The remote tier of a lookup (src/engine/remote_lookup.c): after a local
 * miss, the remotes are asked in turn; a hit is restored beneath the step's
 * roots only and stored locally. Never prints: what is worth saying goes to
 * note.
 */
#ifndef CACHET_REMOTE_LOOKUP_H
#define CACHET_REMOTE_LOOKUP_H

#include "cachet/digest.h"
#include "cachet/error.h"
#include "cachet/remote.h"

struct digest_cache;
struct pathset;
struct result;
struct step;
struct store;

struct remote_lookup {
	struct store *store;          /* the local store: counters, blobs, the hit */
	struct remote_client *client; /* the configured remotes */
	char *const *trusted_keys;    /* the trusted_keys setting (NULL-terminated) */
	/* Told what happened: always (trust that cannot be checked) or only
	 * for those who asked (a failed fetch, a refused path set...). */
	void (*note)(void *ctx, int always, const char *what, const struct error *e);
	void *note_ctx;
	/* Private: trusted_keys, loaded on first use. */
	int trusted_loaded; /* 0 not yet, 1 loaded (or none configured), -1 failed */
	int trust_required; /* trusted_keys is set */
	struct trusted_keys trusted;
};

/* Asks the remotes for the step. 1 on a hit: its outputs are restored
 * (only inside the output roots: the cwd subtree and base_dir), the entry
 * stored locally, and *hit (initialised by the caller) holds the result
 * (localised) whose stdout, stderr and exit code the caller replays. 0
 * otherwise. */
int remote_lookup_step(struct remote_lookup *rl, const struct step *step, struct digest_cache *dc,
                       struct result *hit);
void remote_lookup_free(struct remote_lookup *rl);

/* What the remotes say about a step, for `cachet explain`: read-only (no
 * counter, no fault reported, nothing stored or restored), with the same
 * deadlines, breakers and trust checks as a lookup. */
enum remote_verdict {
	REMOTE_VERDICT_NONE = 0,     /* no remote configured (or readable) */
	REMOTE_VERDICT_UNREACHABLE,  /* no server answered */
	REMOTE_VERDICT_UNKNOWN_STEP, /* no path set under the weak key */
	REMOTE_VERDICT_HIT,          /* a trusted entry holds here */
	REMOTE_VERDICT_INPUTS,       /* path sets, none of which holds here */
};

struct remote_explanation {
	enum remote_verdict verdict;
	size_t pathsets;  /* path sets found under the weak key */
	size_t untrusted; /* of them, not signed by a trusted key: not evaluated */
	size_t refused;   /* corrupt, empty, under a base unset here, outside the roots */
	char *error;      /* why no server answered (malloc'd), or NULL */
};

void remote_lookup_explain(struct remote_lookup *rl, const struct step *step,
                           struct digest_cache *dc, struct remote_explanation *out);
void remote_explanation_free(struct remote_explanation *x);

/* The first path of an untrusted remote path set (localised) that lies
 * outside the step's roots and toolchain (remote_roots.c), or NULL when
 * every one is inside. */
const char *remote_pathset_outside(const struct pathset *ps, const struct step *step);

#endif
