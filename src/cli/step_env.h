/*
 * What `cachet run` and `cachet repro` share to run a step traced: its
 * private TMPDIR, its environment and the roots whose accesses are neither
 * inputs nor outputs.
 */
#ifndef CACHET_CLI_STEP_ENV_H
#define CACHET_CLI_STEP_ENV_H

struct settings;

/* Creates a private directory for the step under $TMPDIR (or /tmp) and
 * returns its canonical path (malloc'd), or NULL with errno set. */
char *make_tmpdir(void);

/* The step's environment: the caller's, with TMPDIR set to tmpdir and,
 * unless the user chose one, PYTHONPYCACHEPREFIX inside it. A
 * NULL-terminated, malloc'd array of malloc'd strings (free_strv). */
char **step_environment(const char *tmpdir);

/* Roots whose accesses are neither inputs nor outputs: the step's private
 * TMPDIR, the cache itself and the user's ignore_paths (none when settings
 * is NULL). Freed with free_strv. */
char **step_ignore_roots(const struct settings *settings, const char *tmpdir,
                         const char *cache_dir);

/* Removes path and everything below it, never following symlinks; errors
 * are ignored (best effort). */
void remove_tree(const char *path);

/* Frees a NULL-terminated array of malloc'd strings and the array. */
void free_strv(char **v);

#endif
