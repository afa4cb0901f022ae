#include "trace/dirents.h"

#include <string.h>

/* d_ino, d_off, d_reclen and at least a NUL name. */
#define MIN_RECLEN 19
#define NAME64     19 /* getdents64: after d_type */
#define NAME       18 /* getdents: d_type is the record's last byte */

/* The record at b + at, with its name bounded by the record (a name that
 * is not NUL-terminated inside it does not parse). */
static int parse(const unsigned char *b, size_t len, size_t at, int is64, struct dirent_rec *r)
{
	uint16_t reclen;
	if (len - at < MIN_RECLEN)
		return -1;
	memcpy(&reclen, b + at + DIRENT_OFF_RECLEN, sizeof reclen);
	if (reclen < MIN_RECLEN || reclen > len - at || reclen % 8)
		return -1;
	size_t name_at = is64 ? NAME64 : NAME;
	size_t room = (size_t)reclen - name_at - (is64 ? 0 : 1);
	if (reclen < name_at + (is64 ? 1 : 2))
		return -1;
	const char *name = (const char *)b + at + name_at;
	size_t n = strnlen(name, room);
	if (n == room)
		return -1;
	r->name = name;
	r->name_len = n;
	r->type = is64 ? b[at + 18] : b[at + reclen - 1];
	memcpy(&r->off, b + at + DIRENT_OFF_D_OFF, sizeof r->off);
	r->at = at;
	r->reclen = reclen;
	return 0;
}

long dirents_walk(const void *buf, size_t len, int is64,
                  void (*fn)(void *ctx, const struct dirent_rec *r), void *ctx)
{
	const unsigned char *b = buf;
	struct dirent_rec r;
	long n = 0;
	for (size_t at = 0; at < len; at += r.reclen, n++)
		if (parse(b, len, at, is64, &r) < 0)
			return -1;
	if (fn)
		for (size_t at = 0; at < len; at += r.reclen) {
			parse(b, len, at, is64, &r);
			fn(ctx, &r);
		}
	return n;
}
