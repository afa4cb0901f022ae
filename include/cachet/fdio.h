/*
 * Whole reads, writes and copies on a file descriptor, through short counts
 * and EINTR.
 */
#ifndef CACHET_FDIO_H
#define CACHET_FDIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Writes all of data: 0, or -1 with errno set. */
int write_all(int fd, const void *data, size_t len);
/* Writes all of len bytes at offset off: 0, or -1 with errno set. */
int pwrite_all(int fd, const void *data, size_t len, off_t off);
/* Copies everything readable from src (from offset 0) into dst (empty, from
 * offset 0): a reflink (FICLONE) where the file system shares extents, else
 * copy_file_range, else pread/pwrite where the kernel cannot copy between
 * the two (across file systems on older kernels, some FUSE and network
 * mounts). *copied gets the byte count. 0, or -1 with errno set. */
int copy_fd_data(int src, int dst, uint64_t *copied);
/* Reads up to len bytes, stopping early only at end of file: the count
 * read, or -1 with errno set. */
ssize_t read_full(int fd, void *buf, size_t len);

#endif
