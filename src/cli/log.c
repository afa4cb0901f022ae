/* cachet log: the last steps run through this cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cli/cli.h"

int cmd_log(int argc, char **argv)
{
	size_t n = 20;
	int json = 0;
	for (int i = 1; i < argc; i++) {
		const char *count;
		int got = cli_option_value(argc, argv, &i, "log", "-n", &count);
		if (got < 0)
			return EXIT_USAGE;
		if (got) {
			char *end;
			long v = strtol(count, &end, 10);
			if (!*count || *end || v <= 0) {
				cli_error("log: -n takes a positive number, not '%s'", count);
				return EXIT_USAGE;
			}
			n = (size_t)v;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(cli_help_text("log"), stdout);
			return 0;
		} else {
			cli_error("log: unknown option '%s'", argv[i]);
			return EXIT_USAGE;
		}
	}
	struct store *s = cli_open_store(0, NULL);
	if (!s)
		return 1;
	struct store_log_entry *en;
	size_t count;
	struct error e = { 0 };
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
			buf_addf(&b, ", \"duration_ms\": %lld, \"cwd\": ", (long long)en[i].duration_ms);
			buf_add_json_string(&b, en[i].cwd, strlen(en[i].cwd));
			buf_addstr(&b, ", \"command\": ");
			buf_add_json_string(&b, en[i].command, strlen(en[i].command));
			buf_addstr(&b, "}\n");
		} else {
			char when[32];
			cli_format_time(en[i].time_ms / 1000, when, sizeof when);
			char *what = *en[i].reason ? xasprintf("%s (%s)", en[i].result, en[i].reason)
						   : xstrdup(en[i].result);
			buf_addf(&b, "%s  %-40s %8lld ms  %s\n", when, what, (long long)en[i].duration_ms,
				 en[i].command);
			free(what);
		}
	}
	fputs(b.data, stdout);
	buf_free(&b);
	store_log_free(en, count);
	store_close(s);
	return 0;
}
