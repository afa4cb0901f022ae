/*
 * libcachet-preload.so: the preload fast path of the tracer (see
 * src/trace/ring.h for the design and why it is sound).
 *
 * Loaded into every dynamically linked program of a traced step through
 * LD_PRELOAD. For lookups that only look and name an absolute path, or a
 * path relative to the cwd (which it makes absolute), it appends a raw
 * syscall record to the tracer's ring and makes the syscall from the
 * trusted page, which the seccomp filter lets through without a stop; it
 * also turns fstat() into the NULL-path form the filter allows outright. Everything else goes to
 * libc unchanged, and libc's syscalls stop as before.
 *
 * It is not a second classifier: it never decides what a call means, only
 * whether the call may skip its stop (it cannot change anything). It keeps
 * no state beyond the two mappings, takes no locks, and never allocates
 * except in realpath(NULL buffer), as libc's does.
 *
 * Built without sanitizers or profiling (it runs inside arbitrary
 * programs), with -mno-red-zone because it calls the trusted page from
 * inline assembly.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/audit_tls.h"
#include "preload/ring_client.h"

#define EXPORT __attribute__((visibility("default")))

static struct ring *ring;
static int active;

/* ---- the ring ------------------------------------------------------- */

/* Sets errno the way libc does. */
static long ret_errno(long r)
{
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* The calling thread's id, kept from its first record on: a gettid per
 * record was 1,250 syscalls in a cc1 run. A thread starts with 0 here, and
 * glibc's fork runs forget_tid in the child. A copy that names another
 * thread (the child of vfork, or of a raw clone, shares or copies the
 * parent's) makes the tracer wait longer for an unfinished record, never
 * take a wrong one (ring.c, drain_pending), and misnames the event's pid,
 * which is for diagnostics only. Initial-exec: the dynamic models may
 * allocate a thread's copy on its first use, with malloc, which a vfork
 * child (execvp's search runs in one) must not call; these 4 bytes count
 * against the static TLS an audited program has room for (audit_tls.c). */
static __thread int32_t my_tid __attribute__((tls_model("initial-exec")));

static int32_t tid_of_caller(void)
{
	int32_t tid = my_tid;
	if (!tid)
		my_tid = tid = rc_gettid();
	return tid;
}

static void forget_tid(void)
{
	my_tid = 0;
}

/* rc_record, when this process has the fast path. */
static struct ring_slot *record(int nr, long a0, long a1, long a2, long a3, const char *path,
                                uint64_t *seq)
{
	return active ? rc_record(ring, tid_of_caller(), nr, a0, a1, a2, a3, path, seq) : NULL;
}

/* libc's execvpe, resolved at load: execvp often runs in a vfork child,
 * which shares the parent's memory and must not take the loader's lock. */
static int (*real_execvpe)(const char *, char *const[], char *const[]);

/* A program that the audit library executed again for its static TLS
 * (audit_tls.h) gets back the GLIBC_TUNABLES it was given, before its own
 * code runs and before anything it starts inherits the raised one. */
static void restore_tunables(void)
{
	const char *was = getenv(TLS_TUNABLES_WAS_ENV);
	if (!was)
		return;
	if (was[0] == '1')
		setenv("GLIBC_TUNABLES", was + 1, 1);
	else
		unsetenv("GLIBC_TUNABLES");
	unsetenv(TLS_TUNABLES_WAS_ENV);
}

__attribute__((constructor)) static void preload_init(void)
{
	restore_tunables();
	real_execvpe = (__typeof__(real_execvpe))dlsym(RTLD_NEXT, "execvpe");
	const char *where = getenv(RING_ENV);
	struct ring *shared = NULL;
	if (!where || !*where || rc_map_page(&shared) < 0)
		return;
	ring = shared ? shared : rc_map_ring(where);
	active = ring != NULL;
	if (active)
		pthread_atfork(NULL, NULL, forget_tid);
}

/* ---- libc's own functions, for everything not fast-pathed ------------- */

/* libc's definition of the function being interposed (same type). */
#define REAL(name)                                                                                 \
	static __typeof__(&name) real_##name;                                                      \
	if (!real_##name)                                                                          \
		real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name);

/* An open that cannot change anything: the filter lets exactly these
 * through from the trusted page (whoever calls it). */
static int look_only(int flags)
{
	return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | __O_TMPFILE)) == 0;
}

/* A path through a process's descriptors, cwd or root (/proc/self/fd/N,
 * /dev/fd/N, /proc/PID/cwd/...): the tracer can only tell where it leads
 * while the process and its descriptor are there, which a record drained
 * later need not find. Such calls stop. */
static int is_component(const char *s, const char *name)
{
	size_t n = strlen(name);
	return strncmp(s, name, n) == 0 && (s[n] == '/' || s[n] == '\0');
}

static int names_through_process(const char *p)
{
	if (strncmp(p, "/dev/fd/", 8) == 0 || strncmp(p, "/dev/std", 8) == 0)
		return 1;
	if (strncmp(p, "/proc/", 6) != 0)
		return 0;
	/* /proc/{self,thread-self,PID}/{fd,cwd,root,task}...: a superset of
	 * what the tracer maps (classify_magic_path); other /proc files are
	 * ignored there, and need no stop. */
	const char *s = strchr(p + 6, '/');
	if (!s)
		return 0;
	s++;
	return is_component(s, "fd") || is_component(s, "cwd") || is_component(s, "root") ||
	       is_component(s, "task");
}

/* The path a fast-pathed call looks up (rc_absolute): NULL when the call
 * takes the ordinary path, as a path relative to another directory does.
 *
 * Where the relative lookup could differ (a directory above the cwd that
 * is not searchable), the absolute one fails with EACCES and is retried the
 * ordinary way: the failed lookup stays recorded, one input too many. */
static const char *fast_path(int dirfd, const char *path, char *buf)
{
	if (!path || !path[0] || !active || (path[0] != '/' && dirfd != AT_FDCWD))
		return NULL;
	const char *p = rc_absolute(path, buf);
	return p && !names_through_process(p) ? p : NULL;
}

/* A fast-pathed call's result, or -2 to retry it the ordinary way: a
 * relative path whose absolute form was refused (see fast_path). */
static long fast_result(long r, const char *path, const char *looked_up)
{
	if (r == -EACCES && looked_up != path)
		return -2;
	return ret_errno(r);
}

static int fast_open(int dirfd, const char *path, int flags, mode_t mode)
{
	char buf[RING_STR];
	uint64_t seq;
	struct ring_slot *s;
	const char *p = fast_path(dirfd, path, buf);
	if (!p || !(s = record(SYS_openat, AT_FDCWD, (long)p, flags, mode, p, &seq)))
		return -2;
	long rv = rc_safe_syscall(SYS_openat, AT_FDCWD, (long)p, flags, mode);
	/* The file the step got, as the tracer's exit stop would fstat it:
	 * fstat is not traced, so this costs no stop. */
	struct stat st;
	if (rv >= 0 && syscall(SYS_fstat, (int)rv, &st) == 0)
		rc_res_stat(&s->res, &st);
	return (int)fast_result(rc_done(s, seq, rv), path, p);
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & (O_CREAT | __O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

#define OPEN_BODY(dirfd, real_call)                                                                \
	if (look_only(flags)) {                                                                    \
		int r = fast_open(dirfd, path, flags, mode);                                       \
		if (r != -2)                                                                       \
			return r;                                                                  \
	}                                                                                          \
	return real_call;

EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	REAL(open)
	OPEN_BODY(AT_FDCWD, real_open(path, flags, mode))
}

EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	REAL(open64)
	OPEN_BODY(AT_FDCWD, real_open64(path, flags, mode))
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	REAL(openat)
	OPEN_BODY(dirfd, real_openat(dirfd, path, flags, mode))
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	REAL(openat64)
	OPEN_BODY(dirfd, real_openat64(dirfd, path, flags, mode))
}

/* _FORTIFY_SOURCE's checked variants (no mode: they refuse O_CREAT). */
EXPORT int __open_2(const char *path, int flags)
{
	mode_t mode = 0;
	REAL(__open_2)
	OPEN_BODY(AT_FDCWD, real___open_2(path, flags))
}

EXPORT int __open64_2(const char *path, int flags)
{
	mode_t mode = 0;
	REAL(__open64_2)
	OPEN_BODY(AT_FDCWD, real___open64_2(path, flags))
}

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	mode_t mode = 0;
	REAL(__openat_2)
	OPEN_BODY(dirfd, real___openat_2(dirfd, path, flags))
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	mode_t mode = 0;
	REAL(__openat64_2)
	OPEN_BODY(dirfd, real___openat64_2(dirfd, path, flags))
}

