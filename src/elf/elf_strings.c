/*
 * What the differing bytes of a string section or a note section say: the
 * strings that came or went (a __DATE__, a compiler's .comment, a directory
 * in .debug_line_str, nvcc's temporary file name in .strtab), and notes
 * decoded (both build IDs), so that nobody has to reach for readelf.
 */
#include "elf/compare_internal.h"

#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/array.h"

/* A string longer than this is shown cut ("…"): a section may hold a whole
 * command line. */
#define SHOWN_STRING_MAX 160

struct str {
	const unsigned char *p;
	size_t len;
};

static int str_cmp(const void *x, const void *y)
{
	const struct str *a = x, *b = y;
	size_t n = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->p, b->p, n);
	return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* The NUL-separated strings of a section, sorted (empty ones left out:
 * padding and the leading NUL of a string table). */
static struct str *split_strings(const unsigned char *p, size_t n, size_t *count)
{
	size_t cap = 16, k = 0;
	struct str *v = xcalloc(cap, sizeof *v);
	for (size_t i = 0; i < n;) {
		const unsigned char *end = memchr(p + i, 0, n - i);
		size_t len = end ? (size_t)(end - (p + i)) : n - i;
		if (len) {
			ARRAY_RESERVE(v, cap, k + 1, 16);
			v[k].p = p + i;
			v[k].len = len;
			k++;
		}
		i += len + 1;
	}
	qsort(v, k, sizeof *v, str_cmp);
	*count = k;
	return v;
}

/* A string quoted, with bytes that are not printable ASCII as \xNN. */
static void add_quoted(struct buf *out, const unsigned char *p, size_t len)
{
	size_t n = len > SHOWN_STRING_MAX ? SHOWN_STRING_MAX : len;
	buf_addch(out, '"');
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '"' || p[i] == '\\')
			buf_addf(out, "\\%c", p[i]);
		else if (p[i] >= 0x20 && p[i] < 0x7f)
			buf_addch(out, (char)p[i]);
		else
			buf_addf(out, "\\x%02x", p[i]);
	}
	buf_addstr(out, n < len ? "…\"" : "\"");
}

/* Appends "; strings only in A: …" and "; only in B: …" (a multiset
 * difference: a string that occurs once more in A counts). */
void strings_differ(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen,
                    size_t limit, struct buf *out)
{
	size_t na, nb;
	struct str *va = split_strings(a, alen, &na), *vb = split_strings(b, blen, &nb);
	struct buf only_a, only_b;
	buf_init(&only_a);
	buf_init(&only_b);
	size_t shown_a = 0, shown_b = 0, more_a = 0, more_b = 0;
	const struct str *last_a = NULL, *last_b = NULL;
	for (size_t i = 0, j = 0; i < na || j < nb;) {
		int c = i == na ? 1 : j == nb ? -1 : str_cmp(&va[i], &vb[j]);
		if (c == 0) {
			i++, j++;
			continue;
		}
		struct buf *to = c < 0 ? &only_a : &only_b;
		size_t *shown = c < 0 ? &shown_a : &shown_b, *more = c < 0 ? &more_a : &more_b;
		const struct str *s = c < 0 ? &va[i++] : &vb[j++];
		/* A string that came twice (.debug_line_str repeats the
		 * directory) is named once. */
		const struct str **prev = c < 0 ? &last_a : &last_b;
		if (*prev && !str_cmp(*prev, s))
			continue;
		*prev = s;
		if (*shown < limit) {
			if (*shown)
				buf_addstr(to, ", ");
			add_quoted(to, s->p, s->len);
			(*shown)++;
		} else {
			(*more)++;
		}
	}
	if (shown_a)
		buf_addf(out, "; strings only in A: %s", only_a.data);
	if (more_a)
		buf_addf(out, " and %zu more", more_a);
	if (shown_b)
		buf_addf(out, "; %s in B: %s", shown_a ? "only" : "strings only", only_b.data);
	if (more_b)
		buf_addf(out, " and %zu more", more_b);
	buf_free(&only_a);
	buf_free(&only_b);
	free(va);
	free(vb);
}

struct note {
	const char *name; /* points into the section data */
	size_t namesz;
	uint32_t type;
	const unsigned char *desc;
	size_t descsz;
	int paired;
};

