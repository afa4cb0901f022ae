/*
 * Why a step would miss, in plain words: the differences between a step now
 * and a recorded one, and between a recorded run's observation values and
 * what the same lookups find now.
 */
#ifndef CACHET_EXPLAIN_H
#define CACHET_EXPLAIN_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/pathset.h"
#include "cachet/result.h"
#include "cachet/step.h"

struct explain_item {
	const char *what; /* "input changed", "path now exists", "environment changed", ... */
	char
	    *subject; /* a path (relative to the step's cwd when below it), "argv[3]", a variable */
	char *recorded; /* what was recorded, in words; may be NULL */
	char *now;      /* what holds now; may be NULL */
	char *note;     /* more detail ("added: helpers.py"); may be NULL */
	char *text;     /* the whole finding as one line (or two), without "miss: " */
};

struct explain_list {
	struct explain_item *items;
	size_t n, alloc;
};

void explain_list_free(struct explain_list *l);

/* Appends the differences between the step now and a recorded step: argv,
 * cwd, executable, environment (values of secret-looking variables hidden),
 * platform, stdin. Returns how many were found. */
size_t explain_steps(const struct step *now, const struct step *recorded, struct explain_list *out);

/* Compares a recorded run (its values and listings, in the path set's
 * order) with the values now (as pathset_strong_key wrote them) and appends
 * a finding for each observation that no longer holds, those below cwd
 * or a base (bases may be NULL) first: the first only, unless all. cwd is
 * the step's cwd (also for display). Returns the number of observations that differ, or
 * SIZE_MAX when the recorded values do not fit the path set. */
size_t explain_pathset(const struct pathset *ps, const struct result *recorded,
                       const void *now_values, size_t now_len, const char *cwd,
                       const struct step_bases *bases, int all, struct explain_list *out);

/* How far a recorded step is from the step now, for choosing the nearest:
 * the fewest argv elements added, removed or replaced, plus one for each
 * environment variable, and for the cwd, program path, program content and
 * platform, that differ. */
size_t explain_step_distance(const struct step *now, const struct step *recorded);

/* A digest as "4b1f9a07…c1e2" (enough to tell two builds apart at a glance). */
void explain_short_digest(const unsigned char *digest, struct buf *out);

/* A path shown relative to cwd when it lies below it. malloc'd. */
char *explain_display_path(const char *path, const char *cwd);

#endif
