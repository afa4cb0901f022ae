/* Counters shared between processes through the `stats` file. */
#include "test_store_fixture.h"

#include <sys/wait.h>

static void in_children(int n, void (*body)(struct store *s, int child))
{
	pid_t pids[16];
	for (int c = 0; c < n; c++) {
		pids[c] = fork();
		assert_true(pids[c] >= 0);
		if (pids[c] == 0) {
			char *dir = cache_dir();
			struct store *s;
			struct error e;
			if (store_open(dir, 0, &s, &e) < 0)
				_exit(1);
			body(s, c);
			store_close(s);
			_exit(0);
		}
	}
	for (int c = 0; c < n; c++) {
		int status;
		assert_int_equal(waitpid(pids[c], &status, 0), pids[c]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
}

static void add_a_thousand(struct store *s, int child)
{
	for (int i = 0; i < 1000; i++)
		store_count(s, "hits", 1);
}

static void adds_from_two_processes_all_count(void **state)
{
	store_close(open_cache());
	in_children(2, add_a_thousand);
	struct store *s = open_cache();
	assert_int_equal(counter_value(s, "hits"), 2000);
	store_close(s);
}

static void claim_twenty_names(struct store *s, int child)
{
	for (int i = 0; i < 20; i++) {
		char name[32];
		/* Shared prefixes: a claim must compare whole names. */
		snprintf(name, sizeof name, "uncacheable_reason_%d", i);
		store_count(s, name, 1);
	}
}

static void names_claimed_at_once_by_many_processes_get_one_slot_each(void **state)
{
	store_close(open_cache());
	in_children(8, claim_twenty_names);
	struct store *s = open_cache();
	struct store_counter *c;
	size_t n;
	struct error e;
	assert_int_equal(store_counters(s, &c, &n, &e), 0);
	assert_int_equal(n, 20);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(strncmp(c[i].name, "uncacheable_reason_", 19), 0);
		assert_int_equal(c[i].value, 8);
	}
	free(c);
	store_close(s);
}

static void zeroing_keeps_names_and_clears_values(void **state)
{
	struct store *s = open_cache();
	store_count(s, "hits", 5);
	store_count(s, "misses", -2);
	store_counters_zero(s);
	assert_int_equal(counter_value(s, "hits"), 0);
	store_count(s, "misses", 1);
	assert_int_equal(counter_value(s, "misses"), 1);
	struct store_counter *c;
	size_t n;
	struct error e;
	assert_int_equal(store_counters(s, &c, &n, &e), 0);
	assert_int_equal(n, 2);
	free(c);
	store_close(s);
}

static void bad_names_and_a_full_table_are_ignored(void **state)
{
	struct store *s = open_cache();
	store_count(s, "", 1);
	store_count(s, "a_name_that_is_far_too_long_for_its_forty_eight_byte_slot", 1);
	char longest[48];
	memset(longest, 'x', 47);
	longest[47] = '\0';
	store_count(s, longest, 7);
	assert_int_equal(counter_value(s, longest), 7);
	for (int i = 0; i < 200; i++) {
		char name[16];
		snprintf(name, sizeof name, "c%d", i);
		store_count(s, name, 1);
	}
	struct store_counter *c;
	size_t n;
	struct error e;
	assert_int_equal(store_counters(s, &c, &n, &e), 0);
	assert_int_equal(n, 128);
	free(c);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, scratch_setup, scratch_teardown)
	    T(adds_from_two_processes_all_count),
	    T(names_claimed_at_once_by_many_processes_get_one_slot_each),
	    T(zeroing_keeps_names_and_clears_values),
	    T(bad_names_and_a_full_table_are_ignored),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
