/*
 * The lookup engine: the decisions of the hit path and the miss path that
 * every tier and every command shares, so that each is made in one place.
 *
 * - A stored path set is evaluated for a step by one function, whether it
 *   comes from the index (run, explain, show), a memo or a remote: a body
 *   that does not match its digest is damaged and never keyed, a path set
 *   recorded under a base unset here cannot hold.
 * - An entry is stored locally by one function, for a miss just recorded
 *   and for a remote hit alike, under one bound of path sets per step.
 * - A result is served only when every blob it names is present, checked
 *   before anything is written.
 *
 * The engine never prints and never exits: what it finds travels back as
 * values and struct error, and the command-line layer says it.
 */
#ifndef CACHET_LOOKUP_H
#define CACHET_LOOKUP_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/buf.h"
#include "cachet/digest.h"
#include "cachet/error.h"
#include "cachet/fplog.h"
#include "cachet/pathset.h"

struct dirfp_notes;

struct result;
struct step;
struct step_bases;
struct store;

/* Path sets kept per weak key in the local store; beyond this the least
 * recently used go, with their results. One bound for every way in. */
#define LOOKUP_MAX_PATHSETS 16

/* What lookup_evaluate_pathset found. */
enum {
	LOOKUP_PATHSET_KEYED = 0,       /* ev->strong is the key of the values found now */
	LOOKUP_PATHSET_DAMAGED = -1,    /* the body does not match its digest or does not decode */
	LOOKUP_PATHSET_UNSET_BASE = -2, /* recorded under a base unset here: cannot hold */
	LOOKUP_PATHSET_REFUSED = -3,    /* ev->admit refused it: not evaluated */
};

/* One stored path set to evaluate, and what the evaluation gives back. */
struct pathset_evaluation {
	/* The path set as stored (portable form). */
	const struct digest *digest;
	const void *body;
	size_t len;
	/* The body was already checked against digest by a checksum of its
	 * own (a memo's, a remote list's): not hashed again. */
	int digest_checked;
	/* A memo's shortcut (dirfp.h), when memo is set: the directory
	 * fingerprints and the values its result recorded. Unusable ones fall
	 * back to a full evaluation. */
	int memo;
	const void *memo_dirs;
	size_t memo_dirs_len;
	const void *recorded_values;
	size_t recorded_values_len;
	/* Called with the decoded, localised path set before admit: may
	 * rename its paths (a duplicate's outputs, duplicate.h); -1 refuses it
	 * (LOOKUP_PATHSET_REFUSED). NULL changes nothing. */
	int (*rewrite)(void *ctx, struct pathset *ps);
	void *rewrite_ctx;
	/* Asked with the decoded, localised path set before anything it names
	 * is read: 0 refuses it (LOOKUP_PATHSET_REFUSED). NULL admits all. */
	int (*admit)(void *ctx, const struct pathset *ps);
	void *admit_ctx;
	/* Vouches for observations without a lookup (pathset.h), or NULL;
	 * not with a memo. */
	pathset_known_fn known;
	void *known_ctx;
	/* Where the evaluation's lookups are noted (dirfp_note_lookup), for
	 * the memo that a hit of it writes, or NULL; not with a memo. */
	struct dirfp_notes *notes;
	/* Receives the values as keyed (for explain and a remote hit's local
	 * copy), or NULL. */
	struct buf *values;
	/* Keep ps for the caller whenever the body decoded (every outcome but
	 * LOOKUP_PATHSET_DAMAGED; the caller frees it with pathset_free): what
	 * names a base unset here stays in its portable form. Otherwise it is
	 * freed here. */
	int keep_pathset;

	/* Out. */
	struct pathset ps;
	struct digest strong;
};

/* Evaluates a stored path set for the step whose weak key is weak, under
 * bases, against the file system now. Returns one of LOOKUP_PATHSET_*; on
 * LOOKUP_PATHSET_DAMAGED e says why. */
int lookup_evaluate_pathset(const struct step_bases *bases, const struct digest *weak,
                            struct digest_cache *dc, struct pathset_evaluation *ev,
                            struct error *e);

/* 1 when every non-empty blob res names is in the store (res localised or
 * not: only blob references are read), 0 when one is missing. A hit checks
 * this before it writes anything, so that a damaged entry costs a run,
 * never a half-restored tree. */
int lookup_blobs_present(struct store *s, const struct result *res);

/* One entry for the local store: the step, its path set as stored
 * (portable), the strong key, and the result both encoded (as stored) and
 * decoded (for its blobs and duration). */
struct lookup_entry {
	const struct step *step;
	const struct digest *pathset;
	const void *pathset_body;
	size_t pathset_len;
	const struct digest *strong;
	const void *result_body;
	size_t result_len;
	const struct result *result;
	/* The group of its path set (argv_inputs.h): argv_words 0 (argv_key
	 * unused) when the step's argv names no input, as for a remote hit. */
	uint64_t argv_words;
	const struct digest *argv_key;
	/* NULL, or the row that notes the entry under its duplicate key
	 * (duplicate_note), stored in the entry's transaction. */
	const struct store_duplicate *duplicate;
	/* NULL, or the step's identity, which names the entry's weak key from
	 * now on (store_entry.step_ident). */
	const struct digest *step_ident;
};

