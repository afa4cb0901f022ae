#include "cachet/ldcache.h"

#include <stdint.h>
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

int ldcache_valid(const void *image, size_t len)
{
	const unsigned char *data = image;
	if (len < CACHE_HEADER_LEN || memcmp(data, CACHE_MAGIC, CACHE_MAGIC_LEN) != 0)
		return 0;
	uint64_t nlibs = get_u32(data + CACHE_NLIBS_AT);
	if (nlibs > (len - CACHE_HEADER_LEN) / CACHE_ENTRY_LEN)
		return 0;
	/* A cache with one bad entry is no cache to this reader, whatever the
	 * loader makes of it. */
	for (uint64_t i = 0; i < nlibs; i++) {
		const unsigned char *e = data + CACHE_HEADER_LEN + i * CACHE_ENTRY_LEN;
		if (!string_at(data, len, get_u32(e + CACHE_ENTRY_KEY_AT)) ||
		    !string_at(data, len, get_u32(e + CACHE_ENTRY_VAL_AT)))
			return 0;
	}
	return 1;
}

void ldcache_lookup_valid(const void *image, size_t len, const char *soname, struct buf *out)
{
	(void)len;
	const unsigned char *data = image;
	const char *strings = image;
	uint64_t nlibs = get_u32(data + CACHE_NLIBS_AT);
	int found = 0;
	for (uint64_t i = 0; i < nlibs; i++) {
		const unsigned char *e = data + CACHE_HEADER_LEN + i * CACHE_ENTRY_LEN;
		uint32_t flags = get_u32(e);
#ifdef HOST_FLAGS
		if (flags != FLAG_ELF && flags != HOST_FLAGS)
			continue;
#endif
		if (strcmp(strings + get_u32(e + CACHE_ENTRY_KEY_AT), soname) != 0)
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
	if (!ldcache_valid(image, len))
		return -1;
	ldcache_lookup_valid(image, len, soname, out);
	return 0;
}
