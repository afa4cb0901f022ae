#include "cachet/env.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cachet/observe.h"
#include "cachet/path.h"
#include "cachet/pathset.h"
#include "cachet/strmap.h"

/* Variables that cannot change what a step computes. PWD is deliberately
 * absent: gcc writes it into debug info when the cwd is reached through a
 * symlink (step.c keys it where it names the cwd); so is OLDPWD, where
 * `cd -` goes (keyed by effect). TMPDIR is absent from the key because
 * every step gets a private one. */
static const char *const neutral[] = {
    "TERM", "SHLVL", "_", "DISPLAY", "XAUTHORITY", "CACHET_*", "TMPDIR", NULL,
};

static int name_matches(const char *name, size_t len, const char *pattern)
{
	size_t plen = strlen(pattern);
	if (plen && pattern[plen - 1] == '*')
		return len >= plen - 1 && memcmp(name, pattern, plen - 1) == 0;
	return len == plen && memcmp(name, pattern, len) == 0;
}

int env_is_neutral(const char *name, size_t name_len, const char *const *extra)
{
	for (const char *const *p = neutral; *p; p++)
		if (name_matches(name, name_len, *p))
			return 1;
	for (const char *const *p = extra; p && *p; p++)
		if (**p && name_matches(name, name_len, *p))
			return 1;
	return 0;
}

/* A word of MAKEFLAGS that only says how many jobs run at once or how they
 * share job slots; neither changes what one step computes. */
static int is_job_word(const char *w, size_t len)
{
	static const char *const prefixes[] = {"--jobserver-auth=", "--jobserver-fds=", "--jobs",
	                                       "-j", NULL};
	for (const char *const *p = prefixes; *p; p++) {
		size_t n = strlen(*p);
		if (len >= n && memcmp(w, *p, n) == 0)
			return 1;
	}
	return 0;
}

/* MAKEFLAGS is "flags -- VAR=value..." with single-letter flags first,
 * e.g. "ks -j4 --jobserver-auth=3,4". The first word may hold 'j' among
 * other letters only as a bare "-j" in newer makes; letters are kept. */
char *env_strip_make_jobs(const char *value)
{
	struct buf out;
	buf_init(&out);
	const char *p = value;
	int after_dashdash = 0;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		const char *w = p;
		while (*p && *p != ' ') {
			if (*p == '\\' && p[1])
				p++;
			p++;
		}
		size_t len = (size_t)(p - w);
		if (len == 2 && memcmp(w, "--", 2) == 0)
			after_dashdash = 1;
		if (!after_dashdash && is_job_word(w, len))
			continue;
		if (out.len)
			buf_addch(&out, ' ');
		buf_add(&out, w, len);
	}
	return buf_detach(&out, NULL);
}

/* Variables that name a session, a window or a CI run: a new value in every
 * shell, tmux pane or job, and nothing a compiler reads. A step can still
 * write one out (a build stamp, `env > log`): keyed by effect, on the
 * output scan. */
static const char *const per_run[] = {
    "XDG_SESSION_ID",
    "XDG_VTNR",
    "TMUX",
    "TMUX_PANE",
    "WINDOWID",
    "STY",
    "WINDOW",
    "SSH_*",
    "GITHUB_RUN_ID",
    "GITHUB_RUN_NUMBER",
    "GITHUB_RUN_ATTEMPT",
    "CI_JOB_ID",
    "CI_PIPELINE_ID",
    "CI_JOB_URL",
    "CI_PIPELINE_URL",
    "BUILD_NUMBER",
    "BUILD_ID",
    "BUILD_URL",
    "INVOCATION_ID",
    "JOURNAL_STREAM",
    "HYPERFINE_RANDOMIZED_ENVIRONMENT_OFFSET",
    NULL,
};

/* make passes its own flags to every recipe; only a make reads them. */
static const char *const make_vars[] = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", NULL};

/* Where `cd -` goes: the shell it came from decides it, not the build;
 * keyed where the step entered, stat'ed or listed that very directory. */
static const char *const path_vars[] = {"OLDPWD", NULL};

static int in_list(const char *name, size_t len, const char *const *list)
{
	for (const char *const *p = list; p && *p; p++)
		if (**p && name_matches(name, len, *p))
			return 1;
	return 0;
}

int env_is_make_var(const char *name, size_t len)
{
	return in_list(name, len, make_vars);
}

int env_keyed_by_effect(const char *name, size_t len, const char *const *extra)
{
	return (len == 4 && !memcmp(name, "PATH", 4)) || in_list(name, len, make_vars) ||
	       in_list(name, len, path_vars) || in_list(name, len, per_run) ||
	       in_list(name, len, extra);
}