/* ---- stat ------------------------------------------------------------ */

/* newfstatat of a path fast_path takes: -2 when not fast-pathed. */
static int fast_stat(int dirfd, const char *path, struct stat *st, int flags)
{
	char buf[RING_STR];
	uint64_t seq;
	struct ring_slot *s;
	const char *p = fast_path(dirfd, path, buf);
	if (!p || !(s = record(SYS_newfstatat, AT_FDCWD, (long)p, (long)st, flags, p, &seq)))
		return -2;
	long rv = rc_safe_syscall(SYS_newfstatat, AT_FDCWD, (long)p, (long)st, flags);
	if (rv == 0)
		rc_res_stat(&s->res, st);
	return (int)fast_result(rc_done(s, seq, rv), path, p);
}

/* fstat(fd) as newfstatat(fd, NULL, AT_EMPTY_PATH), which the filter lets
 * through outright (libc passes "", which it must stop for: the filter
 * cannot read strings). Kernels before 6.11 refuse NULL: then libc. */
static int fast_fstat(int fd, struct stat *st)
{
	if (!active)
		return -2;
	long r = syscall(SYS_newfstatat, fd, NULL, st, AT_EMPTY_PATH);
	if (r < 0 && errno == EFAULT)
		return -2;
	return (int)r;
}

