/*
 * NULL-terminated vectors of strings (argv, envp): the one copy of counting,
 * appending to and freeing them, which had been written out in every layer
 * that builds or compares a command line.
 */
#ifndef CACHET_STRV_H
#define CACHET_STRV_H

#include <stddef.h>

/* The number of strings before the terminating NULL; 0 for a NULL vector
 * (an empty environment is often passed as NULL). */
size_t strv_len(char *const *v);

/* Appends s (owned by the vector from now on) to *v, which holds *n strings
 * and stays NULL-terminated; *v may start NULL with *n 0. */
void strv_push(char ***v, size_t *n, char *s);

/* Frees each string and the vector; NULL is allowed. */
void strv_free(char **v);

#endif
