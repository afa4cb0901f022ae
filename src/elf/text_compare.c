/*
 * A unified line diff (Myers' O(ND) algorithm) with bounds on both the work
 * and the output: a generated file that differs everywhere must not cost
 * quadratic memory, nor flood a terminal.
 *
 * Past MAX_EDITS the files are diffed in windows of MAX_EDITS / 2 lines, each
 * window resuming after the last line the previous one matched: still a
 * correct diff, and a readable one when the changes are spread out (a
 * timestamp on every line), but no longer a minimal one; the summary says so.
 */
#include "elf/compare_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/array.h"

#define CONTEXT 3
/* The search keeps (D+1)^2 positions: 1000 edits cost 8 MB. */
#define MAX_EDITS 1000

enum op { OP_EQ, OP_DEL, OP_INS };

struct line {
	const char *p;
	size_t len; /* with the newline, if it has one */
	uint64_t hash;
};

static size_t split_lines(const unsigned char *s, size_t n, struct line **out)
{
	size_t count = 0, alloc = 64;
	struct line *v = xmalloc(alloc * sizeof *v);
	for (size_t i = 0; i < n;) {
		const unsigned char *nl = memchr(s + i, '\n', n - i);
		size_t len = nl ? (size_t)(nl - (s + i)) + 1 : n - i;
		ARRAY_RESERVE(v, alloc, count + 1, 64);
		uint64_t h = 1469598103934665603ull; /* FNV-1a */
		for (size_t k = 0; k < len; k++)
			h = (h ^ s[i + k]) * 1099511628211ull;
		v[count++] = (struct line){(const char *)s + i, len, h};
		i += len;
	}
	*out = v;
	return count;
}

static int same(const struct line *x, const struct line *y)
{
	return x->hash == y->hash && x->len == y->len && !memcmp(x->p, y->p, x->len);
}

/* Shortest edit script from a[0..n) to b[0..m), written forwards into ops;
 * returns its length, or SIZE_MAX when it needs more than MAX_EDITS edits. */
static size_t myers(const struct line *a, long n, const struct line *b, long m, unsigned char *ops)
{
	long max = n + m < MAX_EDITS ? n + m : MAX_EDITS;
	long off = max + 1;
	long *v = xcalloc((size_t)(2 * max + 3), sizeof *v);
	/* trace holds v[-d..d] after round d, at offset d*d. */
	long *trace = xmalloc((size_t)(max + 1) * (size_t)(max + 1) * sizeof *trace);
	long found = -1;
	for (long d = 0; d <= max && found < 0; d++) {
		for (long k = -d; k <= d; k += 2) {
			long x;
			if (k == -d || (k != d && v[off + k - 1] < v[off + k + 1]))
				x = v[off + k + 1];
			else
				x = v[off + k - 1] + 1;
			long y = x - k;
			while (x < n && y < m && same(&a[x], &b[y]))
				x++, y++;
			v[off + k] = x;
			if (x >= n && y >= m) {
				found = d;
				break;
			}
		}
		memcpy(trace + d * d, v + off - d, (size_t)(2 * d + 1) * sizeof *v);
	}
	free(v);
	if (found < 0) {
		free(trace);
		return SIZE_MAX;
	}
	/* Walk back from (n, m), writing the script from its end. */
	size_t len = (size_t)(n + m), pos = len;
	long x = n, y = m;
	for (long d = found; d > 0; d--) {
		const long *vp = trace + (d - 1) * (d - 1) + (d - 1); /* vp[k], |k| < d */
		long k = x - y;
		long pk = (k == -d || (k != d && vp[k - 1] < vp[k + 1])) ? k + 1 : k - 1;
		long px = vp[pk], py = px - pk;
		while (x > px && y > py) {
			ops[--pos] = OP_EQ;
			x--, y--;
		}
		if (x == px) {
			ops[--pos] = OP_INS;
			y--;
		} else {
			ops[--pos] = OP_DEL;
			x--;
		}
	}
	while (x > 0 && y > 0) {
		ops[--pos] = OP_EQ;
		x--, y--;
	}
	free(trace);
	/* The script is shorter than n + m by the number of equal lines. */
	memmove(ops, ops + pos, len - pos);
	return len - pos;
}

/* The fallback past MAX_EDITS: Myers over windows small enough to always
 * succeed. A window's script is kept up to its last equal line, so that the
 * next window starts in step with both files. Returns the script's length. */
static size_t windowed(const struct line *a, size_t n, const struct line *b, size_t m,
                       unsigned char *ops)
{
	const size_t w = MAX_EDITS / 2;
	unsigned char *tmp = xmalloc(2 * w + 1);
	size_t x = 0, y = 0, len = 0;
	while (x < n || y < m) {
		size_t wa = n - x < w ? n - x : w, wb = m - y < w ? m - y : w;
		size_t k = myers(a + x, (long)wa, b + y, (long)wb, tmp);
		size_t keep = k;
		if (x + wa < n || y + wb < m) {
			size_t last = k;
			for (size_t i = 0; i < k; i++)
				if (tmp[i] == OP_EQ)
					last = i;
			if (last < k)
				keep = last + 1;
		}
		for (size_t i = 0; i < keep; i++) {
			x += tmp[i] != OP_INS;
			y += tmp[i] != OP_DEL;
		}
		memcpy(ops + len, tmp, keep);
		len += keep;
	}
	free(tmp);
	return len;
}

/* Output with a line budget; past it lines are only counted. */
struct out {
	struct buf *b;
	size_t max, lines, cut;
};

