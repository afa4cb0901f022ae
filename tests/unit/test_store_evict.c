/* Eviction: least recently used order, max_age, shared and orphaned blobs,
 * the rows that go with an entry, dry runs, the sweep of abandoned files,
 * and the running size estimate. */
#include "test_store_fixture.h"

#include <dirent.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

#include "store/store_internal.h"
#include "test_store_sql.h"

#define BLOB_SIZE 10000

/* Puts entry k (weak key w, path set k) referencing one blob of BLOB_SIZE
 * bytes made from seed, incompressible so that it is stored raw at its
 * size. Returns the blob. */
static struct blob_ref put_entry(struct store *s, unsigned w, unsigned k, unsigned seed,
                                 unsigned max_pathsets)
{
	unsigned char *data = xmalloc(BLOB_SIZE);
	uint64_t x = 0x9e3779b97f4a7c15ULL * (seed + 1);
	for (size_t i = 0; i < BLOB_SIZE; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		data[i] = (unsigned char)x;
	}
	struct blob_ref blob;
	struct error e = {0, ""};
	assert_int_equal(store_put_blob_mem(s, data, BLOB_SIZE, &blob, &e), 0);
	free(data);
	assert_int_equal(blob.form, BLOB_RAW);
	struct digest weak = key_digest("weak", w), ps = key_digest("pathset", k),
	              strong = key_digest("strong", k);
	struct store_entry en = {
	    .weak = &weak,
	    .step_body = "argv",
	    .step_len = 4,
	    .pathset = &ps,
	    .pathset_body = "p",
	    .pathset_len = 1,
	    .strong = &strong,
	    .result_body = "r",
	    .result_len = 1,
	    .blobs = &blob,
	    .nblobs = 1,
	    .duration_ms = 1,
	};
	int rc = store_put_entry(s, &en, max_pathsets, &e);
	if (rc < 0)
		print_error("store_put_entry: %s\n", e.msg);
	assert_int_equal(rc, 0);
	return blob;
}

static int has_result(struct store *s, unsigned k)
{
	struct digest strong = key_digest("strong", k);
	void *body;
	size_t len;
	struct error e = {0, ""};
	int rc = store_get_result(s, &strong, &body, &len, &e);
	assert_true(rc >= 0);
	if (rc == 1)
		free(body);
	return rc;
}

static void touch(struct store *s, unsigned w, unsigned k)
{
	struct digest weak = key_digest("weak", w), ps = key_digest("pathset", k),
	              strong = key_digest("strong", k);
	assert_int_equal(store_touch_hit(s, &weak, &ps, &strong), 0);
}

static void exec_sql(struct store *s, const char *sql)
{
	assert_int_equal(sqlite3_exec(s->db, sql, NULL, NULL, NULL), SQLITE_OK);
}

static void evict_ok(struct store *s, uint64_t max, int64_t age, unsigned flags,
                     struct store_evict_report *rep)
{
	struct error e = {0, ""};
	int rc = store_evict(s, max, age, flags, rep, &e);
	if (rc < 0)
		print_error("store_evict: %s\n", e.msg);
	assert_int_equal(rc, 0);
}

/* Sets a file's times back by `seconds`. */
static void age_file(const char *path, int seconds)
{
	struct timeval tv[2];
	gettimeofday(&tv[0], NULL);
	tv[0].tv_sec -= seconds;
	tv[1] = tv[0];
	assert_int_equal(utimes(path, tv), 0);
}

static void the_least_recently_used_entries_go_first(void **state)
{
	struct store *s = open_cache();
	struct blob_ref b[6];
	for (unsigned k = 1; k <= 5; k++)
		b[k] = put_entry(s, k, k, k, 8);
	touch(s, 1, 1); /* 1 is now the most recently used */
	struct store_evict_report rep;
	evict_ok(s, 3 * BLOB_SIZE, 0, 0, &rep);
	assert_int_equal(rep.entries, 2);
	assert_int_equal(rep.blobs, 2);
	assert_int_equal(rep.bytes_freed, 2 * BLOB_SIZE);
	assert_int_equal(rep.entries_left, 3);
	assert_int_equal(rep.bytes_left, 3 * BLOB_SIZE);
	assert_int_equal(has_result(s, 1), 1);
	assert_int_equal(has_result(s, 2), 0);
	assert_int_equal(has_result(s, 3), 0);
	assert_int_equal(has_result(s, 4), 1);
	assert_int_equal(has_result(s, 5), 1);
	assert_false(store_blob_exists(s, &b[2]));
	assert_false(store_blob_exists(s, &b[3]));
	assert_true(store_blob_exists(s, &b[1]));
	assert_true(store_blob_exists(s, &b[4]));
	/* Under the bound: nothing more goes. */
	evict_ok(s, 3 * BLOB_SIZE, 0, 0, &rep);
	assert_int_equal(rep.entries, 0);
	assert_int_equal(rep.entries_left, 3);
	store_close(s);
}

