/*
 * cachet repro, shared between its files: the variations of the conditions
 * a step runs under (repro_vary.c), like reprotest's. Run 1 is the control
 * and runs under the caller's conditions; a varied run changes each chosen
 * condition away from the control's value.
 */
#ifndef CACHET_CLI_REPRO_H
#define CACHET_CLI_REPRO_H

#include "cachet/buf.h"
#include "cachet/trace.h"

enum vary {
	VARY_ENV,       /* an extra environment variable */
	VARY_TZ,        /* TZ */
	VARY_LOCALE,    /* LC_ALL, to an installed locale other than the caller's */
	VARY_UMASK,     /* 002 against 022 */
	VARY_ASLR,      /* personality ADDR_NO_RANDOMIZE flipped */
	VARY_CPUS,      /* affinity of the step to half the CPUs */
	VARY_TIME,      /* SOURCE_DATE_EPOCH, and the clock through libfaketime */
	VARY_DIRORDER,  /* getdents entries reversed or shuffled by the tracer */
	VARY_HOME,      /* HOME, to a directory that does not exist */
	VARY_PATH,      /* PATH, with a directory appended */
	VARY_USER,      /* uid and gid, in a user namespace */
	VARY_HOST,      /* host and domain name, in a UTS namespace */
	VARY_KERNEL,    /* the kernel release uname reports (personality UNAME26) */
	VARY_BUILDPATH, /* the step runs in a copy of the work tree at another path */
	VARY_COUNT
};

#define VARY_ALL ((1u << VARY_COUNT) - 1)

/* "env", "tz", ... */
const char *vary_name(int v);

/* Parses a --vary value: names separated by commas, "all", "none", and
 * "-NAME" to drop one ("all,-time"). 0 and *mask, or -1 with a message in
 * err. */
int vary_parse(const char *list, unsigned *mask, char *err, size_t cap);

/* Drops from *mask the variations this machine cannot make (one CPU; a
 * personality that seccomp forbids to change; namespaces that may not be
 * created here) and appends a line for each
 * to notes, and for those it can make only in part ("time: libfaketime is
 * not installed, only SOURCE_DATE_EPOCH varies"). */
void vary_check(unsigned *mask, struct buf *notes);

/* The conditions of one run: variant 0 is the control (nothing changed);
 * variant k >= 1 applies every variation in mask with values that differ
 * from the control's (and, for time and dirorder, between variants).
 * Changes *env (a malloc'd NULL-terminated array of malloc'd strings, as
 * step_environment returns) and the variation fields of spec, and appends a
 * description: text ("TZ=GMT-14, umask 002") and the members of a JSON
 * object ("\"tz\": \"GMT-14\", ..."). */
void vary_apply(unsigned mask, unsigned variant, const char *moved_cwd, char ***env,
                struct trace_spec *spec, struct buf *text, struct buf *json);

/* Where the build path variation copies the work tree cwd: a new directory
 * (malloc'd) whose path differs from cwd's, ending in cwd's own name; NULL
 * with a note when the tree may not be copied (the root, a tree that holds
 * the place of the copy, one too large). */
char *vary_buildpath_dir(const char *cwd, struct buf *notes);

/* ---- runs and their comparison (repro.c, repro_report.c) ---- */

#include <stdint.h>
#include "cachet/compare.h"
#include "cachet/digest.h"
#include "cachet/strmap.h"

enum repro_diff_kind {
	RDIFF_CONTENT,   /* both runs left the path (or stdout): `rep` says how */
	RDIFF_ONLY_IN_A, /* run 1 left it, the other run did not */
	RDIFF_ONLY_IN_B,
	RDIFF_EXIT, /* exit statuses differ */
};

struct repro_diff {
	enum repro_diff_kind kind;
	char *path;                /* absolute, "stdout" or "exit status"; owned */
	struct compare_report rep; /* RDIFF_CONTENT */
	int status_a, status_b;    /* RDIFF_EXIT: wait statuses */
};

enum repro_role {
	ROLE_CONTROL, /* run 1 */
	ROLE_VARIED,  /* runs 2..N */
	ROLE_BISECT,  /* --bisect: the control again, then one variation at a time */
};

struct repro_run {
	unsigned number; /* 1-based, in the order run */
	enum repro_role role;
	int single;             /* ROLE_BISECT: the variation applied, -1 for none */
	unsigned mask, variant; /* what vary_apply got */
	struct buf desc_text, desc_json;
	char *dir;  /* the run's captures: fs/ (outputs), stdout, stderr */
	int status; /* wait status */
	int64_t duration_ms;
	size_t nchanged;         /* paths the step changed (TRACE_TOUCH) */
	struct strmap changed;   /* those paths -> (void *)1 */
	struct strmap deep;      /* paths captured with their whole tree -> (void *)1 */
	struct digest ps_digest; /* the inputs it relied on (record_run) */
	struct buf ps_body;      /* that path set, encoded */
	struct buf values;
	char *inputs_differ;      /* !inputs_same: the paths whose lookups differ from
	                           * run 1's ("out/x.h, /etc/passwd and 3 more"); owned */
	int inputs_same;          /* ps_digest and values as run 1's */
	char *moved_to;           /* VARY_BUILDPATH: the copy of the work tree the
	                           * run ran in (gone after the run); owned */
	const char *note;         /* uncacheable or not-storable reason; static */
	struct repro_diff *diffs; /* against run 1 */
	size_t ndiffs;
};

struct repro {
	char **argv;   /* the command; argv[0] as given */
	char *program; /* resolved */
	unsigned nruns, mask;
	int bisect, json;
	char *work;             /* private directory: snapshot/ and run-N/ */
	char *cwd;              /* the step's; the text report shows paths below it relative */
	struct repro_run *runs; /* every run made, in order */
	size_t n, alloc;
	struct buf notes; /* vary_notes and warnings, one per line */
	/* --bisect results */
	int bisected;
	int control_again_differs;
	unsigned causes; /* variations that alone make run 1 differ */
};

/* path as the text report shows it: relative when below r->cwd. Points
 * into path. */
const char *repro_shown_path(const struct repro *r, const char *path);

/* 1 when run i (> 0) differs from run 1 in any output, stdout or exit
 * status. */
int repro_run_differs(const struct repro_run *run);

/* The report: text for people, JSON (one object and a newline) for tools. */
void repro_render_text(const struct repro *r, struct buf *out);
void repro_render_json(const struct repro *r, struct buf *out);

#endif
