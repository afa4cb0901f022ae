/* Path sets: canonical form, encoding, hostile input, strong keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachet/env.h"
#include "cachet/pathset.h"
#include "cachet/step.h"

static void build(struct pathset *ps, int reversed)
{
	const char *excl[] = {"out.o", "gen.c", NULL};
	pathset_init(ps);
	if (!reversed) {
		pathset_add(ps, OBS_READ, 0, "/src/a.c", NULL);
		pathset_add(ps, OBS_STAT, OBS_F_NOFOLLOW, "/src/b.h", NULL);
		pathset_add(ps, OBS_LIST, 0, "/src", excl);
		pathset_add(ps, OBS_READ, 0, "/src/a.c", NULL);
	} else {
		const char *excl2[] = {"gen.c", "out.o", NULL};
		pathset_add(ps, OBS_LIST, 0, "/src", excl2);
		pathset_add(ps, OBS_STAT, OBS_F_NOFOLLOW, "/src/b.h", NULL);
		pathset_add(ps, OBS_READ, 0, "/src/a.c", NULL);
	}
	pathset_canonicalise(ps, NULL);
}

static void lookup_order_does_not_change_the_path_set(void **state)
{
	struct pathset a, b;
	build(&a, 0);
	build(&b, 1);
	struct buf ea = BUF_INIT_EMPTY, eb = BUF_INIT_EMPTY;
	buf_init(&ea);
	buf_init(&eb);
	pathset_encode(&a, &ea);
	pathset_encode(&b, &eb);
	assert_int_equal(a.nobs, 3); /* the duplicate read is gone */
	assert_int_equal(ea.len, eb.len);
	assert_memory_equal(ea.data, eb.data, ea.len);
	buf_free(&ea);
	buf_free(&eb);
	pathset_free(&a);
	pathset_free(&b);
}

/* build's path set in a, encoded into enc (buf_free it) and decoded into b. */
static void build_decoded(struct pathset *a, struct buf *enc, struct pathset *b)
{
	struct error e = {0};
	build(a, 0);
	buf_init(enc);
	pathset_encode(a, enc);
	assert_int_equal(pathset_decode(enc->data, enc->len, b, &e), 0);
}

static void encoding_round_trips(void **state)
{
	struct pathset a, b;
	struct buf enc;
	build_decoded(&a, &enc, &b);
	assert_int_equal(b.nobs, a.nobs);
	for (size_t i = 0; i < a.nobs; i++) {
		assert_int_equal(a.obs[i].kind, b.obs[i].kind);
		assert_int_equal(a.obs[i].flags, b.obs[i].flags);
		assert_string_equal(a.paths[a.obs[i].path], b.paths[b.obs[i].path]);
		assert_int_equal(a.obs[i].nexcluded, b.obs[i].nexcluded);
	}
	const char **ex = NULL;
	for (size_t i = 0; i < b.nobs; i++)
		if (b.obs[i].kind == OBS_LIST)
			ex = pathset_excluded(&b, i);
	assert_non_null(ex);
	assert_string_equal(ex[0], "gen.c");
	assert_string_equal(ex[1], "out.o");
	assert_null(ex[2]);
	free(ex);
	buf_free(&enc);
	pathset_free(&a);
	pathset_free(&b);
}

/* A decoded path set keeps its strings in one block: adding to it,
 * canonicalising it and freeing it must still hold and free each string
 * once (the unit tests run under ASan's leak pass). */
static void a_decoded_path_set_can_grow_and_be_freed(void **state)
{
	(void)state;
	struct pathset a, b;
	struct error e = {0};
	struct buf enc;
	build_decoded(&a, &enc, &b);
	assert_non_null(b.arena);
	pathset_add(&b, OBS_READ, 0, "/src/c.h", NULL);
	assert_null(b.arena);
	pathset_canonicalise(&b, NULL);
	assert_int_equal(b.nobs, a.nobs + 1);
	struct buf again;
	buf_init(&again);
	pathset_encode(&b, &again);
	pathset_free(&b);
	assert_int_equal(pathset_decode(again.data, again.len, &b, &e), 0);
	int found = 0;
	for (size_t i = 0; i < b.nobs; i++)
		found += !strcmp(b.paths[b.obs[i].path], "/src/c.h");
	assert_int_equal(found, 1);
	pathset_own_paths(&b);
	free(b.paths[0]);
	b.paths[0] = strdup("/elsewhere");
	pathset_free(&b);
	buf_free(&again);
	buf_free(&enc);
	pathset_free(&a);
}

