/*
 * The numbers `cachet stats` shows, computed once from the store's counters
 * and usage so that every subcommand that shows them (stats, report) says
 * the same thing.
 */
#ifndef CACHET_CLI_TOTALS_H
#define CACHET_CLI_TOTALS_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/buf.h"
#include "cachet/store.h"

struct totals {
	int64_t hits, misses, uncacheable, errors;
	int64_t time_saved_ms;
	int64_t verified, nondeterministic;
	struct store_usage usage;
};

/* The counter named name in c[0..n), 0 when absent. */
int64_t totals_counter(const struct store_counter *c, size_t n, const char *name);
/* Fills t from the counters and the usage. */
void totals_from(struct totals *t, const struct store_counter *c, size_t n,
                 const struct store_usage *u);
/* Appends the object of `cachet stats --json` (no newline): t's fields plus
 * miss_reasons and uncacheable_reasons from the counters "miss: REASON" and
 * "uncacheable: REASON". */
void totals_json(struct buf *b, const struct totals *t, const struct store_counter *c, size_t n);

#endif
