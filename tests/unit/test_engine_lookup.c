/* The lookup engine's decisions (lookup.h), which only system tests reached
 * while they lived in the command-line layer: a damaged path set is never
 * keyed, a result with a missing blob is not served, an entry (a miss's or
 * a remote hit's) stored under the bound of path sets, a stored miss built
 * whole, the memo tier falling back to the index (damaged blobs counted
 * once), and the whole lookup of a step (lookup_step): its tiers in order,
 * its misses, and the memo a hit or a stored miss leaves. */
#include "test_store_fixture.h"

#include "cachet/lookup.h"
#include "cachet/portable.h"
#include "cachet/record.h"
#include "cachet/result.h"
#include "cachet/step.h"
#include "store/store_internal.h"

/* An input file under the scratch directory, and the path set of a step
 * that read it (and, with extra, a second file named by number). */
static void make_pathset(const char *input, unsigned extra, struct buf *body, struct digest *d)
{
	struct pathset ps;
	pathset_init(&ps);
	pathset_add(&ps, OBS_READ, 0, input, NULL);
	if (extra) {
		char *other = scratch_path("other-%u", extra);
		pathset_add(&ps, OBS_STAT, 0, other, NULL);
		free(other);
	}
	pathset_canonicalise(&ps, NULL);
	buf_init(body);
	pathset_encode(&ps, body);
	digest_bytes(body->data, body->len, d);
	pathset_free(&ps);
}

static struct digest strong_now(const struct buf *body, const struct digest *d,
                                const struct digest *weak)
{
	struct pathset ps;
	struct error e = {0, ""};
	assert_int_equal(pathset_decode(body->data, body->len, &ps, &e), 0);
	struct digest strong;
	pathset_strong_key(&ps, NULL, weak, d, NULL, NULL, &strong);
	pathset_free(&ps);
	return strong;
}

static void test_pathset_keyed_as_recorded(void **state)
{
	(void)state;
	char *input = scratch_path("input.c");
	write_file(input, "int x;\n", 7);
	struct buf body;
	struct digest d, weak = key_digest("weak", 1);
	make_pathset(input, 0, &body, &d);
	struct buf values;
	buf_init(&values);
	struct pathset_evaluation ev = {
	    .digest = &d, .body = body.data, .len = body.len, .values = &values};
	struct error e = {0, ""};
	assert_int_equal(lookup_evaluate_pathset(NULL, &weak, NULL, &ev, &e), LOOKUP_PATHSET_KEYED);
	struct digest want = strong_now(&body, &d, &weak);
	assert_true(digest_equal(&ev.strong, &want));
	assert_true(values.len > 0);
	/* The key follows the file. */
	write_file(input, "int y;\n", 7);
	struct pathset_evaluation again = {.digest = &d, .body = body.data, .len = body.len};
	assert_int_equal(lookup_evaluate_pathset(NULL, &weak, NULL, &again, &e),
	                 LOOKUP_PATHSET_KEYED);
	assert_false(digest_equal(&again.strong, &want));
	buf_free(&values);
	buf_free(&body);
	free(input);
}

/* A body that does not match its digest decodes fine and would key: it
 * must be refused as damaged, by every caller, before anything is read. */
static void test_damaged_pathset_never_keyed(void **state)
{
	(void)state;
	char *input = scratch_path("input.c");
	write_file(input, "int x;\n", 7);
	struct buf body;
	struct digest d, weak = key_digest("weak", 1);
	make_pathset(input, 0, &body, &d);
	/* One byte of the path changed: still a valid encoding. */
	char *p = memmem(body.data, body.len, "input.c", 7);
	assert_non_null(p);
	p[0] = 'o';
	struct pathset_evaluation ev = {
	    .digest = &d, .body = body.data, .len = body.len, .keep_pathset = 1};
	struct error e = {0, ""};
	assert_int_equal(lookup_evaluate_pathset(NULL, &weak, NULL, &ev, &e),
	                 LOOKUP_PATHSET_DAMAGED);
	assert_non_null(strstr(e.msg, "damaged"));
	/* Garbage under a checked digest: the decoder refuses it. */
	struct pathset_evaluation garbage = {
	    .digest = &d, .body = "garbage", .len = 7, .digest_checked = 1};
	struct error e2 = {0, ""};
	assert_int_equal(lookup_evaluate_pathset(NULL, &weak, NULL, &garbage, &e2),
	                 LOOKUP_PATHSET_DAMAGED);
	assert_true(e2.msg[0] != '\0');
	buf_free(&body);
	free(input);
}

