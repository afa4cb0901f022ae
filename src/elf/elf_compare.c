/*
 * ELF comparison with libelf: header fields, defined and undefined symbols
 * (from .symtab when both files have one, else .dynsym), and sections by
 * name, type, flags, size and contents.
 *
 * Names repeat (local symbols of one name in two functions, COMDAT ".group"
 * sections), so the k-th occurrence of a name in A is matched with the k-th in
 * B. Symbol values are not compared: every address moves when one function
 * grows, which would drown the difference that matters.
 *
 * The input is untrusted: a truncated or corrupt file makes libelf fail, and
 * section contents are read from the image only after checking their range
 * against its size.
 */
#include "elf/compare_internal.h"

#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/dwarf_plugin.h"

struct esec {
	char *name;
	GElf_Shdr sh;
};

struct esym {
	char *name;
	char *section; /* NULL when undefined */
	unsigned bind, type;
	uint64_t size;
	int defined;
};

struct emodel {
	Elf *elf;
	const unsigned char *image;
	size_t size;
	GElf_Ehdr eh;
	struct esec *secs; /* secs[i] is section header i + 1 */
	size_t nsecs;
	struct esym *syms;
	size_t nsyms;
	int has_symtab, has_dynsym;
	char err[256];
};

/* Names of ELF constants, as readelf prints them. */
struct named {
	unsigned value;
	const char *name;
};

/* clang-format off */
static const struct named bindings[] = {
	{ STB_LOCAL, "LOCAL" },
	{ STB_GLOBAL, "GLOBAL" },
	{ STB_WEAK, "WEAK" },
	{ STB_GNU_UNIQUE, "UNIQUE" },
};

static const struct named symbol_types[] = {
	{ STT_NOTYPE, "NOTYPE" },
	{ STT_OBJECT, "OBJECT" },
	{ STT_FUNC, "FUNC" },
	{ STT_SECTION, "SECTION" },
	{ STT_FILE, "FILE" },
	{ STT_COMMON, "COMMON" },
	{ STT_TLS, "TLS" },
	{ STT_GNU_IFUNC, "IFUNC" },
};

static const struct named section_types[] = {
	{ SHT_NULL, "NULL" },
	{ SHT_PROGBITS, "PROGBITS" },
	{ SHT_SYMTAB, "SYMTAB" },
	{ SHT_STRTAB, "STRTAB" },
	{ SHT_RELA, "RELA" },
	{ SHT_HASH, "HASH" },
	{ SHT_DYNAMIC, "DYNAMIC" },
	{ SHT_NOTE, "NOTE" },
	{ SHT_NOBITS, "NOBITS" },
	{ SHT_REL, "REL" },
	{ SHT_DYNSYM, "DYNSYM" },
	{ SHT_INIT_ARRAY, "INIT_ARRAY" },
	{ SHT_FINI_ARRAY, "FINI_ARRAY" },
	{ SHT_PREINIT_ARRAY, "PREINIT_ARRAY" },
	{ SHT_GROUP, "GROUP" },
	{ SHT_SYMTAB_SHNDX, "SYMTAB_SHNDX" },
	{ SHT_GNU_HASH, "GNU_HASH" },
	{ SHT_GNU_versym, "VERSYM" },
	{ SHT_GNU_verneed, "VERNEED" },
	{ SHT_GNU_verdef, "VERDEF" },
};

static const struct named machines[] = {
	{ EM_386, "i386" },
	{ EM_ARM, "ARM" },
	{ EM_X86_64, "x86-64" },
	{ EM_AARCH64, "AArch64" },
	{ EM_PPC64, "PowerPC64" },
	{ EM_S390, "S/390" },
	{ EM_RISCV, "RISC-V" },
	{ 190, "NVIDIA CUDA" }, /* EM_CUDA, missing from older headers */
	{ 224, "AMDGPU" },      /* EM_AMDGPU */
	{ EM_BPF, "BPF" },
};