EXPORT int stat(const char *path, struct stat *st)
{
	int r = fast_stat(AT_FDCWD, path, st, 0);
	if (r != -2)
		return r;
	REAL(stat)
	return real_stat(path, st);
}

EXPORT int stat64(const char *path, struct stat64 *st)
{
	int r = fast_stat(AT_FDCWD, path, (struct stat *)st, 0);
	if (r != -2)
		return r;
	REAL(stat64)
	return real_stat64(path, st);
}

EXPORT int lstat(const char *path, struct stat *st)
{
	int r = fast_stat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
	if (r != -2)
		return r;
	REAL(lstat)
	return real_lstat(path, st);
}

EXPORT int lstat64(const char *path, struct stat64 *st)
{
	int r = fast_stat(AT_FDCWD, path, (struct stat *)st, AT_SYMLINK_NOFOLLOW);
	if (r != -2)
		return r;
	REAL(lstat64)
	return real_lstat64(path, st);
}

/* fstatat as fast_stat or fast_fstat take it: -2 when neither does. */
static int fast_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	if (path && !path[0] && (flags & AT_EMPTY_PATH))
		return fast_fstat(dirfd, st);
	if (!(flags & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT)))
		return fast_stat(dirfd, path, st, flags);
	return -2;
}

EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	int r = fast_fstatat(dirfd, path, st, flags);
	if (r != -2)
		return r;
	REAL(fstatat)
	return real_fstatat(dirfd, path, st, flags);
}

EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	int r = fast_fstatat(dirfd, path, (struct stat *)st, flags);
	if (r != -2)
		return r;
	REAL(fstatat64)
	return real_fstatat64(dirfd, path, st, flags);
}

EXPORT int fstat(int fd, struct stat *st)
{
	int r = fast_fstat(fd, st);
	if (r != -2)
		return r;
	REAL(fstat)
	return real_fstat(fd, st);
}

EXPORT int fstat64(int fd, struct stat64 *st)
{
	int r = fast_fstat(fd, (struct stat *)st);
	if (r != -2)
		return r;
	REAL(fstat64)
	return real_fstat64(fd, st);
}