static struct note *read_notes(Elf_Data *data, size_t *count)
{
	size_t cap = 8, k = 0, off = 0, name_off, desc_off;
	struct note *v = xcalloc(cap, sizeof *v);
	GElf_Nhdr nh;
	while (data && off < data->d_size &&
	       (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		ARRAY_RESERVE(v, cap, k + 1, 8);
		const char *base = data->d_buf;
		v[k].name = base + name_off;
		v[k].namesz = nh.n_namesz ? strnlen(v[k].name, nh.n_namesz) : 0;
		v[k].type = nh.n_type;
		v[k].desc = (const unsigned char *)base + desc_off;
		v[k].descsz = nh.n_descsz;
		v[k].paired = 0;
		k++;
	}
	*count = k;
	return v;
}

static void add_hex(struct buf *out, const unsigned char *p, size_t n)
{
	size_t shown = n > 64 ? 64 : n;
	for (size_t i = 0; i < shown; i++)
		buf_addf(out, "%02x", p[i]);
	if (shown < n)
		buf_addstr(out, "…");
}

static const char *note_label(const struct note *n, char *tmp, size_t cap)
{
	if (n->namesz == 3 && !memcmp(n->name, "GNU", 3) && n->type == NT_GNU_BUILD_ID)
		return "build-id";
	if (n->namesz == 3 && !memcmp(n->name, "GNU", 3) && n->type == NT_GNU_ABI_TAG)
		return "ABI tag";
	if (n->namesz == 3 && !memcmp(n->name, "GNU", 3) && n->type == NT_GNU_PROPERTY_TYPE_0)
		return "GNU property";
	snprintf(tmp, cap, "note %.*s type %u", (int)(n->namesz > 32 ? 32 : n->namesz), n->name,
	         (unsigned)n->type);
	return tmp;
}

/* Appends each note whose description differs, with both (a build-id as
 * both IDs), and the notes in one file only. */
void elf_notes_differ(Elf_Data *da, Elf_Data *db, struct buf *out)
{
	size_t na, nb;
	struct note *va = read_notes(da, &na), *vb = read_notes(db, &nb);
	char tmp[64];
	for (size_t i = 0; i < na; i++) {
		struct note *x = &va[i], *y = NULL;
		for (size_t j = 0; j < nb && !y; j++)
			if (!vb[j].paired && vb[j].type == x->type && vb[j].namesz == x->namesz &&
			    !memcmp(vb[j].name, x->name, x->namesz))
				y = &vb[j];
		const char *what = note_label(x, tmp, sizeof tmp);
		if (!y) {
			buf_addf(out, "; %s only in A", what);
			continue;
		}
		y->paired = x->paired = 1;
		if (x->descsz == y->descsz && !memcmp(x->desc, y->desc, x->descsz))
			continue;
		buf_addf(out, "; %s ", what);
		add_hex(out, x->desc, x->descsz);
		buf_addstr(out, " in A, ");
		add_hex(out, y->desc, y->descsz);
		buf_addstr(out, " in B");
	}
	for (size_t j = 0; j < nb; j++)
		if (!vb[j].paired)
			buf_addf(out, "; %s only in B", note_label(&vb[j], tmp, sizeof tmp));
	free(va);
	free(vb);
}

static int printable(unsigned char ch)
{
	return (ch >= 0x20 && ch < 0x7f) || ch == '\t';
}

/* The run of printable bytes around offset at, or 0 when it is shorter than
 * 4 (not text). */
static size_t text_run(const unsigned char *p, size_t n, size_t at, size_t *from)
{
	if (at >= n || !printable(p[at]))
		return 0;
	size_t s = at, e = at;
	while (s > 0 && printable(p[s - 1]))
		s--;
	while (e < n && printable(p[e]))
		e++;
	*from = s;
	return e - s >= 4 ? e - s : 0;
}

void text_at_difference(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen,
                        size_t at, struct buf *out)
{
	size_t fa = 0, fb = 0;
	size_t la = text_run(a, alen, at, &fa), lb = text_run(b, blen, at, &fb);
	if (!la || !lb)
		return;
	buf_addstr(out, "; text there: ");
	add_quoted(out, a + fa, la);
	buf_addstr(out, " in A, ");
	add_quoted(out, b + fb, lb);
	buf_addstr(out, " in B");
}
