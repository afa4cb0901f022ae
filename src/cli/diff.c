/* cachet diff: how two build outputs differ, in a compiler engineer's terms. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/compare.h"
#include "cachet/remote.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "elf/archive_plugin.h"
#include "elf/dwarf_plugin.h"

/* Parses a positive line count; 0 on anything else. */
static size_t parse_count(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v == 0 || v > SIZE_MAX / 2)
		return 0;
	return (size_t)v;
}

/* Where the plugins lie (beside the remote transports), or NULL. */
static const char *plugin_dir(void)
{
	static char *dir;
	static int looked;
	if (!looked) {
		looked = 1;
		char *self = cli_self_exe();
		dir = remote_plugin_dir(self);
		free(self);
	}
	return dir;
}

const char *cli_archive_plugin(void)
{
	static char *path;
	if (!path && plugin_dir())
		path = xasprintf("%s/%s", plugin_dir(), ARCHIVE_PLUGIN);
	return path;
}

const char *cli_dwarf_plugin(void)
{
	static char *path;
	if (!path && plugin_dir())
		path = xasprintf("%s/%s", plugin_dir(), DWARF_PLUGIN);
	return path;
}

enum { OPT_JSON = 1, OPT_MAX_LINES };

static const struct cli_option diff_options[] = {
    {OPT_JSON, 0, "json", NULL, "one JSON object (differ, summary, counts, entries)"},
    {OPT_MAX_LINES, 0, "max-lines", "N", "at most N lines of each text diff (default 200)"},
    {0},
};

const struct cli_command cli_cmd_diff = {
    .name = "diff",
    .operands = "A B",
    .options = diff_options,
    .description =
        "Says how two files or directory trees differ. ELF files: symbols defined in\n"
        "only one (name, section, binding; FILE and section symbols too), symbols whose\n"
        "size or section changed, sections present in only one or whose contents\n"
        "differ (sizes, first differing offset, and what the bytes say: the strings\n"
        "that came or went in string sections and .comment, both build IDs, the text\n"
        "at the difference; DWARF compile units' name, directory and producer). ar\n"
        "archives, tarballs, zip, cpio and compressed streams\n"
        "(gzip, xz, bzip2, zstd): member by member with their metadata (dates, modes,\n"
        "owners), each member compared as a file (through libcachet-archive.so).\n"
        ".pyc: the header decoded (source mtime and size, or hash). Text: a unified\n"
        "diff. Anything else: sizes and the first differing offset. Directories are\n"
        "compared recursively, modes included; symlinks by target, never followed.\n",
    .epilogue = "Exit status: 0 identical, 1 different, 2 usage error or unreadable input.\n",
};

int cmd_diff(int argc, char **argv)
{
	int json = 0;
	/* A tree that differs only in a file's mode differs (a script that lost
	 * its executable bit, a umask). */
	struct compare_options opt = {
	    .modes = 1, .archive_plugin = cli_archive_plugin(), .dwarf_plugin = cli_dwarf_plugin()};
	const char *paths[2];
	int npaths = 0;
	struct cli_args args;
	cli_args_init(&args, &cli_cmd_diff, argc, argv);
	for (int id; (id = cli_args_next(&args)) != CLI_ARG_END;) {
		if (id == CLI_ARG_EXIT)
			return args.exit;
		if (id == OPT_JSON) {
			json = 1;
		} else if (id == OPT_MAX_LINES) {
			if (!(opt.max_diff_lines = parse_count(args.value))) {
				cli_error("diff: --max-lines needs a positive number");
				return EXIT_USAGE;
			}
		} else if (npaths < 2) {
			paths[npaths++] = args.value;
		} else {
			cli_error("diff: too many arguments (expected A and B)");
			return EXIT_USAGE;
		}
	}
	if (npaths != 2) {
		cli_error("diff: expected two paths: cachet diff [--json] [--max-lines N] A B");
		return EXIT_USAGE;
	}
	struct compare_report r;
	struct error e = {0};
	if (compare_paths(paths[0], paths[1], &opt, &r, &e) < 0) {
		cli_error("diff: %s", e.msg);
		compare_report_free(&r);
		return EXIT_USAGE;
	}
	struct buf out;
	buf_init(&out);
	if (json)
		compare_report_json(&r, &out);
	else
		compare_report_render(&r, &out);
	fwrite(out.data, 1, out.len, stdout);
	buf_free(&out);
	int differ = r.differ;
	compare_report_free(&r);
	if (fflush(stdout) != 0) {
		cli_error("diff: writing the report: %s", strerror(errno));
		return EXIT_USAGE;
	}
	return differ ? 1 : 0;
}
