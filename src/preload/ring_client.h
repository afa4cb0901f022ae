/*
 * The step's side of the preload fast path (src/trace/ring.h), shared by
 * libcachet-preload.so (preload.c) and libcachet-audit.so (audit.c).
 *
 * Nothing here calls libc: the audit library runs inside the dynamic
 * loader, before any libc of the program is mapped, and has none of its
 * own. Raw syscalls, and loops the compiler is told not to turn into
 * memcpy calls (-fno-tree-loop-distribute-patterns).
 */
#ifndef CACHET_PRELOAD_RING_CLIENT_H
#define CACHET_PRELOAD_RING_CLIENT_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <errno.h>

#include "trace/raw_syscall.h"
#include "trace/ring.h"

/* A syscall made here, not from the trusted page: the filter judges it as
 * any other (mmap and the like are not traced; an open stops). */
static inline long rc_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	return raw_syscall(nr, a1, a2, a3, a4, a5, a6);
}

/* A lookup made from the trusted page, which the filter lets through. */
static inline long rc_safe_syscall(long nr, long a1, long a2, long a3, long a4)
{
	long ret;
	register long r10 __asm__("r10") = a4;
	__asm__ volatile("call *%[page]"
	                 : "=a"(ret)
	                 : "a"(nr), "D"(a1), "S"(a2), "d"(a3),
	                   "r"(r10), [page] "r"((long)RING_SAFE_PAGE)
	                 : "rcx", "r11", "memory");
	return ret;
}

static inline size_t rc_strnlen(const char *s, size_t max)
{
	size_t n = 0;
	while (n < max && s[n])
		n++;
	return n;
}

static inline void rc_copy(void *to, const void *from, size_t n)
{
	unsigned char *d = to;
	const unsigned char *s = from;
	for (size_t i = 0; i < n; i++)
		d[i] = s[i];
}

/* A path relative to the cwd joined to the cwd, into buf (RING_STR bytes);
 * path itself when absolute; NULL when the cwd is gone or the join does not
 * fit. The fast-pathed call then looks up the joined path itself, so that
 * what is looked up is what is recorded, and the tracer needs no cwd. */
static inline const char *rc_absolute(const char *path, char *buf)
{
	if (path[0] == '/')
		return path;
	long n = rc_syscall(SYS_getcwd, (long)buf, RING_STR, 0, 0, 0, 0);
	if (n <= 1 || buf[0] != '/') /* "(unreachable)/..." for a removed cwd */
		return NULL;
	size_t len = (size_t)n - 1, plen = rc_strnlen(path, RING_STR);
	if (len + 1 + plen >= RING_STR)
		return NULL;
	if (buf[len - 1] != '/')
		buf[len++] = '/';
	rc_copy(buf + len, path, plen + 1);
	return buf;
}

static const unsigned char rc_stub[] = {0x0f, 0x05, 0xc3}; /* syscall; ret */

/* Where on the trusted page the audit library leaves the address of the
 * ring it mapped, so that the preload library of the same process need not
 * attach or open it again. */
struct rc_page_note {
	uint32_t magic;
	uint32_t unused;
	struct ring *ring;
};
#define RC_PAGE_NOTE_OFFSET 64
#define RC_PAGE_NOTE_MAGIC  0x45544f4eu /* "NOTE" */
_Static_assert(RING_EMPTY_NAME - RING_SAFE_PAGE >=
                       RC_PAGE_NOTE_OFFSET + sizeof(struct rc_page_note) &&
                   RING_EMPTY_NAME - RING_SAFE_PAGE < RING_SAFE_PAGE_SIZE,
               "the empty name is a byte of the page that nothing writes");

/* Maps the trusted page, `syscall; ret` at the address the filter trusts;
 * or finds it mapped already by the other library of this process (the
 * audit library maps it first, inside the loader), and then sets
 * *published to the ring noted there (rc_page_publish). 1 when mapped
 * here, 0 when found, -1 when the address holds something else: then this
 * process goes without the fast path. Once per exec: a forked child
 * inherits the mapping. */