/* ---- the stat functions of programs built before glibc 2.33 ---------- */

/* Programs linked against an older glibc call these instead of stat and
 * friends: nvcc, cicc and cudafe++ do, 30 stops per nvcc -c. Their first
 * argument is the layout the caller expects; on x86-64 both it may pass,
 * _STAT_VER_KERNEL (0) and _STAT_VER_LINUX (1), are the kernel's struct
 * stat. Any other goes to glibc, which refuses it. */
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);

static int kernel_layout(int ver)
{
	return ver == 0 || ver == 1;
}

EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
	int r = kernel_layout(ver) ? fast_stat(AT_FDCWD, path, st, 0) : -2;
	if (r != -2)
		return r;
	REAL(__xstat)
	return real___xstat(ver, path, st);
}

EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
	int r = kernel_layout(ver) ? fast_stat(AT_FDCWD, path, (struct stat *)st, 0) : -2;
	if (r != -2)
		return r;
	REAL(__xstat64)
	return real___xstat64(ver, path, st);
}

EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
	int r = kernel_layout(ver) ? fast_stat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW) : -2;
	if (r != -2)
		return r;
	REAL(__lxstat)
	return real___lxstat(ver, path, st);
}

EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
	int r = kernel_layout(ver)
	            ? fast_stat(AT_FDCWD, path, (struct stat *)st, AT_SYMLINK_NOFOLLOW)
	            : -2;
	if (r != -2)
		return r;
	REAL(__lxstat64)
	return real___lxstat64(ver, path, st);
}

EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
	int r = kernel_layout(ver) ? fast_fstatat(dirfd, path, st, flags) : -2;
	if (r != -2)
		return r;
	REAL(__fxstatat)
	return real___fxstatat(ver, dirfd, path, st, flags);
}

EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
	int r = kernel_layout(ver) ? fast_fstatat(dirfd, path, (struct stat *)st, flags) : -2;
	if (r != -2)
		return r;
	REAL(__fxstatat64)
	return real___fxstatat64(ver, dirfd, path, st, flags);
}

/* ---- access and readlink --------------------------------------------- */

EXPORT int access(const char *path, int mode)
{
	char buf[RING_STR];
	uint64_t seq;
	struct ring_slot *s;
	const char *p = fast_path(AT_FDCWD, path, buf);
	if (p && (s = record(SYS_access, (long)p, mode, 0, 0, p, &seq))) {
		long rv = rc_done(s, seq, rc_safe_syscall(SYS_access, (long)p, mode, 0, 0));
		int r = (int)fast_result(rv, path, p);
		if (r != -2)
			return r;
	}
	REAL(access)
	return real_access(path, mode);
}

static ssize_t fast_readlink(const char *path, char *buf, size_t size)
{
	char abs[RING_STR];
	uint64_t seq;
	struct ring_slot *s;
	const char *p = fast_path(AT_FDCWD, path, abs);
	if (!p || !(s = record(SYS_readlink, (long)p, (long)buf, (long)size, 0, p, &seq)))
		return -2;
	long rv = rc_safe_syscall(SYS_readlink, (long)p, (long)buf, (long)size, 0);
	/* The target the step got, for the tracer to check its own against:
	 * most of cc1's readlinks fail (EINVAL), which costs nothing here. */
	if (rv > 0)
		s->res.hash = ring_hash(buf, (size_t)rv);
	return fast_result(rc_done(s, seq, rv), path, p);
}

EXPORT ssize_t readlink(const char *path, char *buf, size_t size)
{
	ssize_t r = fast_readlink(path, buf, size);
	if (r != -2)
		return r;
	REAL(readlink)
	return real_readlink(path, buf, size);
}

/* ---- resource limits -------------------------------------------------- */

/* A read of a limit (old_limit given) is a fact of the process, which the
 * tracer keys (rlimit:N): reported through the ring, the call made from
 * the trusted page, which the filter lets prlimit64 through from. gcc
 * reads its stack limit in every process, cc1 a few more. A call that only
 * sets a limit does not stop anyway: libc's. -2 when not fast-pathed. */
