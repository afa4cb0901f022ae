/*
 * Why a mapping: on these VMs read() from the page cache into a buffer of
 * more than 128 KiB runs at about 2 GB/s (8.8 GB/s into one of 128 KiB or
 * less), and bytes that another CPU has just written are read back slower
 * than memory: SHA-256 over the 2 MiB ring of a reading thread ran at
 * 1.18-1.45 GB/s where it runs at 1.43-1.54 over memory, measured side by
 * side. Faulting a mapping in (MADV_POPULATE_READ) costs 0.09 s per GB and
 * leaves the bytes where they are; on a second thread, ahead of the
 * reader, it leaves the reading CPU the hashing alone: 1.48-1.54 GB/s.
 *
 * A mapped file that shrinks raises SIGBUS at the first access past its
 * new end. The handler installed here turns that, for the thread reading
 * the mapping it guards, into a return of 0; any other SIGBUS goes where
 * it went before.
 */
#include "util/file_map.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "cachet/thread.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif

/* Faulted in and unmapped a window at a time, at most WINDOWS_AHEAD of
 * them before the reader: a few MB mapped at once, whatever the size. */
#define WINDOW        ((uint64_t)4 << 20)
#define WINDOWS_AHEAD 2
#define CHUNK         ((uint64_t)1 << 20)

struct guard {
	sigjmp_buf jump;
	const char *lo, *hi;
};

/* The mapping this thread is reading, if any. */
static __thread struct guard *volatile guarded;
static pthread_mutex_t sigbus_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction sigbus_before;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	struct guard *g = guarded;
	const char *at = si->si_addr;
	/* si_code > 0: raised by the kernel for an access, not sent. */
	if (g && si->si_code > 0 && at >= g->lo && at < g->hi)
		siglongjmp(g->jump, 1);
	if (sigbus_before.sa_flags & SA_SIGINFO) {
		sigbus_before.sa_sigaction(sig, si, uc);
	} else if (sigbus_before.sa_handler != SIG_DFL && sigbus_before.sa_handler != SIG_IGN) {
		sigbus_before.sa_handler(sig);
	} else {
		/* The access runs again on return, and the default action
		 * ends the program as it would have without this handler. */
		signal(SIGBUS, SIG_DFL);
	}
}

/* Puts on_sigbus in front of what handles SIGBUS now, once more if the
 * program (or a test harness) has set a handler of its own since the last
 * call. 1, or 0 when it cannot be. */
static int sigbus_guarded(void)
{
	struct sigaction now, sa;
	int ok = 1;
	pthread_mutex_lock(&sigbus_lock);
	if (sigaction(SIGBUS, NULL, &now) < 0) {
		ok = 0;
	} else if (!(now.sa_flags & SA_SIGINFO) || now.sa_sigaction != on_sigbus) {
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		sigbus_before = now;
		ok = sigaction(SIGBUS, &sa, NULL) == 0;
	}
	pthread_mutex_unlock(&sigbus_lock);
	return ok;
}

struct map_run {
	const char *base;
	uint64_t size;
	pthread_mutex_t lock;
	pthread_cond_t moved;
	uint64_t done;     /* bytes handed over: nothing below is read again */
	uint64_t unmapped; /* [0, unmapped) is unmapped */
	int stop;
};

static uint64_t window_len(const struct map_run *m, uint64_t at)
{
	return m->size - at < WINDOW ? m->size - at : WINDOW;
}

static void *fault_in_ahead(void *arg)
{
	struct map_run *m = arg;
	uint64_t populated = window_len(m, 0); /* the caller's */
	pthread_mutex_lock(&m->lock);
	while (!m->stop && m->done < m->size) {
		uint64_t behind = m->done / WINDOW * WINDOW;
		if (populated < m->size && populated < m->done + WINDOWS_AHEAD * WINDOW) {
			uint64_t at = populated, len = window_len(m, at);
			pthread_mutex_unlock(&m->lock);
			/* A failure is left to the reader: it faults the pages
			 * itself, and a shrunk file stops it there. */
			madvise((void *)(m->base + at), len, MADV_POPULATE_READ);
			populated += len;
			pthread_mutex_lock(&m->lock);
		} else if (behind > m->unmapped) {
			uint64_t from = m->unmapped;
			pthread_mutex_unlock(&m->lock);
			munmap((void *)(m->base + from), behind - from);
			pthread_mutex_lock(&m->lock);
			m->unmapped = behind;
		} else {
			pthread_cond_wait(&m->moved, &m->lock);
		}
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

static void moved_to(struct map_run *m, uint64_t done)
{
	pthread_mutex_lock(&m->lock);
	m->done = done;
	pthread_cond_signal(&m->moved);
	pthread_mutex_unlock(&m->lock);
}

/* 1, or 0 when an access past the file's end was caught. */
static int hand_over(struct map_run *m, void (*fn)(void *ctx, const void *chunk, size_t len),
                     void *ctx)
{
	struct guard g;
	g.lo = m->base;
	g.hi = m->base + m->size;
	if (sigsetjmp(g.jump, 1)) {
		guarded = NULL;
		return 0;
	}
	guarded = &g;
	for (uint64_t off = 0; off < m->size;) {
		uint64_t len = m->size - off < CHUNK ? m->size - off : CHUNK;
		fn(ctx, m->base + off, (size_t)len);
		off += len;
		if (off % WINDOW == 0 || off == m->size)
			moved_to(m, off);
	}
	guarded = NULL;
	return 1;
}

int file_map_each(int fd, uint64_t size, void (*fn)(void *ctx, const void *chunk, size_t len),
                  void *ctx)
{
	if (size == 0 || size > SIZE_MAX || !sigbus_guarded())
		return 0;
	void *base = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return 0;
	struct map_run m = {.base = base, .size = size};
	/* The first window here: the reader starts at once, and a kernel
	 * that cannot fault a range in says so now. */
	if (madvise(base, (size_t)window_len(&m, 0), MADV_POPULATE_READ) < 0) {
		munmap(base, (size_t)size);
		return 0;
	}
	pthread_mutex_init(&m.lock, NULL);
	pthread_cond_init(&m.moved, NULL);
	pthread_t helper;
	int whole = 0;
	if (thread_start_quiet(&helper, fault_in_ahead, &m) == 0) {
		whole = hand_over(&m, fn, ctx);
		pthread_mutex_lock(&m.lock);
		m.stop = 1;
		pthread_cond_signal(&m.moved);
		pthread_mutex_unlock(&m.lock);
		pthread_join(helper, NULL);
	}
	munmap((char *)base + m.unmapped, (size_t)(size - m.unmapped));
	pthread_cond_destroy(&m.moved);
	pthread_mutex_destroy(&m.lock);
	return whole;
}
