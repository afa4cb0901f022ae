/*
 * A compiler step whose diagnostics cachet colours itself (diag_colour.h):
 * the command it really runs, and its stderr fitted to where cachet's own
 * stderr goes now, for a run and for every replay alike.
 */
#ifndef CACHET_CLI_STEP_COLOUR_H
#define CACHET_CLI_STEP_COLOUR_H

#include <stddef.h>

#include "cachet/step.h"

/* The argv to execute: argv itself for a step without step->colour, else
 * a new array (free it, not its strings, with step_colour_argv_free) with
 * the options that force the colours on. */
char **step_colour_argv(const struct step *step, char **argv);
void step_colour_argv_free(char **exec_argv, char **argv);

/* DIAG_SHOW_* bits of what the compiler would print on cachet's stderr as
 * it is now (0 in a pipe, with color=never or TERM=dumb). */
unsigned step_colour_keep(const struct step *step);

/* Replays a recorded stdout and stderr of the step (replay_streams, in
 * their order where they are one file), stderr as the compiler would print
 * it on cachet's stderr now. */
struct result;
void step_colour_replay(const struct step *step, const struct result *res, const void *out,
                        size_t out_len, const void *err, size_t err_len);

#endif
