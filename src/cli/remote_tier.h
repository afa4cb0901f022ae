/*
 * The remote tier of `cachet run`: the glue between the local store, the
 * key layer and the remote layer (cachet/remote.h). run.c calls three
 * hooks; `cachet remote` drains the upload spool.
 *
 * Nothing here ever fails a step: a remote that is down, slow, answers
 * garbage or hostile entries costs a miss and a counter (remote_* in
 * `cachet remote status`).
 */
#ifndef CACHET_CLI_REMOTE_TIER_H
#define CACHET_CLI_REMOTE_TIER_H

#include <stddef.h>
#include "cachet/error.h"

struct settings;
struct step;
struct record;
struct store;
struct digest_cache;
struct progress;

/* Before the step's key is built. With hermetic_env set, the process's
 * environment becomes only the listed variables (NAME, or PREFIX* for a
 * prefix) plus CACHET_*, so the step runs with exactly what is keyed, and
 * HOME becomes a base of portable keys. Does nothing otherwise. */
void remote_tier_prepare(const struct settings *st);

/* The canonical HOME that remote_tier_prepare made a base in the hermetic
 * mode, or NULL. */
const char *remote_tier_home(void);

/* After a local miss: asks the remotes. Returns 1 on a hit: the outputs are
 * restored (only inside the output roots: the cwd subtree and base_dir),
 * stdout and stderr replayed, the entry stored locally, *exit_code set.
 * Returns 0 otherwise. Loads the transport plugin only when a remote is
 * configured and not resting after a failure. */
int remote_tier_lookup(struct store *s, const struct step *step, struct digest_cache *dc,
		       int *exit_code);

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

int remote_tier_explain(struct store *s, const struct step *step, struct digest_cache *dc,
			struct remote_explanation *out);
void remote_explanation_free(struct remote_explanation *x);

/* The first path of an untrusted remote path set (localised) that lies
 * outside the step's roots and toolchain (remote_roots.c), or NULL when
 * every one is inside. */
struct pathset;
const char *remote_pathset_outside(const struct pathset *ps, const struct step *step);

/* After a miss stored its entry: writes an upload job to the spool and
 * starts a background drainer if none runs. Never waits for the network.
 * rec is in the stored, portable form (portable_record). */
void remote_tier_upload(struct store *s, const struct step *step, const struct record *rec);

struct drain_report {
	size_t uploaded; /* jobs every writable remote now has */
	size_t dropped;  /* jobs whose blobs left the local store, or corrupt */
	size_t left;     /* jobs still waiting */
};

/* Uploads spooled jobs. wait: wait for a running drainer instead of
 * leaving the work to it. force: try servers whose breaker is open.
 * shown: where the count goes as jobs are uploaded, or NULL. */
int remote_tier_drain(struct store *s, int wait, int force, struct progress *shown,
		      struct drain_report *out, struct error *e);

#endif
