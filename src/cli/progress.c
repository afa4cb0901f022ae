#include "cli/progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cachet/fdio.h"
#include "cli/cli.h"

/* A line wider than the terminal wraps, and \r then redraws only its last
 * row: the line is cut to the width. */
static size_t terminal_width(void)
{
	struct winsize ws;
	if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
		return ws.ws_col - 1;
	return 79;
}

static void draw(struct progress *p)
{
	int64_t now = now_ms();
	struct buf line;
	buf_init(&line);
	buf_addstr(&line, "\r\033[K");
	size_t start = line.len;
	buf_addstr(&line, p->what);
	if (p->total || p->done) {
		buf_addf(&line, ": %llu", (unsigned long long)p->done);
		if (p->total)
			buf_addf(&line, "/%llu", (unsigned long long)p->total);
		double span = (double)(now - p->rate_start_ms) / 1000.0;
		double rate = span > 0.5 ? (double)(p->done - p->rate_from) / span : 0;
		if (rate > 0)
			buf_addf(&line, ", %.1f/s", rate);
		if (rate > 0 && p->total > p->done)
			buf_addf(&line, ", %.0f s left", (double)(p->total - p->done) / rate);
	}
	buf_addf(&line, ", %.1f s", (double)(now - p->start_ms) / 1000.0);
	size_t width = terminal_width();
	if (line.len - start > width)
		line.len = start + width;
	write_all(2, line.data, line.len);
	buf_free(&line);
}

static void *ticker(void *arg)
{
	struct progress *p = arg;
	for (;;) {
		struct timespec ts = {0, 200 * 1000 * 1000};
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&p->lock);
		int stop = p->stop;
		if (!stop)
			draw(p);
		pthread_mutex_unlock(&p->lock);
		if (stop)
			return NULL;
	}
}

void progress_start(struct progress *p, int wanted)
{
	memset(p, 0, sizeof *p);
	const char *term = getenv("TERM");
	if (!wanted || !isatty(2) || (term && !strcmp(term, "dumb")))
		return;
	pthread_mutex_init(&p->lock, NULL);
	p->start_ms = p->rate_start_ms = now_ms();
	snprintf(p->what, sizeof p->what, "starting");
	if (pthread_create(&p->thread, NULL, ticker, p) != 0) {
		pthread_mutex_destroy(&p->lock);
		return;
	}
	p->on = 1;
}

static void update(struct progress *p, uint64_t done, uint64_t total, const char *fmt, va_list ap)
{
	char what[sizeof p->what];
	vsnprintf(what, sizeof what, fmt, ap);
	pthread_mutex_lock(&p->lock);
	/* A new count (another phase): its rate starts afresh. */
	if (total != p->total || done < p->done) {
		p->rate_start_ms = now_ms();
		p->rate_from = done;
	}
	p->done = done;
	p->total = total;
	/* A new task shows at once; counts move on the next tick, not once
	 * per item of a fast loop. */
	if (strcmp(what, p->what) != 0) {
		memcpy(p->what, what, sizeof what);
		draw(p);
	}
	pthread_mutex_unlock(&p->lock);
}

void progress_update(struct progress *p, uint64_t done, uint64_t total, const char *fmt, ...)
{
	if (!p->on)
		return;
	va_list ap;
	va_start(ap, fmt);
	update(p, done, total, fmt, ap);
	va_end(ap);
}

void progress_callback(void *ctx, const char *what, uint64_t done, uint64_t total)
{
	progress_update(ctx, done, total, "%s", what);
}

void progress_end(struct progress *p)
{
	if (!p->on)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_mutex_destroy(&p->lock);
	write_all(2, "\r\033[K", 4);
	p->on = 0;
}
