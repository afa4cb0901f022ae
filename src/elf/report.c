/* The comparison report: building it, its summary lines, text and JSON. */
#include "elf/compare_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/array.h"

/* How each kind reads in a summary ("2 sections differ: .text, .data").
 * Kinds without `list` are summarised by the detail of their one item. */
struct kind_info {
	const char *name;
	const char *one, *many;
	int list;
};

/* clang-format off */
static const struct kind_info kinds[CMP_KIND_COUNT] = {
	[CMP_ENTRY_MISSING_IN_B] = { "entry_missing_in_b",
		"entry missing in B", "entries missing in B", 1 },
	[CMP_ENTRY_ONLY_IN_B] = { "entry_only_in_b",
		"entry only in B", "entries only in B", 1 },
	[CMP_TYPE_DIFFERS] = { "type_differs",
		"entry differs in type", "entries differ in type", 1 },
	[CMP_SYMLINK_DIFFERS] = { "symlink_differs",
		"symlink differs", "symlinks differ", 1 },
	[CMP_FILE_DIFFERS] = { "file_differs",
		"file differs", "files differ", 1 },
	[CMP_MODE_DIFFERS] = { "mode_differs",
		"mode differs", "modes differ", 1 },
	[CMP_MEMBER_MISSING_IN_B] = { "member_missing_in_b",
		"member missing in B", "members missing in B", 1 },
	[CMP_MEMBER_ONLY_IN_B] = { "member_only_in_b",
		"member only in B", "members only in B", 1 },
	[CMP_MEMBER_DIFFERS] = { "member_differs",
		"member differs", "members differ", 1 },
	[CMP_MEMBER_HEADER_DIFFERS] = { "member_header_differs",
		"member header differs", "member headers differ", 1 },
	[CMP_MEMBER_ORDER_DIFFERS] = { "member_order_differs", NULL, NULL, 0 },
	[CMP_ELF_HEADER_DIFFERS] = { "elf_header_differs",
		"ELF header field differs", "ELF header fields differ", 1 },
	[CMP_SYMBOL_MISSING_IN_B] = { "symbol_missing_in_b",
		"symbol missing in B", "symbols missing in B", 1 },
	[CMP_SYMBOL_ONLY_IN_B] = { "symbol_only_in_b",
		"symbol only in B", "symbols only in B", 1 },
	[CMP_SYMBOL_CHANGED] = { "symbol_changed",
		"symbol changed", "symbols changed", 1 },
	[CMP_UNDEF_MISSING_IN_B] = { "undefined_missing_in_b",
		"undefined symbol missing in B", "undefined symbols missing in B", 1 },
	[CMP_UNDEF_ONLY_IN_B] = { "undefined_only_in_b",
		"undefined symbol only in B", "undefined symbols only in B", 1 },
	[CMP_SECTION_MISSING_IN_B] = { "section_missing_in_b",
		"section missing in B", "sections missing in B", 1 },
	[CMP_SECTION_ONLY_IN_B] = { "section_only_in_b",
		"section only in B", "sections only in B", 1 },
	[CMP_SECTION_DIFFERS] = { "section_differs",
		"section differs", "sections differ", 1 },
	[CMP_DWARF_UNIT_DIFFERS] = { "dwarf_unit_differs",
		"compile unit differs", "compile units differ", 1 },
	[CMP_TEXT_DIFFERS] = { "text_differs", NULL, NULL, 0 },
	[CMP_BYTES_DIFFER] = { "bytes_differ", NULL, NULL, 0 },
	[CMP_UNREADABLE] = { "unreadable", NULL, NULL, 0 },
};

