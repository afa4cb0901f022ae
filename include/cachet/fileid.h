/*
 * A file's stat fingerprint: what changes whenever its content can have
 * changed without cachet noticing. ctime is included because `touch -r`
 * restores mtime but cannot restore ctime; times are in nanoseconds.
 */
#ifndef CACHET_FILEID_H
#define CACHET_FILEID_H

#include <stdint.h>
#include <sys/stat.h>
#include "cachet/buf.h"

struct file_id {
	uint64_t dev;
	uint64_t ino;
	uint64_t size;
	int64_t mtime_ns;
	int64_t ctime_ns;
	uint32_t mode; /* st_mode: type and permission bits */
};

void file_id_from_stat(const struct stat *st, struct file_id *out);
/* Equal in dev, ino, size, mtime, ctime and mode. */
int file_id_equal(const struct file_id *a, const struct file_id *b);
/* file_id_equal of two stats of the same path or descriptor. */
int file_id_stat_equal(const struct stat *a, const struct stat *b);
/* 1 when the file system holding fd (or path, when fd < 0) moves a
 * file's ctime on every change, so that an unchanged fingerprint means
 * unchanged content; 0 on read-only images (squashfs, erofs, ISO 9660,
 * cramfs), where the times are the image's: another image mounted at the
 * same point, on the same loop device, shows the same dev, inode numbers,
 * sizes and times for other bytes. */
int file_id_fs_trusted(int fd, const char *path);
/* The binary form in memos (44 bytes). */
void file_id_encode(const struct file_id *id, struct buf *out);
void file_id_decode(struct reader *r, struct file_id *out);

#endif
