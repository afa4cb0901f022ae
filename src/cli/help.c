/* cachet help, --help and `cachet help SUBCOMMAND`. */
#include <stdio.h>
#include <string.h>

#include "cachet/buf.h"
#include "cli/cli.h"
#include "cli/options.h"

static const char general[] =
    "usage: cachet [run] [OPTIONS] [--] COMMAND [ARG...]\n"
    "       cachet SUBCOMMAND [ARGS]\n"
    "\n"
    "cachet memoizes build steps. It runs COMMAND under a syscall tracer, records\n"
    "every file-system fact the step relied on, and stores its outputs by content;\n"
    "the next identical step replays them, but only if every fact still holds.\n"
    "\n"
    "subcommands:\n"
    "  run      run a command through the cache (also: cachet COMMAND ...)\n"
    "  explain  say whether a command would hit, and if not, why\n"
    "  show     say which step produced a file, with which programs\n"
    "  log      the last steps run through the cache\n"
    "  config   list, read or write settings\n"
    "  stats    show what the cache has done (--json, -z to zero)\n"
    "  report   write an HTML page: hit rate over time, misses, largest entries\n"
    "  gc       evict now: least recently used entries over max_size, entries older\n"
    "           than max_age, abandoned files; prints what it freed\n"
    "  clear    empty the cache\n"
    "  diff     how two files or trees differ (ELF symbols and sections, ar, text)\n"
    "  repro    run a command several times, varied, and say whether its outputs differ\n"
    "  remote   upload spooled entries now (flush), remote caches' state (status)\n"
    "  keygen   make an Ed25519 key pair for signing entries shared through a remote\n"
    "  help     show help for a subcommand\n"
    "\n"
    "options:\n"
    "  --version   print the version\n"
    "  --help      print this help\n"
    "\n"
    "environment:\n"
    "  CACHET_DIR          cache directory (default ${XDG_CACHE_HOME:-~/.cache}/cachet)\n"
    "  CACHET_DISABLE=1    run commands untouched\n"
    "  CACHET_RECACHE=1    run and overwrite the cached result\n"
    "  CACHET_VERBOSE=1    one line per step: cachet: hit STEP | cachet: miss STEP (reason)\n"
    "  CACHET_STATUS_FILE  append one JSON line per step to this file\n"
    "  CACHET_NAMESPACE    a string mixed into every key (separates caches in one dir)\n"
    "\n"
    "A symlink named after a compiler (gcc -> cachet) runs the next such program on\n"
    "PATH through the cache.\n";

const struct cli_command cli_cmd_help = {
    .name = "help",
    .operands = "[SUBCOMMAND]",
    .description = "Without SUBCOMMAND, the overview; with it, the subcommand's usage, options\n"
                   "and exit status (also: cachet SUBCOMMAND --help). The manual: man cachet.\n",
};

static const struct cli_command *const commands[] = {
    &cli_cmd_gc,     &cli_cmd_clear, &cli_cmd_log,    &cli_cmd_keygen,  &cli_cmd_stats,
    &cli_cmd_report, &cli_cmd_show,  &cli_cmd_diff,   &cli_cmd_explain, &cli_cmd_config,
    &cli_cmd_run,    &cli_cmd_repro, &cli_cmd_remote, &cli_cmd_help,    NULL,
};

static const struct cli_command *find_command(const char *name)
{
	for (size_t i = 0; commands[i]; i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

const char *cli_help_text(void)
{
	return general;
}

int cmd_help(int argc, char **argv)
{
	const char *name = NULL;
	struct cli_args args;
	cli_args_init(&args, &cli_cmd_help, argc, argv);
	for (int id; (id = cli_args_next(&args)) != CLI_ARG_END;) {
		if (id == CLI_ARG_EXIT)
			return args.exit;
		if (name) {
			cli_error("help: one SUBCOMMAND at a time");
			return EXIT_USAGE;
		}
		name = args.value;
	}
	if (!name) {
		fputs(general, stdout);
		return 0;
	}
	const struct cli_command *cmd = find_command(name);
	if (!cmd) {
		cli_error("help: no such subcommand '%s'", name);
		return EXIT_USAGE;
	}
	return cli_print_usage(cmd);
}