/* The order of a summary and of a rendering: what breaks a build first. */
static const enum compare_kind display_order[CMP_KIND_COUNT] = {
	CMP_UNREADABLE,
	CMP_ELF_HEADER_DIFFERS,
	CMP_SYMBOL_MISSING_IN_B,
	CMP_SYMBOL_ONLY_IN_B,
	CMP_SYMBOL_CHANGED,
	CMP_UNDEF_MISSING_IN_B,
	CMP_UNDEF_ONLY_IN_B,
	CMP_SECTION_MISSING_IN_B,
	CMP_SECTION_ONLY_IN_B,
	CMP_SECTION_DIFFERS,
	CMP_DWARF_UNIT_DIFFERS,
	CMP_ENTRY_MISSING_IN_B,
	CMP_ENTRY_ONLY_IN_B,
	CMP_TYPE_DIFFERS,
	CMP_SYMLINK_DIFFERS,
	CMP_FILE_DIFFERS,
	CMP_MODE_DIFFERS,
	CMP_MEMBER_MISSING_IN_B,
	CMP_MEMBER_ONLY_IN_B,
	CMP_MEMBER_DIFFERS,
	CMP_MEMBER_HEADER_DIFFERS,
	CMP_MEMBER_ORDER_DIFFERS,
	CMP_TEXT_DIFFERS,
	CMP_BYTES_DIFFER,
};

static const char *const format_names[] = {
	[CMP_FMT_DIR] = "directory",
	[CMP_FMT_SYMLINK] = "symlink",
	[CMP_FMT_ELF] = "elf",
	[CMP_FMT_AR] = "ar",
	[CMP_FMT_TEXT] = "text",
	[CMP_FMT_BINARY] = "binary",
	[CMP_FMT_OTHER] = "other",
	[CMP_FMT_ARCHIVE] = "archive",
};
/* clang-format on */

const char *compare_kind_name(enum compare_kind k)
{
	return (unsigned)k < CMP_KIND_COUNT ? kinds[k].name : "unknown";
}

const char *compare_format_name(enum compare_format f)
{
	return (unsigned)f < sizeof format_names / sizeof *format_names ? format_names[f]
	                                                                : "unknown";
}

void report_init(struct compare_report *r, const struct compare_options *opt, const char *label_a,
                 const char *label_b)
{
	memset(r, 0, sizeof *r);
	r->label_a = xstrdup(label_a);
	r->label_b = xstrdup(label_b);
	r->list_limit = opt && opt->list_limit ? opt->list_limit : 20;
}

size_t report_add_entry(struct compare_report *r, const char *path, const char *member,
                        unsigned depth, enum compare_format format)
{
	ARRAY_RESERVE(r->entries, r->alloc, r->nentries + 1, 8);
	struct compare_entry *en = &r->entries[r->nentries];
	memset(en, 0, sizeof *en);
	en->path = xstrdup(path);
	en->member = member ? xstrdup(member) : NULL;
	en->depth = depth;
	en->format = format;
	return r->nentries++;
}

struct compare_item *report_add_item(struct compare_report *r, size_t entry, enum compare_kind kind,
                                     const char *name, const char *fmt, ...)
{
	struct compare_entry *en = &r->entries[entry];
	ARRAY_RESERVE(en->items, en->alloc, en->nitems + 1, 8);
	struct compare_item *it = &en->items[en->nitems++];
	memset(it, 0, sizeof *it);
	it->kind = kind;
	it->name = xstrdup(name);
	it->sub = SIZE_MAX;
	struct buf b;
	buf_init(&b);
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	it->detail = buf_detach(&b, NULL);
	r->counts[kind]++;
	return it;
}

static size_t count_kind(const struct compare_entry *en, enum compare_kind k)
{
	size_t n = 0;
	for (size_t i = 0; i < en->nitems; i++)
		n += en->items[i].kind == k;
	return n;
}

/* "2 symbols missing in B: a, b" (names capped), or the detail of a kind
 * that is not listed. */
static void summarise_kind(const struct compare_entry *en, enum compare_kind k, size_t n,
                           size_t limit, struct buf *out)
{
	const struct kind_info *ki = &kinds[k];
	if (!ki->list) {
		for (size_t i = 0; i < en->nitems; i++)
			if (en->items[i].kind == k) {
				buf_addstr(out, en->items[i].detail);
				break;
			}
		return;
	}
	buf_addf(out, "%zu %s: ", n, n == 1 ? ki->one : ki->many);
	size_t shown = 0;
	for (size_t i = 0; i < en->nitems && shown < limit; i++) {
		if (en->items[i].kind != k)
			continue;
		if (shown++)
			buf_addstr(out, ", ");
		buf_addstr(out, en->items[i].name[0] ? en->items[i].name : ".");
	}
	if (n > shown)
		buf_addf(out, " and %zu more", n - shown);
}

