/*
 * `ar` archives member by member, through libelf's archive reader: members
 * only in one, member headers, and each member's contents compared like a
 * file (so an ELF member gets the ELF comparison, nested under the member).
 *
 * The long-name table ("//") is skipped: it follows from the members. The
 * symbol index ("/") is compared on its own (its header's date; the symbol
 * names it lists when every member is the same, since it follows from them
 * otherwise), since a tool that writes it nondeterministically leaves every
 * member identical.
 * A name that appears twice (two "util.o" from different directories) is
 * matched in order of appearance.
 */
#include "elf/compare_internal.h"

#include <ar.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/array.h"

struct member {
	char *name;
	const unsigned char *data;
	size_t size;
	long long date;
	unsigned uid, gid, mode;
};

struct archive {
	struct member *m;
	size_t n, alloc;
	struct member index; /* "/" or "/SYM64/"; name NULL when absent */
	char err[256];
};

static void archive_free(struct archive *ar)
{
	for (size_t i = 0; i < ar->n; i++)
		free(ar->m[i].name);
	free(ar->m);
	free(ar->index.name);
}

static int is_index(const char *name)
{
	return !strcmp(name, "/") || !strcmp(name, "//") || !strcmp(name, "/SYM64/");
}

/* The ar_size field of the header before the member data at raw, or
 * UINT64_MAX when it is not there or not a number. */
static uint64_t header_size(const unsigned char *image, const unsigned char *raw)
{
	const size_t hsize = sizeof(struct ar_hdr);
	if (raw < image || (size_t)(raw - image) < SARMAG + hsize)
		return UINT64_MAX;
	const struct ar_hdr *h = (const struct ar_hdr *)(raw - hsize);
	uint64_t v = 0;
	size_t i = 0;
	for (; i < sizeof h->ar_size && h->ar_size[i] >= '0' && h->ar_size[i] <= '9'; i++)
		v = v * 10 + (uint64_t)(h->ar_size[i] - '0');
	if (i == 0)
		return UINT64_MAX;
	for (; i < sizeof h->ar_size; i++)
		if (h->ar_size[i] != ' ')
			return UINT64_MAX;
	return v;
}

static int archive_load(struct archive *ar, const unsigned char *image, size_t size)
{
	memset(ar, 0, sizeof *ar);
	/* libelf only reads the image; see elf_compare.c. */
	Elf *top = elf_memory((char *)image, size);
	if (!top || elf_kind(top) != ELF_K_AR) {
		snprintf(ar->err, sizeof ar->err, "not an archive: %s", elf_errmsg(-1));
		if (top)
			elf_end(top);
		return -1;
	}
	/* libelf ends the walk with a NULL and an error ("offset out of range")
	 * whether the archive ended or a member header is broken, so the walk
	 * must reach the end of the image to count as complete. */
	size_t covered = SARMAG;
	Elf_Cmd cmd = ELF_C_READ_MMAP;
	Elf *mem;
	int rc = 0;
	while ((mem = elf_begin(-1, cmd, top)) != NULL) {
		Elf_Arhdr *h = elf_getarhdr(mem);
		size_t n = 0;
		const unsigned char *raw = (const unsigned char *)elf_rawfile(mem, &n);
		if (!h || !h->ar_name) {
			snprintf(ar->err, sizeof ar->err, "member header: %s", elf_errmsg(-1));
			rc = -1;
		} else if (raw && header_size(image, raw) != n) {
			/* libelf cuts a member short at the end of the image and
			 * rewrites ar_size to match: read the header's own field. */
			snprintf(ar->err, sizeof ar->err,
			         "member %s is truncated: %zu of %llu bytes", h->ar_name, n,
			         (unsigned long long)header_size(image, raw));
			rc = -1;
		} else if (n && (!raw || raw < image || raw > image + size ||
		                 n > (size_t)(image + size - raw))) {
			/* libelf checks this too; a member outside the image must
			 * never reach a comparison. */
			snprintf(ar->err, sizeof ar->err, "member %s extends past the end",
			         h->ar_name);
			rc = -1;
		} else {
			if (raw && raw >= image && raw <= image + size &&
			    (size_t)(raw - image) + n > covered)
				covered = (size_t)(raw - image) + n;
			if (is_index(h->ar_name) && strcmp(h->ar_name, "//") && !ar->index.name) {
				ar->index = (struct member){
				    xstrdup(h->ar_name),   n ? raw : image,     n,
				    (long long)h->ar_date, (unsigned)h->ar_uid, (unsigned)h->ar_gid,
				    (unsigned)h->ar_mode,
				};
			} else if (!is_index(h->ar_name)) {
				ARRAY_RESERVE(ar->m, ar->alloc, ar->n + 1, 16);
				ar->m[ar->n++] = (struct member){
				    xstrdup(h->ar_name),   n ? raw : image,     n,
				    (long long)h->ar_date, (unsigned)h->ar_uid, (unsigned)h->ar_gid,
				    (unsigned)h->ar_mode,
				};
			}
		}
		cmd = elf_next(mem);
		elf_end(mem);
		if (rc < 0)
			break;
	}
	/* Members are padded to an even offset. */
	if (rc == 0 && covered + (covered & 1) < size) {
		snprintf(ar->err, sizeof ar->err, "no readable member header at offset %zu",
		         covered + (covered & 1));
		rc = -1;
	}
	elf_end(top);
	return rc;
}