static const struct named elf_types[] = {
	{ ET_REL, "REL" },
	{ ET_EXEC, "EXEC" },
	{ ET_DYN, "DYN" },
	{ ET_CORE, "CORE" },
};
/* clang-format on */

#define NAME_OF(table, v, fallback) name_of(table, sizeof table / sizeof *table, v, fallback)

/* The name of v in the table, or `fallback`. */
static const char *name_of(const struct named *t, size_t n, unsigned v, const char *fallback)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].value == v)
			return t[i].name;
	return fallback;
}

/* A name, or the number in `fmt` (e.g. "BIND_%u") written into tmp. */
static const char *name_or_number(const char *name, unsigned v, const char *fmt, char *tmp,
                                  size_t n)
{
	if (name)
		return name;
	snprintf(tmp, n, fmt, v);
	return tmp;
}

static const char *bind_name(unsigned b, char *tmp, size_t n)
{
	return name_or_number(NAME_OF(bindings, b, NULL), b, "BIND_%u", tmp, n);
}

static const char *symtype_name(unsigned t, char *tmp, size_t n)
{
	return name_or_number(NAME_OF(symbol_types, t, NULL), t, "TYPE_%u", tmp, n);
}

static const char *sectype_name(uint32_t t, char *tmp, size_t n)
{
	return name_or_number(NAME_OF(section_types, t, NULL), t, "0x%x", tmp, n);
}

static const char *machine_name(unsigned m)
{
	return NAME_OF(machines, m, "machine");
}

static const char *etype_name(unsigned t)
{
	return NAME_OF(elf_types, t, "type");
}

static void model_free(struct emodel *m)
{
	for (size_t i = 0; i < m->nsecs; i++)
		free(m->secs[i].name);
	for (size_t i = 0; i < m->nsyms; i++) {
		free(m->syms[i].name);
		free(m->syms[i].section);
	}
	free(m->secs);
	free(m->syms);
	if (m->elf)
		elf_end(m->elf);
	memset(m, 0, sizeof *m);
}

static int fail(struct emodel *m, const char *what)
{
	snprintf(m->err, sizeof m->err, "%s: %s", what, elf_errmsg(-1));
	return -1;
}

static int load_sections(struct emodel *m)
{
	size_t shnum, shstrndx;
	if (elf_getshdrnum(m->elf, &shnum) < 0)
		return fail(m, "section count");
	if (shnum == 0)
		return 0;
	if (elf_getshdrstrndx(m->elf, &shstrndx) < 0)
		return fail(m, "section name table");
	m->secs = xcalloc(shnum, sizeof *m->secs);
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(m->elf, scn)) != NULL) {
		size_t idx = elf_ndxscn(scn);
		if (idx == 0 || idx >= shnum || idx - 1 != m->nsecs)
			break;
		struct esec *s = &m->secs[m->nsecs];
		if (!gelf_getshdr(scn, &s->sh))
			return fail(m, "section header");
		const char *name = elf_strptr(m->elf, shstrndx, s->sh.sh_name);
		s->name = name ? xstrdup(name) : xasprintf("#%zu", idx);
		m->nsecs++;
		if (s->sh.sh_type != SHT_NOBITS && s->sh.sh_size &&
		    (s->sh.sh_offset > m->size || s->sh.sh_size > m->size - s->sh.sh_offset)) {
			snprintf(m->err, sizeof m->err,
			         "section %s extends past the end of the file", s->name);
			return -1;
		}
	}
	return 0;
}

static Elf_Scn *find_section(struct emodel *m, uint32_t type, size_t *index)
{
	for (size_t i = 0; i < m->nsecs; i++)
		if (m->secs[i].sh.sh_type == type) {
			*index = i + 1;
			return elf_getscn(m->elf, i + 1);
		}
	return NULL;
}

static char *section_of(struct emodel *m, size_t shndx)
{
	if (shndx == SHN_ABS)
		return xstrdup("*ABS*");
	if (shndx == SHN_COMMON)
		return xstrdup("*COM*");
	if (shndx >= 1 && shndx <= m->nsecs)
		return xstrdup(m->secs[shndx - 1].name);
	return xasprintf("#%zu", shndx);
}