static void an_evicted_entry_takes_its_path_set_and_step_along(void **state)
{
	struct store *s = open_cache();
	put_entry(s, 1, 1, 1, 8);
	put_entry(s, 2, 2, 2, 8); /* weak 2 has two path sets */
	put_entry(s, 2, 3, 3, 8);
	struct store_evict_report rep;
	evict_ok(s, 1 * BLOB_SIZE, 0, 0, &rep);
	assert_int_equal(rep.entries, 2);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM steps"), 1);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM pathsets"), 1);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM result_blobs"), 1);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM blobs"), 1);
	struct digest w1 = key_digest("weak", 1), w2 = key_digest("weak", 2);
	void *body;
	size_t len;
	struct error e = {0, ""};
	assert_int_equal(store_get_step(s, &w1, &body, &len, &e), 0);
	assert_int_equal(store_get_step(s, &w2, &body, &len, &e), 1);
	free(body);
	assert_int_equal(has_result(s, 3), 1);
	store_close(s);
}

static void a_blob_two_entries_share_stays_until_both_are_gone(void **state)
{
	struct store *s = open_cache();
	struct blob_ref shared = put_entry(s, 1, 1, 7, 8);
	put_entry(s, 2, 2, 7, 8); /* same content: the same blob */
	put_entry(s, 3, 3, 3, 8);
	struct store_evict_report rep;
	evict_ok(s, 2 * BLOB_SIZE, 0, 0, &rep); /* 20000 bytes: already within */
	assert_int_equal(rep.entries, 0);
	evict_ok(s, BLOB_SIZE + 1, 0, 0, &rep);
	/* Evicting entry 1 frees nothing (entry 2 still references the blob),
	 * so entry 2 goes too. */
	assert_int_equal(rep.entries, 2);
	assert_int_equal(rep.blobs, 1);
	assert_false(store_blob_exists(s, &shared));
	assert_int_equal(has_result(s, 3), 1);

	shared = put_entry(s, 4, 4, 9, 8);
	put_entry(s, 5, 5, 9, 8);
	evict_ok(s, 0, 0, 0, &rep);
	assert_int_equal(rep.entries, 0);
	exec_sql(s, "UPDATE results SET last_used = 0 WHERE strong IN (SELECT strong FROM"
	            " results ORDER BY rowid DESC LIMIT 1)"); /* entry 5 only */
	evict_ok(s, 0, 3600, 0, &rep);
	assert_int_equal(rep.entries, 1);
	assert_int_equal(rep.blobs, 0);
	assert_true(store_blob_exists(s, &shared));
	assert_int_equal(has_result(s, 4), 1);
	assert_int_equal(has_result(s, 5), 0);
	store_close(s);
}

static void entries_unused_for_max_age_go_whatever_the_size(void **state)
{
	struct store *s = open_cache();
	for (unsigned k = 1; k <= 4; k++)
		put_entry(s, k, k, k, 8);
	/* 1 and 3 were last used two hours ago. */
	char sql[256];
	int64_t old = store_now_ns() - (int64_t)7200 * 1000000000;
	struct digest s1 = key_digest("strong", 1), s3 = key_digest("strong", 3);
	char h1[DIGEST_HEX_LEN + 1], h3[DIGEST_HEX_LEN + 1];
	digest_to_hex(&s1, h1);
	digest_to_hex(&s3, h3);
	snprintf(sql, sizeof sql,
	         "UPDATE results SET last_used = %lld WHERE hex(strong) IN"
	         " (upper('%s'), upper('%s'))",
	         (long long)old, h1, h3);
	exec_sql(s, sql);
	struct store_evict_report rep;
	evict_ok(s, 0, 3 * 3600, 0, &rep);
	assert_int_equal(rep.entries, 0);
	evict_ok(s, 0, 3600, 0, &rep);
	assert_int_equal(rep.entries, 2);
	assert_int_equal(has_result(s, 1), 0);
	assert_int_equal(has_result(s, 2), 1);
	assert_int_equal(has_result(s, 3), 0);
	assert_int_equal(has_result(s, 4), 1);
	store_close(s);
}

