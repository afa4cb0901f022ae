/*
 * Comparing two build outputs and saying how they differ in the terms a
 * compiler engineer uses: for ELF files, the symbols and sections; for `ar`
 * archives, member by member; for text, a bounded unified diff; for anything
 * else, the sizes and the first differing offset. Directories are walked
 * recursively; symlinks are compared by target and never followed (the roots
 * A and B included).
 *
 * The comparison fills a structured report and never prints: `cachet diff`
 * renders it, `cachet repro` and `run --verify` reuse it for their outputs.
 *
 * Report invariants:
 *  - `entries` holds only what differs, in walk order; a container (the root
 *    directory, an archive) comes before the entries for its members, which
 *    have a greater `depth`.
 *  - Every item belongs to the entry it describes; an item of kind
 *    CMP_FILE_DIFFERS or CMP_MEMBER_DIFFERS points at the entry holding the
 *    details (`sub`).
 *  - `differ` is 1 exactly when `nentries` > 0. Every byte difference shows:
 *    when the format-aware comparison finds nothing (section order, padding),
 *    a CMP_BYTES_DIFFER item says where the bytes differ.
 *  - All strings are owned by the report and freed by compare_report_free.
 */
#ifndef CACHET_COMPARE_H
#define CACHET_COMPARE_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/buf.h"
#include "cachet/error.h"

/* What one difference is about. "missing in B" means present in A only. */
enum compare_kind {
	/* directories (items of the root entry, `name` is the path below the roots) */
	CMP_ENTRY_MISSING_IN_B,
	CMP_ENTRY_ONLY_IN_B,
	CMP_TYPE_DIFFERS,    /* regular file in one, directory or symlink in the other */
	CMP_SYMLINK_DIFFERS, /* targets differ */
	CMP_FILE_DIFFERS,    /* contents differ; `sub` has the details */
	CMP_MODE_DIFFERS,    /* permission bits (compare_options.modes) or the
	                      * executable bit (compare_options.exec_bit) */
	/* ar archives (`name` is the member name) */
	CMP_MEMBER_MISSING_IN_B,
	CMP_MEMBER_ONLY_IN_B,
	CMP_MEMBER_DIFFERS,        /* contents differ; `sub` has the details */
	CMP_MEMBER_HEADER_DIFFERS, /* date, uid, gid or mode in the member header */
	CMP_MEMBER_ORDER_DIFFERS,
	/* ELF */
	CMP_ELF_HEADER_DIFFERS,  /* class, byte order, type, machine, flags, entry */
	CMP_SYMBOL_MISSING_IN_B, /* defined (not SHN_UNDEF) in A only */
	CMP_SYMBOL_ONLY_IN_B,
	CMP_SYMBOL_CHANGED,     /* size, section, binding or type differs */
	CMP_UNDEF_MISSING_IN_B, /* undefined reference in A only */
	CMP_UNDEF_ONLY_IN_B,
	CMP_SECTION_MISSING_IN_B,
	CMP_SECTION_ONLY_IN_B,
	CMP_SECTION_DIFFERS,    /* type, flags, size or contents */
	CMP_DWARF_UNIT_DIFFERS, /* a compile unit's name, directory or producer */
	/* contents */
	CMP_TEXT_DIFFERS, /* the entry's `diff` holds the unified diff */
	CMP_BYTES_DIFFER, /* sizes and first differing offset */
	CMP_UNREADABLE,   /* looked like ELF or ar but could not be parsed */
	CMP_KIND_COUNT
};

/* How an entry's contents were compared. */
enum compare_format {
	CMP_FMT_DIR,
	CMP_FMT_SYMLINK,
	CMP_FMT_ELF,
	CMP_FMT_AR,
	CMP_FMT_TEXT,
	CMP_FMT_BINARY,
	CMP_FMT_OTHER,   /* FIFO, socket, device, two different types, or only the mode differs */
	CMP_FMT_ARCHIVE, /* tar, zip, cpio, 7z, gzip, xz...: member by member (the plugin) */
};

/* Which of the numeric fields of an item are meaningful. */
#define CMP_HAVE_SIZE_A 1u
#define CMP_HAVE_SIZE_B 2u
#define CMP_HAVE_OFFSET 4u

