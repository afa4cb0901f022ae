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
	"  explain  say whether a command would hit, and if not, why\n"
	"  show     say which step produced a file, with which programs\n"
	"  log      the last steps run through the cache\n"
	"  config   list, read or write settings\n"
	"  stats    show what the cache has done (--json, -z to zero)\n"
	"  clear    empty the cache\n"
	"  diff     how two files or trees differ (ELF symbols and sections, ar, text)\n"
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
	"usage: cachet run [-v] [--verify] [--check CMD] [--require-symbols FILE]\n"
	"                  [--] COMMAND [ARG...]\n"
	"       cachet [OPTIONS] COMMAND [ARG...]\n"
	"\n"
	"Looks the step up by its argv, cwd, keyed environment, platform and the\n"
	"executable's digest, then by every file-system fact a recorded run relied on.\n"
	"On a hit the outputs, stdout, stderr and exit status are replayed. On a miss\n"
	"the command runs traced, streaming its output, and a successful run is stored.\n"
	"\n"
	"  -v, --verbose   print 'cachet: hit' or 'cachet: miss (reason)' to stderr\n"
	"  --verify        on a hit, run the step anyway and compare its outputs with the\n"
	"                  cached ones (verify_rate does this for a fraction of hits); a\n"
	"                  difference warns, is counted and marks the step nondeterministic\n"
	"  --check CMD     after a miss, with the outputs in place, run CMD with /bin/sh;\n"
	"                  if it fails nothing is stored and cachet exits with its status\n"
	"  --require-symbols FILE\n"
	"                  every name in FILE (one per line) must be defined (GLOBAL or\n"
	"                  WEAK) by the ELF outputs; otherwise nothing is stored, the\n"
	"                  missing names are listed and cachet exits 1\n"
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

static const char explain_help[] =
	"usage: cachet explain [--all] [--json] [--] COMMAND [ARG...]\n"
	"\n"
	"Without running COMMAND, says whether it would hit and, if not, names the\n"
	"first difference: an input whose content changed (with both digests), a\n"
	"path that now exists or is gone, a directory listing that changed, or for a\n"
	"new step the argv, environment or executable difference from the nearest\n"
	"recorded step.\n"
	"  --all    list every observation that no longer holds, not just the first\n"
	"  --json   one JSON object: hit, reason, nearest, differences[]\n"
	"Exit status: 0 would hit, 1 would miss, 2 usage error.\n";

static const char show_help[] =
	"usage: cachet show [--inputs] FILE\n"
	"\n"
	"Finds the recorded steps whose result holds exactly FILE's content and prints\n"
	"their command line, cwd, time, host, duration, hits since, and every program\n"
	"and shared library they ran, with digests and one toolchain digest over all.\n"
	"  --inputs   also list every observation the step relied on\n"
	"Exit status: 0 found, 1 no step produced this content, 2 usage error.\n";

static const char log_help[] =
	"usage: cachet log [-n N] [--json]\n"
	"\n"
	"The last N (default 20) steps run through this cache: time, hit or miss and\n"
	"its reason, duration, command (secret-looking values hidden). The log is\n"
	"bounded by CACHET_LOG_SIZE bytes (default 1 MiB; one older generation kept).\n";

static const char diff_help[] =
	"usage: cachet diff [--json] [--max-lines N] A B\n"
	"\n"
	"Says how two files or directory trees differ. ELF files: symbols defined in\n"
	"only one (name, section, binding), symbols whose size or section changed,\n"
	"sections present in only one or whose contents differ (sizes, first differing\n"
	"offset). ar archives: member by member, ELF members as above. Text: a unified\n"
	"diff. Anything else: sizes and the first differing offset. Directories are\n"
	"compared recursively; symlinks by target, never followed.\n"
	"  --json          one JSON object (differ, summary, counts, entries)\n"
	"  --max-lines N   at most N lines of each text diff (default 200)\n"
	"Exit status: 0 identical, 1 different, 2 usage error or unreadable input.\n";

static const char config_help[] =
	"usage: cachet config [--cache] [KEY [VALUE]]\n"
	"\n"
	"Without arguments, lists every setting with its value and where it came from.\n"
	"With KEY, prints its value; with KEY VALUE, checks the value and writes it to\n"
	"the user's file ${XDG_CONFIG_HOME:-~/.config}/cachet/cachet.conf, or with\n"
	"--cache to $CACHET_DIR/cachet.conf (for settings a shared cache should carry).\n"
	"Later sources win: default, the cache's file, the user's file, CACHET_<KEY>.\n";

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
	if (!strcmp(subcommand, "diff"))
		return diff_help;
	if (!strcmp(subcommand, "explain"))
		return explain_help;
	if (!strcmp(subcommand, "show"))
		return show_help;
	if (!strcmp(subcommand, "log"))
		return log_help;
	if (!strcmp(subcommand, "config"))
		return config_help;
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
