/* cachet config: every setting with its value and where it came from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/remote.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "cli/settings.h"

/* A value as shown: remote URLs lose their credentials. malloc'd. */
static char *shown_value(const char *key, const char *text)
{
	if (!text)
		return xstrdup("");
	if (strcmp(key, "remote") != 0)
		return xstrdup(text);
	return remote_redact_setting(text);
}

static int list_all(const struct settings *st)
{
	for (size_t i = 0; setting_defs[i].key; i++) {
		const struct setting_value *v = &st->values[i];
		char *shown = shown_value(setting_defs[i].key, v->text);
		printf("%-22s = %-24s (%s)\n", setting_defs[i].key, shown,
		       v->origin ? v->origin : "default");
		free(shown);
	}
	return 0;
}

enum { OPT_CACHE = 1 };

static const struct cli_option config_options[] = {
    {OPT_CACHE, 0, "cache", NULL, "write to $CACHET_DIR/cachet.conf instead of the user's file"},
    {0},
};

const struct cli_command cli_cmd_config = {
    .name = "config",
    .operands = "[KEY [VALUE]]",
    .options = config_options,
    .flags = CLI_STOP_AT_OPERAND,
    .description =
        "Without arguments, lists every setting with its value and where it came from.\n"
        "With KEY, prints its value; with KEY VALUE, checks the value and writes it to\n"
        "the user's file ${XDG_CONFIG_HOME:-~/.config}/cachet/cachet.conf, or with\n"
        "--cache to $CACHET_DIR/cachet.conf (for settings a shared cache should carry).\n"
        "A bad value (for remote: its scheme, host, port or any attribute) exits 2\n"
        "with the reason and writes nothing.\n"
        "Later sources win: default, the cache's file, the user's file, CACHET_<KEY>.\n",
    .epilogue = "\n"
                "base_dir DIR (CACHET_BASE_DIR): the root of a checkout, or a directory above\n"
                "all checkouts (as ccache's); an absolute path, its real path counts. Paths\n"
                "under it are keyed relative to the working directory when that lies under\n"
                "it (else relative to DIR), locally and on remotes, so a checkout at another\n"
                "path or depth hits what this one stored while its files are the same. A\n"
                "step whose outputs, stdout or stderr contain the real\n"
                "path (a depfile, -g debug info) is keyed on that path and re-runs elsewhere:\n"
                "correct, but not shared. Compile with -ffile-prefix-map=DIR=. (or\n"
                "-fdebug-prefix-map) so that objects do not name the checkout.\n",
};

static int usage(void)
{
	cli_error("config: expected [KEY [VALUE]] (see cachet config --help)");
	return EXIT_USAGE;
}

int cmd_config(int argc, char **argv)
{
	int in_cache = 0;
	struct cli_args args;
	cli_args_init(&args, &cli_cmd_config, argc, argv);
	for (int id; (id = cli_args_next(&args)) != CLI_ARG_END;) {
		if (id == CLI_ARG_EXIT)
			return args.exit;
		in_cache = 1;
	}
	int i = args.next;
	int nargs = argc - i;
	if (nargs > 2)
		return usage();
	if (nargs == 2) {
		struct error e = {0};
		if (setting_validate(argv[i], argv[i + 1], &e) < 0) {
			cli_error("config: %s", e.msg);
			return EXIT_USAGE;
		}
		if (in_cache && !strcmp(argv[i], "dir")) {
			cli_error("config: 'dir' cannot be set inside the cache it names");
			return EXIT_USAGE;
		}
		char *file = in_cache ? NULL : settings_user_file();
		if (in_cache) {
			char *dir = cli_cache_dir();
			file = xasprintf("%s/cachet.conf", dir);
			free(dir);
		}
		int rc = settings_write(file, argv[i], argv[i + 1], &e);
		if (rc < 0)
			cli_error("config: %s", e.msg);
		free(file);
		return rc < 0 ? 1 : 0;
	}
	const struct settings *st = cli_settings();
	if (!st) {
		cli_error("config: %s", cli_settings_error());
		return 1;
	}
	if (nargs == 0)
		return list_all(st);
	int idx = setting_index(argv[i]);
	if (idx < 0) {
		cli_error("config: unknown key '%s' (cachet config lists them)", argv[i]);
		return EXIT_USAGE;
	}
	char *shown = shown_value(argv[i], st->values[idx].text);
	printf("%s\n", shown);
	free(shown);
	return 0;
}
