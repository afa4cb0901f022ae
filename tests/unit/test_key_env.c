/* The variables keyed by effect: which they are, the search of outputs for
 * their values, and the facts a recorded path set keys for them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cachet/env.h"
#include "cachet/observe.h"
#include "cachet/pathset.h"
#include "cachet/step.h"

static uint64_t held_in(const char *const *env, const char *bytes)
{
	struct env_finder ef;
	env_finder_init(&ef, env);
	/* Fed in two pieces: a match may straddle them. */
	size_t half = strlen(bytes) / 2;
	env_finder_feed(&ef, bytes, half);
	env_finder_feed(&ef, bytes + half, strlen(bytes) - half);
	return env_finder_done(&ef);
}

static void per_run_and_make_variables_are_keyed_by_effect(void **state)
{
	(void)state;
	assert_true(env_keyed_by_effect("PATH", 4, NULL));
	assert_true(env_keyed_by_effect("MAKEFLAGS", 9, NULL));
	assert_true(env_keyed_by_effect("HYPERFINE_RANDOMIZED_ENVIRONMENT_OFFSET", 39, NULL));
	assert_true(env_keyed_by_effect("SSH_CONNECTION", 14, NULL));
	assert_true(env_keyed_by_effect("OLDPWD", 6, NULL));
	assert_false(env_keyed_by_effect("PATHS", 5, NULL));
	assert_false(env_keyed_by_effect("CI", 2, NULL));
	assert_false(env_keyed_by_effect("CFLAGS", 6, NULL));
	assert_false(env_keyed_by_effect("CPATH", 5, NULL));
	const char *extra[] = {"BUILDKITE_*", NULL};
	assert_true(env_keyed_by_effect("BUILDKITE_JOB_ID", 16, extra));
	assert_true(env_is_make_var("MFLAGS", 6));
	assert_false(env_is_make_var("CARGO_MAKEFLAGS", 15));
}

static void values_are_found_whole_or_as_lines(void **state)
{
	(void)state;
	const char *env[] = {"GITHUB_RUN_ID=1234567890", "MAKEFLAGS=s",
	                     "PATH=/opt/x/bin:/usr/bin:/bin", NULL};
	assert_int_equal(held_in(env, "object bytes: s, k, /usr/lib, 12345"), 0);
	assert_int_equal(held_in(env, "built by run 1234567890\n"), 1);
	/* A short value only as a line of its own, or as NAME=value. */
	assert_int_equal(held_in(env, "s\n"), 2);
	assert_int_equal(held_in(env, "log\ns\nmore"), 2);
	assert_int_equal(held_in(env, "MAKEFLAGS=s HOME=/root"), 2);
	/* PATH whole, or one of its directories (config.log, a script
	 * printing the first), or a short one as a line. */
	assert_int_equal(held_in(env, "PATH: /opt/x/bin\n"), 4);
	assert_int_equal(held_in(env, "/bin"), 4);
	assert_int_equal(held_in(env, "#!/bin/sh"), 0);
}

static void too_many_values_count_as_found(void **state)
{
	(void)state;
	struct buf path;
	buf_init(&path);
	buf_addstr(&path, "PATH=");
	for (int i = 0; i < 80; i++)
		buf_addf(&path, "%s/opt/tool%02d/bin", i ? ":" : "", i);
	const char *env[] = {"A_ID=12345678901", path.data, NULL};
	assert_int_equal(held_in(env, "nothing here"), 2);
	buf_free(&path);
}

static int has(char **names, const char *name)
{
	for (char **n = names; *n; n++)
		if (!strcmp(*n, name))
			return 1;
	return 0;
}

static void free_names(char **names)
{
	for (char **n = names; *n; n++)
		free(*n);
	free(names);
}

/* Whether the programs a step ran read only the environment they are known
 * to read goes by the name of the file each leads to, through the symlinks
 * of its last component (gcc -> gcc-12 -> x86_64-linux-gnu-gcc-12), whose
 * ".." is the kernel's: never folded as text. */
static int closed(const char *exec)
{
	char *env[] = {"PATH=/usr/bin", NULL};
	struct pathset ps;
	pathset_init(&ps);
	pathset_add(&ps, OBS_EXEC, 0, exec, NULL);
	char **names = env_effect_facts(&ps, env, 0, "/w");
	int closed = !has(names, OBSERVE_FACT_MAKE_VARS);
	free_names(names);
	pathset_free(&ps);
	return closed;
}

