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

/* Writes a recorded stderr of the step to cachet's stderr, as the compiler
 * would print it there. */
void step_colour_write_stderr(const struct step *step, const void *data, size_t len);

#endif
