/*
 * A step's outputs are what the step itself left behind, never what another
 * process wrote there. Each test runs a real step under the tracer, then
 * plays the other process (a sibling under make -j, or a parallel cachet
 * restoring the same path) between the end of the step and the recording,
 * which is where a cachet process hashes and stores the outputs.
 */
#include "test_store_fixture.h"

#include <limits.h>

#include "cachet/record.h"
#include "cachet/trace.h"

extern char **environ;

static char dir[PATH_MAX]; /* the step's directory: the scratch dir's real path */

static int setup(void **state)
{
	if (scratch_setup(state) < 0 || !realpath(scratch_dir, dir))
		return -1;
	return 0;
}

static const char *at(const char *name)
{
	static char bufs[4][PATH_MAX];
	static int next;
	char *b = bufs[next++ % 4];
	snprintf(b, PATH_MAX, "%s/%s", dir, name);
	return b;
}

static void put(const char *name, const char *text)
{
	write_file(at(name), text, strlen(text));
}

/* Replaces name as a compiler or a restore does: a new file renamed over it. */
static void replace(const char *name, const char *text)
{
	put(".foreign", text);
	assert_int_equal(rename(at(".foreign"), at(name)), 0);
}

/* Runs `sh -c script` in dir under the tracer. */
static void trace_sh(const char *script, struct trace_result *r)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	char *old = getcwd(NULL, 0);
	assert_int_equal(chdir(dir), 0);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	assert_true(devnull >= 0);
	struct trace_spec spec;
	memset(&spec, 0, sizeof spec);
	spec.file = argv[0];
	spec.argv = argv;
	spec.envp = environ;
	spec.stdin_fd = devnull;
	spec.stdout_fd = devnull;
	spec.stderr_fd = 2;
	struct error e = {0, ""};
	if (trace_run(&spec, r, &e) < 0)
		fail_msg("trace_run: %s", e.msg);
	close(devnull);
	assert_int_equal(chdir(old), 0);
	free(old);
	assert_true(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
	assert_null(r->uncacheable);
}

/* Records the run into a store of the scratch directory. */
static void record(const struct trace_result *r, struct record *rec)
{
	struct store *s = open_cache();
	char *cache = cache_dir();
	const char *ignore[] = {cache, NULL};
	struct error e = {0, ""};
	int rc = record_run(r->events, r->nevents, ignore, NULL, s, NULL, rec, &e);
	if (rc < 0)
		fail_msg("record_run: %s", e.msg);
	free(cache);
	store_close(s);
}

static const struct output *output(const struct record *rec, enum output_kind kind,
                                   const char *path)
{
	for (size_t i = 0; i < rec->result.noutputs; i++)
		if (rec->result.outputs[i].kind == kind &&
		    !strcmp(rec->result.outputs[i].path, path))
			return &rec->result.outputs[i];
	return NULL;
}

static void expect_content(const struct output *o, const char *text)
{
	assert_non_null(o);
	struct digest d;
	digest_bytes(text, strlen(text), &d);
	assert_true(digest_equal(&o->blob.digest, &d));
}

static void an_output_replaced_after_the_step_ended_is_not_stored(void **state)
{
	struct trace_result r;
	trace_sh("echo mine > out.txt", &r);
	replace("out.txt", "theirs\n");
	struct record rec;
	record(&r, &rec);
	assert_non_null(rec.not_storable);
	assert_string_equal(rec.not_storable, "input modified during run");
	record_free(&rec);
	trace_result_free(&r);
}

static void an_output_truncated_after_the_step_ended_is_not_stored(void **state)
{
	struct trace_result r;
	trace_sh("head -c 20000 /dev/zero > out.bin", &r);
	assert_int_equal(truncate(at("out.bin"), 0), 0);
	struct record rec;
	record(&r, &rec);
	assert_non_null(rec.not_storable);
	record_free(&rec);
	trace_result_free(&r);
}

/* Gone, it would pass for a temporary: an entry without the output. */
static void an_output_removed_after_the_step_ended_is_not_stored(void **state)
{
	struct trace_result r;
	trace_sh("echo mine > out.txt", &r);
	assert_int_equal(unlink(at("out.txt")), 0);
	struct record rec;
	record(&r, &rec);
	assert_non_null(rec.not_storable);
	record_free(&rec);
	trace_result_free(&r);
}

static void an_output_that_stayed_as_the_step_left_it_is_stored(void **state)
{
	struct trace_result r;
	trace_sh("echo mine > out.txt", &r);
	struct record rec;
	record(&r, &rec);
	assert_null(rec.not_storable);
	expect_content(output(&rec, OUT_FILE, at("out.txt")), "mine\n");
	record_free(&rec);
	trace_result_free(&r);
}

