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
