/*
 * What the dynamic loader's cache (/etc/ld.so.cache, written by ldconfig)
 * maps a soname to: the part of the file a step's loader used, rather than
 * its bytes, which every package install rewrites.
 */
#ifndef CACHET_LDCACHE_H
#define CACHET_LDCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "cachet/buf.h"

#define LDCACHE_PATH "/etc/ld.so.cache"

/* Appends to out what the cache image (data, len bytes) maps soname to: the
 * paths of every entry for it that this host's loader may take, in the
 * file's order, each with the hardware capabilities it asks for (the
 * loader picks among them), or "SONAME not in the cache". 0; -1 (out
 * unchanged) when the image is not a cache of the format glibc 2.32 and
 * later write ("glibc-ld.so.cache1.1") or any part of it lies outside the
 * image: then the loader reads no mapping from it either, and the caller
 * gives a value no mapping can equal. */
int ldcache_lookup(const void *data, size_t len, const char *soname, struct buf *out);

/* ldcache_lookup in two parts, for a reader that asks one image for many
 * sonames: the image checked once, over every entry, with the length of
 * each entry's name kept, so that a lookup compares the names of that
 * length only (a cache holds hundreds of names, and a step's loaders ask
 * for a dozen). */
struct ldcache_index {
	const unsigned char *image; /* the caller's, which it keeps */
	size_t n;
	uint32_t *key_len;
};

/* 0, or -1 (ix empty) where ldcache_lookup would give -1. */
int ldcache_index_init(struct ldcache_index *ix, const void *image, size_t len);
/* What ldcache_lookup appends for soname. */
void ldcache_index_lookup(const struct ldcache_index *ix, const char *soname, struct buf *out);
void ldcache_index_free(struct ldcache_index *ix);

#endif
