/*
 * The hermetic environment (hermetic_env): the process keeps only the
 * variables the user listed, so the step runs with exactly what is keyed.
 */
#ifndef CACHET_CLI_HERMETIC_ENV_H
#define CACHET_CLI_HERMETIC_ENV_H

struct settings;

/* Before the step's key is built. With hermetic_env set, the process's
 * environment becomes only the listed variables (NAME, or PREFIX* for a
 * prefix) plus CACHET_*, so the step runs with exactly what is keyed, and
 * HOME becomes a base of portable keys. Does nothing otherwise. */
void hermetic_env_prepare(const struct settings *st);

/* The canonical HOME that hermetic_env_prepare made a base in the hermetic
 * mode, or NULL. */
const char *hermetic_env_home(void);

/* The caller's whole environment as it was before hermetic_env_prepare
 * narrowed it (for the background drainer), or NULL when it was not. */
char **hermetic_env_caller(void);

#endif