static void test_pathset_under_unset_base(void **state)
{
	(void)state;
	struct pathset ps;
	pathset_init(&ps);
	pathset_add(&ps, OBS_READ, 0, STEP_PORTABLE_PREFIX "0/src/a.c", NULL);
	pathset_canonicalise(&ps, NULL);
	struct buf body;
	buf_init(&body);
	pathset_encode(&ps, &body);
	pathset_free(&ps);
	struct digest d = digest_of(body.data, body.len), weak = key_digest("weak", 1);
	struct pathset_evaluation ev = {.digest = &d, .body = body.data, .len = body.len};
	struct error e = {0, ""};
	struct step_bases none = {0};
	assert_int_equal(lookup_evaluate_pathset(&none, &weak, NULL, &ev, &e),
	                 LOOKUP_PATHSET_UNSET_BASE);
	/* Under the base set here, the path is this checkout's. */
	struct step_bases here = {{scratch_dir}};
	struct pathset_evaluation kept = {
	    .digest = &d, .body = body.data, .len = body.len, .keep_pathset = 1};
	assert_int_equal(lookup_evaluate_pathset(&here, &weak, NULL, &kept, &e),
	                 LOOKUP_PATHSET_KEYED);
	char *want = xasprintf("%s/src/a.c", scratch_dir);
	assert_string_equal(kept.ps.paths[kept.ps.obs[0].path], want);
	free(want);
	pathset_free(&kept.ps);
	buf_free(&body);
}

static int refuse_all(void *ctx, const struct pathset *ps)
{
	*(size_t *)ctx = ps->nobs;
	return 0;
}

static void test_admit_refuses_before_keying(void **state)
{
	(void)state;
	char *input = scratch_path("input.c");
	write_file(input, "int x;\n", 7);
	struct buf body;
	struct digest d, weak = key_digest("weak", 1);
	make_pathset(input, 0, &body, &d);
	size_t seen = 0;
	struct digest zero = {0};
	struct pathset_evaluation ev = {.digest = &d,
	                                .body = body.data,
	                                .len = body.len,
	                                .admit = refuse_all,
	                                .admit_ctx = &seen};
	struct error e = {0, ""};
	assert_int_equal(lookup_evaluate_pathset(NULL, &weak, NULL, &ev, &e),
	                 LOOKUP_PATHSET_REFUSED);
	assert_int_equal(seen, 1);
	assert_true(digest_equal(&ev.strong, &zero));
	buf_free(&body);
	free(input);
}

/* A result whose stdout blob is stored and whose output blob is not. */
static void test_missing_blob_found_before_any_write(void **state)
{
	(void)state;
	struct store *s = open_cache();
	struct error e = {0, ""};
	struct result res;
	result_init(&res);
	assert_int_equal(store_put_blob_mem(s, "hello\n", 6, &res.out, &e), 0);
	struct output *o = result_add_output(&res, OUT_FILE, "/nowhere/x.o");
	assert_int_equal(store_put_blob_mem(s, "object", 6, &o->blob, &e), 0);
	o->mode = 0644;
	assert_int_equal(lookup_blobs_present(s, &res), 1);
	char *path = blob_path(s, &o->blob.digest, o->blob.form);
	assert_int_equal(unlink(path), 0);
	free(path);
	assert_int_equal(lookup_blobs_present(s, &res), 0);
	/* Nothing was restored: the output's directory was never made. */
	struct stat st;
	assert_int_equal(stat("/nowhere", &st), -1);
	result_free(&res);
	store_close(s);
}

static char *no_env[] = {NULL};
static char *cc_argv[] = {"cc", "-c", "x.c", NULL};

static void test_step(struct step *step, unsigned w)
{
	memset(step, 0, sizeof *step);
	step->argv = cc_argv;
	step->cwd = scratch_dir;
	step->exe = "/usr/bin/cc";
	step->env = no_env;
	step->platform = "test";
	step->weak = key_digest("weak", w);
}

/* An entry as a remote hit arrives: its path set and result as stored,
 * its blobs already fetched. */