/* Canonical order is the order of the names (strcmp), whatever order
 * the step looked them up in, down to names that differ only past a
 * long shared prefix or in their excluded names. */
static void observations_are_sorted_by_name(void **state)
{
	(void)state;
	const char *names[] = {"/usr/lib/gcc/x86_64-linux-gnu/12/include/stddef.h",
	                       "/usr/lib/gcc/x86_64-linux-gnu/12/include/stdarg.h",
	                       "/usr/lib/gcc/x86_64-linux-gnu/12/include",
	                       "/usr/lib/gcc/x86_64-linux-gnu/12/include-fixed/limits.h",
	                       "/usr/include/stdio.h"};
	const char *ex_b[] = {"b", NULL}, *ex_a[] = {"a", NULL};
	struct pathset ps;
	pathset_init(&ps);
	for (size_t i = 0; i < 5; i++)
		pathset_add(&ps, OBS_STAT, 0, names[i], NULL);
	pathset_add(&ps, OBS_LIST, 0, "/usr/include", ex_b);
	pathset_add(&ps, OBS_LIST, 0, "/usr/include", ex_a);
	pathset_canonicalise(&ps, NULL);
	assert_int_equal(ps.nobs, 7);
	for (size_t i = 1; i < ps.nobs; i++)
		assert_true(strcmp(ps.paths[ps.obs[i - 1].path], ps.paths[ps.obs[i].path]) <= 0);
	assert_string_equal(ps.paths[ps.obs[0].path], "/usr/include");
	assert_string_equal(ps.paths[ps.obs[0].excluded[0]], "a");
	assert_string_equal(ps.paths[ps.obs[1].excluded[0]], "b");
	assert_string_equal(ps.paths[ps.obs[2].path], "/usr/include/stdio.h");
	assert_string_equal(ps.paths[ps.obs[6].path],
	                    "/usr/lib/gcc/x86_64-linux-gnu/12/include/stddef.h");
	pathset_free(&ps);
}

/* A decoded path set may name one path twice (the encoding does not
 * forbid it): its two observations of that name are one, as they are
 * when the names are compared. */
static void a_name_held_twice_is_one_observation(void **state)
{
	(void)state;
	struct buf enc;
	buf_init(&enc);
	buf_put_u32(&enc, 0x53505443u); /* "CTPS" */
	buf_put_u32(&enc, 3);
	buf_put_str(&enc, "/src/b.h");
	buf_put_str(&enc, "/src/a.h");
	buf_put_str(&enc, "/src/b.h");
	buf_put_u32(&enc, 3);
	const uint32_t at[] = {0, 1, 2};
	for (size_t i = 0; i < 3; i++) {
		buf_put_u8(&enc, OBS_READ);
		buf_put_u8(&enc, 0);
		buf_put_u32(&enc, at[i]);
	}
	struct pathset ps;
	struct error e = {0};
	assert_int_equal(pathset_decode(enc.data, enc.len, &ps, &e), 0);
	size_t *perm;
	pathset_canonicalise(&ps, &perm);
	assert_int_equal(ps.nobs, 2);
	assert_string_equal(ps.paths[ps.obs[0].path], "/src/a.h");
	assert_string_equal(ps.paths[ps.obs[1].path], "/src/b.h");
	assert_int_equal(perm[0], 1);
	assert_int_equal(perm[1], 0);
	assert_int_equal(perm[2], 1);
	free(perm);
	pathset_free(&ps);
	buf_free(&enc);
}

static void truncated_or_flipped_encodings_are_rejected_without_crashing(void **state)
{
	struct pathset a, b;
	struct error e = {0};
	build(&a, 0);
	struct buf enc;
	buf_init(&enc);
	pathset_encode(&a, &enc);
	for (size_t cut = 0; cut < enc.len; cut++)
		assert_int_equal(pathset_decode(enc.data, cut, &b, &e), -1);
	/* Every single-byte corruption either fails or decodes to something
	 * well-formed; none reads out of bounds (ASan build checks that). */
	for (size_t i = 0; i < enc.len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			enc.data[i] ^= (char)(1 << bit);
			if (pathset_decode(enc.data, enc.len, &b, &e) == 0)
				pathset_free(&b);
			enc.data[i] ^= (char)(1 << bit);
		}
	}
	buf_free(&enc);
	pathset_free(&a);
}

