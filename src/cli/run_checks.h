/*
 * What `cachet run` checks beyond tracing: sampled re-runs of hits
 * (--verify, verify_rate), a user's check command (--check) and required
 * ELF symbols (--require-symbols). A step whose output varies between
 * identical runs, or that drops a symbol a later stage needs, must not
 * spread through the cache.
 */
#ifndef CACHET_CLI_RUN_CHECKS_H
#define CACHET_CLI_RUN_CHECKS_H

#include "cachet/buf.h"
#include "cachet/result.h"
#include "cachet/store.h"

/* 1 when this hit should be re-run and compared: always with --verify,
 * else with probability verify_rate. */
int verify_chosen(int forced, double rate);

/* Compares a fresh run (its result with outputs in the store, and its
 * stdout) with the cached result. Returns 1 when they agree; 0 with a
 * one-line *summary (malloc'd) naming the first differing output and how
 * it differs (for ELF: the missing symbols). */
int verify_compare(struct store *s, const struct result *cached, const struct result *fresh,
                   const struct buf *fresh_stdout, int fresh_exit, char **summary);

/* Runs `/bin/sh -c cmd` with the outputs in place. Returns its wait status. */
int run_check_command(const char *cmd);

/* Every name listed in file (one per line; blank lines and #-comments
 * skipped) must be defined by one of the ELF or archive outputs of result.
 * Returns 0 when all are; 1 with *missing (malloc'd, "a, b, c") when some
 * are not; -1 with *missing set to an error message when file cannot be
 * read. */
int check_required_symbols(const char *file, const struct result *result, char **missing);

#endif