static void emit(struct out *o, char prefix, const struct line *l)
{
	int eol = l->len && l->p[l->len - 1] == '\n';
	size_t need = eol ? 1 : 2; /* "\ No newline at end of file" */
	for (size_t i = 0; i < need; i++) {
		if (o->lines >= o->max) {
			o->cut++;
			continue;
		}
		o->lines++;
		if (i == 0) {
			buf_addch(o->b, prefix);
			buf_add(o->b, l->p, l->len);
			if (!eol)
				buf_addch(o->b, '\n');
		} else {
			buf_addstr(o->b, "\\ No newline at end of file\n");
		}
	}
}

static void emit_text(struct out *o, const char *s)
{
	if (o->lines >= o->max) {
		o->cut++;
		return;
	}
	o->lines++;
	buf_addstr(o->b, s);
}

static void range(struct buf *b, size_t start, size_t count)
{
	/* GNU diff: an empty range names the line before it; ",1" is implied. */
	if (count == 0)
		buf_addf(b, "%zu,0", start);
	else if (count == 1)
		buf_addf(b, "%zu", start + 1);
	else
		buf_addf(b, "%zu,%zu", start + 1, count);
}

static void write_hunks(const unsigned char *ops, size_t nops, const struct line *a,
                        const struct line *b, struct out *o)
{
	size_t i = 0, la = 0, lb = 0; /* lines of A and B before ops[i] */
	while (i < nops) {
		if (ops[i] == OP_EQ) {
			i++, la++, lb++;
			continue;
		}
		/* A change at i: back up over the context, then extend over
		 * changes separated by at most 2 * CONTEXT equal lines. */
		size_t back = 0;
		while (back < CONTEXT && back < i && ops[i - back - 1] == OP_EQ)
			back++;
		size_t start = i - back, sa = la - back, sb = lb - back;
		size_t end = i;
		for (;;) {
			while (end < nops && ops[end] != OP_EQ)
				end++;
			size_t run = 0;
			while (end + run < nops && ops[end + run] == OP_EQ)
				run++;
			if (end + run == nops || run > 2 * CONTEXT) {
				end += run < CONTEXT ? run : CONTEXT;
				break;
			}
			end += run;
		}
		size_t ca = 0, cb = 0;
		for (size_t k = start; k < end; k++) {
			ca += ops[k] != OP_INS;
			cb += ops[k] != OP_DEL;
		}
		struct buf h;
		buf_init(&h);
		buf_addstr(&h, "@@ -");
		range(&h, sa, ca);
		buf_addstr(&h, " +");
		range(&h, sb, cb);
		buf_addstr(&h, " @@\n");
		emit_text(o, h.data);
		buf_free(&h);
		size_t xa = sa, xb = sb;
		for (size_t k = start; k < end; k++) {
			if (ops[k] == OP_EQ)
				emit(o, ' ', &a[xa++]), xb++;
			else if (ops[k] == OP_DEL)
				emit(o, '-', &a[xa++]);
			else
				emit(o, '+', &b[xb++]);
		}
		i = end, la = xa, lb = xb;
	}
}

void text_compare(struct cmp_ctx *c, size_t entry, const char *label_a, const char *label_b,
                  const unsigned char *a, size_t alen, const unsigned char *b, size_t blen)
{
	struct line *la, *lb;
	size_t n = split_lines(a, alen, &la), m = split_lines(b, blen, &lb);
	size_t pre = 0, suf = 0;
	while (pre < n && pre < m && same(&la[pre], &lb[pre]))
		pre++;
	while (suf < n - pre && suf < m - pre && same(&la[n - 1 - suf], &lb[m - 1 - suf]))
		suf++;
	unsigned char *ops = xmalloc(n + m + 1);
	memset(ops, OP_EQ, pre);
	size_t mid =
	    myers(la + pre, (long)(n - pre - suf), lb + pre, (long)(m - pre - suf), ops + pre);
	int minimal = mid != SIZE_MAX;
	if (!minimal)
		mid = windowed(la + pre, n - pre - suf, lb + pre, m - pre - suf, ops + pre);
	size_t nops = pre + mid + suf;
	memset(ops + pre + mid, OP_EQ, suf);
	size_t removed = 0, added = 0;
	for (size_t i = 0; i < nops; i++) {
		removed += ops[i] == OP_DEL;
		added += ops[i] == OP_INS;
	}

	struct buf diff;
	buf_init(&diff);
	struct out o = {&diff, c->max_diff_lines, 0, 0};
	char *hdr = xasprintf("--- %s\n", label_a);
	emit_text(&o, hdr);
	free(hdr);
	hdr = xasprintf("+++ %s\n", label_b);
	emit_text(&o, hdr);
	free(hdr);
	write_hunks(ops, nops, la, lb, &o);
	if (o.cut)
		buf_addf(&diff, "... %zu more line%s\n", o.cut, o.cut == 1 ? "" : "s");
	struct compare_entry *en = &c->rep->entries[entry];
	free(en->diff);
	en->diff = buf_detach(&diff, NULL);

	char note[64] = "";
	if (!minimal)
		snprintf(note, sizeof note, " (not a minimal diff: over %d edits)", MAX_EDITS);
	struct buf what;
	buf_init(&what);
	if (removed)
		buf_addf(&what, "%zu line%s removed", removed, removed == 1 ? "" : "s");
	if (removed && added)
		buf_addf(&what, ", %zu added", added);
	else if (added)
		buf_addf(&what, "%zu line%s added", added, added == 1 ? "" : "s");
	struct compare_item *it =
	    report_add_item(c->rep, entry, CMP_TEXT_DIFFERS, "", "text differs from line %zu: %s%s",
	                    pre + 1, what.data, note);
	buf_free(&what);
	it->have = CMP_HAVE_OFFSET;
	it->offset = pre < n ? (uint64_t)(la[pre].p - (const char *)a) : (uint64_t)alen;
	free(ops);
	free(la);
	free(lb);
}