/* Reads the symbols of the first section of `type`: the named ones, FILE
 * symbols (the source file an object was compiled from: nvcc's temporary
 * tmpxft_… names differ from run to run) and SECTION symbols, named after
 * their section. */
static int load_symbols(struct emodel *m, uint32_t type)
{
	size_t symidx = 0;
	Elf_Scn *scn = find_section(m, type, &symidx);
	if (!scn)
		return 0;
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data)
		return fail(m, "symbol table");
	/* Section indexes beyond 0xff00 live in a parallel table. */
	Elf_Data *xdata = NULL;
	for (size_t i = 0; i < m->nsecs; i++)
		if (m->secs[i].sh.sh_type == SHT_SYMTAB_SHNDX && m->secs[i].sh.sh_link == symidx) {
			Elf_Scn *xs = elf_getscn(m->elf, i + 1);
			xdata = xs ? elf_getdata(xs, NULL) : NULL;
		}
	size_t strndx = m->secs[symidx - 1].sh.sh_link;
	size_t entsize = gelf_fsize(m->elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!entsize)
		return fail(m, "symbol size");
	size_t n = data->d_size / entsize;
	m->syms = xcalloc(n ? n : 1, sizeof *m->syms);
	for (size_t i = 1; i < n && i <= INT32_MAX; i++) {
		GElf_Sym sym;
		Elf32_Word xndx = 0;
		if (!gelf_getsymshndx(data, xdata, (int)i, &sym, &xndx))
			return fail(m, "symbol");
		unsigned type_ = GELF_ST_TYPE(sym.st_info);
		size_t shndx = sym.st_shndx == SHN_XINDEX ? xndx : sym.st_shndx;
		const char *name = elf_strptr(m->elf, strndx, sym.st_name);
		if (type_ == STT_SECTION && (!name || !*name) && shndx >= 1 && shndx <= m->nsecs)
			name = m->secs[shndx - 1].name;
		if (!name || !*name)
			continue;
		struct esym *s = &m->syms[m->nsyms++];
		s->name = xstrdup(name);
		s->bind = GELF_ST_BIND(sym.st_info);
		s->type = type_;
		s->size = sym.st_size;
		s->defined = sym.st_shndx != SHN_UNDEF;
		if (s->defined)
			s->section = section_of(m, shndx);
	}
	return 0;
}

/* libelf reports a file whose section header table is cut off as a file
 * with no sections, which would read as "every section missing": check the
 * tables' ranges against the image first. */
static int check_tables(struct emodel *m)
{
	const GElf_Ehdr *eh = &m->eh;
	size_t shdr_size = gelf_fsize(m->elf, ELF_T_SHDR, 1, EV_CURRENT);
	size_t phdr_size = gelf_fsize(m->elf, ELF_T_PHDR, 1, EV_CURRENT);
	/* e_shnum 0 with a table: the count is in section 0's sh_size. */
	uint64_t shnum = eh->e_shnum ? eh->e_shnum : eh->e_shoff ? 1 : 0;
	if (shnum && (eh->e_shentsize != shdr_size || eh->e_shoff > m->size ||
	              shnum > (m->size - eh->e_shoff) / shdr_size)) {
		snprintf(m->err, sizeof m->err,
		         "section header table (%llu entries at offset %llu) past the end of the "
		         "file (%zu bytes)",
		         (unsigned long long)shnum, (unsigned long long)eh->e_shoff, m->size);
		return -1;
	}
	if (eh->e_phnum && (eh->e_phentsize != phdr_size || eh->e_phoff > m->size ||
	                    eh->e_phnum > (m->size - eh->e_phoff) / phdr_size)) {
		snprintf(m->err, sizeof m->err,
		         "program header table (%u entries at offset %llu) past the end of the "
		         "file (%zu bytes)",
		         (unsigned)eh->e_phnum, (unsigned long long)eh->e_phoff, m->size);
		return -1;
	}
	size_t n;
	if (elf_getshdrnum(m->elf, &n) < 0)
		return fail(m, "section count");
	if (eh->e_shnum && n != eh->e_shnum) {
		snprintf(m->err, sizeof m->err, "%zu of %u section headers readable", n,
		         (unsigned)eh->e_shnum);
		return -1;
	}
	return 0;
}