static void store_entry(struct store *s, const struct step *step, const struct buf *ps_body,
                        const struct digest *ps, const struct digest *strong, int expect)
{
	struct error e = {0, ""};
	struct result res;
	result_init(&res);
	res.duration_ms = 42;
	assert_int_equal(store_put_blob_mem(s, "compiled", 8, &res.out, &e), 0);
	assert_int_equal(store_put_blob_mem(s, "", 0, &res.err, &e), 0);
	res.host = xstrdup("elsewhere");
	res.cachet_version = xstrdup("test");
	res.values = xmalloc(1);
	res.listings = xmalloc(1);
	struct buf body;
	buf_init(&body);
	result_encode(&res, &body);
	struct lookup_entry en = {.step = step,
	                          .pathset = ps,
	                          .pathset_body = ps_body->data,
	                          .pathset_len = ps_body->len,
	                          .strong = strong,
	                          .result_body = body.data,
	                          .result_len = body.len,
	                          .result = &res};
	int rc = lookup_store_entry(s, &en, &e);
	if (rc != expect)
		print_error("lookup_store_entry: %s\n", e.msg);
	assert_int_equal(rc, expect);
	buf_free(&body);
	result_free(&res);
}

/* Stored locally, a remote hit is found again by the local lookup: the
 * same path set, evaluated the same way, gives the key it was stored
 * under. */
static void test_stored_entry_hits_locally(void **state)
{
	(void)state;
	struct store *s = open_cache();
	char *input = scratch_path("input.c");
	write_file(input, "int x;\n", 7);
	struct step step;
	test_step(&step, 1);
	struct buf body;
	struct digest d;
	make_pathset(input, 0, &body, &d);
	struct digest strong = strong_now(&body, &d, &step.weak);
	store_entry(s, &step, &body, &d, &strong, 0);

	struct store_pathset *sets;
	size_t n;
	struct error e = {0, ""};
	assert_int_equal(store_get_pathsets(s, &step.weak, &sets, &n, &e), 0);
	assert_int_equal(n, 1);
	struct pathset_evaluation ev = {
	    .digest = &sets[0].digest, .body = sets[0].body, .len = sets[0].len};
	assert_int_equal(lookup_evaluate_pathset(NULL, &step.weak, NULL, &ev, &e),
	                 LOOKUP_PATHSET_KEYED);
	assert_true(digest_equal(&ev.strong, &strong));
	void *rbody;
	size_t rlen;
	assert_int_equal(store_get_result(s, &ev.strong, &rbody, &rlen, &e), 1);
	struct result got;
	assert_int_equal(result_decode(rbody, rlen, &got, &e), 0);
	assert_int_equal(got.duration_ms, 42);
	assert_int_equal(lookup_blobs_present(s, &got), 1);
	result_free(&got);
	free(rbody);
	store_pathsets_free(sets, n);
	buf_free(&body);
	free(input);
	store_close(s);
}

static void test_store_entry_refuses_missing_blob(void **state)
{
	(void)state;
	struct store *s = open_cache();
	struct step step;
	test_step(&step, 2);
	char *input = scratch_path("input.c");
	write_file(input, "int x;\n", 7);
	struct buf body;
	struct digest d;
	make_pathset(input, 0, &body, &d);
	struct digest strong = key_digest("strong", 2);
	struct error e = {0, ""};
	struct result res;
	result_init(&res);
	struct output *o = result_add_output(&res, OUT_FILE, input);
	assert_int_equal(store_put_blob_mem(s, "gone soon", 9, &o->blob, &e), 0);
	char *path = blob_path(s, &o->blob.digest, o->blob.form);
	assert_int_equal(unlink(path), 0);
	free(path);
	struct buf rbody;
	buf_init(&rbody);
	result_encode(&res, &rbody);
	struct lookup_entry en = {.step = &step,
	                          .pathset = &d,
	                          .pathset_body = body.data,
	                          .pathset_len = body.len,
	                          .strong = &strong,
	                          .result_body = rbody.data,
	                          .result_len = rbody.len,
	                          .result = &res};
	assert_int_equal(lookup_store_entry(s, &en, &e), -1);
	assert_int_equal(e.code, ENOENT);
	struct store_pathset *sets;
	size_t n;
	assert_int_equal(store_get_pathsets(s, &step.weak, &sets, &n, &e), 0);
	assert_int_equal(n, 0);
	store_pathsets_free(sets, n);
	buf_free(&rbody);
	result_free(&res);
	buf_free(&body);
	free(input);
	store_close(s);
}

/* However an entry comes in, a step keeps at most LOOKUP_MAX_PATHSETS path
 * sets: the least recently used goes. */
