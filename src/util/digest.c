#include "cachet/digest.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/thread.h"
#include "util/file_map.h"

int hasher_init(struct hasher *h, struct error *e)
{
	(void)e;
	SHA256_Init(&h->ctx);
	return 0;
}

void hasher_update(struct hasher *h, const void *data, size_t len)
{
	SHA256_Update(&h->ctx, data, len);
}

void hasher_update_u64(struct hasher *h, uint64_t v)
{
	unsigned char b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	hasher_update(h, b, sizeof b);
}

void hasher_update_str(struct hasher *h, const char *s)
{
	size_t len = strlen(s);
	hasher_update_u64(h, len);
	hasher_update(h, s, len);
}

void hasher_final(struct hasher *h, struct digest *out)
{
	SHA256_Final(out->b, &h->ctx);
}

void hasher_abort(struct hasher *h)
{
	(void)h;
}

void digest_bytes(const void *data, size_t len, struct digest *out)
{
	/* Not SHA256(): OpenSSL 3 implements that one-shot through
	 * EVP_Q_digest, which initialises the providers (6 M instructions
	 * measured, more than a whole hit). */
	SHA256_CTX c;
	SHA256_Init(&c);
	SHA256_Update(&c, data, len);
	SHA256_Final(out->b, &c);
}

int digest_fd(int fd, struct digest *out, uint64_t *size_out, struct error *e)
{
	return digest_fd_each(fd, out, size_out, NULL, NULL, e);
}

/* A file at most this large (by its fstat) is read in pieces of
 * SMALL_CHUNK. */
#define SMALL_FILE  (256 * 1024)
#define SMALL_CHUNK (16 * 1024)

/* The plain loop: 64 KiB reads, each hashed while it is still in the L1/L2
 * cache (measured: 256 KiB reads cost 1.5 times the CPU time for a 1 GB
 * file). A small file (small: 1) is read in 16 KiB pieces: a hit hashes
 * an output of tens of KB, and its 64 KiB buffer was fresh heap above the
 * process's peak, 9 to 16 pages faulted in (~1.5 us each) where a 16 KiB
 * one fits memory the lookup freed, for two more preads. The loop reads
 * to the end whatever the size was: the hint only picks the buffer. */
static int hash_serial(int fd, struct hasher *h, uint64_t *size_out, int small,
                       void (*each)(void *ctx, const void *chunk, size_t len), void *ctx,
                       struct error *e)
{
	size_t cap = small ? SMALL_CHUNK : 64 * 1024;
	unsigned char *chunk = malloc(cap);
	if (!chunk)
		return error_set(e, "out of memory");
	uint64_t off = 0;
	for (;;) {
		ssize_t n = pread(fd, chunk, cap, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			free(chunk);
			return error_errno(e, "read");
		}
		if (n == 0)
			break;
		hasher_update(h, chunk, (size_t)n);
		if (each)
			each(ctx, chunk, (size_t)n);
		off += (uint64_t)n;
	}
	free(chunk);
	*size_out = off;
	return 0;
}

/* Large files: one SHA-256 stream cannot be split, but the reading can
 * run beside it where a second CPU is free: through a mapping that another
 * thread faults in (file_map.c); or copied by another thread into a ring
 * of chunks where the mapping cannot be had, or where the caller wants the
 * chunks too (a file that shrank under the mapping is read again from the
 * start, and a caller's pass could not be). */
#define PIPE_MIN_SIZE (16 << 20)
#define PIPE_SLOTS    16
#define PIPE_CHUNK    (128 * 1024)

struct read_pipe {
	int fd;
	unsigned char *buf; /* PIPE_SLOTS chunks */
	size_t len[PIPE_SLOTS];
	pthread_mutex_t lock;
	pthread_cond_t filled, emptied;
	uint64_t produced, consumed; /* chunks */
	int done, err;
};

static void *pipe_reader(void *arg)
{
	struct read_pipe *p = arg;
	uint64_t off = 0;
	for (;;) {
		pthread_mutex_lock(&p->lock);
		/* The hasher drains every chunk up to the end, and wakes this
		 * thread when half the ring is free: this wait ends. */
		while (p->produced - p->consumed == PIPE_SLOTS)
			pthread_cond_wait(&p->emptied, &p->lock);
		size_t slot = p->produced % PIPE_SLOTS;
		pthread_mutex_unlock(&p->lock);
		ssize_t n;
		do
			n = pread(p->fd, p->buf + slot * PIPE_CHUNK, PIPE_CHUNK, (off_t)off);
		while (n < 0 && errno == EINTR);
		pthread_mutex_lock(&p->lock);
		if (n <= 0) {
			p->done = 1;
			p->err = n < 0 ? errno : 0;
		} else {
			p->len[slot] = (size_t)n;
			p->produced++;
			off += (uint64_t)n;
		}
		pthread_cond_signal(&p->filled);
		pthread_mutex_unlock(&p->lock);
		if (n <= 0)
			return NULL;
	}
}

/* 1 when hashed here, 0 when the pipeline cannot be set up (the caller
 * hashes serially), -1 on a read error. */
