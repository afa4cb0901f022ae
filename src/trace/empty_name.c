#include "trace/empty_name.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/stat.h>

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
                               int (*is_read_only)(uintptr_t addr, void *ctx), void *ctx)
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
		if (literal || !is_read_only(t, ctx) || *(const volatile char *)t != '\0')
			return 0;
		literal = t;
	}
	return literal;
}

int empty_name_site_in(const unsigned char *text, size_t text_len, uintptr_t text_addr,
                       uintptr_t wrapper, int (*is_read_only)(uintptr_t addr, void *ctx), void *ctx,
                       struct empty_name_site *out)
{
	size_t w = 0;
	uintptr_t literal = 0;
	if (wrapper) {
		if (wrapper < text_addr || wrapper - text_addr > text_len - sizeof wrapper_code ||
		    memcmp(text + (wrapper - text_addr), wrapper_code, sizeof wrapper_code))
			return 0;
		w = wrapper - text_addr;
		literal = fstat_literal(text, text_addr, w, is_read_only, ctx);
	} else {
		/* The copy that fstat's code jumps to. */
		long at;
		for (size_t end = text_len; !literal && (at = find_wrapper_before(text, end)) >= 0;
		     end = (size_t)at + sizeof wrapper_code - 1)
			literal = fstat_literal(text, text_addr, w = (size_t)at, is_read_only, ctx);
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

struct search {
	struct empty_name_site *out;
	size_t n, cap;
	uintptr_t libc_wrapper;
};

static int in_read_only_segment(uintptr_t addr, void *ctx)
{
	const struct dl_phdr_info *info = ctx;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && addr >= start && addr < start + ph->p_filesz)
			return (ph->p_flags & (PF_W | PF_X)) == 0;
	}
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static int each_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct search *s = data;
	const char *name = base_name(info->dlpi_name ? info->dlpi_name : "");
	int is_libc = strcmp(name, "libc.so.6") == 0;
	if (s->n >= s->cap || (!is_libc && strncmp(name, "ld-linux", 8) != 0))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t text = info->dlpi_addr + ph->p_vaddr;
		/* libc's wrapper is its exported fstatat: no search of 1.4 MB
		 * of code. The loader exports none, and its code is small. */
		uintptr_t wrapper = is_libc ? s->libc_wrapper : 0;
		if (is_libc && !wrapper)
			break;
		if (empty_name_site_in((const unsigned char *)text, ph->p_filesz, text, wrapper,
		                       in_read_only_segment, info, &s->out[s->n]))
			s->n++;
		break;
	}
	return 0;
}

size_t empty_name_sites(struct empty_name_site *out, size_t cap)
{
	/* fstatat as this program links it, from libc unless something
	 * interposes it (then it lies outside libc's code: no site). */
	struct search s = {out, 0, cap, (uintptr_t)&fstatat};
	dl_iterate_phdr(each_object, &s);
	return s.n;
}
