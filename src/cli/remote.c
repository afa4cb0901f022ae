/*
 * cachet remote: the upload spool and the state of the remote caches.
 *   flush    upload every spooled entry now; wait for a running drainer
 *   status   remotes (credentials hidden), breakers, spool, remote counters
 *   drain    what the background drainer runs (quiet; leaves work to a
 *            drainer that already runs)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cachet/buf.h"
#include "cachet/remote.h"
#include "cachet/remote_upload.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/remote_tier.h"
#include "cli/settings.h"

enum { OPT_QUIET = 1, OPT_JSON };

static const struct cli_option remote_options[] = {
    {OPT_QUIET, 'q', "quiet", NULL, "with flush: say nothing unless something failed"},
    {OPT_JSON, 0, "json", NULL, "with status: one JSON object"},
    {0},
};

const struct cli_command cli_cmd_remote = {
    .name = "remote",
    .options = remote_options,
    .usage = "cachet remote flush [-q]\n"
             "cachet remote status [--json]",
    .description =
        "Remote caches are set with 'remote' (CACHET_REMOTE): comma-separated items\n"
        "'URL [attribute...]', URL one of http[s]://[user:password@]host[:port][/prefix],\n"
        "redis://[[user:]password@]host[:port][/db], redis+unix:///socket[?db=N].\n"
        "Attributes: read-only, timeout=MS (connect, default 100), op-timeout=MS\n"
        "(default 2000), retry-after=MS (default 30000), prefix=, max-size=BYTES,\n"
        "bearer-token=, bearer-token-file=, auth-file= (user:password).\n"
        "Steps upload in the background after a miss; a local miss asks the remotes.\n"
        "  flush    upload every waiting entry now; exit 1 if some could not be,\n"
        "           naming each server that failed and why\n"
        "  status   remotes (credentials hidden), servers skipped after a failure,\n"
        "           the last error of each (HTTP status or curl/hiredis message, and\n"
        "           when), uploads waiting, the remote counters\n",
};

static int usage(void)
{
	cli_error("remote: expected flush or status (see cachet remote --help)");
	return EXIT_USAGE;
}

static int64_t wall_now_ms(void)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* The configured remotes, or none (a bad setting is said elsewhere). */
static int load_remotes(struct remote_config *config, struct error *e)
{
	const struct settings *st = cli_settings();
	char **items = st ? settings_list(st, "remote") : NULL;
	int ok = !items || remote_config_parse(items, config, e) == 0;
	settings_list_free(items);
	return ok;
}

/* "URL: reason" for every server that failed since since_ms, "; "-joined. */
static void failures_since(const char *state, int64_t since_ms, struct buf *out)
{
	struct remote_config config = {0};
	struct error e = {0};
	load_remotes(&config, &e);
	for (size_t i = 0; i < config.n; i++) {
		int64_t when;
		char why[BREAKER_REASON_MAX];
		if (breaker_last_error(state, config.specs[i].id, &when, why, sizeof why) &&
		    when >= since_ms)
			buf_addf(out, "%s%s: %s", out->len ? "; " : "", config.specs[i].shown, why);
	}
	remote_config_free(&config);
}

static int flush(struct store *s, int quiet)
{
	struct remote_drain_report rep;
	struct error e = {0};
	/* Wall times in the breaker files have millisecond steps. */
	int64_t start = wall_now_ms();
	struct progress shown;
	progress_start(&shown, !quiet);
	int rc = remote_tier_drain(s, 1, 1, &shown, &rep, &e);
	progress_end(&shown);
	if (rc < 0)
		cli_error("remote flush: %s", e.msg);
	if (!quiet)
		printf("uploaded %zu, dropped %zu, left %zu\n", rep.uploaded, rep.dropped,
		       rep.left);
	if (rc == 0 && rep.left) {
		char *state = xasprintf("%s/remote", store_dir(s));
		struct buf why;
		buf_init(&why);
		failures_since(state, start, &why);
		if (why.len)
			cli_error("remote flush: %zu entries could not be uploaded: %s", rep.left,
			          why.data);
		else
			cli_error(
			    "remote flush: %zu entries could not be uploaded (see cachet remote "
			    "status)",
			    rep.left);
		buf_free(&why);
		free(state);
	}
	return rc == 0 && rep.left == 0 ? 0 : 1;
}

static int64_t counter(const struct store_counter *c, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(c[i].name, name))
			return c[i].value;
	return 0;
}