static int fast_prlimit(pid_t pid, int resource, const void *new_limit, void *old_limit)
{
	uint64_t seq;
	struct ring_slot *s;
	if (!old_limit ||
	    !(s = record(SYS_prlimit64, pid, resource, (long)new_limit, (long)old_limit, "", &seq)))
		return -2;
	long rv = rc_safe_syscall(SYS_prlimit64, pid, resource, (long)new_limit, (long)old_limit);
	return (int)ret_errno(rc_done(s, seq, rv));
}

EXPORT int getrlimit(__rlimit_resource_t resource, struct rlimit *old_limit)
{
	int r = fast_prlimit(0, (int)resource, NULL, old_limit);
	if (r != -2)
		return r;
	REAL(getrlimit)
	return real_getrlimit(resource, old_limit);
}

EXPORT int getrlimit64(__rlimit_resource_t resource, struct rlimit64 *old_limit)
{
	int r = fast_prlimit(0, (int)resource, NULL, old_limit);
	if (r != -2)
		return r;
	REAL(getrlimit64)
	return real_getrlimit64(resource, old_limit);
}

EXPORT int prlimit(pid_t pid, __rlimit_resource_t resource, const struct rlimit *new_limit,
                   struct rlimit *old_limit)
{
	int r = fast_prlimit(pid, (int)resource, new_limit, old_limit);
	if (r != -2)
		return r;
	REAL(prlimit)
	return real_prlimit(pid, resource, new_limit, old_limit);
}

EXPORT int prlimit64(pid_t pid, __rlimit_resource_t resource, const struct rlimit64 *new_limit,
                     struct rlimit64 *old_limit)
{
	int r = fast_prlimit(pid, (int)resource, new_limit, old_limit);
	if (r != -2)
		return r;
	REAL(prlimit64)
	return real_prlimit64(pid, resource, new_limit, old_limit);
}

/* ---- realpath -------------------------------------------------------- */

/* The dir_check of glibc's realpath: is dir (with "/" appended) an
 * accessible directory. faccessat2 through the trusted page, recorded as
 * the lookup it is. */
static int dir_ok(char *dir, char *end)
{
	end[0] = '/';
	end[1] = '\0';
	int ok;
	uint64_t seq;
	struct ring_slot *s =
	    record(SYS_faccessat2, AT_FDCWD, (long)dir, F_OK, AT_EACCESS, dir, &seq);
	if (s)
		ok = ret_errno(rc_done(s, seq,
		                       rc_safe_syscall(SYS_faccessat2, AT_FDCWD, (long)dir, F_OK,
		                                       AT_EACCESS))) == 0;
	else
		ok = faccessat(AT_FDCWD, dir, F_OK, AT_EACCESS) == 0;
	end[0] = '\0';
	return ok;
}

/* glibc's suffix_requires_dir_check: a rest of "/", "/." or "/.." (after
 * any number of slashes) needs the component to be a directory. */
static int suffix_needs_dir(const char *end)
{
	while (*end == '/') {
		do
			end++;
		while (*end == '/');
		switch (*end++) {
		default:
			return 0;
		case '\0':
			return 1;
		case '.':
			break;
		}
		if (!*end || (*end == '.' && (!end[1] || end[1] == '/')))
			return 1;
	}
	return 0;
}

/* Prefixes that readlink found not to be links, as keys of the ring's
 * names_gen at the time and the name. cc1 resolves every header it finds
 * with realpath, which reads each prefix as a link: about a thousand
 * readlinks a compile, of some 140 names (/usr alone 181 times). Such an
 * answer holds until a name changes, and every call of the step that can
 * change one stops, the tracer counting names_gen up before it runs: while
 * the number is the one read before the readlink, the answer is the same,
 * and the tracer has its record already. The slots are shared by the
 * process's threads and inherited by a fork, which sees the same names;
 * exec starts afresh. A key is FNV-1a over both (a false match is 2^-64,
 * as for link targets); a slot taken by another key is overwritten. */
