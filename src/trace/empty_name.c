#include "trace/empty_name.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/buf.h"

/* mov %ecx,%r10d; mov $__NR_newfstatat,%eax; syscall: glibc's newfstatat
 * wrapper (fstatat64.c), where every stat call of the object ends. */
static const unsigned char wrapper_code[] = {0x41, 0x89, 0xca, 0xb8, 0x06,
                                             0x01, 0x00, 0x00, 0x0f, 0x05};
/* fstat64.c, laid out just before it: mov $AT_EMPTY_PATH,%ecx;
 * lea disp32(%rip),%rsi (the literal); then a jmp rel32 to the wrapper. */
static const unsigned char fstat_code[] = {0xb9, 0x00, 0x10, 0x00, 0x00, 0x48, 0x8d, 0x35};
#define FSTAT_LEN     (sizeof fstat_code + 4 + 5)
#define CALLER_WINDOW 512

static int32_t le32(const unsigned char *p)
{
	uint32_t v =
	    (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	return (int32_t)v;
}

/* The offset of the last copy of wrapper_code in text[0, end), or -1. From
 * the end, a byte at a time through memrchr: the loader's wrapper lies in
 * the last fifth of its code, and a forward memmem over all of it took
 * 40 us, a tenth of the stops it spares in a small compile. */
static long find_wrapper_before(const unsigned char *text, size_t end)
{
	const size_t last = sizeof wrapper_code - 1;
	while (end > last) {
		const unsigned char *at = memrchr(text + last, wrapper_code[last], end - last);
		if (!at)
			return -1;
		size_t off = (size_t)(at - text) - last;
		if (!memcmp(text + off, wrapper_code, last))
			return (long)off;
		end = (size_t)(at - text);
	}
	return -1;
}

/* The literal that fstat's code just before the wrapper at offset w loads
 * into the path argument, or 0. */
static uintptr_t fstat_literal(const unsigned char *text, uintptr_t text_addr, size_t w,
                               int (*is_read_only_nul)(uintptr_t addr, void *ctx), void *ctx)
{
	uintptr_t literal = 0;
	size_t from = w > CALLER_WINDOW ? w - CALLER_WINDOW : 0;
	for (size_t i = from; i + FSTAT_LEN <= w; i++) {
		const unsigned char *c = text + i;
		if (memcmp(c, fstat_code, sizeof fstat_code) || c[12] != 0xe9)
			continue;
		uintptr_t after_lea = text_addr + i + sizeof fstat_code + 4;
		uintptr_t after_jmp = after_lea + 5;
		if (after_jmp + (uintptr_t)(intptr_t)le32(c + 13) != text_addr + w)
			continue;
		uintptr_t t = after_lea + (uintptr_t)(intptr_t)le32(c + 8);
		/* A zero byte the object maps read-only: "" whoever points at
		 * it. */
		if (literal || !is_read_only_nul(t, ctx))
			return 0;
		literal = t;
	}
	return literal;
}

int empty_name_site_in(const unsigned char *text, size_t text_len, uintptr_t text_addr,
                       uintptr_t wrapper, int (*is_read_only_nul)(uintptr_t addr, void *ctx),
                       void *ctx, struct empty_name_site *out)
{
	size_t w = 0;
	uintptr_t literal = 0;
	if (wrapper) {
		if (wrapper < text_addr || wrapper - text_addr > text_len - sizeof wrapper_code ||
		    memcmp(text + (wrapper - text_addr), wrapper_code, sizeof wrapper_code))
			return 0;
		w = wrapper - text_addr;
		literal = fstat_literal(text, text_addr, w, is_read_only_nul, ctx);
	} else {
		/* The copy that fstat's code jumps to. */
		long at;
		for (size_t end = text_len; !literal && (at = find_wrapper_before(text, end)) >= 0;
		     end = (size_t)at + sizeof wrapper_code - 1)
			literal =
			    fstat_literal(text, text_addr, w = (size_t)at, is_read_only_nul, ctx);
	}
	if (!literal)
		return 0;
	uintptr_t site = text_addr + w + sizeof wrapper_code;
	if (literal <= site || literal - site > UINT32_MAX)
		return 0;
	out->ip_page_offset = (uint32_t)(site & 0xfff);
	out->distance = (uint32_t)(literal - site);
	return 1;
}

/* ---- the objects, read from their files ---- */

#if defined(__x86_64__) && !defined(__ILP32__)
#define HOST_MACHINE EM_X86_64
/* The psABI's loader, which the system's programs name: the sites come
 * from system files only, never from a loader that a program of the
 * build names (PT_INTERP) and could have made itself. A program with
 * another loader or C library stops at each fstat, as before. */
#define ABI_LOADER "/lib64/ld-linux-x86-64.so.2"
#endif

#ifdef HOST_MACHINE
/* An ELF object as its file holds it, read where the search looks: the
 * sites are a property of the bytes, the same wherever the loader places
 * them, since it moves every segment by one multiple of the page size.
 * Read, not mapped: the page faults and the unmapping of a mapped libc
 * cost 60 us a step. */
#define OBJECT_MAX_PHDRS 32
/* The end of the loader's code searched first: its wrapper lies in the
 * last fifth of it. */
#define LOADER_TAIL     (32 * 1024)
#define OBJECT_MAX_TEXT (64u << 20)

struct object {
	int fd;
	uint64_t size;
	Elf64_Ehdr eh;
	Elf64_Phdr ph[OBJECT_MAX_PHDRS];
};

static int object_read(const struct object *o, void *buf, uint64_t len, uint64_t off)
{
	if (off > o->size || len > o->size - off)
		return -1;
	return pread(o->fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -1;
}

static int object_open(struct object *o, const char *path)
{
	o->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (o->fd < 0)
		return -1;
	struct stat st;
	if (fstat(o->fd, &st) == 0 && S_ISREG(st.st_mode)) {
		o->size = (uint64_t)st.st_size;
		const Elf64_Ehdr *eh = &o->eh;
		if (object_read(o, &o->eh, sizeof o->eh, 0) == 0 &&
		    !memcmp(eh->e_ident, ELFMAG, SELFMAG) && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
		    eh->e_ident[EI_DATA] == ELFDATA2LSB && eh->e_machine == HOST_MACHINE &&
		    eh->e_phentsize == sizeof(Elf64_Phdr) && eh->e_phnum <= OBJECT_MAX_PHDRS &&
		    object_read(o, o->ph, eh->e_phnum * sizeof(Elf64_Phdr), eh->e_phoff) == 0)
			return 0;
	}
	close(o->fd);
	return -1;
}

/* The loaded segment whose file part holds len bytes from the object's
 * virtual address addr, or NULL. */
static const Elf64_Phdr *object_segment(const struct object *o, uint64_t addr, uint64_t len)
{
	for (unsigned i = 0; i < o->eh.e_phnum; i++) {
		const Elf64_Phdr *ph = &o->ph[i];
		if (ph->p_type == PT_LOAD && addr >= ph->p_vaddr &&
		    addr - ph->p_vaddr <= ph->p_filesz &&
		    len <= ph->p_filesz - (addr - ph->p_vaddr))
			return ph;
	}
	return NULL;
}

/* Reads len bytes at the object's virtual address addr. */
static int object_read_at(const struct object *o, void *buf, uint64_t len, uint64_t addr)
{
	const Elf64_Phdr *ph = object_segment(o, addr, len);
	return ph ? object_read(o, buf, len, ph->p_offset + (addr - ph->p_vaddr)) : -1;
}

/* The predicate of empty_name_site_in on the file: addr (a virtual
 * address of the object) lies in the file's part of a segment the
 * loader maps neither writable nor executable, and holds a zero byte. */
static int object_read_only_nul(uintptr_t addr, void *ctx)
{
	const struct object *o = ctx;
	const Elf64_Phdr *ph = object_segment(o, addr, 1);
	char c;
	return ph && (ph->p_flags & (PF_W | PF_X)) == 0 && object_read_at(o, &c, 1, addr) == 0 &&
	       c == 0;
}

/* The address of the defined function name among the object's dynamic
 * symbols, or 0: looked up as the loader does, through PT_DYNAMIC and the
 * GNU hash table, which reads a few hundred bytes where a scan of libc's
 * symbols read 106 KB. */
static uintptr_t object_function(const struct object *o, const char *name)
{
	uint64_t hash_at = 0, symtab = 0, strtab = 0, strsz = 0;
	for (unsigned i = 0; i < o->eh.e_phnum; i++) {
		const Elf64_Phdr *ph = &o->ph[i];
		if (ph->p_type != PT_DYNAMIC)
			continue;
		Elf64_Dyn dyn[64];
		uint64_t n = ph->p_filesz / sizeof *dyn;
		if (n > 64)
			n = 64;
		if (object_read(o, dyn, n * sizeof *dyn, ph->p_offset) < 0)
			return 0;
		for (uint64_t k = 0; k < n && dyn[k].d_tag != DT_NULL; k++) {
			uint64_t v = dyn[k].d_un.d_ptr;
			if (dyn[k].d_tag == DT_GNU_HASH)
				hash_at = v;
			else if (dyn[k].d_tag == DT_SYMTAB)
				symtab = v;
			else if (dyn[k].d_tag == DT_STRTAB)
				strtab = v;
			else if (dyn[k].d_tag == DT_STRSZ)
				strsz = v;
		}
	}
	uint32_t head[4]; /* nbuckets, symoffset, bloom_size, bloom_shift */
	if (!hash_at || !symtab || !strtab || object_read_at(o, head, sizeof head, hash_at) < 0 ||
	    head[0] == 0)
		return 0;
	uint32_t h = 5381; /* dl_new_hash */
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	uint64_t buckets = hash_at + sizeof head + (uint64_t)head[2] * 8;
	uint64_t chains = buckets + (uint64_t)head[0] * 4;
	uint32_t idx;
	if (object_read_at(o, &idx, 4, buckets + (uint64_t)(h % head[0]) * 4) < 0 || idx < head[1])
		return 0;
	size_t len = strlen(name);
	char got[64];
	if (len >= sizeof got)
		return 0;
	/* A chain ends at an entry with its low bit set; a bound stops a
	 * file that never sets it. */
	for (unsigned steps = 0; steps < 4096; steps++, idx++) {
		uint32_t c;
		if (object_read_at(o, &c, 4, chains + (uint64_t)(idx - head[1]) * 4) < 0)
			return 0;
		Elf64_Sym sym;
		if ((c | 1) == (h | 1) &&
		    object_read_at(o, &sym, sizeof sym, symtab + (uint64_t)idx * sizeof sym) == 0 &&
		    sym.st_name < strsz && strsz - sym.st_name > len &&
		    object_read_at(o, got, len + 1, strtab + sym.st_name) == 0 &&
		    !memcmp(got, name, len + 1) && ELF64_ST_TYPE(sym.st_info) == STT_FUNC &&
		    sym.st_shndx != SHN_UNDEF)
			return (uintptr_t)sym.st_value;
		if (c & 1)
			return 0;
	}
	return 0;
}

/* The site in the part [from, from + len) of the object's code: 1 with
 * *out, or 0. */
static int site_in_part(const struct object *o, uint64_t from, uint64_t len, uintptr_t wrapper,
                        struct empty_name_site *out)
{
	unsigned char *buf = xmalloc(len ? len : 1);
	int found = object_read_at(o, buf, len, from) == 0 &&
	            empty_name_site_in(buf, len, (uintptr_t)from, wrapper, object_read_only_nul,
	                               (void *)o, out);
	free(buf);
	return found;
}

/* The site of the object at path into *out: 1, or 0. libc's wrapper is
 * its exported fstatat, and only the code before it is read; the loader
 * exports none, and its code is small. */
static int object_site(const char *path, int is_libc, struct empty_name_site *out)
{
	struct object o;
	if (object_open(&o, path) < 0)
		return 0;
	const Elf64_Phdr *text = NULL;
	for (unsigned i = 0; i < o.eh.e_phnum && !text; i++)
		if (o.ph[i].p_type == PT_LOAD && (o.ph[i].p_flags & PF_X))
			text = &o.ph[i];
	/* glibc's code is 1.4 MB, its loader's 150 KB: anything far larger
	 * is not one of them, and is not read. */
	if (text && text->p_filesz > OBJECT_MAX_TEXT)
		text = NULL;
	int found = 0;
	if (text && is_libc) {
		uintptr_t w = object_function(&o, "fstatat");
		uint64_t start = text->p_vaddr, end = start + text->p_filesz;
		if (w >= start && w < end && end - w >= sizeof wrapper_code) {
			uint64_t from = w - start > CALLER_WINDOW ? w - CALLER_WINDOW : start;
			found = site_in_part(&o, from, w + sizeof wrapper_code - from, w, out);
		}
	} else if (text) {
		uint64_t tail = text->p_filesz > LOADER_TAIL ? LOADER_TAIL : text->p_filesz;
		uint64_t end = text->p_vaddr + text->p_filesz;
		found = site_in_part(&o, end - tail, tail, 0, out) ||
		        (tail < text->p_filesz &&
		         site_in_part(&o, text->p_vaddr, text->p_filesz, 0, out));
	}
	close(o.fd);
	return found;
}

#endif

size_t empty_name_sites(struct empty_name_site *out, size_t cap)
{
	size_t n = 0;
#ifdef HOST_MACHINE
	if (n < cap && object_site(ABI_LOADER, 0, &out[n]))
		n++;
	/* glibc installs its libc.so.6 beside its loader (slibdir), and the
	 * loader finds that one first unless a program asks for another. */
	char real[PATH_MAX], *slash;
	if (n < cap && realpath(ABI_LOADER, real) && (slash = strrchr(real, '/')) &&
	    (size_t)(slash - real) + sizeof "/libc.so.6" <= sizeof real) {
		strcpy(slash, "/libc.so.6");
		if (object_site(real, 1, &out[n]))
			n++;
	}
#else
	(void)out;
	(void)cap;
#endif
	return n;
}
