/* SHA-256: the FIPS 180-4 test vectors, and the accelerated block function
 * against the portable one over every split of the input; files hashed
 * while a second thread reads them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <unistd.h>

#include "cachet/digest.h"

static void hex_of(const char *data, size_t len, char *hex)
{
	struct digest d;
	digest_bytes(data, len, &d);
	digest_to_hex(&d, hex);
}

static void check_vectors(void)
{
	char hex[DIGEST_HEX_LEN + 1];
	hex_of("", 0, hex);
	assert_string_equal(hex,
	                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	hex_of("abc", 3, hex);
	assert_string_equal(hex,
	                    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	hex_of(two, strlen(two), hex);
	assert_string_equal(hex,
	                    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	const char *four = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
	                   "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
	hex_of(four, strlen(four), hex);
	assert_string_equal(hex,
	                    "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
	/* A million 'a', fed in uneven pieces through the hasher. */
	char chunk[1000];
	memset(chunk, 'a', sizeof chunk);
	struct hasher h;
	assert_int_equal(hasher_init(&h, NULL), 0);
	size_t fed = 0;
	for (size_t step = 1; fed < 1000000; step = step * 7 % 997 + 1) {
		size_t n = 1000000 - fed < step ? 1000000 - fed : step;
		hasher_update(&h, chunk, n);
		fed += n;
	}
	struct digest d;
	hasher_final(&h, &d);
	digest_to_hex(&d, hex);
	assert_string_equal(hex,
	                    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void digests_match_the_published_vectors(void **state)
{
	check_vectors();
}

/* Every length up to a few blocks and every split point: block boundaries
 * and the buffered tail are where incremental hashing goes wrong. */
static void incremental_and_one_shot_agree_for_every_length_and_split(void **state)
{
	unsigned char data[300];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(i * 131 + 7);
	for (size_t len = 0; len <= sizeof data; len++) {
		struct digest whole;
		digest_bytes(data, len, &whole);
		for (size_t split = 0; split <= len; split += len < 140 ? 1 : 13) {
			struct hasher h;
			struct digest parts;
			assert_int_equal(hasher_init(&h, NULL), 0);
			hasher_update(&h, data, split);
			hasher_update(&h, data + split, len - split);
			hasher_final(&h, &parts);
			assert_true(digest_equal(&whole, &parts));
		}
	}
}

struct seen {
	struct hasher h;
	uint64_t bytes;
};

static void see(void *ctx, const void *chunk, size_t len)
{
	struct seen *s = ctx;
	hasher_update(&s->h, chunk, len);
	s->bytes += len;
}

/* Files past the size where a second thread reads while this one hashes
 * (and one just under it, hashed in one thread), and small ones read in
 * smaller pieces (up to 256 KiB, and just past it): the digest, the size
 * and the chunks handed to the callback are those of the bytes, in order,
 * for sizes that end on a chunk boundary and mid-chunk. */
static void files_of_every_size_class_hash_as_their_bytes(void **state)
{
	(void)state;
	const size_t sizes[] = {0,
	                        1,
	                        16u << 10,
	                        (16u << 10) + 1,
	                        40000,
	                        256u << 10,
	                        (256u << 10) + 1,
	                        (16u << 20) - 1,
	                        16u << 20,
	                        (40u << 20) + 12345};
	char path[] = "/tmp/cachet-digest-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	size_t max = sizes[sizeof sizes / sizeof sizes[0] - 1];
	unsigned char *data = malloc(max);
	assert_non_null(data);
	for (size_t i = 0; i < max; i++)
		data[i] = (unsigned char)((i * 2654435761u) >> 13);
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		assert_int_equal(ftruncate(fd, 0), 0);
		assert_int_equal(pwrite(fd, data, sizes[k], 0), (ssize_t)sizes[k]);
		struct digest want, got, fed;
		digest_bytes(data, sizes[k], &want);
		struct seen s = {.bytes = 0};
		assert_int_equal(hasher_init(&s.h, NULL), 0);
		uint64_t size = 0;
		struct error e;
		assert_int_equal(digest_fd_each(fd, &got, &size, see, &s, &e), 0);
		hasher_final(&s.h, &fed);
		assert_true(digest_equal(&want, &got));
		assert_true(digest_equal(&want, &fed));
		assert_int_equal(size, sizes[k]);
		assert_int_equal(s.bytes, sizes[k]);
	}
	free(data);
	close(fd);
}

/* Threads of this process now. */
static int thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void count_threads(void *ctx, const void *chunk, size_t len)
{
	(void)chunk;
	(void)len;
	int *most = ctx;
	int n = thread_count();
	if (n > *most)
		*most = n;
}

/* The reading thread runs only where it can run beside the hashing one:
 * not for a caller held to one CPU (the prefetch worker on two CPUs). */
static void a_caller_on_one_cpu_reads_in_its_own_thread(void **state)
{
	(void)state;
	cpu_set_t saved, one;
	assert_int_equal(sched_getaffinity(0, sizeof saved, &saved), 0);
	if (CPU_COUNT(&saved) < 2)
		skip();
	char path[] = "/tmp/cachet-digest-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(ftruncate(fd, 20 << 20), 0);
	int alone = thread_count();
	struct digest d;
	struct error e;
	int most = 0;
	assert_int_equal(digest_fd_each(fd, &d, NULL, count_threads, &most, &e), 0);
	assert_int_equal(most, alone + 1);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
	most = 0;
	assert_int_equal(digest_fd_each(fd, &d, NULL, count_threads, &most, &e), 0);
	assert_int_equal(sched_setaffinity(0, sizeof saved, &saved), 0);
	assert_int_equal(most, alone);
	close(fd);
}

/* A read error in the reading thread is the caller's error, not a digest. */
static void a_large_unreadable_file_is_an_error(void **state)
{
	(void)state;
	char path[] = "/tmp/cachet-digest-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 32 << 20), 0);
	close(fd);
	fd = open(path, O_WRONLY); /* reads fail with EBADF */
	unlink(path);
	assert_true(fd >= 0);
	struct digest d;
	struct error e = {0};
	assert_int_equal(digest_fd(fd, &d, NULL, &e), -1);
	assert_int_equal(e.code, EBADF);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(digests_match_the_published_vectors),
	    cmocka_unit_test(incremental_and_one_shot_agree_for_every_length_and_split),
	    cmocka_unit_test(files_of_every_size_class_hash_as_their_bytes),
	    cmocka_unit_test(a_caller_on_one_cpu_reads_in_its_own_thread),
	    cmocka_unit_test(a_large_unreadable_file_is_an_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