static void test_bound_of_pathsets(void **state)
{
	(void)state;
	struct store *s = open_cache();
	struct step step;
	test_step(&step, 3);
	char *input = scratch_path("input.c");
	write_file(input, "int x;\n", 7);
	struct digest first;
	for (unsigned i = 1; i <= LOOKUP_MAX_PATHSETS + 1; i++) {
		struct buf body;
		struct digest d;
		make_pathset(input, i, &body, &d);
		if (i == 1)
			first = d;
		struct digest strong = key_digest("strong", 100 + i);
		store_entry(s, &step, &body, &d, &strong, 0);
		buf_free(&body);
	}
	struct store_pathset *sets;
	size_t n;
	struct error e = {0, ""};
	assert_int_equal(store_get_pathsets(s, &step.weak, &sets, &n, &e), 0);
	assert_int_equal(n, LOOKUP_MAX_PATHSETS);
	for (size_t i = 0; i < n; i++)
		assert_false(digest_equal(&sets[i].digest, &first));
	store_pathsets_free(sets, n);
	struct digest strong1 = key_digest("strong", 101);
	void *rbody;
	size_t rlen;
	assert_int_equal(store_get_result(s, &strong1, &rbody, &rlen, &e), 0);
	free(input);
	store_close(s);
}

/* A run of step that read input, recorded (rec, freed by record_clear):
 * its path set and the values found now, as the record would have found
 * them; *now receives their strong key. */
static void recorded_run(const struct step *step, const char *input, struct record *rec,
                         struct digest *now)
{
	memset(rec, 0, sizeof *rec);
	result_init(&rec->result);
	buf_init(&rec->values);
	buf_init(&rec->listings);
	make_pathset(input, 0, &rec->ps_body, &rec->ps_digest);
	struct pathset ps;
	struct error e = {0, ""};
	assert_int_equal(pathset_decode(rec->ps_body.data, rec->ps_body.len, &ps, &e), 0);
	pathset_strong_key(&ps, NULL, &step->weak, &rec->ps_digest, NULL, &rec->values, now);
	pathset_free(&ps);
}

static void record_clear(struct record *rec)
{
	result_free(&rec->result);
	buf_free(&rec->values);
	buf_free(&rec->listings);
	buf_free(&rec->ps_body);
}

/* A miss is built whole in one place: stdout and stderr stored, the
 * result completed, the strong key that of the recorded values. */
static void test_finish_record(void **state)
{
	(void)state;
	struct store *s = open_cache();
	struct step step;
	test_step(&step, 4);
	char *input = scratch_path("input.c");
	write_file(input, "int x;\n", 7);
	struct record rec;
	struct digest want;
	recorded_run(&step, input, &rec, &want);
	struct error e = {0, ""};
	struct lookup_run_end end = {.out = "out\n",
	                             .out_len = 4,
	                             .err = "warning\n",
	                             .err_len = 8,
	                             .exit_code = 0,
	                             .duration_ms = 7};
	struct digest strong;
	struct buf body;
	buf_init(&body);
	assert_int_equal(lookup_finish_record(s, &step, &rec, &end, &strong, &body, &e), 0);
	assert_true(digest_equal(&strong, &want));
	struct result got;
	assert_int_equal(result_decode(body.data, body.len, &got, &e), 0);
	assert_int_equal(got.duration_ms, 7);
	assert_int_equal(got.values_len, rec.values.len);
	void *data;
	size_t len;
	assert_int_equal(store_blob_read(s, &got.err, &data, &len, &e), 0);
	assert_int_equal(len, 8);
	assert_memory_equal(data, "warning\n", 8);
	free(data);
	struct lookup_entry en = {.step = &step,
	                          .pathset = &rec.ps_digest,
	                          .pathset_body = rec.ps_body.data,
	                          .pathset_len = rec.ps_body.len,
	                          .strong = &strong,
	                          .result_body = body.data,
	                          .result_len = body.len,
	                          .result = &rec.result};
	assert_int_equal(lookup_store_entry(s, &en, &e), 0);
	result_free(&got);
	buf_free(&body);
	record_clear(&rec);
	free(input);
	store_close(s);
}

/* What the tiers asked of the caller, for the tests of lookup_*_tier. */
struct tier_calls {
	int served[2]; /* serve's calls, by tier */
	int pass_memo; /* serve hands the memo's entry on to the index */
	int missing_blobs, errors, faults;
	const char *last_fault;
};

static int tier_serve(void *ctx, struct lookup_candidate *c)
{
	struct tier_calls *calls = ctx;
	calls->served[c->tier]++;
	if (c->tier == LOOKUP_TIER_MEMO && calls->pass_memo)
		return LOOKUP_PASS;
	return LOOKUP_SERVED;
}

