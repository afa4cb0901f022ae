/*
 * The files a step's argv names and reads: `gcc -c conftest.c`,
 * `python gen.py in.yaml`. Hundreds of runs of one command line (configure
 * compiles a different conftest.c for every check) share a weak key; the
 * content of those files tells them apart, as ccache's manifest does with
 * the source file's hash. The index groups a weak key's path sets by it
 * (store_get_pathsets_argv), so that a lookup evaluates only the path sets
 * recorded for these contents and the bound on path sets applies per group:
 * one configure no longer pushes out what the previous one recorded.
 *
 * Only a prefilter: every path set still checks all its observations, these
 * files included, so a group that is wrong costs a miss, never a wrong hit.
 * The key holds argv positions and content digests, never paths, so it is
 * the same in every checkout and on every machine.
 */
#ifndef CACHET_ARGV_INPUTS_H
#define CACHET_ARGV_INPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "cachet/digest.h"

struct step;
struct digest_cache;

/* Words past this position are not considered (a link's hundredth object
 * adds little that the first sixty-three did not already tell apart). */
#define ARGV_INPUTS_MAX_WORDS 64

/* The words considered of the step's argv (at most ARGV_INPUTS_MAX_WORDS). */
size_t argv_inputs_words(const struct step *s);
/* A group's key: begun, then for each word of the group in order its
 * position and the digest of its content. */
void argv_inputs_key_begin(struct hasher *h);
void argv_inputs_key_add(struct hasher *h, size_t word, const struct digest *content);

/* The key of group `words` (non-zero) for the files as they are now: -1
 * when a word no longer names a regular file (no path set of that group can
 * hold). Costs a stat per word; the content digest comes from dc. */
int argv_inputs_key(const struct step *s, uint64_t words, struct digest_cache *dc,
                    struct digest *key);

#endif