static int model_load(struct emodel *m, const unsigned char *image, size_t size)
{
	memset(m, 0, sizeof *m);
	m->image = image;
	m->size = size;
	/* libelf only reads the image here; the cast drops a const it never
	 * needed for an ELF_C_READ descriptor. */
	m->elf = elf_memory((char *)image, size);
	if (!m->elf)
		return fail(m, "not ELF");
	if (elf_kind(m->elf) != ELF_K_ELF) {
		snprintf(m->err, sizeof m->err, "not an ELF object");
		return -1;
	}
	if (!gelf_getehdr(m->elf, &m->eh))
		return fail(m, "ELF header");
	if (check_tables(m) < 0 || load_sections(m) < 0)
		return -1;
	for (size_t i = 0; i < m->nsecs; i++) {
		m->has_symtab |= m->secs[i].sh.sh_type == SHT_SYMTAB;
		m->has_dynsym |= m->secs[i].sh.sh_type == SHT_DYNSYM;
	}
	return 0;
}

/* ---- header ---- */

static void header_field(struct cmp_ctx *c, size_t entry, const char *field, const char *va,
                         const char *vb)
{
	if (strcmp(va, vb) != 0)
		report_add_item(c->rep, entry, CMP_ELF_HEADER_DIFFERS, field,
		                "ELF header %s differs: %s in A, %s in B", field, va, vb);
}

static void compare_header(struct cmp_ctx *c, size_t entry, const GElf_Ehdr *a, const GElf_Ehdr *b)
{
	char va[64], vb[64];
	snprintf(va, sizeof va, "ELFCLASS%d", a->e_ident[EI_CLASS] == ELFCLASS64 ? 64 : 32);
	snprintf(vb, sizeof vb, "ELFCLASS%d", b->e_ident[EI_CLASS] == ELFCLASS64 ? 64 : 32);
	header_field(c, entry, "class", va, vb);
	header_field(c, entry, "byte order",
	             a->e_ident[EI_DATA] == ELFDATA2MSB ? "big-endian" : "little-endian",
	             b->e_ident[EI_DATA] == ELFDATA2MSB ? "big-endian" : "little-endian");
	snprintf(va, sizeof va, "%u", a->e_ident[EI_OSABI]);
	snprintf(vb, sizeof vb, "%u", b->e_ident[EI_OSABI]);
	header_field(c, entry, "OS/ABI", va, vb);
	snprintf(va, sizeof va, "%s (%u)", etype_name(a->e_type), a->e_type);
	snprintf(vb, sizeof vb, "%s (%u)", etype_name(b->e_type), b->e_type);
	header_field(c, entry, "e_type", va, vb);
	snprintf(va, sizeof va, "%s (%u)", machine_name(a->e_machine), a->e_machine);
	snprintf(vb, sizeof vb, "%s (%u)", machine_name(b->e_machine), b->e_machine);
	header_field(c, entry, "e_machine", va, vb);
	snprintf(va, sizeof va, "0x%llx", (unsigned long long)a->e_flags);
	snprintf(vb, sizeof vb, "0x%llx", (unsigned long long)b->e_flags);
	header_field(c, entry, "e_flags", va, vb);
	snprintf(va, sizeof va, "0x%llx", (unsigned long long)a->e_entry);
	snprintf(vb, sizeof vb, "0x%llx", (unsigned long long)b->e_entry);
	header_field(c, entry, "e_entry", va, vb);
}

/* ---- symbols ---- */

