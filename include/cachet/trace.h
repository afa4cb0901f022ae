/*
 * The tracer: runs one command under ptrace with a seccomp-bpf filter, over
 * its whole process tree, and returns the file-system events it saw, in the
 * order the step's syscalls happened. It knows nothing of keys or storage:
 * turning events into a path set and outputs is src/key's job.
 *
 * Paths in events are absolute, resolved as the calling tracee resolved them
 * (against its own cwd or dirfd; /proc/self and /dev/fd/N are the tracee's),
 * tidied with path_tidy (".." is kept as text). Accesses under an ignored
 * root (/proc, /sys, /dev, the step's private TMPDIR, spec->ignore_roots)
 * produce no event.
 */
#ifndef CACHET_TRACE_H
#define CACHET_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "cachet/digest.h"
#include "cachet/error.h"
#include "cachet/fileid.h"

enum trace_event_kind {
	/* A regular file opened for reading, or for writing without O_TRUNC
	 * (O_APPEND, O_RDWR on an existing file). `id` is the fingerprint of the
	 * file the step got (fstat of its descriptor at the syscall's exit).
	 * Also emitted, with `id` from lstat at entry, just before the TOUCH of
	 * a first change that keeps an existing regular file's bytes: a write
	 * open without O_TRUNC, rename (source; with RENAME_EXCHANGE both),
	 * link (source, no TOUCH), chmod, utimes, *setxattr, *removexattr,
	 * truncate to a non-zero length. The output then depends on those
	 * bytes, and the TOUCH carries their digest (has_pre_digest). */
	TRACE_READ,
	/* A file executed: the program of a successful execve/execveat, its ELF
	 * interpreter (PT_INTERP) and any #! interpreter, which the kernel opens
	 * without a traced call. `id` as for TRACE_READ. */
	TRACE_EXEC,
	/* A lookup whose outcome matters but whose content was not read: stat
	 * family, access family, a failed open, a failed execve (PATH search),
	 * chdir. `err` is the errno the step got, 0 when the path existed.
	 * Successful opens of anything but a regular file (a directory, O_PATH,
	 * the directory of an O_TMPFILE, a FIFO) are PROBEs with err 0; a failed
	 * O_CREAT|O_EXCL open is a PROBE with EEXIST. */
	TRACE_PROBE,
	/* A directory read with getdents/getdents64: one event per directory
	 * path, at the entry of its first read, with `listing` (attached when
	 * the run ends) saying which entries the step's reads returned. */
	TRACE_LIST,
	/* readlink/readlinkat: `err` is 0 or the errno of the same readlink,
	 * repeated by the tracer at the call's entry (cc1 makes ~1,500 of them
	 * per compile; skipping their exit stops saves a third of all stops),
	 * or, for a call of the preload fast path, the result the step's own
	 * call reported. With err 0, `has_seen` is set and `seen` is the
	 * digest of the target. */
	TRACE_READLINK,
	/* The step's first change to a path: an open that creates or truncates
	 * or writes it, creat, mkdir, mknod, symlink, link (new name), rename
	 * (both names), unlink, rmdir, truncate, chmod, utimes, setxattr.
	 * Emitted once per path, at the entry of the first such syscall, before
	 * the kernel runs it: `pre_*` describe the path as it was before the step
	 * touched it. Later changes to the same path produce no event: the final
	 * state (TRACE_FINAL) decides what the output is. */
	TRACE_TOUCH,
	/* The step set a path's times explicitly (utimensat/utimes/futimesat
	 * with times that are not UTIME_NOW): its output keeps its mtime. */
	TRACE_SET_MTIME,
	/* A rename put something at this path: the target of rename, renameat
	 * and renameat2, and with RENAME_EXCHANGE both names. Emitted at every
	 * such rename, not only at the path's first change: a directory moved
	 * into place brings contents that the step wrote under other names,
	 * while one made by mkdir holds only what the step wrote into it by
	 * name (each with its own TRACE_TOUCH) and whatever other processes put
	 * there. */
	TRACE_MOVED_IN,
	/* Appended after all others, the moment the step's process tree has
	 * ended: the state the step left at each path it changed (every
	 * TRACE_TOUCH path) and at every entry beneath a directory moved into
	 * place (TRACE_MOVED_IN), by lstat. `err` is 0 with `id` set when the
	 * path existed, else lstat's errno. Other processes may change these
	 * paths at any time afterwards (a sibling under make -j, a parallel
	 * cachet restoring the same output): what is found there later is the
	 * step's output only while it still matches. */
	TRACE_FINAL,
	/* The step read a path's extended attributes (getxattr, listxattr and
	 * their l-, f- and -at forms): keyed by all of them, as they are at
	 * the end of the run. TRACE_F_NOFOLLOW for the l- forms. */
	TRACE_XATTR,
	/* The step asked the kernel for a fact of its process that is not a
	 * file: `path` is the fact's name (TRACE_FACT_*), not a path. Its
	 * value is the caller's (cachet's) at evaluation, which the step
	 * inherited: the host name, ids, CPU set and resource limits. */
	TRACE_FACT,
};

