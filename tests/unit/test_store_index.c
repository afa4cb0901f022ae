/* The index: path sets, results, entries, fingerprints, opening and
 * recovery, read-only stores, concurrent writers. */
#include "test_store_fixture.h"

#include <dirent.h>
#include <sched.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>

#include "store/store_internal.h"
#include "test_store_sql.h"

/* Puts an entry (weak w, path set p, strong k) in argv group g (0: none;
 * else words 2 and key g) whose result references one fresh blob. Returns
 * the store_put_entry result. */
static int put_grouped(struct store *s, unsigned w, unsigned g, unsigned p, unsigned k,
                       unsigned max, struct error *e)
{
	struct digest weak = key_digest("weak", w), ps = key_digest("pathset", p),
	              strong = key_digest("strong", k);
	char pbody[64], rbody[64], content[64];
	snprintf(pbody, sizeof pbody, "pathset body %u", p);
	snprintf(rbody, sizeof rbody, "result body %u", k);
	snprintf(content, sizeof content, "output of %u", k);
	struct blob_ref blob;
	if (store_put_blob_mem(s, content, strlen(content), &blob, e) < 0)
		return -1;
	struct store_entry en = {
	    .weak = &weak,
	    .step_body = "argv",
	    .step_len = 4,
	    .pathset = &ps,
	    .pathset_body = pbody,
	    .pathset_len = strlen(pbody),
	    .strong = &strong,
	    .result_body = rbody,
	    .result_len = strlen(rbody),
	    .blobs = &blob,
	    .nblobs = 1,
	    .duration_ms = 12,
	};
	struct digest group = key_digest("argv group", g);
	if (g) {
		en.argv_words = 2;
		en.argv_key = &group;
	}
	return store_put_entry(s, &en, max, e);
}

static int put(struct store *s, unsigned w, unsigned p, unsigned k, unsigned max, struct error *e)
{
	return put_grouped(s, w, 0, p, k, max, e);
}

static void put_ok(struct store *s, unsigned w, unsigned p, unsigned k, unsigned max)
{
	struct error e = {0, ""};
	int rc = put(s, w, p, k, max, &e);
	if (rc < 0)
		print_error("put_entry: %s\n", e.msg);
	assert_int_equal(rc, 0);
}

/* 1 when the result of strong key k is found (and has the right body). */
static int has_result(struct store *s, unsigned k)
{
	struct digest strong = key_digest("strong", k);
	void *body;
	size_t len;
	struct error e = {0, ""};
	int rc = store_get_result(s, &strong, &body, &len, &e);
	assert_true(rc >= 0);
	if (rc == 1) {
		char want[64];
		snprintf(want, sizeof want, "result body %u", k);
		assert_int_equal(len, strlen(want));
		assert_memory_equal(body, want, len);
		free(body);
	}
	return rc;
}

/* The path-set numbers of weak key w, in the order the store returns them. */
static void assert_pathsets(struct store *s, unsigned w, const unsigned *want, size_t n)
{
	struct digest weak = key_digest("weak", w);
	struct store_pathset *ps;
	size_t got;
	struct error e = {0, ""};
	assert_int_equal(store_get_pathsets(s, &weak, &ps, &got, &e), 0);
	assert_int_equal(got, n);
	for (size_t i = 0; i < n; i++) {
		struct digest d = key_digest("pathset", want[i]);
		assert_true(digest_equal(&ps[i].digest, &d));
		char body[64];
		snprintf(body, sizeof body, "pathset body %u", want[i]);
		assert_int_equal(ps[i].len, strlen(body));
		assert_memory_equal(ps[i].body, body, ps[i].len);
	}
	store_pathsets_free(ps, got);
}

static void a_stored_result_is_found_and_others_are_not(void **state)
{
	struct store *s = open_cache();
	assert_int_equal(has_result(s, 1), 0);
	put_ok(s, 1, 1, 1, 8);
	assert_int_equal(has_result(s, 1), 1);
	assert_int_equal(has_result(s, 2), 0);
	store_close(s);
	/* And after reopening. */
	s = open_cache();
	assert_int_equal(has_result(s, 1), 1);
	struct digest unknown = key_digest("weak", 99);
	struct store_pathset *ps;
	size_t n;
	struct error e;
	assert_int_equal(store_get_pathsets(s, &unknown, &ps, &n, &e), 0);
	assert_int_equal(n, 0);
	store_pathsets_free(ps, n);
	store_close(s);
}

static void path_sets_come_most_recently_used_first(void **state)
{
	struct store *s = open_cache();
	put_ok(s, 1, 1, 1, 8);
	put_ok(s, 1, 2, 2, 8);
	put_ok(s, 1, 3, 3, 8);
	put_ok(s, 2, 9, 9, 8); /* another weak key's */
	assert_pathsets(s, 1, (unsigned[]){3, 2, 1}, 3);
	struct digest weak = key_digest("weak", 1), p1 = key_digest("pathset", 1),
	              k1 = key_digest("strong", 1);
	assert_int_equal(store_touch_hit(s, &weak, &p1, &k1), 0);
	assert_pathsets(s, 1, (unsigned[]){1, 3, 2}, 3);
	assert_pathsets(s, 2, (unsigned[]){9}, 1);
	store_close(s);
}

