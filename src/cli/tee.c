#include "cli/tee.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <string.h>
#include <unistd.h>
#include "cachet/array.h"

int tee_open(struct tee *t)
{
	int out[2], err[2];
	memset(t, 0, sizeof *t);
	buf_init(&t->out);
	buf_init(&t->err);
	buf_init(&t->err_scratch);
	t->err_ends_in_newline = 1;
	if (pipe2(out, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(err, O_CLOEXEC) < 0) {
		close(out[0]);
		close(out[1]);
		return -1;
	}
	t->out_read = out[0], t->out_write = out[1];
	t->err_read = err[0], t->err_write = err[1];
	pthread_mutex_init(&t->lock, NULL);
	return 0;
}

/* The read ends never block: tee_sync takes what is there and goes. A pty
 * master's non-blocking read first waits for the bytes its slave's write
 * queued (the kernel hands them over on a work queue). */
static void set_nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* A pty pair: *master for the tee, *slave for the step. */
static int open_pty(int like_fd, int *master, int *slave)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return -1;
	char name[128];
	if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof name) != 0) {
		close(m);
		return -1;
	}
	int sl = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (sl < 0) {
		close(m);
		return -1;
	}
	/* Raw: no "\n" -> "\r\n", no echo; the step's bytes arrive as written. */
	struct termios tio;
	if (tcgetattr(sl, &tio) == 0) {
		cfmakeraw(&tio);
		tcsetattr(sl, TCSANOW, &tio);
	}
	struct winsize ws;
	if (ioctl(like_fd, TIOCGWINSZ, &ws) == 0)
		ioctl(sl, TIOCSWINSZ, &ws);
	*master = m;
	*slave = sl;
	return 0;
}

int tee_use_terminals(struct tee *t, unsigned terminal)
{
	int m, sl;
	if (terminal & 1) {
		if (open_pty(1, &m, &sl) < 0)
			return -1;
		close(t->out_read);
		close(t->out_write);
		t->out_read = m, t->out_write = sl;
	}
	if (terminal & 2) {
		if (open_pty(2, &m, &sl) < 0)
			return -1;
		close(t->err_read);
		close(t->err_write);
		t->err_read = m, t->err_write = sl;
	}
	return 0;
}

void tee_filter_stderr(struct tee *t, unsigned keep)
{
	t->err_filtered = 1;
	diag_strip_init(&t->err_strip, keep);
}

/* Writes a chunk of the step's stream i (0 stdout, 1 stderr) out. Called
 * with t->lock held (err_strip and err_scratch are shared). */
static int tee_write(struct tee *t, int i, const char *chunk, size_t n)
{
	if (i == 0 || !t->err_filtered)
		return write_all(i == 0 ? 1 : 2, chunk, n);
	buf_reset(&t->err_scratch);
	diag_strip_add(&t->err_strip, chunk, n, &t->err_scratch);
	return write_all(2, t->err_scratch.data, t->err_scratch.len);
}

static void note_run(struct tee *t, unsigned stream, size_t n)
{
	if (t->nruns && (t->runs[t->nruns - 1] & 1) == stream) {
		t->runs[t->nruns - 1] += (uint64_t)n << 1;
		return;
	}
	ARRAY_RESERVE(t->runs, t->runs_alloc, t->nruns + 1, 16);
	t->runs[t->nruns++] = (uint64_t)n << 1 | stream;
}

/* Reads one chunk of stream i (0 stdout, 1 stderr), keeps it and passes it
 * on. The chunk's length, 0 at the end of the stream, -1 when nothing is
 * there now. Called with t->lock held. */
static ssize_t take_chunk(struct tee *t, int i, char *chunk, size_t size)
{
	ssize_t n = read(i == 0 ? t->out_read : t->err_read, chunk, size);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return -1;
	/* A pty master reads EIO once every slave is closed: its EOF. */
	if (n <= 0)
		return 0;
	buf_add(i == 0 ? &t->out : &t->err, chunk, (size_t)n);
	note_run(t, (unsigned)i, (size_t)n);
	if (!t->write_failed && tee_write(t, i, chunk, (size_t)n) < 0)
		t->write_failed = 1;
	if (i == 1)
		t->err_ends_in_newline = chunk[n - 1] == '\n';
	return n;
}

