/*
 * The value of a directory listing, shared by the two places that make
 * one: recording, from the entries the step's getdents calls returned
 * (trace.h, struct trace_listing), and evaluation, from a readdir of the
 * directory now (observe.c). One function, so that the keys of a directory
 * that did not change are the same whichever way they were taken.
 */
#include "cachet/observe.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/bug.h"

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct listing_entry *)a)->name,
	              ((const struct listing_entry *)b)->name);
}

static int is_excluded(const char *name, const char *const *excluded)
{
	if (!excluded)
		return 0;
	for (; *excluded; excluded++)
		if (strcmp(*excluded, name) == 0)
			return 1;
	return 0;
}

void observe_listing_value(struct listing_entry *entries, size_t n, const char *const *excluded,
                           struct buf *out, struct buf *detail)
{
	if (n)
		qsort(entries, n, sizeof *entries, cmp_entry);
	struct hasher h;
	struct digest d;
	if (hasher_init(&h, NULL) < 0)
		BUG("SHA-256 could not be started");
	for (size_t i = 0; i < n; i++) {
		const char *name = entries[i].name;
		if (!strcmp(name, ".") || !strcmp(name, "..") || is_excluded(name, excluded))
			continue;
		hasher_update_str(&h, name);
		hasher_update(&h, &entries[i].type, 1);
		if (detail) {
			buf_addch(detail, (char)entries[i].type);
			buf_add(detail, name, strlen(name) + 1);
		}
	}
	hasher_final(&h, &d);
	buf_addch(out, 'L');
	buf_add(out, d.b, DIGEST_LEN);
}
