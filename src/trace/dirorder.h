/*
 * trace_spec.dirorder: reorders the directory entries one getdents or
 * getdents64 call returned, so that a step whose output depends on the
 * order of a directory listing shows it without FUSE or disorderfs. Pure
 * (no tracee access), for unit tests.
 */
#ifndef CACHET_TRACE_DIRORDER_H
#define CACHET_TRACE_DIRORDER_H

#include <stddef.h>
#include <stdint.h>

/* Reorders the records in buf (len bytes, as the call returned them) in
 * place: mode TRACE_DIRORDER_REVERSE or TRACE_DIRORDER_SHUFFLE (a
 * permutation that depends only on seed and the number of records). Both
 * record layouts (struct linux_dirent and linux_dirent64) begin with an
 * 8-byte d_ino, an 8-byte d_off and a 2-byte d_reclen on x86_64, and every
 * d_reclen is a multiple of 8, so whole records move without breaking
 * alignment. Every record's d_off becomes that of the last record in kernel
 * order (see trace_spec.dirorder). Returns the number of records, or -1
 * when the buffer does not parse as records (then it is left unchanged). */
long dirents_reorder(void *buf, size_t len, int mode, uint64_t seed);

#endif