/* The names of TRACE_FACT events. */
#define TRACE_FACT_UNAME  "uname"   /* uname(): host name, kernel version... */
#define TRACE_FACT_UID    "uid"     /* real, effective, saved user id */
#define TRACE_FACT_GID    "gid"     /* real, effective, saved group id */
#define TRACE_FACT_GROUPS "groups"  /* supplementary groups */
#define TRACE_FACT_CPUS   "cpu set" /* sched_getaffinity */
#define TRACE_FACT_RLIMIT "rlimit:" /* + the resource's number: its limits */
#define TRACE_FACT_STDIN  "stdin"   /* what stdin is, read while /dev/null */

/* Flags that shape a lookup, as the step made it. */
enum {
	TRACE_F_NOFOLLOW = 1 << 0, /* O_NOFOLLOW, AT_SYMLINK_NOFOLLOW, lstat, RESOLVE_NO_SYMLINKS */
	TRACE_F_DIRECTORY = 1 << 1, /* O_DIRECTORY */
	TRACE_F_EXECUTE = 1 << 2,   /* access(X_OK) / faccessat(X_OK) */
	TRACE_F_WRITE = 1 << 3,     /* the open asked for write access */
	TRACE_F_LINKED = 1 << 4,    /* TRACE_READ of a hard link's source: the step
	                             * gave the file another name (its ctime moves) */
	/* TRACE_TOUCH of a call that fails where the path exists: an open with
	 * O_CREAT|O_EXCL, link's new name. A step that made a path so, without
	 * a probe, would fail where it is there (Python's open(f, "x"), `ln`).
	 * Not rename with RENAME_NOREPLACE: mv tries it first and, on EEXIST,
	 * replaces the target, as mv -n does not; every `mv tmp out` would run
	 * once more where out exists. */
	TRACE_F_EXCLUSIVE = 1 << 5,
};

struct trace_event {
	enum trace_event_kind kind;
	unsigned flags;    /* TRACE_F_* */
	int err;           /* TRACE_PROBE, TRACE_READLINK, TRACE_FINAL: 0 or errno */
	pid_t pid;         /* the tracee that made the call (for diagnostics) */
	char *path;        /* owned by the event */
	struct file_id id; /* TRACE_READ, TRACE_EXEC, TRACE_FINAL */
	/* TRACE_TOUCH only: the path before the step changed it. */
	int pre_exists;        /* lstat succeeded */
	struct file_id pre_id; /* lstat of the path, when pre_exists */
	/* Set when the step had read this path (TRACE_READ) before this first
	 * change and it was a regular file: the digest of its content then. */
	int has_pre_digest;
	struct digest pre_digest;
	/* What the step's lookup found, where src/key keys more than its
	 * errno and must check that the value still holds at the end:
	 *   TRACE_PROBE of a stat or an open that found the path: `id` (of
	 *     which type, permission bits and a regular file's size are keyed);
	 *   TRACE_READLINK with err 0: `seen`, the digest of the target.
	 * An access() probe has none: only existence is its outcome. Taken by
	 * the tracer's own lookup at the call's entry, or reported by the step's
	 * own call (preload fast path). */
	int has_seen;
	struct digest seen;
	/* The step's own call (preload fast path) returned something other
	 * than what the tracer then found: the value the step saw is not
	 * known, and src/key does not store the run. */
	int seen_unknown;
	/* TRACE_LIST only (may be NULL): owned by the event. */
	struct trace_listing *listing;
};

/* The entries the step's getdents calls returned for one directory path.
 * A view is one complete pass over a directory stream: from offset 0 (a
 * fresh open, rewinddir or lseek to 0) through every call up to the one
 * that returned 0 (the end), whichever process or thread made each call.
 * Views are kept once each (identical passes are one view). */