static void tier_count(void *ctx, const char *name, int64_t delta)
{
	struct tier_calls *calls = ctx;
	if (!strcmp(name, "missing_blobs"))
		calls->missing_blobs += (int)delta;
	else if (!strcmp(name, "errors"))
		calls->errors += (int)delta;
}

static void tier_fault(void *ctx, const char *what, const struct error *e)
{
	(void)e;
	((struct tier_calls *)ctx)->faults++;
	((struct tier_calls *)ctx)->last_fault = what;
}

/* One entry of a step in the index, and the step's memo naming the same
 * entry (without directory fingerprints: a full evaluation). The caller
 * frees the bodies. */
struct memo_fixture {
	struct step step;
	struct buf ps_body, result_body;
	struct store_memo memo;
	struct blob_ref out;
};

static void store_memo_entry(struct store *s, struct memo_fixture *f, unsigned w)
{
	char *input = scratch_path("input.c");
	write_file(input, "int x;\n", 7);
	test_step(&f->step, w);
	struct digest d;
	make_pathset(input, 0, &f->ps_body, &d);
	struct digest strong = strong_now(&f->ps_body, &d, &f->step.weak);
	struct error e = {0, ""};
	struct result res;
	result_init(&res);
	assert_int_equal(store_put_blob_mem(s, "compiled", 8, &res.out, &e), 0);
	assert_int_equal(store_put_blob_mem(s, "", 0, &res.err, &e), 0);
	res.host = xstrdup("here");
	res.cachet_version = xstrdup("test");
	f->out = res.out;
	buf_init(&f->result_body);
	result_encode(&res, &f->result_body);
	struct lookup_entry en = {.step = &f->step,
	                          .pathset = &d,
	                          .pathset_body = f->ps_body.data,
	                          .pathset_len = f->ps_body.len,
	                          .strong = &strong,
	                          .result_body = f->result_body.data,
	                          .result_len = f->result_body.len,
	                          .result = &res};
	int rc = lookup_store_entry(s, &en, &e);
	if (rc < 0)
		print_error("lookup_store_entry: %s\n", e.msg);
	assert_int_equal(rc, 0);
	result_free(&res);
	f->memo = (struct store_memo){.weak = f->step.weak,
	                              .pathset = d,
	                              .strong = strong,
	                              .pathset_body = f->ps_body.data,
	                              .pathset_len = f->ps_body.len,
	                              .result_body = f->result_body.data,
	                              .result_len = f->result_body.len};
	free(input);
}

static void memo_fixture_close(struct store *s, struct memo_fixture *f)
{
	buf_free(&f->ps_body);
	buf_free(&f->result_body);
	store_close(s);
}

static struct lookup_tiers tiers_for(struct store *s, const struct step *step,
                                     struct tier_calls *calls)
{
	return (struct lookup_tiers){.store = s,
	                             .step = step,
	                             .serve = tier_serve,
	                             .count = tier_count,
	                             .fault = tier_fault,
	                             .ctx = calls};
}

/* The memo and the index name the same entry: a blob of it damaged is
 * found by the memo tier, counted once, and the index tier, tried next,
 * does not count it (or serve it) again. */
static void test_damaged_blobs_counted_once(void **state)
{
	(void)state;
	struct store *s = open_cache();
	struct memo_fixture f;
	store_memo_entry(s, &f, 5);
	char *path = blob_path(s, &f.out.digest, f.out.form);
	assert_int_equal(unlink(path), 0);
	free(path);
	struct tier_calls calls = {0};
	struct lookup_tiers t = tiers_for(s, &f.step, &calls);
	assert_int_equal(lookup_memo_tier(&t, &f.memo), 0);
	assert_int_equal(calls.missing_blobs, 1);
	assert_true(t.memo_failed);
	assert_true(digest_equal(&t.memo_strong, &f.memo.strong));
	assert_int_equal(lookup_index_tier(&t), 0);
	assert_int_equal(t.had_pathsets, 1);
	assert_int_equal(calls.missing_blobs, 1);
	assert_int_equal(calls.errors, 1);
	assert_int_equal(calls.served[LOOKUP_TIER_MEMO] + calls.served[LOOKUP_TIER_INDEX], 0);
	assert_int_equal(calls.faults, 0);
	memo_fixture_close(s, &f);
}

