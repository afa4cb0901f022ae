/*
 * Helper threads that take no signals: the program's handlers (and the
 * tracer's thread-directed alarm) stay with the threads that expect them.
 */
#ifndef CACHET_THREAD_H
#define CACHET_THREAD_H

#include <pthread.h>
#include <sched.h>

/* pthread_create with every signal blocked in the new thread: 0, or the
 * error number. */
int thread_start_quiet(pthread_t *thread, void *(*fn)(void *), void *arg);

/* The CPUs the calling thread may run on, into cpus: how many, 0 when
 * they cannot be read. Work handed to another thread gains nothing below
 * two. */
int thread_cpus(cpu_set_t *cpus);

/* Work that can run beside the caller's own: on a quiet thread where the
 * caller may use a second CPU, else (one CPU, or no thread to be had) in
 * the caller's thread at once. side_job_wait returns when fn has run. */
struct side_job {
	void (*fn)(void *arg);
	void *arg;
	pthread_t thread;
	int started;
};

void side_job_start(struct side_job *job, void (*fn)(void *arg), void *arg);
void side_job_wait(struct side_job *job);

#endif
