/*
 * Whole reads and writes on a file descriptor, through short counts and
 * EINTR.
 */
#ifndef CACHET_FDIO_H
#define CACHET_FDIO_H

#include <stddef.h>
#include <sys/types.h>

/* Writes all of data: 0, or -1 with errno set. */
int write_all(int fd, const void *data, size_t len);
/* Reads up to len bytes, stopping early only at end of file: the count
 * read, or -1 with errno set. */
ssize_t read_full(int fd, void *buf, size_t len);

#endif