static inline int rc_map_page(struct ring **published)
{
	long page = rc_syscall(SYS_mmap, (long)RING_SAFE_PAGE, (long)RING_SAFE_PAGE_SIZE,
	                       PROT_READ | PROT_WRITE,
	                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (page == -EEXIST) {
		/* Read without faulting: it may not be readable at all. */
		unsigned char got[RC_PAGE_NOTE_OFFSET + sizeof(struct rc_page_note)];
		struct iovec local = {got, sizeof got};
		struct iovec remote = {(void *)RING_SAFE_PAGE, sizeof got};
		long pid = rc_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
		if (rc_syscall(SYS_process_vm_readv, pid, (long)&local, 1, (long)&remote, 1, 0) !=
		    (long)sizeof got)
			return -1;
		for (size_t i = 0; i < sizeof rc_stub; i++)
			if (got[i] != rc_stub[i])
				return -1;
		struct rc_page_note note;
		rc_copy(&note, got + RC_PAGE_NOTE_OFFSET, sizeof note);
		if (published && note.magic == RC_PAGE_NOTE_MAGIC && note.ring &&
		    note.ring->magic == RING_MAGIC)
			*published = note.ring;
		return 0;
	}
	if (page < 0 && page > -4096)
		return -1;
	if ((uint64_t)page != RING_SAFE_PAGE) { /* kernels before 4.17: a hint only */
		rc_syscall(SYS_munmap, page, (long)RING_SAFE_PAGE_SIZE, 0, 0, 0, 0);
		return -1;
	}
	rc_copy((void *)page, rc_stub, sizeof rc_stub);
	if (rc_syscall(SYS_mprotect, page, (long)RING_SAFE_PAGE_SIZE, PROT_READ | PROT_EXEC, 0, 0,
	               0) != 0) {
		rc_syscall(SYS_munmap, page, (long)RING_SAFE_PAGE_SIZE, 0, 0, 0, 0);
		return -1;
	}
	return 1;
}

/* Leaves ring in the note of the trusted page that rc_map_page mapped,
 * which is writable for that moment only. 0, or -1 (the page stays as it
 * was, executable, or at worst unusable: then calls through it fault
 * before they could do anything). */
static inline int rc_page_publish(struct ring *ring)
{
	long page = (long)RING_SAFE_PAGE;
	if (rc_syscall(SYS_mprotect, page, (long)RING_SAFE_PAGE_SIZE, PROT_READ | PROT_WRITE, 0, 0,
	               0) != 0)
		return -1;
	struct rc_page_note note = {RC_PAGE_NOTE_MAGIC, 0, ring};
	rc_copy((char *)page + RC_PAGE_NOTE_OFFSET, &note, sizeof note);
	return rc_syscall(SYS_mprotect, page, (long)RING_SAFE_PAGE_SIZE, PROT_READ | PROT_EXEC, 0,
	                  0, 0) == 0
	           ? 0
	           : -1;
}

/* The System V segment id after RING_SHM_PREFIX in where, or -1. */
static inline long rc_shm_id(const char *where)
{
	const char *prefix = RING_SHM_PREFIX;
	size_t i = 0;
	for (; prefix[i]; i++)
		if (where[i] != prefix[i])
			return -1;
	long id = 0;
	if (!where[i])
		return -1;
	for (; where[i]; i++) {
		if (where[i] < '0' || where[i] > '9' || id > 0x7fffffff / 10)
			return -1;
		id = id * 10 + (where[i] - '0');
	}
	return id;
}

/* The ring's number at the head of value (RING_ENV's), into nonce: where
 * the ring is, after it, or NULL. */
static inline const char *rc_ring_nonce(const char *value, uint64_t *nonce)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < RING_NONCE_DIGITS; i++) {
		char c = value[i];
		if (c >= '0' && c <= '9')
			n = n << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			n = n << 4 | (uint64_t)(c - 'a' + 10);
		else
			return NULL;
	}
	if (value[RING_NONCE_DIGITS] != ':')
		return NULL;
	*nonce = n;
	return value + RING_NONCE_DIGITS + 1;
}

