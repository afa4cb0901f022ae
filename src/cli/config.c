/* cachet config: every setting with its value and where it came from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/remote.h"
#include "cli/cli.h"
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

static int usage(void)
{
	cli_error("usage: cachet config [--cache] [KEY [VALUE]]");
	return EXIT_USAGE;
}

int cmd_config(int argc, char **argv)
{
	int in_cache = 0;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--cache")) {
			in_cache = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(cli_help_text("config"), stdout);
			return 0;
		} else {
			cli_error("config: unknown option '%s'", argv[i]);
			return usage();
		}
	}
	int nargs = argc - i;
	if (nargs > 2)
		return usage();
	if (nargs == 2) {
		struct error e = { 0 };
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
