/*
 * A large file's bytes read through a mapping that a second thread faults
 * in ahead of the reader and unmaps behind it: the reading CPU only reads.
 * Used by the digest (digest.c) for large files where two CPUs are free.
 */
#ifndef CACHET_UTIL_FILE_MAP_H
#define CACHET_UTIL_FILE_MAP_H

#include <stddef.h>
#include <stdint.h>

/* Hands the first size bytes of fd, a regular file open for reading, to
 * fn(ctx, chunk, len) in order. 1 when all of them were handed over; 0
 * when not, and then fn may have seen a part: the mapping could not be
 * made (or this kernel cannot fault a range in ahead, before 5.14), or the
 * file shrank under it (the access past its new end is caught, not a
 * SIGBUS that ends the program). The caller reads the file another way.
 * fn must keep no state that a jump out of it would leave half-changed
 * beyond what the caller then discards. */
int file_map_each(int fd, uint64_t size, void (*fn)(void *ctx, const void *chunk, size_t len),
                  void *ctx);

#endif
