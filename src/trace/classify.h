/*
 * Pure classification of syscall arguments: what kind of event a call with
 * these flags produces. No I/O and no tracee state, so that every table here
 * is unit-tested (tests/unit/test_trace_classify.c). BuildXL's write test
 * `oflag & O_ACCMODE == O_WRONLY` was always 0 for years because nothing
 * tested it; these functions exist so that cannot happen here.
 */
#ifndef CACHET_TRACE_CLASSIFY_H
#define CACHET_TRACE_CLASSIFY_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

enum open_kind {
	OPEN_KIND_READ,    /* no write access, no O_TRUNC: outcome decided at exit */
	OPEN_KIND_PATH,    /* O_PATH: a lookup only, the content is not read */
	OPEN_KIND_CREATE,  /* O_CREAT without write access or O_TRUNC: a change only if absent */
	OPEN_KIND_WRITE,   /* write access or O_TRUNC: a change, recorded at entry */
	OPEN_KIND_TMPFILE, /* O_TMPFILE: an unnamed file; the path is a directory lookup */
};

struct open_class {
	enum open_kind kind;
	unsigned flags;    /* TRACE_F_* for the event */
	int follow_last;   /* the kernel follows a symlink in the final component */
	int keeps_content; /* OPEN_KIND_WRITE without O_TRUNC: the old bytes survive */
	int exclusive;     /* O_CREAT|O_EXCL: fails where the path exists */
};

/* oflags as passed to open/openat (or open_how.flags), resolve = openat2's
 * open_how.resolve (0 for the others). */
void classify_open(uint64_t oflags, uint64_t resolve, struct open_class *out);

/* TRACE_F_NOFOLLOW when at_flags has AT_SYMLINK_NOFOLLOW. */
unsigned classify_at_flags(uint64_t at_flags);

/* 1 when a *at call operates on dirfd itself rather than looking up a name:
 * a NULL path (utimensat, and newfstatat/statx since Linux 6.11 with
 * AT_EMPTY_PATH), or an empty path with AT_EMPTY_PATH. path_is_null and
 * path_is_empty describe the string the tracee passed. */
int classify_is_fd_op(uint64_t at_flags, int path_is_null, int path_is_empty);

/* TRACE_F_EXECUTE when an access/faccessat mode asks for X_OK. */
unsigned classify_access_mode(uint64_t mode);

/* renameat2: which of the two names keep bytes that existed before the call
 * (their pre-state is then an input of the step). Both names are always
 * touched. */
struct rename_class {
	int old_keeps; /* the source's content lives on under the new name */
	int new_keeps; /* RENAME_EXCHANGE: the target's content lives on too */
};
void classify_rename(uint64_t flags, struct rename_class *out);

/* utimensat: 1 when the call sets mtime to an explicit value. times is the
 * tracee's array, NULL when it passed NULL ("now"). */
int classify_utimens_sets_mtime(const struct timespec *times);

/* clone/clone3/unshare flags: 1 when any CLONE_NEW* bit is set. For clone()
 * the low byte is the exit signal, so CLONE_NEWTIME (0x80) is not a flag
 * there: pass is_clone = 1. */
int classify_new_namespace(uint64_t flags, int is_clone);

/* Syscall return values that mean "interrupted, will be restarted"
 * (-ERESTARTSYS and friends): the restarted call stops again at entry, so
 * this outcome is not one the step saw. */
int classify_is_restart(int64_t rval);

/* Mode bits of an executed file that make the run uncacheable: setuid, or
 * setgid with group execute (setgid without it means mandatory locking). */
int classify_setuid_mode(uint32_t mode);

/* A socket address family the step connects to. */
enum net_class {
	NET_LOCAL,  /* netlink, packet, ...: not a connection to another host */
	NET_REMOTE, /* AF_INET, AF_INET6, abstract AF_UNIX */
	NET_UNIX,   /* AF_UNIX with a path: remote unless under an ignored root */
};
/* addr/len: the bytes of the sockaddr as read from the tracee. */
enum net_class classify_sockaddr(const void *addr, size_t len);

/* Descriptor and cwd magic links named by path text. Recognises, for a
 * tidied absolute path: /proc/self/fd/N, /proc/thread-self/fd/N,
 * /proc/PID/fd/N, /proc/PID/task/TID/fd/N, /dev/fd/N, /dev/stdin, /dev/stdout,
 * /dev/stderr (fd 0-2), and /proc/{self,thread-self,PID,PID/task/TID}/cwd
 * and .../root, each optionally followed by more components. */
enum magic_kind { MAGIC_NONE, MAGIC_FD, MAGIC_CWD, MAGIC_ROOT };
struct magic_ref {
	enum magic_kind kind;
	pid_t pid;        /* 0 for self / thread-self / /dev/... */
	int fd;           /* MAGIC_FD */
	const char *rest; /* points into path: "" or "/more/components" */
};
void classify_magic_path(const char *path, struct magic_ref *out);

#endif
