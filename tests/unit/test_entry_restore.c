/*
 * Restoring a result's files: over nothing, over an older file, over a
 * directory, and over a file that already holds the content, which is left
 * in place with the mode and times a restore gives. Both blob forms, and
 * the single-piece and streamed decompression of zstd blobs.
 */
#include "test_store_fixture.h"

#include <dirent.h>
#include <time.h>

#include "cachet/result.h"

struct restore_case {
	struct store *s;
	struct result res;
	char *path;
};

static int setup(void **state)
{
	if (scratch_setup(state) < 0)
		return -1;
	struct restore_case *c = xcalloc(1, sizeof *c);
	c->s = open_cache();
	result_init(&c->res);
	c->path = scratch_path("out.o");
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct restore_case *c = *state;
	result_free(&c->res);
	store_close(c->s);
	free(c->path);
	free(c);
	return scratch_teardown(state);
}

/* The result holds one file, c->path, with this content and mode. */
static void add_file(struct restore_case *c, const void *data, size_t len, uint32_t mode)
{
	struct output *o = result_add_output(&c->res, OUT_FILE, c->path);
	struct error e = {0, ""};
	assert_int_equal(store_put_blob_mem(c->s, data, len, &o->blob, &e), 0);
	o->mode = mode;
}

static void restore(struct restore_case *c)
{
	struct error e = {0, ""};
	if (result_restore(&c->res, c->s, &e) < 0)
		fail_msg("result_restore: %s", e.msg);
}

static void expect_file(const char *path, const void *data, size_t len, uint32_t mode)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, mode);
	assert_int_equal((size_t)st.st_size, len);
	char *got = xmalloc(len + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, got, len + 1), (ssize_t)len);
	close(fd);
	assert_memory_equal(got, data, len);
	free(got);
}

/* No temporary left beside the outputs. */
static void expect_no_temporaries(void)
{
	DIR *d = opendir(scratch_dir);
	assert_non_null(d);
	struct dirent *de;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, ".cachet-", 8))
			fail_msg("temporary %s left behind", de->d_name);
	closedir(d);
}

static void set_old_times(const char *path)
{
	struct timespec ts[2] = {{1000000000, 0}, {1000000000, 0}};
	assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void restores_into_an_empty_place_both_forms_and_sizes(void **state)
{
	struct restore_case *c = *state;
	/* text compresses (zstd blob, one piece and streamed); random bytes
	 * do not (raw blob). */
	size_t sizes[] = {0, 1, 36000, (1u << 20) + 4096, 3u << 20};
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		for (int random = 0; random < 2; random++) {
			void *data = random ? random_bytes(sizes[i] + 1) : text_bytes(sizes[i]);
			result_free(&c->res);
			result_init(&c->res);
			add_file(c, data, sizes[i], 0640);
			if (sizes[i] >= 36000)
				assert_int_equal(c->res.outputs[0].blob.form,
				                 random ? BLOB_RAW : BLOB_ZSTD);
			unlink(c->path);
			restore(c);
			expect_file(c->path, data, sizes[i], 0640);
			free(data);
		}
	}
	expect_no_temporaries();
}

static void an_older_file_is_replaced_by_a_new_one(void **state)
{
	struct restore_case *c = *state;
	char *text = text_bytes(36000);
	add_file(c, text, 36000, 0644);
	write_file(c->path, "an older object file", 20);
	/* A second name keeps the old content: the restore makes a new file
	 * rather than writing into the one both names share. */
	char *other = scratch_path("other-name.o");
	assert_int_equal(link(c->path, other), 0);
	restore(c);
	expect_file(c->path, text, 36000, 0644);
	expect_file(other, "an older object file", 20, 0644);
	expect_no_temporaries();
	free(other);
	free(text);
}

static void a_file_with_the_content_already_is_kept_with_new_times(void **state)
{
	struct restore_case *c = *state;
	char *text = text_bytes(36000);
	add_file(c, text, 36000, 0755);
	write_file(c->path, text, 36000);
	assert_int_equal(chmod(c->path, 0600), 0);
	set_old_times(c->path);
	struct stat before, after;
	assert_int_equal(lstat(c->path, &before), 0);
	time_t now = time(NULL);
	restore(c);
	assert_int_equal(lstat(c->path, &after), 0);
	assert_int_equal(after.st_ino, before.st_ino); /* left in place */
	expect_file(c->path, text, 36000, 0755);       /* with the entry's mode */
	/* and the times of a file just restored: a make that compares them
	 * with the inputs' must see it as new. */
	assert_true(after.st_mtime >= now);
	expect_no_temporaries();

	/* A time the step set on purpose is the one restored. */
	c->res.outputs[0].has_mtime = 1;
	c->res.outputs[0].mtime_ns = 1500000000123456789LL;
	restore(c);
	assert_int_equal(lstat(c->path, &after), 0);
	assert_int_equal(after.st_ino, before.st_ino);
	assert_int_equal(after.st_mtim.tv_sec, 1500000000);
	assert_int_equal(after.st_mtim.tv_nsec, 123456789);
	free(text);
}

