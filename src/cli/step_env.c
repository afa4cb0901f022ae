#include "cli/step_env.h"

#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cli/settings.h"

extern char **environ;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

void remove_tree(const char *path)
{
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

char *make_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	if (!base || !*base || access(base, W_OK) < 0)
		base = "/tmp";
	char *tmpl = xasprintf("%s/cachet-step-XXXXXX", base);
	if (!mkdtemp(tmpl)) {
		free(tmpl);
		return NULL;
	}
	/* The step's writes under it are not recorded; a canonical path makes
	 * sure the tracer's resolved paths match it. */
	char *real = realpath(tmpl, NULL);
	free(tmpl);
	return real;
}

/* Python trusts its bytecode cache by mtime and size and would never read
 * an edited module whose mtime was restored: its cache goes to TMPDIR. */
char **step_environment(const char *tmpdir)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = xmalloc((n + 3) * sizeof *env);
	size_t k = 0;
	int has_pycache = 0;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "TMPDIR=", 7))
			continue;
		if (!strncmp(environ[i], "PYTHONPYCACHEPREFIX=", 20))
			has_pycache = 1;
		env[k++] = xstrdup(environ[i]);
	}
	env[k++] = xasprintf("TMPDIR=%s", tmpdir);
	if (!has_pycache)
		env[k++] = xasprintf("PYTHONPYCACHEPREFIX=%s/pycache", tmpdir);
	env[k] = NULL;
	return env;
}

char **step_ignore_roots(const struct settings *settings, const char *tmpdir, const char *cache_dir)
{
	char **user = settings ? settings_list(settings, "ignore_paths") : NULL;
	size_t n = 0;
	while (user && user[n])
		n++;
	char **roots = xmalloc((n + 3) * sizeof *roots);
	size_t k = 0;
	roots[k++] = xstrdup(tmpdir);
	roots[k++] = xstrdup(cache_dir);
	for (size_t i = 0; i < n; i++)
		roots[k++] = user[i];
	roots[k] = NULL;
	free(user);
	return roots;
}

void free_strv(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}
