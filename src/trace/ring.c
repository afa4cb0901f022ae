/*
 * The tracer's side of the preload fast path (ring.h): the ring in a System
 * V segment (or a memfd), the step's environment that points the preload
 * library at it, and the drain that feeds its records to the classifier.
 */
#include "trace/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cachet/array.h"
#include "cachet/buf.h"
#include "cachet/path.h"
#include "cachet/strmap.h"
#include "cachet/strv.h"
#include "trace/tracer.h"

#define PRELOAD_NAME "libcachet-preload.so"
#define AUDIT_NAME   "libcachet-audit.so"

/* Beside the binary (a build tree), else ../lib/cachet/ (installed), as
 * the remote plugins. NULL when neither has it. */
static char *find_preload(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return NULL;
	self[n] = '\0';
	char *dir = path_dirname(self);
	char *cands[2] = {xasprintf("%s/" PRELOAD_NAME, dir),
	                  xasprintf("%s/../lib/cachet/" PRELOAD_NAME, dir)};
	free(dir);
	char *found = NULL;
	for (int i = 0; i < 2; i++) {
		if (!found && access(cands[i], R_OK) == 0)
			found = cands[i];
		else
			free(cands[i]);
	}
	return found;
}

/* The audit library (src/preload/audit.c) beside the preload library, or
 * NULL. */
static char *find_audit(const char *lib)
{
	char *dir = path_dirname(lib);
	char *audit = xasprintf("%s/" AUDIT_NAME, dir);
	free(dir);
	if (access(audit, R_OK) == 0)
		return audit;
	free(audit);
	return NULL;
}

/* NAME=VALUE entries of envp, with LD_PRELOAD led by the library, LD_AUDIT
 * by the audit library when there is one, the ring named, and ASan's check
 * that its runtime is the first library turned off (a sanitized program in
 * the step would abort otherwise). */
static char **step_env(char *const *envp, const char *lib, const char *ours, const char *ring_path)
{
	size_t n = strv_len(envp);
	char **out = xcalloc(n + 5, sizeof *out);
	size_t k = 0;
	const char *preload = NULL, *audit = NULL, *asan = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(envp[i], "LD_PRELOAD=", 11))
			preload = envp[i] + 11;
		else if (!strncmp(envp[i], "LD_AUDIT=", 9))
			audit = envp[i] + 9;
		else if (!strncmp(envp[i], "ASAN_OPTIONS=", 13))
			asan = envp[i] + 13;
		else if (strncmp(envp[i], RING_ENV "=", sizeof RING_ENV))
			out[k++] = xstrdup(envp[i]);
	}
	out[k++] = preload && *preload ? xasprintf("LD_PRELOAD=%s:%s", lib, preload)
	                               : xasprintf("LD_PRELOAD=%s", lib);
	if (ours)
		out[k++] = audit && *audit ? xasprintf("LD_AUDIT=%s:%s", ours, audit)
		                           : xasprintf("LD_AUDIT=%s", ours);
	else if (audit)
		out[k++] = xasprintf("LD_AUDIT=%s", audit);
	out[k++] = xasprintf(RING_ENV "=%s", ring_path);
	out[k++] = asan && *asan ? xasprintf("ASAN_OPTIONS=%s:verify_asan_link_order=0", asan)
	                         : xstrdup("ASAN_OPTIONS=verify_asan_link_order=0");
	out[k] = NULL;
	return out;
}

/* The ring as a System V segment, attached here and named in where
 * (RING_SHM_PREFIX and its id); NULL when the system has none to give.
 * Each program of the step attaches it by id, with no syscall the filter
 * stops: a file (the memfd below) takes an open of /proc/PID/fd/N, a stop
 * in every process. Removed at once: Linux still lets the step attach it,
 * and it goes away when the last process detaches, cachet included,
 * however it ends. */
static void *shm_ring(char *where, size_t cap)
{
	int id = shmget(IPC_PRIVATE, RING_BYTES, IPC_CREAT | 0600);
	if (id < 0)
		return NULL;
	void *m = shmat(id, NULL, 0);
	shmctl(id, IPC_RMID, NULL);
	if (m == (void *)-1)
		return NULL;
	snprintf(where, cap, RING_SHM_PREFIX "%d", id);
	return m;
}

