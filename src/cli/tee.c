#include "cli/tee.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <string.h>
#include <unistd.h>

int tee_open(struct tee *t)
{
	int out[2], err[2];
	memset(t, 0, sizeof *t);
	buf_init(&t->out);
	buf_init(&t->err);
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
	return 0;
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

/* Writes a chunk of the step's stream i (0 stdout, 1 stderr) out. */
static int tee_write(struct tee *t, int i, const char *chunk, size_t n, struct buf *scratch)
{
	if (i == 0 || !t->err_filtered)
		return write_all(i == 0 ? 1 : 2, chunk, n);
	buf_reset(scratch);
	diag_strip_add(&t->err_strip, chunk, n, scratch);
	return write_all(2, scratch->data, scratch->len);
}

static void *tee_loop(void *arg)
{
	struct tee *t = arg;
	struct pollfd pfd[2] = { { t->out_read, POLLIN, 0 }, { t->err_read, POLLIN, 0 } };
	char chunk[65536];
	struct buf scratch;
	buf_init(&scratch);
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
			ssize_t n = read(pfd[i].fd, chunk, sizeof chunk);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			/* A pty master reads EIO once every slave is closed: its EOF. */
			if (n <= 0) {
				pfd[i].fd = -1;
				open_count--;
				continue;
			}
			buf_add(i == 0 ? &t->out : &t->err, chunk, (size_t)n);
			if (!t->write_failed && tee_write(t, i, chunk, (size_t)n, &scratch) < 0)
				t->write_failed = 1;
			if (i == 1)
				t->err_ends_in_newline = chunk[n - 1] == '\n';
		}
	}
	if (t->err_filtered) {
		buf_reset(&scratch);
		diag_strip_finish(&t->err_strip, &scratch);
		if (!t->write_failed && write_all(2, scratch.data, scratch.len) < 0)
			t->write_failed = 1;
	}
	buf_free(&scratch);
	return NULL;
}

int tee_start(struct tee *t)
{
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
}