static void a_file_of_the_same_size_with_other_bytes_is_replaced(void **state)
{
	struct restore_case *c = *state;
	char *text = text_bytes(36000);
	add_file(c, text, 36000, 0644);
	text[18000] ^= 1;
	write_file(c->path, text, 36000);
	text[18000] ^= 1;
	struct stat before, after;
	assert_int_equal(lstat(c->path, &before), 0);
	restore(c);
	assert_int_equal(lstat(c->path, &after), 0);
	assert_true(after.st_ino != before.st_ino);
	expect_file(c->path, text, 36000, 0644);
	expect_no_temporaries();
	free(text);
}

static void a_file_with_two_names_is_never_changed_in_place(void **state)
{
	struct restore_case *c = *state;
	char *text = text_bytes(36000);
	add_file(c, text, 36000, 0644);
	write_file(c->path, text, 36000);
	char *other = scratch_path("other-name.o");
	assert_int_equal(link(c->path, other), 0);
	set_old_times(other);
	restore(c);
	struct stat st;
	assert_int_equal(lstat(other, &st), 0);
	assert_int_equal(st.st_mtime, 1000000000); /* the other name is untouched */
	assert_int_equal(st.st_nlink, 1);
	expect_file(c->path, text, 36000, 0644);
	free(other);
	free(text);
}

static void a_directory_in_the_way_is_an_error_and_stays(void **state)
{
	struct restore_case *c = *state;
	char *text = text_bytes(36000);
	add_file(c, text, 36000, 0644);
	assert_int_equal(mkdir(c->path, 0755), 0);
	char *inside = scratch_path("out.o/keep");
	write_file(inside, "kept", 4);
	struct error e = {0, ""};
	assert_int_equal(result_restore(&c->res, c->s, &e), -1);
	assert_non_null(strstr(e.msg, "out.o"));
	expect_file(inside, "kept", 4, 0644);
	expect_no_temporaries();
	free(inside);
	free(text);
}

static void links_attributes_and_owners_survive_encoding(void **state)
{
	struct restore_case *c = *state;
	add_file(c, "data", 4, 0644);
	struct output *o = result_add_output(&c->res, OUT_HARDLINK, "/w/other.o");
	o->target = xstrdup(c->path);
	o = result_add_output(&c->res, OUT_XATTR, c->path);
	o->target = xstrdup("user.note");
	o->value = xmalloc(3);
	memcpy(o->value, "a\0b", 3);
	o->value_len = 3;
	o = result_add_output(&c->res, OUT_OWNER, c->path);
	o->uid = 1234;
	o->gid = 5678;
	struct buf b;
	buf_init(&b);
	result_encode(&c->res, &b);
	struct result back;
	struct error e = {0, ""};
	assert_int_equal(result_decode(b.data, b.len, &back, &e), 0);
	assert_int_equal(back.noutputs, 4);
	assert_string_equal(back.outputs[1].target, c->path);
	assert_string_equal(back.outputs[2].target, "user.note");
	assert_int_equal(back.outputs[2].value_len, 3);
	assert_memory_equal(back.outputs[2].value, "a\0b", 3);
	assert_int_equal(back.outputs[3].uid, 1234);
	assert_int_equal(back.outputs[3].gid, 5678);
	result_free(&back);
	buf_free(&b);
}

static void a_hard_link_of_the_entry_comes_back_as_a_link(void **state)
{
	struct restore_case *c = *state;
	add_file(c, "data", 4, 0644);
	char *other = scratch_path("other-name.o");
	write_file(other, "old", 3);
	struct output *o = result_add_output(&c->res, OUT_HARDLINK, other);
	o->target = xstrdup(c->path);
	restore(c);
	struct stat a, b;
	assert_int_equal(stat(c->path, &a), 0);
	assert_int_equal(stat(other, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(a.st_nlink, 2);
	expect_no_temporaries();
	free(other);
}

static void a_failed_restore_puts_back_what_it_replaced(void **state)
{
	struct restore_case *c = *state;
	add_file(c, "new", 3, 0644);
	write_file(c->path, "old", 3);
	char *gone = scratch_path("gone");
	write_file(gone, "kept", 4);
	result_add_output(&c->res, OUT_DELETE, gone);
	/* Sorted after out.o, a file where a directory stands: fails. */
	char *blocked = scratch_path("z-dir");
	char *inside = scratch_path("z-dir/keep");
	assert_int_equal(mkdir(blocked, 0755), 0);
	write_file(inside, "x", 1);
	struct output *o = result_add_output(&c->res, OUT_FILE, blocked);
	o->blob = c->res.outputs[0].blob;
	o->mode = 0644;
	struct error e = {0, ""};
	assert_int_equal(result_restore(&c->res, c->s, &e), -1);
	expect_file(c->path, "old", 3, 0644);
	expect_file(gone, "kept", 4, 0644);
	expect_file(inside, "x", 1, 0644);
	expect_no_temporaries();
	free(gone);
	free(blocked);
	free(inside);
}

#define CASE(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    CASE(restores_into_an_empty_place_both_forms_and_sizes),
	    CASE(an_older_file_is_replaced_by_a_new_one),
	    CASE(a_file_with_the_content_already_is_kept_with_new_times),
	    CASE(a_file_of_the_same_size_with_other_bytes_is_replaced),
	    CASE(a_file_with_two_names_is_never_changed_in_place),
	    CASE(a_directory_in_the_way_is_an_error_and_stays),
	    CASE(links_attributes_and_owners_survive_encoding),
	    CASE(a_hard_link_of_the_entry_comes_back_as_a_link),
	    CASE(a_failed_restore_puts_back_what_it_replaced),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