static void symbol_alone(struct cmp_ctx *c, size_t entry, const struct esym *s, int in_a)
{
	char tb[32], tt[32];
	const char *bind = bind_name(s->bind, tb, sizeof tb);
	const char *type = symtype_name(s->type, tt, sizeof tt);
	const char *where = in_a ? "missing in B" : "only in B";
	struct compare_item *it;
	if (s->defined) {
		it = report_add_item(c->rep, entry,
		                     in_a ? CMP_SYMBOL_MISSING_IN_B : CMP_SYMBOL_ONLY_IN_B, s->name,
		                     "symbol %s %s: %s %s in %s, %llu bytes", s->name, where, bind,
		                     type, s->section, (unsigned long long)s->size);
		it->section = xstrdup(s->section);
	} else {
		it = report_add_item(c->rep, entry,
		                     in_a ? CMP_UNDEF_MISSING_IN_B : CMP_UNDEF_ONLY_IN_B, s->name,
		                     "undefined symbol %s %s: %s %s", s->name, where, bind, type);
	}
	it->binding = xstrdup(bind);
	it->type = xstrdup(type);
	it->have = in_a ? CMP_HAVE_SIZE_A : CMP_HAVE_SIZE_B;
	if (in_a)
		it->size_a = s->size;
	else
		it->size_b = s->size;
}

static void symbol_pair(struct cmp_ctx *c, size_t entry, const struct esym *a, const struct esym *b)
{
	if (!a->defined)
		return; /* an undefined reference has neither size nor section */
	char t1[32], t2[32];
	struct buf d;
	buf_init(&d);
	if (a->size != b->size)
		buf_addf(&d, ", size %llu -> %llu", (unsigned long long)a->size,
		         (unsigned long long)b->size);
	if (strcmp(a->section, b->section) != 0)
		buf_addf(&d, ", section %s -> %s", a->section, b->section);
	if (a->bind != b->bind) {
		buf_addf(&d, ", binding %s", bind_name(a->bind, t1, sizeof t1));
		buf_addf(&d, " -> %s", bind_name(b->bind, t2, sizeof t2));
	}
	if (a->type != b->type) {
		buf_addf(&d, ", type %s", symtype_name(a->type, t1, sizeof t1));
		buf_addf(&d, " -> %s", symtype_name(b->type, t2, sizeof t2));
	}
	if (d.len) {
		struct compare_item *it =
		    report_add_item(c->rep, entry, CMP_SYMBOL_CHANGED, a->name,
		                    "symbol %s changed: %s", a->name, d.data + 2);
		it->section = xstrdup(a->section);
		it->binding = xstrdup(bind_name(a->bind, t1, sizeof t1));
		it->type = xstrdup(symtype_name(a->type, t2, sizeof t2));
		it->have = CMP_HAVE_SIZE_A | CMP_HAVE_SIZE_B;
		it->size_a = a->size;
		it->size_b = b->size;
	}
	buf_free(&d);
}

static void compare_symbols(struct cmp_ctx *c, size_t entry, const struct emodel *a,
                            const struct emodel *b)
{
	const char **na = xcalloc(a->nsyms + 1, sizeof *na),
	           **nb = xcalloc(b->nsyms + 1, sizeof *nb);
	int *ca = xcalloc(a->nsyms + 1, sizeof *ca), *cb = xcalloc(b->nsyms + 1, sizeof *cb);
	size_t *pa = xcalloc(a->nsyms + 1, sizeof *pa), *pb = xcalloc(b->nsyms + 1, sizeof *pb);
	for (size_t i = 0; i < a->nsyms; i++)
		na[i] = a->syms[i].name, ca[i] = a->syms[i].defined;
	for (size_t i = 0; i < b->nsyms; i++)
		nb[i] = b->syms[i].name, cb[i] = b->syms[i].defined;
	match_names(na, ca, a->nsyms, nb, cb, b->nsyms, pa, pb);
	/* A FILE symbol names the source an object was made from; one present in
	 * each file under another name is that source renamed (nvcc's
	 * tmpxft_0000660b_… and tmpxft_000068c7_…), not two symbols. */
	for (size_t i = 0, j = 0; i < a->nsyms; i++) {
		if (pa[i] != SIZE_MAX || a->syms[i].type != STT_FILE)
			continue;
		while (j < b->nsyms && (pb[j] != SIZE_MAX || b->syms[j].type != STT_FILE))
			j++;
		if (j == b->nsyms)
			break;
		pa[i] = j;
		pb[j] = i;
		struct compare_item *it = report_add_item(
		    c->rep, entry, CMP_SYMBOL_CHANGED, a->syms[i].name,
		    "FILE symbol %s in A, %s in B", a->syms[i].name, b->syms[j].name);
		it->type = xstrdup("FILE");
	}
	/* Defined symbols first in every list: they are what a linker misses. */
	for (int pass = 1; pass >= 0; pass--) {
		for (size_t i = 0; i < a->nsyms; i++) {
			if (a->syms[i].defined != pass)
				continue;
			if (pa[i] == SIZE_MAX)
				symbol_alone(c, entry, &a->syms[i], 1);
			else if (a->syms[i].type != STT_FILE || b->syms[pa[i]].type != STT_FILE)
				symbol_pair(c, entry, &a->syms[i], &b->syms[pa[i]]);
		}
		for (size_t i = 0; i < b->nsyms; i++)
			if (b->syms[i].defined == pass && pb[i] == SIZE_MAX)
				symbol_alone(c, entry, &b->syms[i], 0);
	}
	free(na), free(nb), free(ca), free(cb), free(pa), free(pb);
}