struct trace_listing {
	/* The distinct complete views: each `len` bytes of entries sorted by
	 * name, one d_type byte then the NUL-terminated name (as
	 * observe_value_detail's detail), "." and ".." left out. */
	struct trace_dir_view {
		char *entries;
		size_t len;
	} * views;
	size_t nviews;
	/* Some read did not belong to a complete pass (the step stopped
	 * before the end, seeked, or a pass outgrew the tracer's memory bound):
	 * what it saw is not known exactly. */
	int partial;
	/* The directory's fingerprint at the entry of the step's first
	 * getdents of it (has_first_id when it could be taken). */
	int has_first_id;
	struct file_id first_id;
};

void trace_listing_free(struct trace_listing *l);

struct trace_spec {
	const char *file; /* executable to run (already resolved) */
	char *const *argv;
	char *const *envp;
	/* The child's standard descriptors. Every other descriptor is closed in
	 * the child, signal dispositions are reset to default, mask emptied. */
	int stdin_fd, stdout_fd, stderr_fd;
	/* Roots whose accesses are not recorded (the private TMPDIR among them);
	 * NULL-terminated, may be NULL. /proc, /sys and /dev are always ignored. */
	const char *const *ignore_roots;
	/* stdin is not a regular file (a pipe, socket, terminal, /dev/null):
	 * a read of fd 0 while it still refers to that file makes the step
	 * uncacheable, "reads stdin stream" ("duplicates stdin stream" for a
	 * copy made with dup). /dev/null reads the same every time: its read,
	 * copy or open through /dev/stdin is a TRACE_FACT_STDIN instead. */
	int stdin_is_stream;

	/* Variations of the conditions a step runs under, for `cachet repro`.
	 * Zero (the default) changes nothing. They apply to the step's process
	 * tree only, never to the tracer. */
	int dirorder;           /* TRACE_DIRORDER_*: reorders what getdents returns */
	unsigned dirorder_seed; /* TRACE_DIRORDER_SHUFFLE: the shuffle's seed */
	int aslr;               /* 1: set ADDR_NO_RANDOMIZE in the child's personality;
	                         * -1: clear it (randomise); 0: inherit */
	int max_cpus;           /* > 0: the child's affinity is cut to this many CPUs */
	int set_umask;          /* the child's umask is `umask` ... */
	unsigned umask;         /* ... instead of the caller's */
	int uname26;            /* personality UNAME26: uname's release reads 2.6.x */
	/* TRACE_NS_* bits: the child unshares these namespaces before exec.
	 * TRACE_NS_USER: it runs as ns_uid/ns_gid, mapped to the caller's ids;
	 * TRACE_NS_UTS: with hostname and domainname (a caller that is not root
	 * gets a user namespace too, mapping its own ids, to be allowed). */
	unsigned namespaces;
	unsigned ns_uid, ns_gid;
	const char *hostname, *domainname;

	/* Called in the tracer at the entry of the step's first change to a
	 * path (when its TRACE_TOUCH is made), before the kernel runs the call,
	 * so the path still holds its state from before: `cachet repro` saves
	 * it there. Called again, with TRACE_CHANGE_MOVES, whenever a later
	 * rename moves the path away (its content survives under another
	 * name). It runs on the tracer's thread while the tracee waits: it
	 * must not wait for the step. NULL: no callback. */
	void (*before_change)(void *ctx, const char *path, unsigned how);
	void *before_change_ctx;

	/* Called in the tracer as the step first reads or executes a regular
	 * file of at least on_input_min_size bytes (when its TRACE_READ or
	 * TRACE_EXEC is made), with its size, so that the caller can hash it
	 * while the step runs. On the tracer's thread while the tracee waits:
	 * it must only hand the path on. NULL: no callback. */
	void (*on_input)(void *ctx, const char *path, uint64_t size);
	void *on_input_ctx;
	uint64_t on_input_min_size;

	/* Called in the tracer at the entry of each write to the step's
	 * descriptor 1 or 2 (write, writev, pwrite*, sendmsg, sendfile,
	 * splice, tee, copy_file_range, vmsplice), before the kernel runs
	 * it, whatever file the descriptor holds by then: the caller takes in
	 * what the stdout and stderr it gave the step hold already, so that
	 * it sees the step's writes to them in the order they were made. A
	 * copy of them at another number is not watched. On the tracer's
	 * thread while the tracee waits. NULL: no callback (and no stops). */
	void (*on_stream_write)(void *ctx);
	void *on_stream_write_ctx;