static void compare_headers(struct cmp_ctx *c, size_t entry, const struct member *a,
                            const struct member *b)
{
	struct buf d;
	buf_init(&d);
	if (a->date != b->date) {
		buf_addstr(&d, ", date ");
		compare_add_time(&d, a->date);
		buf_addstr(&d, " in A, ");
		compare_add_time(&d, b->date);
		buf_addstr(&d, " in B");
	}
	if (a->uid != b->uid)
		buf_addf(&d, ", uid %u in A, %u in B", a->uid, b->uid);
	if (a->gid != b->gid)
		buf_addf(&d, ", gid %u in A, %u in B", a->gid, b->gid);
	if (a->mode != b->mode)
		buf_addf(&d, ", mode %o in A, %o in B", a->mode, b->mode);
	if (d.len)
		report_add_item(c->rep, entry, CMP_MEMBER_HEADER_DIFFERS, a->name,
		                "member %s header differs: %s", a->name, d.data + 2);
	buf_free(&d);
}

/* The names a GNU symbol index lists: after the count and one offset per
 * symbol (4 bytes each for "/", 8 for "/SYM64/"), the NUL-terminated names. */
static const unsigned char *index_names(const struct member *m, size_t *len)
{
	size_t w = strcmp(m->name, "/") ? 8 : 4;
	if (m->size < w)
		return NULL;
	uint64_t n = 0;
	for (size_t i = 0; i < w; i++)
		n = n << 8 | m->data[i];
	if (n > (m->size - w) / w)
		return NULL;
	*len = m->size - w - (size_t)n * w;
	return m->data + w + (size_t)n * w;
}

/* members_differ: a member came, went or changed; the index lists the
 * symbols the members define, so its contents would only repeat that. */
static void compare_index(struct cmp_ctx *c, size_t entry, const struct member *a,
                          const struct member *b, int members_differ)
{
	if (!a->name || !b->name) {
		if (a->name || b->name)
			report_add_item(
			    c->rep, entry, a->name ? CMP_MEMBER_MISSING_IN_B : CMP_MEMBER_ONLY_IN_B,
			    "/", "the symbol index %s", a->name ? "missing in B" : "only in B");
		return;
	}
	compare_headers(c, entry, a, b);
	if (members_differ || (a->size == b->size && !memcmp(a->data, b->data, a->size)))
		return;
	struct buf d;
	buf_init(&d);
	size_t la = 0, lb = 0;
	const unsigned char *na = index_names(a, &la), *nb = index_names(b, &lb);
	if (na && nb)
		strings_differ(na, la, nb, lb, c->rep->list_limit, &d);
	if (!d.len)
		buf_addstr(&d, "; the same symbols at other member offsets");
	struct compare_item *it = report_add_item(
	    c->rep, entry, CMP_MEMBER_DIFFERS, "/",
	    "the symbol index differs (%zu bytes in A, %zu in B)%s", a->size, b->size, d.data);
	it->have = CMP_HAVE_SIZE_A | CMP_HAVE_SIZE_B;
	it->size_a = a->size;
	it->size_b = b->size;
	buf_free(&d);
}

