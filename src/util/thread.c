#include "cachet/thread.h"

#include <signal.h>

int thread_start_quiet(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	/* The new thread inherits the mask it is created with. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int thread_cpus(cpu_set_t *cpus)
{
	return sched_getaffinity(0, sizeof *cpus, cpus) == 0 ? CPU_COUNT(cpus) : 0;
}

static void *side_job_run(void *arg)
{
	struct side_job *job = arg;
	job->fn(job->arg);
	return NULL;
}

void side_job_start(struct side_job *job, void (*fn)(void *arg), void *arg)
{
	job->fn = fn;
	job->arg = arg;
	job->started = 0;
	/* On one CPU the two would only take turns, at the price of a
	 * thread. */
	cpu_set_t cpus;
	if (thread_cpus(&cpus) >= 2)
		job->started = thread_start_quiet(&job->thread, side_job_run, job) == 0;
	if (!job->started)
		fn(arg);
}

void side_job_wait(struct side_job *job)
{
	if (job->started)
		pthread_join(job->thread, NULL);
	job->started = 0;
}
