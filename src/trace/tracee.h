/*
 * Per-process (per-thread: ptrace traces tids) state of the tracer, and the
 * primitives that read a tracee: its memory (process_vm_readv), its cwd and
 * descriptors (the /proc magic links, read from the tracer's side).
 */
#ifndef CACHET_TRACE_TRACEE_H
#define CACHET_TRACE_TRACEE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Room for a cwd joined with a PATH_MAX relative path. */
#define TRACE_PATHBUF (2 * PATH_MAX + 2)

/* What a syscall-exit stop of this tracee has to finish. */
enum pending_what {
	PEND_NONE,
	PEND_OPEN_READ,   /* READ of a regular file, PROBE otherwise or on error */
	PEND_OPEN_WRITE,  /* the TOUCH was at entry; an error becomes a PROBE */
	PEND_PROBE,       /* stat/access family, O_TMPFILE directory: PROBE */
	PEND_EXEC,        /* error: PROBE; success arrives as PTRACE_EVENT_EXEC */
	PEND_CHDIR,       /* PROBE of the directory; cwd generation bump */
	PEND_UNCACHEABLE, /* `reason` if the call succeeded */
	PEND_CONNECT,     /* `reason` if it succeeded or returned EINPROGRESS */
	PEND_GETDENTS,    /* collect the entries at `addr` (has_path), then
	                   * reorder them (trace_spec.dirorder) */
};

struct pending {
	enum pending_what what;
	unsigned flags;     /* TRACE_F_* of the event */
	int has_path;       /* path holds a recorded (not ignored) path */
	const char *reason; /* PEND_UNCACHEABLE, PEND_CONNECT */
	uint64_t addr;      /* PEND_GETDENTS: the tracee's buffer */
	uint64_t pos;       /* PEND_GETDENTS: the stream position at entry ... */
	int pos_known;      /* ... when it could be read */
	int is64;           /* PEND_GETDENTS: getdents64's record layout */
	char path[TRACE_PATHBUF];
};

struct tracee {
	pid_t tid;
	/* 0 until its first stop: a child attached through TRACEFORK/CLONE
	 * first reports a PTRACE_EVENT_STOP that is not a group-stop. */
	int started;
	/* The cached cwd is valid while cwd_gen equals the tracer's generation,
	 * which any chdir/fchdir of any tracee bumps (threads and CLONE_FS
	 * children share their cwd). 0 = never read. */
	unsigned cwd_gen;
	char cwd[TRACE_PATHBUF];
	struct pending p;
	/* A record of the preload fast path: its string argument, which
	 * read_str returns instead of reading the tracee's memory. */
	const char *rec_str;
	/* ... and what the step's own call returned (NULL: not known). */
	const struct ring_result *rec_res;
	/* Where the call of its current seccomp stop was made (0: a record). */
	uint64_t entry_ip;
	/* Its loader reported a soname search through the audit library, so
	 * the cache's mapping of every soname that loader looked up is keyed
	 * (observe.h OBSERVE_FACT_LDCACHE). */
	int loader_searched;
	/* Its time waiting on a run queue at the last check, its
	 * /proc/<tid>/schedstat kept open for the next (-1: not yet), and
	 * whether its CPU affinity is its own, never to be touched again
	 * (placement.h). */
	uint64_t run_delay_ns;
	int has_run_delay;
	int schedstat_fd;
	int own_affinity;
};

struct tracee_table {
	struct tracee **slots;
	size_t cap, n;
};

void tracee_table_init(struct tracee_table *t);
void tracee_table_free(struct tracee_table *t);
struct tracee *tracee_find(const struct tracee_table *t, pid_t tid);
/* Creates the record (started = 0, no cwd); tid must not be present. */
struct tracee *tracee_add(struct tracee_table *t, pid_t tid);
/* Sets r as tracee_add does, without zeroing its buffers (cwd is empty). */
void tracee_init(struct tracee *r, pid_t tid);
void tracee_remove(struct tracee_table *t, pid_t tid);
/* Re-keys the record of old_tid as new_tid, replacing any record of new_tid
 * (an exec from a non-leader thread takes over the leader's tid). */
struct tracee *tracee_rekey(struct tracee_table *t, pid_t old_tid, pid_t new_tid);

/* Reads len bytes at addr. 0, or -1 when any byte is unreadable. */
int tracee_read(pid_t tid, uint64_t addr, void *out, size_t len);
/* Writes len bytes at addr (a buffer the tracee gave a syscall, e.g. the
 * entries getdents returned). 0, or -1 when any byte is not writable. */
int tracee_write(pid_t tid, uint64_t addr, const void *data, size_t len);
/* Reads a NUL-terminated string at addr into out (cap bytes). 0, or -1 when
 * unreadable or longer than cap - 1. Reads in chunks that never cross a
 * page boundary, so a string ending just before an unmapped page reads. */
int tracee_read_string(pid_t tid, uint64_t addr, char *out, size_t cap);

/* One line of /proc/<tid>/maps: the range and the file mapped there
 * (inode 0: none). */
struct maps_line {
	uint64_t lo, hi;
	unsigned dev_major, dev_minor;
	uint64_t inode;
};
/* Parses the line at s (up to its '\n' or NUL). 0, or -1 when it is not
 * one. */
int maps_line_parse(const char *s, struct maps_line *out);
/* 1 when the mapping of tid that begins at start and the one that holds
 * addr map the same file, 0 when not (or either is anonymous or absent),
 * -1 when the maps cannot be read. */
int tracee_maps_same_file(pid_t tid, uint64_t start, uint64_t addr);

/* readlink of /proc/<tid>/fd/<fd> (or /proc/<tid>/cwd when fd is
 * TRACEE_FD_CWD or any other negative, /proc/<tid>/root when
 * TRACEE_FD_ROOT) into out. 0, or -1 (closed descriptor, gone process,
 * too long). */
#define TRACEE_FD_CWD  (-1)
#define TRACEE_FD_ROOT (-2)
int tracee_fd_path(pid_t tid, int fd, char *out, size_t cap);
/* stat of /proc/<tid>/fd/<fd>: the file behind the descriptor. */
int tracee_fd_stat(pid_t tid, int fd, void *statbuf);

/* The file position of the tracee's descriptor fd (/proc/<tid>/fdinfo):
 * for a directory, where its next getdents continues. 0, or -1. */
int tracee_fd_pos(pid_t tid, int fd, uint64_t *pos);

/* The time t has spent waiting on a run queue (/proc/<tid>/schedstat,
 * second field), in ns. 0, or -1 (gone, or not kept by this kernel). */
int tracee_run_delay(struct tracee *t, uint64_t *ns);

/* The CPU the tracee last ran on (/proc/<tid>/stat "processor"), or -1. */
int tracee_cpu(pid_t tid);

/* The process state letter from /proc/<tid>/stat ('R', 'S', 'Z', ...), or 0
 * when the process is gone. */
char tracee_state(pid_t tid);

#endif
