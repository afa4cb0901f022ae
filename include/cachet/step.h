/*
 * A step: one invocation (argv, cwd, keyed environment, stdin, platform and
 * the executable's digest) and its weak key.
 *
 * The weak key is SHA-256 over the format version, the namespace, argv, cwd,
 * the keyed environment, the platform, the executable's digest and, when
 * stdin is a regular file, its content digest. What the step then reads is
 * the path set's business (pathset.h).
 */
#ifndef CACHET_STEP_H
#define CACHET_STEP_H

#include <stddef.h>
#include "cachet/buf.h"
#include "cachet/digest.h"
#include "cachet/error.h"

struct digest_cache;

/* Bumped whenever the meaning of any key, path set or result changes. */
#define CACHET_FORMAT_VERSION 1

struct step {
	char **argv;           /* owned, NULL-terminated */
	char *cwd;             /* getcwd() */
	char *exe;             /* absolute path of the program, as found on PATH */
	struct digest exe_digest;
	char **env;            /* keyed "NAME=VALUE" entries, sorted; owned */
	char *platform;        /* one line: arch, kernel release, CPU, umask */
	int stdin_kind;        /* STEP_STDIN_* */
	struct digest stdin_digest;
	const char *namespace_; /* user-chosen namespace, may be NULL; not owned */
	/* STEP_TTY_* bits: the step's stdout/stderr is a (pseudo-)terminal, so
	 * that compilers colour their diagnostics as they would without cachet.
	 * Keyed with TERM: the bytes written to a terminal differ. */
	unsigned terminal;
	char *term;            /* TERM when terminal != 0; owned */
	struct digest weak;
};

enum {
	STEP_STDIN_NONE = 0,   /* closed or /dev/null */
	STEP_STDIN_FILE = 1,   /* a regular file: keyed by content */
	STEP_STDIN_STREAM = 2, /* a pipe, socket, terminal or device */
};

enum {
	STEP_TTY_STDOUT = 1 << 0,
	STEP_TTY_STDERR = 1 << 1,
};

/* Records that the step will see terminals (STEP_TTY_* bits, 0 for none)
 * and TERM, and recomputes the weak key. */
void step_set_terminal(struct step *step, unsigned terminal, const char *term);

/* 1 when the environment variable NAME (without "=...") cannot change what a
 * step computes, so it is left out of the key: TERM, SHLVL, _, OLDPWD, SSH_*,
 * DISPLAY, XAUTHORITY, CACHET_*, TMPDIR (each step gets a private one), and
 * the names in extra (a NULL-terminated list, may be NULL; a trailing '*' is
 * a prefix match). */
int env_is_neutral(const char *name, size_t name_len, const char *const *extra);

/* MAKEFLAGS/MFLAGS without their jobserver and -j parts (malloc'd). */
char *env_strip_make_jobs(const char *value);

/* Fills step from argv (the command, argv[0] already the resolved program
 * path or name), the process's cwd, environment envp, stdin and platform,
 * and computes the weak key. exe is the resolved program path. The digest
 * cache serves the executable's digest (nvcc's driver is 30 MB). */
int step_init(struct step *step, char *const *argv, const char *exe, char *const *envp,
	      const char *const *env_ignore, const char *namespace_, struct digest_cache *dc,
	      struct error *e);
void step_free(struct step *step);

/* Serialises what explain and show need to describe the step (argv, cwd,
 * environment, executable and its digest, platform). Values of the
 * environment stay in the local index only. */
void step_encode(const struct step *step, struct buf *out);

/* Decodes what step_encode wrote (untrusted bytes: every length checked).
 * Fills everything but weak and namespace_. */
int step_decode(const void *data, size_t len, struct step *out, struct error *e);

/* The platform line: "x86_64 6.1.0 | <cpu model> | cpu <digest of the CPUID
 * feature registers> | umask 022". */
char *platform_describe(void);

/* Finds name on PATH as execvp would (a name containing '/' is taken as is,
 * relative to cwd), skipping any candidate that is the same file as
 * skip_self (the cachet binary, for masquerading symlinks; may be NULL).
 * Returns a malloc'd absolute path, or NULL with errno ENOENT (not found) or
 * EACCES (found but not executable). */
char *step_find_program(const char *name, const char *skip_self);

/* ---- sharing: keys that do not depend on where a tree lives ----
 *
 * A base is a directory whose location differs between machines and users
 * (base_dir; HOME in the hermetic mode). For a remote cache, a path under a
 * base is written in its portable form, which names the base by index:
 * "/@cachet-base1/src/x.c" for $HOME/src/x.c. Bases are canonical absolute
 * paths (no symlinks, no trailing '/'), never "/"; NULL when unset. Two
 * machines share hits when their bases play the same roles. */
#define STEP_MAX_BASES 2
#define STEP_BASE_DIR 0  /* base_dir */
#define STEP_BASE_HOME 1 /* HOME, in the hermetic mode */
#define STEP_PORTABLE_PREFIX "/@cachet-base"

struct step_bases {
	const char *dir[STEP_MAX_BASES]; /* not owned */
};

/* The portable form of an absolute path (malloc'd): under the deepest base
 * that contains it, "/@cachet-base<i>" + the rest; else a copy. NULL when
 * the path itself starts with the reserved prefix (it cannot be shared). */
char *step_portable_path(const char *path, const struct step_bases *b);
/* The local path for a portable one (malloc'd), or NULL when it names a
 * base that is unset here. Absolute paths come back unchanged. */
char *step_local_path(const char *portable, const struct step_bases *b);
/* Text (an argv element, an environment value) with every base that starts
 * a path in it replaced by its portable name (malloc'd). NULL when the text
 * already holds the reserved prefix. */
char *step_portable_text(const char *text, const struct step_bases *b);
/* The weak key as any machine computes it for this step: like the weak key,
 * over argv, cwd, keyed environment and executable in portable form.
 * Returns -1 when the step cannot be shared (reserved prefix in its text). */
int step_portable_weak(const struct step *step, const struct step_bases *b, struct digest *out);

#endif
