/* Reading a file through a mapping faulted in by another thread: every byte
 * in order; a file that shrinks under it is a return of 0, not a SIGBUS;
 * a SIGBUS of anything else still ends the program, or reaches the
 * program's own handler. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cachet/digest.h"
#include "util/file_map.h"

static unsigned char byte_at(uint64_t i)
{
	return (unsigned char)((i * 2654435761u) >> 13);
}

/* An unlinked temporary file of size bytes, byte_at(i) at i. */
static int file_of(uint64_t size)
{
	char path[] = "/tmp/cachet-file-map-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	unsigned char *data = malloc(size);
	assert_non_null(data);
	for (uint64_t i = 0; i < size; i++)
		data[i] = byte_at(i);
	assert_int_equal(pwrite(fd, data, size, 0), (ssize_t)size);
	free(data);
	return fd;
}

static void digest_of_pattern(uint64_t size, struct digest *out)
{
	unsigned char *data = malloc(size);
	assert_non_null(data);
	for (uint64_t i = 0; i < size; i++)
		data[i] = byte_at(i);
	digest_bytes(data, size, out);
	free(data);
}

struct fed {
	struct hasher h;
	uint64_t bytes, mismatches;
	int shrink_fd; /* >= 0: truncated to shrink_to at the first chunk */
	uint64_t shrink_to;
};

static void feed(void *ctx, const void *chunk, size_t len)
{
	struct fed *f = ctx;
	if (f->shrink_fd >= 0) {
		assert_int_equal(ftruncate(f->shrink_fd, (off_t)f->shrink_to), 0);
		f->shrink_fd = -1;
	}
	const unsigned char *c = chunk;
	for (size_t i = 0; i < len; i++) /* reads every byte: a page gone faults */
		f->mismatches += c[i] != byte_at(f->bytes + i);
	hasher_update(&f->h, chunk, len);
	f->bytes += len;
}

/* Sizes on and off the window and chunk boundaries: each byte once, in
 * order; and digest_fd, which reads large files this way, gives the digest
 * of the bytes. */
static void every_byte_is_handed_over_in_order(void **state)
{
	(void)state;
	const uint64_t sizes[] = {
	    1, 4096, (1u << 20) + 1, 4u << 20, (16u << 20) + 12345, (21u << 20) - 1};
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		int fd = file_of(sizes[k]);
		struct fed f = {.shrink_fd = -1};
		hasher_init(&f.h, NULL);
		assert_int_equal(file_map_each(fd, sizes[k], feed, &f), 1);
		assert_int_equal(f.bytes, sizes[k]);
		assert_int_equal(f.mismatches, 0);
		struct digest want, mapped, read;
		digest_of_pattern(sizes[k], &want);
		hasher_final(&f.h, &mapped);
		assert_true(digest_equal(&mapped, &want));
		uint64_t size = 0;
		struct error e;
		assert_int_equal(digest_fd(fd, &read, &size, &e), 0);
		assert_int_equal(size, sizes[k]);
		assert_true(digest_equal(&read, &want));
		close(fd);
	}
}

/* Truncated while it is read: the access past the new end is caught, the
 * call returns 0, and the program goes on (the digest of what is left is
 * that of its bytes). */
static void a_file_that_shrinks_under_the_mapping_is_a_return_not_a_crash(void **state)
{
	(void)state;
	const uint64_t size = 24u << 20, left = (3u << 20) / 2;
	int fd = file_of(size);
	struct fed f = {.shrink_fd = fd, .shrink_to = left};
	hasher_init(&f.h, NULL);
	assert_int_equal(file_map_each(fd, size, feed, &f), 0);
	assert_true(f.bytes < size);
	assert_int_equal(f.mismatches, 0);
	struct digest got;
	uint64_t n = 0;
	struct error e;
	assert_int_equal(digest_fd(fd, &got, &n, &e), 0);
	assert_int_equal(n, left);
	struct digest want;
	digest_of_pattern(left, &want);
	assert_true(digest_equal(&got, &want));
	close(fd);
}

/* Touches a page past the end of a mapped, truncated file of its own. */
static void fault_outside_any_guarded_read(void)
{
	int fd = file_of(8192);
	volatile unsigned char *m = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED || ftruncate(fd, 0) < 0)
		_exit(3);
	(void)m[4096];
	_exit(4); /* not reached */
}

static void exit_42(int sig)
{
	(void)sig;
	_exit(42);
}

static int child_status(int own_handler)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The default (the ASan runtime has a handler of its own), or
		 * one of the program's. */
		signal(SIGBUS, own_handler ? exit_42 : SIG_DFL);
		alarm(20); /* a handler that swallowed the fault would fault on */
		int fd = file_of(1u << 20);
		struct fed f = {.shrink_fd = -1};
		hasher_init(&f.h, NULL);
		if (file_map_each(fd, 1u << 20, feed, &f) != 1) /* installs the handler */
			_exit(2);
		fault_outside_any_guarded_read();
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void any_other_sigbus_goes_where_it_went_before(void **state)
{
	(void)state;
	int status = child_status(0);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGBUS);
	status = child_status(1);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(every_byte_is_handed_over_in_order),
	    cmocka_unit_test(a_file_that_shrinks_under_the_mapping_is_a_return_not_a_crash),
	    cmocka_unit_test(any_other_sigbus_goes_where_it_went_before),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