static void the_least_recently_used_path_sets_beyond_the_bound_are_dropped(void **state)
{
	struct store *s = open_cache();
	put_ok(s, 1, 1, 1, 2);
	put_ok(s, 1, 2, 2, 2);
	struct digest weak = key_digest("weak", 1), p1 = key_digest("pathset", 1),
	              k1 = key_digest("strong", 1);
	store_touch_hit(s, &weak, &p1, &k1); /* 1 is now more recent than 2 */
	put_ok(s, 1, 3, 3, 2);
	assert_pathsets(s, 1, (unsigned[]){3, 1}, 2);
	assert_int_equal(has_result(s, 1), 1);
	assert_int_equal(has_result(s, 2), 0); /* dropped with its path set */
	assert_int_equal(has_result(s, 3), 1);
	struct store_usage u;
	struct error e;
	assert_int_equal(store_usage(s, &u, &e), 0);
	assert_int_equal(u.entries, 2);
	assert_int_equal(u.pathsets, 2);
	assert_int_equal(u.blobs, 3); /* blob files stay for eviction */
	/* The dropped result's blob references went with it. */
	sqlite3_stmt *st;
	assert_int_equal(
	    sqlite3_prepare_v2(s->db, "SELECT count(*) FROM result_blobs", -1, &st, NULL),
	    SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 2);
	sqlite3_finalize(st);
	store_close(s);
}

/* The lookup's view of the files its argv names: group *ctx. */
static int group_key(void *ctx, uint64_t words, struct digest *key)
{
	assert_int_equal(words, 2);
	unsigned g = *(unsigned *)ctx;
	if (!g)
		return -1; /* the named file is gone */
	*key = key_digest("argv group", g);
	return 0;
}

/* The path-set numbers a lookup in argv group g finds, in order. */
static void assert_group(struct store *s, unsigned w, unsigned g, const unsigned *want, size_t n)
{
	struct digest weak = key_digest("weak", w);
	struct store_pathset *ps;
	size_t got;
	int any;
	struct error e = {0, ""};
	assert_int_equal(store_get_pathsets_argv(s, &weak, group_key, &g, &ps, &got, &any, &e), 0);
	assert_true(any);
	assert_int_equal(got, n);
	for (size_t i = 0; i < n; i++) {
		struct digest d = key_digest("pathset", want[i]);
		assert_true(digest_equal(&ps[i].digest, &d));
	}
	store_pathsets_free(ps, got);
}

static void path_sets_are_found_and_bounded_per_argv_group(void **state)
{
	struct store *s = open_cache();
	struct error e = {0, ""};
	/* Path set 1 recorded for two contents (groups 1 and 2): in both. */
	assert_int_equal(put_grouped(s, 1, 1, 1, 1, 2, &e), 0);
	assert_int_equal(put_grouped(s, 1, 2, 1, 2, 2, &e), 0);
	assert_int_equal(put_grouped(s, 1, 2, 2, 3, 2, &e), 0);
	assert_group(s, 1, 1, (unsigned[]){1}, 1);
	assert_group(s, 1, 2, (unsigned[]){2, 1}, 2);
	assert_group(s, 1, 0, NULL, 0);
	/* Many contents beyond the bound of 2: each keeps its own. */
	for (unsigned g = 3; g < 20; g++)
		assert_int_equal(put_grouped(s, 1, g, 100 + g, 100 + g, 2, &e), 0);
	for (unsigned g = 3; g < 20; g++)
		assert_group(s, 1, g, (unsigned[]){100 + g}, 1);
	assert_group(s, 1, 1, (unsigned[]){1}, 1);
	/* A third path set in group 2 pushes out its least recently used
	 * one; path set 1 stays, group 1 still holds it. */
	assert_int_equal(put_grouped(s, 1, 2, 3, 4, 2, &e), 0);
	assert_group(s, 1, 2, (unsigned[]){3, 2}, 2);
	assert_group(s, 1, 1, (unsigned[]){1}, 1);
	assert_int_equal(has_result(s, 2), 1);
	/* Path set 2 in no group any more: dropped with its result. */
	assert_int_equal(put_grouped(s, 1, 2, 4, 5, 2, &e), 0);
	assert_group(s, 1, 2, (unsigned[]){4, 3}, 2);
	assert_int_equal(has_result(s, 3), 0);
	/* The steps that name no input form a group of their own. */
	assert_int_equal(put(s, 1, 50, 50, 2, &e), 0);
	assert_group(s, 1, 0, (unsigned[]){50}, 1);
	store_close(s);
}

static void an_equal_strong_key_replaces_the_result(void **state)
{
	struct store *s = open_cache();
	put_ok(s, 1, 1, 1, 8);
	put_ok(s, 1, 1, 1, 8);
	struct store_usage u;
	struct error e;
	assert_int_equal(store_usage(s, &u, &e), 0);
	assert_int_equal(u.entries, 1);
	assert_int_equal(u.pathsets, 1);
	assert_int_equal(has_result(s, 1), 1);
	store_close(s);
}

static void an_entry_whose_blob_is_missing_is_not_stored(void **state)
{
	struct store *s = open_cache();
	struct digest weak = key_digest("weak", 1), ps = key_digest("pathset", 1),
	              strong = key_digest("strong", 1);
	struct blob_ref blob = {digest_of("never stored", 12), 12, BLOB_RAW};
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
	    .blobs = &blob,
	    .nblobs = 1,
	};
	struct error e = {0, ""};
	assert_int_equal(store_put_entry(s, &en, 8, &e), -1);
	assert_int_equal(e.code, ENOENT);
	assert_int_equal(has_result(s, 1), 0);
	assert_pathsets(s, 1, NULL, 0);
	store_close(s);
}

/* An entry whose result (body "result body 1") references one blob. */
static struct store_entry entry_of_result_1(const struct digest *weak, const struct digest *ps,
                                            const struct digest *strong,
                                            const struct blob_ref *blob)
{
	return (struct store_entry){
	    .weak = weak,
	    .step_body = "a",
	    .step_len = 1,
	    .pathset = ps,
	    .pathset_body = "p",
	    .pathset_len = 1,
	    .strong = strong,
	    .result_body = "result body 1",
	    .result_len = 13,
	    .blobs = blob,
	    .nblobs = 1,
	};
}