/* The tracer's ring, attached or mapped as value (RING_ENV's) names it, or
 * NULL; NULL too for a ring of another number (another tracer's, reached
 * from another namespace). A segment is attached without an open, which
 * would stop. */
static inline struct ring *rc_map_ring(const char *value)
{
	uint64_t nonce;
	const char *where = rc_ring_nonce(value, &nonce);
	if (!where)
		return NULL;
	long m, id = rc_shm_id(where);
	if (id >= 0) {
		m = rc_syscall(SYS_shmat, id, 0, 0, 0, 0, 0);
	} else {
		long fd =
		    rc_syscall(SYS_openat, AT_FDCWD, (long)where, O_RDWR | O_CLOEXEC, 0, 0, 0);
		if (fd < 0)
			return NULL;
		m = rc_syscall(SYS_mmap, 0, (long)RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		               fd, 0);
		rc_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
	}
	if (m < 0 && m > -4096)
		return NULL;
	struct ring *r = (struct ring *)m;
	if (r->magic != RING_MAGIC || r->slots != RING_SLOTS || r->nonce != nonce) {
		if (id >= 0)
			rc_syscall(SYS_shmdt, m, 0, 0, 0, 0, 0);
		else
			rc_syscall(SYS_munmap, m, (long)RING_BYTES, 0, 0, 0, 0);
		return NULL;
	}
	return r;
}

/* The calling thread's id, by the syscall (rc_record's callers that keep
 * no copy of it). */
static inline int32_t rc_gettid(void)
{
	return (int32_t)rc_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0);
}

/* Appends the record of one call by thread tid and returns its slot (for
 * rc_done), or NULL when the call must take the ordinary path (ring full,
 * path too long). The tracer trusts tid for nothing but the liveness of a
 * call it drains unfinished (ring.c, drain_pending), and even a wrong one
 * costs no record there. */
static inline struct ring_slot *rc_record(struct ring *ring, int32_t tid, int nr, long a0, long a1,
                                          long a2, long a3, const char *path, uint64_t *seq)
{
	size_t len = rc_strnlen(path, RING_STR);
	if (len >= RING_STR)
		return NULL;
	uint64_t h;
	do {
		h = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
		if (h - __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE) >= RING_SLOTS)
			return NULL; /* full: the stop of the ordinary path drains it */
	} while (!__atomic_compare_exchange_n(&ring->head, &h, h + 1, 0, __ATOMIC_ACQ_REL,
	                                      __ATOMIC_ACQUIRE));
	struct ring_slot *s = &ring->slot[h % RING_SLOTS];
	s->tid = tid;
	s->nr = nr;
	s->args[0] = (uint64_t)a0;
	s->args[1] = (uint64_t)a1;
	s->args[2] = (uint64_t)a2;
	s->args[3] = (uint64_t)a3;
	s->args[4] = s->args[5] = 0;
	s->res = (struct ring_result){0};
	rc_copy(s->str, path, len + 1);
	__atomic_store_n(&s->ready, (uint32_t)(h + 1), __ATOMIC_RELEASE);
	*seq = h;
	return s;
}

static inline void rc_res_stat(struct ring_result *r, const struct stat *st)
{
	r->flags |= RING_RES_STAT;
	r->mode = st->st_mode;
	r->dev = st->st_dev;
	r->ino = st->st_ino;
	r->size = (uint64_t)st->st_size;
	r->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	r->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

/* Publishes the result of the recorded call (rv: the raw syscall return);
 * the tracer classifies the record only then. The slot stays ours until
 * this store: the tracer frees no slot before its result is there. */
static inline long rc_done(struct ring_slot *s, uint64_t seq, long rv)
{
	s->res.rv = rv;
	__atomic_store_n(&s->done, (uint32_t)(seq + 1), __ATOMIC_RELEASE);
	return rv;
}

#endif
