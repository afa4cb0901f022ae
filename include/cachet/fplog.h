/*
 * The fingerprints a run used: a digest cache in front of the index's (or
 * of none), which remembers every (path, file id, digest) it answered or
 * was told, so that the run can leave them in the step's memo. Loaded from
 * a memo, it answers the hit path without the index.
 */
#ifndef CACHET_FPLOG_H
#define CACHET_FPLOG_H

#include <stddef.h>

#include "cachet/observe.h"
#include "cachet/store.h"
#include "cachet/strmap.h"

struct fplog {
	struct strmap map;         /* path -> struct fplog_entry */
	struct strmap noted;       /* path -> struct fplog_entry: dc.note's, never kept */
	struct digest_cache inner; /* asked on a miss here; get NULL: none */
	struct digest_cache dc;    /* what the run hashes through */
	size_t added;              /* entries learnt in this process */
	/* The entries fplog_load added, in one block (a memo's hundred
	 * fingerprints were a calloc and a free each on every hit); map's
	 * other values are allocations of their own. */
	struct fplog_entry *loaded;
	size_t nloaded;
};

void fplog_init(struct fplog *l);
void fplog_free(struct fplog *l);
/* Trusts the memo's fingerprints as the index's are trusted: by file id. */
void fplog_load(struct fplog *l, const struct store_memo *m);
/* Asks (and tells) inner from now on. */
void fplog_set_inner(struct fplog *l, const struct digest_cache *inner);
/* The entries this process used (answered or learnt), for a memo: an
 * array of *n entries pointing into l (free with free()). */
struct store_memo_fp *fplog_used(const struct fplog *l, size_t *n);
/* path is about to change (a hit restores it): its fingerprint, which its
 * next run cannot use, is not left in the memo, and learnt in this
 * process it makes no reason to write one. */
void fplog_forget(struct fplog *l, const char *path);

#endif
