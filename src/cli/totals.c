/* The numbers of cachet stats, shared with cachet report. */
#include <string.h>

#include "cli/totals.h"

int64_t totals_counter(const struct store_counter *c, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(c[i].name, name))
			return c[i].value;
	return 0;
}

void totals_from(struct totals *t, const struct store_counter *c, size_t n,
                 const struct store_usage *u)
{
	t->verified = totals_counter(c, n, "verified");
	t->nondeterministic = totals_counter(c, n, "nondeterministic");
	/* One definition of a hit everywhere (stats, --json, the report's card
	 * and chart, which counts the log's "hit" lines): a hit whose sampled
	 * re-run was compared (--verify, verify_rate) was served as a hit and
	 * is one; verified and nondeterministic say how many of them were
	 * re-run. The counters keep them apart so that one step counts once. */
	t->hits = totals_counter(c, n, "hits") + t->verified + t->nondeterministic;
	t->misses = totals_counter(c, n, "misses");
	t->uncacheable = totals_counter(c, n, "uncacheable");
	t->errors = totals_counter(c, n, "errors");
	t->time_saved_ms = totals_counter(c, n, "time_saved_ms");
	t->usage = *u;
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

void totals_json(struct buf *b, const struct totals *t, const struct store_counter *c, size_t n)
{
	const struct store_usage *u = &t->usage;
	buf_addf(b,
	         "{\"hits\": %lld, \"misses\": %lld, \"uncacheable\": %lld, \"errors\": %lld, "
	         "\"entries\": %llu, \"pathsets\": %llu, \"blobs\": %llu, \"bytes\": %llu, "
	         "\"time_saved_ms\": %lld, \"verified\": %lld, \"nondeterministic\": %lld, "
	         "\"duplicate_hits\": %lld, \"preprocessed_duplicate_hits\": %lld",
	         (long long)t->hits, (long long)t->misses, (long long)t->uncacheable,
	         (long long)t->errors, (unsigned long long)u->entries,
	         (unsigned long long)u->pathsets, (unsigned long long)u->blobs,
	         (unsigned long long)u->blob_bytes, (long long)t->time_saved_ms,
	         (long long)t->verified, (long long)t->nondeterministic,
	         (long long)totals_counter(c, n, "duplicate_hits"),
	         (long long)totals_counter(c, n, "preprocessed_duplicate_hits"));
	json_group(b, c, n, "miss_reasons", "miss: ");
	json_group(b, c, n, "uncacheable_reasons", "uncacheable: ");
	json_group(b, c, n, "remote", "remote_");
	buf_addch(b, '}');
}