/* An entry the memo tier holds and the caller passes on (a hit chosen for
 * verification) is served by the index tier; a whole one from the memo is
 * served there, and the index is not needed. */
static void test_memo_entry_served_or_passed_on(void **state)
{
	(void)state;
	struct store *s = open_cache();
	struct memo_fixture f;
	store_memo_entry(s, &f, 6);
	struct tier_calls calls = {.pass_memo = 1};
	struct lookup_tiers t = tiers_for(s, &f.step, &calls);
	assert_int_equal(lookup_memo_tier(&t, &f.memo), 0);
	assert_false(t.memo_failed);
	assert_int_equal(lookup_index_tier(&t), LOOKUP_SERVED);
	assert_int_equal(calls.served[LOOKUP_TIER_MEMO], 1);
	assert_int_equal(calls.served[LOOKUP_TIER_INDEX], 1);

	struct tier_calls direct = {0};
	struct lookup_tiers t2 = tiers_for(s, &f.step, &direct);
	assert_int_equal(lookup_memo_tier(&t2, &f.memo), LOOKUP_SERVED);
	assert_int_equal(direct.served[LOOKUP_TIER_MEMO], 1);
	/* Once its input changed, the memo no longer holds: not served, and
	 * not marked failed, so the index is asked. */
	char *input = scratch_path("input.c");
	write_file(input, "int y;\n", 7);
	free(input);
	struct tier_calls changed = {0};
	struct lookup_tiers t3 = tiers_for(s, &f.step, &changed);
	assert_int_equal(lookup_memo_tier(&t3, &f.memo), 0);
	assert_false(t3.memo_failed);
	assert_int_equal(lookup_index_tier(&t3), 0);
	assert_int_equal(t3.had_pathsets, 1);
	assert_int_equal(changed.served[LOOKUP_TIER_MEMO] + changed.served[LOOKUP_TIER_INDEX], 0);
	memo_fixture_close(s, &f);
}

/* The memo no longer holds (its input changed) and the index has an entry
 * for the files as they are: the index tier serves it under the key the
 * memo tier found for the same path set, without looking the files up
 * again (it does not see a change made after the memo tier looked), and a
 * damaged row of that path set is still found. */
static void test_memo_keyed_pathset_not_keyed_again(void **state)
{
	(void)state;
	struct store *s = open_cache();
	struct memo_fixture f;
	store_memo_entry(s, &f, 8);
	char *input = scratch_path("input.c");
	write_file(input, "int y;\n", 7);
	struct digest d;
	digest_bytes(f.ps_body.data, f.ps_body.len, &d);
	struct digest now = strong_now(&f.ps_body, &d, &f.step.weak);
	store_entry(s, &f.step, &f.ps_body, &d, &now, 0);

	struct tier_calls calls = {0};
	struct lookup_tiers t = tiers_for(s, &f.step, &calls);
	assert_int_equal(lookup_memo_tier(&t, &f.memo), 0);
	assert_true(t.memo_keyed);
	assert_true(digest_equal(&t.memo_pathset, &d));
	assert_true(digest_equal(&t.memo_keyed_strong, &now));
	write_file(input, "int z;\n", 7);
	assert_int_equal(lookup_index_tier(&t), LOOKUP_SERVED);
	assert_int_equal(calls.served[LOOKUP_TIER_INDEX], 1);
	assert_int_equal(calls.faults, 0);

	assert_int_equal(
	    sqlite3_exec(s->db, "UPDATE pathsets SET body = x'00' || body", NULL, NULL, NULL),
	    SQLITE_OK);
	struct tier_calls damaged = {0};
	struct lookup_tiers t2 = tiers_for(s, &f.step, &damaged);
	t2.memo_keyed = 1;
	t2.memo_pathset = d;
	t2.memo_keyed_strong = now;
	assert_int_equal(lookup_index_tier(&t2), 0);
	assert_int_equal(damaged.served[LOOKUP_TIER_INDEX], 0);
	assert_int_equal(damaged.faults, 1);
	free(input);
	memo_fixture_close(s, &f);
}

/* lookup_step's hands, for the tests of the whole lookup: the tiers'
 * calls, the step the caller keys, and what the remote hook says. */
struct step_calls {
	struct tier_calls tiers;
	const struct step *step; /* what init_step keys */
	int remote_asked;
	int remote_serves;
	int notes;
};

static int calls_init_step(void *ctx, struct step *step, struct digest_cache *dc, struct error *e)
{
	(void)dc;
	(void)e;
	*step = *((struct step_calls *)ctx)->step;
	return 0;
}

