/* cachet clear: empties the cache. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int cmd_clear(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(cli_help_text("clear"), stdout);
			return 0;
		}
		cli_error("clear: unknown option '%s'", argv[i]);
		return EXIT_USAGE;
	}
	struct store *s = cli_open_store(0, NULL);
	if (!s)
		return 1;
	struct error e = { 0 };
	int rc = store_clear(s, &e);
	if (rc < 0)
		cli_error("clear: %s", e.msg);
	else
		printf("cache cleared: %s\n", store_dir(s));
	store_close(s);
	return rc < 0 ? 1 : 0;
}