/* A duplicate row (words "-ox.o") for the entry of weak, ps and strong. */
static struct store_duplicate duplicate_row_1(const struct digest *weak, const struct digest *ps,
                                              const struct digest *strong)
{
	return (struct store_duplicate){
	    .dkey = key_digest("dkey", 1),
	    .shape = key_digest("shape", 1),
	    .mask = 1u << 3,
	    .weak = *weak,
	    .pathset = *ps,
	    .strong = *strong,
	    .words = "-ox.o",
	    .words_len = 6,
	};
}

/* The row noting an entry under its duplicate key goes in with the entry,
 * in its transaction: both or neither. */
static void an_entrys_duplicate_row_is_stored_with_it(void **state)
{
	struct store *s = open_cache();
	struct digest weak = key_digest("weak", 1), ps = key_digest("pathset", 1),
	              strong = key_digest("strong", 1);
	struct store_duplicate d = duplicate_row_1(&weak, &ps, &strong);
	struct blob_ref missing = {digest_of("never stored", 12), 12, BLOB_RAW};
	struct store_entry en = entry_of_result_1(&weak, &ps, &strong, &missing);
	en.duplicate = &d;
	struct error e = {0, ""};
	struct store_duplicate got;
	assert_int_equal(store_put_entry(s, &en, 8, &e), -1);
	assert_int_equal(store_duplicate_get(s, &d.dkey, &got, &e), 0);
	struct blob_ref blob;
	assert_int_equal(store_put_blob_mem(s, "output", 6, &blob, &e), 0);
	en.blobs = &blob;
	assert_int_equal(store_put_entry(s, &en, 8, &e), 0);
	assert_int_equal(has_result(s, 1), 1);
	assert_int_equal(store_duplicate_get(s, &d.dkey, &got, &e), 1);
	assert_true(digest_equal(&got.strong, &strong));
	assert_true(digest_equal(&got.shape, &d.shape));
	assert_int_equal(got.mask, d.mask);
	assert_int_equal(got.words_len, 6);
	assert_memory_equal(got.words, "-ox.o", 6);
	store_duplicate_free(&got);
	store_close(s);
}

static void usage_counts_and_clear_empties_the_cache(void **state)
{
	struct store *s = open_cache();
	for (unsigned i = 0; i < 5; i++)
		put_ok(s, i, i, i, 8);
	struct store_usage u;
	struct error e;
	assert_int_equal(store_usage(s, &u, &e), 0);
	assert_int_equal(u.entries, 5);
	assert_int_equal(u.pathsets, 5);
	assert_int_equal(u.blobs, 5);
	assert_true(u.blob_bytes > 0);
	store_count(s, "hits", 3);
	assert_int_equal(store_clear(s, &e), 0);
	assert_int_equal(store_usage(s, &u, &e), 0);
	assert_int_equal(u.entries + u.pathsets + u.blobs + u.blob_bytes, 0);
	assert_int_equal(has_result(s, 1), 0);
	/* Every blob file is gone. */
	char *blobs = scratch_path("cache/blobs");
	DIR *top = opendir(blobs);
	assert_non_null(top);
	struct dirent *de;
	while ((de = readdir(top))) {
		if (de->d_name[0] == '.')
			continue;
		char *sub = xasprintf("%s/%s", blobs, de->d_name);
		assert_int_equal(rmdir(sub), 0); /* fails unless empty */
		free(sub);
	}
	closedir(top);
	free(blobs);
	/* Counters stay. */
	assert_int_equal(counter_value(s, "hits"), 3);
	/* The store works after a clear. */
	put_ok(s, 1, 1, 1, 8);
	assert_int_equal(has_result(s, 1), 1);
	store_close(s);
}