int ring_open(struct tracer *tr)
{
	const struct trace_spec *spec = tr->spec;
	if (spec->preload && !*spec->preload)
		return 0; /* turned off */
	char *lib = spec->preload ? xstrdup(spec->preload) : find_preload();
	if (!lib)
		return 0;
	char where[64];
	int fd = -1;
	void *m = shm_ring(where, sizeof where);
	if (!m) {
		fd = memfd_create("cachet-trace-ring", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, (off_t)RING_BYTES) < 0) {
			if (fd >= 0)
				close(fd);
			free(lib);
			return 0;
		}
		m = mmap(NULL, RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			close(fd);
			free(lib);
			return 0;
		}
		snprintf(where, sizeof where, "/proc/%d/fd/%d", (int)getpid(), fd);
	}
	struct ring *r = m;
	r->slots = RING_SLOTS;
	/* Any number tells this ring from another tracer's; a failed
	 * getrandom (none seen) leaves the pid's. */
	uint64_t nonce = (uint64_t)getpid();
	(void)!getrandom(&nonce, sizeof nonce, GRND_NONBLOCK);
	r->nonce = nonce;
	char named[sizeof where + RING_NONCE_DIGITS + 1];
	snprintf(named, sizeof named, "%0*llx:%s", (int)RING_NONCE_DIGITS,
	         (unsigned long long)nonce, where);
	__atomic_store_n(&r->magic, RING_MAGIC, __ATOMIC_RELEASE);
	tr->ring = r;
	tr->ring_fd = fd;
	tr->audit_path = find_audit(lib);
	tr->ring_env = step_env(spec->envp, lib, tr->audit_path, named);
	buf_init(&tr->rec_paths);
	/* As the step's programs will name it: the loader opens the
	 * LD_PRELOAD entry as given. */
	tr->preload_path = lib;
	return 1;
}

void ring_close(struct tracer *tr)
{
	if (tr->ring && tr->ring_fd >= 0)
		munmap(tr->ring, RING_BYTES);
	else if (tr->ring)
		shmdt(tr->ring);
	if (tr->ring_fd >= 0)
		close(tr->ring_fd);
	if (tr->ring_env) {
		for (char **p = tr->ring_env; *p; p++)
			free(*p);
		free(tr->ring_env);
	}
	free(tr->preload_path);
	free(tr->audit_path);
	if (tr->ring) {
		free(tr->rec_seen);
		tr->rec_seen = NULL;
		tr->rec_seen_n = tr->rec_seen_cap = 0;
		hash_index_free(&tr->rec_index);
		buf_free(&tr->rec_paths);
	}
	free(tr->ring_pending);
	tr->ring_pending = NULL;
	tr->npending = tr->cap_pending = 0;
	free(tr->ring_held);
	tr->ring_held = NULL;
	tr->nheld = tr->cap_held = 0;
	tr->ring = NULL;
	tr->ring_fd = -1;
	tr->ring_env = NULL;
	tr->preload_path = NULL;
	tr->audit_path = NULL;
}

/* A record as seen_before looks it up: its call, the arguments that shape
 * the lookup and its path. */
struct rec_probe {
	const struct tracer *tr;
	uint64_t a, b;
	const char *path;
	int nr;
};

static int same_record(const void *ctx, size_t index)
{
	const struct rec_probe *p = ctx;
	const struct rec_seen *r = &p->tr->rec_seen[index];
	return r->nr == p->nr && r->a == p->a && r->b == p->b &&
	       strcmp(p->tr->rec_paths.data + r->path_at, p->path) == 0;
}

/* 1 when the same call (number, flag arguments, path) was classified
 * since the step last changed anything: it would find the same outcome,
 * and the log would drop the event. gcc and nvcc repeat most of their
 * lookups (about six records in seven), and this is far cheaper than
 * resolving and looking up the path again. A change from outside the step
 * in between goes unseen here, but the first event then no longer holds at
 * the end of the run, which makes the run not storable all the same. */
static int seen_before(struct tracer *tr, const struct ring_slot *s)
{
	/* A relative path names another file after a chdir or through
	 * another dirfd: only absolute ones repeat for certain. The preload
	 * sends no others today; this keeps that an assumption checked. */
	if (s->str[0] != '/')
		return 0;
	/* The arguments that shape the lookup (not buffer addresses). */
	uint64_t a = 0, b = 0;
	switch (s->nr) {
	case SYS_openat:
		a = s->args[2];
		break;
	case SYS_newfstatat:
		a = s->args[3];
		break;
	case SYS_access:
		a = s->args[1];
		break;
	case SYS_faccessat2:
		a = s->args[2];
		b = s->args[3];
		break;
	}
	struct rec_probe probe = {tr, a, b, s->str, s->nr};
	uint64_t h = hash_mix(hash_mix(hash_mix(strmap_hash(s->str), (uint32_t)s->nr), a), b);
	struct hash_index_slot *slot = hash_index_slot(&tr->rec_index, h, same_record, &probe);
	if (slot->index == HASH_INDEX_EMPTY) {
		ARRAY_RESERVE(tr->rec_seen, tr->rec_seen_cap, tr->rec_seen_n + 1, 256);
		tr->rec_seen[tr->rec_seen_n] = (struct rec_seen){
		    .a = a, .b = b, .touches = 0, .path_at = tr->rec_paths.len, .nr = s->nr};
		buf_add(&tr->rec_paths, s->str, strlen(s->str) + 1);
		hash_index_fill(&tr->rec_index, slot, h, tr->rec_seen_n++);
	}
	struct rec_seen *e = &tr->rec_seen[slot->index];
	/* Each key keeps the number of the last change it was classified
	 * after: one probe per record, and a change forgets every key
	 * without visiting them (nvcc writes hundreds of files). */
	int same = e->touches == tr->log.touches + 1;
	e->touches = tr->log.touches + 1;
	return same;
}

