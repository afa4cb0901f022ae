/*
 * The step's environment (src/key/env.c): which variables are left out of
 * the weak key (neutral ones, and those keyed by what they do), and the
 * facts that key the latter by their effect.
 */
#ifndef CACHET_ENV_H
#define CACHET_ENV_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/find.h"

struct buf;
struct pathset;

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

#endif
