/*
 * What the kernel opens during execve without any syscall the filter sees:
 * the "#!" interpreter of a script and the PT_INTERP of an ELF program.
 * The parsers are pure (unit-tested); exec_image_read_head reads a file.
 */
#ifndef CACHET_TRACE_EXEC_IMAGE_H
#define CACHET_TRACE_EXEC_IMAGE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

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

/* The PT_INTERP of the last few ELF files the step executed, each under
 * the file's identity and its size and change times when it was read: a
 * step runs the same few programs over and over (the compiler driver, cc1,
 * as, each with the same loader), and reading their headers again was
 * three syscalls in every exec stop. A file written since has another
 * mtime or ctime (or size), and is read again. */
#define EXEC_INTERP_CACHE 8
struct exec_interp_entry {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	int rc; /* elf_interpreter's */
	int used;
	char interp[256];
};
struct exec_interp_cache {
	struct exec_interp_entry e[EXEC_INTERP_CACHE];
	unsigned next; /* the entry replaced next */
};

/* elf_interpreter of the file at path (a /proc/PID/exe link), whose stat
 * st was just taken: from the cache when an entry has st's identity, size
 * and times, else read (and the entry keyed by the fstat of what was read).
 * A path longer than an entry holds is read every time. */
int elf_interpreter_cached(struct exec_interp_cache *c, const char *path, const struct stat *st,
                           char *out, size_t cap);

#endif