/* Classifies the record in s with the result its call reported, or, when
 * none will come (its thread died in the call: with_result 0), with the
 * tracer's own lookups as for a stop. */
static void classify(struct tracer *tr, struct ring_slot *s, int with_result)
{
	s->str[RING_STR - 1] = '\0';
	if (s->nr == RING_NR_SONAME_SEARCH)
		syscall_soname_search(tr, s->tid, s->str);
	else if (!seen_before(tr, s))
		syscall_record(tr, s->tid, s->nr, s->args, s->str, with_result ? &s->res : NULL);
}

static int is_done(const struct ring_slot *s, uint64_t seq)
{
	return __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) == (uint32_t)(seq + 1);
}

/* Records whose call is still running when they are drained wait in
 * tr->ring_pending, and the drain goes on with later ones: a call may block
 * for long (an open of a FIFO waits for a writer), and the records of other
 * threads behind it must still reach the classifier before the changes
 * that follow them. A pending record's call is concurrent with everything
 * classified meanwhile, so classifying it later reorders nothing that had
 * an order. Its slot is not freed (the tail stays behind it) until it has
 * its result: the library writes the result into the slot it reserved.
 *
 * A record whose thread is gone will have no result: it is classified
 * with the tracer's own lookups, as at a stop (its call may be running
 * still: then the lookup is concurrent with it). The thread is the one
 * the record names, which the library keeps a copy of (preload.c) that
 * may name another thread: the parent of a vfork child that shares it.
 * So the slot stays taken (tr->ring_held) until a result comes after all
 * or the run ends: a writer still in its call then writes into its own
 * slot, never into the record of another call that reuses it. */
static void drain_pending(struct tracer *tr, int final)
{
	struct ring *r = tr->ring;
	size_t k = 0;
	for (size_t i = 0; i < tr->npending; i++) {
		uint64_t seq = tr->ring_pending[i];
		struct ring_slot *s = &r->slot[seq % RING_SLOTS];
		if (is_done(s, seq)) {
			classify(tr, s, 1);
		} else if (final) {
			classify(tr, s, 0);
		} else if (!tracee_find(&tr->tracees, s->tid)) {
			classify(tr, s, 0);
			ARRAY_RESERVE(tr->ring_held, tr->cap_held, tr->nheld + 1, 16);
			tr->ring_held[tr->nheld++] = seq;
		} else {
			tr->ring_pending[k++] = seq;
		}
	}
	tr->npending = k;
	k = 0;
	for (size_t i = 0; i < tr->nheld; i++) {
		uint64_t seq = tr->ring_held[i];
		if (!final && !is_done(&r->slot[seq % RING_SLOTS], seq))
			tr->ring_held[k++] = seq;
	}
	tr->nheld = k;
}

void ring_drain(struct tracer *tr, int final)
{
	struct ring *r = tr->ring;
	if (!r)
		return;
	if (tr->npending || tr->nheld)
		drain_pending(tr, final);
	uint64_t next = tr->ring_next;
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	while (next < head) {
		struct ring_slot *s = &r->slot[next % RING_SLOTS];
		if (__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) != (uint32_t)(next + 1)) {
			/* Reserved, not yet written: its writer runs now (it makes no
			 * syscall that could stop it in between), so its record comes
			 * at the next drain. At the end nobody is left to write it. */
			if (!final)
				break;
		} else if (is_done(s, next)) {
			classify(tr, s, 1);
		} else if (final) {
			classify(tr, s, 0);
		} else {
			ARRAY_RESERVE(tr->ring_pending, tr->cap_pending, tr->npending + 1, 16);
			tr->ring_pending[tr->npending++] = next;
		}
		next++;
	}
	tr->ring_next = next;
	/* Free the slots up to the oldest record still waiting for its result. */
	uint64_t tail = next;
	for (size_t i = 0; i < tr->npending; i++)
		if (tr->ring_pending[i] < tail)
			tail = tr->ring_pending[i];
	for (size_t i = 0; i < tr->nheld; i++)
		if (tr->ring_held[i] < tail)
			tail = tr->ring_held[i];
	__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
}

void ring_note_stop(struct tracer *tr)
{
	if (tr->ring)
		__atomic_add_fetch(&tr->ring->names_gen, 1, __ATOMIC_RELEASE);
}
