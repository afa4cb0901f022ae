/* Directory fingerprints: which lookups they may skip, that skipping never
 * changes a strong key, and that any change to a deciding directory ends
 * the skipping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/dirfp.h"
#include "cachet/ldcache.h"
#include "cachet/observe.h"
#include "cachet/pathset.h"
#include "cachet/trace.h"

static char root[64];

static char *at(const char *rel)
{
	static char buf[8][256];
	static int next;
	char *b = buf[next++ % 8];
	snprintf(b, sizeof buf[0], "%s/%s", root, rel);
	return b;
}

static int setup(void **state)
{
	strcpy(root, "/tmp/cachet-dirfp-XXXXXX");
	assert_non_null(mkdtemp(root));
	assert_int_equal(mkdir(at("d"), 0755), 0);
	FILE *f = fopen(at("d/f"), "w");
	assert_non_null(f);
	fputs("content\n", f);
	fclose(f);
	assert_int_equal(symlink("f", at("d/l")), 0);
	return 0;
}

/* Fingerprints are only taken of directories older than the margin. */
static void settle(void)
{
	usleep((useconds_t)(DIGEST_CACHE_MARGIN_NS / 1000) + 200000);
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	return system(cmd);
}

/* Six observations; the first five are decided by d's entries. */
static void build(struct pathset *ps)
{
	pathset_init(ps);
	pathset_add(ps, OBS_STAT, 0, at("d/absent.h"), NULL);
	pathset_add(ps, OBS_STAT, 0, at("d/missing/deeper/x.h"), NULL);
	pathset_add(ps, OBS_READLINK, 0, at("d/f"), NULL);
	pathset_add(ps, OBS_READLINK, 0, at("d/l"), NULL);
	pathset_add(ps, OBS_LIST, 0, at("d"), NULL);
	pathset_add(ps, OBS_READ, 0, at("d/f"), NULL);
	pathset_canonicalise(ps, NULL);
}

static const struct digest weak = {{1}}, psd = {{2}};

static void recorded(const struct pathset *ps, struct buf *values, struct digest *strong)
{
	buf_init(values);
	pathset_strong_key(ps, NULL, &weak, &psd, NULL, values, strong);
}

static size_t eligible(const struct dirfp_set *set)
{
	size_t n = 0;
	for (size_t i = 0; i < set->nobs; i++)
		n += set->obs_dir[i] != 0;
	return n;
}

static void unchanged_directories_skip_their_lookups_with_the_same_key(void **state)
{
	settle();
	struct pathset ps;
	build(&ps);
	struct buf values;
	struct digest strong, got;
	recorded(&ps, &values, &strong);
	struct dirfp_set set;
	dirfp_collect(&ps, values.data, values.len, &set);
	assert_int_equal(eligible(&set), 5);
	assert_int_equal(set.ndirs, 1); /* all decided by d */
	/* Through the encoding, as a memo keeps it. */
	struct buf enc;
	buf_init(&enc);
	dirfp_encode(&set, &enc);
	dirfp_free(&set);
	assert_int_equal(dirfp_decode(enc.data, enc.len, ps.nobs, &set), 0);
	assert_int_equal(
	    dirfp_strong_key(&set, &ps, NULL, &weak, &psd, NULL, values.data, values.len, &got), 5);
	assert_memory_equal(got.b, strong.b, DIGEST_LEN);
	dirfp_free(&set);
	buf_free(&enc);
	buf_free(&values);
	pathset_free(&ps);
}

/* Each change to d: the skipped lookups are made again and the key is the
 * one a full evaluation gives. */
static void check_change_is_seen(const char *what)
{
	settle();
	struct pathset ps;
	build(&ps);
	struct buf values;
	struct digest before, after, full;
	recorded(&ps, &values, &before);
	struct dirfp_set set;
	dirfp_collect(&ps, values.data, values.len, &set);
	assert_int_equal(eligible(&set), 5);
	if (!strcmp(what, "create"))
		assert_int_equal(close(creat(at("d/absent.h"), 0644)), 0);
	else if (!strcmp(what, "mkdir"))
		assert_int_equal(mkdir(at("d/missing"), 0755), 0);
	else if (!strcmp(what, "retarget"))
		assert_int_equal(unlink(at("d/l")) | symlink("absent.h", at("d/l")), 0);
	else
		fail_msg("unknown change %s", what);
	size_t saved =
	    dirfp_strong_key(&set, &ps, NULL, &weak, &psd, NULL, values.data, values.len, &after);
	assert_int_equal(saved, 0);
	pathset_strong_key(&ps, NULL, &weak, &psd, NULL, NULL, &full);
	assert_memory_equal(after.b, full.b, DIGEST_LEN);
	if (strcmp(what, "mkdir") != 0) /* an empty directory changes no value */
		assert_memory_not_equal(after.b, before.b, DIGEST_LEN);
	dirfp_free(&set);
	buf_free(&values);
	pathset_free(&ps);
}