static void member_alone(struct cmp_ctx *c, size_t entry, const struct member *m, int in_a)
{
	struct compare_item *it = report_add_item(
	    c->rep, entry, in_a ? CMP_MEMBER_MISSING_IN_B : CMP_MEMBER_ONLY_IN_B, m->name,
	    "member %s %s (%zu bytes)", m->name, in_a ? "missing in B" : "only in B", m->size);
	it->have = in_a ? CMP_HAVE_SIZE_A : CMP_HAVE_SIZE_B;
	if (in_a)
		it->size_a = m->size;
	else
		it->size_b = m->size;
}

static int same_order(const struct archive *a, const struct archive *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->m[i].name, b->m[i].name) != 0)
			return 0;
	return 1;
}

int ar_compare(struct cmp_ctx *c, size_t entry, const unsigned char *a, size_t alen,
               const unsigned char *b, size_t blen)
{
	struct archive aa, ab;
	int ra = archive_load(&aa, a, alen);
	int rb = archive_load(&ab, b, blen);
	if (ra < 0)
		report_add_item(c->rep, entry, CMP_UNREADABLE, "A",
		                "A is not a readable archive (%s)", aa.err);
	if (rb < 0)
		report_add_item(c->rep, entry, CMP_UNREADABLE, "B",
		                "B is not a readable archive (%s)", ab.err);
	if (ra < 0 || rb < 0) {
		archive_free(&aa);
		archive_free(&ab);
		return -1;
	}
	const struct compare_entry *en = &c->rep->entries[entry];
	char *path = xstrdup(en->path);
	unsigned depth = en->depth;
	const char **na = xcalloc(aa.n + 1, sizeof *na), **nb = xcalloc(ab.n + 1, sizeof *nb);
	size_t *pa = xcalloc(aa.n + 1, sizeof *pa), *pb = xcalloc(ab.n + 1, sizeof *pb);
	for (size_t i = 0; i < aa.n; i++)
		na[i] = aa.m[i].name;
	for (size_t i = 0; i < ab.n; i++)
		nb[i] = ab.m[i].name;
	match_names(na, NULL, aa.n, nb, NULL, ab.n, pa, pb);
	for (size_t i = 0; i < aa.n; i++) {
		const struct member *ma = &aa.m[i];
		if (pa[i] == SIZE_MAX) {
			member_alone(c, entry, ma, 1);
			continue;
		}
		const struct member *mb = &ab.m[pa[i]];
		compare_headers(c, entry, ma, mb);
		compare_member(c, entry, path, depth, ma->name, ma->data, ma->size, mb->data,
		               mb->size);
	}
	for (size_t i = 0; i < ab.n; i++)
		if (pb[i] == SIZE_MAX)
			member_alone(c, entry, &ab.m[i], 0);
	int members_differ = 0;
	for (size_t i = 0; i < c->rep->entries[entry].nitems; i++)
		members_differ |= c->rep->entries[entry].items[i].kind != CMP_MEMBER_HEADER_DIFFERS;
	compare_index(c, entry, &aa.index, &ab.index, members_differ);
	if (!c->rep->entries[entry].nitems && !same_order(&aa, &ab))
		report_add_item(c->rep, entry, CMP_MEMBER_ORDER_DIFFERS, "",
		                "the same members in a different order");
	free(na), free(nb), free(pa), free(pb);
	free(path);
	archive_free(&aa);
	archive_free(&ab);
	return 0;
}