/* What another process makes of the name later is not the step's: its
 * output is the deletion. */
static void a_removal_stays_the_steps_output_when_the_name_comes_back(void **state)
{
	put("old.txt", "old\n");
	struct trace_result r;
	trace_sh("rm old.txt", &r);
	put("old.txt", "theirs\n");
	struct record rec;
	record(&r, &rec);
	assert_null(rec.not_storable);
	assert_non_null(output(&rec, OUT_DELETE, at("old.txt")));
	assert_int_equal(rec.result.noutputs, 1);
	record_free(&rec);
	trace_result_free(&r);
}

/* The empty output of t_rel_concurrency.sh: a step that created out/
 * captured a sibling's temporary beside its own output; a hit of that entry
 * later put the (then empty) temporary back while the sibling was about to
 * rename it into place, and the sibling's cachet stored the empty file. */
static void a_file_another_process_put_in_a_directory_the_step_made_is_not_its_output(void **state)
{
	struct trace_result r;
	trace_sh("mkdir out && echo mine > out/mine.txt", &r);
	put("out/.sibling.tmp", "");
	put("out/sibling.txt", "theirs\n");
	struct record rec;
	record(&r, &rec);
	assert_null(rec.not_storable);
	assert_non_null(output(&rec, OUT_DIR, at("out")));
	expect_content(output(&rec, OUT_FILE, at("out/mine.txt")), "mine\n");
	assert_null(output(&rec, OUT_FILE, at("out/.sibling.tmp")));
	assert_null(output(&rec, OUT_FILE, at("out/sibling.txt")));
	assert_int_equal(rec.result.noutputs, 2);
	record_free(&rec);
	trace_result_free(&r);
}

static void a_directory_renamed_into_place_brings_its_contents(void **state)
{
	struct trace_result r;
	trace_sh("mkdir t t/sub && echo a > t/a && echo b > t/sub/b && mv t out", &r);
	struct record rec;
	record(&r, &rec);
	assert_null(rec.not_storable);
	assert_non_null(output(&rec, OUT_DIR, at("out")));
	assert_non_null(output(&rec, OUT_DIR, at("out/sub")));
	expect_content(output(&rec, OUT_FILE, at("out/a")), "a\n");
	expect_content(output(&rec, OUT_FILE, at("out/sub/b")), "b\n");
	record_free(&rec);
	trace_result_free(&r);
}

/* rename(2) may replace an empty directory: the one there before had the
 * same mode, but its contents are all new. */
static void a_directory_renamed_over_an_empty_one_brings_its_contents(void **state)
{
	assert_int_equal(mkdir(at("out"), 0755), 0);
	assert_int_equal(chmod(at("out"), 0755), 0);
	struct trace_result r;
	trace_sh("mkdir t && chmod 755 t && echo a > t/a && mv -T t out", &r);
	struct record rec;
	record(&r, &rec);
	assert_null(rec.not_storable);
	expect_content(output(&rec, OUT_FILE, at("out/a")), "a\n");
	record_free(&rec);
	trace_result_free(&r);
}

static void a_file_added_to_a_directory_moved_into_place_after_the_step_is_not_stored(void **state)
{
	struct trace_result r;
	trace_sh("mkdir t && echo a > t/a && mv t out", &r);
	put("out/sibling.txt", "theirs\n");
	struct record rec;
	record(&r, &rec);
	assert_non_null(rec.not_storable);
	record_free(&rec);
	trace_result_free(&r);
}

/* A result with no outputs and the provenance fields that encode needs. */
static void empty_result(struct result *r)
{
	result_init(r);
	r->host = xstrdup("h");
	r->cachet_version = xstrdup("v");
	r->values = xstrdup("");
	r->listings = xstrdup("");
}

/* A result encodes its optional fields (pinned, stdin_advance) only when
 * set, and each combination decodes to what was encoded. */
static void a_results_stdin_advance_and_pin_survive_encoding(void **state)
{
	(void)state;
	static const char *const pins[] = {NULL, "output /src/x.d contains /src"};
	static const int64_t advances[] = {0, 6, -3};
	for (size_t p = 0; p < 2; p++)
		for (size_t a = 0; a < 3; a++) {
			struct result r, back;
			empty_result(&r);
			r.pinned = pins[p] ? xstrdup(pins[p]) : NULL;
			r.stdin_advance = advances[a];
			struct buf b;
			buf_init(&b);
			result_encode(&r, &b);
			struct error e = {0};
			assert_int_equal(result_decode(b.data, b.len, &back, &e), 0);
			assert_int_equal(back.stdin_advance, advances[a]);
			if (pins[p])
				assert_string_equal(back.pinned, pins[p]);
			else
				assert_null(back.pinned);
			result_free(&back);
			result_free(&r);
			buf_free(&b);
		}
}

