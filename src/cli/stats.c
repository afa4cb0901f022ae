/* cachet stats: what the cache has done, from its counters and index. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cli/cli.h"

static int64_t counter(const struct store_counter *c, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(c[i].name, name))
			return c[i].value;
	return 0;
}

static void json_group(struct buf *b, const struct store_counter *c, size_t n, const char *key,
		       const char *prefix)
{
	size_t plen = strlen(prefix);
	int first = 1;
	buf_addf(b, ", \"%s\": {", key);
	for (size_t i = 0; i < n; i++) {
		if (strncmp(c[i].name, prefix, plen) != 0)
			continue;
		if (!first)
			buf_addstr(b, ", ");
		first = 0;
		const char *name = c[i].name + plen;
		buf_add_json_string(b, name, strlen(name));
		buf_addf(b, ": %lld", (long long)c[i].value);
	}
	buf_addch(b, '}');
}

static void text_group(const struct store_counter *c, size_t n, const char *prefix)
{
	size_t plen = strlen(prefix);
	for (size_t i = 0; i < n; i++)
		if (!strncmp(c[i].name, prefix, plen) && c[i].value)
			printf("  %-34s %12lld\n", c[i].name + plen, (long long)c[i].value);
}

int cmd_stats(int argc, char **argv)
{
	int json = 0, zero = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "-z") || !strcmp(argv[i], "--zero"))
			zero = 1;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(cli_help_text("stats"), stdout);
			return 0;
		} else {
			cli_error("stats: unknown option '%s'", argv[i]);
			return EXIT_USAGE;
		}
	}
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
	struct error e = { 0 };
	struct store_usage u = { 0 };
	if (store_counters(s, &c, &n, &e) < 0 || store_usage(s, &u, &e) < 0) {
		cli_error("stats: %s", e.msg);
		store_close(s);
		free(c);
		return 1;
	}
	int64_t hits = counter(c, n, "hits"), misses = counter(c, n, "misses");
	int64_t unc = counter(c, n, "uncacheable"), errors = counter(c, n, "errors");
	int64_t saved = counter(c, n, "time_saved_ms");
	int64_t verified = counter(c, n, "verified"), nondet = counter(c, n, "nondeterministic");
	if (json) {
		struct buf b;
		buf_init(&b);
		buf_addf(&b,
			 "{\"hits\": %lld, \"misses\": %lld, \"uncacheable\": %lld, \"errors\": %lld, "
			 "\"entries\": %llu, \"pathsets\": %llu, \"blobs\": %llu, \"bytes\": %llu, "
			 "\"time_saved_ms\": %lld, \"verified\": %lld, \"nondeterministic\": %lld",
			 (long long)hits, (long long)misses, (long long)unc, (long long)errors,
			 (unsigned long long)u.entries, (unsigned long long)u.pathsets,
			 (unsigned long long)u.blobs, (unsigned long long)u.blob_bytes, (long long)saved,
			 (long long)verified, (long long)nondet);
		json_group(&b, c, n, "miss_reasons", "miss: ");
		json_group(&b, c, n, "uncacheable_reasons", "uncacheable: ");
		buf_addstr(&b, "}\n");
		fputs(b.data, stdout);
		buf_free(&b);
	} else {
		int64_t total = hits + misses;
		printf("cache directory                    %s\n", store_dir(s));
		printf("hits                               %12lld", (long long)hits);
		if (total)
			printf("  (%.1f%%)", 100.0 * (double)hits / (double)total);
		printf("\nmisses                             %12lld\n", (long long)misses);
		text_group(c, n, "miss: ");
		printf("uncacheable                        %12lld\n", (long long)unc);
		text_group(c, n, "uncacheable: ");
		printf("errors                             %12lld\n", (long long)errors);
		if (verified || nondet)
			printf("verified hits                      %12lld  (%lld nondeterministic)\n",
			       (long long)(verified + nondet), (long long)nondet);
		printf("entries                            %12llu\n", (unsigned long long)u.entries);
		printf("size on disk                       %12.1f MB\n", (double)u.blob_bytes / 1e6);
		printf("time saved                         %12.1f s\n", (double)saved / 1000.0);
	}
	free(c);
	store_close(s);
	return 0;
}
