/*
 * Eviction from the command line: `cachet gc`, and the check a miss makes
 * after storing an entry.
 */
#ifndef CACHET_CLI_GC_H
#define CACHET_CLI_GC_H

#include "cachet/result.h"
#include "cachet/store.h"

/* After res was stored: adds its size to the cache's running estimate and,
 * when that passes max_size (or the periodic sweep is due, at most daily
 * and at least every max_age / 2), evicts down to 90% of max_size and what
 * max_age says, without waiting if another process is already evicting.
 * Cheap when nothing is due (a counter and a stat). Failures are counted,
 * never fatal. */
void cli_evict_after_store(struct store *s, const struct result *res);

#endif
