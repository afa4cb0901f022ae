/*
 * Starting the background drainer of the upload spool.
 */
#ifndef CACHET_CLI_DRAINER_H
#define CACHET_CLI_DRAINER_H

/* Starts `cachet remote drain` in the background for the cache in
 * cache_dir (its spool in state_dir) unless one runs. The drainer is a new
 * session with no descriptor of ours beyond /dev/null, so make, ctest or a
 * pipe never wait for it. */
void drainer_start(const char *state_dir, const char *cache_dir);

#endif
