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

#endif
