#include "cachet/ldcache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* glibc's struct cache_file_new (elf/dl-cache.h): the magic and version,
 * then the counts, then the entries, each 24 bytes. The strings the
 * entries name are at offsets from the start of the file. */
#define CACHE_MAGIC        "glibc-ld.so.cache1.1"
#define CACHE_MAGIC_LEN    20
#define CACHE_HEADER_LEN   48
#define CACHE_ENTRY_LEN    24
#define CACHE_NLIBS_AT     20
#define CACHE_ENTRY_KEY_AT 4
#define CACHE_ENTRY_VAL_AT 8
#define CACHE_ENTRY_HWCAP  16

/* FLAG_ELF, which every loader takes, and the host's own kind
 * (_DL_CACHE_DEFAULT_ID); elsewhere every entry counts: keying more
 * entries than the loader may take costs hits, never a wrong one. */
#define FLAG_ELF 0x0001
#if defined(__x86_64__) && !defined(__ILP32__)
#define HOST_FLAGS 0x0303 /* FLAG_ELF_LIBC6 | FLAG_X8664_LIB64 */
#elif defined(__aarch64__)
#define HOST_FLAGS 0x0a03 /* FLAG_ELF_LIBC6 | FLAG_AARCH64_LIB64 */
#endif

static uint32_t get_u32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

/* The NUL-terminated string at offset off of the image, or NULL when it
 * does not end inside it. */
static const char *string_at(const unsigned char *data, size_t len, uint32_t off)
{
	if (off >= len || !memchr(data + off, '\0', len - off))
		return NULL;
	return (const char *)data + off;
}

int ldcache_index_init(struct ldcache_index *ix, const void *image, size_t len)
{
	const unsigned char *data = image;
	memset(ix, 0, sizeof *ix);
	if (len < CACHE_HEADER_LEN || memcmp(data, CACHE_MAGIC, CACHE_MAGIC_LEN) != 0)
		return -1;
	uint64_t nlibs = get_u32(data + CACHE_NLIBS_AT);
	if (nlibs > (len - CACHE_HEADER_LEN) / CACHE_ENTRY_LEN)
		return -1;
	uint32_t *key_len = xmalloc((nlibs ? nlibs : 1) * sizeof *key_len);
	/* A cache with one bad entry is no cache to this reader, whatever the
	 * loader makes of it. */
	for (uint64_t i = 0; i < nlibs; i++) {
		const unsigned char *e = data + CACHE_HEADER_LEN + i * CACHE_ENTRY_LEN;
		const char *key = string_at(data, len, get_u32(e + CACHE_ENTRY_KEY_AT));
		if (!key || !string_at(data, len, get_u32(e + CACHE_ENTRY_VAL_AT))) {
			free(key_len);
			return -1;
		}
		key_len[i] = (uint32_t)strlen(key);
	}
	ix->image = data;
	ix->n = (size_t)nlibs;
	ix->key_len = key_len;
	return 0;
}

void ldcache_index_free(struct ldcache_index *ix)
{
	free(ix->key_len);
	memset(ix, 0, sizeof *ix);
}

void ldcache_index_lookup(const struct ldcache_index *ix, const char *soname, struct buf *out)
{
	const unsigned char *data = ix->image;
	const char *strings = (const char *)data;
	size_t n = strlen(soname);
	int found = 0;
	for (size_t i = 0; i < ix->n; i++) {
		if (ix->key_len[i] != n)
			continue;
		const unsigned char *e = data + CACHE_HEADER_LEN + i * CACHE_ENTRY_LEN;
		uint32_t flags = get_u32(e);
#ifdef HOST_FLAGS
		if (flags != FLAG_ELF && flags != HOST_FLAGS)
			continue;
#endif
		if (memcmp(strings + get_u32(e + CACHE_ENTRY_KEY_AT), soname, n) != 0)
			continue;
		buf_addstr(out, found++ ? "; " : "");
		buf_addstr(out, strings + get_u32(e + CACHE_ENTRY_VAL_AT));
		uint64_t hwcap = get_u64(e + CACHE_ENTRY_HWCAP);
		if (hwcap)
			buf_addf(out, " (hwcap %#llx)", (unsigned long long)hwcap);
#ifndef HOST_FLAGS
		buf_addf(out, " (flags %#x)", flags);
#endif
	}
	if (!found)
		buf_addf(out, "%s not in the cache", soname);
}

int ldcache_lookup(const void *image, size_t len, const char *soname, struct buf *out)
{
	struct ldcache_index ix;
	if (ldcache_index_init(&ix, image, len) < 0)
		return -1;
	ldcache_index_lookup(&ix, soname, out);
	ldcache_index_free(&ix);
	return 0;
}