#define NOT_LINKS      1024u
#define NOT_LINK_PROBE 4u
static uint64_t not_links[NOT_LINKS];

/* The key of path[0..len) now, or 0 where none is kept: without the ring,
 * and under /proc, /sys and /dev, whose names come and go with processes
 * and devices, not with calls of the step. */
static uint64_t not_link_key(const char *path, size_t len)
{
	if (!active || is_component(path, "/proc") || is_component(path, "/sys") ||
	    is_component(path, "/dev"))
		return 0;
	uint64_t gen = __atomic_load_n(&ring->names_gen, __ATOMIC_ACQUIRE);
	return ring_hash_more(ring_hash(&gen, sizeof gen), path, len) | 1;
}

static int known_not_link(uint64_t key)
{
	for (unsigned i = 0; key && i < NOT_LINK_PROBE; i++)
		if (__atomic_load_n(&not_links[(key + i) % NOT_LINKS], __ATOMIC_RELAXED) == key)
			return 1;
	return 0;
}

static void remember_not_link(uint64_t key)
{
	unsigned at = (unsigned)(key % NOT_LINKS);
	for (unsigned i = 0; i < NOT_LINK_PROBE; i++) {
		uint64_t was = __atomic_load_n(&not_links[(key + i) % NOT_LINKS], __ATOMIC_RELAXED);
		if (was == key)
			return;
		if (was == 0) {
			at = (unsigned)((key + i) % NOT_LINKS);
			break;
		}
	}
	__atomic_store_n(&not_links[at], key, __ATOMIC_RELAXED);
}

/* A readlink of a prefix for fast_realpath: answered from not_links when it
 * holds, else made (through the ring where it can be) and remembered when
 * it found no link. Only a call that went through the ring is remembered:
 * the others (names through /proc, too long ones) may mean another file in
 * another process or at another time. */
static ssize_t prefix_readlink(const char *path, size_t len, char *link, size_t size)
{
	uint64_t key = not_link_key(path, len);
	if (known_not_link(key)) {
		errno = EINVAL;
		return -1;
	}
	ssize_t n = fast_readlink(path, link, size);
	if (n == -2) {
		REAL(readlink)
		return real_readlink(path, link, size);
	}
	if (n < 0 && errno == EINVAL && key)
		remember_not_link(key);
	return n;
}

/* glibc's realpath (stdlib/canonicalize.c), step for step: the same
 * readlink of every prefix (a repeated one answered from not_links), the
 * same answers and errors, the partial
 * result left in `resolved` when a name is missing or unsearchable. Its readlinks are
 * libc-internal, so interposing readlink alone would miss them: cc1 makes about a thousand per
 * compile. */
static char *fast_realpath(const char *name, char *resolved)
{
	if (!name) {
		errno = EINVAL;
		return NULL;
	}
	if (!name[0]) {
		errno = ENOENT;
		return NULL;
	}
	char rname[PATH_MAX + 2];
	char link[PATH_MAX];
	char extra[2 * PATH_MAX + 2];
	char *dest;
	const char *start, *end;
	int links = 0, failed = 1;
	if (name[0] != '/') {
		if (!getcwd(rname, PATH_MAX)) {
			if (errno == ERANGE)
				errno = ENAMETOOLONG;
			dest = rname;
			goto error;
		}
		dest = rname + strlen(rname);
	} else {
		rname[0] = '/';
		dest = rname + 1;
	}
	for (start = name; *start; start = end) {
		while (*start == '/')
			start++;
		for (end = start; *end && *end != '/'; end++)
			;
		size_t len = (size_t)(end - start);
		if (len == 0)
			break;
		if (len == 1 && start[0] == '.')
			continue;
		if (len == 2 && start[0] == '.' && start[1] == '.') {
			if (dest > rname + 1)
				for (--dest; dest > rname && dest[-1] != '/'; --dest)
					;
			continue;
		}
		if (dest[-1] != '/')
			*dest++ = '/';
		if ((size_t)(dest - rname) + len >= PATH_MAX) {
			errno = ENAMETOOLONG;
			goto error;
		}
		memcpy(dest, start, len);
		dest += len;
		*dest = '\0';
		ssize_t n = prefix_readlink(rname, (size_t)(dest - rname), link, sizeof link - 1);
		if (n >= 0) {
			if (++links > 40) {
				errno = ELOOP;
				goto error;
			}
			link[n] = '\0';
			size_t rest = strlen(end);
			if ((size_t)n + rest >= sizeof extra) {
				errno = ENAMETOOLONG;
				goto error;
			}
			memmove(extra + n, end, rest + 1);
			memcpy(extra, link, (size_t)n);
			end = extra;
			if (link[0] == '/') {
				dest = rname;
				*dest++ = '/';
			} else if (dest > rname + 1) {
				for (--dest; dest > rname && dest[-1] != '/'; --dest)
					;
			}
		} else if (!(suffix_needs_dir(end) ? dir_ok(rname, dest) : errno == EINVAL)) {
			goto error;
		}
	}
	if (dest > rname + 1 && dest[-1] == '/')
		--dest;
	failed = 0;
error:
	*dest = '\0';
	if (resolved) {
		/* As glibc: the partial result only when the failure is a name
		 * that does not exist or cannot be searched. */
		if (!failed || errno == ENOENT || errno == EACCES)
			strcpy(resolved, rname);
		return failed ? NULL : resolved;
	}
	if (failed)
		return NULL;
	char *out = strdup(rname);
	if (!out)
		errno = ENOMEM;
	return out;
}

