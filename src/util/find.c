#include "cachet/find.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"

void finder_init(struct finder *f, const char *const *needles, size_t n)
{
	memset(f, 0, sizeof *f);
	for (size_t i = 0; i < n && i < FINDER_MAX; i++) {
		if (!needles[i] || !needles[i][0])
			continue;
		f->needle[i] = needles[i];
		f->len[i] = strlen(needles[i]);
		f->want |= 1ull << i;
		if (f->len[i] > f->longest)
			f->longest = f->len[i];
	}
	/* The seam holds up to longest - 1 bytes of each side of a boundary:
	 * a longer run on either side holds a whole match, found there. */
	if (f->longest > 1)
		f->seam = xmalloc(2 * (f->longest - 1));
}

/* memmem for each needle in mask: linear in the worst case. */
static void search_each(struct finder *f, uint64_t mask, const unsigned char *p, size_t len)
{
	for (int i = 0; i < FINDER_MAX; i++)
		if ((mask & (1ull << i)) && len >= f->len[i] &&
		    memmem(p, len, f->needle[i], f->len[i]))
			f->found |= 1ull << i;
}

/* One memchr pass per first byte that a needle still missing starts with
 * (paths: all start with '/'), then a compare where it occurs: memchr runs
 * at memory speed, and a binary holds a '/' every thousand bytes or so,
 * while memmem makes one slower pass per needle (measured: a quarter of
 * SHA-256's time for two needles, against a tenth). Bytes dense with the
 * first byte ("////", a path repeated) would make the compares quadratic:
 * there memmem takes over. */
static void search(struct finder *f, const unsigned char *p, size_t len)
{
	uint64_t todo = f->want & ~f->found;
	const unsigned char *end = p + len;
	while (todo) {
		int first = __builtin_ctzll(todo);
		unsigned char c = (unsigned char)f->needle[first][0];
		uint64_t same = 0; /* the missing needles that start with c */
		for (int i = first; i < FINDER_MAX; i++)
			if ((todo & (1ull << i)) && (unsigned char)f->needle[i][0] == c)
				same |= 1ull << i;
		todo &= ~same;
		size_t budget = len / 16 + 64;
		const unsigned char *q = p;
		for (; same && (q = memchr(q, c, (size_t)(end - q))); q++) {
			if (!budget--) {
				search_each(f, same, q, (size_t)(end - q));
				break;
			}
			for (int i = first; i < FINDER_MAX; i++)
				if ((same & (1ull << i)) && (size_t)(end - q) >= f->len[i] &&
				    (f->len[i] < 2 || q[1] == (unsigned char)f->needle[i][1]) &&
				    !memcmp(q, f->needle[i], f->len[i])) {
					f->found |= 1ull << i;
					same &= ~(1ull << i);
				}
		}
	}
}

void finder_feed(struct finder *f, const void *data, size_t len)
{
	const unsigned char *p = data;
	if (f->found == f->want || !len)
		return;
	if (!f->seam) {
		search(f, p, len);
		return;
	}
	size_t keep = f->longest - 1;
	if (f->tail) {
		size_t head = len < keep ? len : keep;
		memcpy(f->seam + f->tail, p, head);
		search(f, f->seam, f->tail + head);
	}
	search(f, p, len);
	/* The last keep bytes of everything so far start the next seam. */
	if (len >= keep) {
		memcpy(f->seam, p + len - keep, keep);
		f->tail = keep;
	} else {
		/* Short chunk: the seam already holds it after the old tail. */
		if (!f->tail)
			memcpy(f->seam, p, len);
		size_t total = f->tail + len;
		if (total > keep) {
			memmove(f->seam, f->seam + total - keep, keep);
			total = keep;
		}
		f->tail = total;
	}
}

void finder_free(struct finder *f)
{
	free(f->seam);
	memset(f, 0, sizeof *f);
}
