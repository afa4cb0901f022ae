/* Array growth: doubling from the first capacity, elements kept across
 * moves, and a capacity that would wrap size_t refused instead of turned
 * into a small allocation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "cachet/array.h"

static void grows_by_doubling_and_keeps_elements(void **state)
{
	(void)state;
	int *v = NULL;
	size_t n = 0, alloc = 0;
	for (int i = 0; i < 1000; i++) {
		ARRAY_RESERVE(v, alloc, n + 1, 16);
		v[n++] = i;
	}
	/* 16, 32, ... 1024: the first power of the first size to hold them. */
	assert_int_equal(alloc, 1024);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(v[i], i);
	free(v);
}

static void reserve_within_capacity_leaves_the_array_alone(void **state)
{
	(void)state;
	long *v = NULL;
	size_t alloc = 0;
	ARRAY_RESERVE(v, alloc, 5, 8);
	long *before = v;
	assert_int_equal(alloc, 8);
	ARRAY_RESERVE(v, alloc, 8, 8);
	assert_ptr_equal(v, before);
	assert_int_equal(alloc, 8);
	/* A jump past twice the capacity doubles until it fits. */
	ARRAY_RESERVE(v, alloc, 33, 8);
	assert_int_equal(alloc, 64);
	free(v);
}

static void a_capacity_that_would_wrap_is_refused(void **state)
{
	(void)state;
	assert_int_equal(array_next_alloc(0, SIZE_MAX / 2 + 2, 16, 1), 0);
	assert_int_equal(array_next_alloc(SIZE_MAX / 16, SIZE_MAX / 16 + 1, 16, 16), 0);
	assert_int_equal(array_next_alloc(4, 5, 16, 8), 8);
	char *p = malloc(4);
	size_t alloc = 4;
	/* The caller still owns p, and the capacity is unchanged. */
	assert_null(array_grow_try(p, &alloc, SIZE_MAX / 8, 16, 4));
	assert_int_equal(alloc, 4);
	char *grown = array_grow_try(p, &alloc, 5, 1, 4);
	assert_non_null(grown);
	assert_int_equal(alloc, 8);
	free(grown);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(grows_by_doubling_and_keeps_elements),
	    cmocka_unit_test(reserve_within_capacity_leaves_the_array_alone),
	    cmocka_unit_test(a_capacity_that_would_wrap_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
