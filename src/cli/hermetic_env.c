/*
 * The hermetic environment: with hermetic_env set, the process's
 * environment becomes only the listed variables, so that the step runs
 * with exactly what is keyed and HOME becomes a base of portable keys.
 */
#include "cli/hermetic_env.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/strv.h"
#include "cli/settings.h"

extern char **environ;

/* What hermetic_env_prepare learned before the environment was narrowed. */
static struct {
	int hermetic;
	char *home;        /* canonical HOME of the caller, in the hermetic mode */
	char **caller_env; /* the caller's environment, for the drainer */
} prepared;

static int listed(const char *entry, char *const *names)
{
	const char *eq = strchr(entry, '=');
	size_t n = eq ? (size_t)(eq - entry) : strlen(entry);
	if (n >= 7 && !strncmp(entry, "CACHET_", 7))
		return 1; /* cachet's own settings: neutral, and the drainer needs them */
	for (char *const *p = names; *p; p++) {
		size_t pl = strlen(*p);
		if (pl && (*p)[pl - 1] == '*' ? n >= pl - 1 && !strncmp(entry, *p, pl - 1)
		                              : pl == n && !strncmp(entry, *p, n))
			return 1;
	}
	return 0;
}

void hermetic_env_prepare(const struct settings *st)
{
	if (!st || prepared.hermetic)
		return; /* once: a second call would see the narrowed environment */
	char **names = settings_list(st, "hermetic_env");
	if (!names[0]) {
		settings_list_free(names);
		return;
	}
	prepared.hermetic = 1;
	const char *home = getenv("HOME");
	if (home && home[0] == '/')
		prepared.home = realpath(home, NULL);
	size_t n = strv_len(environ);
	char **keep = xmalloc((n + 1) * sizeof *keep);
	prepared.caller_env = xmalloc((n + 1) * sizeof *prepared.caller_env);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		prepared.caller_env[i] = xstrdup(environ[i]);
		if (listed(environ[i], names))
			keep[k++] = xstrdup(environ[i]);
	}
	prepared.caller_env[n] = NULL;
	keep[k] = NULL;
	/* Replaced whole: the step's key (step_init) and its environment
	 * (step_environment) both read environ. Never freed: the process
	 * execs or exits with it. */
	environ = keep;
	settings_list_free(names);
}

const char *hermetic_env_home(void)
{
	return prepared.home;
}

char **hermetic_env_caller(void)
{
	return prepared.caller_env;
}