/* Stores the entry in the local index, under LOOKUP_MAX_PATHSETS: the one
 * way an entry goes in, for a local miss and a remote hit alike. Fails
 * (ENOENT) without storing anything when one of its blobs is missing. */
int lookup_store_entry(struct store *s, const struct lookup_entry *en, struct error *e);

struct record;

/* What only the end of a traced run knows, for lookup_finish_record. */
struct lookup_run_end {
	const void *out; /* the step's stdout and stderr, as it wrote them */
	size_t out_len;
	const void *err;
	size_t err_len;
	int exit_code;
	int64_t stdin_advance; /* how far it moved a regular file's stdin */
	int64_t duration_ms;
	/* A new step: its identity (step_name.h) names it from now on, in the
	 * entry's transaction. */
	int name_step;
};

/* Completes a recorded run (record.h, in its stored, portable form) into
 * the entry a miss stores: stdout and stderr go into the store as blobs and
 * the result takes them with the exit code, duration, host, version, and
 * the values and listings found. *strong receives its strong key and
 * result_body (initialised by the caller) the result as stored; then
 * lookup_store_entry stores it. */
int lookup_finish_record(struct store *s, const struct step *step, struct record *rec,
                         const struct lookup_run_end *end, struct digest *strong,
                         struct buf *result_body, struct error *e);

struct store_memo;

/* The tiers a lookup tries, in order: the step's memo (the hit path
 * without the index), then every path set of the index, then the remotes
 * (through the caller's hook, lookup_step). */
enum lookup_tier {
	LOOKUP_TIER_MEMO,
	LOOKUP_TIER_INDEX,
	LOOKUP_TIER_DUPLICATE, /* another step's entry under this step's outputs (duplicate.h) */
	/* another compile's entry, whose define words differ but whose
	 * preprocessed text is the same (preprocessed_duplicate.h) */
	LOOKUP_TIER_PREPROCESSED_DUPLICATE,
	LOOKUP_TIER_REMOTE,
};

/* A run of the preprocessor for a compile (preprocessed_duplicate.h), by
 * the caller's hands (it knows the step's environment and the roots it
 * ignores): under the tracer, stdin /dev/null, stdout and stderr kept. */
struct lookup_preprocessed {
	struct buf out, err; /* what it wrote (initialised by the caller of the hook) */
	/* Traced, exited 0, read no stdin, changed no path, cacheable. */
	int ok;
	/* When asked for and ok: what it looked at (path set and values, in
	 * their stored form), malloc'd; freed with record_free and free. */
	struct record *rec;
};

/* An entry that holds for the step: its path set keyed to a stored result,
 * localised, every blob present. The caller's serve decides the rest. */
struct lookup_candidate {
	enum lookup_tier tier;
	const struct digest *pathset;
	const void *pathset_body;
	size_t pathset_len;
	struct digest strong;
	const void *result_body; /* as stored (portable) */
	size_t result_len;
	struct result *result; /* decoded, localised */
};

/* What serve did with a candidate. */
enum {
	LOOKUP_SERVED = 1,     /* a hit: nothing more is looked up */
	LOOKUP_NOT_SERVED = 0, /* could not be served (said by serve): the
	                        * next entries are tried, not this one again */
	LOOKUP_STOP = -1,      /* stop looking; serve keeps the result */
	LOOKUP_PASS = -2,      /* let a later tier serve this same entry */
};

/* A local lookup for one step: the store, the step (initialised) and the
 * caller's hands. The engine decides which entry, if any, holds; serve
 * restores and replays it, count and fault say what went wrong. */
struct lookup_tiers {
	struct store *store;
	const struct step *step;
	struct digest_cache *dc;
	int (*serve)(void *ctx, struct lookup_candidate *c);
	void (*count)(void *ctx, const char *name, int64_t delta);
	void (*fault)(void *ctx, const char *what, const struct error *e);
	/* Runs argv (the step's program) as a preprocessor run, with out's
	 * record when want_record: 0, or -1 when it could not run at all.
	 * NULL: no preprocessed duplicates. */
	int (*preprocess)(void *ctx, char *const *argv, int want_record,
	                  struct lookup_preprocessed *out);
	void *ctx;

	/* Out of the memo tier, for the index tier: the memo's entry could
	 * not be served under this strong key, and is not tried again (its
	 * damaged blobs are counted once). */
	int memo_failed;
	struct digest memo_strong;
	/* Out of the memo tier too: the strong key its path set has now
	 * (memo_keyed), which the index tier takes for the same path set
	 * instead of repeating its lookups. */
	int memo_keyed;
	struct digest memo_pathset;
	struct digest memo_keyed_strong;
	/* Out of the index tier: the weak key had path sets (a miss is then
	 * "inputs changed", else "new step"). */
	int had_pathsets;
	/* For the index tier: where its evaluations note their lookups
	 * (pathset_evaluation.notes), or NULL. */
	struct dirfp_notes *notes;
};

