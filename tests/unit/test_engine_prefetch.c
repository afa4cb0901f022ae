/* The prefetcher that hashes a step's big inputs while it runs: what it
 * leaves in the digest cache (and that it leaves files too big to wait for),
 * that a warm cache is only asked, that it drops its queue when the run will
 * not be recorded, that it stays off the caller's CPU, and that one CPU
 * means no prefetcher. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cachet/digest.h"
#include "cachet/prefetch.h"

static char root[64];

enum { FILES = 4 };
static char paths[FILES][128];

/* A digest cache that holds what it is told, and can answer every get, be
 * slow on its first, and note the CPU it is asked on. */
struct counting_cache {
	int answer_all;
	int slow_first;
	int gets, puts;
	int in_get; /* set at the first get's start (read by the test's thread) */
	int cpu;
	char put_path[FILES][128];
	struct digest put_digest[FILES];
};

static int cc_get(void *ctx, const char *path, const struct file_id *id, struct digest *out)
{
	(void)path;
	(void)id;
	struct counting_cache *c = ctx;
	__atomic_store_n(&c->in_get, 1, __ATOMIC_RELEASE);
	if (c->gets++ == 0 && c->slow_first) {
		struct timespec pause = {0, 100 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	c->cpu = sched_getcpu();
	if (c->answer_all)
		memset(out, 0, sizeof *out);
	return c->answer_all;
}

static void cc_put(void *ctx, const char *path, const struct file_id *id, const struct digest *d)
{
	(void)id;
	struct counting_cache *c = ctx;
	if (c->puts < FILES) {
		snprintf(c->put_path[c->puts], sizeof c->put_path[0], "%s", path);
		c->put_digest[c->puts] = *d;
	}
	c->puts++;
}

static struct digest_cache cache_of(struct counting_cache *c)
{
	struct digest_cache dc = {.get = cc_get, .put = cc_put, .ctx = c};
	return dc;
}

/* Files of 1 MB, written and then left alone for longer than the digest
 * cache's margin, so that their digests may be cached. */
static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof root, "/tmp/cachet-prefetch-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	static char block[1 << 20];
	for (int i = 0; i < FILES; i++) {
		memset(block, 'a' + i, sizeof block);
		snprintf(paths[i], sizeof paths[i], "%s/input-%d", root, i);
		int fd = open(paths[i], O_CREAT | O_WRONLY | O_TRUNC, 0644);
		if (fd < 0 || write(fd, block, sizeof block) != (ssize_t)sizeof block ||
		    close(fd) < 0)
			return -1;
	}
	struct timespec settle = {1, 200 * 1000 * 1000};
	nanosleep(&settle, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	return system(cmd) == 0 ? 0 : -1;
}

static int two_cpus(void)
{
	cpu_set_t cpus;
	return sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) >= 2;
}

static void digest_of(const char *path, struct digest *out)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	struct error e;
	assert_int_equal(digest_fd(fd, out, NULL, &e), 0);
	close(fd);
}

static void leaves_the_digests_in_the_cache(void **state)
{
	(void)state;
	if (!two_cpus())
		skip();
	struct counting_cache c = {0};
	struct digest_cache dc = cache_of(&c);
	struct prefetch *p = prefetch_new(&dc);
	assert_non_null(p);
	prefetch_add(p, paths[0], 1 << 20);
	prefetch_add(p, paths[1], 1 << 20);
	prefetch_add(p, paths[0], 1 << 20);               /* named once */
	prefetch_add(p, paths[3], PREFETCH_MAX_SIZE + 1); /* too big to wait for */
	assert_int_equal(prefetch_finish(p, 1), 2);
	assert_int_equal(c.gets, 2);
	assert_int_equal(c.puts, 2);
	for (int i = 0; i < 2; i++) {
		assert_string_equal(c.put_path[i], paths[i]);
		struct digest want;
		digest_of(paths[i], &want);
		assert_true(digest_equal(&c.put_digest[i], &want));
	}
}

static void a_warm_cache_is_only_asked(void **state)
{
	(void)state;
	if (!two_cpus())
		skip();
	struct counting_cache c = {.answer_all = 1};
	struct digest_cache dc = cache_of(&c);
	struct prefetch *p = prefetch_new(&dc);
	assert_non_null(p);
	for (int i = 0; i < FILES; i++)
		prefetch_add(p, paths[i], 1 << 20);
	assert_int_equal(prefetch_finish(p, 1), FILES);
	assert_int_equal(c.gets, FILES);
	assert_int_equal(c.puts, 0);
}