static void blobs_of_dropped_path_sets_are_collected_first(void **state)
{
	struct store *s = open_cache();
	struct blob_ref old = put_entry(s, 1, 1, 1, 1);
	put_entry(s, 1, 2, 2, 1); /* drops path set 1 and its result; the blob stays */
	assert_true(store_blob_exists(s, &old));
	struct store_evict_report rep;
	evict_ok(s, 0, 0, 0, &rep);
	assert_int_equal(rep.entries, 0);
	assert_int_equal(rep.blobs, 1);
	assert_int_equal(rep.bytes_freed, BLOB_SIZE);
	assert_false(store_blob_exists(s, &old));
	assert_int_equal(has_result(s, 2), 1);
	store_close(s);
}

static void a_dry_run_reports_the_same_and_removes_nothing(void **state)
{
	struct store *s = open_cache();
	struct blob_ref b[5];
	for (unsigned k = 1; k <= 4; k++)
		b[k] = put_entry(s, k, k, k, 8);
	struct store_evict_report dry, real;
	evict_ok(s, 2 * BLOB_SIZE, 0, STORE_EVICT_DRY_RUN, &dry);
	assert_int_equal(dry.entries, 2);
	assert_int_equal(dry.bytes_freed, 2 * BLOB_SIZE);
	assert_int_equal(dry.entries_left, 2);
	for (unsigned k = 1; k <= 4; k++) {
		assert_int_equal(has_result(s, k), 1);
		assert_true(store_blob_exists(s, &b[k]));
	}
	evict_ok(s, 2 * BLOB_SIZE, 0, 0, &real);
	assert_int_equal(real.entries, dry.entries);
	assert_int_equal(real.blobs, dry.blobs);
	assert_int_equal(real.bytes_freed, dry.bytes_freed);
	assert_int_equal(real.bytes_left, dry.bytes_left);
	store_close(s);
}

static void the_sweep_removes_abandoned_files_but_not_young_ones(void **state)
{
	struct store *s = open_cache();
	put_entry(s, 1, 1, 1, 8);
	/* A blob whose store crashed before its commit, two hours ago, and one
	 * that a store in flight has just written. */
	struct blob_ref lost, in_flight;
	struct error e = {0, ""};
	assert_int_equal(store_put_blob_mem(s, "lost content", 12, &lost, &e), 0);
	assert_int_equal(store_put_blob_mem(s, "in flight", 9, &in_flight, &e), 0);
	char *lost_path = blob_path(s, &lost.digest, lost.form);
	age_file(lost_path, 7200);
	char *old_tmp = scratch_path("cache/tmp/blob.abandoned");
	char *new_tmp = scratch_path("cache/tmp/blob.writing");
	write_file(old_tmp, "x", 1);
	write_file(new_tmp, "y", 1);
	age_file(old_tmp, 7200);

	struct store_evict_report rep;
	evict_ok(s, 0, 0, 0, &rep); /* no sweep: rowless files stay */
	assert_true(store_blob_exists(s, &lost));
	assert_int_equal(access(old_tmp, F_OK), 0);

	evict_ok(s, 0, 0, STORE_EVICT_SWEEP | STORE_EVICT_DRY_RUN, &rep);
	assert_int_equal(rep.blobs, 1);
	assert_int_equal(rep.tmp_files, 1);
	assert_true(store_blob_exists(s, &lost));

	evict_ok(s, 0, 0, STORE_EVICT_SWEEP, &rep);
	assert_int_equal(rep.entries, 0);
	assert_int_equal(rep.blobs, 1);
	assert_int_equal(rep.tmp_files, 1);
	assert_false(store_blob_exists(s, &lost));
	assert_true(store_blob_exists(s, &in_flight));
	assert_int_equal(access(old_tmp, F_OK), -1);
	assert_int_equal(access(new_tmp, F_OK), 0);
	assert_int_equal(has_result(s, 1), 1);
	free(lost_path);
	free(old_tmp);
	free(new_tmp);
	store_close(s);
}

