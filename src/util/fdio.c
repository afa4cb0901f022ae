#include "cachet/fdio.h"

#include <errno.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/buf.h"

/* The read/write fallback's buffer. */
#define COPY_CHUNK (256 * 1024)

/* write, or pwrite at off when off >= 0, until all of data is written. */
static int write_loop(int fd, const void *data, size_t len, off_t off)
{
	const char *p = data;
	while (len) {
		ssize_t n = off < 0 ? write(fd, p, len) : pwrite(fd, p, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		if (off >= 0)
			off += n;
	}
	return 0;
}

int write_all(int fd, const void *data, size_t len)
{
	return write_loop(fd, data, len, -1);
}

ssize_t read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int pwrite_all(int fd, const void *data, size_t len, off_t off)
{
	if (off < 0) {
		errno = EINVAL;
		return -1;
	}
	return write_loop(fd, data, len, off);
}

static int copy_by_read(int src, int dst, uint64_t off, uint64_t *copied)
{
	char *chunk = xmalloc(COPY_CHUNK);
	for (;;) {
		ssize_t n = pread(src, chunk, COPY_CHUNK, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (n > 0 && pwrite_all(dst, chunk, (size_t)n, (off_t)off) < 0)) {
			int err = errno;
			free(chunk);
			errno = err;
			return -1;
		}
		if (n == 0)
			break;
		off += (uint64_t)n;
	}
	free(chunk);
	*copied = off;
	return 0;
}

int copy_fd_data(int src, int dst, uint64_t *copied)
{
	/* Reflink: no data copied at all where the file system shares extents. */
	if (ioctl(dst, FICLONE, src) == 0) {
		struct stat st;
		if (fstat(dst, &st) < 0)
			return -1;
		*copied = (uint64_t)st.st_size;
		return 0;
	}
	loff_t in = 0, out = 0;
	for (;;) {
		ssize_t n = copy_file_range(src, &in, dst, &out, 1 << 30, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
			    errno == EOPNOTSUPP || errno == EBADF || errno == EPERM)
				return copy_by_read(src, dst, (uint64_t)in, copied);
			return -1;
		}
		if (n == 0)
			break;
	}
	*copied = (uint64_t)in;
	return 0;
}