void report_finish_entry(struct compare_report *r, size_t entry)
{
	struct compare_entry *en = &r->entries[entry];
	struct buf b;
	buf_init(&b);
	/* A container whose only difference is one file or member: say what
	 * differs in it, not just its name. */
	if (en->nitems == 1 && !en->items[0].name[0]) {
		/* One difference of A and B themselves: its detail says it all. */
		buf_addstr(&b, en->items[0].detail);
	} else if (en->nitems == 1 && en->items[0].sub != SIZE_MAX) {
		const struct compare_item *it = &en->items[0];
		const char *sub = r->entries[it->sub].summary;
		if (it->kind == CMP_MEMBER_DIFFERS)
			buf_addf(&b, "member %s: %s", it->name, sub ? sub : "differs");
		else
			buf_addf(&b, "%s: %s", it->name, sub ? sub : "differs");
	} else {
		for (size_t i = 0; i < CMP_KIND_COUNT; i++) {
			enum compare_kind k = display_order[i];
			size_t n = count_kind(en, k);
			if (!n)
				continue;
			if (b.len)
				buf_addstr(&b, "; ");
			summarise_kind(en, k, n, r->list_limit, &b);
		}
	}
	if (!b.len)
		buf_addstr(&b, "differs");
	free(en->summary);
	en->summary = buf_detach(&b, NULL);
}

static void free_entry(struct compare_entry *en)
{
	for (size_t i = 0; i < en->nitems; i++) {
		struct compare_item *it = &en->items[i];
		free(it->name);
		free(it->detail);
		free(it->section);
		free(it->binding);
		free(it->type);
	}
	free(en->items);
	free(en->path);
	free(en->member);
	free(en->summary);
	free(en->diff);
}

void report_pop_entry(struct compare_report *r)
{
	struct compare_entry *en = &r->entries[--r->nentries];
	for (size_t i = 0; i < en->nitems; i++)
		r->counts[en->items[i].kind]--;
	free_entry(en);
}

void report_finish(struct compare_report *r)
{
	r->differ = r->nentries > 0;
	free(r->summary);
	/* The first entry is the root: A and B themselves. */
	r->summary =
	    xstrdup(r->differ && r->entries[0].summary ? r->entries[0].summary : "identical");
}

void compare_report_free(struct compare_report *r)
{
	for (size_t i = 0; i < r->nentries; i++)
		free_entry(&r->entries[i]);
	free(r->entries);
	free(r->summary);
	free(r->label_a);
	free(r->label_b);
	memset(r, 0, sizeof *r);
}

/* ---- text ---- */

static void indent(struct buf *out, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		buf_addch(out, ' ');
}

/* Items the rendering leaves to something else: a differing file or member
 * has its own entry, a text difference its diff. */
static int rendered_elsewhere(enum compare_kind k)
{
	return k == CMP_FILE_DIFFERS || k == CMP_MEMBER_DIFFERS || k == CMP_TEXT_DIFFERS;
}

static void render_items(const struct compare_report *r, const struct compare_entry *en,
                         unsigned ind, struct buf *out)
{
	/* One unlisted or unnamed item is the summary line already. */
	if (en->nitems == 1 && (!kinds[en->items[0].kind].list || !en->items[0].name[0]))
		return;
	for (size_t o = 0; o < CMP_KIND_COUNT; o++) {
		enum compare_kind k = display_order[o];
		if (k == CMP_TEXT_DIFFERS)
			continue;
		size_t n = 0, shown = 0;
		for (size_t i = 0; i < en->nitems; i++)
			n += en->items[i].kind == k &&
			     !(rendered_elsewhere(k) && en->items[i].sub != SIZE_MAX);
		for (size_t i = 0; i < en->nitems && shown < r->list_limit; i++) {
			/* A differing file or member with its own entry is shown
			 * there; one without (an archive's symbol index), here. */
			if (en->items[i].kind != k ||
			    (rendered_elsewhere(k) && en->items[i].sub != SIZE_MAX))
				continue;
			indent(out, ind);
			buf_addstr(out, en->items[i].detail);
			buf_addch(out, '\n');
			shown++;
		}
		if (n > shown) {
			indent(out, ind);
			buf_addf(out, "... and %zu more %s\n", n - shown,
			         kinds[k].many ? kinds[k].many : "differences");
		}
	}
}

