/*
 * stats_log: counters for one build. The cache's own counters are shared by
 * every build using the cache; with stats_log (or CACHET_STATS_LOG) set to a
 * file, every step also appends one line to that file, so that a build that
 * points it at its own file can count its steps apart from concurrent ones
 * (`cachet stats --log FILE`).
 *
 * A line: unix milliseconds, result (hit, miss, uncacheable), reason (may be
 * empty; tab, newline and backslash escaped as \t \n \\), duration in
 * milliseconds, and the number of errors the cache survived during the
 * step, separated by tabs. Each line is written with one O_APPEND write, so
 * lines of parallel steps never interleave.
 */
#ifndef CACHET_CLI_STATSLOG_H
#define CACHET_CLI_STATSLOG_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/error.h"
#include "cachet/store.h"

struct settings;

/* Tallies a counter this process adds to (only "errors" is kept). */
void cli_stats_log_note(const char *counter, int64_t delta);

/* Appends the step's line when stats_log is set. Failures are ignored: a
 * log line is not worth a build. */
void cli_stats_log_step(const struct settings *st, const char *result, const char *reason,
                        int64_t duration_ms);

/* Reads a stats log into counters named as the cache's own: "hits",
 * "misses", "miss: REASON", "uncacheable", "uncacheable: REASON", "errors",
 * "verified", "nondeterministic", and "steps" (lines read). *out is
 * malloc'd. Lines that do not parse are skipped. -1 with e when the file
 * cannot be read. */
int cli_stats_log_read(const char *path, struct store_counter **out, size_t *n, struct error *e);

#endif