static void fingerprints_of_removed_blobs_go_with_them(void **state)
{
	struct store *s = open_cache();
	struct blob_ref b = put_entry(s, 1, 1, 1, 8);
	store_fp_flush(s);
	char *path = blob_path(s, &b.digest, BLOB_RAW);
	char sql[512];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM fingerprints WHERE path = '%s'", path);
	assert_int_equal(count_rows(s, sql), 1);
	struct store_evict_report rep;
	evict_ok(s, 1, 0, 0, &rep);
	assert_int_equal(rep.entries, 1);
	assert_int_equal(count_rows(s, sql), 0);
	free(path);
	store_close(s);
}

static void a_store_racing_an_eviction_fails_cleanly(void **state)
{
	struct store *s = open_cache();
	/* Entry 1's blob is about to be referenced again by a new entry whose
	 * blobs were "stored" before the eviction ran. */
	struct blob_ref b = put_entry(s, 1, 1, 1, 8);
	struct store_evict_report rep;
	evict_ok(s, 1, 0, 0, &rep);
	assert_int_equal(rep.entries, 1);
	struct digest weak = key_digest("weak", 2), ps = key_digest("pathset", 2),
	              strong = key_digest("strong", 2);
	struct store_entry en = {
	    .weak = &weak,
	    .step_body = "a",
	    .step_len = 1,
	    .pathset = &ps,
	    .pathset_body = "p",
	    .pathset_len = 1,
	    .strong = &strong,
	    .result_body = "r",
	    .result_len = 1,
	    .blobs = &b,
	    .nblobs = 1,
	};
	struct error e = {0, ""};
	assert_int_equal(store_put_entry(s, &en, 8, &e), -1);
	assert_int_equal(e.code, ENOENT);
	assert_int_equal(has_result(s, 2), 0);
	store_close(s);
}

static void another_process_evicting_makes_nowait_skip(void **state)
{
	struct store *s = open_cache();
	put_entry(s, 1, 1, 1, 8);
	char *lock = scratch_path("cache/evict.lock");
	int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* flock belongs to the open file: the child's own open holds it. */
		int cfd = open(lock, O_RDWR | O_CLOEXEC);
		flock(cfd, LOCK_EX);
		sleep(3);
		_exit(0);
	}
	usleep(300 * 1000);
	struct store_evict_report rep;
	evict_ok(s, 1, 0, STORE_EVICT_NOWAIT, &rep);
	assert_int_equal(rep.skipped, 1);
	assert_int_equal(has_result(s, 1), 1);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	evict_ok(s, 1, 0, STORE_EVICT_NOWAIT, &rep);
	assert_int_equal(rep.skipped, 0);
	assert_int_equal(rep.entries, 1);
	close(fd);
	free(lock);
	store_close(s);
}

static void the_size_estimate_says_when_eviction_is_due(void **state)
{
	struct store *s = open_cache();
	put_entry(s, 1, 1, 1, 8);
	/* First use: the estimate starts from the index. */
	assert_int_equal(store_evict_due(s, BLOB_SIZE, 3 * BLOB_SIZE, 0), 0);
	assert_int_equal(counter_value(s, "cache_size_estimate"), BLOB_SIZE);
	put_entry(s, 2, 2, 2, 8);
	assert_int_equal(store_evict_due(s, BLOB_SIZE, 3 * BLOB_SIZE, 0), 0);
	put_entry(s, 3, 3, 3, 8);
	assert_int_equal(store_evict_due(s, BLOB_SIZE, 3 * BLOB_SIZE, 0), 0);
	put_entry(s, 4, 4, 4, 8);
	assert_int_equal(store_evict_due(s, BLOB_SIZE, 3 * BLOB_SIZE, 0), STORE_EVICT_DUE_SIZE);
	struct store_evict_report rep;
	evict_ok(s, 2 * BLOB_SIZE, 0, 0, &rep);
	assert_int_equal(rep.entries, 2);
	/* Reset to what is really there. */
	assert_int_equal(counter_value(s, "cache_size_estimate"), 2 * BLOB_SIZE);
	/* After stats -z, recomputed from the index. */
	store_counters_zero(s);
	assert_int_equal(store_evict_due(s, BLOB_SIZE, 3 * BLOB_SIZE, 0), 0);
	assert_int_equal(counter_value(s, "cache_size_estimate"), 2 * BLOB_SIZE);
	/* The periodic sweep: a new cache starts its interval now. */
	assert_int_equal(store_evict_due(s, 0, 0, 3600), 0);
	char *stamp = scratch_path("cache/gc.stamp");
	age_file(stamp, 7200);
	assert_int_equal(store_evict_due(s, 0, 0, 3600), STORE_EVICT_DUE_SWEEP);
	evict_ok(s, 0, 0, STORE_EVICT_SWEEP, &rep);
	assert_int_equal(store_evict_due(s, 0, 0, 3600), 0);
	free(stamp);
	store_close(s);
}