/* The memo tier: the memo m read for the step, if it still holds (its weak
 * key, its path set keyed through its directory fingerprints to its strong
 * key). Returns the last LOOKUP_SERVED, LOOKUP_STOP, or 0 when the index
 * is to be asked. */
int lookup_memo_tier(struct lookup_tiers *t, const struct store_memo *m);

/* Hands a keyed candidate to t->serve once it can be served whole:
 * localised into this checkout and every blob present (else counted and
 * LOOKUP_NOT_SERVED). For the tiers. */
int lookup_offer(struct lookup_tiers *t, struct lookup_candidate *c);

/* The index tier: every path set of the step's weak key (those its argv
 * groups rule out skipped), keyed against the file system now, until one
 * names a result that serve serves. Returns as lookup_memo_tier. */
int lookup_index_tier(struct lookup_tiers *t);

/* What lookup_step found. */
enum lookup_step_outcome {
	LOOKUP_STEP_HIT,      /* served by sl->tier: the caller exits as serve (or the
	                       * remote hook) said */
	LOOKUP_STEP_MISS,     /* run the step and store it: sl->miss_reason */
	LOOKUP_STEP_RERUN,    /* a hit serve chose to re-run and compare (it returned
	                       * LOOKUP_STOP and keeps the result): run the step */
	LOOKUP_STEP_NO_INDEX, /* the index cannot be opened (e says why): run directly */
	LOOKUP_STEP_NO_KEY,   /* the step cannot be keyed (e says why): run directly */
};

/* One lookup of a step through every tier, for `cachet run`: the step's
 * memo, the index (opened only when the memo cannot answer), then the
 * remotes. The engine decides the order, what holds, and which miss it is;
 * the caller's hands key the step, serve a hit and say what went wrong.
 * The caller sets the fields marked in, then calls lookup_step_init. */
struct step_lookup {
	/* In. */
	struct store *store;          /* opened with STORE_DEFER_INDEX */
	char *const *argv;            /* the command as run */
	const char *program;          /* its resolved path */
	struct step *step;            /* keyed by init_step when first needed */
	int recache;                  /* look nothing up: run and store again */
	int rerun_nondeterministic;   /* a step marked nondeterministic always runs */
	struct digest_cache index_dc; /* the index's fingerprints, asked once it is open */
	/* Keys the step (step_init with the caller's settings) through dc. */
	int (*init_step)(void *ctx, struct step *step, struct digest_cache *dc, struct error *e);
	/* Restores and replays a candidate (lookup_tiers.serve). */
	int (*serve)(void *ctx, struct lookup_candidate *c);
	void (*count)(void *ctx, const char *name, int64_t delta);
	/* A fault of the cache: counted as an error and said. */
	void (*fault)(void *ctx, const char *what, const struct error *e);
	/* Worth saying to those who asked (-v); not counted. */
	void (*note)(void *ctx, const char *what, const struct error *e);
	/* The remote tier, asked after a local miss unless the store is
	 * read-only: LOOKUP_SERVED when it restored and replayed a hit (the
	 * caller keeps its exit code), else 0. NULL: no remote tier. */
	int (*remote)(void *ctx);
	/* lookup_tiers.preprocess; NULL: none. */
	int (*preprocess)(void *ctx, char *const *argv, int want_record,
	                  struct lookup_preprocessed *out);
	void *ctx;

	/* The engine's, readable by the caller. */
	struct fplog fps;          /* the fingerprints the run used; fps.dc is
	                            * what the step is hashed through */
	struct lookup_tiers tiers; /* the local tiers (lookup_memo_tier...) */
	struct digest memo_name;   /* what names the step's memo */
	int step_ready;            /* step keyed */
	int nondeterministic;      /* the step is marked nondeterministic; set
	                            * before the index tier */
	/* Out. */
	enum lookup_tier tier;   /* that served a hit */
	const char *miss_reason; /* "new step" or "inputs changed" */
};

/* Prepares sl (its in fields set) for lookup_step. */
void lookup_step_init(struct step_lookup *sl);
void lookup_step_free(struct step_lookup *sl);

/* Looks the step up, tier by tier, until one serves it. Returns one of
 * enum lookup_step_outcome. */
enum lookup_step_outcome lookup_step(struct step_lookup *sl, struct error *e);

/* Stores a run of the step just recorded (rec in its stored, portable
 * form): completes it (lookup_finish_record), stores its entry in its argv
 * group (lookup_store_entry) and, unless the step is nondeterministic or
 * the store read-only, leaves it as the step's memo, with the fingerprints
 * this run used. */
int lookup_store_run(struct step_lookup *sl, struct record *rec, const struct lookup_run_end *end,
                     struct error *e);

#endif
