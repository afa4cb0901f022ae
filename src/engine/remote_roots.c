/*
 * Which paths a path set from an untrusted remote may name.
 *
 * A path set is evaluated before its entry is asked for: every file it
 * names is read here, and the strong key asked for next is a digest over
 * what they hold. Without trusted_keys, anyone who can write the remote
 * could list ~/.ssh/id_ed25519 or /etc/shadow and learn, key by key, what
 * the reader's files hold. So such a path set may only name what a build
 * step reads anyway: the step's roots (its working directory's subtree,
 * base_dir, HOME in the hermetic mode), its toolchain (the directories on
 * its PATH, the directory of its program, the system's program and library
 * directories, /etc but for where it keeps secrets) and a few devices; the
 * directories above these may be looked at (stat, readlink), not read or
 * listed. Anything else refuses the path set before any lookup: a miss.
 */
#include <stdlib.h>
#include <string.h>

#include "cachet/array.h"
#include "cachet/buf.h"
#include "cachet/observe.h"
#include "cachet/path.h"
#include "cachet/pathset.h"
#include "cachet/portable.h"
#include "cachet/step.h"
#include "cachet/remote_lookup.h"

static const char *const system_roots[] = {
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/opt",
    "/nix/store",
    "/gnu/store",
    "/etc",
    "/dev/null",
    "/dev/zero",
    "/dev/urandom",
    "/dev/random",
    "/proc/cpuinfo",
    "/sys/devices/system/cpu",
    NULL,
};

/* Under /etc, which programs read for their configuration (the loader's,
 * libselinux's, nsswitch's...), what holds secrets. */
static const char *const secret_dirs[] = {
    "/etc/shadow", "/etc/shadow-",     "/etc/gshadow",  "/etc/gshadow-",
    "/etc/ssh",    "/etc/ssl/private", "/etc/sudoers",  "/etc/sudoers.d",
    "/etc/cachet", "/etc/krb5.keytab", "/etc/security", NULL,
};

struct roots {
	const char **dirs;
	size_t n, alloc;
	char *path_copy;
	char *exe_dir;
};

static void roots_add(struct roots *r, const char *dir)
{
	if (!dir || dir[0] != '/')
		return;
	ARRAY_RESERVE(r->dirs, r->alloc, r->n + 1, 32);
	r->dirs[r->n++] = dir;
}

static void roots_of(const struct step *step, struct roots *r)
{
	memset(r, 0, sizeof *r);
	roots_add(r, step->cwd);
	roots_add(r, step->bases.dir[STEP_BASE_DIR]);
	roots_add(r, step->bases.dir[STEP_BASE_HOME]);
	for (size_t i = 0; system_roots[i]; i++)
		roots_add(r, system_roots[i]);
	if (step->exe) {
		r->exe_dir = path_dirname(step->exe);
		roots_add(r, r->exe_dir);
	}
	/* PATH is keyed by what it does: among effect_env, not env. */
	for (size_t i = 0; step->effect_env && step->effect_env[i]; i++) {
		if (strncmp(step->effect_env[i], "PATH=", 5) != 0)
			continue;
		r->path_copy = xstrdup(step->effect_env[i] + 5);
		for (char *save = NULL, *d = strtok_r(r->path_copy, ":", &save); d;
		     d = strtok_r(NULL, ":", &save))
			roots_add(r, d);
	}
}

static void roots_free(struct roots *r)
{
	free(r->dirs);
	free(r->path_copy);
	free(r->exe_dir);
}

static int allowed(const struct roots *r, const char *path, int kind)
{
	for (size_t i = 0; secret_dirs[i]; i++)
		if (path_is_under(path, secret_dirs[i]))
			return 0;
	/* Where compilers look for a temporary directory. */
	if ((kind == OBS_STAT || kind == OBS_READLINK) &&
	    (!strcmp(path, "/tmp") || !strcmp(path, "/var/tmp")))
		return 1;
	for (size_t i = 0; i < r->n; i++) {
		if (path_is_under(path, r->dirs[i]))
			return 1;
		/* A directory on the way to a root: looked at, not read. */
		if ((kind == OBS_STAT || kind == OBS_READLINK || kind == OBS_BASE) &&
		    path_is_under(r->dirs[i], path))
			return 1;
	}
	return 0;
}

/* Where the kernel takes a path with "..": the part up to its last ".."
 * resolved (symlinks included, as "a/b/.." need not be "a"), the rest
 * appended. NULL when that part does not resolve: then nothing beyond it
 * is read either. */
static char *resolve_dots(const char *p)
{
	const char *last = NULL;
	for (const char *q = strstr(p, "/.."); q; q = strstr(q + 1, "/.."))
		if (q[3] == '/' || q[3] == '\0')
			last = q + 3;
	if (!last)
		return xstrdup(p);
	char *prefix = xstrndup(p, (size_t)(last - p));
	char *real = realpath(prefix, NULL);
	free(prefix);
	if (!real)
		return NULL;
	char *out = *last ? path_join(real, last + 1) : xstrdup(real);
	free(real);
	return out;
}

const char *remote_pathset_outside(const struct pathset *ps, const struct step *step)
{
	struct roots r;
	roots_of(step, &r);
	const char *bad = NULL;
	for (size_t i = 0; i < ps->nobs && !bad; i++) {
		/* A fact of the process names no file: its name is one that
		 * pathset_decode knows, and its value is the reader's own. */
		if (ps->obs[i].kind == OBS_FACT)
			continue;
		const char *p = ps->paths[ps->obs[i].path];
		/* A path with ".." could climb out of a root it names: judged by
		 * where it leads (compilers name "/usr/lib/gcc/.../../lib"). */
		char *where = strstr(p, "/..") ? resolve_dots(p) : NULL;
		if (where ? !allowed(&r, where, ps->obs[i].kind) : !allowed(&r, p, ps->obs[i].kind))
			bad = p;
		free(where);
	}
	roots_free(&r);
	return bad;
}
