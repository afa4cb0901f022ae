/*
 * The preload fast path: what libcachet-preload.so (preload.c) and the
 * tracer (ring.c) share.
 *
 * A stop costs a round trip through the tracer, and a gcc compile makes
 * about 1,500 of them, two thirds readlinks from cc1's realpath(). The
 * preload library interposes the libc functions behind those lookups and,
 * for calls that only look (read-only opens, stat, access, readlink of an
 * absolute path, or of a relative one that it joins to the cwd first),
 * makes the syscall from one page at a fixed address that
 * the seccomp filter lets through without a stop; so too for reads of
 * resource limits, facts of the process that hold in any order with the
 * changes of files (seccomp_filter.c, block_rlimit). Before each such call it
 * appends a raw record of the syscall (number, arguments, the path) to a
 * ring in shared memory. The tracer drains the ring before it handles any
 * stop or exit and feeds each record to the same syscall_entry as a stop,
 * so there is one classifier: the preload decides only whether a call may
 * skip the stop, never what it means.
 *
 * Why deferring is sound: every call that changes a path (open for
 * writing, rename, unlink, chdir...) still stops, and the tracer drains
 * the ring before handling it, so a record always reaches the classifier
 * before any later change of the files; the fast-pathed calls carry
 * absolute paths only (a relative one is joined to the cwd, and the call
 * itself takes the joined path, so what is looked up is what is recorded),
 * so no cwd or descriptor is needed to resolve them later. What a deferred
 * call found is not looked up again when it is drained (another process
 * may have changed the file since): the library writes the call's result
 * into the record after the syscall (struct ring_result), and the
 * classifier takes the outcome from there. Anything the library does not
 * handle (static binaries, raw
 * syscalls, programs that drop LD_PRELOAD, a full ring) takes the ordinary
 * stop.
 */
#ifndef CACHET_TRACE_RING_H
#define CACHET_TRACE_RING_H

#include <stddef.h>
#include <stdint.h>

/* The page with the one syscall instruction the filter trusts. Chosen far
 * from where the kernel places programs, libraries and stacks; a process
 * where it is taken simply goes without the fast path. */
#define RING_SAFE_PAGE      0x3afe00000000ULL
#define RING_SAFE_PAGE_SIZE 4096ULL
/* A byte of the trusted page that is always 0: the empty path, which every
 * open fails with ENOENT. The audit library hands it to the loader for a
 * candidate it knows to be absent, and the filter lets an open of exactly
 * this address through without a stop: the loader then reads ENOENT, as
 * from its own open of the absent file, and goes on with its search (a
 * NULL "skip" leaves it reading a stale errno, and with one other than
 * ENOENT it abandons the rest of a RUNPATH or LD_LIBRARY_PATH list). */
#define RING_EMPTY_NAME (RING_SAFE_PAGE + 256ULL)

#define RING_MAGIC 0x33474e52u /* "RNG3": slots with results, names_gen */
/* 512-byte slots: most paths are short, and every page of the ring that a
 * compile touches is a page fault in the step and in the tracer. A longer
 * path takes the ordinary stop. 256 of them (128 KB), reused as the tracer
 * drains them: a compile touches the same 32 pages over and over. Each page
 * is allocated and zeroed in the step (2.6 us here), faulted in the tracer
 * and in each other program that touches it (1.4 us), and freed at the end;
 * a stop costs 11.6 us. A burst longer than the ring costs one stop per 256
 * records: the call that finds it full takes the ordinary path, whose stop
 * drains it. gcc -c of lparser.c (1,250 records in cc1) took 73 stops with
 * 512 slots and 75 with 256, which spares 32 pages in every process that
 * wraps the ring (98 page faults); 128 slots took 80 stops. 4,096 slots
 * gave each record fresh memory (168 pages for a small gcc compile). */
#define RING_SLOTS 256u
#define RING_STR   384u

/* A record that is no call: the audit library's report that the loader of
 * its thread is about to search for the soname in `str` (la_objsearch,
 * LA_SER_ORIG), which may take it to the loader's cache. */
#define RING_NR_SONAME_SEARCH (-2)

/* Environment of the traced step: the ring's number (RING_NONCE_DIGITS hex
 * digits and ':'), then where the ring is: RING_SHM_PREFIX and the id of a
 * System V segment, or "/proc/PID/fd/N" of the tracer's memfd where the
 * system has no segment to give. A program of the step in another IPC or
 * PID namespace (unshare, nsenter) can reach another tracer's ring by the
 * same id or path; it finds another number there and takes the ordinary
 * path, instead of reporting its calls to a tracer that is not its own
 * (whose filter would let them through unseen). */
#define RING_ENV          "CACHET_TRACE_RING"
#define RING_SHM_PREFIX   "shm:"
#define RING_NONCE_DIGITS 16

/* What the step's own call returned, written by the preload library
 * right after the syscall. The tracer classifies a record only once it is
 * there: the values keyed must be those the step saw, and a lookup of the
 * tracer's own, made whenever the record happens to be drained, may find a
 * file that a sibling changed since (ring.c has the details). */
struct ring_result {
	int64_t rv;     /* the raw return value: -errno on failure */
	uint32_t flags; /* RING_RES_* */
	uint32_t mode;  /* RING_RES_STAT: st_mode */
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns;
	uint64_t hash; /* readlink: ring_hash of the rv bytes it returned */
};

enum {
	/* The dev..ctime_ns fields hold the stat the step's call returned
	 * (newfstatat), or the fstat of the descriptor its open returned. */
	RING_RES_STAT = 1 << 0,
};

struct ring_slot {
	uint32_t ready; /* (uint32_t)(seq + 1) once the record is complete */
	int32_t tid;    /* the caller, as the library knows it (rc_record) */
	int32_t nr;
	uint32_t done; /* (uint32_t)(seq + 1) once `res` holds the call's result */
	uint64_t args[6];
	struct ring_result res;
	char str[RING_STR]; /* the path argument, NUL-terminated */
};
_Static_assert(sizeof(struct ring_slot) == 512, "a slot is 512 bytes");

/* FNV-1a, 64 bits: enough to tell that a symlink's target changed between
 * the step's readlink and the tracer's (an accidental collision is 2^-64;
 * the preload library has no SHA-256 and must stay cheap). */
static inline uint64_t ring_hash_more(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static inline uint64_t ring_hash(const void *data, size_t len)
{
	return ring_hash_more(0xcbf29ce484222325ull, data, len);
}

struct ring {
	uint32_t magic;
	uint32_t slots;
	uint64_t nonce; /* random, named in RING_ENV */
	/* Counted up by the tracer at every stop, before the stopped call
	 * runs. Every call that can change a name stops, so while this number
	 * stays the same no name has changed since, whichever process of the
	 * step asks (the preload library's realpath relies on it). */
	uint64_t names_gen;
	/* Next sequence number to reserve (producers, compare-and-swap). */
	uint64_t head __attribute__((aligned(64)));
	/* Next sequence number to consume (the tracer only). */
	uint64_t tail __attribute__((aligned(64)));
	struct ring_slot slot[];
};

#define RING_BYTES (sizeof(struct ring) + (uint64_t)RING_SLOTS * sizeof(struct ring_slot))

#endif
