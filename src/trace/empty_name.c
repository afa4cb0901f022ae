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

/* The offset of the one copy of wrapper_code in text, or -1 (none, or more
 * than one: then which is fstat's is not known). */
static long find_wrapper(const unsigned char *text, size_t len)
{
	const unsigned char *at = memmem(text, len, wrapper_code, sizeof wrapper_code);
	if (!at)
		return -1;
	size_t off = (size_t)(at - text);
	if (memmem(at + 1, len - off - 1, wrapper_code, sizeof wrapper_code))
		return -1;
	return (long)off;
}

int empty_name_site_in(const unsigned char *text, size_t text_len, uintptr_t text_addr,
                       uintptr_t wrapper, int (*is_read_only)(uintptr_t addr, void *ctx), void *ctx,
                       struct empty_name_site *out)
{
	long w;
	if (wrapper) {
		if (wrapper < text_addr || wrapper - text_addr > text_len - sizeof wrapper_code ||
		    memcmp(text + (wrapper - text_addr), wrapper_code, sizeof wrapper_code))
			return 0;
		w = (long)(wrapper - text_addr);
	} else if ((w = find_wrapper(text, text_len)) < 0) {
		return 0;
	}
	uintptr_t site = text_addr + (uintptr_t)w + sizeof wrapper_code;
	uintptr_t literal = 0;
	size_t from = (size_t)w > CALLER_WINDOW ? (size_t)w - CALLER_WINDOW : 0;
	for (size_t i = from; i + FSTAT_LEN <= (size_t)w; i++) {
		const unsigned char *c = text + i;
		if (memcmp(c, fstat_code, sizeof fstat_code) || c[12] != 0xe9)
			continue;
		uintptr_t after_lea = text_addr + i + sizeof fstat_code + 4;
		uintptr_t after_jmp = after_lea + 5;
		if (after_jmp + (uintptr_t)(intptr_t)le32(c + 13) != text_addr + (uintptr_t)w)
			continue;
		uintptr_t t = after_lea + (uintptr_t)(intptr_t)le32(c + 8);
		/* A zero byte the object maps read-only: "" whoever points at
		 * it. */
		if (literal || !is_read_only(t, ctx) || *(const volatile char *)t != '\0')
			return 0;
		literal = t;
	}
	if (!literal || literal <= site || literal - site > UINT32_MAX)
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
