/*
 * Preprocessed duplicates: CMake compiles a source for a static and a
 * shared library with argvs that differ in their output words and in the
 * shared library's `-D<target>_EXPORTS`, which most sources never test. A
 * macro reaches the compiler only through the text the preprocessor makes
 * of the source (define_words.h lists the options that write macros or the
 * command line out, which make a compile ineligible), so the second
 * compile computes what the first did when both preprocess to the same
 * text, as ccache's preprocessor mode keys it.
 *
 * A stored miss that may serve duplicates (duplicate.h) is noted also
 * under the key of its argv with its define words removed and its output
 * words masked. A compile that missed the index and the duplicate tier
 * looks for an entry noted so; when that entry holds here under this
 * step's output names (as a duplicate's must), both commands are run with
 * -E under the tracer, and the entry is served only when their texts (less
 * what the command line defines), their stderr and their exit status 0 are
 * the same. It is then stored as this step's own entry, keyed by the facts
 * of the sibling's path set and of this step's preprocessor run.
 */
#ifndef CACHET_PREPROCESSED_DUPLICATE_H
#define CACHET_PREPROCESSED_DUPLICATE_H

#include <stdint.h>

#include "cachet/buf.h"

struct lookup_tiers;
struct record;
struct step;
struct store_duplicate;

/* Sibling entries tried per lookup: each one that fails costs a run of
 * the preprocessor (and the first one this step's own as well). */
#define PREPROCESSED_DUPLICATE_MAX_TRIES 2

/* Fills the preprocessed-duplicate fields of d (has_pp, pkey, pshape,
 * pmask, and defines, whose bytes go into defines) for the step just
 * stored (rec in its stored form), whose output words are the bits of
 * mask, when it is eligible; else leaves has_pp 0. */
void preprocessed_duplicate_keys(const struct step *step, const struct record *rec, uint64_t mask,
                                 struct store_duplicate *d, struct buf *defines);

/* The tier after the duplicate tier: an entry noted for a compile that
 * differs from this one in its output and define words, served when it
 * holds here and the two preprocess to the same text. Stored as the step's
 * own entry and handed to t->serve as LOOKUP_TIER_PREPROCESSED_DUPLICATE.
 * Returns as lookup_index_tier. */
int lookup_preprocessed_duplicate_tier(struct lookup_tiers *t);

#endif