void compare_report_render(const struct compare_report *r, struct buf *out)
{
	buf_addstr(out, r->differ ? r->summary : "identical");
	buf_addch(out, '\n');
	for (size_t i = 0; i < r->nentries; i++) {
		const struct compare_entry *en = &r->entries[i];
		unsigned ind = 2 * en->depth;
		if (i > 0) {
			/* The root's summary is the first line; others get a heading. */
			indent(out, ind);
			buf_addf(out, "%s: %s\n", en->member ? en->member : en->path, en->summary);
		}
		render_items(r, en, ind + 2, out);
		if (en->diff)
			buf_addstr(out, en->diff);
	}
}

/* ---- JSON ---- */

static void json_str(struct buf *out, const char *s)
{
	buf_add_json_string(out, s, strlen(s));
}

static void json_item(struct buf *out, const struct compare_item *it)
{
	buf_addstr(out, "{\"kind\": ");
	json_str(out, compare_kind_name(it->kind));
	buf_addstr(out, ", \"name\": ");
	json_str(out, it->name);
	buf_addstr(out, ", \"detail\": ");
	json_str(out, it->detail);
	if (it->section) {
		buf_addstr(out, ", \"section\": ");
		json_str(out, it->section);
	}
	if (it->binding) {
		buf_addstr(out, ", \"binding\": ");
		json_str(out, it->binding);
	}
	if (it->type) {
		buf_addstr(out, ", \"type\": ");
		json_str(out, it->type);
	}
	if (it->have & CMP_HAVE_SIZE_A)
		buf_addf(out, ", \"size_a\": %llu", (unsigned long long)it->size_a);
	if (it->have & CMP_HAVE_SIZE_B)
		buf_addf(out, ", \"size_b\": %llu", (unsigned long long)it->size_b);
	if (it->have & CMP_HAVE_OFFSET)
		buf_addf(out, ", \"offset\": %llu", (unsigned long long)it->offset);
	if (it->sub != SIZE_MAX)
		buf_addf(out, ", \"entry\": %zu", it->sub);
	buf_addch(out, '}');
}

static void json_entry(struct buf *out, const struct compare_entry *en)
{
	buf_addstr(out, "{\"path\": ");
	json_str(out, en->path);
	buf_addstr(out, ", \"member\": ");
	if (en->member)
		json_str(out, en->member);
	else
		buf_addstr(out, "null");
	buf_addf(out, ", \"depth\": %u, \"format\": ", en->depth);
	json_str(out, compare_format_name(en->format));
	buf_addstr(out, ", \"summary\": ");
	json_str(out, en->summary ? en->summary : "");
	buf_addstr(out, ", \"differences\": [");
	for (size_t i = 0; i < en->nitems; i++) {
		if (i)
			buf_addstr(out, ", ");
		json_item(out, &en->items[i]);
	}
	buf_addstr(out, "], \"diff\": ");
	if (en->diff)
		json_str(out, en->diff);
	else
		buf_addstr(out, "null");
	buf_addch(out, '}');
}

void compare_report_json(const struct compare_report *r, struct buf *out)
{
	buf_addf(out, "{\"differ\": %s, \"summary\": ", r->differ ? "true" : "false");
	json_str(out, r->differ ? r->summary : "identical");
	buf_addstr(out, ", \"a\": ");
	json_str(out, r->label_a ? r->label_a : "");
	buf_addstr(out, ", \"b\": ");
	json_str(out, r->label_b ? r->label_b : "");
	buf_addstr(out, ", \"counts\": {");
	int first = 1;
	for (size_t k = 0; k < CMP_KIND_COUNT; k++) {
		if (!r->counts[k])
			continue;
		if (!first)
			buf_addstr(out, ", ");
		first = 0;
		json_str(out, kinds[k].name);
		buf_addf(out, ": %zu", r->counts[k]);
	}
	buf_addf(out, "}, \"files_compared\": %zu, \"entries\": [", r->files_compared);
	for (size_t i = 0; i < r->nentries; i++) {
		if (i)
			buf_addstr(out, ", ");
		json_entry(out, &r->entries[i]);
	}
	buf_addstr(out, "]}\n");
}