	/* The preload fast path (src/trace/ring.h), which spares most stops of
	 * dynamically linked programs: NULL looks for libcachet-preload.so
	 * beside the running binary, then in ../lib/cachet/; "" turns it off;
	 * anything else is the library's path. The step then sees LD_PRELOAD,
	 * CACHET_TRACE_RING and ASAN_OPTIONS set. */
	const char *preload;

	/* Descriptors above 2 the step inherits (sorted, distinct; at most
	 * TRACE_MAX_WATCHED_FDS): kept open in the child, and a read or write
	 * of one (by any process of the tree, while the descriptor still
	 * refers to the file it was given) or a copy of one made with dup
	 * makes the step uncacheable ("uses inherited descriptor"). Every
	 * other descriptor above 2 is closed in the child. */
	const int *inherited_fds;
	size_t ninherited_fds;
	/* make's jobserver (MAKEFLAGS --jobserver-auth): its descriptors are
	 * kept open and not watched (tokens are not data), and an open of its
	 * FIFO (NULL: none) is not a read of a FIFO. */
	const int *jobserver_fds;
	size_t njobserver_fds;
	const char *jobserver_fifo;
};

/* trace_spec.namespaces */
enum {
	TRACE_NS_USER = 1 << 0,
	TRACE_NS_UTS = 1 << 1,
};

/* Makes the calling process enter spec's namespaces as the step's child
 * does (async-signal-safe): for a forked probe of whether they may be
 * created here. -1 with errno when not. */
int trace_enter_namespaces(const struct trace_spec *spec);
#define TRACE_MAX_WATCHED_FDS 16

/* trace_spec.dirorder. The reordering happens within the entries of one
 * getdents call (a directory with more entries than the caller's buffer
 * holds is reordered in chunks), at its exit stop (taken only when
 * dirorder is set), written back into the tracee's buffer. Every record of a reordered buffer gets
 * the d_off of the buffer's last record in kernel order: the position the next call continues from,
 * so that a telldir/seekdir anywhere in the chunk never returns an entry twice (it may skip the
 * rest of that chunk). */
enum {
	TRACE_DIRORDER_NONE = 0,
	TRACE_DIRORDER_REVERSE = 1,
	TRACE_DIRORDER_SHUFFLE = 2,
};

/* trace_spec.before_change `how`. */
enum {
	TRACE_CHANGE_KEEPS = 1 << 0, /* the call keeps the old bytes (append, chmod, rename) */
	TRACE_CHANGE_MOVES = 1 << 1, /* a rename moves the path away with its content */
};

struct trace_result {
	int status;     /* wait status of the main process */
	int exec_errno; /* nonzero when the command could not be executed */
	/* NULL, or why the run cannot be cached: a static string such as
	 * "network connection", "new namespace", "ptrace by the step",
	 * "foreign seccomp filter", "setuid executable", "x32 syscall",
	 * "32-bit syscall", "process left running", "reads stdin stream",
	 * "mount", "chroot". The first reason found wins. */
	const char *uncacheable;
	struct trace_event *events; /* in syscall order */
	size_t nevents;
	size_t nstops;      /* seccomp stops taken, for diagnostics and benchmarks */
	size_t nexit_stops; /* syscall-exit stops taken, likewise */
	size_t nrecords;    /* calls the preload library reported instead, repeats left out */
	size_t nring;       /* records the ring carried, repeats included */
};

/* Runs spec under the tracer and waits for the whole process tree to end.
 * Returns 0 when the command ran (whatever its status), -1 if tracing could
 * not be set up at all (ptrace or seccomp not permitted, fork failed): then
 * no child is left running and the caller may run the command untraced.
 * It waits with waitpid(-1, __WALL): the caller must not have other
 * children that it waits for meanwhile (they would be reaped here), nor
 * ignore SIGCHLD. Call it from one thread; the tracer thread's CPU affinity
 * is changed during the run and restored afterwards. */
int trace_run(const struct trace_spec *spec, struct trace_result *out, struct error *e);

void trace_result_free(struct trace_result *r);

/* 1 when this process is itself being traced (TracerPid in /proc/self/status
 * is not 0): a nested cachet must run its command directly. */
int trace_self_is_traced(void);

#endif