/* ---- sections ---- */

static void section_alone(struct cmp_ctx *c, size_t entry, const struct esec *s, int in_a)
{
	char tt[32];
	const char *type = sectype_name(s->sh.sh_type, tt, sizeof tt);
	struct compare_item *it = report_add_item(
	    c->rep, entry, in_a ? CMP_SECTION_MISSING_IN_B : CMP_SECTION_ONLY_IN_B, s->name,
	    "section %s %s: %s, %llu bytes", s->name, in_a ? "missing in B" : "only in B", type,
	    (unsigned long long)s->sh.sh_size);
	it->type = xstrdup(type);
	it->have = in_a ? CMP_HAVE_SIZE_A : CMP_HAVE_SIZE_B;
	if (in_a)
		it->size_a = s->sh.sh_size;
	else
		it->size_b = s->sh.sh_size;
}

/* Sections that hold NUL-terminated strings: string tables (.strtab,
 * .shstrtab), merged strings (.rodata.str1.1, .debug_str, .debug_line_str)
 * and .comment (the compilers' identification). */
static int is_string_section(const struct esec *s)
{
	return s->sh.sh_type == SHT_STRTAB || (s->sh.sh_flags & SHF_STRINGS) ||
	       !strcmp(s->name, ".comment");
}

static void section_pair(struct cmp_ctx *c, size_t entry, const struct emodel *ma,
                         const struct esec *a, const struct emodel *mb, const struct esec *b)
{
	char t1[32], t2[32];
	struct buf d;
	buf_init(&d);
	uint64_t sa = a->sh.sh_size, sb = b->sh.sh_size;
	int have_off = 0;
	size_t off = 0;
	if (a->sh.sh_type != b->sh.sh_type) {
		buf_addf(&d, ", type %s", sectype_name(a->sh.sh_type, t1, sizeof t1));
		buf_addf(&d, " in A, %s in B", sectype_name(b->sh.sh_type, t2, sizeof t2));
	}
	if (a->sh.sh_flags != b->sh.sh_flags)
		buf_addf(&d, ", flags 0x%llx in A, 0x%llx in B", (unsigned long long)a->sh.sh_flags,
		         (unsigned long long)b->sh.sh_flags);
	if (a->sh.sh_type == SHT_NOBITS || b->sh.sh_type == SHT_NOBITS) {
		if (sa != sb)
			buf_addf(&d, ", %llu bytes in A, %llu in B (no contents)",
			         (unsigned long long)sa, (unsigned long long)sb);
	} else {
		/* Ranges were checked against the image sizes when loading. */
		const unsigned char *pa = ma->image + (sa ? a->sh.sh_offset : 0);
		const unsigned char *pb = mb->image + (sb ? b->sh.sh_offset : 0);
		off = first_difference(pa, sa, pb, sb);
		if (sa != sb) {
			have_off = 1;
			buf_addf(&d,
			         ", %llu bytes in A, %llu in B; first difference at offset 0x%zx",
			         (unsigned long long)sa, (unsigned long long)sb, off);
		} else if (off < sa) {
			have_off = 1;
			size_t ndiff = 0;
			for (size_t i = off; i < sa; i++)
				ndiff += pa[i] != pb[i];
			buf_addf(
			    &d,
			    ", %llu bytes; first difference at offset 0x%zx, %zu byte%s differ%s",
			    (unsigned long long)sa, off, ndiff, ndiff == 1 ? "" : "s",
			    ndiff == 1 ? "s" : "");
		}
	}
	if (d.len && a->sh.sh_type == b->sh.sh_type && a->sh.sh_type != SHT_NOBITS) {
		/* What the bytes say: a build date, a compiler version, a path. */
		const unsigned char *pa = ma->image + (sa ? a->sh.sh_offset : 0);
		const unsigned char *pb = mb->image + (sb ? b->sh.sh_offset : 0);
		if (a->sh.sh_type == SHT_NOTE) {
			Elf_Scn *xa = elf_getscn(ma->elf, (size_t)(a - ma->secs) + 1);
			Elf_Scn *xb = elf_getscn(mb->elf, (size_t)(b - mb->secs) + 1);
			elf_notes_differ(xa ? elf_getdata(xa, NULL) : NULL,
			                 xb ? elf_getdata(xb, NULL) : NULL, &d);
		} else if (is_string_section(a) && is_string_section(b)) {
			strings_differ(pa, sa, pb, sb, c->rep->list_limit, &d);
		} else if (have_off) {
			text_at_difference(pa, sa, pb, sb, off, &d);
		}
	}
	if (d.len) {
		struct compare_item *it =
		    report_add_item(c->rep, entry, CMP_SECTION_DIFFERS, a->name,
		                    "section %s differs: %s", a->name, d.data + 2);
		it->type = xstrdup(sectype_name(a->sh.sh_type, t1, sizeof t1));
		it->have = CMP_HAVE_SIZE_A | CMP_HAVE_SIZE_B | (have_off ? CMP_HAVE_OFFSET : 0);
		it->size_a = sa;
		it->size_b = sb;
		it->offset = off;
	}
	buf_free(&d);
}