int env_names_cwd(const char *dir)
{
	struct stat a, b;
	return dir[0] == '/' && stat(dir, &a) == 0 && stat(".", &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* A value this short occurs by chance in any object file ("s" for make
 * -s): it is looked for only as a whole line (`echo $MAKEFLAGS`) and as
 * NAME=value (`env > file`). */
#define ENV_SCAN_SHORT 8

/* The needles for one text: itself where long enough, else as a line of
 * its own. */
static size_t text_needles(const char *text, size_t len, char **out)
{
	if (!len)
		return 0;
	out[0] =
	    len >= ENV_SCAN_SHORT ? xstrndup(text, len) : xasprintf("\n%.*s\n", (int)len, text);
	return 1;
}

/* The needles of one "NAME=VALUE" entry (at most FINDER_MAX, into out):
 * the value, NAME=VALUE where the value is short, and each part of a list
 * such as PATH on its own (autoconf's config.log writes PATH one directory
 * a line; a script may print only the first). 0 when there are more. */
static size_t entry_needles(const char *entry, char **out)
{
	const char *value = strchr(entry, '=') + 1;
	size_t n = 0, vlen = strlen(value);
	char *all[FINDER_MAX + 2];
	n += text_needles(value, vlen, all + n);
	if (vlen < ENV_SCAN_SHORT)
		all[n++] = xstrdup(entry);
	if (strchr(value, ':'))
		for (const char *p = value; n <= FINDER_MAX;) {
			const char *colon = strchr(p, ':');
			size_t len = colon ? (size_t)(colon - p) : strlen(p);
			n += text_needles(p, len, all + n);
			if (!colon)
				break;
			p = colon + 1;
		}
	if (n > FINDER_MAX) {
		for (size_t i = 0; i < n; i++)
			free(all[i]);
		return 0;
	}
	memcpy(out, all, n * sizeof *out);
	return n;
}

void env_finder_init(struct env_finder *ef, const char *const *env)
{
	memset(ef, 0, sizeof *ef);
	size_t n = 0;
	for (size_t v = 0; env && env[v]; v++) {
		if (!strchr(env[v], '='))
			continue;
		if (v >= 64) {
			ef->overflow = 1;
			continue;
		}
		char *mine[FINDER_MAX];
		size_t k = entry_needles(env[v], mine);
		if (!k || n + k > FINDER_MAX) {
			/* Too many to search for: keyed as if found. */
			ef->unsearched |= 1ull << v;
			for (size_t i = 0; i < k; i++)
				free(mine[i]);
			continue;
		}
		for (size_t i = 0; i < k; i++) {
			ef->needle[n] = mine[i];
			ef->var[n++] = (unsigned char)v;
		}
	}
	finder_init(&ef->f, (const char *const *)ef->needle, n);
	/* A line at the very start or end of the bytes is a whole line too. */
	finder_feed(&ef->f, "\n", 1);
}

void env_finder_feed(struct env_finder *ef, const void *data, size_t len)
{
	finder_feed(&ef->f, data, len);
}

uint64_t env_finder_done(struct env_finder *ef)
{
	finder_feed(&ef->f, "\n", 1);
	uint64_t held = ef->unsearched;
	for (int i = 0; i < FINDER_MAX; i++) {
		if (ef->f.found & (1ull << i))
			held |= 1ull << ef->var[i];
		free(ef->needle[i]);
	}
	if (ef->overflow)
		held = ~0ull;
	finder_free(&ef->f);
	memset(ef, 0, sizeof *ef);
	return held;
}

/* The value of NAME in env ("NAME=VALUE" entries), or NULL. */
static const char *value_in(char *const *env, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], name, n) && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

static void add_name(struct strmap *seen, char ***names, size_t *n, char *name)
{
	if (strmap_put(seen, name, (void *)1)) {
		free(name);
		return;
	}
	*names = xrealloc(*names, (*n + 2) * sizeof **names);
	(*names)[(*n)++] = name;
	(*names)[*n] = NULL;
}

/* 1 when value is an absolute path that the step stat'ed, entered or
 * listed as it is: `cd -` went to OLDPWD. Not the lstat and readlink of
 * each component that realpath makes, which every compile makes of the
 * directories above its checkout, where OLDPWD often is. */
static int names_a_lookup(const struct pathset *ps, const char *value)
{
	if (value[0] != '/' || strchr(value, ':'))
		return 0;
	char *dir = xstrdup(value);
	path_tidy(dir);
	int found = 0;
	for (size_t i = 0; i < ps->nobs && !found; i++) {
		const struct observation *o = &ps->obs[i];
		found = ((o->kind == OBS_STAT && !(o->flags & OBS_F_NOFOLLOW)) ||
		         o->kind == OBS_LIST) &&
		        !strcmp(ps->paths[o->path], dir);
	}
	free(dir);
	return found;
}

/* A program of make's family (make, gmake, bmake, cmake...) reads
 * MAKEFLAGS; naming them all is not needed to stay right, only to stay
 * precise. */
static int runs_make(const struct pathset *ps)
{
	for (size_t i = 0; i < ps->nobs; i++)
		if (ps->obs[i].kind == OBS_EXEC &&
		    strstr(path_basename(ps->paths[ps->obs[i].path]), "make"))
			return 1;
	return 0;
}

/* PATH's entries as the step's lookups resolved them: absolute, tidied,
 * relative ones against cwd ("" is "."). Sets *relative when one is. */
static char **path_dirs(const char *path, const char *cwd, int *relative)
{
	size_t n = 0;
	char **dirs = xmalloc(sizeof *dirs);
	for (const char *p = path;;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char *d = xstrndup(len ? p : ".", len ? len : 1);
		if (d[0] != '/') {
			*relative = 1;
			char *abs = cwd ? path_join(cwd, d) : NULL;
			free(d);
			d = abs;
		}
		if (d) {
			path_tidy(d);
			dirs = xrealloc(dirs, (n + 2) * sizeof *dirs);
			dirs[n++] = d;
		}
		if (!end)
			break;
		p = end + 1;
	}
	dirs[n] = NULL;
	return dirs;
}

char **env_effect_facts(const struct pathset *ps, char *const *effect_env, uint64_t held,
                        const char *cwd)
{
	struct strmap seen;
	strmap_init(&seen);
	char **names = xcalloc(1, sizeof *names);
	size_t n = 0;
	for (size_t v = 0; effect_env && effect_env[v]; v++) {
		const char *eq = strchr(effect_env[v], '=');
		if (eq && (v >= 64 || (held & (1ull << v)) || names_a_lookup(ps, eq + 1)))
			add_name(&seen, &names, &n,
			         xasprintf("%s%.*s", OBSERVE_FACT_ENV, (int)(eq - effect_env[v]),
			                   effect_env[v]));
	}
	/* make exports its command-line variables to every recipe, where any
	 * program but the toolchain may read them (a script's $V, a
	 * setup.py's CC); set or not, as `make V=1` must not find the answer
	 * of a plain make. */
	if (!env_closed_programs(ps))
		add_name(&seen, &names, &n, xstrdup(OBSERVE_FACT_MAKE_VARS));
	/* Unset as well as set: a make run without MAKEFLAGS is no answer for
	 * one under `make -s`. */
	if (runs_make(ps))
		for (const char *const *m = make_vars; *m; m++)
			add_name(&seen, &names, &n, xasprintf("%s%s", OBSERVE_FACT_ENV, *m));
	const char *path = value_in(effect_env, "PATH");
	if (!path) {
		add_name(&seen, &names, &n, xstrdup(OBSERVE_FACT_ENV "PATH"));
		strmap_free(&seen);
		return names;
	}
	int relative = 0;
	char **dirs = path_dirs(path, cwd, &relative);
	struct strmap in_path;
	strmap_init(&in_path);
	for (size_t d = 0; dirs[d]; d++)
		strmap_put(&in_path, dirs[d], (void *)1);
	int searched_relative = 0;
	for (size_t i = 0; i < ps->nobs; i++) {
		const struct observation *o = &ps->obs[i];
		/* A search along PATH execs or stats (access, a failed exec)
		 * each candidate; an lstat or readlink is realpath walking a
		 * symlink chain (/usr/bin/gcc -> gcc-12), no search, and each
		 * fact costs its stats on every lookup. */
		if (o->kind != OBS_EXEC && (o->kind != OBS_STAT || (o->flags & OBS_F_NOFOLLOW)))
			continue;
		const char *p = ps->paths[o->path];
		char *dir = path_dirname(p);
		const char *base = path_basename(p);
		if (*base && strcmp(dir, p) != 0 && strmap_get(&in_path, dir)) {
			add_name(&seen, &names, &n, xasprintf("%s%s", OBSERVE_FACT_WHICH, base));
			searched_relative |= relative;
		}
		free(dir);
	}
	/* A relative entry leads elsewhere from another cwd, which the
	 * which: fact resolves from cachet's own: the same one. Kept by value
	 * all the same, where one was searched: the cwd is keyed, but what a
	 * later step in it finds is not that step's. */
	if (searched_relative)
		add_name(&seen, &names, &n, xstrdup(OBSERVE_FACT_ENV "PATH"));
	strmap_free(&in_path);
	for (size_t d = 0; dirs[d]; d++)
		free(dirs[d]);
	free(dirs);
	strmap_free(&seen);
	return names;
}
