/*
 * Recording: turns the events of one traced run into a path set (with the
 * value of each observation, normalised to the state before the run) and a
 * result whose outputs are the state the run left at every path it touched
 * (trace.h's TRACE_FINAL), taken from the file system only while it still
 * is that state: what another process put there since is never stored as
 * the step's.
 *
 * A step's own writes are not its inputs: a lookup of a path the run then
 * creates, replaces or removes is dropped; a read before the step's first
 * change keeps the content from before it (a step that rewrites its input is
 * a valid memo from the state before to the state after); anything after the
 * first change is ignored; the names the step created or removed in a
 * directory are left out of its listings. Without this, the second identical
 * run never hits.
 */
#ifndef CACHET_RECORD_H
#define CACHET_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/buf.h"
#include "cachet/digest.h"
#include "cachet/error.h"
#include "cachet/pathset.h"
#include "cachet/portable.h"
#include "cachet/result.h"
#include "cachet/store.h"
#include "cachet/trace.h"

struct step;
struct dirfp_notes;

/* What the search of one output file's content for rec->names found. */
struct record_names_seen {
	struct digest content;
	uint64_t found; /* bit i: names[i] occurs */
	int has_nul;
};

struct record {
	struct pathset ps;
	struct digest ps_digest;
	struct buf ps_body;   /* encoded path set */
	struct buf values;    /* value of each observation, canonical order */
	struct buf listings;  /* as struct result.listings */
	struct result result; /* outputs (blobs already in the store) */
	/* NULL, or why this run must not be stored although it succeeded:
	 * "input modified during run" and the like. Static string. */
	const char *not_storable;
	/* Bit i: the real path of base i (portable.h) occurs in an output or
	 * in stdout or stderr, so the entry must hold only where that base
	 * lies at the same path; pinned_by[i] says where it was seen first
	 * ("output /src/x.d contains /src", "stdout contains /src";
	 * malloc'd). portable_record adds the bases that lookups pin. */
	unsigned pinned;
	char *pinned_by[STEP_MAX_BASES];
	/* Bit v: the value of variable v of scan_env (step.h effect_env)
	 * occurs in an output, stdout or stderr (env_finder). */
	uint64_t env_held;
	/* The names of the paths the step changed, in the forms an argv word
	 * that names an output gives them (duplicate.h): each path, as it was
	 * touched and physical, relative to the cwd when under it, and without
	 * the extension of its basename. When every program the step ran is a
	 * compiler (output_program_name_blind), each output file is searched
	 * for them while it is hashed (seen, one per content), so that noting
	 * a duplicate need not read it back from the store. At most
	 * FINDER_MAX; malloc'd. */
	char **names;
	size_t nnames;
	struct record_names_seen *seen;
	size_t nseen;
	/* With record_env.memo_dirs: the absent paths found absent when the
	 * values were checked, with their deciding directories' fingerprints
	 * (dirfp.h), for the step's memo. */
	struct dirfp_notes *dirs;
};

/* The variables of a run's environment that its record keys by effect
 * (env.h env_effect_facts), and where their values are searched for. */
struct record_env {
	char *const *effect_env; /* step.h effect_env, "NAME=VALUE"; may be NULL */
	const char *cwd;         /* the step's */
	/* Search the outputs and the two streams for the values (env_held);
	 * without, only the lookups key a variable. */
	int scan;
	const void *out, *err; /* the run's stdout and stderr */
	size_t out_len, err_len;
	/* The run leaves a memo (record.dirs). */
	int memo_dirs;
};

/* Builds the path set and values from the events, checks that every
 * observation still holds what the step saw, and captures the outputs into
 * store s (skipped when s is NULL or not_storable is set); an output that
 * changed since the step ended (or has no TRACE_FINAL) sets not_storable.
 * Paths under ignore_roots (NULL-terminated) are neither observations nor
 * outputs. Each captured file is searched for the real path of every base
 * in scan (may be NULL) while it is hashed, which sets pinned. With env
 * (may be NULL), the facts of the variables keyed by effect join the path
 * set with their values now, after env->scan searched the outputs and the
 * streams for their values (env_held): in the one canonical ordering of
 * the path set, not a second one after it. On the run's real paths
 * (before portable_record). Returns -1 only on a failure of cachet itself
 * (store full, ...). */
int record_run_scanning(const struct trace_event *events, size_t n, const char *const *ignore_roots,
                        const struct step_bases *scan, const struct record_env *env,
                        struct store *s, struct digest_cache *dc, struct record *out,
                        struct error *e);
/* record_run_scanning without env. */
int record_run(const struct trace_event *events, size_t n, const char *const *ignore_roots,
               const struct step_bases *scan, struct store *s, struct digest_cache *dc,
               struct record *out, struct error *e);
/* Searches the run's stdout or stderr (name says which) for the bases'
 * real paths, as record_run searches outputs. */
void record_scan_stream(struct record *rec, const char *name, const void *data, size_t len,
                        const struct step_bases *scan);
/* Whether the output file whose content is content holds one of
 * needles[0..n) (empty ones never do), as found while it was recorded: 1
 * (*has_nul then says whether it holds a NUL byte), 0 not, -1 unknown (the
 * content was not searched, or a needle is not one of rec->names). */
int record_names_held(const struct record *rec, const struct digest *content, char *const *needles,
                      size_t n, int *has_nul);
void record_free(struct record *r);

/* The argv words of a recorded run that are its inputs (argv_inputs.h): bit i set when
 * argv[i] (i >= 1), taken relative to the step's cwd, is a file the run
 * read (an OBS_READ of that very path) and did not write. Outputs are left
 * out: `-o x.o` may name a stale file before the step runs, and keying its
 * content would lose the hit. *key gets the group's key from the contents
 * the run read; 0 (and *key untouched) when no word qualifies. The record
 * may be in stored (portable) form. */
uint64_t argv_inputs_recorded(const struct step *s, const struct record *rec, struct digest *key);

#endif