EXPORT char *realpath(const char *name, char *resolved)
{
	if (active)
		return fast_realpath(name, resolved);
	REAL(realpath)
	return real_realpath(name, resolved);
}

EXPORT char *canonicalize_file_name(const char *name)
{
	return realpath(name, NULL);
}

EXPORT char *__realpath_chk(const char *name, char *resolved, size_t resolvedlen)
{
	if (resolvedlen < PATH_MAX) {
		REAL(__realpath_chk)
		return real___realpath_chk(name, resolved, resolvedlen);
	}
	return realpath(name, resolved);
}

/* ---- exec's search of PATH ------------------------------------------- */

/* execvp's search, where the programs before the one found are absent:
 * each was a failed execve, an entry and an exit stop. Here each is a
 * fast-pathed stat (its own record: the path is absent), and the first
 * candidate that is not absent goes to execve as execvp would send it.
 * Should that execve fail, libc's search runs from the start, so that its
 * rules (EACCES, ENOEXEC's shell, errno at the end) stay its own. Returns
 * only then, or when the search is not fast-pathed. Stack only. */
static void exec_search(const char *file, char *const argv[], char *const envp[])
{
	int32_t tid = my_tid;
	const char *path = getenv("PATH");
	if (!active || !file[0] || strchr(file, '/') || !path)
		return;
	size_t flen = strlen(file);
	char cand[RING_STR];
	for (const char *p = path;;) {
		const char *end = strchrnul(p, ':');
		size_t dlen = (size_t)(end - p);
		if (dlen + 1 + flen + 1 > sizeof cand)
			return;
		/* An empty element is the cwd: the name as it is. */
		memcpy(cand, p, dlen);
		size_t at = dlen;
		if (dlen)
			cand[at++] = '/';
		memcpy(cand + at, file, flen + 1);
		struct stat st;
		int r = fast_stat(AT_FDCWD, cand, &st, 0);
		if (r == -2)
			return;
		if (r == 0 || (errno != ENOENT && errno != ENOTDIR)) {
			my_tid = tid; /* execvpe's */
			execve(cand, argv, envp);
			return;
		}
		if (!*end)
			return;
		p = end + 1;
	}
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	int saved = errno;
	/* execvp often runs in a vfork child, which shares the parent's copy
	 * of its tid: one the search takes must not stay for the parent
	 * (tid_of_caller), whether the search returns or executes. */
	int32_t tid = my_tid;
	exec_search(file, argv, envp);
	my_tid = tid;
	errno = saved;
	if (!real_execvpe) {
		errno = ENOSYS;
		return -1;
	}
	return real_execvpe(file, argv, envp);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}
