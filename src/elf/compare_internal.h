/*
 * Inside the comparison: the walk context, report building, and the
 * per-format comparers. Each comparer adds items to one entry of the report
 * (named by index: entries move when the array grows) and never prints.
 */
#ifndef CACHET_ELF_COMPARE_INTERNAL_H
#define CACHET_ELF_COMPARE_INTERNAL_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>
#include "cachet/compare.h"

/* An archive inside an archive inside ... is compared as bytes past this. */
#define CMP_MAX_NESTING 4

struct cmp_ctx {
	struct compare_report *rep;
	size_t max_diff_lines;
	int exec_bit;
	int modes;
	const char *archive_plugin; /* libcachet-archive.so, or NULL */
	const char *dwarf_plugin;   /* libcachet-dwarf.so, or NULL */
	/* The entry that collects directory-level items (the root entry), or
	 * SIZE_MAX until one is needed. */
	size_t container;
	struct error *e;
};

/* ---- report.c ---- */

void report_init(struct compare_report *r, const struct compare_options *opt, const char *label_a,
                 const char *label_b);
/* Appends an entry; returns its index. */
size_t report_add_entry(struct compare_report *r, const char *path, const char *member,
                        unsigned depth, enum compare_format format);
/* Appends an item with the printf-formatted detail to entries[entry]. The
 * pointer is valid until the next item is added to that entry. */
struct compare_item *report_add_item(struct compare_report *r, size_t entry, enum compare_kind kind,
                                     const char *name, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* (Re)builds entries[entry].summary from its items. */
void report_finish_entry(struct compare_report *r, size_t entry);
/* Drops the last entry (a container that found nothing). */
void report_pop_entry(struct compare_report *r);
/* Sets differ and the report's summary. */
void report_finish(struct compare_report *r);

/* ---- compare.c ---- */

/* Compares two contents by what they hold (ELF, ar, text, else bytes).
 * Returns 0 when identical, 1 when they differ, with *entry_out (if not NULL)
 * set to the new entry. `path` and `member` name it in the report. */
int compare_contents(struct cmp_ctx *c, const char *path, const char *member, unsigned depth,
                     const unsigned char *a, size_t alen, const unsigned char *b, size_t blen,
                     size_t *entry_out);

/* Compares the contents of an archive's member (depth: the archive's) and,
 * when they differ, adds a CMP_MEMBER_DIFFERS item pointing at its entry. */
void compare_member(struct cmp_ctx *c, size_t entry, const char *path, unsigned depth,
                    const char *name, const unsigned char *a, size_t alen, const unsigned char *b,
                    size_t blen);

/* Adds a CMP_BYTES_DIFFER item: sizes and the first differing offset.
 * `prefix` (may be "") starts the detail. */
void compare_bytes(struct cmp_ctx *c, size_t entry, const char *prefix, const unsigned char *a,
                   size_t alen, const unsigned char *b, size_t blen);

/* Offset of the first byte that differs in the common length, or the common
 * length when one is a prefix of the other. */
size_t first_difference(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen);

/* Pairs two lists of names: the k-th occurrence of a name (within one class,
 * when classes are given) in A with the k-th in B. peer_a[i] gets the index
 * in B of A's i-th name, or SIZE_MAX; likewise peer_b. cls_a and cls_b may
 * be NULL (one class). */
void match_names(const char *const *names_a, const int *cls_a, size_t na,
                 const char *const *names_b, const int *cls_b, size_t nb, size_t *peer_a,
                 size_t *peer_b);

/* ---- elf_compare.c, ar_compare.c ---- */

/* Both return 0, or -1 after adding a CMP_UNREADABLE item when a side cannot
 * be parsed (the caller then adds a byte comparison). */
int elf_compare(struct cmp_ctx *c, size_t entry, const unsigned char *a, size_t alen,
                const unsigned char *b, size_t blen);
int ar_compare(struct cmp_ctx *c, size_t entry, const unsigned char *a, size_t alen,
               const unsigned char *b, size_t blen);

/* ---- archive_compare.c ---- */

/* 1 when p starts a tarball, zip, cpio, 7z or compressed stream and the
 * archive plugin can be loaded. */
int archive_is(const struct cmp_ctx *c, const unsigned char *p, size_t n);
/* As ar_compare, for what archive_is accepts. */
int archive_compare(struct cmp_ctx *c, size_t entry, const unsigned char *a, size_t alen,
                    const unsigned char *b, size_t blen);

/* The operations a plugin's entry point `symbol` returns, loaded once per
 * path; NULL when path is NULL or the plugin cannot be loaded. */
const void *compare_plugin(const char *path, const char *symbol);

/* Appends a unix time as "2024-03-09 00:00:00 UTC (1709942400)" (just the
 * number when it is not a date after 1970). */
void compare_add_time(struct buf *out, int64_t t);

/* ---- elf_strings.c ---- */

/* Appends to out "; strings only in A: "x", … and N more; only in B: …"
 * for two sections of NUL-terminated strings (at most limit of each). */
void strings_differ(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen,
                    size_t limit, struct buf *out);

/* Appends "; text there: "Dec  1 2026" in A, "Mar  9 2024" in B" when the
 * bytes at offset at lie in a run of printable text in both (a __DATE__ in
 * .rodata, a path in .debug_info). */
void text_at_difference(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen,
                        size_t at, struct buf *out);

/* Appends the notes of two SHT_NOTE sections' data (libelf's, in host
 * order) that differ, decoded: "; build-id 1a2b… in A, 3c4d… in B". */
void elf_notes_differ(Elf_Data *a, Elf_Data *b, struct buf *out);

/* ---- pyc_header.c ---- */

/* 1 when path names a .pyc file and p holds a header (at least 16 bytes). */
int pyc_is(const char *path, const unsigned char *p, size_t n);
/* Appends what differs in the headers of two .pyc files (magic, flags,
 * source mtime and size, or source hash), each part ending in "; ", and
 * whether the code after them is identical. */
void pyc_header_differs(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen,
                        struct buf *out);

/* ---- text_compare.c ---- */

/* Adds a CMP_TEXT_DIFFERS item and sets entries[entry].diff to a unified
 * diff (3 lines of context) of at most max_lines lines, headed by the labels,
 * with a "... N more lines" note when cut. */
void text_compare(struct cmp_ctx *c, size_t entry, const char *label_a, const char *label_b,
                  const unsigned char *a, size_t alen, const unsigned char *b, size_t blen);

#endif