void tee_sync(void *tee)
{
	struct tee *t = tee;
	char chunk[65536];
	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < 2; i++)
		while (take_chunk(t, i, chunk, sizeof chunk) > 0)
			;
	pthread_mutex_unlock(&t->lock);
}

void tee_take_order(struct tee *t, struct result *res)
{
	if (t->nruns < 2 || (t->nruns == 2 && (t->runs[0] & 1) == 0))
		return;
	res->stream_runs = t->runs;
	res->nstream_runs = t->nruns;
	t->runs = NULL;
	t->nruns = t->runs_alloc = 0;
}

/* fds 1 and 2 are one file: a dup (`2>&1`, `|&`), the same terminal, or
 * the same file opened twice with O_APPEND, where writes interleave. */
static int streams_are_one_file(void)
{
	struct stat a, b;
	return fstat(1, &a) == 0 && fstat(2, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

void replay_streams(const struct result *res, const void *out, size_t out_len, const void *err,
                    size_t err_len, struct diag_strip *err_strip)
{
	struct buf merged;
	buf_init(&merged);
	if (!res->nstream_runs || out_len != res->out.size || err_len != res->err.size ||
	    !streams_are_one_file()) {
		write_all(1, out, out_len);
		if (err_strip) {
			diag_strip_add(err_strip, err, err_len, &merged);
			diag_strip_finish(err_strip, &merged);
			write_all(2, merged.data, merged.len);
		} else {
			write_all(2, err, err_len);
		}
		buf_free(&merged);
		return;
	}
	/* One file: the runs put together in their order and written at once
	 * give what writing each to its descriptor would, in one call instead
	 * of one per run (a chatty step has thousands). result_decode checked
	 * that the runs divide the blobs exactly. stderr's runs go through the
	 * filter in turn, as they went by on the miss. */
	size_t at[2] = {0, 0};
	const char *data[2] = {out, err};
	for (size_t i = 0; i < res->nstream_runs; i++) {
		unsigned stream = res->stream_runs[i] & 1;
		size_t n = (size_t)(res->stream_runs[i] >> 1);
		if (stream == 1 && err_strip)
			diag_strip_add(err_strip, data[1] + at[1], n, &merged);
		else
			buf_add(&merged, data[stream] + at[stream], n);
		at[stream] += n;
	}
	if (err_strip)
		diag_strip_finish(err_strip, &merged);
	write_all(1, merged.data, merged.len);
	buf_free(&merged);
}

static void *tee_loop(void *arg)
{
	struct tee *t = arg;
	struct pollfd pfd[2] = {{t->out_read, POLLIN, 0}, {t->err_read, POLLIN, 0}};
	char chunk[65536];
	int open_count = 2;
	while (open_count) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			pthread_mutex_lock(&t->lock);
			ssize_t n = take_chunk(t, i, chunk, sizeof chunk);
			pthread_mutex_unlock(&t->lock);
			if (n == 0) {
				pfd[i].fd = -1;
				open_count--;
			}
		}
	}
	if (t->err_filtered) {
		pthread_mutex_lock(&t->lock);
		buf_reset(&t->err_scratch);
		diag_strip_finish(&t->err_strip, &t->err_scratch);
		if (!t->write_failed && write_all(2, t->err_scratch.data, t->err_scratch.len) < 0)
			t->write_failed = 1;
		pthread_mutex_unlock(&t->lock);
	}
	return NULL;
}

int tee_start(struct tee *t)
{
	set_nonblocking(t->out_read);
	set_nonblocking(t->err_read);
	return pthread_create(&t->thread, NULL, tee_loop, t) == 0 ? 0 : -1;
}

void tee_close_writers(struct tee *t)
{
	if (t->out_write >= 0)
		close(t->out_write);
	if (t->err_write >= 0)
		close(t->err_write);
	t->out_write = t->err_write = -1;
}

void tee_finish(struct tee *t)
{
	pthread_join(t->thread, NULL);
}

void tee_free(struct tee *t)
{
	tee_close_writers(t);
	close(t->out_read);
	close(t->err_read);
	buf_free(&t->out);
	buf_free(&t->err);
	buf_free(&t->err_scratch);
	free(t->runs);
	pthread_mutex_destroy(&t->lock);
}