static int calls_serve(void *ctx, struct lookup_candidate *c)
{
	return tier_serve(&((struct step_calls *)ctx)->tiers, c);
}

static void calls_count(void *ctx, const char *name, int64_t delta)
{
	tier_count(&((struct step_calls *)ctx)->tiers, name, delta);
}

static void calls_fault(void *ctx, const char *what, const struct error *e)
{
	tier_fault(&((struct step_calls *)ctx)->tiers, what, e);
}

static void calls_note(void *ctx, const char *what, const struct error *e)
{
	(void)what;
	(void)e;
	((struct step_calls *)ctx)->notes++;
}

static int calls_remote(void *ctx)
{
	struct step_calls *calls = ctx;
	calls->remote_asked++;
	return calls->remote_serves ? LOOKUP_SERVED : 0;
}

static char *step_program = "/usr/bin/cc";

/* One lookup of the step through every tier, as `cachet run` makes it. */
static enum lookup_step_outcome look_up(struct store *s, struct step *step,
                                        struct step_calls *calls, int recache,
                                        struct step_lookup *sl)
{
	*sl = (struct step_lookup){.store = s,
	                           .argv = cc_argv,
	                           .program = step_program,
	                           .step = step,
	                           .recache = recache,
	                           .rerun_nondeterministic = 1,
	                           .init_step = calls_init_step,
	                           .serve = calls_serve,
	                           .count = calls_count,
	                           .fault = calls_fault,
	                           .note = calls_note,
	                           .remote = calls_remote,
	                           .ctx = calls};
	lookup_step_init(sl);
	struct error e = {0, ""};
	enum lookup_step_outcome outcome = lookup_step(sl, &e);
	return outcome;
}

/* The tiers in order: an entry of the index is served there and leaves the
 * step's memo, which serves the next lookup; once the input changed,
 * neither holds, the remote tier is asked, and the miss is "inputs
 * changed"; a remote that has it serves it. */
static void test_lookup_step_tiers_in_order(void **state)
{
	(void)state;
	struct store *s = open_cache();
	struct memo_fixture f;
	store_memo_entry(s, &f, 7);
	struct step step;
	struct step_lookup sl;

	struct step_calls first = {.step = &f.step};
	assert_int_equal(look_up(s, &step, &first, 0, &sl), LOOKUP_STEP_HIT);
	assert_int_equal(sl.tier, LOOKUP_TIER_INDEX);
	assert_int_equal(first.tiers.served[LOOKUP_TIER_INDEX], 1);
	assert_int_equal(first.remote_asked, 0);
	assert_int_equal(first.notes, 0);
	lookup_step_free(&sl);

	struct step_calls second = {.step = &f.step};
	assert_int_equal(look_up(s, &step, &second, 0, &sl), LOOKUP_STEP_HIT);
	assert_int_equal(sl.tier, LOOKUP_TIER_MEMO);
	assert_int_equal(second.tiers.served[LOOKUP_TIER_MEMO], 1);
	assert_int_equal(second.tiers.served[LOOKUP_TIER_INDEX], 0);
	lookup_step_free(&sl);

	char *input = scratch_path("input.c");
	write_file(input, "int y;\n", 7);
	free(input);
	struct step_calls changed = {.step = &f.step};
	assert_int_equal(look_up(s, &step, &changed, 0, &sl), LOOKUP_STEP_MISS);
	assert_string_equal(sl.miss_reason, "inputs changed");
	assert_int_equal(
	    changed.tiers.served[LOOKUP_TIER_MEMO] + changed.tiers.served[LOOKUP_TIER_INDEX], 0);
	assert_int_equal(changed.remote_asked, 1);
	lookup_step_free(&sl);

	struct step_calls remote = {.step = &f.step, .remote_serves = 1};
	assert_int_equal(look_up(s, &step, &remote, 0, &sl), LOOKUP_STEP_HIT);
	assert_int_equal(sl.tier, LOOKUP_TIER_REMOTE);
	assert_int_equal(remote.remote_asked, 1);
	lookup_step_free(&sl);
	memo_fixture_close(s, &f);
}

/* A step the index never saw is a new step, after the remotes were asked;
 * recache looks nothing up; a step marked nondeterministic, with rerun,
 * is neither served nor asked of the remotes. */
