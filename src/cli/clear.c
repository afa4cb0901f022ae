/* cachet clear: empties the cache. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"

const struct cli_command cli_cmd_clear = {
    .name = "clear",
    .description = "Removes every entry and blob from the cache.\n",
};

int cmd_clear(int argc, char **argv)
{
	struct cli_args args;
	cli_args_init(&args, &cli_cmd_clear, argc, argv);
	for (int id; (id = cli_args_next(&args)) != CLI_ARG_END;) {
		if (id == CLI_ARG_EXIT)
			return args.exit;
	}
	struct store *s = cli_open_store(0, NULL);
	if (!s)
		return 1;
	struct error e = {0};
	int rc = store_clear(s, &e);
	if (rc < 0)
		cli_error("clear: %s", e.msg);
	else
		printf("cache cleared: %s\n", store_dir(s));
	store_close(s);
	return rc < 0 ? 1 : 0;
}
