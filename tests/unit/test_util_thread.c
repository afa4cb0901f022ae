/* thread_start_quiet: the new thread blocks every signal it may, and the
 * caller's mask is as it was. side_job: the work runs on another thread
 * where the caller has two CPUs, in the caller's where it has one, and
 * side_job_wait returns only when it is done. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sched.h>
#include <signal.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cachet/thread.h"

static void *mask_of_thread(void *arg)
{
	pthread_sigmask(SIG_BLOCK, NULL, (sigset_t *)arg);
	return NULL;
}

static void the_thread_takes_no_signal_and_the_caller_keeps_its_mask(void **state)
{
	(void)state;
	sigset_t before, after, seen;
	sigemptyset(&before);
	sigaddset(&before, SIGUSR1); /* something blocked, something not */
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	sigemptyset(&seen);
	pthread_t t;
	assert_int_equal(thread_start_quiet(&t, mask_of_thread, &seen), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	static const int sigs[] = {SIGINT, SIGTERM, SIGALRM, SIGCHLD, SIGUSR1, SIGUSR2, SIGPIPE};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		assert_true(sigismember(&seen, sigs[i]));
	pthread_sigmask(SIG_BLOCK, NULL, &after);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		assert_int_equal(sigismember(&after, sigs[i]), sigs[i] == SIGUSR1);
	sigemptyset(&before);
	pthread_sigmask(SIG_SETMASK, &before, NULL);
}

struct job_seen {
	pid_t tid;
	int done;
};

static void note_thread(void *arg)
{
	struct job_seen *seen = arg;
	/* Long enough that a wait that did not wait would see done == 0. */
	struct timespec pause = {0, 20 * 1000 * 1000};
	nanosleep(&pause, NULL);
	seen->tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&seen->done, 1, __ATOMIC_RELEASE);
}

static void a_side_job_runs_beside_the_caller_and_is_waited_for(void **state)
{
	(void)state;
	cpu_set_t mine;
	assert_int_equal(sched_getaffinity(0, sizeof mine, &mine), 0);
	if (CPU_COUNT(&mine) < 2)
		skip();
	struct job_seen seen = {0, 0};
	struct side_job job;
	side_job_start(&job, note_thread, &seen);
	assert_int_equal(job.started, 1);
	side_job_wait(&job);
	assert_int_equal(__atomic_load_n(&seen.done, __ATOMIC_ACQUIRE), 1);
	assert_int_not_equal(seen.tid, (pid_t)syscall(SYS_gettid));
	/* A second wait is harmless. */
	side_job_wait(&job);
}

static void a_side_job_on_one_cpu_runs_in_the_caller(void **state)
{
	(void)state;
	cpu_set_t mine, one;
	assert_int_equal(sched_getaffinity(0, sizeof mine, &mine), 0);
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &mine)) {
			CPU_SET(c, &one);
			break;
		}
	assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
	struct job_seen seen = {0, 0};
	struct side_job job;
	side_job_start(&job, note_thread, &seen);
	/* Done before side_job_start returned, in this thread. */
	assert_int_equal(job.started, 0);
	assert_int_equal(seen.done, 1);
	assert_int_equal(seen.tid, (pid_t)syscall(SYS_gettid));
	side_job_wait(&job);
	assert_int_equal(sched_setaffinity(0, sizeof mine, &mine), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(the_thread_takes_no_signal_and_the_caller_keeps_its_mask),
	    cmocka_unit_test(a_side_job_runs_beside_the_caller_and_is_waited_for),
	    cmocka_unit_test(a_side_job_on_one_cpu_runs_in_the_caller),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