static void test_lookup_step_misses(void **state)
{
	(void)state;
	struct store *s = open_cache();
	struct step step, unknown;
	struct step_lookup sl;
	test_step(&unknown, 8);
	struct step_calls fresh = {.step = &unknown};
	assert_int_equal(look_up(s, &step, &fresh, 0, &sl), LOOKUP_STEP_MISS);
	assert_string_equal(sl.miss_reason, "new step");
	assert_int_equal(fresh.remote_asked, 1);
	lookup_step_free(&sl);

	struct memo_fixture f;
	store_memo_entry(s, &f, 9);
	struct step_calls recache = {.step = &f.step};
	assert_int_equal(look_up(s, &step, &recache, 1, &sl), LOOKUP_STEP_MISS);
	assert_string_equal(sl.miss_reason, "recache");
	assert_int_equal(recache.tiers.served[LOOKUP_TIER_INDEX], 0);
	assert_int_equal(recache.remote_asked, 0);
	lookup_step_free(&sl);

	struct error e = {0, ""};
	assert_int_equal(store_mark_nondeterministic(s, &f.step.weak, "differs", &e), 0);
	struct step_calls rerun = {.step = &f.step};
	assert_int_equal(look_up(s, &step, &rerun, 0, &sl), LOOKUP_STEP_MISS);
	assert_true(sl.nondeterministic);
	assert_string_equal(sl.miss_reason, "nondeterministic step");
	assert_int_equal(rerun.tiers.served[LOOKUP_TIER_INDEX], 0);
	assert_int_equal(rerun.remote_asked, 0);
	lookup_step_free(&sl);
	memo_fixture_close(s, &f);
}

/* A damaged path set in the index is a fault, never a hit: the lookup
 * goes on to the remotes and misses. */
static void test_lookup_step_damaged_pathset(void **state)
{
	(void)state;
	struct store *s = open_cache();
	struct memo_fixture f;
	store_memo_entry(s, &f, 10);
	assert_int_equal(sqlite3_exec(s->db, "UPDATE pathsets SET body = zeroblob(length(body))",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	struct step step;
	struct step_lookup sl;
	struct step_calls calls = {.step = &f.step};
	assert_int_equal(look_up(s, &step, &calls, 0, &sl), LOOKUP_STEP_MISS);
	assert_int_equal(calls.tiers.faults, 1);
	assert_string_equal(calls.tiers.last_fault, "corrupt path set");
	assert_int_equal(calls.tiers.served[LOOKUP_TIER_INDEX], 0);
	assert_int_equal(calls.remote_asked, 1);
	lookup_step_free(&sl);
	memo_fixture_close(s, &f);
}

/* A miss stored through lookup_store_run leaves the step's memo: the next
 * lookup is served by it, without the index. */
static void test_stored_miss_leaves_memo(void **state)
{
	(void)state;
	struct store *s = open_cache();
	struct step fixture;
	test_step(&fixture, 11);
	char *input = scratch_path("input.c");
	write_file(input, "int x;\n", 7);
	struct record rec;
	struct digest unused;
	recorded_run(&fixture, input, &rec, &unused);

	struct step step;
	struct step_calls miss = {.step = &fixture};
	struct step_lookup sl;
	assert_int_equal(look_up(s, &step, &miss, 0, &sl), LOOKUP_STEP_MISS);
	assert_string_equal(sl.miss_reason, "new step");
	struct lookup_run_end end = {.out = "out\n", .out_len = 4, .duration_ms = 3};
	struct error e = {0, ""};
	assert_int_equal(lookup_store_run(&sl, &rec, &end, &e), 0);
	lookup_step_free(&sl);

	struct step_calls next = {.step = &fixture};
	assert_int_equal(look_up(s, &step, &next, 0, &sl), LOOKUP_STEP_HIT);
	assert_int_equal(sl.tier, LOOKUP_TIER_MEMO);
	lookup_step_free(&sl);
	record_clear(&rec);
	free(input);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_pathset_keyed_as_recorded, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_damaged_pathset_never_keyed, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_pathset_under_unset_base, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_admit_refuses_before_keying, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_missing_blob_found_before_any_write, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_stored_entry_hits_locally, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_store_entry_refuses_missing_blob, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_bound_of_pathsets, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_finish_record, scratch_setup, scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_damaged_blobs_counted_once, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_memo_keyed_pathset_not_keyed_again, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_memo_entry_served_or_passed_on, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_lookup_step_tiers_in_order, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_lookup_step_misses, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_lookup_step_damaged_pathset, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(test_stored_miss_leaves_memo, scratch_setup,
	                                    scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
