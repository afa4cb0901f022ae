/* The value of a path the step created (OBS_CREATED) is the same through
 * an evaluation's observe_memo, which shares one lookup between the probe
 * and the check of what the entry restores there, as without one: for a
 * file holding the output, one holding something else, a symlink to each
 * (probed with and without following it) and an absent path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cachet/observe.h"

static char dir[] = "/tmp/cachet-created-XXXXXX";

static char *at(const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

static void write_file(const char *name, const char *text)
{
	char *p = at(name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(p, 0644);
	free(p);
}

/* The value without a memo and through one shared by all the calls of a
 * case, as one evaluation shares it; both must agree. */
static void value_both_ways(const char *path, unsigned flags, const char *desc,
                            struct observe_memo *memo, struct buf *out)
{
	const char *excluded[] = {desc, NULL};
	struct buf plain;
	buf_init(&plain);
	observe_value(OBS_CREATED, flags, path, excluded, NULL, &plain);
	buf_reset(out);
	observe_value_memo(OBS_CREATED, flags, path, excluded, NULL, memo, out, NULL);
	assert_int_equal(out->len, plain.len);
	assert_memory_equal(out->data, plain.data, plain.len);
	buf_free(&plain);
}

static void created_values_agree_with_and_without_the_memo(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	write_file("out.o", "the output");
	write_file("edited.o", "a user's edit");
	char *out = at("out.o"), *edited = at("edited.o"), *absent = at("absent.o");
	char *to_out = at("to_out"), *to_edited = at("to_edited");
	assert_int_equal(symlink(out, to_out), 0);
	assert_int_equal(symlink(edited, to_edited), 0);

	struct digest d;
	digest_bytes("the output", 10, &d);
	struct buf expected, seen, desc, v;
	buf_init(&expected);
	buf_init(&seen);
	buf_init(&desc);
	buf_init(&v);
	observe_created_file(&expected, &d, 0644);
	/* The step's probe saw a directory there: none of these now. */
	observe_created_stat_value(&seen, S_IFDIR | 0755, 0);

	const char probes[] = {OBS_CREATED_STAT, OBS_CREATED_READLINK, OBS_CREATED_MADE};
	const char *paths[] = {out, edited, absent, to_out, to_edited};
	for (size_t p = 0; p < sizeof probes; p++) {
		buf_reset(&desc);
		observe_created_describe(&desc, probes[p], seen.data, seen.len, expected.data);
		for (unsigned flags = 0; flags <= OBS_F_NOFOLLOW; flags += OBS_F_NOFOLLOW) {
			struct observe_memo memo;
			memset(&memo, 0, sizeof memo);
			for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
				value_both_ways(paths[i], flags, desc.data, &memo, &v);
				/* Asked twice in a row (two observations of
				 * one path), the memo answers the same. */
				struct buf again;
				buf_init(&again);
				value_both_ways(paths[i], flags, desc.data, &memo, &again);
				assert_int_equal(again.len, v.len);
				assert_memory_equal(again.data, v.data, v.len);
				buf_free(&again);
				/* The output in place, or nothing there: 'A'. */
				if (paths[i] == absent ||
				    (paths[i] == out && probes[p] != OBS_CREATED_MADE))
					assert_true(v.len == 1 && v.data[0] == 'A');
				if (paths[i] == edited)
					assert_false(v.len == 1 && v.data[0] == 'A');
			}
		}
	}
	buf_free(&expected);
	buf_free(&seen);
	buf_free(&desc);
	buf_free(&v);
	unlink(to_out);
	unlink(to_edited);
	unlink(out);
	unlink(edited);
	rmdir(dir);
	free(out), free(edited), free(absent), free(to_out), free(to_edited);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(created_values_agree_with_and_without_the_memo),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
