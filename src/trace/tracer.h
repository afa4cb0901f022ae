/*
 * The state of one trace_run, shared by the stop loop (tracer.c) and the
 * syscall handlers (syscalls.c).
 */
#ifndef CACHET_TRACE_TRACER_H
#define CACHET_TRACE_TRACER_H

#include <sched.h>
#include <sys/ptrace.h>
#include <sys/stat.h>

#include "cachet/hash_index.h"
#include "cachet/trace.h"
#include "trace/dirviews.h"
#include "trace/events.h"
#include "trace/exec_image.h"
#include "trace/placement.h"
#include "trace/tracee.h"

struct tracer {
	const struct trace_spec *spec;
	struct event_log log;
	struct tracee_table tracees;
	const char *uncacheable; /* first reason found */
	size_t nstops;
	size_t nexit_stops;
	size_t nrecords; /* calls reported by the preload library instead of a stop */
	/* st_dev of /dev (0: not known yet): paths under /dev on its own
	 * file system are devices, not files (syscalls.c, is_ignored). */
	dev_t dev_fs;
	/* Bumped by every chdir/fchdir exit: each tracee re-reads its cwd on
	 * its next relative lookup. */
	unsigned cwd_gen;
	/* The original stdin, to recognise reads of it (stdin_is_stream). */
	int have_stdin_id;
	dev_t stdin_dev;
	ino_t stdin_ino;
	int stdin_is_null;   /* it is /dev/null */
	int stdin_fact_made; /* its TRACE_FACT_STDIN is in the log */
	/* The inherited descriptors watched (trace_spec.inherited_fds), with
	 * the files they referred to at the start. */
	size_t nwatched;
	int watched_fd[TRACE_MAX_WATCHED_FDS];
	dev_t watched_dev[TRACE_MAX_WATCHED_FDS];
	ino_t watched_ino[TRACE_MAX_WATCHED_FDS];
	/* The preload fast path (ring.c): the shared ring, its memfd (-1: a
	 * System V segment), and the step's environment that names it (NULL:
	 * not in use). */
	struct ring *ring;
	int ring_fd;
	char **ring_env;
	char *preload_path; /* the library, never recorded as an input */
	char *audit_path;   /* its audit companion (LD_AUDIT), likewise; or NULL */
	pid_t self_pid;
	/* Records classified, each with the TOUCH count it was classified
	 * after (ring.c): a repeat with no TOUCH since finds the same
	 * outcome, and the log would drop it. Their paths are kept one
	 * after another in rec_paths; rec_index finds a record by them. */
	struct rec_seen {
		uint64_t a, b;  /* the arguments that shape the lookup */
		size_t touches; /* log.touches when it was last classified */
		size_t path_at; /* its path in rec_paths */
		int nr;
	} * rec_seen;
	size_t rec_seen_n, rec_seen_cap;
	struct hash_index rec_index;
	struct buf rec_paths;
	/* The next record to look at, and those looked at whose call had not
	 * returned yet (ring.c: their slots are not freed until it has). */
	uint64_t ring_next;
	uint64_t *ring_pending;
	size_t npending, cap_pending;
	/* Records classified without their result, the thread they name being
	 * gone, whose slots are kept until a result comes all the same or the
	 * run ends (ring.c, drain_pending). */
	uint64_t *ring_held;
	size_t nheld, cap_held;
	/* The directory views of the step's getdents calls (dirviews.h). */
	struct dir_views views;
	/* Which CPUs the tracer and the step run on (placement.h). */
	struct placement place;
	/* The ELF interpreters of the programs executed (exec_image.h). */
	struct exec_interp_cache interps;
	/* From here on the members are not zeroed (trace_run): 48 KB of
	 * scratch, about a tenth of the tracer's start-up in memset and page
	 * faults. syscall_record's stand-in for the caller, set as
	 * tracee_add sets a tracee. */
	struct tracee rec_tracee;
	/* Scratch buffers for one stop: raw strings from the tracee and
	 * resolved paths. Never live across stops: each starts empty. */
	char raw[TRACE_PATHBUF];   /* first string argument */
	char raw2[TRACE_PATHBUF];  /* second string argument, #! interpreter */
	char tmp[TRACE_PATHBUF];   /* inside path resolution only */
	char tmp2[TRACE_PATHBUF];  /* inside path resolution only */
	char path2[TRACE_PATHBUF]; /* a second resolved path */
	char path3[TRACE_PATHBUF]; /* a third (exec's interpreter chain) */
};

enum resume {
	RESUME_CONT,    /* PTRACE_CONT: no exit stop */
	RESUME_SYSCALL, /* PTRACE_SYSCALL: stop again at the syscall's exit */
};

/* A seccomp stop: classify, record what is known at entry, and say whether
 * the exit is needed (t->p then says what to finish). */
enum resume syscall_entry(struct tracer *tr, struct tracee *t,
                          const struct __ptrace_syscall_info *si);
/* The syscall-exit stop that syscall_entry asked for. */
void syscall_exit(struct tracer *tr, struct tracee *t, const struct __ptrace_syscall_info *si);
/* PTRACE_EVENT_EXEC: t (already re-keyed to the thread-group leader's tid)
 * has a new program. */
void syscall_exec_done(struct tracer *tr, struct tracee *t);

void tracer_mark_uncacheable(struct tracer *tr, const char *reason);

/* A call the preload library made without a stop: fed to syscall_entry as
 * if it had stopped, its string argument taken from str (syscalls.c), and
 * its outcome from res, what the step's call returned (NULL: unknown, the
 * tracer looks the path up itself). */
struct ring_result;
void syscall_record(struct tracer *tr, pid_t tid, int nr, const uint64_t args[6], const char *str,
                    const struct ring_result *res);
/* The audit library's report (ring.h RING_NR_SONAME_SEARCH) that the
 * loader of thread tid searches for soname. */
void syscall_soname_search(struct tracer *tr, pid_t tid, const char *soname);

/* The end of the run (syscalls.c): hands each TRACE_LIST event the views
 * of its directory. */
void syscall_attach_listings(struct tracer *tr);

/* ring.c. ring_open: 1 when the fast path is set up (tr->ring_env is then
 * the step's environment), 0 when it is not available. ring_drain: feeds
 * the complete records to syscall_record, in order; with final set, also
 * skips those that will never be completed. */
struct ring;
int ring_open(struct tracer *tr);
void ring_drain(struct tracer *tr, int final);
/* At every stop, before the stopped call runs: counts the ring's names_gen
 * up (ring.h), so that no answer remembered before it is taken for one
 * after. */
void ring_note_stop(struct tracer *tr);
void ring_close(struct tracer *tr);

#endif
