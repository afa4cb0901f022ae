/* cachet help, --help and `cachet help SUBCOMMAND`. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

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
	"  stats    show what the cache has done (--json, -z to zero)\n"
	"  clear    empty the cache\n"
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
	"  CACHET_VERBOSE=1    print one line per step: cachet: hit | cachet: miss (reason)\n"
	"  CACHET_STATUS_FILE  append one JSON line per step to this file\n"
	"  CACHET_NAMESPACE    a string mixed into every key (separates caches in one dir)\n"
	"\n"
	"A symlink named after a compiler (gcc -> cachet) runs the next such program on\n"
	"PATH through the cache.\n";

static const char run_help[] =
	"usage: cachet run [-v] [--] COMMAND [ARG...]\n"
	"       cachet [-v] COMMAND [ARG...]\n"
	"\n"
	"Looks the step up by its argv, cwd, keyed environment, platform and the\n"
	"executable's digest, then by every file-system fact a recorded run relied on.\n"
	"On a hit the outputs, stdout, stderr and exit status are replayed. On a miss\n"
	"the command runs traced, streaming its output, and a successful run is stored.\n"
	"\n"
	"  -v, --verbose   print 'cachet: hit' or 'cachet: miss (reason)' to stderr\n"
	"\n"
	"Exit status: the command's (a command killed by a signal kills cachet with the\n"
	"same signal); 127 when COMMAND is not found, 126 when it is not executable,\n"
	"2 for usage errors.\n";

static const char stats_help[] =
	"usage: cachet stats [--json] [-z]\n"
	"\n"
	"Prints hits, misses and their reasons, uncacheable steps and why, errors the\n"
	"cache survived, entries, size on disk and time saved.\n"
	"  --json   one JSON object (integer fields hits, misses, uncacheable, errors,\n"
	"           entries, bytes, time_saved_ms, and objects miss_reasons and\n"
	"           uncacheable_reasons)\n"
	"  -z       zero the counters\n";

static const char clear_help[] =
	"usage: cachet clear\n"
	"\n"
	"Removes every entry and blob from the cache.\n";

static const char help_help[] = "usage: cachet help [SUBCOMMAND]\n";

const char *cli_help_text(const char *subcommand)
{
	if (!subcommand)
		return general;
	if (!strcmp(subcommand, "run"))
		return run_help;
	if (!strcmp(subcommand, "stats"))
		return stats_help;
	if (!strcmp(subcommand, "clear"))
		return clear_help;
	if (!strcmp(subcommand, "help"))
		return help_help;
	return NULL;
}

int cmd_help(int argc, char **argv)
{
	if (argc < 2) {
		fputs(general, stdout);
		return 0;
	}
	const char *text = cli_help_text(argv[1]);
	if (!text) {
		cli_error("help: no such subcommand '%s'", argv[1]);
		return EXIT_USAGE;
	}
	fputs(text, stdout);
	return 0;
}