struct compare_item {
	enum compare_kind kind;
	char *name;    /* symbol, section, member or path; never NULL */
	char *detail;  /* one complete line without newline, e.g.
	                * "symbol entry_2 missing in B: GLOBAL FUNC in .text, 11 bytes" */
	char *section; /* symbols: section name (in A, else in B); else NULL */
	char *binding; /* symbols: "LOCAL", "GLOBAL", "WEAK", ...; else NULL */
	char *type;    /* symbols: "FUNC", "OBJECT", ...; sections: "PROGBITS", ...; else NULL */
	unsigned have; /* CMP_HAVE_* */
	uint64_t size_a, size_b;
	uint64_t offset; /* first differing byte, relative to the section for sections */
	size_t sub;      /* CMP_FILE_DIFFERS, CMP_MEMBER_DIFFERS: index into entries;
	                  * SIZE_MAX otherwise */
};

struct compare_entry {
	char *path;     /* below the roots ("" for A and B themselves) */
	char *member;   /* archive member name, or NULL */
	unsigned depth; /* 0, or one more than the archive holding the member */
	enum compare_format format;
	char *
	    summary; /* one line, e.g. "1 symbol missing in B: entry_2; 1 section differs: .text" */
	struct compare_item *items;
	size_t nitems, alloc;
	char *diff; /* CMP_FMT_TEXT: the unified diff, bounded; else NULL */
};

struct compare_report {
	int differ;
	char *summary; /* one line; "identical" when nothing differs */
	char *label_a, *label_b;
	struct compare_entry *entries;
	size_t nentries, alloc;
	size_t counts[CMP_KIND_COUNT]; /* items of each kind, over all entries */
	size_t files_compared;         /* pairs of regular files or members compared */
	size_t list_limit;             /* names listed per kind when rendering */
};

struct compare_options {
	size_t max_diff_lines;      /* output lines of one text diff; 0 means 200 */
	size_t list_limit;          /* names listed per kind in summaries and renderings
	                             * before "and N more"; 0 means 20 */
	int exec_bit;               /* also compare the owner-executable bit of files */
	int modes;                  /* also compare every permission bit (07777) of files
	                             * and directories (cachet diff) */
	const char *archive_plugin; /* the path of libcachet-archive.so: tarballs, zip
	                             * files and compressed streams member by member;
	                             * NULL: as bytes */
	const char *dwarf_plugin;   /* the path of libcachet-dwarf.so: DWARF compile
	                             * units of objects with debug information; NULL:
	                             * not compared */
	const char *label_a;        /* how A and B are named in diff headers; NULL: the paths */
	const char *label_b;
};

/* Compares the files, symlinks or directory trees at a and b. `opt` may be
 * NULL for the defaults. `out` is initialised here and must be freed with
 * compare_report_free whatever the result. Returns 0 when the comparison ran
 * (out->differ says whether they differ), -1 with `e` set when a path cannot
 * be read (missing, permission denied, I/O error); content that cannot be
 * parsed as the format it claims is a difference (CMP_UNREADABLE), not an
 * error. */
int compare_paths(const char *a, const char *b, const struct compare_options *opt,
                  struct compare_report *out, struct error *e);

/* Compares two contents in memory (captured stdout, a blob), dispatching on
 * content like compare_paths does for a regular file; `name` is used as the
 * path in the report. Never fails. `out` as for compare_paths. */
void compare_buffers(const void *a, size_t alen, const void *b, size_t blen, const char *name,
                     const struct compare_options *opt, struct compare_report *out);

void compare_report_free(struct compare_report *r);

/* Appends the report as text: the summary line first, then each difference,
 * indented under its file or member, lists capped at list_limit per kind. */
void compare_report_render(const struct compare_report *r, struct buf *out);

/* Appends the report as one JSON object and a newline: differ, summary, a, b,
 * counts (nonzero kinds by name), files_compared, entries (path, member,
 * depth, format, summary, differences[], diff). Not capped. */
void compare_report_json(const struct compare_report *r, struct buf *out);

/* Stable lowercase names for JSON and tests: "symbol_missing_in_b", "elf". */
const char *compare_kind_name(enum compare_kind k);
const char *compare_format_name(enum compare_format f);

#endif