/* A prefetcher given every path, its worker in the first (slow) lookup. */
static struct prefetch *busy_prefetch(struct counting_cache *c, struct digest_cache *dc)
{
	struct prefetch *p = prefetch_new(dc);
	assert_non_null(p);
	for (int i = 0; i < FILES; i++)
		prefetch_add(p, paths[i], 1 << 20);
	for (int waited = 0; !__atomic_load_n(&c->in_get, __ATOMIC_ACQUIRE); waited++) {
		assert_true(waited < 5000);
		usleep(1000);
	}
	return p;
}

/* finish comes while the first lookup (100 ms) runs and the rest wait;
 * or close does, and finish then waits: what close said holds. */
static void a_run_not_recorded_leaves_the_queue(void **state)
{
	(void)state;
	if (!two_cpus())
		skip();
	for (int closed = 0; closed <= 1; closed++)
		for (int keep = 0; keep <= 1; keep++) {
			struct counting_cache c = {.slow_first = 1};
			struct digest_cache dc = cache_of(&c);
			struct prefetch *p = busy_prefetch(&c, &dc);
			if (closed) {
				prefetch_close(p, keep);
				prefetch_close(p, !keep);
			}
			assert_int_equal(prefetch_finish(p, closed ? !keep : keep),
			                 keep ? FILES : 1);
		}
	prefetch_close(NULL, 1);
}

struct idle_job {
	int runs;
	pthread_t thread;
};

static void note_idle(void *arg)
{
	struct idle_job *j = arg;
	j->runs++;
	j->thread = pthread_self();
}

/* The idle job runs once, on the worker, once the queue is empty; never
 * when the worker does not start. */
static void the_idle_job_runs_once_on_the_worker(void **state)
{
	(void)state;
	if (!two_cpus())
		skip();
	struct counting_cache c = {0};
	struct digest_cache dc = cache_of(&c);
	struct idle_job j = {0};
	struct prefetch *p = prefetch_new(&dc);
	assert_non_null(p);
	prefetch_when_idle(p, note_idle, &j);
	prefetch_add(p, paths[0], 1 << 20);
	for (int waited = 0; !__atomic_load_n(&j.runs, __ATOMIC_ACQUIRE); waited++) {
		assert_true(waited < 5000);
		usleep(1000);
	}
	prefetch_add(p, paths[1], 1 << 20);
	assert_int_equal(prefetch_finish(p, 1), 2);
	assert_int_equal(j.runs, 1);
	assert_false(pthread_equal(j.thread, pthread_self()));
	struct idle_job none = {0};
	p = prefetch_new(&dc);
	prefetch_when_idle(p, note_idle, &none);
	prefetch_finish(p, 1);
	assert_int_equal(none.runs, 0);
	prefetch_when_idle(NULL, note_idle, &none);
}

static void works_off_the_callers_cpu(void **state)
{
	(void)state;
	if (!two_cpus())
		skip();
	cpu_set_t saved, one;
	assert_int_equal(sched_getaffinity(0, sizeof saved, &saved), 0);
	struct counting_cache c = {.cpu = -1};
	struct digest_cache dc = cache_of(&c);
	/* Taken with the caller's whole mask, as run.c does before the
	 * tracer pins itself; started once the caller is on one CPU. */
	struct prefetch *p = prefetch_new(&dc);
	assert_non_null(p);
	int here = sched_getcpu();
	CPU_ZERO(&one);
	CPU_SET(here, &one);
	assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
	prefetch_add(p, paths[2], 1 << 20);
	prefetch_finish(p, 1);
	assert_int_equal(sched_setaffinity(0, sizeof saved, &saved), 0);
	assert_true(c.cpu >= 0);
	assert_int_not_equal(c.cpu, here);
}

static void one_cpu_means_no_prefetcher(void **state)
{
	(void)state;
	pid_t pid = fork();
	if (pid == 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(sched_getcpu(), &one);
		struct counting_cache c = {0};
		struct digest_cache dc = cache_of(&c);
		_exit(sched_setaffinity(0, sizeof one, &one) == 0 && prefetch_new(&dc) == NULL ? 0
		                                                                               : 1);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(leaves_the_digests_in_the_cache),
	    cmocka_unit_test(a_warm_cache_is_only_asked),
	    cmocka_unit_test(a_run_not_recorded_leaves_the_queue),
	    cmocka_unit_test(the_idle_job_runs_once_on_the_worker),
	    cmocka_unit_test(works_off_the_callers_cpu),
	    cmocka_unit_test(one_cpu_means_no_prefetcher),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
