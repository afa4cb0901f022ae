/*
 * What the subcommands of the cachet tool share. Only src/cli prints,
 * parses argv and chooses exit codes.
 */
#ifndef CACHET_CLI_H
#define CACHET_CLI_H

#include <stdint.h>
#include "cachet/observe.h"
#include "cachet/store.h"

/* Exit status for cachet's own usage errors. */
#define EXIT_USAGE 2

int cmd_run(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_clear(int argc, char **argv);
int cmd_help(int argc, char **argv);

/* Runs argv as if cachet were not there: used when the cache is disabled,
 * when cachet already runs under a tracer, or when the store is unusable. */
int run_direct(char **argv, const char *program) __attribute__((noreturn));

/* "cachet: " + message + newline on stderr; warn_once prints a given
 * message only once per process. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The cache directory: $CACHET_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/cachet.
 * malloc'd. */
char *cli_cache_dir(void);

/* Opens the store, creating it if needed. NULL (message printed as a
 * warning) when it cannot be used. */
struct store *cli_open_store(unsigned flags);

/* The fingerprint -> digest cache, over the store's table. */
void cli_digest_cache(struct store *s, struct digest_cache *dc);

/* 1 when the environment variable is set to something other than "", "0". */
int env_flag(const char *name);

/* Path of the running cachet binary (/proc/self/exe), malloc'd. */
char *cli_self_exe(void);

int64_t now_ms(void);

extern const char *cli_help_text(const char *subcommand);

#endif
