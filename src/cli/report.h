/*
 * cachet report in two files: report.c gathers the numbers (counters, step
 * log, index) and writes the page; report_charts.c draws its inline SVG
 * charts and formats the quantities both show.
 */
#ifndef CACHET_CLI_REPORT_H
#define CACHET_CLI_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/buf.h"

/* The step log cut into equal spans of time. */
struct report_bucket {
	int64_t start_ms; /* unix milliseconds */
	int64_t hits, misses, uncacheable;
	int64_t saved_ms; /* estimated from the log (report.c says how) */
};

struct report_timeline {
	struct report_bucket *buckets; /* owned, oldest first, n >= 1 when set */
	size_t n;
	int64_t width_ms;
};

/* Stacked bars of hits, misses and uncacheable steps per bucket, with the
 * hit rate (hits / (hits + misses), as cachet stats computes it) as a line
 * on a 0-100% axis. Appends one <svg> element. */
void report_chart_activity(struct buf *b, const struct report_timeline *t);
/* Bars of the estimated time saved per bucket. Appends one <svg> element. */
void report_chart_saved(struct buf *b, const struct report_timeline *t);

/* "850 ms", "12.3 s", "4 min 05 s", "2 h 10 min", "3.2 days". */
void report_add_duration(struct buf *b, int64_t ms);
/* "512 B", "12.3 kB", "4.5 MB" (decimal units, as cachet stats). */
void report_add_size(struct buf *b, uint64_t bytes);
/* A bucket's start in local time at a precision that suits the bucket
 * width; with_date adds the date to sub-day widths. */
void report_add_bucket_label(struct buf *b, int64_t start_ms, int64_t width_ms, int with_date);

#endif
