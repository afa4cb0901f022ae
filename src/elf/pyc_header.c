/*
 * Python's compiled modules (.pyc): the 16-byte header (PEP 552) decoded,
 * because the usual difference between two .pyc files is there: the source
 * file's mtime, not the code.
 */
#include "elf/compare_internal.h"

#include <stdio.h>
#include <string.h>

/* Python 3.7 (magic 3390) and later write flags, then the source's mtime
 * and size or an 8-byte source hash. Older ones: mtime (and size, from 3.3)
 * right after the magic. */
#define PYC_FLAGS_MAGIC       3390
#define PYC_FLAG_HASH         1u
#define PYC_FLAG_CHECK_SOURCE 2u

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int pyc_is(const char *path, const unsigned char *p, size_t n)
{
	size_t len = strlen(path);
	return len > 4 && !strcmp(path + len - 4, ".pyc") && n >= 16 && p[2] == '\r' &&
	       p[3] == '\n';
}

static void add_hash(struct buf *out, const unsigned char *p)
{
	for (int i = 0; i < 8; i++)
		buf_addf(out, "%02x", p[i]);
}

void pyc_header_differs(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen,
                        struct buf *out)
{
	unsigned ma = a[0] | a[1] << 8, mb = b[0] | b[1] << 8;
	size_t ha = ma >= PYC_FLAGS_MAGIC ? 16 : 12, hb = mb >= PYC_FLAGS_MAGIC ? 16 : 12;
	if (ma != mb) {
		buf_addf(out, "pyc magic %u in A, %u in B (another Python); ", ma, mb);
		return;
	}
	uint32_t fa = ha == 16 ? le32(a + 4) : 0, fb = hb == 16 ? le32(b + 4) : 0;
	const unsigned char *ra = a + (ha == 16 ? 8 : 4), *rb = b + (hb == 16 ? 8 : 4);
	if (fa != fb)
		buf_addf(out, "pyc flags %s in A, %s in B; ",
		         fa & PYC_FLAG_HASH ? "hash-based" : "timestamp-based",
		         fb & PYC_FLAG_HASH ? "hash-based" : "timestamp-based");
	if ((fa & PYC_FLAG_HASH) && (fb & PYC_FLAG_HASH) && memcmp(ra, rb, 8)) {
		buf_addstr(out, "pyc source hash ");
		add_hash(out, ra);
		buf_addstr(out, " in A, ");
		add_hash(out, rb);
		buf_addstr(out, " in B; ");
	} else if (!(fa & PYC_FLAG_HASH) && !(fb & PYC_FLAG_HASH)) {
		if (le32(ra) != le32(rb)) {
			buf_addstr(out, "pyc source mtime ");
			compare_add_time(out, le32(ra));
			buf_addstr(out, " in A, ");
			compare_add_time(out, le32(rb));
			buf_addstr(out, " in B; ");
		}
		if (le32(ra + 4) != le32(rb + 4))
			buf_addf(out, "pyc source size %u in A, %u in B; ", (unsigned)le32(ra + 4),
			         (unsigned)le32(rb + 4));
	}
	if (alen - ha == blen - hb && !memcmp(a + ha, b + hb, alen - ha))
		buf_addstr(out, "the code is identical; ");
}