/* The order of stdout and stderr survives encoding, with or without the
 * optional fields before it; runs that do not divide the blobs exactly
 * (a stream's sum off by one, two runs of one stream in a row, an empty
 * run) do not decode. */
static void a_results_stream_order_survives_encoding_and_is_checked(void **state)
{
	(void)state;
	/* stdout 5 bytes, stderr 7: err 3, out 5, err 4 */
	uint64_t good[] = {3 << 1 | 1, 5 << 1, 4 << 1 | 1};
	uint64_t bad[][3] = {
	    {3 << 1 | 1, 5 << 1, 5 << 1 | 1}, /* stderr adds up to 8 */
	    {3 << 1 | 1, 4 << 1 | 1, 5 << 1}, /* stderr twice in a row */
	    {0 << 1, 5 << 1, 7 << 1 | 1},     /* an empty run, then out twice */
	};
	for (size_t c = 0; c < 1 + sizeof bad / sizeof bad[0]; c++)
		for (int64_t advance = 0; advance < 2; advance++) {
			struct result r, back;
			empty_result(&r);
			r.out.size = 5;
			r.err.size = 7;
			r.stdin_advance = advance;
			r.stream_runs = xmalloc(sizeof good);
			memcpy(r.stream_runs, c ? bad[c - 1] : good, sizeof good);
			r.nstream_runs = 3;
			struct buf b;
			buf_init(&b);
			result_encode(&r, &b);
			struct error e = {0};
			if (c) {
				assert_int_equal(result_decode(b.data, b.len, &back, &e), -1);
			} else {
				assert_int_equal(result_decode(b.data, b.len, &back, &e), 0);
				assert_int_equal(back.nstream_runs, 3);
				assert_memory_equal(back.stream_runs, good, sizeof good);
				assert_int_equal(back.stdin_advance, advance);
				result_free(&back);
			}
			result_free(&r);
			buf_free(&b);
		}
}

/* Bytes a container's checksum covers (a memo's) decode without their
 * trailer hashed: a trailer that does not match is no refusal there, while
 * result_decode refuses it; the body is checked all the same. */
static void a_summed_result_skips_its_trailer_not_its_checks(void **state)
{
	(void)state;
	struct result r, back;
	empty_result(&r);
	r.stdin_advance = 6;
	struct buf b;
	buf_init(&b);
	result_encode(&r, &b);
	struct error e = {0};
	b.data[b.len - 1] ^= 1;
	assert_int_equal(result_decode(b.data, b.len, &back, &e), -1);
	assert_int_equal(result_decode_summed(b.data, b.len, &back, &e), 0);
	assert_int_equal(back.stdin_advance, 6);
	result_free(&back);
	/* A damaged body, and one too short for a trailer. */
	b.data[0] ^= 1;
	assert_int_equal(result_decode_summed(b.data, b.len, &back, &e), -1);
	assert_int_equal(result_decode_summed(b.data, DIGEST_LEN - 1, &back, &e), -1);
	result_free(&r);
	buf_free(&b);
}

#define CASE(f) cmocka_unit_test_setup_teardown(f, setup, scratch_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    CASE(an_output_replaced_after_the_step_ended_is_not_stored),
	    CASE(an_output_truncated_after_the_step_ended_is_not_stored),
	    CASE(an_output_removed_after_the_step_ended_is_not_stored),
	    CASE(an_output_that_stayed_as_the_step_left_it_is_stored),
	    CASE(a_removal_stays_the_steps_output_when_the_name_comes_back),
	    CASE(a_file_another_process_put_in_a_directory_the_step_made_is_not_its_output),
	    CASE(a_directory_renamed_into_place_brings_its_contents),
	    CASE(a_directory_renamed_over_an_empty_one_brings_its_contents),
	    CASE(a_file_added_to_a_directory_moved_into_place_after_the_step_is_not_stored),
	    cmocka_unit_test(a_results_stdin_advance_and_pin_survive_encoding),
	    cmocka_unit_test(a_results_stream_order_survives_encoding_and_is_checked),
	    cmocka_unit_test(a_summed_result_skips_its_trailer_not_its_checks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
