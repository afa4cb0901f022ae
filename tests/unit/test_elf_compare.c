/* Comparing build outputs: real objects from gcc, real archives from ar. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cachet/compare.h"

static char dir[] = "/tmp/cachet-elf-test-XXXXXX";

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char *cmd = xasprintf("rm -rf '%s'", dir);
	int rc = system(cmd);
	free(cmd);
	return rc;
}

/* Runs a shell command in the test directory; the test fails if it does. */
static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	struct buf b;
	buf_init(&b);
	buf_addf(&b, "cd '%s' && ", dir);
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	int rc = system(b.data);
	if (rc != 0)
		fail_msg("command failed (%d): %s", rc, b.data);
	buf_free(&b);
}

static char *p(const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

static void write_file(const char *name, const void *data, size_t len)
{
	char *path = p(name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	free(path);
}

static void write_str(const char *name, const char *s)
{
	write_file(name, s, strlen(s));
}

static unsigned char *read_all(const char *name, size_t *len)
{
	char *path = p(name);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	struct buf b;
	buf_init(&b);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	free(path);
	return (unsigned char *)buf_detach(&b, len);
}

static const char entries_global[] = "int entry_1(int x) { return x + 1; }\n"
                                     "int entry_2(int x) { return x * 3 + 7; }\n"
                                     "int entry_3(int x) { return entry_2(x) - 1; }\n";
static const char entry_2_inlined[] = "int entry_1(int x) { return x + 1; }\n"
                                      "static inline int entry_2(int x) { return x * 3 + 7; }\n"
                                      "int entry_3(int x) { return entry_2(x) - 1; }\n";

/* Compiles `source` (written to NAME.c) to NAME.o with -O2. */
static void compile(const char *name, const char *source)
{
	char *c = xasprintf("%s.c", name);
	write_str(c, source);
	sh("gcc -O2 -c %s.c -o %s.o", name, name);
	free(c);
}

static void compare(const char *a, const char *b, const struct compare_options *opt,
                    struct compare_report *r)
{
	char *pa = p(a), *pb = p(b);
	struct error e = {0};
	int rc = compare_paths(pa, pb, opt, r, &e);
	if (rc != 0)
		fail_msg("compare_paths %s %s: %s", a, b, e.msg);
	free(pa);
	free(pb);
}

/* The first item of `kind` named `name` in any entry, or NULL. */
static const struct compare_item *find(const struct compare_report *r, enum compare_kind kind,
                                       const char *name)
{
	for (size_t i = 0; i < r->nentries; i++)
		for (size_t j = 0; j < r->entries[i].nitems; j++) {
			const struct compare_item *it = &r->entries[i].items[j];
			if (it->kind == kind && (!name || !strcmp(it->name, name)))
				return it;
		}
	return NULL;
}

static char *render(const struct compare_report *r)
{
	struct buf b;
	buf_init(&b);
	compare_report_render(r, &b);
	return buf_detach(&b, NULL);
}

static void an_inlined_entry_is_missing_in_b_with_section_and_binding(void **state)
{
	compile("all_global", entries_global);
	compile("inlined", entry_2_inlined);
	struct compare_report r;
	compare("all_global.o", "inlined.o", NULL, &r);
	assert_true(r.differ);
	const struct compare_item *it = find(&r, CMP_SYMBOL_MISSING_IN_B, "entry_2");
	assert_non_null(it);
	assert_string_equal(it->section, ".text");
	assert_string_equal(it->binding, "GLOBAL");
	assert_string_equal(it->type, "FUNC");
	assert_int_equal(r.counts[CMP_SYMBOL_MISSING_IN_B], 1);
	assert_null(find(&r, CMP_SYMBOL_MISSING_IN_B, "entry_1"));
	assert_null(find(&r, CMP_SYMBOL_MISSING_IN_B, "entry_3"));
	assert_non_null(find(&r, CMP_SECTION_DIFFERS, ".text"));
	/* The summary says it first, in a compiler engineer's words. */
	assert_non_null(strstr(r.summary, "1 symbol missing in B: entry_2"));
	assert_ptr_equal(strstr(r.summary, "1 symbol missing in B"), r.summary);
	char *text = render(&r);
	assert_non_null(strstr(text, "symbol entry_2 missing in B: GLOBAL FUNC in .text"));
	free(text);
	compare_report_free(&r);

	compare("inlined.o", "all_global.o", NULL, &r);
	it = find(&r, CMP_SYMBOL_ONLY_IN_B, "entry_2");
	assert_non_null(it);
	assert_string_equal(it->binding, "GLOBAL");
	assert_non_null(strstr(r.summary, "1 symbol only in B: entry_2"));
	compare_report_free(&r);
}

/* Offset of section `name` in the ELF file `path` (via libelf, independently
 * of the code under test). */
static size_t section_offset(const char *name, const char *section, size_t *size)
{
	char *path = p(name);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	size_t shstrndx;
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	size_t off = SIZE_MAX;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		gelf_getshdr(scn, &sh);
		if (!strcmp(elf_strptr(elf, shstrndx, sh.sh_name), section)) {
			off = sh.sh_offset;
			*size = sh.sh_size;
		}
	}
	elf_end(elf);
	close(fd);
	free(path);
	assert_true(off != SIZE_MAX);
	return off;
}

static void a_changed_constant_names_the_section_and_first_differing_offset(void **state)
{
	compile("k1", "const int table[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };\n"
	              "int get(int i) { return table[i]; }\n");
	compile("k2", "const int table[8] = { 1, 2, 3, 4, 5, 6, 99, 8 };\n"
	              "int get(int i) { return table[i]; }\n");
	struct compare_report r;
	compare("k1.o", "k2.o", NULL, &r);
	assert_true(r.differ);
	const struct compare_item *it = find(&r, CMP_SECTION_DIFFERS, ".rodata");
	assert_non_null(it);
	assert_true(it->have & CMP_HAVE_OFFSET);
	assert_int_equal(it->offset, 6 * sizeof(int)); /* the seventh int */
	assert_int_equal(it->size_a, it->size_b);
	/* Check the offset against the bytes themselves. */
	size_t la, lb, sa, sb;
	unsigned char *a = read_all("k1.o", &la), *b = read_all("k2.o", &lb);
	size_t oa = section_offset("k1.o", ".rodata", &sa),
	       ob = section_offset("k2.o", ".rodata", &sb);
	assert_int_equal(sa, it->size_a);
	assert_memory_equal(a + oa, b + ob, it->offset);
	assert_true(a[oa + it->offset] != b[ob + it->offset]);
	/* Nothing about symbols but the FILE symbol (k1.c, k2.c): none was
	 * added, lost or resized. */
	assert_int_equal(r.counts[CMP_SYMBOL_MISSING_IN_B] + r.counts[CMP_SYMBOL_ONLY_IN_B], 0);
	assert_int_equal(r.counts[CMP_SYMBOL_CHANGED], 1);
	const struct compare_item *file = find(&r, CMP_SYMBOL_CHANGED, "k1.c");
	assert_non_null(file);
	assert_string_equal(file->type, "FILE");
	assert_non_null(strstr(file->detail, "k2.c in B"));
	free(a);
	free(b);
	compare_report_free(&r);
}

static void a_grown_function_is_a_symbol_size_change(void **state)
{
	compile("f1", "int f(int x) { return x + 1; }\n");
	compile("f2", "int f(int x) { return x * x * x + 3 * x + 1; }\n");
	struct compare_report r;
	compare("f1.o", "f2.o", NULL, &r);
	const struct compare_item *it = find(&r, CMP_SYMBOL_CHANGED, "f");
	assert_non_null(it);
	assert_true(it->size_a < it->size_b);
	assert_non_null(strstr(it->detail, "size"));
	compare_report_free(&r);
}

static void identical_objects_have_no_difference(void **state)
{
	/* One source name: it is in the object (the STT_FILE symbol). */
	sh("mkdir -p same1 same2");
	compile("same1/x", entries_global);
	compile("same2/x", entries_global);
	struct compare_report r;
	compare("same1/x.o", "same2/x.o", NULL, &r);
	assert_false(r.differ);
	assert_int_equal(r.nentries, 0);
	assert_string_equal(r.summary, "identical");
	char *text = render(&r);
	assert_string_equal(text, "identical\n");
	free(text);
	compare_report_free(&r);
}

static void archives_differing_in_one_member_name_only_that_member(void **state)
{
	sh("mkdir -p arA arB");
	compile("arA/one", "int one(void) { return 1; }\n");
	compile("arA/three", "int three(void) { return 3; }\n");
	compile("arA/two", entries_global);
	compile("arB/two", entry_2_inlined);
	sh("cp arA/one.o arA/three.o arB/");
	sh("cd arA && ar rcs ../libA.a one.o two.o three.o");
	sh("cd arB && ar rcs ../libB.a one.o two.o three.o");
	struct compare_report r;
	compare("libA.a", "libB.a", NULL, &r);
	assert_true(r.differ);
	assert_int_equal(r.entries[0].format, CMP_FMT_AR);
	const struct compare_item *it = find(&r, CMP_MEMBER_DIFFERS, "two.o");
	assert_non_null(it);
	assert_null(find(&r, CMP_MEMBER_DIFFERS, "one.o"));
	assert_null(find(&r, CMP_MEMBER_DIFFERS, "three.o"));
	assert_int_equal(r.counts[CMP_MEMBER_DIFFERS], 1);
	assert_int_equal(r.counts[CMP_MEMBER_MISSING_IN_B] + r.counts[CMP_MEMBER_ONLY_IN_B], 0);
	/* The member's own ELF comparison, nested under it. */
	const struct compare_entry *m = &r.entries[it->sub];
	assert_string_equal(m->member, "two.o");
	assert_int_equal(m->depth, 1);
	assert_int_equal(m->format, CMP_FMT_ELF);
	assert_non_null(find(&r, CMP_SYMBOL_MISSING_IN_B, "entry_2"));
	assert_non_null(strstr(r.summary, "two.o"));
	assert_non_null(strstr(r.summary, "entry_2"));
	char *text = render(&r);
	assert_non_null(strstr(text, "\n  two.o: "));
	assert_non_null(strstr(text, "\n    symbol entry_2 missing in B"));
	assert_null(strstr(text, "one.o"));
	free(text);
	compare_report_free(&r);

	/* A member dropped from the archive. */
	sh("cd arA && ar rcs ../libC.a one.o two.o");
	compare("libA.a", "libC.a", NULL, &r);
	assert_non_null(find(&r, CMP_MEMBER_MISSING_IN_B, "three.o"));
	assert_null(find(&r, CMP_MEMBER_DIFFERS, "three.o"));
	compare_report_free(&r);
}

static void same_name_members_are_compared_in_order(void **state)
{
	sh("mkdir -p dup1 dup2 dup3");
	compile("dup1/u", "int u1(void) { return 1; }\n");
	compile("dup2/u", "int u2(void) { return 2; }\n");
	compile("dup3/u", "int u3(void) { return 3; }\n");
	sh("ar qcD libdupA.a dup1/u.o dup2/u.o && ar qcD libdupB.a dup1/u.o dup3/u.o");
	struct compare_report r;
	compare("libdupA.a", "libdupB.a", NULL, &r);
	assert_int_equal(r.counts[CMP_MEMBER_DIFFERS], 1);
	assert_non_null(find(&r, CMP_SYMBOL_MISSING_IN_B, "u2"));
	assert_non_null(find(&r, CMP_SYMBOL_ONLY_IN_B, "u3"));
	assert_null(find(&r, CMP_SYMBOL_MISSING_IN_B, "u1"));
	compare_report_free(&r);
}

static void text_files_get_a_unified_diff(void **state)
{
	write_str("t1.txt", "alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\neta\ntheta\n");
	write_str("t2.txt", "alpha\nbeta\ngamma\nDELTA\nepsilon\nzeta\neta\ntheta\n");
	struct compare_report r;
	compare("t1.txt", "t2.txt", NULL, &r);
	assert_true(r.differ);
	const struct compare_entry *en = &r.entries[0];
	assert_int_equal(en->format, CMP_FMT_TEXT);
	assert_non_null(en->diff);
	assert_non_null(strstr(en->diff, "/t1.txt\n+++ "));
	assert_non_null(strstr(en->diff, "@@ -1,7 +1,7 @@\n alpha\n beta\n gamma\n-delta\n+DELTA\n "
	                                 "epsilon\n zeta\n eta\n"));
	assert_null(strstr(en->diff, "theta")); /* beyond the 3 lines of context */
	assert_non_null(strstr(r.summary, "line 4"));
	compare_report_free(&r);
}

static void a_long_text_diff_is_cut_with_a_note(void **state)
{
	struct buf a, b;
	buf_init(&a);
	buf_init(&b);
	for (int i = 0; i < 500; i++) {
		buf_addf(&a, "line %d\n", i);
		buf_addf(&b, i % 10 == 0 ? "changed %d\n" : "line %d\n", i);
	}
	write_file("long1", a.data, a.len);
	write_file("long2", b.data, b.len);
	struct compare_options opt = {.max_diff_lines = 20};
	struct compare_report r;
	compare("long1", "long2", &opt, &r);
	const char *d = r.entries[0].diff;
	size_t lines = 0;
	for (const char *s = d; *s; s++)
		lines += *s == '\n';
	assert_int_equal(lines, 21); /* 20 and the note */
	assert_non_null(strstr(d, " more lines\n"));
	compare_report_free(&r);
	buf_free(&a);
	buf_free(&b);
}

static void binary_files_report_sizes_and_first_differing_offset(void **state)
{
	unsigned char data[4096];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(i * 7 + (i >> 8)) | 0x80; /* not UTF-8 */
	data[0] = 0;
	write_file("bin1", data, sizeof data);
	data[1234] ^= 0x5a;
	write_file("bin2", data, sizeof data);
	write_file("bin3", data, 1000);
	struct compare_report r;
	compare("bin1", "bin2", NULL, &r);
	const struct compare_item *it = find(&r, CMP_BYTES_DIFFER, NULL);
	assert_non_null(it);
	assert_int_equal(r.entries[0].format, CMP_FMT_BINARY);
	assert_int_equal(it->offset, 1234);
	assert_int_equal(it->size_a, 4096);
	assert_int_equal(it->size_b, 4096);
	assert_non_null(strstr(r.summary, "offset 1234"));
	compare_report_free(&r);

	compare("bin1", "bin3", NULL, &r);
	it = find(&r, CMP_BYTES_DIFFER, NULL);
	assert_int_equal(it->offset, 1000); /* B is a prefix of A */
	assert_int_equal(it->size_b, 1000);
	compare_report_free(&r);
}

/* Every comparison of a damaged copy with the original must end in a report
 * (ASan watches the reads): truncations, an ELF header followed by junk, and
 * flipped bytes all over the header and the section table. */
static void damaged_elf_is_reported_not_crashed_on(void **state)
{
	compile("good", entries_global);
	size_t len;
	unsigned char *good = read_all("good.o", &len);
	struct compare_report r;

	unsigned char *junk = xmalloc(len);
	memcpy(junk, good, 64);
	for (size_t i = 64; i < len; i++)
		junk[i] = (unsigned char)(i * 131);
	write_file("junk.o", junk, len);
	compare("good.o", "junk.o", NULL, &r);
	assert_true(r.differ);
	assert_true(find(&r, CMP_UNREADABLE, "B") || find(&r, CMP_SECTION_DIFFERS, NULL));
	assert_non_null(find(&r, CMP_BYTES_DIFFER, NULL) ? find(&r, CMP_BYTES_DIFFER, NULL)
	                                                 : find(&r, CMP_SECTION_DIFFERS, NULL));
	compare_report_free(&r);

	for (size_t cut = 0; cut < len; cut += 37) {
		compare_buffers(good, len, good, cut, "cut", NULL, &r);
		assert_true(r.differ);
		if (cut >= 4 && cut < len - 64)
			assert_non_null(find(&r, CMP_UNREADABLE, "B"));
		compare_report_free(&r);
	}

	unsigned seed = 12345;
	unsigned char *bad = xmalloc(len);
	for (int round = 0; round < 3000; round++) {
		memcpy(bad, good, len);
		for (int k = 0; k < 1 + round % 4; k++) {
			seed = seed * 1103515245 + 12345;
			size_t at = (seed >> 8) % len;
			seed = seed * 1103515245 + 12345;
			bad[at] = (unsigned char)(seed >> 16);
		}
		compare_buffers(good, len, bad, len, "flipped", NULL, &r);
		struct buf out;
		buf_init(&out);
		compare_report_render(&r, &out);
		compare_report_json(&r, &out);
		buf_free(&out);
		compare_report_free(&r);
	}
	free(bad);
	free(junk);
	free(good);
}

static void damaged_archives_are_reported_not_crashed_on(void **state)
{
	sh("mkdir -p dmg && cd dmg && printf 'int a(void){return 1;}\\n' > a.c && "
	   "printf 'int b(void){return 2;}\\n' > b.c && gcc -c a.c b.c && ar rcs ../dmg.a a.o b.o");
	size_t len;
	unsigned char *good = read_all("dmg.a", &len);
	struct compare_report r;
	for (size_t cut = 8; cut < len; cut += 29) {
		compare_buffers(good, len, good, cut, "cut.a", NULL, &r);
		assert_true(r.differ);
		compare_report_free(&r);
	}
	unsigned char *bad = xmalloc(len);
	unsigned seed = 99;
	for (int round = 0; round < 2000; round++) {
		memcpy(bad, good, len);
		seed = seed * 1103515245 + 12345;
		size_t at = 8 + (seed >> 8) % (len - 8);
		seed = seed * 1103515245 + 12345;
		bad[at] = (unsigned char)(seed >> 16);
		compare_buffers(good, len, bad, len, "flipped.a", NULL, &r);
		compare_report_free(&r);
	}
	free(bad);
	free(good);
}

static void directories_report_entries_types_symlinks_and_files(void **state)
{
	compile("all_global", entries_global);
	compile("inlined", entry_2_inlined);
	sh("mkdir -p ta/sub tb/sub ta/only_a_dir tb/kind && cp all_global.o ta/sub/k.o && "
	   "cp inlined.o tb/sub/k.o && echo same > ta/same && echo same > tb/same && "
	   "touch ta/kind tb/only_b && ln -s x ta/link && ln -s y tb/link && "
	   "ln -s z ta/same_link && ln -s z tb/same_link && ln -s ../nowhere ta/dangling && "
	   "ln -s ../nowhere tb/dangling");
	struct compare_report r;
	compare("ta", "tb", NULL, &r);
	assert_true(r.differ);
	assert_int_equal(r.entries[0].format, CMP_FMT_DIR);
	assert_non_null(find(&r, CMP_ENTRY_MISSING_IN_B, "only_a_dir"));
	assert_non_null(find(&r, CMP_ENTRY_ONLY_IN_B, "only_b"));
	assert_non_null(find(&r, CMP_TYPE_DIFFERS, "kind"));
	assert_non_null(find(&r, CMP_SYMLINK_DIFFERS, "link"));
	assert_null(find(&r, CMP_SYMLINK_DIFFERS, "same_link"));
	assert_null(find(&r, CMP_SYMLINK_DIFFERS, "dangling"));
	assert_null(find(&r, CMP_FILE_DIFFERS, "same"));
	const struct compare_item *it = find(&r, CMP_FILE_DIFFERS, "sub/k.o");
	assert_non_null(it);
	assert_string_equal(r.entries[it->sub].path, "sub/k.o");
	assert_non_null(find(&r, CMP_SYMBOL_MISSING_IN_B, "entry_2"));
	compare_report_free(&r);

	compare("ta", "ta", NULL, &r);
	assert_false(r.differ);
	compare_report_free(&r);

	/* A symlink at the top is compared as a link, not followed. */
	compare("ta/link", "tb/link", NULL, &r);
	assert_true(r.differ);
	assert_non_null(find(&r, CMP_SYMLINK_DIFFERS, ""));
	compare_report_free(&r);
}

static void the_executable_bit_counts_only_when_asked(void **state)
{
	sh("mkdir -p xa xb && echo '#!/bin/sh' > xa/s && cp xa/s xb/s && chmod +x xb/s");
	struct compare_report r;
	compare("xa", "xb", NULL, &r);
	assert_false(r.differ);
	compare_report_free(&r);
	struct compare_options opt = {.exec_bit = 1};
	compare("xa", "xb", &opt, &r);
	assert_true(r.differ);
	assert_non_null(find(&r, CMP_MODE_DIFFERS, "s"));
	compare_report_free(&r);
	compare("xa/s", "xb/s", &opt, &r);
	assert_true(r.differ);
	assert_non_null(strstr(r.summary, "executable in B only"));
	compare_report_free(&r);
}

static void long_lists_are_capped(void **state)
{
	struct buf src;
	buf_init(&src);
	for (int i = 0; i < 30; i++)
		buf_addf(&src, "int fn_%02d(void) { return %d; }\n", i, i);
	compile("many", src.data);
	compile("none", "int keep(void) { return 0; }\n");
	struct compare_report r;
	compare("many.o", "none.o", NULL, &r);
	assert_int_equal(r.counts[CMP_SYMBOL_MISSING_IN_B], 30);
	assert_non_null(strstr(r.summary, "30 symbols missing in B: fn_00, fn_01"));
	assert_non_null(strstr(r.summary, "fn_19 and 10 more"));
	assert_null(strstr(r.summary, "fn_20"));
	char *text = render(&r);
	assert_non_null(strstr(text, "... and 10 more symbols missing in B\n"));
	free(text);
	compare_report_free(&r);
	buf_free(&src);
}

static void json_names_the_missing_symbol(void **state)
{
	compile("all_global", entries_global);
	compile("inlined", entry_2_inlined);
	struct compare_report r;
	compare("all_global.o", "inlined.o", NULL, &r);
	struct buf b;
	buf_init(&b);
	compare_report_json(&r, &b);
	assert_non_null(
	    strstr(b.data, "{\"differ\": true, \"summary\": \"1 symbol missing in B: entry_2"));
	assert_non_null(strstr(b.data, "\"counts\": {\"symbol_missing_in_b\": 1"));
	assert_non_null(
	    strstr(b.data, "{\"kind\": \"symbol_missing_in_b\", \"name\": \"entry_2\""));
	assert_non_null(strstr(b.data, "\"section\": \".text\", \"binding\": \"GLOBAL\""));
	assert_true(b.len > 0 && b.data[b.len - 1] == '\n');
	buf_free(&b);
	compare_report_free(&r);
}

static void a_missing_path_is_an_error_not_a_difference(void **state)
{
	struct compare_report r;
	struct error e = {0};
	char *a = p("all_global.o"), *b = p("no-such-file");
	assert_int_equal(compare_paths(a, b, NULL, &r, &e), -1);
	assert_non_null(strstr(e.msg, "no-such-file"));
	compare_report_free(&r);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(an_inlined_entry_is_missing_in_b_with_section_and_binding),
	    cmocka_unit_test(a_changed_constant_names_the_section_and_first_differing_offset),
	    cmocka_unit_test(a_grown_function_is_a_symbol_size_change),
	    cmocka_unit_test(identical_objects_have_no_difference),
	    cmocka_unit_test(archives_differing_in_one_member_name_only_that_member),
	    cmocka_unit_test(same_name_members_are_compared_in_order),
	    cmocka_unit_test(text_files_get_a_unified_diff),
	    cmocka_unit_test(a_long_text_diff_is_cut_with_a_note),
	    cmocka_unit_test(binary_files_report_sizes_and_first_differing_offset),
	    cmocka_unit_test(damaged_elf_is_reported_not_crashed_on),
	    cmocka_unit_test(damaged_archives_are_reported_not_crashed_on),
	    cmocka_unit_test(directories_report_entries_types_symlinks_and_files),
	    cmocka_unit_test(the_executable_bit_counts_only_when_asked),
	    cmocka_unit_test(long_lists_are_capped),
	    cmocka_unit_test(json_names_the_missing_symbol),
	    cmocka_unit_test(a_missing_path_is_an_error_not_a_difference),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