/* After a change to the deciding directory: nothing is skipped, the key is
 * a full evaluation's, and not the recorded one. */
static void changed_key_is_the_full_one(struct dirfp_set *set, const struct pathset *ps,
                                        const struct buf *values, const struct digest *before)
{
	struct digest after, full;
	set->dirs[0].state = 0;
	assert_int_equal(
	    dirfp_strong_key(set, ps, NULL, &weak, &psd, NULL, values->data, values->len, &after),
	    0);
	pathset_strong_key(ps, NULL, &weak, &psd, NULL, NULL, &full);
	assert_memory_equal(after.b, full.b, DIGEST_LEN);
	assert_memory_not_equal(after.b, before->b, DIGEST_LEN);
}

/* A recording's notes (dirfp_note_absent, just after its own lookup found
 * the path absent) stand for the collection's lookups of those paths: the
 * same fingerprints as a collection of its own. A change after the notes
 * is seen as a change after any fingerprint. */
static void noted_absent_paths_decide_as_the_collections_own_lookups(void **state)
{
	settle();
	struct pathset ps;
	build(&ps);
	struct buf values;
	struct digest strong;
	recorded(&ps, &values, &strong);
	struct dirfp_set own, set;
	dirfp_collect(&ps, values.data, values.len, &own);
	struct dirfp_notes *n = dirfp_notes_new();
	dirfp_note_absent(n, at("d/absent.h"));
	dirfp_note_absent(n, at("d/missing/deeper/x.h"));
	dirfp_note_absent(n, "relative/x.h"); /* never a deciding directory */
	dirfp_collect_noted(&ps, values.data, values.len, n, &set);
	assert_int_equal(eligible(&set), 5);
	assert_int_equal(set.ndirs, 1);
	assert_string_equal(set.dirs[0].dir, own.dirs[0].dir);
	assert_true(file_id_equal(&set.dirs[0].id, &own.dirs[0].id));
	for (size_t i = 0; i < ps.nobs; i++)
		assert_int_equal(set.obs_dir[i], own.obs_dir[i]);
	dirfp_free(&set);
	dirfp_notes_free(n);
	/* Created after the notes were taken. */
	n = dirfp_notes_new();
	dirfp_note_absent(n, at("d/absent.h"));
	assert_int_equal(close(creat(at("d/absent.h"), 0644)), 0);
	dirfp_collect_noted(&ps, values.data, values.len, n, &set);
	changed_key_is_the_full_one(&set, &ps, &values, &strong);
	unlink(at("d/absent.h"));
	dirfp_free(&set);
	dirfp_notes_free(n);
	dirfp_free(&own);
	buf_free(&values);
	pathset_free(&ps);
}

/* An evaluation's lookups, noted as it makes them (an index hit's, for the
 * memo it writes), are the collection's: it looks none of them up again,
 * so a file created since is not found by the collection, and the
 * fingerprint it keeps of d is the one from before. That fingerprint then
 * vouches for nothing: the next evaluation looks everything up. */