static void compare_sections(struct cmp_ctx *c, size_t entry, const struct emodel *a,
                             const struct emodel *b)
{
	const char **na = xcalloc(a->nsecs + 1, sizeof *na),
	           **nb = xcalloc(b->nsecs + 1, sizeof *nb);
	size_t *pa = xcalloc(a->nsecs + 1, sizeof *pa), *pb = xcalloc(b->nsecs + 1, sizeof *pb);
	for (size_t i = 0; i < a->nsecs; i++)
		na[i] = a->secs[i].name;
	for (size_t i = 0; i < b->nsecs; i++)
		nb[i] = b->secs[i].name;
	match_names(na, NULL, a->nsecs, nb, NULL, b->nsecs, pa, pb);
	for (size_t i = 0; i < a->nsecs; i++) {
		if (pa[i] == SIZE_MAX)
			section_alone(c, entry, &a->secs[i], 1);
		else
			section_pair(c, entry, a, &a->secs[i], b, &b->secs[pa[i]]);
	}
	for (size_t i = 0; i < b->nsecs; i++)
		if (pb[i] == SIZE_MAX)
			section_alone(c, entry, &b->secs[i], 0);
	free(na), free(nb), free(pa), free(pb);
}

/* ---- DWARF ---- */

static int has_section(const struct emodel *m, const char *name)
{
	for (size_t i = 0; i < m->nsecs; i++)
		if (!strcmp(m->secs[i].name, name))
			return 1;
	return 0;
}

static int same_str(const char *x, const char *y)
{
	return (!x && !y) || (x && y && !strcmp(x, y));
}

