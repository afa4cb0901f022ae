/*
 * The records one getdents or getdents64 call returns, as the kernel lays
 * them out on x86_64. Both layouts (struct linux_dirent and linux_dirent64)
 * begin with an 8-byte d_ino, an 8-byte d_off and a 2-byte d_reclen, and
 * every d_reclen is a multiple of 8; they differ in where d_type lives
 * (getdents64: byte 18, before the name; getdents: the record's last byte,
 * after it). Pure (no tracee access), for unit tests.
 */
#ifndef CACHET_TRACE_DIRENTS_H
#define CACHET_TRACE_DIRENTS_H

#include <stddef.h>
#include <stdint.h>

#define DIRENT_OFF_D_OFF  8
#define DIRENT_OFF_RECLEN 16

struct dirent_rec {
	const char *name; /* NUL-terminated, inside the buffer */
	size_t name_len;
	unsigned char type; /* d_type */
	uint64_t off;       /* d_off: the stream position after this record */
	size_t at;          /* the record's offset in the buffer */
	uint16_t reclen;
};

/* Checks the records of buf (len bytes, as the call returned them) and
 * calls fn (when not NULL) for each, in buffer order; is64: the layout of
 * getdents64. Returns the number of records, or -1 when the buffer does
 * not parse as records (then fn was called for none). */
long dirents_walk(const void *buf, size_t len, int is64,
                  void (*fn)(void *ctx, const struct dirent_rec *r), void *ctx);

#endif
