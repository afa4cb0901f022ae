/*
 * The options of a subcommand, from one table: parsing argv and the usage
 * text of `cachet help CMD` / `cachet CMD --help`, so the two cannot drift.
 *
 * What every subcommand accepts: -x and --long, a value as `-x VALUE`,
 * `--long VALUE` or `--long=VALUE` (a value may look like an option: it is
 * taken as the value), `--` to end the options, -h and --help. An unknown
 * option, a missing value or an operand where the subcommand takes none
 * is one line on stderr naming the subcommand and how to get its help, and
 * the subcommand exits EXIT_USAGE.
 */
#ifndef CACHET_CLI_OPTIONS_H
#define CACHET_CLI_OPTIONS_H

#include <stddef.h>

struct buf;

struct cli_option {
	int id;                /* what the subcommand switches on; > 0 */
	char short_name;       /* 'n' for -n; 0: none */
	const char *long_name; /* "dry-run" for --dry-run; NULL: none */
	const char *value;     /* the value's name in the usage ("SIZE"); NULL: a flag */
	/* Its lines in the option list, '\n' between them; NULL: an alias that
	 * the usage does not show (stats --zero). */
	const char *help;
};

/* Options end at the first operand, which starts a command with its own
 * options (run, explain, repro); else operands and options mix. */
#define CLI_STOP_AT_OPERAND 1u

struct cli_command {
	const char *name;
	/* What follows the options in the usage line: "[--] COMMAND [ARG...]";
	 * NULL: the subcommand takes no operand. */
	const char *operands;
	const struct cli_option *options; /* ends with an entry of id 0 */
	unsigned flags;
	/* Usage lines that replace the generated one ("usage: " is added in
	 * front of the first, the indentation in front of the others); NULL:
	 * generated from the table and operands. */
	const char *usage;
	const char *more_usage;  /* lines after the usage line: "cachet [OPTIONS] ..." */
	const char *description; /* between the usage and the option list */
	const char *epilogue;    /* after the option list: exit status... */
};

/* What cli_args_next found besides an option's id. */
enum {
	/* No more options; stopping at operands, argv[a->next] is the first. */
	CLI_ARG_END = 0,
	CLI_ARG_OPERAND = -1, /* a->value is the operand */
	/* The subcommand is done: exit with a->exit (0 after -h or --help,
	 * whose usage is printed; EXIT_USAGE after a one-line error). */
	CLI_ARG_EXIT = -2,
};

struct cli_args {
	const struct cli_command *cmd;
	int argc;
	char **argv;
	int next;                        /* the index of the next word to read */
	int operands_only;               /* after "--" */
	const char *value;               /* the option's value or the operand */
	const char *word;                /* the word the last option was given as ("--max-size") */
	const struct cli_option *option; /* the last option read */
	int exit;                        /* with CLI_ARG_EXIT */
};

/* Reads argv[1...] (argv[0] is the subcommand's name). */
void cli_args_init(struct cli_args *a, const struct cli_command *cmd, int argc, char **argv);
/* The next option's id, with a->value for one that takes a value, or one
 * of CLI_ARG_*. */
int cli_args_next(struct cli_args *a);

/* The last option's value as a positive whole number: 0 with *out set;
 * else -1 after saying "CMD: -n takes a positive number, not 'V'". */
int cli_args_count(const struct cli_args *a, size_t *out);

/* The whole help of the subcommand: usage, description, options, epilogue. */
void cli_usage(const struct cli_command *cmd, struct buf *out);
/* Prints cli_usage on stdout: the answer to -h, --help, `cachet help CMD`. */
int cli_print_usage(const struct cli_command *cmd);

/* The tables of the subcommands, each in its file. */
extern const struct cli_command cli_cmd_gc;
extern const struct cli_command cli_cmd_clear;
extern const struct cli_command cli_cmd_log;
extern const struct cli_command cli_cmd_keygen;
extern const struct cli_command cli_cmd_stats;
extern const struct cli_command cli_cmd_report;
extern const struct cli_command cli_cmd_show;
extern const struct cli_command cli_cmd_diff;
extern const struct cli_command cli_cmd_explain;
extern const struct cli_command cli_cmd_config;
extern const struct cli_command cli_cmd_run;
extern const struct cli_command cli_cmd_repro;
extern const struct cli_command cli_cmd_remote;
extern const struct cli_command cli_cmd_help;

#endif
