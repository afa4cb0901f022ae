/* cachet stats: what the cache has done, from its counters and index. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "cli/statslog.h"
#include "cli/totals.h"

static void text_group(const struct store_counter *c, size_t n, const char *prefix)
{
	size_t plen = strlen(prefix);
	for (size_t i = 0; i < n; i++)
		if (!strncmp(c[i].name, prefix, plen) && c[i].value)
			printf("  %-34s %12lld\n", c[i].name + plen, (long long)c[i].value);
}

/* The summary of one build's stats_log file: the counters that file holds,
 * in the shape of the cache's (cache-wide fields such as entries are 0). */
static int stats_from_log(const char *path, int json)
{
	struct store_counter *c = NULL;
	size_t n = 0;
	struct error e = {0};
	if (cli_stats_log_read(path, &c, &n, &e) < 0) {
		cli_error("stats: %s", e.msg);
		return 1;
	}
	struct totals t;
	struct store_usage none = {0};
	totals_from(&t, c, n, &none);
	int64_t steps = totals_counter(c, n, "steps");
	if (json) {
		struct buf b;
		buf_init(&b);
		totals_json(&b, &t, c, n);
		b.data[--b.len] = '\0'; /* reopen the object */
		buf_addf(&b, ", \"steps\": %lld, \"log\": ", (long long)steps);
		buf_add_json_string(&b, path, strlen(path));
		buf_addstr(&b, "}\n");
		fputs(b.data, stdout);
		buf_free(&b);
	} else {
		int64_t total = t.hits + t.misses;
		printf("stats log                          %s\n", path);
		printf("steps                              %12lld\n", (long long)steps);
		printf("hits                               %12lld", (long long)t.hits);
		if (total)
			printf("  (%.1f%%)", 100.0 * (double)t.hits / (double)total);
		printf("\nmisses                             %12lld\n", (long long)t.misses);
		text_group(c, n, "miss: ");
		printf("uncacheable                        %12lld\n", (long long)t.uncacheable);
		text_group(c, n, "uncacheable: ");
		printf("errors                             %12lld\n", (long long)t.errors);
		if (t.verified || t.nondeterministic)
			printf(
			    "hits re-run to verify (in hits)    %12lld  (%lld nondeterministic)\n",
			    (long long)(t.verified + t.nondeterministic),
			    (long long)t.nondeterministic);
	}
	free(c);
	return 0;
}

enum { OPT_JSON = 1, OPT_ZERO, OPT_LOG };

static const struct cli_option stats_options[] = {
    {OPT_JSON, 0, "json", NULL,
     "one JSON object (integer fields hits, misses, uncacheable, errors,\n"
     "entries, bytes, time_saved_ms, and objects miss_reasons and\n"
     "uncacheable_reasons)"},
    {OPT_ZERO, 'z', "zero", NULL, "zero the counters"},
    {OPT_LOG, 0, "log", "FILE",
     "the same summary for the steps recorded in FILE, a stats_log\n"
     "(CACHET_STATS_LOG=FILE for one build counts that build alone, even\n"
     "while other builds use the cache); --json adds steps and log"},
    {0},
};

const struct cli_command cli_cmd_stats = {
    .name = "stats",
    .options = stats_options,
    .description = "Prints hits, misses and their reasons, uncacheable steps and why, errors the\n"
                   "cache survived, entries, size on disk and time saved.\n",
};

int cmd_stats(int argc, char **argv)
{
	int json = 0, zero = 0;
	const char *log = NULL;
	struct cli_args args;
	cli_args_init(&args, &cli_cmd_stats, argc, argv);
	for (int id; (id = cli_args_next(&args)) != CLI_ARG_END;) {
		if (id == CLI_ARG_EXIT)
			return args.exit;
		if (id == OPT_JSON)
			json = 1;
		else if (id == OPT_ZERO)
			zero = 1;
		else
			log = args.value;
	}
	if (log && zero) {
		cli_error(
		    "stats: -z zeroes the cache's counters; to restart a stats log, remove it");
		return EXIT_USAGE;
	}
	if (log)
		return stats_from_log(log, json);
	struct store *s = cli_open_store(0, NULL);
	if (!s)
		return 1;
	if (zero) {
		store_counters_zero(s);
		store_close(s);
		printf("statistics zeroed\n");
		return 0;
	}
	struct store_counter *c = NULL;
	size_t n = 0;
	struct error e = {0};
	struct store_usage u = {0};
	int rc = store_counters(s, &c, &n, &e) < 0 || store_usage(s, &u, &e) < 0 ? -1 : 0;
	if (rc < 0 && e.code == EBADMSG) {
		/* A damaged page that only the counts read (a hit never does):
		 * the query marked the index, and opening the cache again checks
		 * it and recreates it if need be, as the next command would. The
		 * answer is that cache's. */
		free(c);
		c = NULL;
		n = 0;
		store_close(s);
		s = cli_open_store(0, NULL);
		if (!s)
			return 1;
		rc = store_counters(s, &c, &n, &e) < 0 || store_usage(s, &u, &e) < 0 ? -1 : 0;
	}
	if (rc < 0) {
		cli_error("stats: %s", e.msg);
		store_close(s);
		free(c);
		return 1;
	}
	struct totals t;
	totals_from(&t, c, n, &u);
	int64_t hits = t.hits, misses = t.misses, unc = t.uncacheable, errors = t.errors;
	int64_t saved = t.time_saved_ms, verified = t.verified, nondet = t.nondeterministic;
	if (json) {
		struct buf b;
		buf_init(&b);
		totals_json(&b, &t, c, n);
		buf_addch(&b, '\n');
		fputs(b.data, stdout);
		buf_free(&b);
	} else {
		int64_t total = hits + misses;
		printf("cache directory                    %s\n", store_dir(s));
		printf("hits                               %12lld", (long long)hits);
		if (total)
			printf("  (%.1f%%)", 100.0 * (double)hits / (double)total);
		printf("\n");
		/* Served from another step's entry (duplicate.h): in hits. */
		int64_t dups = totals_counter(c, n, "duplicate_hits");
		if (dups)
			printf("  duplicate compiles               %12lld\n", (long long)dups);
		/* Served from a compile that preprocesses to the same text
		 * (preprocessed_duplicate.h): in hits. */
		int64_t pp_dups = totals_counter(c, n, "preprocessed_duplicate_hits");
		if (pp_dups)
			printf("  preprocessed duplicates          %12lld\n", (long long)pp_dups);
		printf("misses                             %12lld\n", (long long)misses);
		text_group(c, n, "miss: ");
		printf("uncacheable                        %12lld\n", (long long)unc);
		text_group(c, n, "uncacheable: ");
		printf("errors                             %12lld\n", (long long)errors);
		if (verified || nondet)
			printf(
			    "hits re-run to verify (in hits)    %12lld  (%lld nondeterministic)\n",
			    (long long)(verified + nondet), (long long)nondet);
		int any_remote = 0;
		for (size_t i = 0; i < n && !any_remote; i++)
			any_remote = !strncmp(c[i].name, "remote_", 7) && c[i].value;
		if (any_remote) {
			printf("remote\n");
			text_group(c, n, "remote_");
		}
		printf("entries                            %12llu\n",
		       (unsigned long long)u.entries);
		printf("size on disk                       %12.1f MB\n",
		       (double)u.blob_bytes / 1e6);
		printf("time saved                         %12.1f s\n", (double)saved / 1000.0);
	}
	free(c);
	store_close(s);
	return 0;
}
