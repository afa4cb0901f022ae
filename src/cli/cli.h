/*
 * What the subcommands of the cachet tool share. Only src/cli prints,
 * parses argv and chooses exit codes.
 */
#ifndef CACHET_CLI_H
#define CACHET_CLI_H

#include <stdint.h>
#include "cachet/observe.h"
#include "cachet/store.h"

struct settings;
struct step;

/* The settings (settings.h), loaded on first use; NULL when a file or
 * variable is bad, with the message from cli_settings_error(). */
const struct settings *cli_settings(void);
const char *cli_settings_error(void);

/* step_init with the configured namespace, env_ignore and bases: run,
 * explain and repro must build the same key for the same command. */
int cli_step_init(struct step *step, char *const *argv, const char *program,
                  struct digest_cache *dc, struct error *e);

/* The bases of every step of this process (portable.h): base_dir,
 * canonical, and HOME in the hermetic mode; computed once. NULL with e
 * when base_dir cannot be used (missing, not a directory, "/"). */
const struct step_bases *cli_bases(struct error *e);

/* Which of the step's stdout and stderr are terminals (STEP_TTY_* bits):
 * those that are terminals for cachet itself (setting color = auto), both
 * (always) or none (never). cli_step_init keys the step with it. */
unsigned cli_step_terminal(void);

/* The archive plugin of cachet diff and repro (elf/archive_plugin.h)
 * beside the other plugins, or NULL when it is not installed. */
const char *cli_archive_plugin(void);
/* The DWARF plugin likewise (elf/dwarf_plugin.h). */
const char *cli_dwarf_plugin(void);

/* Exit status for cachet's own usage errors. */
#define EXIT_USAGE 2

int cmd_run(int argc, char **argv);
/* cmd_run for a cachet reached through a symlink named after the program. */
int cmd_run_masquerade(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_clear(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_repro(int argc, char **argv);
int cmd_remote(int argc, char **argv);
int cmd_keygen(int argc, char **argv);

/* argv as one shell-quoted line with secret-looking values hidden (for
 * logs and reports). malloc'd. */
char *cli_command_line(char *const *argv);

/* Default bound of the step log; CACHET_LOG_SIZE overrides it (bytes). */
#define STEP_LOG_DEFAULT_BYTES (1024 * 1024)
uint64_t cli_log_max_bytes(void);

/* "2026-11-30 15:10:02" in local time, into out (at least 32 bytes). */
void cli_format_time(int64_t unix_seconds, char *out, size_t cap);

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

/* Opens the store, creating it if needed. NULL (a warning printed, with
 * what happens instead, e.g. "running without it") when it cannot be used. */
struct store *cli_open_store(unsigned flags, const char *consequence);

/* The fingerprint -> digest cache, over the store's table. */
void cli_digest_cache(struct store *s, struct digest_cache *dc);

/* 1 when the environment variable is set to something other than "", "0". */
int env_flag(const char *name);

/* Path of the running cachet binary (/proc/self/exe), malloc'd. */
char *cli_self_exe(void);

/* The statically linked cachet (CACHET_STATIC_EXE) starts in a third of
 * the time the dynamic one takes (no loader, no libc.so to map and
 * relocate): a hit is mostly start-up. It cannot load plugins
 * (cachet/plugin.h), so whatever may need one (a subcommand other than
 * run, a run with remotes configured) goes to its dynamic twin,
 * cachet-dynamic, built from the same sources and installed beside the
 * plugins. */
int cli_static_exe(void);
/* Replaces this process by cachet-dynamic with argv (argv[0] kept);
 * returns only if it cannot, with e set. */
int cli_exec_dynamic(char **argv, struct error *e);

int64_t now_ms(void);

/* The overview of `cachet help` (a subcommand's help: options.h). */
const char *cli_help_text(void);

#endif
