/*
 * What the kernel opens during execve without any syscall the filter sees:
 * the "#!" interpreter of a script and the PT_INTERP of an ELF program.
 * The parsers are pure (unit-tested); exec_image_read_head reads a file.
 */
#ifndef CACHET_TRACE_EXEC_IMAGE_H
#define CACHET_TRACE_EXEC_IMAGE_H

#include <stddef.h>

/* The kernel looks at this many bytes for a "#!" line (BINPRM_BUF_SIZE). */
#define EXEC_HEAD_LEN 256

/* As fs/binfmt_script.c: when buf (the first len bytes of a file) starts
 * with "#!" and names an interpreter, copies it to interp (cap bytes) and
 * returns 1; else 0 (not a script, or a line the kernel refuses: empty, or
 * an interpreter name cut off by the 256-byte limit). */
int shebang_interpreter(const char *buf, size_t len, char *interp, size_t cap);

/* Reads up to EXEC_HEAD_LEN bytes of the regular file at path (never opens a
 * FIFO or device) into buf. Returns the count, or -1. */
long exec_image_read_head(const char *path, char *buf);

/* PT_INTERP of the ELF file open at fd (ELFCLASS32 or 64, little endian):
 * 1 with the path in out, 0 when it has none (static) or is not ELF, -1 on
 * a read error. */
int elf_interpreter(int fd, char *out, size_t cap);

#endif
