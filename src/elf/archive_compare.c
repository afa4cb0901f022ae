/*
 * Tarballs, zip files, cpio and compressed streams (gzip, xz, bzip2, zstd)
 * member by member, through libarchive in a plugin (archive_plugin.h):
 * members only in one, each member's metadata (type, link target, mode,
 * mtime, owner), and each member's contents compared like a file (so an
 * ELF object inside a tarball gets the ELF comparison). A bare compressed
 * stream is one member, named and dated as its header says (gzip writes
 * the file's name and mtime by default).
 */
#include "elf/compare_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/archive_plugin.h"

/* A member larger than this is compared as "too large" (unreadable). */
#define MAX_MEMBER_BYTES ((size_t)1 << 30)

static const struct archive_ops *plugin_ops(const char *path)
{
	return compare_plugin(path, ARCHIVE_PLUGIN_SYMBOL);
}

int archive_is(const struct cmp_ctx *c, const unsigned char *p, size_t n)
{
	static const struct {
		size_t at, len;
		const char *magic;
	} kinds[] = {
	    {0, 2, "\x1f\x8b"}, /* gzip */
	    {0, 3, "BZh"},      /* bzip2 */
	    {0, 6,
	     "\xfd"
	     "7zXZ\0"},                   /* xz */
	    {0, 4, "\x28\xb5\x2f\xfd"},   /* zstd */
	    {0, 4, "PK\x03\x04"},         /* zip */
	    {0, 4, "PK\x05\x06"},         /* empty zip */
	    {0, 6, "7z\xbc\xaf\x27\x1c"}, /* 7z */
	    {0, 6, "070701"},             /* cpio (newc) */
	    {0, 6, "070707"},             /* cpio (odc) */
	    {257, 5, "ustar"},            /* tar */
	};
	if (!c->archive_plugin)
		return 0;
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
		if (n >= kinds[i].at + kinds[i].len &&
		    !memcmp(p + kinds[i].at, kinds[i].magic, kinds[i].len))
			return plugin_ops(c->archive_plugin) != NULL;
	return 0;
}

static const char *type_word(char t)
{
	switch (t) {
	case 'f':
		return "file";
	case 'd':
		return "directory";
	case 'l':
		return "symlink";
	case 'h':
		return "hard link";
	default:
		return "special file";
	}
}

static int same_str(const char *x, const char *y)
{
	return (!x && !y) || (x && y && !strcmp(x, y));
}

static void compare_metadata(struct cmp_ctx *c, size_t entry, const struct archive_member *a,
                             const struct archive_member *b)
{
	struct buf d;
	buf_init(&d);
	if (strcmp(a->name, b->name))
		buf_addf(&d, ", name %s in A, %s in B", a->name, b->name);
	if (a->type != b->type)
		buf_addf(&d, ", %s in A, %s in B", type_word(a->type), type_word(b->type));
	if (!same_str(a->link, b->link))
		buf_addf(&d, ", link to %s in A, to %s in B", a->link ? a->link : "(none)",
		         b->link ? b->link : "(none)");
	if (a->mode != b->mode)
		buf_addf(&d, ", mode %04o in A, %04o in B", a->mode, b->mode);
	if (a->has_mtime != b->has_mtime || (a->has_mtime && a->mtime != b->mtime)) {
		buf_addstr(&d, ", mtime ");
		compare_add_time(&d, a->has_mtime ? a->mtime : -1);
		buf_addstr(&d, " in A, ");
		compare_add_time(&d, b->has_mtime ? b->mtime : -1);
		buf_addstr(&d, " in B");
	}
	if (a->uid != b->uid)
		buf_addf(&d, ", uid %lld in A, %lld in B", (long long)a->uid, (long long)b->uid);
	if (a->gid != b->gid)
		buf_addf(&d, ", gid %lld in A, %lld in B", (long long)a->gid, (long long)b->gid);
	if (!same_str(a->uname, b->uname))
		buf_addf(&d, ", user %s in A, %s in B", a->uname ? a->uname : "(none)",
		         b->uname ? b->uname : "(none)");
	if (!same_str(a->gname, b->gname))
		buf_addf(&d, ", group %s in A, %s in B", a->gname ? a->gname : "(none)",
		         b->gname ? b->gname : "(none)");
	if (d.len)
		report_add_item(c->rep, entry, CMP_MEMBER_HEADER_DIFFERS, a->name,
		                "member %s header differs: %s", a->name, d.data + 2);
	buf_free(&d);
}

