/*
 * Streams a step's stdout and stderr to cachet's own as they come, and keeps
 * a copy of each for the cache. Runs on its own thread, because the tracer
 * thread must block in waitpid.
 */
#ifndef CACHET_CLI_TEE_H
#define CACHET_CLI_TEE_H

#include <pthread.h>
#include "cachet/buf.h"
#include "cachet/diag_colour.h"
#include "cachet/fdio.h"
#include "cachet/result.h"

struct tee {
	int out_read, err_read;   /* read ends, owned by the tee */
	int out_write, err_write; /* write ends, for the child; close after the fork */
	struct buf out, err;      /* what went by */
	int err_ends_in_newline;  /* the last byte written to stderr was '\n' (or none yet) */
	int write_failed;         /* our stdout or stderr went away (EPIPE) */
	/* The order the two streams came in (result.stream_runs' form). */
	uint64_t *runs;
	size_t nruns, runs_alloc;
	/* Held while a chunk is read, kept and passed on, by the tee's thread
	 * or tee_sync's caller. */
	pthread_mutex_t lock;
	int err_filtered; /* stderr passes through err_strip on its way out */
	struct diag_strip err_strip;
	struct buf err_scratch; /* err_strip's output, under lock */
	pthread_t thread;
};

/* Creates the pipes. -1 with errno on failure. */
int tee_open(struct tee *t);
/* Replaces the pipe of stdout (STEP_TTY_STDOUT) and/or stderr
 * (STEP_TTY_STDERR) with a pseudo-terminal in raw mode (bytes pass
 * unchanged), sized like cachet's own terminal, so that the step colours
 * its output as it would without cachet. -1 with errno on failure. */
int tee_use_terminals(struct tee *t, unsigned terminal);
/* Streams stderr out without the escape sequences that keep (DIAG_SHOW_*
 * bits) does not name; the copy for the cache keeps them all. */
void tee_filter_stderr(struct tee *t, unsigned keep);
/* Starts copying; call after the child holds the write ends. */
int tee_start(struct tee *t);
/* trace_spec.on_stream_write: takes in what both streams hold already,
 * before the step's next write to one of them proceeds, so that the order
 * of the step's writes is the order they are kept and passed on in. On the
 * tracer's thread, while the writer waits. */
void tee_sync(void *tee);
/* Hands the order of the streams to res (stream_runs), unless it is all of
 * stdout, then all of stderr. */
void tee_take_order(struct tee *t, struct result *res);
/* Writes a recorded stdout and stderr to fds 1 and 2: in the order res
 * recorded when both are one file (`> log 2>&1`, `|&`, one terminal), else
 * (or when they are not the blobs res names) each whole; stderr through
 * err_strip when not NULL (step_colour.h). */
void replay_streams(const struct result *res, const void *out, size_t out_len, const void *err,
                    size_t err_len, struct diag_strip *err_strip);
/* Closes the write ends held by this process. */
void tee_close_writers(struct tee *t);
/* Waits until both pipes reach end of file (every holder closed them). */
void tee_finish(struct tee *t);
void tee_free(struct tee *t);

#endif
