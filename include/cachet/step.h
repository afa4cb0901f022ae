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
#include <sys/stat.h>
#include <stdint.h>
#include "cachet/buf.h"
#include "cachet/digest.h"
#include "cachet/error.h"
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

/* How the step's output is shown, which is keyed: as a compiler of a
 * diag_colour family (not 0), whose terminal fact is then not keyed; else
 * by the terminals it sees (STEP_TTY_* bits, 0 for none) and TERM. */
struct step_show {
	unsigned colour;
	unsigned terminal;
	const char *term;
};

/* step_init for a step shown as show says (NULL: no colour, no terminal).
 * Decided before the weak key is computed: keying the environment and argv
 * again for it was as much work as the rest of the weak key. */
int step_init_shown(struct step *step, char *const *argv, const char *exe, char *const *envp,
                    const char *const *env_ignore, const char *const *env_per_run,
                    const char *namespace_, const struct step_bases *bases, struct digest_cache *dc,
                    const struct step_show *show, struct error *e);
void step_free(struct step *step);

/* Serialises what explain and show need to describe the step (argv, cwd,
 * environment, executable and its digest, platform). Values of the
 * environment stay in the local index only. */
void step_encode(const struct step *step, struct buf *out);

/* Decodes what step_encode wrote (untrusted bytes: every length checked).
 * Fills everything but weak and namespace_. */
int step_decode(const void *data, size_t len, struct step *out, struct error *e);

/* Finds name on PATH as execvp would (a name containing '/' is taken as is,
 * relative to cwd), skipping any candidate that is the same file as
 * skip_self (the cachet binary, for masquerading symlinks; may be NULL).
 * Returns a malloc'd absolute path, or NULL with errno ENOENT (not found) or
 * EACCES (found but not executable). */
char *step_find_program(const char *name, const char *skip_self);
/* step_find_program that also leaves the stat of the program it returns in
 * *st (the search stats each candidate: a caller that asks about the
 * program's mode need not look it up again). */
char *step_find_program_stat(const char *name, const char *skip_self, struct stat *st);

/* The weak key of step as a checkout under bases b computes it: argv,
 * cwd, the environment's values and the executable's path in portable form
 * (portable.h). Without bases (b NULL or empty) it is the plain key, the
 * same one that format version 1 has always had, so existing caches keep
 * hitting. Returns -1 when bases are set and a text already holds the
 * reserved prefix (the step cannot be keyed portably). */
int step_weak_key(const struct step *step, const struct step_bases *b, struct digest *out);

/* The weak key's material without argv, only its length: what steps that
 * differ in argv alone share (duplicate.h). -1 as step_weak_key. */
int step_shape_key(const struct step *s, struct digest *out);
/* The weak key's material with argv (as long as the step's) in place of
 * the step's own, under another tag than the weak key: the key of the
 * step with its output words masked (duplicate.h). -1 as step_weak_key. */
int step_argv_key(const struct step *s, char *const *argv, struct digest *out);
/* step_shape_key and step_argv_key for the step's argv with its define
 * words removed (define_words.h), of argc words, under tags of their own:
 * the keys of preprocessed duplicates (preprocessed_duplicate.h). */
int step_defines_shape_key(const struct step *s, size_t argc, struct digest *out);
int step_defines_argv_key(const struct step *s, char *const *argv, struct digest *out);

#endif
