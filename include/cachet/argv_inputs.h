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

#include <stdint.h>

#include "cachet/digest.h"

struct step;
struct record;
struct digest_cache;

/* Words past this position are not considered (a link's hundredth object
 * adds little that the first sixty-three did not already tell apart). */
#define ARGV_INPUTS_MAX_WORDS 64

/* The argv words of a recorded run that are its inputs: bit i set when
 * argv[i] (i >= 1), taken relative to the step's cwd, is a file the run
 * read (an OBS_READ of that very path) and did not write. Outputs are left
 * out: `-o x.o` may name a stale file before the step runs, and keying its
 * content would lose the hit. *key gets the group's key from the contents
 * the run read; 0 (and *key untouched) when no word qualifies. The record
 * may be in stored (portable) form. */
uint64_t argv_inputs_recorded(const struct step *s, const struct record *rec, struct digest *key);

/* The key of group `words` (non-zero) for the files as they are now: -1
 * when a word no longer names a regular file (no path set of that group can
 * hold). Costs a stat per word; the content digest comes from dc. */
int argv_inputs_key(const struct step *s, uint64_t words, struct digest_cache *dc,
                    struct digest *key);

#endif