static void an_evaluations_noted_lookups_are_the_collections(void **state)
{
	settle();
	struct pathset ps;
	build(&ps);
	pathset_add(&ps, OBS_STAT, 0, at("d"), NULL);
	pathset_canonicalise(&ps, NULL);
	struct buf values;
	struct digest strong, got;
	recorded(&ps, &values, &strong);
	struct dirfp_set own, set;
	dirfp_collect(&ps, values.data, values.len, &own);
	assert_int_equal(own.ndirs, 1);
	struct dirfp_notes *n = dirfp_notes_new();
	struct pathset_lookups lk = {.looked = dirfp_note_lookup, .looked_ctx = n};
	pathset_strong_key_known(&ps, NULL, &weak, &psd, NULL, &lk, NULL, &got);
	assert_memory_equal(got.b, strong.b, DIGEST_LEN);
	assert_int_equal(close(creat(at("d/absent.h"), 0644)), 0);
	dirfp_collect_noted(&ps, values.data, values.len, n, &set);
	/* All but d's listing, which a collection reads again (listing_holds). */
	assert_int_equal(eligible(&own), 6);
	assert_int_equal(eligible(&set), 5);
	assert_int_equal(set.ndirs, 1);
	assert_true(file_id_equal(&set.dirs[0].id, &own.dirs[0].id));
	changed_key_is_the_full_one(&set, &ps, &values, &strong);
	unlink(at("d/absent.h"));
	dirfp_free(&set);
	dirfp_notes_free(n);
	dirfp_free(&own);
	buf_free(&values);
	pathset_free(&ps);
}

/* An absent path is decided by its nearest existing ancestor, walked up
 * as text: through a missing directory's "." or "..", and under a
 * trailing slash, the missing name below d; never when the name below the
 * ancestor is no entry of it ("." or ".."), nor for a failure other than
 * "no such entry". */
static void absent_paths_are_decided_by_their_nearest_existing_ancestor(void **state)
{
	settle();
	const char *decided[] = {"d/gone/..", "d/gone/./x.h", "d/gone/", "d/gone//x.h"};
	struct pathset ps;
	pathset_init(&ps);
	for (size_t i = 0; i < 4; i++)
		pathset_add(&ps, OBS_STAT, 0, at(decided[i]), NULL);
	pathset_add(&ps, OBS_STAT, 0, at("d/f/x.h"), NULL); /* ENOTDIR */
	pathset_canonicalise(&ps, NULL);
	struct buf values;
	struct digest strong;
	recorded(&ps, &values, &strong);
	struct dirfp_set set;
	dirfp_collect(&ps, values.data, values.len, &set);
	assert_int_equal(set.ndirs, 1);
	assert_string_equal(set.dirs[0].dir, at("d"));
	for (size_t i = 0; i < ps.nobs; i++)
		assert_int_equal(set.obs_dir[i] != 0,
		                 strcmp(ps.paths[ps.obs[i].path], at("d/f/x.h")) != 0);
	dirfp_free(&set);
	buf_free(&values);
	pathset_free(&ps);
}

/* Notes may answer a lookup made later than their fingerprint's stat: a
 * directory is kept only when it has not changed since before the notes
 * began, however long ago that change is by the time of the collection. */
static void a_directory_changed_after_the_notes_began_is_not_fingerprinted(void **state)
{
	settle();
	struct pathset ps;
	pathset_init(&ps);
	pathset_add(&ps, OBS_STAT, 0, at("d/absent.h"), NULL);
	pathset_canonicalise(&ps, NULL);
	struct buf values;
	struct digest strong;
	recorded(&ps, &values, &strong);
	struct dirfp_notes *n = dirfp_notes_new();
	assert_int_equal(close(creat(at("d/other.h"), 0644)), 0);
	settle();
	struct dirfp_set set;
	dirfp_collect_noted(&ps, values.data, values.len, n, &set);
	assert_int_equal(set.ndirs, 0);
	dirfp_free(&set);
	dirfp_notes_free(n);
	/* A collection that begins after the change, once it has settled. */
	dirfp_collect(&ps, values.data, values.len, &set);
	assert_int_equal(set.ndirs, 1);
	dirfp_free(&set);
	unlink(at("d/other.h"));
	buf_free(&values);
	pathset_free(&ps);
}

static void a_created_file_is_seen(void **state)
{
	check_change_is_seen("create");
	unlink(at("d/absent.h"));
}

static void a_created_directory_on_an_absent_path_is_seen(void **state)
{
	check_change_is_seen("mkdir");
	rmdir(at("d/missing"));
}

static void a_retargeted_symlink_is_seen(void **state)
{
	check_change_is_seen("retarget");
}

/* A directory's own stat (following symlinks) is decided by its own
 * fingerprint; an lstat is not (the path could turn into a symlink to the
 * same directory); a chmod is seen. */
