/* Recording: a step's own writes are not its inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/record.h"

static char dir[64];

static char *in_dir(const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static struct trace_event ev(enum trace_event_kind kind, const char *path)
{
	struct trace_event e;
	memset(&e, 0, sizeof e);
	e.kind = kind;
	e.path = (char *)path;
	struct stat st;
	if (kind != TRACE_TOUCH && lstat(path, &st) == 0)
		file_id_from_stat(&st, &e.id);
	return e;
}

static int find_obs(const struct pathset *ps, enum obs_kind kind, const char *path)
{
	for (size_t i = 0; i < ps->nobs; i++)
		if (ps->obs[i].kind == kind && !strcmp(ps->paths[ps->obs[i].path], path))
			return (int)i;
	return -1;
}

static int setup(void **state)
{
	strcpy(dir, "/tmp/cachet-record-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char *cmd = xasprintf("rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	return 0;
}

static void probes_of_the_steps_own_outputs_are_dropped(void **state)
{
	char *src = in_dir("a.c"), *out = in_dir("a.o"), *hdr = in_dir("missing.h");
	write_file(src, "int x;");
	struct trace_event events[5];
	events[0] = ev(TRACE_READ, src);
	events[1] = ev(TRACE_PROBE, hdr);
	events[1].err = ENOENT;
	events[2] = ev(TRACE_READLINK, out); /* gcc readlinks its -o target */
	events[2].err = ENOENT;
	events[3] = ev(TRACE_TOUCH, out);
	events[4] = ev(TRACE_LIST, dir);
	write_file(out, "object"); /* what the step wrote */
	struct record rec;
	struct error e = {0};
	assert_int_equal(record_run(events, 5, NULL, NULL, NULL, NULL, &rec, &e), 0);
	assert_null(rec.not_storable);
	assert_true(find_obs(&rec.ps, OBS_READ, src) >= 0);
	assert_true(find_obs(&rec.ps, OBS_STAT, hdr) >= 0);
	assert_int_equal(find_obs(&rec.ps, OBS_READLINK, out), -1);
	int list = find_obs(&rec.ps, OBS_LIST, dir);
	assert_true(list >= 0);
	const char **ex = pathset_excluded(&rec.ps, (size_t)list);
	assert_non_null(ex);
	assert_string_equal(ex[0], "a.o");
	assert_null(ex[1]);
	free(ex);
	record_free(&rec);
	free(src), free(out), free(hdr);
}

/* `cd sub && gcc -o ../a.o`: the driver readlinks the absolute path it
 * computed, the assembler writes "sub/../a.o". One file, the step's own. */
static void a_probe_of_the_steps_output_under_another_spelling_is_its_own(void **state)
{
	char *sub = in_dir("sub"), *out = in_dir("a.o"), *dotdot = in_dir("sub/../a.o");
	assert_int_equal(mkdir(sub, 0755), 0);
	struct trace_event events[2];
	events[0] = ev(TRACE_READLINK, out);
	events[0].err = ENOENT;
	events[1] = ev(TRACE_TOUCH, dotdot);
	write_file(out, "object");
	struct record rec;
	struct error e = {0};
	assert_int_equal(record_run(events, 2, NULL, NULL, NULL, NULL, &rec, &e), 0);
	assert_null(rec.not_storable);
	assert_int_equal(find_obs(&rec.ps, OBS_READLINK, out), -1);
	assert_true(find_obs(&rec.ps, OBS_CREATED, out) >= 0);
	record_free(&rec);
	free(sub), free(out), free(dotdot);
}

static void a_read_before_the_steps_own_rewrite_keeps_the_old_content(void **state)
{
	char *f = in_dir("in.txt");
	write_file(f, "before");
	struct trace_event events[3];
	events[0] = ev(TRACE_READ, f);
	events[1] = ev(TRACE_TOUCH, f);
	events[1].pre_exists = 1;
	events[1].has_pre_digest = 1;
	digest_bytes("before", 6, &events[1].pre_digest);
	events[2] = ev(TRACE_READ, f); /* reading back its own write: ignored */
	write_file(f, "after!");       /* sed -i */
	struct record rec;
	struct error e = {0};
	assert_int_equal(record_run(events, 3, NULL, NULL, NULL, NULL, &rec, &e), 0);
	assert_null(rec.not_storable);
	/* The file by its old content, and its directory, which must exist
	 * for the rewrite (sorted by path: the directory first). */
	assert_int_equal(rec.ps.nobs, 2);
	assert_int_equal(rec.ps.obs[0].kind, OBS_STAT);
	assert_int_equal(rec.ps.obs[1].kind, OBS_READ);
	struct reader r;
	reader_init(&r, rec.values.data, rec.values.len);
	size_t len;
	const unsigned char *v = reader_bytes(&r, &len);
	assert_non_null(v);
	assert_int_equal(v[0], 'S');
	v = reader_bytes(&r, &len);
	assert_int_equal(len, 1 + DIGEST_LEN);
	assert_int_equal(v[0], 'F');
	assert_memory_equal(v + 1, events[1].pre_digest.b, DIGEST_LEN);
	record_free(&rec);
	free(f);
}

static void an_input_changed_by_someone_else_during_the_run_is_not_stored(void **state)
{
	char *f = in_dir("header.h");
	write_file(f, "v1");
	struct trace_event events[1];
	events[0] = ev(TRACE_READ, f);
	sleep(0); /* same tick is possible: change size so the fingerprint moves */
	write_file(f, "v2 longer");
	struct record rec;
	struct error e = {0};
	assert_int_equal(record_run(events, 1, NULL, NULL, NULL, NULL, &rec, &e), 0);
	assert_non_null(rec.not_storable);
	assert_string_equal(rec.not_storable, "input modified during run");
	record_free(&rec);
	free(f);
}

