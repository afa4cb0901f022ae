/*
 * Why a step missed as a new step, in words a user can act on: the step of
 * the same identity (step_name.h) last recorded, and how this one differs
 * from it (its argv, environment, cwd, program, terminal). Two indexed
 * reads on a new step's miss; one write after it was stored.
 */
#ifndef CACHET_CLI_STEP_REASON_H
#define CACHET_CLI_STEP_REASON_H

#include "cachet/step.h"
#include "cachet/store.h"

/* "argv differs: argv[2]: -O2 → -O3; ..." (malloc'd), or NULL when no
 * other step of this identity is known or none of its differences has a
 * name. */
char *step_reason_detail(struct store *s, const struct step *now);

#endif
