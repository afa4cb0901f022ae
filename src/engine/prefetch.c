#include "cachet/prefetch.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "cachet/array.h"
#include "cachet/buf.h"
#include "cachet/strmap.h"
#include "cachet/thread.h"

struct prefetch {
	struct digest_cache *dc;
	cpu_set_t cpus;
	struct strmap named; /* the paths handed over (the tracer's thread only) */
	int started, failed; /* the worker's thread */
	int closed;          /* prefetch_close has told the worker */
	pthread_t thread;
	pthread_mutex_t lock; /* the queue and the two flags below */
	pthread_cond_t wake;
	char **queue;
	size_t head, n, cap;
	int closing;      /* no more paths will come */
	int dropping;     /* leave what is queued */
	size_t looked_up; /* the worker's, read after the join */
	/* prefetch_when_idle's job, set before the worker starts; the
	 * worker's from then on. */
	void (*idle)(void *arg);
	void *idle_arg;
};

static void *worker(void *arg)
{
	struct prefetch *p = arg;
	/* Created by the tracer's thread, it would have that thread's CPU. */
	sched_setaffinity(0, sizeof p->cpus, &p->cpus);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (p->head == p->n && !p->closing) {
			if (p->idle) {
				void (*idle)(void *) = p->idle;
				p->idle = NULL;
				pthread_mutex_unlock(&p->lock);
				idle(p->idle_arg);
				pthread_mutex_lock(&p->lock);
				continue;
			}
			pthread_cond_wait(&p->wake, &p->lock);
		}
		if (p->head == p->n || p->dropping)
			break;
		const char *path = p->queue[p->head++];
		pthread_mutex_unlock(&p->lock);
		struct digest d;
		/* Following symlinks, as the record's value of a read does. A
		 * file gone or changed is the record's business. */
		digest_cached(path, 0, p->dc, &d, NULL);
		p->looked_up++;
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct prefetch *prefetch_new(struct digest_cache *dc)
{
	cpu_set_t cpus;
	if (thread_cpus(&cpus) < 2)
		return NULL;
	struct prefetch *p = xcalloc(1, sizeof *p);
	p->dc = dc;
	p->cpus = cpus;
	strmap_init(&p->named);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	return p;
}

void prefetch_when_idle(struct prefetch *p, void (*fn)(void *arg), void *arg)
{
	if (!p || p->started)
		return;
	p->idle = fn;
	p->idle_arg = arg;
}

void prefetch_add(void *ctx, const char *path, uint64_t size)
{
	struct prefetch *p = ctx;
	if (p->failed || size > PREFETCH_MAX_SIZE || strmap_put(&p->named, path, (void *)1))
		return;
	if (!p->started) {
		/* Not on the caller's CPU either: the tracer's, where the step
		 * is held. */
		int cpu = sched_getcpu();
		if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &p->cpus) &&
		    CPU_COUNT(&p->cpus) > 1)
			CPU_CLR(cpu, &p->cpus);
		p->started = thread_start_quiet(&p->thread, worker, p) == 0;
		p->failed = !p->started;
		if (p->failed)
			return;
	}
	pthread_mutex_lock(&p->lock);
	ARRAY_RESERVE(p->queue, p->cap, p->n + 1, 16);
	p->queue[p->n++] = xstrdup(path);
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

void prefetch_close(struct prefetch *p, int keep)
{
	if (!p || !p->started || p->closed)
		return;
	p->closed = 1;
	pthread_mutex_lock(&p->lock);
	p->closing = 1;
	p->dropping = !keep;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

size_t prefetch_finish(struct prefetch *p, int keep)
{
	if (!p)
		return 0;
	prefetch_close(p, keep);
	if (p->started)
		pthread_join(p->thread, NULL);
	size_t looked_up = p->looked_up;
	for (size_t i = 0; i < p->n; i++)
		free(p->queue[i]);
	free(p->queue);
	strmap_free(&p->named);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
	free(p);
	return looked_up;
}