static void attr_differs(struct buf *d, const char *attr, const char *x, const char *y)
{
	if (!same_str(x, y))
		buf_addf(d, ", %s %s in A, %s in B", attr, x ? x : "(none)", y ? y : "(none)");
}

/* The compile units of two objects with debug information, in order: their
 * names and directories (a checkout's path in a -g object) and producers
 * (the compiler and its options). */
static void compare_dwarf(struct cmp_ctx *c, size_t entry, const unsigned char *a, size_t alen,
                          const unsigned char *b, size_t blen)
{
	const struct dwarf_ops *ops = compare_plugin(c->dwarf_plugin, DWARF_PLUGIN_SYMBOL);
	if (!ops)
		return;
	struct dwarf_unit *ua = NULL, *ub = NULL;
	size_t na = 0, nb = 0;
	char why[256] = "";
	if (ops->units(a, alen, &ua, &na, why, sizeof why) == 0 &&
	    ops->units(b, blen, &ub, &nb, why, sizeof why) == 0) {
		for (size_t i = 0; i < na || i < nb; i++) {
			const struct dwarf_unit *x = i < na ? &ua[i] : NULL,
			                        *y = i < nb ? &ub[i] : NULL;
			const char *name = x && x->name ? x->name : y && y->name ? y->name : "?";
			struct buf d;
			buf_init(&d);
			if (!x || !y) {
				buf_addf(&d, ", only in %s", x ? "A" : "B");
			} else {
				attr_differs(&d, "DW_AT_name", x->name, y->name);
				attr_differs(&d, "DW_AT_comp_dir", x->comp_dir, y->comp_dir);
				attr_differs(&d, "DW_AT_producer", x->producer, y->producer);
			}
			if (d.len)
				report_add_item(c->rep, entry, CMP_DWARF_UNIT_DIFFERS, name,
				                "compile unit %zu (%s): %s", i + 1, name,
				                d.data + 2);
			buf_free(&d);
		}
	}
	ops->free(ua, na);
	ops->free(ub, nb);
}

int elf_compare(struct cmp_ctx *c, size_t entry, const unsigned char *a, size_t alen,
                const unsigned char *b, size_t blen)
{
	struct emodel ma, mb;
	int ra = model_load(&ma, a, alen);
	int rb = model_load(&mb, b, blen);
	if (ra == 0 && rb == 0) {
		/* Compare like with like: a stripped file has only .dynsym. */
		uint32_t table = ma.has_symtab && mb.has_symtab   ? SHT_SYMTAB
		                 : ma.has_dynsym && mb.has_dynsym ? SHT_DYNSYM
		                                                  : SHT_NULL;
		if (table != SHT_NULL) {
			ra = load_symbols(&ma, table);
			rb = load_symbols(&mb, table);
		}
	}
	if (ra < 0)
		report_add_item(c->rep, entry, CMP_UNREADABLE, "A",
		                "A is not a readable ELF file (%s)", ma.err);
	if (rb < 0)
		report_add_item(c->rep, entry, CMP_UNREADABLE, "B",
		                "B is not a readable ELF file (%s)", mb.err);
	if (ra == 0 && rb == 0) {
		compare_header(c, entry, &ma.eh, &mb.eh);
		compare_symbols(c, entry, &ma, &mb);
		compare_sections(c, entry, &ma, &mb);
		/* Only when the debug information differs: loading libdw costs
		 * more than the rest of the comparison. */
		size_t before = c->rep->entries[entry].nitems;
		int debug_differs = 0;
		for (size_t i = 0; i < before; i++)
			debug_differs |=
			    c->rep->entries[entry].items[i].kind == CMP_SECTION_DIFFERS &&
			    !strncmp(c->rep->entries[entry].items[i].name, ".debug_", 7);
		if (debug_differs && has_section(&ma, ".debug_info") &&
		    has_section(&mb, ".debug_info"))
			compare_dwarf(c, entry, a, alen, b, blen);
	}
	model_free(&ma);
	model_free(&mb);
	return ra < 0 || rb < 0 ? -1 : 0;
}