static int status(struct store *s, int json)
{
	struct remote_config config = {0};
	struct error e = {0};
	int config_ok = load_remotes(&config, &e);
	char *state = xasprintf("%s/remote", store_dir(s));
	char **jobs;
	size_t njobs = 0;
	if (spool_list(state, &jobs, &njobs, &e) == 0)
		spool_list_free(jobs, njobs);
	struct store_counter *c = NULL;
	size_t n = 0;
	store_counters(s, &c, &n, &e);
	int64_t now_wall = wall_now_ms();

	struct buf b;
	buf_init(&b);
	if (json) {
		buf_addstr(&b, "{\"remotes\": [");
		for (size_t i = 0; i < config.n; i++) {
			const struct remote_spec *r = &config.specs[i];
			int64_t until = breaker_until(state, r->id);
			buf_addstr(&b, i ? ", {\"url\": " : "{\"url\": ");
			buf_add_json_string(&b, r->shown, strlen(r->shown));
			buf_addf(&b, ", \"read_only\": %s, \"resting_ms\": %lld, \"last_error\": ",
			         r->read_only ? "true" : "false",
			         (long long)(until ? until - now_wall : 0));
			int64_t when;
			char why[BREAKER_REASON_MAX];
			if (breaker_last_error(state, r->id, &when, why, sizeof why)) {
				buf_addstr(&b, "{\"message\": ");
				buf_add_json_string(&b, why, strlen(why));
				buf_addf(&b, ", \"at_ms\": %lld, \"ago_ms\": %lld}",
				         (long long)when, (long long)(now_wall - when));
			} else {
				buf_addstr(&b, "null");
			}
			buf_addch(&b, '}');
		}
		buf_addf(&b, "], \"config_ok\": %s, \"spool\": %zu, \"counters\": {",
		         config_ok ? "true" : "false", njobs);
		int first = 1;
		for (size_t i = 0; i < n; i++) {
			if (strncmp(c[i].name, "remote_", 7) != 0)
				continue;
			if (!first)
				buf_addstr(&b, ", ");
			first = 0;
			buf_add_json_string(&b, c[i].name, strlen(c[i].name));
			buf_addf(&b, ": %lld", (long long)c[i].value);
		}
		buf_addf(&b, "}, \"hits\": %lld}\n", (long long)counter(c, n, "hits"));
	} else {
		if (!config_ok)
			buf_addf(&b, "configuration error: %s\n", e.msg);
		if (!config.n && config_ok)
			buf_addstr(&b, "no remote configured (setting 'remote')\n");
		for (size_t i = 0; i < config.n; i++) {
			const struct remote_spec *r = &config.specs[i];
			int64_t until = breaker_until(state, r->id);
			buf_addf(&b, "%s%s", r->shown, r->read_only ? " (read-only)" : "");
			if (until)
				buf_addf(&b, "  skipped for %.1f s more after a failure",
				         (double)(until - now_wall) / 1000.0);
			buf_addch(&b, '\n');
			int64_t when;
			char why[BREAKER_REASON_MAX];
			if (breaker_last_error(state, r->id, &when, why, sizeof why)) {
				char at[32];
				cli_format_time(when / 1000, at, sizeof at);
				buf_addf(&b, "  last error %s (%.0f s ago): %s\n", at,
				         (double)(now_wall - when) / 1000.0, why);
			}
		}
		buf_addf(&b, "uploads waiting                    %12zu\n", njobs);
		for (size_t i = 0; i < n; i++)
			if (!strncmp(c[i].name, "remote_", 7))
				buf_addf(&b, "%-34s %12lld\n", c[i].name + 7,
				         (long long)c[i].value);
	}
	fputs(b.data, stdout);
	buf_free(&b);
	free(c);
	free(state);
	remote_config_free(&config);
	return config_ok ? 0 : 1;
}

int cmd_remote(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	const char *sub = argv[1];
	int json = 0, quiet = 0;
	/* The options follow flush or status: argv[1] is read as the name. */
	struct cli_args args;
	cli_args_init(&args, &cli_cmd_remote, argc, argv);
	args.next = sub[0] == '-' ? 1 : 2;
	for (int id; (id = cli_args_next(&args)) != CLI_ARG_END;) {
		if (id == CLI_ARG_EXIT)
			return args.exit;
		if (id == OPT_JSON)
			json = 1;
		else
			quiet = 1;
	}
	if (strcmp(sub, "flush") && strcmp(sub, "status") && strcmp(sub, "drain"))
		return usage();
	struct store *s = cli_open_store(0, NULL);
	if (!s)
		return 1;
	int rc;
	if (!strcmp(sub, "flush")) {
		rc = flush(s, quiet);
	} else if (!strcmp(sub, "status")) {
		rc = status(s, json);
	} else {
		struct remote_drain_report rep;
		struct error e = {0};
		remote_tier_drain(s, 0, 0, NULL, &rep, &e);
		rc = 0;
	}
	store_close(s);
	return rc;
}