static void strong_key_depends_on_the_path_set_not_only_the_values(void **state)
{
	struct digest weak, ps1, ps2, s1, s2;
	memset(&weak, 1, sizeof weak);
	memset(&ps1, 2, sizeof ps1);
	memset(&ps2, 3, sizeof ps2);
	struct buf values;
	buf_init(&values);
	buf_put_bytes(&values, "E\x02\0\0\0", 5);
	pathset_strong_key_from_values(&weak, &ps1, values.data, values.len, &s1);
	pathset_strong_key_from_values(&weak, &ps2, values.data, values.len, &s2);
	assert_false(digest_equal(&s1, &s2));
	buf_free(&values);
}

static void evaluating_now_matches_recorded_values(void **state)
{
	char dir[] = "/tmp/cachet-unit-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *file = xasprintf("%s/f.txt", dir);
	char *absent = xasprintf("%s/absent.h", dir);
	FILE *f = fopen(file, "w");
	fputs("hello", f);
	fclose(f);
	struct pathset ps;
	pathset_init(&ps);
	pathset_add(&ps, OBS_READ, 0, file, NULL);
	pathset_add(&ps, OBS_STAT, 0, absent, NULL);
	pathset_add(&ps, OBS_LIST, 0, dir, NULL);
	pathset_canonicalise(&ps, NULL);
	struct digest weak, psd, s1, s2, s3;
	memset(&weak, 7, sizeof weak);
	memset(&psd, 8, sizeof psd);
	struct buf values;
	buf_init(&values);
	pathset_strong_key(&ps, NULL, &weak, &psd, NULL, &values, &s1);
	pathset_strong_key_from_values(&weak, &psd, values.data, values.len, &s2);
	assert_true(digest_equal(&s1, &s2));
	/* A header appearing where the step found none changes the key. */
	f = fopen(absent, "w");
	fclose(f);
	pathset_strong_key(&ps, NULL, &weak, &psd, NULL, NULL, &s3);
	assert_false(digest_equal(&s1, &s3));
	unlink(absent);
	unlink(file);
	rmdir(dir);
	free(file);
	free(absent);
	buf_free(&values);
	pathset_free(&ps);
}

static void neutral_environment_and_make_jobs(void **state)
{
	assert_true(env_is_neutral("TERM", 4, NULL));
	assert_false(env_is_neutral("SSH_AUTH_SOCK", 13, NULL));
	assert_true(env_keyed_by_effect("SSH_AUTH_SOCK", 13, NULL));
	assert_true(env_is_neutral("CACHET_DIR", 10, NULL));
	assert_false(env_is_neutral("PWD", 3, NULL));
	assert_false(env_is_neutral("TERMINAL", 8, NULL));
	assert_false(env_is_neutral("CFLAGS", 6, NULL));
	const char *extra[] = {"MY_BUILD_ID", "CI_*", NULL};
	assert_true(env_is_neutral("MY_BUILD_ID", 11, extra));
	assert_true(env_is_neutral("CI_JOB", 6, extra));
	char *s = env_strip_make_jobs("ks -j4 --jobserver-auth=3,4 -- CC=gcc -jx=1");
	assert_string_equal(s, "ks -- CC=gcc -jx=1");
	free(s);
	s = env_strip_make_jobs(" --jobserver-fds=3,4 -j");
	assert_string_equal(s, "");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(lookup_order_does_not_change_the_path_set),
	    cmocka_unit_test(encoding_round_trips),
	    cmocka_unit_test(a_decoded_path_set_can_grow_and_be_freed),
	    cmocka_unit_test(observations_are_sorted_by_name),
	    cmocka_unit_test(a_name_held_twice_is_one_observation),
	    cmocka_unit_test(truncated_or_flipped_encodings_are_rejected_without_crashing),
	    cmocka_unit_test(strong_key_depends_on_the_path_set_not_only_the_values),
	    cmocka_unit_test(evaluating_now_matches_recorded_values),
	    cmocka_unit_test(neutral_environment_and_make_jobs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