static void member_alone(struct cmp_ctx *c, size_t entry, const struct archive_member *m, int in_a)
{
	struct compare_item *it =
	    report_add_item(c->rep, entry, in_a ? CMP_MEMBER_MISSING_IN_B : CMP_MEMBER_ONLY_IN_B,
	                    m->name, "member %s %s (%s, %zu bytes)", m->name,
	                    in_a ? "missing in B" : "only in B", type_word(m->type), m->size);
	it->have = in_a ? CMP_HAVE_SIZE_A : CMP_HAVE_SIZE_B;
	if (in_a)
		it->size_a = m->size;
	else
		it->size_b = m->size;
}

int archive_compare(struct cmp_ctx *c, size_t entry, const unsigned char *a, size_t alen,
                    const unsigned char *b, size_t blen)
{
	const struct archive_ops *ops = plugin_ops(c->archive_plugin);
	char wa[256] = "", wb[256] = "";
	struct archive_listing *la =
	    ops ? ops->read(a, alen, MAX_MEMBER_BYTES, wa, sizeof wa) : NULL;
	struct archive_listing *lb =
	    ops ? ops->read(b, blen, MAX_MEMBER_BYTES, wb, sizeof wb) : NULL;
	if (!la)
		report_add_item(c->rep, entry, CMP_UNREADABLE, "A",
		                "A is not a readable archive (%s)",
		                ops ? wa : "the archive plugin is not installed");
	if (!lb)
		report_add_item(c->rep, entry, CMP_UNREADABLE, "B",
		                "B is not a readable archive (%s)",
		                ops ? wb : "the archive plugin is not installed");
	if (!la || !lb) {
		if (ops) {
			ops->free(la);
			ops->free(lb);
		}
		return -1;
	}
	if (strcmp(la->format, lb->format) || strcmp(la->filter, lb->filter))
		report_add_item(c->rep, entry, CMP_MEMBER_HEADER_DIFFERS, "format",
		                "archive format %s (%s) in A, %s (%s) in B", la->format, la->filter,
		                lb->format, lb->filter);
	const struct compare_entry *en = &c->rep->entries[entry];
	char *path = xstrdup(en->path);
	unsigned depth = en->depth;
	const char **na = xcalloc(la->n + 1, sizeof *na), **nb = xcalloc(lb->n + 1, sizeof *nb);
	size_t *pa = xcalloc(la->n + 1, sizeof *pa), *pb = xcalloc(lb->n + 1, sizeof *pb);
	for (size_t i = 0; i < la->n; i++)
		na[i] = la->members[i].name;
	for (size_t i = 0; i < lb->n; i++)
		nb[i] = lb->members[i].name;
	match_names(na, NULL, la->n, nb, NULL, lb->n, pa, pb);
	/* A compressed stream holds one file under the name gzip recorded:
	 * another name is a header difference, not another member. */
	if (la->n == 1 && lb->n == 1 && pa[0] == SIZE_MAX && !strcmp(la->format, "raw") &&
	    !strcmp(lb->format, "raw"))
		pa[0] = pb[0] = 0;
	int order_differs = la->n != lb->n;
	for (size_t i = 0; i < la->n; i++) {
		const struct archive_member *ma = &la->members[i];
		if (pa[i] == SIZE_MAX) {
			member_alone(c, entry, ma, 1);
			continue;
		}
		order_differs |= pa[i] != i;
		const struct archive_member *mb = &lb->members[pa[i]];
		compare_metadata(c, entry, ma, mb);
		static const unsigned char none[1];
		if (ma->type == 'f' && mb->type == 'f')
			compare_member(c, entry, path, depth, ma->name, ma->data ? ma->data : none,
			               ma->size, mb->data ? mb->data : none, mb->size);
	}
	for (size_t i = 0; i < lb->n; i++)
		if (pb[i] == SIZE_MAX)
			member_alone(c, entry, &lb->members[i], 0);
	if (!c->rep->entries[entry].nitems && order_differs)
		report_add_item(c->rep, entry, CMP_MEMBER_ORDER_DIFFERS, "",
		                "the same members in a different order");
	free(na), free(nb), free(pa), free(pb);
	free(path);
	ops->free(la);
	ops->free(lb);
	return 0;
}
