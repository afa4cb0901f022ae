/*
 * libcachet-audit.so: the dynamic loader's library search, without its
 * stops (rtld-audit(7), LD_AUDIT).
 *
 * Before any program code runs, the loader looks for each library in every
 * directory of LD_LIBRARY_PATH, RUNPATH and the defaults, under each
 * hardware-capability subdirectory: nvcc's children, run with an
 * LD_LIBRARY_PATH that names two directories and the cwd, open some 1,100
 * paths that do not exist per compile. Those opens are the loader's own
 * syscalls, which no preload library can interpose, and each one stopped.
 *
 * The loader asks an audit library about each path it is about to try
 * (la_objsearch). This one looks the path up from the trusted page, with a
 * record in the tracer's ring (so the lookup is an observation like any
 * other), and when nothing is there gives the loader the empty name on the
 * trusted page instead (RING_EMPTY_NAME), whose open fails with ENOENT
 * without a stop: what the loader's own open of the path would have found.
 * Not NULL ("skip"): the loader then reads an errno that no call of this
 * search set, and one other than ENOENT (0, after a library it loaded)
 * makes it abandon the rest of the list, so a RUNPATH of two directories
 * never reaches the second. A path that exists goes to the loader
 * unchanged, and its open stops as before.
 *
 * It runs inside the loader, before libc: it calls no libc (ring_client.h)
 * and reads its environment where the loader's call of its constructor
 * points, or else from /proc/self/environ, through the trusted page (an open that can change
 * nothing, and the tracer's own business: the environment is keyed already). Without the tracer's
 * ring there it declines to be loaded (la_version returns 0), silently.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>

#include "preload/audit_tls.h"
#include "preload/ring_client.h"

#define EXPORT __attribute__((visibility("default")))

/* The compiler may call these for struct copies and loops, and there is no
 * libc here to provide them. */
__attribute__((visibility("hidden"))) void *memcpy(void *to, const void *from, size_t n);
__attribute__((visibility("hidden"))) void *memset(void *to, int c, size_t n);

void *memcpy(void *to, const void *from, size_t n)
{
	rc_copy(to, from, n);
	return to;
}

void *memset(void *to, int c, size_t n)
{
	unsigned char *d = to;
	for (size_t i = 0; i < n; i++)
		d[i] = (unsigned char)c;
	return to;
}

static struct ring *ring;
/* The trusted page was mapped here, by this library: its RING_EMPTY_NAME
 * byte is the 0 of a fresh page. */
static int empty_name_ok;

/* The environment the loader passes to this library's constructor, as
 * to any object's (glibc runs the init functions of an audit module with
 * argc, argv and envp when it opens it, before it asks la_version): its
 * own pointer, the block on the initial stack. NULL when no constructor
 * ran, and then the environment comes from /proc. */
static char *const *initial_env;

__attribute__((constructor)) static void keep_env(int argc, char **argv, char **envp)
{
	(void)argc;
	(void)argv;
	initial_env = envp;
}

/* value (cap bytes) := what follows key in entry, when entry starts with
 * it: 0, or -1 (another name, or a value too long to be the tracer's,
 * which rc_map_ring would refuse as any foreign one). */
static int take_value(const char *entry, const char *key, char *value, size_t cap)
{
	size_t i = 0;
	for (; key[i]; i++)
		if (entry[i] != key[i])
			return -1;
	size_t got = 0;
	for (; entry[i + got]; got++) {
		if (got + 1 >= cap)
			return -1;
		value[got] = entry[i + got];
	}
	value[got] = '\0';
	return got > 0 ? 0 : -1;
}

/* RING_ENV's value from the environment the constructor kept, as
 * ring_env; -2 when none was kept. The same strings as /proc/self/environ
 * shows (the block between the kernel's env_start and env_end), read in
 * place: an open, a read of the whole block and a close fewer in every
 * program the step starts. The first entry that names it counts, as in
 * the /proc scan (the tracer's step_env leaves exactly one). */
static int ring_env_kept(char *value, size_t cap)
{
	if (!initial_env)
		return -2;
	static const char key[] = RING_ENV "=";
	for (char *const *e = initial_env; *e; e++)
		if (take_value(*e, key, value, cap) == 0)
			return 0;
	return -1;
}

/* The value of RING_ENV in this process's environment, into value (cap
 * bytes): from the environment kept, else read from /proc/self/environ as it
 * streams by (the loader keeps its own pointer to the environment where
 * only libc or its private symbols lead). 0, or -1 when it is not there.
 * The trusted page must be mapped. */
