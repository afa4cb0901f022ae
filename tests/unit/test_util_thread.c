/* thread_start_quiet: the new thread blocks every signal it may, and the
 * caller's mask is as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_thread_takes_no_signal_and_the_caller_keeps_its_mask),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
