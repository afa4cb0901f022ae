/*
 * A path set: the observations of one recorded run, without their values,
 * in a canonical order (sorted by path, kind, flags; no duplicates), so two
 * runs that looked up the same things in another order share one path set.
 * Encoded as one compact blob with interned paths.
 *
 * The strong key is SHA-256 over the weak key, the path set's digest and the
 * current value of each observation, in order (never the values alone: two
 * path sets whose values happen to agree must not share a result).
 */
#ifndef CACHET_PATHSET_H
#define CACHET_PATHSET_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/buf.h"
#include "cachet/digest.h"
#include "cachet/error.h"
#include "cachet/observe.h"

struct step_bases;

struct observation {
	uint8_t kind;       /* enum obs_kind */
	uint8_t flags;      /* OBS_F_* */
	uint32_t path;      /* index into pathset.paths */
	uint32_t nexcluded; /* OBS_LIST: names left out of the listing */
	uint32_t *excluded; /* indexes into pathset.paths, sorted by name */
};

struct pathset {
	char **paths; /* interned strings (paths and excluded names) */
	size_t npaths;
	struct observation *obs;
	size_t nobs;
	size_t alloc_paths, alloc_obs;
	void *intern; /* private lookup table while building */
	/* A decoded path set's strings, all in this one block (a compile's
	 * 450 paths were as many allocations on every hit); NULL when each
	 * is its own allocation. Whatever replaces or adds a string calls
	 * pathset_own_paths first. */
	char *arena;
};

void pathset_init(struct pathset *ps);
void pathset_free(struct pathset *ps);
/* Gives each of ps's strings its own allocation (from the arena, if any),
 * so that one may be freed or replaced. */
void pathset_own_paths(struct pathset *ps);

/* Adds one observation; excluded (OBS_LIST only) is a NULL-terminated list
 * of names, copied. Returns the observation's index (before canonicalising). */
size_t pathset_add(struct pathset *ps, enum obs_kind kind, unsigned flags, const char *path,
                   const char *const *excluded);

/* Sorts, removes duplicates and renumbers the interned strings so that the
 * encoding is canonical. perm_out, if not NULL, receives a malloc'd array
 * mapping each old observation index to its new one (duplicates map to the
 * survivor). */
void pathset_canonicalise(struct pathset *ps, size_t **perm_out);

/* pathset_canonicalise for a path set whose observation i (before) had the
 * value v[i] of vlen[i] bytes: the values, in the new order, are appended
 * to out (buf_put_bytes each). Observations that became one must have held
 * one value, or a file changed between the looks that made them: -1 then,
 * and out holds a part. */
int pathset_canonicalise_values(struct pathset *ps, const unsigned char *const *v,
                                const size_t *vlen, struct buf *out);

void pathset_encode(const struct pathset *ps, struct buf *out);
/* Decodes untrusted bytes: every index and length is checked. */
int pathset_decode(const void *data, size_t len, struct pathset *ps, struct error *e);

/* The excluded names of observation i as a NULL-terminated array of
 * pointers into ps (malloc'd array; free() it), or NULL when none. */
const char **pathset_excluded(const struct pathset *ps, size_t i);

/* Evaluates every observation against the file system now and returns the
 * strong key. ps holds this checkout's paths (portable_localise_pathset);
 * values are keyed in portable form under the bases b (portable_value; NULL
 * or none: as found). values_out, if not NULL, receives the concatenated
 * length-prefixed values as keyed (for explain). */
void pathset_strong_key(const struct pathset *ps, const struct step_bases *b,
                        const struct digest *weak, const struct digest *ps_digest,
                        struct digest_cache *dc, struct buf *values_out, struct digest *strong);

/* What pathset_strong_key_known is told, and tells, besides the values. */
typedef int (*pathset_known_fn)(void *ctx, size_t i, const void **value, size_t *len);
struct pathset_lookups {
	/* known(known_ctx, i, &v, &len) may supply the value of observation
	 * i without a lookup (1; the caller vouches that it holds). A supplied
	 * value is a recorded one, already in keyed (portable) form. NULL:
	 * every value is looked up. */
	pathset_known_fn known;
	void *known_ctx;
	/* Told of each lstat the evaluation takes (observe_memo), or NULL. */
	observe_looked_fn looked;
	void *looked_ctx;
};

/* pathset_strong_key through lk (NULL: as pathset_strong_key). */
void pathset_strong_key_known(const struct pathset *ps, const struct step_bases *b,
                              const struct digest *weak, const struct digest *ps_digest,
                              struct digest_cache *dc, const struct pathset_lookups *lk,
                              struct buf *values_out, struct digest *strong);

/* Same as pathset_strong_key, but with the values already known (recorded
 * at the end of a run): values is the concatenation of buf_put_bytes(value)
 * for each observation in canonical order. */
void pathset_strong_key_from_values(const struct digest *weak, const struct digest *ps_digest,
                                    const void *values, size_t len, struct digest *strong);

#endif