static int hash_pipelined(int fd, struct hasher *h, uint64_t *size_out,
                          void (*each)(void *ctx, const void *chunk, size_t len), void *ctx,
                          struct error *e)
{
	struct read_pipe p = {.fd = fd};
	p.buf = malloc((size_t)PIPE_SLOTS * PIPE_CHUNK);
	if (!p.buf)
		return 0;
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.filled, NULL);
	pthread_cond_init(&p.emptied, NULL);
	pthread_t reader;
	int started = thread_start_quiet(&reader, pipe_reader, &p) == 0;
	if (!started) {
		free(p.buf);
		return 0;
	}
	uint64_t total = 0;
	pthread_mutex_lock(&p.lock);
	for (;;) {
		while (p.produced == p.consumed && !p.done)
			pthread_cond_wait(&p.filled, &p.lock);
		if (p.produced == p.consumed)
			break;
		size_t slot = p.consumed % PIPE_SLOTS;
		pthread_mutex_unlock(&p.lock);
		hasher_update(h, p.buf + slot * PIPE_CHUNK, p.len[slot]);
		if (each)
			each(ctx, p.buf + slot * PIPE_CHUNK, p.len[slot]);
		total += p.len[slot];
		pthread_mutex_lock(&p.lock);
		p.consumed++;
		/* The reader is faster and waits on a full ring: a wake-up per
		 * chunk (a futex call and another CPU woken) cost 5% here. */
		if (p.produced - p.consumed == PIPE_SLOTS / 2)
			pthread_cond_signal(&p.emptied);
	}
	int err = p.err;
	pthread_mutex_unlock(&p.lock);
	pthread_join(reader, NULL);
	pthread_cond_destroy(&p.filled);
	pthread_cond_destroy(&p.emptied);
	pthread_mutex_destroy(&p.lock);
	free(p.buf);
	if (err) {
		errno = err;
		return error_errno(e, "read");
	}
	*size_out = total;
	return 1;
}

/* The size of fd when it is a file large enough for a second thread, and
 * the caller may use two CPUs (a thread held to one, as the prefetch
 * worker is on two, would only take turns with its helper); else 0.
 * *small: 1 when fd is a regular file of at most SMALL_FILE bytes. */
static uint64_t size_for_two_threads(int fd, int *small)
{
	struct stat st;
	cpu_set_t cpus;
	*small = 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	*small = st.st_size <= SMALL_FILE;
	if (st.st_size < PIPE_MIN_SIZE || thread_cpus(&cpus) < 2)
		return 0;
	return (uint64_t)st.st_size;
}

static void hash_chunk(void *h, const void *chunk, size_t len)
{
	hasher_update(h, chunk, len);
}

/* 1 when fd's size bytes were hashed through a mapping and the file has
 * not grown since (the pread loops read up to the end, wherever it is);
 * else 0, h to be started again. */
static int hash_mapped(int fd, uint64_t size, struct hasher *h)
{
	struct stat st;
	return file_map_each(fd, size, hash_chunk, h) == 1 && fstat(fd, &st) == 0 &&
	       (uint64_t)st.st_size == size;
}

int digest_fd_each(int fd, struct digest *out, uint64_t *size_out,
                   void (*each)(void *ctx, const void *chunk, size_t len), void *ctx,
                   struct error *e)
{
	struct hasher h;
	if (hasher_init(&h, e) < 0)
		return -1;
	int small;
	uint64_t size = size_for_two_threads(fd, &small);
	int rc = 0;
	if (size && !each && hash_mapped(fd, size, &h)) {
		rc = 1;
	} else if (size) {
		hasher_init(&h, e); /* afresh: a mapped read may have fed it */
		rc = hash_pipelined(fd, &h, &size, each, ctx, e);
	}
	if (rc == 0) {
		hasher_init(&h, e);
		rc = hash_serial(fd, &h, &size, small, each, ctx, e);
	}
	if (rc < 0) {
		hasher_abort(&h);
		return -1;
	}
	hasher_final(&h, out);
	if (size_out)
		*size_out = size;
	return 0;
}

int digest_file(const char *path, struct digest *out, uint64_t *size_out, struct error *e)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return error_errno(e, "%s", path);
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return error_errno(e, "%s", path);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return error_set(e, "%s: not a regular file", path);
	}
	int rc = digest_fd(fd, out, size_out, e);
	close(fd);
	if (rc < 0)
		return error_wrap(e, "%s", path);
	return 0;
}

void digest_to_hex(const struct digest *d, char *out)
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < DIGEST_LEN; i++) {
		out[2 * i] = hex[d->b[i] >> 4];
		out[2 * i + 1] = hex[d->b[i] & 15];
	}
	out[DIGEST_HEX_LEN] = '\0';
}

void digest_to_short_hex(const unsigned char *b, char *out)
{
	struct digest d;
	char hex[DIGEST_HEX_LEN + 1];
	memcpy(d.b, b, DIGEST_LEN);
	digest_to_hex(&d, hex);
	/* "…" is three bytes of UTF-8. */
	snprintf(out, DIGEST_SHORT_LEN + 1, "%.8s\u2026%s", hex, hex + DIGEST_HEX_LEN - 4);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int digest_from_hex(const char *hex, struct digest *out)
{
	for (int i = 0; i < DIGEST_LEN; i++) {
		int hi = hexval(hex[2 * i]);
		int lo = hi < 0 ? -1 : hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out->b[i] = (unsigned char)(hi << 4 | lo);
	}
	return hex[DIGEST_HEX_LEN] == '\0' ? 0 : -1;
}

int digest_equal(const struct digest *a, const struct digest *b)
{
	return memcmp(a->b, b->b, DIGEST_LEN) == 0;
}

int digest_is_zero(const struct digest *d)
{
	static const struct digest zero;
	return digest_equal(d, &zero);
}
