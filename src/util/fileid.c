#include "cachet/fileid.h"

#include <sys/statfs.h>

/* statfs f_type of the read-only image file systems (linux/magic.h). */
#define FS_SQUASHFS    0x73717368
#define FS_EROFS       0xE0F5E1E2
#define FS_ISO9660     0x9660
#define FS_CRAMFS      0x28cd3d45
#define FS_CRAMFS_WEND 0x453dcd28

void file_id_from_stat(const struct stat *st, struct file_id *out)
{
	out->dev = st->st_dev;
	out->ino = st->st_ino;
	out->size = (uint64_t)st->st_size;
	out->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	out->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
	out->mode = st->st_mode;
}

void file_id_encode(const struct file_id *id, struct buf *out)
{
	buf_put_u64(out, id->dev);
	buf_put_u64(out, id->ino);
	buf_put_u64(out, id->size);
	buf_put_u64(out, (uint64_t)id->mtime_ns);
	buf_put_u64(out, (uint64_t)id->ctime_ns);
	buf_put_u32(out, id->mode);
}

void file_id_decode(struct reader *r, struct file_id *out)
{
	out->dev = reader_u64(r);
	out->ino = reader_u64(r);
	out->size = reader_u64(r);
	out->mtime_ns = (int64_t)reader_u64(r);
	out->ctime_ns = (int64_t)reader_u64(r);
	out->mode = reader_u32(r);
}

int file_id_equal(const struct file_id *a, const struct file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns && a->mode == b->mode;
}

int file_id_stat_equal(const struct stat *a, const struct stat *b)
{
	struct file_id x, y;
	file_id_from_stat(a, &x);
	file_id_from_stat(b, &y);
	return file_id_equal(&x, &y);
}

int file_id_fs_trusted(int fd, const char *path)
{
	struct statfs sfs;
	if ((fd >= 0 ? fstatfs(fd, &sfs) : statfs(path, &sfs)) < 0)
		return 0;
	switch ((unsigned long)sfs.f_type) {
	case FS_SQUASHFS:
	case FS_EROFS:
	case FS_ISO9660:
	case FS_CRAMFS:
	case FS_CRAMFS_WEND:
		return 0;
	default:
		return 1;
	}
}