static void programs_are_known_by_the_file_they_lead_to(void **state)
{
	(void)state;
	char dir[] = "/tmp/cachet-env-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *cmd = xasprintf("cd %s && mkdir -p real deep/bin deep/real && "
	                      "cp /bin/true real/x86_64-linux-gnu-gcc-12 && "
	                      "cp /bin/true deep/real/python3 && "
	                      "ln -s x86_64-linux-gnu-gcc-12 real/gcc-12 && "
	                      "ln -s python3 deep/real/gcc-12 && "
	                      "ln -s ../real/gcc-12 real/gcc && ln -s real linked && "
	                      "ln -s deep/bin bin && ln -s ../real/gcc-12 deep/bin/gcc && "
	                      "printf '#!/bin/sh\\n' > real/script && ln -s script real/cc",
	                      dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	const char *closed_ones[] = {"real/gcc", "real/gcc-12", "linked/gcc",
	                             "real/x86_64-linux-gnu-gcc-12"};
	for (size_t i = 0; i < sizeof closed_ones / sizeof *closed_ones; i++) {
		char *p = xasprintf("%s/%s", dir, closed_ones[i]);
		assert_true(closed(p));
		free(p);
	}
	/* bin/.. is deep, where gcc-12 leads to python3. */
	char *p = xasprintf("%s/bin/gcc", dir);
	assert_false(closed(p));
	free(p);
	/* A script named cc is a shell. */
	p = xasprintf("%s/real/cc", dir);
	assert_false(closed(p));
	free(p);
	/* Nothing there: an exec that failed, not a program that ran. */
	p = xasprintf("%s/real/absent", dir);
	assert_true(closed(p));
	free(p);
	cmd = xasprintf("rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

static void facts_follow_what_the_step_did(void **state)
{
	(void)state;
	char *env[] = {"MAKEFLAGS=s", "OLDPWD=/home/u/other", "PATH=/home/u/bin:/usr/bin",
	               "XDG_SESSION_ID=3", NULL};
	struct pathset ps;
	pathset_init(&ps);
	pathset_add(&ps, OBS_STAT, 0, "/home/u/bin/gcc", NULL);
	pathset_add(&ps, OBS_EXEC, 0, "/usr/bin/gcc", NULL);
	pathset_add(&ps, OBS_READ, 0, "/usr/include/stdio.h", NULL);
	char **names = env_effect_facts(&ps, env, 0, "/w");
	assert_true(has(names, "which:gcc"));
	assert_false(has(names, "which:stdio.h"));
	assert_false(has(names, "env:PATH"));
	assert_false(has(names, "env:MAKEFLAGS"));
	assert_false(has(names, "env:OLDPWD"));
	assert_false(has(names, "env:XDG_SESSION_ID"));
	free_names(names);
	/* Held in an output: keyed by value. */
	names = env_effect_facts(&ps, env, 1u << 3, "/w");
	assert_true(has(names, "env:XDG_SESSION_ID"));
	free_names(names);
	/* A make run keys make's variables, set or not; `cd -` OLDPWD. */
	pathset_add(&ps, OBS_EXEC, 0, "/usr/bin/make", NULL);
	pathset_add(&ps, OBS_STAT, 0, "/home/u/other", NULL);
	names = env_effect_facts(&ps, env, 0, "/w");
	assert_true(has(names, "env:MAKEFLAGS"));
	assert_true(has(names, "env:MAKELEVEL"));
	assert_true(has(names, "env:OLDPWD"));
	assert_true(has(names, "which:make"));
	free_names(names);
	/* Without PATH, its absence is keyed. */
	char *no_path[] = {NULL};
	names = env_effect_facts(&ps, no_path, 0, "/w");
	assert_true(has(names, "env:PATH"));
	free_names(names);
	pathset_free(&ps);
}

static void fact_names_from_untrusted_path_sets_are_checked(void **state)
{
	(void)state;
	assert_true(observe_fact_known("env:PATH"));
	assert_true(observe_fact_known("which:gcc"));
	assert_false(observe_fact_known("env:"));
	assert_false(observe_fact_known("env:A=B"));
	assert_false(observe_fact_known("which:"));
	assert_false(observe_fact_known("which:../bin/sh"));
	struct buf v;
	buf_init(&v);
	setenv("CACHET_TEST_UNSET_LATER", "secret-value", 1);
	observe_fact_value("env:CACHET_TEST_UNSET_LATER", &v);
	/* A digest, never the value. */
	assert_null(memmem(v.data, v.len, "secret-value", 12));
	assert_int_equal(v.data[0], 'P');
	buf_reset(&v);
	unsetenv("CACHET_TEST_UNSET_LATER");
	observe_fact_value("env:CACHET_TEST_UNSET_LATER", &v);
	assert_string_equal(v.data, "PCACHET_TEST_UNSET_LATER unset");
	buf_reset(&v);
	setenv("PATH", "/nonexistent-dir:/bin:/usr/bin", 1);
	observe_fact_value("which:sh", &v);
	assert_string_equal(v.data, "P/bin/sh");
	buf_reset(&v);
	observe_fact_value("which:no-such-program-here", &v);
	assert_string_equal(v.data, "Pno-such-program-here not found");
	buf_reset(&v);
	/* An empty entry is the cwd (which holds no sh here): passed over. */
	setenv("PATH", ":/nonexistent-dir::/bin", 1);
	observe_fact_value("which:sh", &v);
	assert_string_equal(v.data, "P/bin/sh");
	buf_free(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(per_run_and_make_variables_are_keyed_by_effect),
	    cmocka_unit_test(values_are_found_whole_or_as_lines),
	    cmocka_unit_test(too_many_values_count_as_found),
	    cmocka_unit_test(facts_follow_what_the_step_did),
	    cmocka_unit_test(programs_are_known_by_the_file_they_lead_to),
	    cmocka_unit_test(fact_names_from_untrusted_path_sets_are_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
