/*
 * Where the C library and the dynamic loader pass the empty name to
 * newfstatat: glibc's fstat() is newfstatat(fd, "", st, AT_EMPTY_PATH),
 * the "" a literal of its own read-only data. The filter cannot read the
 * string, so each such call stopped: some 40 of a gcc compile's 116 stops,
 * the loader's fstat of every library it maps and libc's of every locale
 * file, none of which observes anything (a stat of a descriptor).
 *
 * The filter can compare the path pointer with the instruction pointer: a
 * call whose path is the literal, made from the syscall instruction of the
 * same object, has the two a fixed distance apart wherever the object is
 * loaded, and the instruction at a fixed offset within its page. Such a
 * call from that object names "" by construction: the pointer is a zero
 * byte it maps read-only. Any other call (a name relative to the
 * descriptor, another build of the library) stops as before, unless its
 * syscall instruction sits at the same offset within its page and its
 * path exactly the same distance past it, with the flags exactly
 * AT_EMPTY_PATH: the fstat of another build of glibc (a "" again), or,
 * by a coincidence of layout (the page offset and a 32-bit distance), a
 * call that names a file relative to a descriptor and passes AT_EMPTY_PATH
 * with it, a flag that exists to name the descriptor itself. That residue
 * is accepted for some 40 stops a compile.
 *
 * The sites are found in the files the step's programs map: the system's
 * loader and the libc.so.6 beside it. Not in this process's own copies: a
 * statically linked cachet has none, and found no site at all (some 40
 * stops a compile came back).
 */
#ifndef CACHET_TRACE_EMPTY_NAME_H
#define CACHET_TRACE_EMPTY_NAME_H

#include <stddef.h>
#include <stdint.h>

#define EMPTY_NAME_MAX_SITES 4

struct empty_name_site {
	uint32_t ip_page_offset; /* the instruction pointer after the syscall, & 0xfff */
	uint32_t distance;       /* the literal's address less that pointer (> 0) */
};

/* The sites of the fstat of the system's loader (the psABI's path) and of
 * the libc.so.6 beside its real path, read from the files, into out (cap
 * entries); returns how many (0 when neither is recognised). */
size_t empty_name_sites(struct empty_name_site *out, size_t cap);

/* The site of one object, from its code: text/text_len its executable
 * bytes, which the object places at address text_addr, wrapper the address
 * of its newfstatat wrapper when known (0: the copy in text that fstat's
 * code jumps to), is_read_only_nul a predicate telling whether an address
 * of the object holds a zero byte in memory it maps read-only (neither
 * writable nor executable). 1 with *out filled, or 0. Pure; exposed for
 * the unit test. */
int empty_name_site_in(const unsigned char *text, size_t text_len, uintptr_t text_addr,
                       uintptr_t wrapper, int (*is_read_only_nul)(uintptr_t addr, void *ctx),
                       void *ctx, struct empty_name_site *out);

#endif
