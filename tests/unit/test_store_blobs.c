/* Blob files: forms, round trips, integrity checks. */
#include "test_store_fixture.h"

#include <dirent.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "store/store_internal.h"

/* Restores ref into a new scratch file and returns its content. */
static void *restore(struct store *s, const struct blob_ref *ref, size_t *len, struct error *e,
                     int *rc)
{
	char *path = scratch_path("restored");
	unlink(path);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	*rc = store_blob_write_to_fd(s, ref, fd, e);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	void *data = xmalloc((size_t)st.st_size + 1);
	size_t off = 0;
	while (off < (size_t)st.st_size) {
		ssize_t n = pread(fd, (char *)data + off, (size_t)st.st_size - off, (off_t)off);
		assert_true(n > 0);
		off += (size_t)n;
	}
	*len = off;
	close(fd);
	unlink(path);
	free(path);
	return data;
}

static void assert_restores(struct store *s, const struct blob_ref *ref, const void *data,
                            size_t len)
{
	struct error e = {0, ""};
	int rc;
	size_t got_len;
	void *got = restore(s, ref, &got_len, &e, &rc);
	if (rc < 0)
		print_error("restore: %s\n", e.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(got_len, len);
	assert_memory_equal(got, data, len);
	free(got);

	void *mem;
	size_t mem_len;
	assert_int_equal(store_blob_read(s, ref, &mem, &mem_len, &e), 0);
	assert_int_equal(mem_len, len);
	assert_memory_equal(mem, data, len);
	free(mem);
}

static void assert_blob_file(struct store *s, const struct blob_ref *ref, int present)
{
	char *path = blob_path(s, &ref->digest, ref->form);
	struct stat st;
	int rc = stat(path, &st);
	if (present) {
		assert_int_equal(rc, 0);
		assert_int_equal(st.st_mode & 07777, 0444);
	} else {
		assert_int_equal(rc, -1);
	}
	free(path);
}

static void put_fd(struct store *s, const void *data, size_t len, struct blob_ref *ref)
{
	int fd = content_fd("content", data, len);
	struct digest d = digest_of(data, len);
	struct error e = {0, ""};
	int rc = store_put_blob_fd(s, fd, &d, ref, &e);
	if (rc < 0)
		print_error("put: %s\n", e.msg);
	assert_int_equal(rc, 0);
	assert_true(digest_equal(&ref->digest, &d));
	assert_int_equal(ref->size, len);
	close(fd);
}

static void compressible_text_is_stored_compressed_and_restores(void **state)
{
	struct store *s = open_cache();
	size_t len = 1 << 20;
	char *text = text_bytes(len);
	struct blob_ref ref;
	put_fd(s, text, len, &ref);
	assert_int_equal(ref.form, BLOB_ZSTD);
	assert_blob_file(s, &ref, 1);
	assert_true(store_blob_exists(s, &ref));
	assert_restores(s, &ref, text, len);
	free(text);
	store_close(s);
}

static void incompressible_data_is_stored_raw_and_restores(void **state)
{
	struct store *s = open_cache();
	size_t len = 3 << 20;
	void *data = random_bytes(len);
	struct blob_ref ref;
	put_fd(s, data, len, &ref);
	assert_int_equal(ref.form, BLOB_RAW);
	assert_blob_file(s, &ref, 1);
	ref.form = BLOB_RAW;
	struct blob_ref zst = ref;
	zst.form = BLOB_ZSTD;
	assert_blob_file(s, &zst, 0);
	assert_restores(s, &ref, data, len);
	free(data);
	store_close(s);
}

static void content_of_64_mib_or_more_stays_raw(void **state)
{
	struct store *s = open_cache();
	size_t len = 70u << 20;
	char *text = text_bytes(len);
	struct blob_ref ref;
	put_fd(s, text, len, &ref);
	assert_int_equal(ref.form, BLOB_RAW);
	assert_restores(s, &ref, text, len);

	/* The large path checks content too. */
	text[len / 2] ^= 1;
	int fd = content_fd("changed", text, len);
	text[len / 2] ^= 1;
	struct digest stale = digest_of("not this", 8);
	struct blob_ref other;
	struct error e = {0, ""};
	assert_int_equal(store_put_blob_fd(s, fd, &stale, &other, &e), -1);
	assert_int_equal(e.code, EAGAIN);
	close(fd);
	free(text);
	store_close(s);
}

/* Files left in the cache's tmp/. */
static int tmp_entries(struct store *s)
{
	DIR *d = opendir(s->tmp_dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Both forms stored and read back; tmp/ left empty. */
static void store_both_forms(struct store *s)
{
	size_t len = 3 << 20;
	char *text = text_bytes(len);
	void *data = random_bytes(len);
	struct blob_ref zst, raw;
	put_fd(s, text, len, &zst);
	put_fd(s, data, len, &raw);
	assert_int_equal(zst.form, BLOB_ZSTD);
	assert_int_equal(raw.form, BLOB_RAW);
	assert_blob_file(s, &zst, 1);
	assert_blob_file(s, &raw, 1);
	assert_restores(s, &zst, text, len);
	assert_restores(s, &raw, data, len);
	assert_int_equal(tmp_entries(s), 0);
	free(text);
	free(data);
}

/* A blob is written unnamed and linked into place through /proc/self/fd;
 * without /proc (a chroot, a bare container) it is written under a
 * temporary name and renamed, with the same result. */
static void blobs_are_stored_with_and_without_proc(void **state)
{
	struct store *s = open_cache();
	store_both_forms(s);
	store_close(s);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    umount2("/proc", MNT_DETACH) < 0)
			_exit(77);
		if (access("/proc/self/fd", F_OK) == 0)
			_exit(78);
		char *cache = scratch_path("cache-noproc");
		struct error e = {0, ""};
		struct store *t;
		if (store_open(cache, 0, &t, &e) < 0) {
			print_error("store_open: %s\n", e.msg);
			_exit(1);
		}
		free(cache);
		store_both_forms(t);
		store_close(t);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip(); /* no mount namespace here (not root) */
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void blobs_from_memory_take_both_forms(void **state)
{
	struct store *s = open_cache();
	struct error e = {0, ""};
	struct blob_ref ref;
	char *text = text_bytes(100000);
	assert_int_equal(store_put_blob_mem(s, text, 100000, &ref, &e), 0);
	assert_int_equal(ref.form, BLOB_ZSTD);
	assert_restores(s, &ref, text, 100000);

	void *data = random_bytes(100000);
	assert_int_equal(store_put_blob_mem(s, data, 100000, &ref, &e), 0);
	assert_int_equal(ref.form, BLOB_RAW);
	assert_restores(s, &ref, data, 100000);

	assert_int_equal(store_put_blob_mem(s, "", 0, &ref, &e), 0);
	assert_int_equal(ref.size, 0);
	assert_restores(s, &ref, "", 0);
	free(text);
	free(data);
	store_close(s);
}

static void an_existing_blob_is_reused_in_its_form(void **state)
{
	struct store *s = open_cache();
	char *text = text_bytes(50000);
	struct blob_ref a, b;
	put_fd(s, text, 50000, &a);
	char *path = blob_path(s, &a.digest, a.form);
	struct stat before, after;
	assert_int_equal(stat(path, &before), 0);
	struct error e = {0, ""};
	assert_int_equal(store_put_blob_mem(s, text, 50000, &b, &e), 0);
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	assert_int_equal(b.form, a.form);
	assert_int_equal(b.size, 50000);
	assert_true(digest_equal(&a.digest, &b.digest));
	/* A reference naming the other form still finds the blob. */
	b.form = BLOB_RAW;
	assert_restores(s, &b, text, 50000);
	free(path);
	free(text);
	store_close(s);
}

static void flip_byte(const char *path, off_t off)
{
	chmod(path, 0644);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	unsigned char c;
	assert_int_equal(pread(fd, &c, 1, off), 1);
	c ^= 0x40;
	assert_int_equal(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

static void assert_corrupt_and_removed(struct store *s, const struct blob_ref *ref)
{
	struct error e = {0, ""};
	int rc;
	size_t len;
	free(restore(s, ref, &len, &e, &rc));
	assert_int_equal(rc, -1);
	assert_int_equal(e.code, EBADMSG);
	assert_non_null(strstr(e.msg, "corrupt"));
	assert_false(store_blob_exists(s, ref));
	/* Now it is missing. */
	free(restore(s, ref, &len, &e, &rc));
	assert_int_equal(rc, -1);
	assert_int_equal(e.code, ENOENT);
}

static void a_damaged_zstd_blob_is_detected_and_removed(void **state)
{
	struct store *s = open_cache();
	size_t len = 200000;
	char *text = text_bytes(len);
	struct blob_ref ref;
	put_fd(s, text, len, &ref);
	assert_int_equal(ref.form, BLOB_ZSTD);
	char *path = blob_path(s, &ref.digest, BLOB_ZSTD);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	flip_byte(path, st.st_size / 2);
	assert_corrupt_and_removed(s, &ref);
	assert_int_equal(counter_value(s, "corrupt_blobs"), 1);
	/* Storing the content again repairs the cache. */
	put_fd(s, text, len, &ref);
	assert_restores(s, &ref, text, len);
	free(path);
	free(text);
	store_close(s);
}

/* Damage that leaves the frame's middle intact: cut short, bytes after
 * it, a second frame after it. Detected by both ways of decompressing: in
 * one piece (small blobs) and streamed (over 1 MiB). */
static void a_zstd_blob_that_is_not_one_whole_frame_is_removed(void **state)
{
	size_t sizes[] = {40000, 3u << 20};
	for (size_t i = 0; i < 2; i++)
		for (int damage = 0; damage < 3; damage++) {
			struct store *s = open_cache();
			char *text = text_bytes(sizes[i]);
			struct blob_ref ref;
			put_fd(s, text, sizes[i], &ref);
			assert_int_equal(ref.form, BLOB_ZSTD);
			char *path = blob_path(s, &ref.digest, BLOB_ZSTD);
			struct stat st;
			assert_int_equal(stat(path, &st), 0);
			assert_int_equal(chmod(path, 0644), 0);
			if (damage == 0) {
				assert_int_equal(truncate(path, st.st_size - 3), 0);
			} else {
				/* The blob's own first bytes: a whole frame (its
				 * start) or, appended to itself, a second one. */
				size_t n = damage == 1 ? 7 : (size_t)st.st_size;
				char *copy = xmalloc(n);
				int fd = open(path, O_RDWR | O_CLOEXEC);
				assert_true(fd >= 0);
				assert_int_equal(pread(fd, copy, n, 0), (ssize_t)n);
				assert_int_equal(pwrite(fd, copy, n, st.st_size), (ssize_t)n);
				close(fd);
				free(copy);
			}
			assert_corrupt_and_removed(s, &ref);
			free(path);
			free(text);
			store_close(s);
			char *cache = cache_dir();
			rm_rf(cache);
			free(cache);
		}
}

static void a_damaged_raw_blob_is_detected_once_its_fingerprint_changed(void **state)
{
	struct store *s = open_cache();
	size_t len = 100000;
	void *data = random_bytes(len);
	struct blob_ref ref;
	put_fd(s, data, len, &ref);
	assert_int_equal(ref.form, BLOB_RAW);
	assert_restores(s, &ref, data, len);
	char *path = blob_path(s, &ref.digest, BLOB_RAW);
	flip_byte(path, 1234); /* changes mtime and ctime */
	assert_corrupt_and_removed(s, &ref);
	assert_int_equal(counter_value(s, "corrupt_blobs"), 1);
	free(path);
	free(data);
	store_close(s);
}

static void a_raw_blob_is_recorded_as_verified_when_stored(void **state)
{
	struct store *s = open_cache();
	size_t len = 100000;
	void *data = random_bytes(len);
	struct blob_ref ref;
	put_fd(s, data, len, &ref);
	/* The store hashed what it wrote, so it records the blob file's
	 * fingerprint as verified: the first restore need not hash it. (A change
	 * that keeps the fingerprint cannot be made: writing sets the ctime.) */
	char *path = blob_path(s, &ref.digest, BLOB_RAW);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	struct file_id id;
	file_id_from_stat(&st, &id);
	struct digest got;
	assert_int_equal(store_fp_get(s, path, &id, &got), 1);
	assert_true(digest_equal(&got, &ref.digest));
	free(path);
	free(data);
	store_close(s);
}

static void content_that_changed_since_it_was_hashed_is_not_stored(void **state)
{
	struct store *s = open_cache();
	char *text = text_bytes(300000);
	struct digest before = digest_of(text, 300000);
	text[1000] = '#'; /* a sibling rewrote the file after the caller hashed it */
	int fd = content_fd("output", text, 300000);
	struct blob_ref ref;
	struct error e = {0, ""};
	assert_int_equal(store_put_blob_fd(s, fd, &before, &ref, &e), -1);
	assert_int_equal(e.code, EAGAIN);
	assert_non_null(strstr(e.msg, "content changed while being stored"));
	struct blob_ref probe = {before, 300000, BLOB_ZSTD};
	assert_false(store_blob_exists(s, &probe));
	/* Nothing left behind in tmp/. */
	char *tmp = scratch_path("cache/tmp");
	assert_int_equal(rmdir(tmp), 0);
	free(tmp);
	/* Size changes are caught too (a shorter file). */
	close(fd);
	fd = content_fd("output", text, 1000);
	assert_int_equal(store_put_blob_fd(s, fd, &before, &ref, &e), -1);
	assert_int_equal(e.code, EAGAIN);
	close(fd);
	free(text);
	store_close(s);
}

static void a_raw_blob_restores_onto_another_file_system(void **state)
{
	/* /dev/shm is tmpfs, the scratch directory usually not: no reflink, and
	 * copy_file_range may refuse to cross, leaving read/write. */
	struct stat st;
	if (stat("/dev/shm", &st) < 0)
		skip();
	struct store *s = open_cache();
	size_t len = 1 << 20;
	void *data = random_bytes(len);
	struct blob_ref ref;
	put_fd(s, data, len, &ref);
	assert_int_equal(ref.form, BLOB_RAW);
	char path[] = "/dev/shm/cachet-restore-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	struct error e = {0, ""};
	assert_int_equal(store_blob_write_to_fd(s, &ref, fd, &e), 0);
	char *got = xmalloc(len);
	assert_int_equal(pread(fd, got, len, 0), (ssize_t)len);
	assert_memory_equal(got, data, len);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, len);
	close(fd);
	free(got);
	free(data);
	store_close(s);
}

static void a_missing_blob_is_reported_as_missing(void **state)
{
	struct store *s = open_cache();
	struct blob_ref ref = {digest_of("x", 1), 1, BLOB_RAW};
	struct error e = {0, ""};
	void *data;
	size_t len;
	assert_int_equal(store_blob_read(s, &ref, &data, &len, &e), -1);
	assert_int_equal(e.code, ENOENT);
	assert_false(store_blob_exists(s, &ref));
	store_close(s);
}

static void a_wrong_size_in_the_entry_fails_without_removing_the_blob(void **state)
{
	struct store *s = open_cache();
	char *text = text_bytes(10000);
	struct blob_ref ref;
	struct error e = {0, ""};
	assert_int_equal(store_put_blob_mem(s, text, 10000, &ref, &e), 0);
	ref.size = 9999;
	void *data;
	size_t len;
	assert_int_equal(store_blob_read(s, &ref, &data, &len, &e), -1);
	assert_int_equal(e.code, EBADMSG);
	assert_true(store_blob_exists(s, &ref));
	free(text);
	store_close(s);
}

static void compression_level_is_checked(void **state)
{
	struct store *s = open_cache();
	assert_int_equal(store_set_compression_level(s, 19), 0);
	assert_int_equal(store_set_compression_level(s, 1000), -1);
	char *text = text_bytes(10000);
	struct blob_ref ref;
	struct error e = {0, ""};
	assert_int_equal(store_put_blob_mem(s, text, 10000, &ref, &e), 0);
	assert_int_equal(ref.form, BLOB_ZSTD);
	assert_restores(s, &ref, text, 10000);
	free(text);
	store_close(s);
}

/* The default level went from 3 to 1: blobs stored at another level, as
 * every store made before holds them, restore unchanged. */
static void blobs_of_another_level_restore_at_the_default(void **state)
{
	struct store *s = open_cache();
	assert_int_equal(store_set_compression_level(s, 3), 0);
	size_t len = 100000;
	char *text = text_bytes(len);
	struct blob_ref by_fd, by_mem;
	put_fd(s, text, len, &by_fd);
	struct error e = {0, ""};
	assert_int_equal(store_put_blob_mem(s, text, len / 2, &by_mem, &e), 0);
	assert_int_equal(by_fd.form, BLOB_ZSTD);
	assert_int_equal(by_mem.form, BLOB_ZSTD);
	store_close(s);
	s = open_cache();
	assert_restores(s, &by_fd, text, len);
	assert_restores(s, &by_mem, text, len / 2);
	/* And the default level still compresses what is worth it. */
	struct blob_ref other;
	char *more = text_bytes(len + 1);
	put_fd(s, more, len + 1, &other);
	assert_int_equal(other.form, BLOB_ZSTD);
	assert_restores(s, &other, more, len + 1);
	free(more);
	free(text);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, scratch_setup, scratch_teardown)
	    T(compressible_text_is_stored_compressed_and_restores),
	    T(incompressible_data_is_stored_raw_and_restores),
	    T(content_of_64_mib_or_more_stays_raw),
	    T(blobs_are_stored_with_and_without_proc),
	    T(blobs_from_memory_take_both_forms),
	    T(an_existing_blob_is_reused_in_its_form),
	    T(a_damaged_zstd_blob_is_detected_and_removed),
	    T(a_zstd_blob_that_is_not_one_whole_frame_is_removed),
	    T(a_damaged_raw_blob_is_detected_once_its_fingerprint_changed),
	    T(a_raw_blob_is_recorded_as_verified_when_stored),
	    T(content_that_changed_since_it_was_hashed_is_not_stored),
	    T(a_raw_blob_restores_onto_another_file_system),
	    T(a_missing_blob_is_reported_as_missing),
	    T(a_wrong_size_in_the_entry_fails_without_removing_the_blob),
	    T(compression_level_is_checked),
	    T(blobs_of_another_level_restore_at_the_default),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
