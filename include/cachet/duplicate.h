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

#include "cachet/buf.h"
#include "cachet/digest.h"
#include "cachet/error.h"
#include "cachet/lookup.h"

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

/* argv with the words of mask replaced by their placeholders
 * (output_word_placeholder; malloc'd vector of malloc'd strings). */
char **duplicate_masked_argv(char *const *argv, uint64_t mask);

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

/* An entry noted for another step, made for this one (for the tiers that
 * serve another step's entry: this one and preprocessed_duplicate.h). */
struct duplicate_entry {
	/* This step's path set (stored form, canonical), the values found
	 * now in its order, and the keys they give. A tier may replace them
	 * (with a path set that holds a superset of the facts) before
	 * duplicate_entry_serve. */
	struct buf ps_body;
	struct digest ps_digest;
	struct buf values;
	struct digest strong;
	struct duplicate_parts *parts; /* duplicate.c's */
};

/* Makes m (freed with duplicate_entry_free whatever the outcome) from the
 * entry noted as d for t's step, whose output words are the bits of mask
 * (over the step's argv): 0 when it holds here under this step's output
 * names (its path set, renamed, evaluates to the strong key it was stored
 * under; every blob present), else -1. */
int duplicate_entry_hold(struct lookup_tiers *t, const struct store_duplicate *d, uint64_t mask,
                         struct duplicate_entry *m);
/* Stores m as the step's own entry (its outputs renamed, the names its
 * text outputs hold rewritten, the values of m) and hands it to t->serve
 * as tier. Returns as lookup_offer, or 0 when it cannot be made. */
int duplicate_entry_serve(struct lookup_tiers *t, struct duplicate_entry *m, enum lookup_tier tier);
void duplicate_entry_free(struct duplicate_entry *m);

#endif
