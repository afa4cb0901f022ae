#include "cachet/fileid.h"

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
