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

int cmd_diff(int argc, char **argv)
{
	int json = 0;
	/* A tree that differs only in a file's mode differs (a script that lost
	 * its executable bit, a umask). */
	struct compare_options opt = {
	    .modes = 1, .archive_plugin = cli_archive_plugin(), .dwarf_plugin = cli_dwarf_plugin()};
	const char *paths[2];
	int npaths = 0, options_done = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!options_done && !strcmp(a, "--")) {
			options_done = 1;
		} else if (!options_done && !strcmp(a, "--json")) {
			json = 1;
		} else if (!options_done &&
		           (!strcmp(a, "--max-lines") || !strncmp(a, "--max-lines=", 12))) {
			const char *v = a[11] == '=' ? a + 12 : (i + 1 < argc ? argv[++i] : NULL);
			if (!v || !(opt.max_diff_lines = parse_count(v))) {
				cli_error("diff: --max-lines needs a positive number");
				return EXIT_USAGE;
			}
		} else if (!options_done && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
			fputs(cli_help_text("diff"), stdout);
			return 0;
		} else if (!options_done && a[0] == '-' && a[1]) {
			cli_error("diff: unknown option '%s'", a);
			return EXIT_USAGE;
		} else if (npaths < 2) {
			paths[npaths++] = a;
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
