/*
 * Errors travel as values: a function that can fail takes a `struct error *`
 * as its last argument, fills it with a one-line message and returns -1.
 * Only the command-line tool (src/cli) prints messages or picks exit codes.
 */
#ifndef CACHET_ERROR_H
#define CACHET_ERROR_H

struct error {
	int code;      /* errno of the failure where there was one, else 0 */
	char msg[512]; /* one line, no trailing newline; "" when no error */
};

/* Sets the message (printf-style); code = 0. Returns -1 so callers can
 * write `return error_set(e, "...")`. `e` may be NULL. */
int error_set(struct error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Like error_set, then appends ": strerror(errno)" and keeps errno in code. */
int error_errno(struct error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepends "context: " to an existing message. Returns -1. */
int error_wrap(struct error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