static void fingerprints_round_trip_through_the_queue_and_the_index(void **state)
{
	struct store *s = open_cache();
	struct file_id id = {1, 2, 3, 4, 5, 0100644};
	struct digest d = digest_of("content", 7), got;
	assert_int_equal(store_fp_get(s, "/src/a.c", &id, &got), 0);
	store_fp_put(s, "/src/a.c", &id, &d);
	assert_int_equal(store_fp_get(s, "/src/a.c", &id, &got), 1);
	assert_true(digest_equal(&got, &d));
	struct file_id other = id;
	other.mtime_ns++;
	assert_int_equal(store_fp_get(s, "/src/a.c", &other, &got), 0);
	/* Many paths: the queue's table grows. */
	for (unsigned i = 0; i < 5000; i++) {
		char path[64];
		snprintf(path, sizeof path, "/src/file%u.c", i);
		struct digest di = key_digest("content", i);
		store_fp_put(s, path, &id, &di);
	}
	store_fp_flush(s);
	assert_int_equal(s->fpq.n, 0);
	assert_int_equal(store_fp_get(s, "/src/file4999.c", &id, &got), 1);
	struct digest d4999 = key_digest("content", 4999);
	assert_true(digest_equal(&got, &d4999));
	/* Storing an entry writes the queue in its transaction. */
	store_fp_put(s, "/src/b.c", &id, &d);
	put_ok(s, 1, 1, 1, 8);
	assert_int_equal(s->fpq.n, 0);
	/* A newer digest replaces the old one; store_close flushes. */
	store_fp_put(s, "/src/a.c", &other, &d4999);
	store_close(s);
	s = open_cache();
	assert_int_equal(store_fp_get(s, "/src/a.c", &id, &got), 0);
	assert_int_equal(store_fp_get(s, "/src/a.c", &other, &got), 1);
	assert_true(digest_equal(&got, &d4999));
	store_close(s);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Another connection holds the write lock. */
static sqlite3 *hold_write_lock(void)
{
	char *index = scratch_path("cache/index.db");
	sqlite3 *db;
	assert_int_equal(sqlite3_open(index, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	free(index);
	return db;
}

static void hits_and_fingerprint_flushes_never_wait_for_a_writer(void **state)
{
	struct store *s = open_cache();
	put_ok(s, 1, 1, 1, 8);
	sqlite3 *db = hold_write_lock();
	struct digest weak = key_digest("weak", 1), p1 = key_digest("pathset", 1),
	              k1 = key_digest("strong", 1);
	struct file_id id = {1, 2, 3, 4, 5, 0100644};
	struct digest d = digest_of("x", 1), got;
	store_fp_put(s, "/a", &id, &d);
	size_t queued = s->fpq.n; /* with the stored blob's verification record */
	double t0 = now_s();
	assert_int_equal(store_touch_hit(s, &weak, &p1, &k1), 0);
	store_fp_flush(s);
	double t1 = now_s();
	assert_true(t1 - t0 < 1.0);
	assert_int_equal(counter_value(s, "lru_updates_skipped"), 1);
	assert_int_equal(s->fpq.n, queued); /* kept for a later flush */
	assert_int_equal(counter_value(s, "fingerprint_flushes_skipped"), 1);
	/* Reads go on beside the writer. */
	assert_int_equal(has_result(s, 1), 1);
	assert_int_equal(store_fp_get(s, "/a", &id, &got), 1);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
	/* With the lock free, the next hit's transaction takes the queue along. */
	assert_int_equal(store_touch_hit(s, &weak, &p1, &k1), 0);
	assert_int_equal(s->fpq.n, 0);
	assert_int_equal(store_fp_get(s, "/a", &id, &got), 1);
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(s->db, "SELECT hits FROM results", -1, &st, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 1); /* the skipped hit is not counted */
	sqlite3_finalize(st);
	store_close(s);
}

static void a_corrupt_index_is_set_aside_and_recreated(void **state)
{
	struct store *s = open_cache();
	put_ok(s, 1, 1, 1, 8);
	/* Closing does not checkpoint: the pages would still be read from the
	 * WAL, over the damage below. */
	assert_int_equal(sqlite3_exec(s->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL),
	                 SQLITE_OK);
	store_close(s);
	char *index = scratch_path("cache/index.db");
	char garbage[8192];
	memset(garbage, 'Z', sizeof garbage);
	write_file(index, garbage, sizeof garbage);
	s = open_cache();
	assert_int_equal(counter_value(s, "index_recreated"), 1);
	assert_int_equal(has_result(s, 1), 0);
	put_ok(s, 2, 2, 2, 8);
	assert_int_equal(has_result(s, 2), 1);
	store_close(s);
	/* The corrupt file was kept for inspection. */
	char *cache = cache_dir();
	DIR *d = opendir(cache);
	int aside = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		aside += strncmp(de->d_name, "index.db.corrupt-", 17) == 0;
	closedir(d);
	assert_true(aside >= 1);
	struct stat st;
	assert_int_equal(stat(index, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	free(cache);
	free(index);
}

/* After damage to an index holding result 7: the lookup of 7 reports the
 * corruption, and the next open has recreated the index, empty and
 * working. Returns that open store. */
static struct store *found_corrupt_then_recreated(void)
{
	struct store *s = open_cache();
	struct digest strong = key_digest("strong", 7);
	void *body;
	size_t len;
	struct error e = {0, ""};
	assert_int_equal(store_get_result(s, &strong, &body, &len, &e), -1);
	assert_int_equal(e.code, EBADMSG);
	assert_non_null(strstr(e.msg, "corrupt"));
	store_close(s);
	s = open_cache();
	assert_int_equal(counter_value(s, "index_recreated"), 1);
	assert_int_equal(has_result(s, 7), 0);
	put_ok(s, 7, 7, 7, 8);
	assert_int_equal(has_result(s, 7), 1);
	return s;
}

static void a_corrupt_page_found_by_a_query_is_checked_at_the_next_open(void **state)
{
	struct store *s = open_cache();
	for (unsigned i = 0; i < 200; i++)
		put_ok(s, i, i, i, 8);
	store_close(s);
	/* Damage every page but the first (the header and schema). */
	char *index = scratch_path("cache/index.db");
	int fd = open(index, O_RDWR | O_CLOEXEC);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	char junk[4096];
	memset(junk, 0xA5, sizeof junk);
	for (off_t off = 4096; off < st.st_size; off += 4096)
		assert_int_equal(pwrite(fd, junk, sizeof junk, off), (ssize_t)sizeof junk);
	close(fd);
	store_close(found_corrupt_then_recreated());
	free(index);
}

/* A flipped bit in the schema's text renames a column: every page still
 * passes quick_check, and every query naming the column fails. The first
 * such query marks the index; the next open compares the schema with this
 * version's and recreates the index. */
static void a_damaged_schema_is_found_and_the_index_recreated(void **state)
{
	struct store *s = open_cache();
	for (unsigned i = 0; i < 20; i++)
		put_ok(s, i, i, i, 8);
	store_close(s);
	char *index = scratch_path("cache/index.db");
	sqlite3 *db;
	assert_int_equal(sqlite3_open(index, &db), SQLITE_OK);
	assert_int_equal(
	    sqlite3_exec(db,
	                 "PRAGMA writable_schema=ON;"
	                 " UPDATE sqlite_master SET sql = replace(sql, 'strong BLOB PRIMARY',"
	                 " 'strond BLOB PRIMARY') WHERE name = 'results';",
	                 NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(db);
	store_close(found_corrupt_then_recreated());
	/* An intact index is left alone by the check. */
	char *marker = scratch_path("cache/index.db.check");
	write_file(marker, "", 0);
	s = open_cache();
	assert_int_equal(counter_value(s, "index_recreated"), 1);
	assert_int_equal(has_result(s, 7), 1);
	store_close(s);
	free(marker);
	free(index);
}

static void a_read_only_store_reads_and_refuses_every_write(void **state)
{
	struct store *s = open_cache();
	put_ok(s, 1, 1, 1, 8);
	store_close(s);
	char *dir = cache_dir(), *index = scratch_path("cache/index.db");
	struct stat before, after;
	assert_int_equal(stat(index, &before), 0);
	struct error e = {0, ""};
	assert_int_equal(store_open(dir, STORE_READONLY, &s, &e), 0);
	assert_true(store_is_readonly(s));
	assert_int_equal(has_result(s, 1), 1);
	assert_int_equal(put(s, 2, 2, 2, 8, &e), -1);
	assert_int_equal(e.code, EROFS);
	assert_string_equal(e.msg, "store is read-only");
	struct blob_ref ref;
	assert_int_equal(store_put_blob_mem(s, "x", 1, &ref, &e), -1);
	assert_int_equal(store_clear(s, &e), -1);
	struct digest weak = key_digest("weak", 1), p1 = key_digest("pathset", 1),
	              k1 = key_digest("strong", 1);
	assert_int_equal(store_touch_hit(s, &weak, &p1, &k1), 0);
	struct file_id id = {1, 2, 3, 4, 5, 6};
	store_fp_put(s, "/x", &id, &weak);
	store_count(s, "hits", 1);
	store_close(s);
	assert_int_equal(stat(index, &after), 0);
	assert_int_equal(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
	assert_int_equal(before.st_mtim.tv_sec, after.st_mtim.tv_sec);
	s = open_cache();
	assert_int_equal(has_result(s, 2), 0);
	assert_int_equal(counter_value(s, "hits"), 0);
	store_close(s);
	free(dir);
	free(index);
}

/* In a child with its own mount namespace, makes the cache directory a
 * read-only bind mount and runs check(); the exit status tells the parent.
 * 77 = cannot mount here (not root, no CAP_SYS_ADMIN). */
static int in_read_only_mount(void (*check)(const char *dir))
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *dir = cache_dir();
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount(dir, dir, NULL, MS_BIND, NULL) < 0 ||
		    mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
			_exit(77);
		check(dir);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void check_read_only_mount(const char *dir)
{
	struct store *s;
	struct error e = {0, ""};
	if (store_open(dir, 0, &s, &e) < 0) {
		fprintf(stderr, "store_open: %s\n", e.msg);
		_exit(1);
	}
	if (!store_is_readonly(s) || has_result(s, 1) != 1)
		_exit(2);
	if (put(s, 2, 2, 2, 8, &e) != -1 || e.code != EROFS)
		_exit(3);
	store_count(s, "hits", 1);
	store_close(s);
}

static void check_missing_shm(const char *dir)
{
	struct store *s;
	struct error e = {0, ""};
	if (store_open(dir, 0, &s, &e) == 0)
		_exit(1);
	fprintf(stderr, "expected error: %s\n", e.msg);
	if (!strstr(e.msg, "index.db-shm is missing"))
		_exit(2);
}

static void a_read_only_mount_opens_read_only(void **state)
{
	struct store *s = open_cache();
	put_ok(s, 1, 1, 1, 8);
	store_close(s);
	int rc = in_read_only_mount(check_read_only_mount);
	if (rc == 77)
		skip(); /* no mount namespaces here: covered by the STORE_READONLY test */
	assert_int_equal(rc, 0);

	/* Without its -shm file a WAL index cannot be read from a read-only
	 * directory: the error says so. */
	char *shm = scratch_path("cache/index.db-shm"), *wal = scratch_path("cache/index.db-wal");
	assert_int_equal(unlink(shm), 0);
	unlink(wal);
	assert_int_equal(in_read_only_mount(check_missing_shm), 0);
	free(shm);
	free(wal);
}

#define WRITERS    8
#define PER_WRITER 50

static void concurrent_writers_all_succeed(void **state)
{
	/* The cache does not exist yet: the writers also race to create it. */
	pid_t pids[WRITERS];
	for (int w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		assert_true(pids[w] >= 0);
		if (pids[w] == 0) {
			char *dir = cache_dir();
			struct store *s;
			struct error e = {0, ""};
			if (store_open(dir, 0, &s, &e) < 0) {
				fprintf(stderr, "writer %d: %s\n", w, e.msg);
				_exit(1);
			}
			for (unsigned i = 0; i < PER_WRITER; i++) {
				unsigned k = (unsigned)w * 1000 + i;
				if (put(s, k, k, k, 4, &e) < 0) {
					fprintf(stderr, "writer %d: %s\n", w, e.msg);
					_exit(2);
				}
				store_count(s, "stores", 1);
			}
			store_close(s);
			_exit(0);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int status;
		assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	struct store *s = open_cache();
	for (int w = 0; w < WRITERS; w++)
		for (unsigned i = 0; i < PER_WRITER; i++)
			assert_int_equal(has_result(s, (unsigned)w * 1000 + i), 1);
	struct store_usage u;
	struct error e;
	assert_int_equal(store_usage(s, &u, &e), 0);
	assert_int_equal(u.entries, WRITERS * PER_WRITER);
	assert_int_equal(counter_value(s, "stores"), WRITERS * PER_WRITER);
	assert_int_equal(counter_value(s, "index_busy"), 0);
	store_close(s);
}

static void network_file_systems_are_recognised(void **state)
{
	assert_true(store_fs_is_network(0x6969));      /* NFS */
	assert_true(store_fs_is_network(0xFE534D42));  /* SMB2 */
	assert_true(store_fs_is_network(0x65735546));  /* FUSE */
	assert_false(store_fs_is_network(0xEF53));     /* ext4 */
	assert_false(store_fs_is_network(0x01021994)); /* tmpfs */
}

static void the_index_is_private_to_its_owner(void **state)
{
	struct store *s = open_cache();
	put_ok(s, 1, 1, 1, 8);
	const char *names[] = {"cache", "cache/index.db", "cache/index.db-wal",
	                       "cache/index.db-shm"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char *p = scratch_path("%s", names[i]);
		struct stat st;
		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(st.st_mode & 077, 0);
		free(p);
	}
	store_close(s);
	/* Widened by hand, it is narrowed again at the next open. */
	char *index = scratch_path("cache/index.db");
	assert_int_equal(chmod(index, 0644), 0);
	s = open_cache();
	assert_true(has_result(s, 1));
	struct stat st;
	assert_int_equal(stat(index, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	store_close(s);
	free(index);
}

/* blobs/ and tmp/ are found at each open, and made again when gone. */
static void a_cache_missing_its_tmp_directory_gets_it_back(void **state)
{
	struct store *s = open_cache();
	store_close(s);
	char *tmp = scratch_path("cache/tmp");
	assert_int_equal(rmdir(tmp), 0);
	s = open_cache();
	assert_false(store_is_readonly(s));
	struct stat st;
	assert_int_equal(stat(tmp, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	put_ok(s, 1, 1, 1, 8);
	store_close(s);
	free(tmp);
}

static off_t file_size(const char *rel)
{
	char *p = scratch_path("%s", rel);
	struct stat st;
	off_t size = stat(p, &st) == 0 ? st.st_size : -1;
	free(p);
	return size;
}

/* A hit goes to the touch log: no write lock, no WAL frames for the last
 * connection to checkpoint. The next write transaction folds it in, and
 * puts it back if it rolls back. */
static void a_hit_writes_nothing_to_the_index(void **state)
{
	struct store *s = open_cache();
	put_ok(s, 1, 1, 1, 8);
	put_ok(s, 1, 2, 2, 8);
	store_close(s);
	s = open_cache();
	off_t wal = file_size("cache/index.db-wal");
	struct digest weak = key_digest("weak", 1), p1 = key_digest("pathset", 1),
	              k1 = key_digest("strong", 1);
	assert_int_equal(store_touch_hit(s, &weak, &p1, &k1), 0);
	assert_int_equal(file_size("cache/index.db-wal"), wal);
	assert_true(file_size("cache/touches") > 0);
	assert_pathsets(s, 1, (unsigned[]){1, 2}, 2); /* seen before it is folded */
	struct error e = {0, ""};
	assert_int_equal(index_begin(s, &e), 0);
	assert_int_equal(file_size("cache/touches"), 0);
	index_rollback(s);
	assert_true(file_size("cache/touches") > 0);
	assert_int_equal(index_begin(s, &e), 0);
	assert_int_equal(index_commit(s, &e), 0);
	assert_int_equal(file_size("cache/touches"), 0);
	assert_pathsets(s, 1, (unsigned[]){1, 2}, 2);
	store_close(s);
}

/* A new step's identity names its weak key in the entry's transaction:
 * both or neither, and one commit for the miss. */
static void a_new_steps_name_goes_in_with_its_entry(void **state)
{
	struct store *s = open_cache();
	struct digest weak = key_digest("weak", 1), ps = key_digest("pathset", 1),
	              strong = key_digest("strong", 1), ident = key_digest("ident", 1), got;
	struct blob_ref missing = {digest_of("never stored", 12), 12, BLOB_RAW};
	struct store_entry en = entry_of_result_1(&weak, &ps, &strong, &missing);
	en.step_ident = &ident;
	struct error e = {0, ""};
	assert_int_equal(store_put_entry(s, &en, 8, &e), -1);
	assert_int_equal(store_step_name_get(s, &ident, &got), 0);
	struct blob_ref blob;
	assert_int_equal(store_put_blob_mem(s, "output", 6, &blob, &e), 0);
	en.blobs = &blob;
	assert_int_equal(store_put_entry(s, &en, 8, &e), 0);
	assert_int_equal(store_step_name_get(s, &ident, &got), 1);
	assert_true(digest_equal(&got, &weak));
	store_close(s);
}

/* An entry stored again under its strong key (--recache, a verification)
 * is as if new: its body, times and zero hits; but it stays where it was,
 * without REPLACE's new rowid. */
static void a_result_stored_again_is_replaced_in_place(void **state)
{
	struct store *s = open_cache();
	put_ok(s, 1, 1, 1, 8);
	int64_t rowid = count_rows(s, "SELECT rowid FROM results");
	assert_int_equal(
	    sqlite3_exec(s->db, "UPDATE results SET hits = 5, body = x'00'", NULL, NULL, NULL),
	    SQLITE_OK);
	put_ok(s, 1, 1, 1, 8);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM results"), 1);
	assert_int_equal(count_rows(s, "SELECT rowid FROM results"), rowid);
	assert_int_equal(count_rows(s, "SELECT hits FROM results"), 0);
	assert_int_equal(has_result(s, 1), 1);
	store_close(s);
}

/* Storing an entry again writes only the pages of what changed (its times,
 * its result's body): the step, its blob rows and the indexes of rows
 * that keep their keys stay out of the WAL, which every later process
 * reads whole when it opens the index. */
static void an_entry_stored_again_writes_few_pages(void **state)
{
	struct store *s = open_cache();
	put_ok(s, 1, 1, 1, 8);
	off_t before = file_size("cache/index.db-wal");
	put_ok(s, 1, 1, 1, 8);
	off_t frames = (file_size("cache/index.db-wal") - before) / (24 + 4096);
	/* The path set's row, its grouping and the result: its blob
	 * reference stays as it was. */
	assert_true(frames <= 3);
	store_close(s);
}

/* Statements prepared ahead (by another thread, in run.c) serve the store
 * as their own would; a store whose index is not open prepares nothing. */
static void statements_prepared_ahead_store_the_entry(void **state)
{
	struct store *s = open_cache();
	store_prepare_entry_statements(s, STORE_ENTRY_DUPLICATE);
	assert_non_null(s->stmts[ST_PUT_RESULT]);
	assert_non_null(s->stmts[ST_DUP_UPDATE]);
	put_ok(s, 1, 1, 1, 8);
	assert_int_equal(has_result(s, 1), 1);
	store_close(s);
	struct store *d;
	struct error e = {0, ""};
	assert_int_equal(store_open("cache", STORE_DEFER_INDEX, &d, &e), 0);
	store_prepare_entry_statements(d, STORE_ENTRY_DUPLICATE);
	assert_null(d->db);
	store_close(d);
}

/* Each statement prepared ahead costs CPU whether it runs or not: only
 * the duplicate row statements the entry will run are prepared. */
static void only_the_duplicate_statements_an_entry_runs_are_prepared_ahead(void **state)
{
	static const struct {
		unsigned what;
		int update, keep_strong, insert;
	} cases[] = {
	    {0, 0, 0, 0},
	    {STORE_ENTRY_AGAIN | STORE_ENTRY_NEW_STEP, 0, 0, 0},
	    {STORE_ENTRY_DUPLICATE, 1, 0, 0},
	    {STORE_ENTRY_DUPLICATE | STORE_ENTRY_NEW_STEP, 1, 0, 1},
	    {STORE_ENTRY_DUPLICATE | STORE_ENTRY_AGAIN, 0, 1, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct store *s = open_cache();
		store_prepare_entry_statements(s, cases[i].what);
		assert_non_null(s->stmts[ST_PUT_STEP]);
		assert_non_null(s->stmts[ST_WEAK_SIZE]);
		assert_int_equal(s->stmts[ST_DUP_UPDATE] != NULL, cases[i].update);
		assert_int_equal(s->stmts[ST_DUP_UPDATE_KEEP_STRONG] != NULL, cases[i].keep_strong);
		assert_int_equal(s->stmts[ST_DUP_INSERT] != NULL, cases[i].insert);
		store_close(s);
	}
}

/* An entry stored again keeps the references its result still names and
 * drops the others. */
static void a_result_stored_again_references_its_new_blobs_only(void **state)
{
	struct store *s = open_cache();
	struct digest weak = key_digest("weak", 1), ps = key_digest("pathset", 1),
	              strong = key_digest("strong", 1);
	struct blob_ref blobs[2];
	struct error e = {0, ""};
	assert_int_equal(store_put_blob_mem(s, "first", 5, &blobs[0], &e), 0);
	assert_int_equal(store_put_blob_mem(s, "second", 6, &blobs[1], &e), 0);
	struct store_entry en = entry_of_result_1(&weak, &ps, &strong, &blobs[0]);
	assert_int_equal(store_put_entry(s, &en, 8, &e), 0);
	en.blobs = &blobs[1];
	assert_int_equal(store_put_entry(s, &en, 8, &e), 0);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM result_blobs"), 1);
	sqlite3_stmt *st;
	assert_int_equal(
	    sqlite3_prepare_v2(s->db, "SELECT digest FROM result_blobs", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_memory_equal(sqlite3_column_blob(st, 0), blobs[1].digest.b, DIGEST_LEN);
	sqlite3_finalize(st);
	en.blobs = blobs;
	en.nblobs = 2;
	assert_int_equal(store_put_entry(s, &en, 8, &e), 0);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM result_blobs"), 2);
	store_close(s);
}

/* An entry stored again with its duplicate row leaves the row's indexes
 * alone; one whose row names another entry still takes the row. */
static void a_duplicate_row_stored_again_with_its_entry(void **state)
{
	struct store *s = open_cache();
	struct digest weak = key_digest("weak", 1), ps = key_digest("pathset", 1),
	              strong[2] = {key_digest("strong", 1), key_digest("strong", 2)};
	struct store_duplicate d = duplicate_row_1(&weak, &ps, &strong[0]);
	struct error e = {0, ""};
	struct blob_ref blob;
	assert_int_equal(store_put_blob_mem(s, "output", 6, &blob, &e), 0);
	struct store_entry en = entry_of_result_1(&weak, &ps, &strong[0], &blob);
	en.duplicate = &d;
	assert_int_equal(store_put_entry(s, &en, 8, &e), 0);
	off_t before = file_size("cache/index.db-wal");
	assert_int_equal(store_put_entry(s, &en, 8, &e), 0);
	off_t frames = (file_size("cache/index.db-wal") - before) / (24 + 4096);
	/* The path set's row, its grouping, the result and the duplicate
	 * row. */
	assert_true(frames <= 4);
	/* strong 2, stored before without a duplicate row, again with one
	 * while the row names strong 1. */
	en.strong = &strong[1];
	en.duplicate = NULL;
	assert_int_equal(store_put_entry(s, &en, 8, &e), 0);
	d.strong = strong[1];
	en.duplicate = &d;
	assert_int_equal(store_put_entry(s, &en, 8, &e), 0);
	struct store_duplicate got;
	assert_int_equal(store_duplicate_get(s, &d.dkey, &got, &e), 1);
	assert_true(digest_equal(&got.strong, &strong[1]));
	store_duplicate_free(&got);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM duplicates"), 1);
	store_close(s);
}

/* A step recorded again under its duplicate key takes the new entry; one
 * whose shape changed replaces the row. */
static void a_duplicate_row_recorded_again_names_the_new_entry(void **state)
{
	struct store *s = open_cache();
	struct store_duplicate d = {
	    .dkey = key_digest("dkey", 1),
	    .shape = key_digest("shape", 1),
	    .mask = 1u << 3,
	    .weak = key_digest("weak", 1),
	    .pathset = key_digest("pathset", 1),
	    .strong = key_digest("strong", 1),
	    .words = "-ox.o",
	    .words_len = 6,
	};
	struct error e = {0, ""};
	assert_int_equal(store_duplicate_put(s, &d, &e), 0);
	d.strong = key_digest("strong", 2);
	d.pathset = key_digest("pathset", 2);
	assert_int_equal(store_duplicate_put(s, &d, &e), 0);
	struct store_duplicate got;
	assert_int_equal(store_duplicate_get(s, &d.dkey, &got, &e), 1);
	assert_true(digest_equal(&got.strong, &d.strong));
	assert_true(digest_equal(&got.pathset, &d.pathset));
	assert_true(digest_equal(&got.shape, &d.shape));
	assert_int_equal(got.has_pp, 0);
	store_duplicate_free(&got);
	d.shape = key_digest("shape", 2);
	d.has_pp = 1;
	d.pkey = key_digest("pkey", 1);
	d.pshape = key_digest("pshape", 1);
	d.pmask = 1;
	d.defines = "-DX";
	d.defines_len = 4;
	assert_int_equal(store_duplicate_put(s, &d, &e), 0);
	assert_int_equal(store_duplicate_get(s, &d.dkey, &got, &e), 1);
	assert_true(digest_equal(&got.shape, &d.shape));
	assert_int_equal(got.has_pp, 1);
	assert_true(digest_equal(&got.pkey, &d.pkey));
	store_duplicate_free(&got);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM duplicates"), 1);
	store_close(s);
}

/* A serial build: each miss is a process of its own that opens the index,
 * stores one entry and closes it. The WAL stays small (it is read whole by
 * the next process's open), where SQLite's autocheckpoint let it grow to
 * 4 MB and stay there. */
static void serial_stores_keep_the_wal_small(void **state)
{
	for (unsigned i = 1; i <= 400; i++) {
		struct store *s = open_cache();
		put_ok(s, i, i, i, 8);
		store_close(s);
	}
	off_t wal = file_size("cache/index.db-wal");
	assert_true(wal >= 0 && wal < (1 << 20));
	struct store *s = open_cache();
	for (unsigned i = 1; i <= 400; i += 37)
		assert_true(has_result(s, i));
	store_close(s);
}

/* The frames of the WAL that the next process to open the index reads (the
 * WAL-index rebuild of a first opener): those from the first on whose salts
 * are the header's. */
static long wal_frames_read_at_open(void)
{
	char *path = scratch_path("cache/index.db-wal");
	FILE *f = fopen(path, "rb");
	free(path);
	if (!f)
		return 0;
	unsigned char hdr[32], fh[24];
	long n = 0;
	if (fread(hdr, 1, sizeof hdr, f) == sizeof hdr) {
		while (fread(fh, 1, sizeof fh, f) == sizeof fh && !memcmp(fh + 8, hdr + 16, 8) &&
		       fseek(f, 4096, SEEK_CUR) == 0)
			n++;
	}
	fclose(f);
	return n;
}

/* A serial build again: the commit that checkpoints the WAL also starts it
 * again at its first frame, in place, so that the next process reads one
 * frame at its open instead of every frame just checkpointed (nor is the
 * file cut and grown again, which costs the file system more). */
static void a_checkpointed_wal_starts_again_at_its_first_frame(void **state)
{
	int started_again = 0;
	for (unsigned i = 1; i <= 80; i++) {
		struct store *s = open_cache();
		put_ok(s, i, i, i, 8);
		store_close(s);
		long frames = wal_frames_read_at_open();
		if (frames <= 1 && file_size("cache/index.db-wal") > 4096 * 64)
			started_again = 1;
		assert_true(frames < 200);
	}
	assert_true(started_again);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, scratch_setup, scratch_teardown)
	    T(a_stored_result_is_found_and_others_are_not),
	    T(path_sets_come_most_recently_used_first),
	    T(the_least_recently_used_path_sets_beyond_the_bound_are_dropped),
	    T(path_sets_are_found_and_bounded_per_argv_group),
	    T(an_equal_strong_key_replaces_the_result),
	    T(an_entrys_duplicate_row_is_stored_with_it),
	    T(an_entry_whose_blob_is_missing_is_not_stored),
	    T(usage_counts_and_clear_empties_the_cache),
	    T(fingerprints_round_trip_through_the_queue_and_the_index),
	    T(hits_and_fingerprint_flushes_never_wait_for_a_writer),
	    T(a_corrupt_index_is_set_aside_and_recreated),
	    T(a_corrupt_page_found_by_a_query_is_checked_at_the_next_open),
	    T(a_damaged_schema_is_found_and_the_index_recreated),
	    T(a_read_only_store_reads_and_refuses_every_write),
	    T(a_read_only_mount_opens_read_only),
	    T(concurrent_writers_all_succeed),
	    T(network_file_systems_are_recognised),
	    T(the_index_is_private_to_its_owner),
	    T(a_cache_missing_its_tmp_directory_gets_it_back),
	    T(a_hit_writes_nothing_to_the_index),
	    T(serial_stores_keep_the_wal_small),
	    T(a_checkpointed_wal_starts_again_at_its_first_frame),
	    T(a_result_stored_again_is_replaced_in_place),
	    T(a_new_steps_name_goes_in_with_its_entry),
	    T(an_entry_stored_again_writes_few_pages),
	    T(a_duplicate_row_recorded_again_names_the_new_entry),
	    T(a_result_stored_again_references_its_new_blobs_only),
	    T(statements_prepared_ahead_store_the_entry),
	    T(only_the_duplicate_statements_an_entry_runs_are_prepared_ahead),
	    T(a_duplicate_row_stored_again_with_its_entry),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
