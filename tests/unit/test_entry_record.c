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

#include "cachet/dirfp.h"
#include "cachet/observe.h"
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

/* A run that leaves a memo notes, when it checks that a path the step
 * found absent still is, the directory that decides it: the memo's
 * collection takes that, and no lookup of its own. A run without a memo
 * notes nothing. */
static void a_memo_run_notes_the_directories_of_its_absent_paths(void **state)
{
	char *src = in_dir("a.c"), *hdr = in_dir("missing.h"), *deep = in_dir("no/such/x.h");
	char *cache = in_dir("cache"), *subdir = in_dir("include"),
	     *later = in_dir("include/new.h");
	assert_int_equal(mkdir(subdir, 0755), 0);
	write_file(src, "int x;");
	struct store *s;
	struct error e = {0};
	assert_int_equal(store_open(cache, 0, &s, &e), 0);
	/* Fingerprints are taken only of directories settled for a while. */
	usleep((useconds_t)(DIGEST_CACHE_MARGIN_NS / 1000) + 200000);
	struct trace_event events[4];
	events[3] = ev(TRACE_PROBE, subdir); /* as gcc stats its include directories */
	events[0] = ev(TRACE_READ, src);
	events[1] = ev(TRACE_PROBE, hdr);
	events[1].err = ENOENT;
	events[2] = ev(TRACE_READLINK, deep);
	events[2].err = ENOENT;
	struct record_env env = {.cwd = dir, .memo_dirs = 1};
	struct record rec;
	struct stat before;
	assert_int_equal(stat(subdir, &before), 0);
	assert_int_equal(record_run_scanning(events, 4, NULL, NULL, &env, s, NULL, &rec, &e), 0);
	assert_null(rec.not_storable);
	assert_non_null(rec.dirs);
	/* Changed after the recording looked: its fingerprint is the one
	 * that lookup took, which a hit then finds changed. */
	write_file(later, "");
	struct dirfp_set set;
	dirfp_collect_noted(&rec.ps, rec.values.data, rec.values.len, rec.dirs, &set);
	assert_int_equal(set.ndirs, 2);
	int absent = find_obs(&rec.ps, OBS_STAT, hdr);
	assert_true(absent >= 0 && set.obs_dir[absent] != 0);
	assert_string_equal(set.dirs[set.obs_dir[absent] - 1].dir, dir);
	int at = find_obs(&rec.ps, OBS_STAT, subdir);
	assert_true(at >= 0 && set.obs_dir[at] != 0);
	struct file_id then;
	file_id_from_stat(&before, &then);
	assert_string_equal(set.dirs[set.obs_dir[at] - 1].dir, subdir);
	assert_true(file_id_equal(&set.dirs[set.obs_dir[at] - 1].id, &then));
	assert_int_not_equal(set.obs_dir[find_obs(&rec.ps, OBS_READLINK, deep)], 0);
	assert_int_equal(set.obs_dir[find_obs(&rec.ps, OBS_READ, src)], 0);
	dirfp_free(&set);
	record_free(&rec);
	env.memo_dirs = 0;
	assert_int_equal(record_run_scanning(events, 4, NULL, NULL, &env, s, NULL, &rec, &e), 0);
	assert_null(rec.dirs);
	record_free(&rec);
	store_close(s);
	free(src);
	free(hdr);
	free(deep);
	free(cache);
	free(subdir);
	free(later);
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

/* Value i of rec's path set, as record.h stores them. */
static void value_at(const struct record *rec, size_t i, struct buf *out)
{
	struct reader r;
	reader_init(&r, rec->values.data, rec->values.len);
	const void *v = NULL;
	size_t len = 0;
	for (size_t k = 0; k <= i; k++)
		v = reader_bytes(&r, &len);
	assert_non_null(v);
	buf_reset(out);
	buf_add(out, v, len);
}

static int env_fact(const char *name)
{
	return !strncmp(name, OBSERVE_FACT_ENV, strlen(OBSERVE_FACT_ENV)) ||
	       !strncmp(name, OBSERVE_FACT_WHICH, strlen(OBSERVE_FACT_WHICH)) ||
	       !strcmp(name, OBSERVE_FACT_MAKE_VARS);
}

/* A directory beneath the cwd that the step stat'ed is keyed by its
 * listing unless the step looked inside it: a lookup of a name in it, or
 * in a directory below it, at any depth. */
static void a_stated_directory_is_listed_unless_the_step_looked_inside(void **state)
{
	char *sub = in_dir("sub"), *deep = in_dir("sub/deep"), *f = in_dir("sub/deep/f");
	char *near = in_dir("near"), *missing = in_dir("near/missing.h");
	char *other = in_dir("other");
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(mkdir(deep, 0755), 0);
	assert_int_equal(mkdir(near, 0755), 0);
	assert_int_equal(mkdir(other, 0755), 0);
	write_file(f, "read");
	char *cwd = getcwd(NULL, 0);
	assert_int_equal(chdir(dir), 0);
	struct trace_event events[5];
	events[0] = ev(TRACE_PROBE, sub);
	events[1] = ev(TRACE_READ, f);
	events[2] = ev(TRACE_PROBE, near);
	events[3] = ev(TRACE_PROBE, missing);
	events[3].err = ENOENT;
	events[4] = ev(TRACE_PROBE, other);
	for (size_t i = 0; i < 5; i++)
		if (events[i].kind == TRACE_PROBE && !events[i].err)
			events[i].has_seen = 1;
	struct record rec;
	struct error e = {0};
	assert_int_equal(record_run(events, 5, NULL, NULL, NULL, NULL, &rec, &e), 0);
	assert_int_equal(chdir(cwd), 0);
	assert_null(rec.not_storable);
	assert_int_equal(find_obs(&rec.ps, OBS_LIST, sub), -1);
	assert_int_equal(find_obs(&rec.ps, OBS_LIST, near), -1);
	assert_true(find_obs(&rec.ps, OBS_LIST, other) >= 0);
	record_free(&rec);
	free(cwd);
	free(sub), free(deep), free(f), free(near), free(missing), free(other);
}

/* A which fact along a PATH whose first directories the step probed and
 * found empty, and whose next one holds a program the step never looked
 * for: the candidates its lookups found missing are skipped (the check
 * made those lookups after the step), the next one is still looked up,
 * and the value is the program execvp would run now. */
static void a_which_fact_skips_only_the_candidates_checked_missing(void **state)
{
	char *empty = in_dir("empty"), *probed = in_dir("empty/tool");
	char *other = in_dir("other"), *unprobed = in_dir("other/tool");
	char *bin = in_dir("bin2"), *tool = in_dir("bin2/tool"), *cache = in_dir("cache");
	assert_int_equal(mkdir(empty, 0755), 0);
	assert_int_equal(mkdir(other, 0755), 0);
	assert_int_equal(mkdir(bin, 0755), 0);
	write_file(tool, "the tool the step ran");
	write_file(unprobed, "a tool the step never looked for");
	assert_int_equal(chmod(tool, 0755), 0);
	assert_int_equal(chmod(unprobed, 0755), 0);
	/* The search ends in the caller's PATH: a failed assertion leaves
	 * this one set, and the teardown still finds rm. */
	const char *saved = getenv("PATH");
	char *saved_path = saved ? xstrdup(saved) : NULL;
	char *path_var = xasprintf("PATH=%s:%s:%s:%s", empty, other, bin,
	                           saved_path ? saved_path : "/usr/bin:/bin");
	char *effect_env[] = {path_var, NULL};
	assert_int_equal(setenv("PATH", path_var + strlen("PATH="), 1), 0);
	struct trace_event events[2];
	events[0] = ev(TRACE_PROBE, probed);
	events[0].err = ENOENT;
	events[1] = ev(TRACE_EXEC, tool);
	struct store *s;
	struct error e = {0};
	assert_int_equal(store_open(cache, 0, &s, &e), 0);
	struct record_env env = {.effect_env = effect_env, .cwd = dir, .scan = 1};
	struct record rec;
	assert_int_equal(record_run_scanning(events, 2, NULL, NULL, &env, s, NULL, &rec, &e), 0);
	assert_null(rec.not_storable);
	int k = find_obs(&rec.ps, OBS_FACT, OBSERVE_FACT_WHICH "tool");
	assert_true(k >= 0);
	struct buf v, want;
	buf_init(&v);
	buf_init(&want);
	value_at(&rec, (size_t)k, &v);
	buf_addch(&want, 'P');
	buf_addstr(&want, unprobed);
	assert_int_equal(v.len, want.len);
	assert_memory_equal(v.data, want.data, v.len);
	record_free(&rec);

	/* Without the unprobed one, the step's own program. */
	assert_int_equal(unlink(unprobed), 0);
	assert_int_equal(record_run_scanning(events, 2, NULL, NULL, &env, s, NULL, &rec, &e), 0);
	k = find_obs(&rec.ps, OBS_FACT, OBSERVE_FACT_WHICH "tool");
	assert_true(k >= 0);
	value_at(&rec, (size_t)k, &v);
	buf_reset(&want);
	buf_addch(&want, 'P');
	buf_addstr(&want, tool);
	assert_int_equal(v.len, want.len);
	assert_memory_equal(v.data, want.data, v.len);
	record_free(&rec);

	if (saved_path)
		setenv("PATH", saved_path, 1);
	else
		unsetenv("PATH");
	free(saved_path);
	buf_free(&v);
	buf_free(&want);
	store_close(s);
	free(path_var);
	free(empty), free(probed), free(other), free(unprobed), free(bin), free(tool), free(cache);
}

/* The facts of the variables keyed by effect join the path set inside the
 * record, in its one canonical ordering: what the run observed keeps its
 * values, each fact has its value now, the encoding is canonical, and a
 * variable is keyed where an output or one stream holds its value, or
 * where PATH led a search. */
static void the_env_facts_join_the_recorded_path_set_in_canonical_order(void **state)
{
	char *bin = in_dir("bin"), *tool = in_dir("bin/tool"), *src = in_dir("a.c");
	char *obj = in_dir("a.o"), *cache = in_dir("cache");
	assert_int_equal(mkdir(bin, 0755), 0);
	write_file(tool, "a tool found along PATH");
	write_file(src, "int a;");
	write_file(obj, "object made with held-in-output");
	char *path_var = xasprintf("PATH=%s", bin);
	char *effect_env[] = {path_var,
	                      "FROM_OUTPUT=held-in-output",
	                      "FROM_STDOUT=held-in-stdout",
	                      "FROM_STDERR=held-in-stderr",
	                      "SPLIT=split-value",
	                      "UNSEEN=never-printed",
	                      NULL};
	const char out[] = "printed held-in-stdout and split-";
	const char err[] = "value, then held-in-stderr\n";
	struct trace_event events[4];
	events[0] = ev(TRACE_EXEC, tool);
	events[1] = ev(TRACE_READ, src);
	events[2] = ev(TRACE_TOUCH, obj);
	events[3] = ev(TRACE_FINAL, obj);
	struct store *s;
	struct error e = {0};
	assert_int_equal(store_open(cache, 0, &s, &e), 0);

	struct record plain, rec;
	assert_int_equal(record_run(events, 4, NULL, NULL, s, NULL, &plain, &e), 0);
	assert_null(plain.not_storable);
	struct record_env env = {.effect_env = effect_env,
	                         .cwd = dir,
	                         .scan = 1,
	                         .out = out,
	                         .out_len = strlen(out),
	                         .err = err,
	                         .err_len = strlen(err)};
	assert_int_equal(record_run_scanning(events, 4, NULL, NULL, &env, s, NULL, &rec, &e), 0);
	assert_null(rec.not_storable);

	/* Canonical: decoded and ordered again, the same bytes and digest. */
	struct pathset again;
	assert_int_equal(pathset_decode(rec.ps_body.data, rec.ps_body.len, &again, &e), 0);
	pathset_canonicalise(&again, NULL);
	struct buf body;
	buf_init(&body);
	pathset_encode(&again, &body);
	assert_int_equal(body.len, rec.ps_body.len);
	assert_memory_equal(body.data, rec.ps_body.data, body.len);
	pathset_free(&again);
	struct digest d;
	digest_bytes(rec.ps_body.data, rec.ps_body.len, &d);
	assert_true(digest_equal(&d, &rec.ps_digest));

	/* The run's own observations, with the values they have without the
	 * facts; then only facts, with their values now. */
	struct buf v, want;
	buf_init(&v);
	buf_init(&want);
	size_t facts = 0;
	for (size_t i = 0; i < rec.ps.nobs; i++) {
		const struct observation *o = &rec.ps.obs[i];
		const char *name = rec.ps.paths[o->path];
		value_at(&rec, i, &v);
		if (o->kind == OBS_FACT && env_fact(name)) {
			facts++;
			buf_reset(&want);
			observe_fact_value(name, &want);
		} else {
			int k = find_obs(&plain.ps, (enum obs_kind)o->kind, name);
			assert_true(k >= 0);
			value_at(&plain, (size_t)k, &want);
		}
		assert_int_equal(v.len, want.len);
		assert_memory_equal(v.data, want.data, v.len);
	}
	assert_int_equal(rec.ps.nobs, plain.ps.nobs + facts);
	assert_true(find_obs(&rec.ps, OBS_FACT, OBSERVE_FACT_ENV "FROM_OUTPUT") >= 0);
	assert_true(find_obs(&rec.ps, OBS_FACT, OBSERVE_FACT_ENV "FROM_STDOUT") >= 0);
	assert_true(find_obs(&rec.ps, OBS_FACT, OBSERVE_FACT_ENV "FROM_STDERR") >= 0);
	assert_true(find_obs(&rec.ps, OBS_FACT, OBSERVE_FACT_WHICH "tool") >= 0);
	/* Printed by neither stream, nor anywhere. */
	assert_int_equal(find_obs(&rec.ps, OBS_FACT, OBSERVE_FACT_ENV "SPLIT"), -1);
	assert_int_equal(find_obs(&rec.ps, OBS_FACT, OBSERVE_FACT_ENV "UNSEEN"), -1);
	record_free(&rec);

	/* Unscanned (a preprocessor run's record): the lookups still key. */
	env.scan = 0;
	assert_int_equal(record_run_scanning(events, 4, NULL, NULL, &env, s, NULL, &rec, &e), 0);
	assert_true(find_obs(&rec.ps, OBS_FACT, OBSERVE_FACT_WHICH "tool") >= 0);
	assert_int_equal(find_obs(&rec.ps, OBS_FACT, OBSERVE_FACT_ENV "FROM_OUTPUT"), -1);
	assert_int_equal(find_obs(&rec.ps, OBS_FACT, OBSERVE_FACT_ENV "FROM_STDOUT"), -1);
	record_free(&rec);

	record_free(&plain);
	buf_free(&v);
	buf_free(&want);
	buf_free(&body);
	store_close(s);
	free(path_var);
	free(bin), free(tool), free(src), free(obj), free(cache);
}

/* The probes in a subdirectory that an include directory lacks (gcc's
 * "bits/x.h" in each -I directory) are answered from the lookup of that
 * directory, which the notes made for the first probe's ancestors, and a
 * path under a regular file from the failed lookup of its directory
 * (ENOTDIR): each value is the one a lookup of its own finds, and each
 * still holds. A file created in the missing directory after the
 * recording is what a hit then finds changed. */
static void lookups_under_a_missing_directory_answer_as_their_own(void **state)
{
	char *inc = in_dir("inc"), *a = in_dir("inc/bits/a.h"), *b = in_dir("inc/bits/b.h");
	char *c = in_dir("inc/bits/deeper/c.h"), *reg = in_dir("reg"), *sub = in_dir("reg/sub");
	char *x = in_dir("reg/sub/x.h"), *there = in_dir("inc/there.h"), *cache = in_dir("cache");
	assert_int_equal(mkdir(inc, 0755), 0);
	write_file(reg, "a regular file");
	write_file(there, "#define THERE 1");
	struct trace_event events[6];
	events[0] = ev(TRACE_PROBE, a);
	events[0].err = ENOENT;
	events[1] = ev(TRACE_PROBE, b);
	events[1].err = ENOENT;
	events[2] = ev(TRACE_READLINK, c);
	events[2].err = ENOENT;
	events[3] = ev(TRACE_PROBE, sub);
	events[3].err = ENOTDIR;
	events[4] = ev(TRACE_PROBE, x);
	events[4].err = ENOTDIR;
	events[5] = ev(TRACE_READ, there);
	struct store *s;
	struct error e = {0};
	assert_int_equal(store_open(cache, 0, &s, &e), 0);
	struct record_env env = {.cwd = dir, .memo_dirs = 1};
	struct record rec;
	assert_int_equal(record_run_scanning(events, 6, NULL, NULL, &env, s, NULL, &rec, &e), 0);
	assert_null(rec.not_storable);
	assert_true(find_obs(&rec.ps, OBS_STAT, a) >= 0 && find_obs(&rec.ps, OBS_READLINK, c) >= 0);
	assert_true(find_obs(&rec.ps, OBS_STAT, x) >= 0 && find_obs(&rec.ps, OBS_READ, there) >= 0);

	struct buf v, want;
	buf_init(&v);
	buf_init(&want);
	for (size_t i = 0; i < rec.ps.nobs; i++) {
		const struct observation *o = &rec.ps.obs[i];
		value_at(&rec, i, &v);
		buf_reset(&want);
		observe_value((enum obs_kind)o->kind, o->flags, rec.ps.paths[o->path], NULL, NULL,
		              &want);
		assert_int_equal(v.len, want.len);
		assert_memory_equal(v.data, want.data, v.len);
	}
	int at = find_obs(&rec.ps, OBS_STAT, b);
	assert_true(at >= 0);
	value_at(&rec, (size_t)at, &v);

	/* The directory appears with the file: the value kept differs. */
	char *bits = in_dir("inc/bits");
	assert_int_equal(mkdir(bits, 0755), 0);
	write_file(b, "#define B 1");
	buf_reset(&want);
	observe_value(OBS_STAT, rec.ps.obs[at].flags, b, NULL, NULL, &want);
	assert_false(v.len == want.len && !memcmp(v.data, want.data, v.len));
	/* Recorded now, the probe that found it absent no longer holds. */
	record_free(&rec);
	assert_int_equal(record_run_scanning(events, 6, NULL, NULL, &env, s, NULL, &rec, &e), 0);
	assert_non_null(rec.not_storable);

	record_free(&rec);
	buf_free(&v);
	buf_free(&want);
	store_close(s);
	free(inc), free(a), free(b), free(c), free(reg), free(sub), free(x), free(there);
	free(cache), free(bits);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        a_stated_directory_is_listed_unless_the_step_looked_inside, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_which_fact_skips_only_the_candidates_checked_missing,
	                                    setup, teardown),
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
	    cmocka_unit_test_setup_teardown(lookups_under_a_missing_directory_answer_as_their_own,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(a_memo_run_notes_the_directories_of_its_absent_paths,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(outputs_are_searched_for_the_names_of_the_steps_paths,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        the_env_facts_join_the_recorded_path_set_in_canonical_order, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