static int ring_env(char *value, size_t cap)
{
	int kept = ring_env_kept(value, cap);
	if (kept != -2)
		return kept;
	static const char key[] = RING_ENV "=";
	long fd = rc_safe_syscall(SYS_openat, AT_FDCWD, (long)"/proc/self/environ",
	                          O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	char chunk[4096];
	size_t at = 0;    /* bytes of the current entry seen */
	int matching = 1; /* the current entry still begins as key does */
	size_t got = 0;   /* bytes of the value taken */
	int found = -1;
	long n;
	while (found < 0 &&
	       (n = rc_syscall(SYS_read, fd, (long)chunk, sizeof chunk, 0, 0, 0)) > 0) {
		for (long i = 0; i < n && found < 0; i++) {
			char c = chunk[i];
			if (matching && at < sizeof key - 1) {
				matching = c == key[at];
			} else if (matching) {
				if (c == '\0')
					found = got > 0 ? 0 : -1;
				else if (got + 1 < cap)
					value[got++] = c;
				else
					matching = 0; /* too long to be the tracer's */
			}
			at = c == '\0' ? 0 : at + 1;
			if (c == '\0')
				matching = 1;
		}
	}
	rc_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
	if (found == 0)
		value[got] = '\0';
	return found;
}

EXPORT unsigned int la_version(unsigned int version)
{
	char where[256];
	int mapped = rc_map_page(NULL);
	if (mapped < 0)
		return 0;
	if (ring_env(where, sizeof where) < 0 || !(ring = rc_map_ring(where))) {
		if (mapped)
			rc_syscall(SYS_munmap, (long)RING_SAFE_PAGE, (long)RING_SAFE_PAGE_SIZE, 0,
			           0, 0, 0);
		return 0;
	}
	/* Unpublished, the preload library maps the ring again (a stop where
	 * it is a file). */
	rc_page_publish(ring);
	empty_name_ok = mapped == 1;
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

/* The loader searches for a bare soname (no '/') in its cache too: the
 * tracer keys what the cache maps it to (ldcache:NAME), and only then
 * drops the bytes of the loader's own read of the cache from the key. When
 * the ring is full, this thread reads the cache itself, with a stop, from
 * code outside the loader: the cache is then keyed by its bytes, as
 * without this library. */
static void soname_search(const char *name)
{
	for (const char *c = name; *c; c++)
		if (*c == '/')
			return;
	uint64_t seq;
	/* The thread's id by the syscall, never a copy: the tracer takes the
	 * loader of exactly this thread to have reported its searches. */
	struct ring_slot *s =
	    rc_record(ring, rc_gettid(), RING_NR_SONAME_SEARCH, 0, 0, 0, 0, name, &seq);
	if (s) {
		rc_done(s, seq, 0);
		return;
	}
	long fd = rc_syscall(SYS_openat, AT_FDCWD, (long)"/etc/ld.so.cache", O_RDONLY | O_CLOEXEC,
	                     0, 0, 0);
	if (fd >= 0)
		rc_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
}

EXPORT char *la_objsearch(const char *name, uintptr_t *cookie, unsigned int flag)
{
	(void)cookie;
	if (ring && flag == LA_SER_ORIG && name && name[0])
		soname_search(name);
	/* The name as the program asked for it (a bare soname, or a path the
	 * loader opens as it is): not one of the search's guesses. */
	if (!ring || flag == LA_SER_ORIG || !name || !name[0])
		return (char *)name;
	char buf[RING_STR];
	const char *p = rc_absolute(name, buf);
	if (!p)
		return (char *)name;
	struct stat st;
	long rv = rc_safe_syscall(SYS_newfstatat, AT_FDCWD, (long)p, (long)&st, 0);
	/* A path where something is goes to the loader, whose open records
	 * it (and sees it vanish, if it does). Nothing there is what the
	 * loader's open would have found too: skipped, and recorded as the
	 * lookup it is, with its result, so that a library put there later
	 * changes the key. Recorded after the lookup: no other call of this
	 * thread comes between the two. A full ring leaves it to the loader. */
	if (!empty_name_ok || (rv != -ENOENT && rv != -ENOTDIR))
		return (char *)name;
	uint64_t seq;
	struct ring_slot *s =
	    rc_record(ring, rc_gettid(), SYS_newfstatat, AT_FDCWD, (long)p, 0, 0, p, &seq);
	if (!s)
		return (char *)name;
	rc_done(s, seq, rv);
	return (char *)RING_EMPTY_NAME;
}

EXPORT unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	(void)cookie;
	audit_tls_object(map, lmid);
	return 0; /* no symbol bindings to audit */
}

EXPORT void la_activity(uintptr_t *cookie, unsigned int flag)
{
	(void)cookie;
	if (flag == LA_ACT_CONSISTENT)
		audit_tls_started();
}
