/*
 * Progress of long work (remote flush, gc, repro) on stderr, as one line
 * redrawn with \r and cleared at the end: what is being done, how many of
 * how many, the rate and the time so far. Only on a terminal: nothing when
 * stderr is a pipe or a file, with --json, or with TERM=dumb. A thread
 * redraws it every 200 ms, so that the time moves while one item is slow.
 */
#ifndef CACHET_CLI_PROGRESS_H
#define CACHET_CLI_PROGRESS_H

#include <pthread.h>
#include <stdint.h>

struct progress {
	int on;
	int stop;
	pthread_t thread;
	pthread_mutex_t lock;
	char what[96];
	uint64_t done, total;
	int64_t start_ms;      /* progress_start */
	int64_t rate_start_ms; /* when this count started: the rate is over it */
	uint64_t rate_from;
};

/* Starts showing (wanted: 0 with --json) when stderr is a terminal. */
void progress_start(struct progress *p, int wanted);
/* What is being done: done of total items (total 0: not counted). */
void progress_update(struct progress *p, uint64_t done, uint64_t total, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same, as a callback for library loops (ctx: the struct progress). */
void progress_callback(void *ctx, const char *what, uint64_t done, uint64_t total);
/* Stops and clears the line; call before printing anything else. */
void progress_end(struct progress *p);

#endif