static void a_directory_stat_is_decided_by_its_fingerprint(void **state)
{
	settle();
	struct pathset ps;
	pathset_init(&ps);
	pathset_add(&ps, OBS_STAT, 0, at("d"), NULL);
	pathset_add(&ps, OBS_STAT, OBS_F_NOFOLLOW, at("d"), NULL);
	pathset_add(&ps, OBS_STAT, 0, at("d/absent.h"), NULL);
	pathset_canonicalise(&ps, NULL);
	struct buf values;
	struct digest before, after;
	recorded(&ps, &values, &before);
	struct dirfp_set set;
	dirfp_collect(&ps, values.data, values.len, &set);
	assert_int_equal(eligible(&set), 2);
	assert_int_equal(set.ndirs, 1);
	assert_int_equal(
	    dirfp_strong_key(&set, &ps, NULL, &weak, &psd, NULL, values.data, values.len, &after),
	    2);
	assert_memory_equal(after.b, before.b, DIGEST_LEN);
	assert_int_equal(chmod(at("d"), 0700), 0);
	changed_key_is_the_full_one(&set, &ps, &values, &before);
	assert_int_equal(chmod(at("d"), 0755), 0);
	dirfp_free(&set);
	buf_free(&values);
	pathset_free(&ps);
}

static void a_directory_changed_just_now_is_not_fingerprinted(void **state)
{
	assert_int_equal(mkdir(at("fresh"), 0755), 0);
	struct pathset ps;
	pathset_init(&ps);
	pathset_add(&ps, OBS_STAT, 0, at("fresh/absent.h"), NULL);
	pathset_canonicalise(&ps, NULL);
	struct buf values;
	struct digest strong;
	recorded(&ps, &values, &strong);
	struct dirfp_set set;
	dirfp_collect(&ps, values.data, values.len, &set);
	assert_int_equal(eligible(&set), 0);
	dirfp_free(&set);
	buf_free(&values);
	pathset_free(&ps);
}

static void damaged_encodings_are_refused(void **state)
{
	settle();
	struct pathset ps;
	build(&ps);
	struct buf values;
	struct digest strong;
	recorded(&ps, &values, &strong);
	struct dirfp_set set;
	dirfp_collect(&ps, values.data, values.len, &set);
	struct buf enc;
	buf_init(&enc);
	dirfp_encode(&set, &enc);
	dirfp_free(&set);
	/* Every truncation, and an observation index out of range. */
	for (size_t n = 0; n < enc.len; n++)
		assert_int_equal(dirfp_decode(enc.data, n, ps.nobs, &set), -1);
	assert_int_equal(dirfp_decode(enc.data, enc.len, 2, &set), -1);
	buf_free(&enc);
	buf_free(&values);
	pathset_free(&ps);
}

/* The loader's cache decides its facts as a directory decides its
 * lookups: while its fingerprint holds they are not looked up (nor the
 * file read), and another file there (ldconfig renames a new one into
 * place) has them looked up again. Facts of another kind never. */
static void ldcache_facts_are_decided_by_the_cache_file(void **state)
{
	struct stat st;
	struct file_id id;
	if (stat(LDCACHE_PATH, &st) < 0 || !S_ISREG(st.st_mode))
		skip();
	file_id_from_stat(&st, &id);
	if (!file_id_settled(&id) || !file_id_fs_trusted(-1, LDCACHE_PATH))
		skip();
	struct pathset ps;
	pathset_init(&ps);
	pathset_add(&ps, OBS_FACT, 0, OBSERVE_FACT_LDCACHE "libc.so.6", NULL);
	pathset_add(&ps, OBS_FACT, 0, OBSERVE_FACT_LDCACHE "libcachet-none.so.0", NULL);
	pathset_add(&ps, OBS_FACT, 0, TRACE_FACT_UNAME, NULL);
	pathset_canonicalise(&ps, NULL);
	struct buf values;
	struct digest strong, got;
	recorded(&ps, &values, &strong);
	struct dirfp_set set;
	dirfp_collect(&ps, values.data, values.len, &set);
	assert_int_equal(eligible(&set), 2);
	assert_int_equal(set.ndirs, 1);
	assert_string_equal(set.dirs[0].dir, LDCACHE_PATH);
	assert_int_equal(
	    dirfp_strong_key(&set, &ps, NULL, &weak, &psd, NULL, values.data, values.len, &got), 2);
	assert_memory_equal(got.b, strong.b, DIGEST_LEN);
	/* As if the cache had been replaced since. */
	set.dirs[0].id.ino++;
	set.dirs[0].state = 0;
	assert_int_equal(
	    dirfp_strong_key(&set, &ps, NULL, &weak, &psd, NULL, values.data, values.len, &got), 0);
	assert_memory_equal(got.b, strong.b, DIGEST_LEN);
	dirfp_free(&set);
	buf_free(&values);
	pathset_free(&ps);
}

