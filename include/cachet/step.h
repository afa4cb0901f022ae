/*
 * A step: one invocation (argv, cwd, keyed environment, stdin, platform and
 * the executable's digest) and its weak key.
 *
 * The weak key is SHA-256 over the format version, the namespace, argv, cwd,
 * the keyed environment, the platform, the executable's digest and, when
 * stdin is a regular file, its content digest; paths under the step's bases
 * in portable form (portable.h). What the step then reads is the path
 * set's business (pathset.h).
 */
#ifndef CACHET_STEP_H
#define CACHET_STEP_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/buf.h"
#include "cachet/digest.h"
#include "cachet/error.h"
#include "cachet/find.h"
#include "cachet/portable.h"

struct digest_cache;
struct pathset;

/* Bumped whenever the meaning of any key, path set or result changes. */
#define CACHET_FORMAT_VERSION 2

struct step {
	char **argv; /* owned, NULL-terminated */
	char *cwd;   /* getcwd() */
	char *exe;   /* absolute path of the program, as found on PATH */
	struct digest exe_digest;
	char **env; /* keyed "NAME=VALUE" entries, sorted; owned */
	/* The variables keyed by their effect, not their value
	 * (env_keyed_by_effect), as "NAME=VALUE", sorted; owned. Not in the
	 * weak key: a recorded run keys them in its path set (env_effect_facts)
	 * where it ran make, looked a program up along PATH, or wrote a value
	 * out. */
	char **effect_env;
	char *platform; /* one line: arch, kernel release, CPU, umask */
	int stdin_kind; /* STEP_STDIN_* */
	struct digest stdin_digest;
	const char *namespace_; /* user-chosen namespace, may be NULL; not owned */
	/* STEP_TTY_* bits: the step's stdout/stderr is a (pseudo-)terminal, so
	 * that compilers colour their diagnostics as they would without cachet.
	 * Keyed with TERM: the bytes written to a terminal differ. */
	unsigned terminal;
	char *term; /* TERM when terminal != 0; owned */
	/* enum diag_colour: a compiler run with its colours forced on, whose
	 * stderr a replay fits to where it goes (diag_colour.h). Keyed
	 * instead of the terminal fact. */
	unsigned colour;
	/* Where checkouts may lie elsewhere (base_dir; HOME in the hermetic
	 * mode): the weak key, path sets and results are portable under
	 * them. The strings are not owned and outlive the step. */
	struct step_bases bases;
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

/* Records that the step is a compiler of this diag_colour family (not 0),
 * whose terminal fact is then not keyed, and recomputes the weak key. */
void step_set_colour(struct step *step, unsigned family);

/* 1 when the environment variable NAME (without "=...") cannot change what a
 * step computes, so it is left out of the key: TERM, SHLVL, _, DISPLAY,
 * XAUTHORITY, CACHET_*, TMPDIR (each step gets a private one), and
 * the names in extra (a NULL-terminated list, may be NULL; a trailing '*' is
 * a prefix match). */
int env_is_neutral(const char *name, size_t name_len, const char *const *extra);

/* MAKEFLAGS/MFLAGS without their jobserver and -j parts (malloc'd). */
char *env_strip_make_jobs(const char *value);

/* 1 when NAME is keyed by what it does rather than by its value, and so left
 * out of the weak key: PATH (by the programs a step found along it), make's
 * own variables (MAKEFLAGS, MFLAGS, MAKELEVEL, MAKEOVERRIDES: only by a step
 * that runs make), the per-session and per-run identifiers (XDG_SESSION_ID,
 * TMUX_PANE, WINDOWID, SSH_*, GITHUB_RUN_ID, CI_JOB_ID, ...) and the names
 * in extra (NULL-terminated, may be NULL; a trailing '*' is a prefix match).
 * Each is keyed by value where an output, stdout or stderr holds it. */
int env_keyed_by_effect(const char *name, size_t name_len, const char *const *extra);
/* 1 when dir is an absolute path to the cwd, as PWD must be for gcc and the
 * shells to believe it. A PWD that is not is keyed as "PWD", its value only
 * where a step writes it out (it is then among effect_env). */
int env_names_cwd(const char *dir);
/* 1 for make's own variables (see env_keyed_by_effect). */
int env_is_make_var(const char *name, size_t name_len);
/* 1 when NAME is one of the command-line variables in makeflags (the
 * value of MAKEFLAGS: "ks -- V=1 CFLAGS=-O2\\ -g"), which make exports to
 * every recipe. Such a variable is keyed by effect, unless the toolchain
 * reads it (env_read_by_closed_programs): as the fact make-vars
 * (observe.h) of every step that ran another program. */
int env_is_make_command_var(const char *makeflags, const char *name, size_t name_len);
/* Appends the value of the make-vars fact (observe.h) after its 'P':
 * makeflags' command-line variables (may be NULL: none) with the values
 * the environment gives them. */
void env_make_vars_value(const char *makeflags, struct buf *out);
/* 1 when every program the recorded path set ps executed is an ELF file of
 * the GNU toolchain (gcc and its target- and version-named twins, cc1,
 * as, ld, collect2, lto1...), whose reads of the environment are known by
 * name, and none loaded a shared object from outside the system's library
 * directories or from a plugin directory. Looks at the executed files (a
 * script or a link named gcc is not gcc): for the miss path only. */
int env_closed_programs(const struct pathset *ps);
/* 1 when those programs, or the C library under them, read NAME. */
int env_read_by_closed_programs(const char *name, size_t name_len);

/* The search of outputs and streams for the values of the variables keyed
 * by effect: bit v of env_finder_done is variable v of the list given to
 * env_finder_init ("NAME=VALUE" entries, which must outlive the finder). A
 * value of 8 bytes or more is found anywhere; a shorter one as a whole line
 * or as NAME=VALUE (a short value occurs by chance in any binary). Variables
 * beyond what one finder can look for count as found. */
struct env_finder {
	struct finder f;
	char *needle[FINDER_MAX];
	unsigned char var[FINDER_MAX];
	uint64_t unsearched;
	int overflow;
};
void env_finder_init(struct env_finder *ef, const char *const *env);
void env_finder_feed(struct env_finder *ef, const void *data, size_t len);
/* The variables found (bit v), and frees the finder. */
uint64_t env_finder_done(struct env_finder *ef);

/* The OBS_FACT names (observe.h OBSERVE_FACT_ENV, OBSERVE_FACT_WHICH) that
 * a recorded path set ps must key for the variables keyed by effect
 * (effect_env, as struct step holds them), in a malloc'd NULL-terminated
 * array of malloc'd strings: every variable whose value an output or stream
 * holds (bit v of held), make's variables where the step executed a make,
 * make-vars (observe.h) where it executed a program that may read make's
 * command-line variables (env_closed_programs),
 * PATH itself where it is unset or a relative entry of it was searched, and
 * for every name the step looked up in a directory of PATH, where PATH
 * leads it now. cwd: the step's, to resolve relative PATH entries. */
char **env_effect_facts(const struct pathset *ps, char *const *effect_env, uint64_t held,
                        const char *cwd);

/* Fills step from argv (the command, argv[0] already the resolved program
 * path or name), the process's cwd, environment envp (less env_ignore; the
 * variables keyed by effect, with env_per_run among them, apart), stdin and
 * platform,
 * and computes the weak key under bases (may be NULL: none). exe is the
 * resolved program path. The digest cache serves the executable's digest
 * (nvcc's driver is 30 MB). Fails when the step cannot be keyed under its
 * bases (step_weak_key). */
int step_init(struct step *step, char *const *argv, const char *exe, char *const *envp,
              const char *const *env_ignore, const char *const *env_per_run, const char *namespace_,
              const struct step_bases *bases, struct digest_cache *dc, struct error *e);
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

/* The weak key of step as a checkout under bases b computes it: argv,
 * cwd, the environment's values and the executable's path in portable form
 * (portable.h). Without bases (b NULL or empty) it is the plain key, the
 * same one that format version 1 has always had, so existing caches keep
 * hitting. Returns -1 when bases are set and a text already holds the
 * reserved prefix (the step cannot be keyed portably). */
int step_weak_key(const struct step *step, const struct step_bases *b, struct digest *out);

#endif
