/*
 * What a person calls a step, and what makes two steps "the same step" that
 * changed: with make -j8, fifteen bare "hit" lines say nothing, and "new
 * step" says nothing about why.
 */
#ifndef CACHET_STEP_NAME_H
#define CACHET_STEP_NAME_H

#include "cachet/digest.h"
#include "cachet/step.h"

/* The program's base name, the mode options -c, -S and -E, and the
 * operands (the arguments that are no options, nor the value of one of
 * the options that take the next argument: -o, -I, -D, -MF...), each
 * operand by its base name, redacted (redact.h) and cut to about 60
 * characters: "gcc -c lvm.c" for gcc -O2 -Wall -c -o lvm.o lvm.c.
 * malloc'd. */
char *step_short_name(char *const *argv);

/* The identity of a step across changes of its options, environment, cwd
 * and program: the program's base name and its operands (as above, whole).
 * A new weak key under a known identity is a changed step. */
void step_identity(const struct step *step, struct digest *out);

#endif
