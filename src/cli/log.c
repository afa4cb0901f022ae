/* cachet log: the last steps run through this cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cli/cli.h"
#include "cli/options.h"

enum { OPT_COUNT = 1, OPT_JSON };

static const struct cli_option log_options[] = {
    {OPT_COUNT, 'n', NULL, "N", "show the last N steps (default 20)"},
    {OPT_JSON, 0, "json", NULL, "one JSON object per line"},
    {0},
};

const struct cli_command cli_cmd_log = {
    .name = "log",
    .options = log_options,
    .description = "The last N (default 20) steps run through this cache: time, hit or miss and\n"
                   "its reason, duration, command (secret-looking values hidden). The log is\n"
                   "bounded by CACHET_LOG_SIZE bytes (default 1 MiB; one older generation kept).\n",
};

int cmd_log(int argc, char **argv)
{
	size_t n = 20;
	int json = 0;
	struct cli_args args;
	cli_args_init(&args, &cli_cmd_log, argc, argv);
	for (int id; (id = cli_args_next(&args)) != CLI_ARG_END;) {
		if (id == CLI_ARG_EXIT)
			return args.exit;
		if (id == OPT_JSON) {
			json = 1;
			continue;
		}
		if (cli_args_count(&args, &n) < 0)
			return EXIT_USAGE;
	}
	struct store *s = cli_open_store(0, NULL);
	if (!s)
		return 1;
	struct store_log_entry *en;
	size_t count;
	struct error e = {0};
	if (store_log_read(s, n, &en, &count, &e) < 0) {
		cli_error("log: %s", e.msg);
		store_close(s);
		return 1;
	}
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; i < count; i++) {
		if (json) {
			buf_addf(&b, "{\"time_ms\": %lld, \"result\": ", (long long)en[i].time_ms);
			buf_add_json_string(&b, en[i].result, strlen(en[i].result));
			buf_addstr(&b, ", \"reason\": ");
			buf_add_json_string(&b, en[i].reason, strlen(en[i].reason));
			buf_addf(
			    &b, ", \"duration_ms\": %lld, \"cwd\": ", (long long)en[i].duration_ms);
			buf_add_json_string(&b, en[i].cwd, strlen(en[i].cwd));
			buf_addstr(&b, ", \"command\": ");
			buf_add_json_string(&b, en[i].command, strlen(en[i].command));
			buf_addstr(&b, "}\n");
		} else {
			char when[32];
			cli_format_time(en[i].time_ms / 1000, when, sizeof when);
			char *what = *en[i].reason
			                 ? xasprintf("%s (%s)", en[i].result, en[i].reason)
			                 : xstrdup(en[i].result);
			buf_addf(&b, "%s  %-40s %8lld ms  %s\n", when, what,
			         (long long)en[i].duration_ms, en[i].command);
			free(what);
		}
	}
	fputs(b.data, stdout);
	buf_free(&b);
	store_log_free(en, count);
	store_close(s);
	return 0;
}