/* The recorded value of a stat, ENOENT, that a test vouches for. */
static int vouch_absent(void *ctx, size_t i, const void **v, size_t *len)
{
	static unsigned char enoent[5] = {'E'};
	const struct pathset *ps = ctx;
	if (ps->obs[i].kind != OBS_STAT)
		return 0;
	uint32_t e = ENOENT;
	memcpy(enoent + 1, &e, 4); /* buf_put_u32: little-endian */
	*v = enoent;
	*len = sizeof enoent;
	return 1;
}

/* A which fact skips the PATH entries where the evaluation knows its
 * program absent (the step's own search recorded those stats); a program
 * that appears there changes the directory and is found. */
static void which_facts_skip_programs_known_absent(void **state)
{
	assert_int_equal(mkdir(at("w1"), 0755), 0);
	assert_int_equal(mkdir(at("w2"), 0755), 0);
	assert_int_equal(close(creat(at("w2/prog"), 0755)), 0);
	char *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	char path[600];
	snprintf(path, sizeof path, "%s:%s", at("w1"), at("w2"));
	setenv("PATH", path, 1);
	settle();
	struct pathset ps;
	pathset_init(&ps);
	pathset_add(&ps, OBS_STAT, 0, at("w1/prog"), NULL);
	pathset_add(&ps, OBS_FACT, 0, OBSERVE_FACT_WHICH "prog", NULL);
	pathset_canonicalise(&ps, NULL);
	struct buf values;
	struct digest before, after;
	recorded(&ps, &values, &before);
	struct dirfp_set set;
	dirfp_collect(&ps, values.data, values.len, &set);
	assert_int_equal(eligible(&set), 1);
	assert_int_not_equal(
	    dirfp_strong_key(&set, &ps, NULL, &weak, &psd, NULL, values.data, values.len, &after),
	    0);
	assert_memory_equal(after.b, before.b, DIGEST_LEN);
	/* Vouched absent, w1/prog is not looked at: the fact still finds w2's. */
	assert_int_equal(close(creat(at("w1/prog"), 0755)), 0);
	struct pathset_lookups lk = {.known = vouch_absent, .known_ctx = &ps};
	pathset_strong_key_known(&ps, NULL, &weak, &psd, NULL, &lk, NULL, &after);
	assert_memory_equal(after.b, before.b, DIGEST_LEN);
	/* Through the fingerprint, which the new entry moved: found. */
	changed_key_is_the_full_one(&set, &ps, &values, &before);
	if (old_path)
		setenv("PATH", old_path, 1);
	else
		unsetenv("PATH");
	free(old_path);
	dirfp_free(&set);
	buf_free(&values);
	pathset_free(&ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(unchanged_directories_skip_their_lookups_with_the_same_key),
	    cmocka_unit_test(a_created_file_is_seen),
	    cmocka_unit_test(a_created_directory_on_an_absent_path_is_seen),
	    cmocka_unit_test(a_retargeted_symlink_is_seen),
	    cmocka_unit_test(a_directory_stat_is_decided_by_its_fingerprint),
	    cmocka_unit_test(a_directory_changed_just_now_is_not_fingerprinted),
	    cmocka_unit_test(damaged_encodings_are_refused),
	    cmocka_unit_test(noted_absent_paths_decide_as_the_collections_own_lookups),
	    cmocka_unit_test(a_directory_changed_after_the_notes_began_is_not_fingerprinted),
	    cmocka_unit_test(an_evaluations_noted_lookups_are_the_collections),
	    cmocka_unit_test(absent_paths_are_decided_by_their_nearest_existing_ancestor),
	    cmocka_unit_test(ldcache_facts_are_decided_by_the_cache_file),
	    cmocka_unit_test(which_facts_skip_programs_known_absent),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
