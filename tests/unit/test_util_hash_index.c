/* The index behind the tracer's event log and its ring's repeat check:
 * entries found by the caller's equality, not by the hash alone (all of
 * one hash here), through growth, and an empty index that finds nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "cachet/hash_index.h"

struct names {
	char name[1000][16];
	const char *want;
};

static int same_name(const void *ctx, size_t index)
{
	const struct names *n = ctx;
	return strcmp(n->name[index], n->want) == 0;
}

/* The slot for name in h, added at position i when new: 1 when it was. */
static int add(struct hash_index *h, struct names *n, size_t i, uint64_t hash)
{
	n->want = n->name[i];
	struct hash_index_slot *slot = hash_index_slot(h, hash, same_name, n);
	if (slot->index != HASH_INDEX_EMPTY)
		return 0;
	hash_index_fill(h, slot, hash, i);
	return 1;
}

static void entries_of_one_hash_are_told_apart_by_their_equality(void **state)
{
	(void)state;
	static struct names n;
	struct hash_index h = {0};
	for (size_t i = 0; i < 1000; i++) {
		snprintf(n.name[i], sizeof n.name[i], "name%zu", i);
		/* Every hash alike but the ones of a tenth: probing and growth
		 * (256 slots first) over long runs of collisions. */
		assert_int_equal(add(&h, &n, i, i % 10 ? 42 : hash_mix(0, i)), 1);
	}
	assert_int_equal(h.count, 1000);
	assert_true(h.cap >= 2000);
	for (size_t i = 0; i < 1000; i++) {
		n.want = n.name[i];
		struct hash_index_slot *s =
		    hash_index_find(&h, i % 10 ? 42 : hash_mix(0, i), same_name, &n);
		assert_non_null(s);
		assert_int_equal(s->index, i);
		/* A second addition of an equal entry finds the first. */
		assert_int_equal(add(&h, &n, i, i % 10 ? 42 : hash_mix(0, i)), 0);
	}
	n.want = "absent";
	struct hash_index_slot *s = hash_index_find(&h, 42, same_name, &n);
	assert_non_null(s);
	assert_int_equal(s->index, HASH_INDEX_EMPTY);
	hash_index_free(&h);
	assert_null(hash_index_find(&h, 42, same_name, &n));
}

static void mixing_tells_fields_and_their_order_apart(void **state)
{
	(void)state;
	assert_int_not_equal(hash_mix(hash_mix(0, 1), 2), hash_mix(hash_mix(0, 2), 1));
	assert_int_not_equal(hash_mix(0, 1), hash_mix(0, 2));
	assert_int_equal(hash_mix(7, 9), hash_mix(7, 9));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(entries_of_one_hash_are_told_apart_by_their_equality),
	    cmocka_unit_test(mixing_tells_fields_and_their_order_apart),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
