/*
 * Helper threads that take no signals: the program's handlers (and the
 * tracer's thread-directed alarm) stay with the threads that expect them.
 */
#ifndef CACHET_THREAD_H
#define CACHET_THREAD_H

#include <pthread.h>

/* pthread_create with every signal blocked in the new thread: 0, or the
 * error number. */
int thread_start_quiet(pthread_t *thread, void *(*fn)(void *), void *arg);

#endif
