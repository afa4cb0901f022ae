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

struct tee {
	int out_read, err_read;   /* read ends, owned by the tee */
	int out_write, err_write; /* write ends, for the child; close after the fork */
	struct buf out, err;      /* what went by */
	int err_ends_in_newline;  /* the last byte written to stderr was '\n' (or none yet) */
	int write_failed;         /* our stdout or stderr went away (EPIPE) */
	int err_filtered;         /* stderr passes through err_strip on its way out */
	struct diag_strip err_strip;
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
/* Closes the write ends held by this process. */
void tee_close_writers(struct tee *t);
/* Waits until both pipes reach end of file (every holder closed them). */
void tee_finish(struct tee *t);
void tee_free(struct tee *t);

#endif
