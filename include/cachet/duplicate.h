/*
 * Duplicate steps: CMake compiles a source for a static and a shared
 * library (or a library and a program) with argvs that differ only in the
 * paths of the outputs (`-o`, `-MF`, `-MT`). The second computes what the
 * first did, under other names: it is served from the first's entry, with
 * the outputs at its own paths and the names that text outputs hold (a
 * depfile's target) rewritten, as ccache leaves `-o` out of its key.
 *
 * A stored miss is noted under a duplicate key (the weak key's material
 * with its output words masked, output_words.h) when it is eligible: every
 * output it wrote is named by a masked word, every program it ran is a
 * compiler that uses the names only literally, and no output or stream
 * holds a name except text at path boundaries. A lookup that missed the
 * index tries the masks seen for its shape; an entry found there must hold
 * for this step with the paths renamed (its path set evaluated at the new
 * paths to the strong key it was stored under), and is then stored as this
 * step's own entry (lookup_store_entry), so the next run hits directly.
 */
#ifndef CACHET_DUPLICATE_H
#define CACHET_DUPLICATE_H

#include <stddef.h>

#include "cachet/digest.h"
#include "cachet/error.h"

struct lookup_tiers;
struct record;
struct step;
struct store;
struct store_duplicate;

/* Masks tried per lookup (the most recently noted for the step's shape). */
#define DUPLICATE_MAX_MASKS 4
/* Outputs and streams larger than this, in all, are not searched for
 * their names: such a step is not noted (what is not read cannot be
 * vouched for). */
#define DUPLICATE_MAX_SCAN ((size_t)8 << 20)

/* What a stored miss wrote to its stdout and stderr. */
struct duplicate_streams {
	const void *out;
	size_t out_len;
	const void *err;
	size_t err_len;
};

/* The row that notes the entry about to be stored for step (rec in its
 * stored form, strong its key) under its duplicate key, when the step is
 * eligible: stored in the entry's own transaction (lookup_entry.duplicate).
 * Returns 1 and *out (free with store_duplicate_free), or 0 when not
 * eligible (*why, when not NULL, says why: a static string). */
int duplicate_note(struct store *s, const struct step *step, const struct record *rec,
                   const struct digest *strong, const struct duplicate_streams *streams,
                   struct store_duplicate *out, const char **why);

/* The duplicate tier, after the index tier missed: an entry noted for
 * another step that differs from this one only in its output words, if it
 * holds here under this step's output names. Stored as the step's own entry
 * and handed to t->serve as LOOKUP_TIER_DUPLICATE. Returns as
 * lookup_index_tier. */
int lookup_duplicate_tier(struct lookup_tiers *t);

#endif