/* An estimate that cannot be recomputed (the index fails the query) is
 * left as it was, not set to the one entry's bytes, which would hold
 * eviction off until the estimate passed the bound: the next store tries
 * again. */
static void a_size_estimate_not_recomputed_is_tried_again(void **state)
{
	struct store *s = open_cache();
	put_entry(s, 1, 1, 1, 8);
	put_entry(s, 2, 2, 2, 8);
	exec_sql(s, "ALTER TABLE blobs RENAME TO blobs_away");
	assert_int_equal(store_evict_due(s, BLOB_SIZE, BLOB_SIZE + 1, 0), 0);
	assert_int_equal(counter_value(s, "cache_size_estimate"), 0);
	exec_sql(s, "ALTER TABLE blobs_away RENAME TO blobs");
	assert_int_equal(store_evict_due(s, BLOB_SIZE, BLOB_SIZE + 1, 0), STORE_EVICT_DUE_SIZE);
	assert_int_equal(counter_value(s, "cache_size_estimate"), 2 * BLOB_SIZE);
	/* From then on, counted without the index. */
	assert_int_equal(store_evict_due(s, BLOB_SIZE, 4 * BLOB_SIZE, 0), 0);
	assert_int_equal(counter_value(s, "cache_size_estimate"), 3 * BLOB_SIZE);
	store_close(s);
}

static void eviction_works_in_batches_larger_than_one_transaction(void **state)
{
	struct store *s = open_cache();
	for (unsigned k = 1; k <= 250; k++)
		put_entry(s, k, k, k, 8);
	touch(s, 7, 7);
	struct store_evict_report rep;
	evict_ok(s, 10 * BLOB_SIZE, 0, 0, &rep);
	assert_int_equal(rep.entries, 240);
	assert_int_equal(rep.entries_left, 10);
	assert_int_equal(has_result(s, 7), 1);
	for (unsigned k = 242; k <= 250; k++)
		assert_int_equal(has_result(s, k), 1);
	assert_int_equal(has_result(s, 241), 0);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM blobs"), 10);
	/* The files moved aside for the transactions are gone too. */
	char *tmp = scratch_path("cache/tmp");
	DIR *d = opendir(tmp);
	assert_non_null(d);
	struct dirent *de;
	int files = 0;
	while ((de = readdir(d)))
		files += de->d_name[0] != '.';
	closedir(d);
	assert_int_equal(files, 0);
	free(tmp);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, scratch_setup, scratch_teardown)
	    T(the_least_recently_used_entries_go_first),
	    T(an_evicted_entry_takes_its_path_set_and_step_along),
	    T(a_blob_two_entries_share_stays_until_both_are_gone),
	    T(entries_unused_for_max_age_go_whatever_the_size),
	    T(blobs_of_dropped_path_sets_are_collected_first),
	    T(a_dry_run_reports_the_same_and_removes_nothing),
	    T(the_sweep_removes_abandoned_files_but_not_young_ones),
	    T(fingerprints_of_removed_blobs_go_with_them),
	    T(a_store_racing_an_eviction_fails_cleanly),
	    T(another_process_evicting_makes_nowait_skip),
	    T(the_size_estimate_says_when_eviction_is_due),
	    T(a_size_estimate_not_recomputed_is_tried_again),
	    T(eviction_works_in_batches_larger_than_one_transaction),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