static void a_path_found_absent_that_appeared_during_the_run_is_not_stored(void **state)
{
	char *f = in_dir("late.h");
	struct trace_event events[1];
	events[0] = ev(TRACE_PROBE, f);
	events[0].err = ENOENT;
	write_file(f, "appeared");
	struct record rec;
	struct error e = {0};
	assert_int_equal(record_run(events, 1, NULL, NULL, NULL, NULL, &rec, &e), 0);
	assert_non_null(rec.not_storable);
	record_free(&rec);
	unlink(f);
	free(f);
}

static void ignored_roots_leave_no_observation(void **state)
{
	char *f = in_dir("tmpfile");
	write_file(f, "x");
	struct trace_event events[1];
	events[0] = ev(TRACE_READ, f);
	const char *ignore[] = {dir, NULL};
	struct record rec;
	struct error e = {0};
	assert_int_equal(record_run(events, 1, ignore, NULL, NULL, NULL, &rec, &e), 0);
	assert_int_equal(rec.ps.nobs, 0);
	record_free(&rec);
	free(f);
}

/* The names of the paths a compiler wrote, searched for in its outputs
 * while they are hashed (duplicate.h asks, without reading them back). */
static void outputs_are_searched_for_the_names_of_the_steps_paths(void **state)
{
	char *old_cwd = getcwd(NULL, 0);
	assert_int_equal(chdir(dir), 0);
	char *obj = in_dir("x.o"), *dep = in_dir("x.d"), *cache = in_dir("cache");
	char *stem = in_dir("x"), *gcc = in_dir("gcc"), *sh = in_dir("sh");
	write_file(gcc, "a compiler, by its name");
	write_file(sh, "a shell");
	FILE *f = fopen(obj, "w");
	assert_non_null(f);
	fwrite("\177ELF\0", 1, 5, f);
	fputs(obj, f); /* as an object names its own .dwo beside it */
	fclose(f);
	write_file(dep, "x.o: x.c\n");
	struct trace_event events[5];
	events[0] = ev(TRACE_EXEC, gcc);
	const char *paths[2] = {obj, dep};
	for (int i = 0; i < 2; i++) {
		events[1 + 2 * i] = ev(TRACE_TOUCH, paths[i]);
		events[2 + 2 * i] = ev(TRACE_FINAL, paths[i]);
	}
	struct store *s;
	struct error e = {0};
	assert_int_equal(store_open(cache, 0, &s, &e), 0);
	struct record rec;
	assert_int_equal(record_run(events, 5, NULL, NULL, s, NULL, &rec, &e), 0);
	if (rec.not_storable)
		fail_msg("%s", rec.not_storable);
	assert_int_equal(rec.result.noutputs, 2);
	const struct digest *of_obj = NULL, *of_dep = NULL;
	for (size_t k = 0; k < rec.result.noutputs; k++)
		if (!strcmp(rec.result.outputs[k].path, obj))
			of_obj = &rec.result.outputs[k].blob.digest;
		else
			of_dep = &rec.result.outputs[k].blob.digest;
	assert_non_null(of_obj);
	assert_non_null(of_dep);
	int has_nul = -1;
	char *abs_obj[] = {obj}, *rel_obj[] = {"x.o"}, *stems[] = {stem, ""}, *other[] = {"y.o"};
	assert_int_equal(record_names_held(&rec, of_obj, abs_obj, 1, &has_nul), 1);
	assert_int_equal(has_nul, 1);
	assert_int_equal(record_names_held(&rec, of_obj, stems, 2, &has_nul), 1);
	assert_int_equal(record_names_held(&rec, of_dep, rel_obj, 1, &has_nul), 1);
	assert_int_equal(has_nul, 0);
	assert_int_equal(record_names_held(&rec, of_dep, abs_obj, 1, &has_nul), 0);
	/* A name not searched for is unknown, not absent. */
	assert_int_equal(record_names_held(&rec, of_dep, other, 1, &has_nul), -1);
	record_free(&rec);
	/* A step that ran a shell is never served under other names: its
	 * outputs are not searched. */
	events[0] = ev(TRACE_EXEC, sh);
	assert_int_equal(record_run(events, 5, NULL, NULL, s, NULL, &rec, &e), 0);
	assert_int_equal(rec.nnames, 0);
	assert_int_equal(record_names_held(&rec, of_obj, abs_obj, 1, &has_nul), -1);
	record_free(&rec);
	store_close(s);
	assert_int_equal(chdir(old_cwd), 0);
	free(old_cwd);
	free(sh);
	free(gcc);
	free(stem);
	free(cache);
	free(dep);
	free(obj);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(probes_of_the_steps_own_outputs_are_dropped, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(
	        a_probe_of_the_steps_output_under_another_spelling_is_its_own, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        a_read_before_the_steps_own_rewrite_keeps_the_old_content, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        an_input_changed_by_someone_else_during_the_run_is_not_stored, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        a_path_found_absent_that_appeared_during_the_run_is_not_stored, setup, teardown),
	    cmocka_unit_test_setup_teardown(ignored_roots_leave_no_observation, setup, teardown),
	    cmocka_unit_test_setup_teardown(outputs_are_searched_for_the_names_of_the_steps_paths,
	                                    setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
