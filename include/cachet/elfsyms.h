/*
 * Which symbols an ELF file defines, for `cachet run --require-symbols`: a
 * back end that silently drops an entry function produces an object that
 * links today and fails three stages later; refusing to store it stops the
 * broken artifact from spreading through the cache.
 */
#ifndef CACHET_ELFSYMS_H
#define CACHET_ELFSYMS_H

#include "cachet/error.h"
#include "cachet/strmap.h"

/* Adds to `defined` (values unused) every symbol name that the ELF file at
 * path, or each ELF member of the ar archive at path, defines with GLOBAL or
 * WEAK binding in a section (not SHN_UNDEF), from .symtab and .dynsym.
 * Returns 1 when path is ELF or an archive, 0 when it is neither, -1 on an
 * error (unreadable or malformed). */
int elf_defined_symbols(const char *path, struct strmap *defined, struct error *e);

/* 1 when the ELF executable at path is built with AddressSanitizer or
 * LeakSanitizer (it needs libasan/liblsan, or its dynamic symbols name
 * __asan_init or __lsan_do_leak_check): at exit its leak check attaches to
 * its own threads with ptrace, which fails under another tracer. Only the
 * dynamic section and dynamic symbols are read. 0 otherwise, also when path
 * cannot be read or is not ELF. */
int elf_uses_leak_sanitizer(const char *path);

#endif
