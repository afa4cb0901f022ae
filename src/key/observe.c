#include "cachet/observe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "cachet/array.h"

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int file_id_settled(const struct file_id *id)
{
	int64_t newest = id->mtime_ns > id->ctime_ns ? id->mtime_ns : id->ctime_ns;
	return now_ns() - newest > DIGEST_CACHE_MARGIN_NS;
}

/* digest_cached with the path's stat already taken (st). */
static int digest_cached_stat(const char *path, int nofollow, const struct stat *st,
                              struct digest_cache *dc, struct digest *out, struct file_id *id_out);

int digest_cached(const char *path, int nofollow, struct digest_cache *dc, struct digest *out,
                  struct file_id *id_out)
{
	struct stat st;
	if ((nofollow ? lstat(path, &st) : stat(path, &st)) < 0)
		return -1;
	return digest_cached_stat(path, nofollow, &st, dc, out, id_out);
}

static int digest_cached_stat(const char *path, int nofollow, const struct stat *stp,
                              struct digest_cache *dc, struct digest *out, struct file_id *id_out)
{
	struct stat st = *stp;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	struct file_id id;
	file_id_from_stat(&st, &id);
	if (id_out)
		*id_out = id;
	if (dc && dc->get(dc->ctx, path, &id, out) == 1)
		return 0;

	/* O_NONBLOCK: should the path have turned into a FIFO since the stat,
	 * the open must not hang; fstat below then refuses it. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
	if (fd < 0)
		return -1;
	struct stat fst;
	if (fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	struct error e;
	if (digest_fd(fd, out, NULL, &e) < 0) {
		close(fd);
		errno = e.code ? e.code : EIO;
		return -1;
	}
	/* Only here, where the file was read whole anyway: a hit that finds
	 * the digest cached pays nothing. */
	int trusted = dc && file_id_fs_trusted(fd, NULL);
	close(fd);
	struct file_id fid;
	file_id_from_stat(&fst, &fid);
	if (id_out)
		*id_out = fid;
	/* A file changed within the margin of now may change again in the same
	 * clock tick without its times moving: such a digest is not cached. */
	if (trusted && file_id_equal(&fid, &id) && file_id_settled(&fid))
		dc->put(dc->ctx, path, &fid, out);
	else if (dc && dc->note && file_id_equal(&fid, &id))
		dc->note(dc->ctx, path, &fid, out);
	return 0;
}

static void put_errno(struct buf *out, int err)
{
	buf_addch(out, 'E');
	buf_put_u32(out, (uint32_t)err);
}

static void put_u16(struct buf *out, unsigned v)
{
	buf_addch(out, (char)(v & 0xff));
	buf_addch(out, (char)((v >> 8) & 0xff));
}

/* Points the memo at path, forgetting what it held of another. */
static void memo_for(struct observe_memo *m, const char *path)
{
	if (!m->path || strcmp(m->path, path) != 0) {
		m->path = path;
		m->have_lstat = m->have_stat = m->have_digest = 0;
	}
}

/* digest_cached_stat through the memo (NULL: none): a file hashed by an
 * earlier observation of the same path in this evaluation, with the same
 * identity (inode, size, mtime, ctime, mode) as now, is not hashed again. */
static int digest_memo(const char *path, int nofollow, const struct stat *st,
                       struct digest_cache *dc, struct observe_memo *m, struct digest *out,
                       struct file_id *id_out)
{
	struct file_id id;
	if (m) {
		memo_for(m, path);
		file_id_from_stat(st, &id);
		if (m->have_digest && file_id_equal(&m->digest_id, &id)) {
			*out = m->digest;
			if (id_out)
				*id_out = id;
			return 0;
		}
	}
	if (digest_cached_stat(path, nofollow, st, dc, out, &id) < 0)
		return -1;
	if (m) {
		m->have_digest = 1;
		m->digest_id = id;
		m->digest = *out;
	}
	if (id_out)
		*id_out = id;
	return 0;
}

/* stat or lstat of path through the memo: lstat and stat differ only when
 * the last component is a symlink (intermediate ones are followed by both,
 * and a failure of one is the same failure of the other), so an lstat that
 * failed or found no symlink answers both. */
int observe_stat(struct observe_memo *m, const char *path, int nofollow, struct stat *st)
{
	if (!m)
		return nofollow ? lstat(path, st) : stat(path, st);
	memo_for(m, path);
	if (!m->have_lstat) {
		m->lstat_err = lstat(path, &m->lst) < 0 ? errno : 0;
		m->have_lstat = 1;
		if (m->looked)
			m->looked(m->looked_ctx, path, m->lstat_err, &m->lst);
	}
	if (nofollow || m->lstat_err || !S_ISLNK(m->lst.st_mode)) {
		if (m->lstat_err) {
			errno = m->lstat_err;
			return -1;
		}
		*st = m->lst;
		return 0;
	}
	if (!m->have_stat) {
		m->stat_err = stat(path, &m->st) < 0 ? errno : 0;
		m->have_stat = 1;
	}
	if (m->stat_err) {
		errno = m->stat_err;
		return -1;
	}
	*st = m->st;
	return 0;
}

static void value_of_file(enum obs_kind kind, unsigned flags, const char *path,
                          struct digest_cache *dc, struct observe_memo *m, struct buf *out)
{
	int nofollow = flags & OBS_F_NOFOLLOW;
	struct stat st;
	if (observe_stat(m, path, nofollow, &st) < 0) {
		put_errno(out, errno);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		buf_addch(out, 'T');
		buf_addch(out, (char)((st.st_mode & S_IFMT) >> 12));
		return;
	}
	struct digest d;
	struct file_id id;
	if (digest_memo(path, nofollow, &st, dc, m, &d, &id) < 0) {
		put_errno(out, errno);
		return;
	}
	buf_addch(out, kind == OBS_EXEC ? 'X' : 'F');
	buf_add(out, d.b, DIGEST_LEN);
	if (kind == OBS_EXEC)
		put_u16(out, id.mode & 07777);
}

static void value_of_stat(unsigned flags, const char *path, struct observe_memo *m, struct buf *out)
{
	struct stat st;
	if (observe_stat(m, path, flags & OBS_F_NOFOLLOW, &st) < 0) {
		put_errno(out, errno);
		return;
	}
	int with_mtime = (flags & OBS_F_MTIME) && S_ISREG(st.st_mode);
	buf_addch(out, with_mtime ? 's' : 'S');
	buf_addch(out, (char)((st.st_mode & S_IFMT) >> 12));
	put_u16(out, st.st_mode & 07777);
	/* A directory's size moves with unrelated entries (and on tmpfs with
	 * every one): only a regular file's size is a fact worth keying. */
	buf_put_u64(out, S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0);
	if (with_mtime)
		buf_put_u64(out, (uint64_t)st.st_mtim.tv_sec * 1000000000 +
		                     (uint64_t)st.st_mtim.tv_nsec);
}

static void value_of_listing(const char *path, const char *const *excluded, struct buf *out,
                             struct buf *detail)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		put_errno(out, errno);
		return;
	}
	DIR *dir = fdopendir(fd);
	if (!dir) {
		put_errno(out, errno);
		close(fd);
		return;
	}
	struct listing_entry *names = NULL;
	size_t n = 0, alloc = 0;
	struct dirent *de;
	while ((de = readdir(dir))) {
		ARRAY_RESERVE(names, alloc, n + 1, 64);
		names[n].name = xstrdup(de->d_name);
		names[n].type = de->d_type;
		n++;
	}
	closedir(dir);
	observe_listing_value(names, n, excluded, out, detail);
	for (size_t i = 0; i < n; i++)
		free((char *)names[i].name);
	free(names);
}

static void value_of_readlink(const char *path, struct observe_memo *m, struct buf *out)
{
	/* readlink looks the path up as lstat does: an lstat that failed fails
	 * it the same way, one that found no symlink means EINVAL. */
	struct stat st;
	if (m && observe_stat(m, path, 1, &st) < 0) {
		put_errno(out, errno);
		return;
	}
	if (m && !S_ISLNK(st.st_mode)) {
		put_errno(out, EINVAL);
		return;
	}
	char target[4096];
	ssize_t n = readlink(path, target, sizeof target);
	if (n < 0) {
		put_errno(out, errno);
		return;
	}
	buf_addch(out, 'R');
	buf_add(out, target, (size_t)n);
}

void observe_created_file(struct buf *out, const struct digest *d, unsigned mode)
{
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(d, hex);
	buf_addf(out, "F%s %o", hex, mode & 07777);
}

void observe_created_symlink(struct buf *out, const char *target)
{
	buf_addch(out, 'L');
	buf_addstr(out, target);
}

void observe_created_dir(struct buf *out, unsigned mode)
{
	buf_addf(out, "D%o", mode & 07777);
}

void observe_created_describe(struct buf *out, char probe, const void *seen, size_t seen_len,
                              const char *expected)
{
	static const char hexdigits[] = "0123456789abcdef";
	const unsigned char *v = seen;
	buf_addch(out, probe);
	for (size_t i = 0; i < seen_len; i++) {
		buf_addch(out, hexdigits[v[i] >> 4]);
		buf_addch(out, hexdigits[v[i] & 15]);
	}
	buf_addch(out, ' ');
	buf_addstr(out, expected);
}

void observe_created_link_value(struct buf *out, const struct digest *target)
{
	buf_addch(out, 'r');
	buf_add(out, target->b, DIGEST_LEN);
}

void observe_created_stat_value(struct buf *out, unsigned st_mode, uint64_t size)
{
	buf_addch(out, 'S');
	buf_addch(out, (char)((st_mode & S_IFMT) >> 12));
	put_u16(out, st_mode & 07777);
	buf_put_u64(out, S_ISREG(st_mode) ? size : 0);
}

/* Does path hold what the entry restores there (observe.h OBS_CREATED's
 * output part)? A path that the step made without looking first
 * (OBS_CREATED_MADE) does only `in_place`: `mkdir d`, `ln -s t l` and an
 * O_EXCL open fail where the path exists, which their hit would not. A regular file
 * does when it is the entry's output or, unless in_place, another output
 * of this cache at that path (observe.h). */
static int holds_expected(const char *path, const char *expected, int made, int in_place,
                          struct digest_cache *dc, struct observe_memo *m)
{
	struct stat st;
	/* Through the memo: the probe's lookup of the same path (just before,
	 * in created_probe_value) answers this one, as in observe_stat. */
	if (observe_stat(m, path, 1, &st) < 0)
		return 0;
	switch (expected[0]) {
	case 'F': {
		char hex[DIGEST_HEX_LEN + 1];
		struct digest want, have;
		if ((made && !in_place) || !S_ISREG(st.st_mode) ||
		    strlen(expected) < 1 + DIGEST_HEX_LEN)
			return 0;
		memcpy(hex, expected + 1, DIGEST_HEX_LEN);
		hex[DIGEST_HEX_LEN] = '\0';
		if (digest_from_hex(hex, &want) < 0 ||
		    digest_memo(path, 1, &st, dc, m, &have, NULL) < 0)
			return 0;
		if (digest_equal(&have, &want))
			return 1;
		return !in_place && dc && dc->held && dc->held(dc->ctx, path, &have) == 1;
	}
	case 'L': {
		char target[4096];
		ssize_t n = (!made || in_place) && S_ISLNK(st.st_mode)
		                ? readlink(path, target, sizeof target - 1)
		                : -1;
		if (n < 0)
			return 0;
		target[n] = '\0';
		return strcmp(target, expected + 1) == 0;
	}
	case 'D': {
		struct buf want;
		buf_init(&want);
		observe_created_dir(&want, st.st_mode);
		int same =
		    (!made || in_place) && S_ISDIR(st.st_mode) && strcmp(want.data, expected) == 0;
		buf_free(&want);
		return same;
	}
	default:
		return 0;
	}
}

int observe_created_in_place(const char *path, const char *desc, struct digest_cache *dc)
{
	const char *space = desc ? strchr(desc, ' ') : NULL;
	return space && holds_expected(path, space + 1, desc[0] == OBS_CREATED_MADE, 1, dc, NULL);
}

static int hex_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The value a probe of kind `probe` finds at path now (observe.h
 * OBS_CREATED: 'S' without mtime, an 'E' errno, or 'r'). */
static void created_probe_value(char probe, unsigned flags, const char *path,
                                struct observe_memo *m, struct buf *out)
{
	struct stat st;
	if (probe != OBS_CREATED_READLINK) {
		if (observe_stat(m, path, flags & OBS_F_NOFOLLOW, &st) < 0)
			put_errno(out, errno);
		else
			observe_created_stat_value(out, st.st_mode, (uint64_t)st.st_size);
		return;
	}
	char target[4096];
	ssize_t n;
	if (observe_stat(m, path, 1, &st) < 0)
		put_errno(out, errno);
	else if (!S_ISLNK(st.st_mode))
		put_errno(out, EINVAL);
	else if ((n = readlink(path, target, sizeof target)) < 0)
		put_errno(out, errno);
	else {
		struct digest d;
		digest_bytes(target, (size_t)n, &d);
		observe_created_link_value(out, &d);
	}
}

/* 'A' where the path is as the step found it, absent, or what
 * the entry restores there; else what the probe finds now. desc is the
 * observation's one string (observe_created_describe); one that does not
 * parse makes a value no recorded run has. */
static void value_of_created(unsigned flags, const char *path, const char *const *excluded,
                             struct digest_cache *dc, struct observe_memo *m, struct buf *out)
{
	const char *desc = excluded && excluded[0] ? excluded[0] : "";
	const char *space = strchr(desc, ' ');
	if (!desc[0] || !space || (space - desc - 1) % 2) {
		put_errno(out, EINVAL);
		return;
	}
	struct buf seen, now;
	buf_init(&seen);
	buf_init(&now);
	for (const char *h = desc + 1; h < space; h += 2) {
		int hi = hex_nibble(h[0]), lo = hex_nibble(h[1]);
		if (hi < 0 || lo < 0) {
			buf_free(&seen);
			put_errno(out, EINVAL);
			return;
		}
		buf_addch(&seen, (char)(hi << 4 | lo));
	}
	created_probe_value(desc[0], flags, path, m, &now);
	int absent = now.len == 5 && now.data[0] == 'E' && (uint8_t)now.data[1] == ENOENT &&
	             !now.data[2] && !now.data[3] && !now.data[4];
	if (absent || (now.len == seen.len && !memcmp(now.data, seen.data, now.len)) ||
	    holds_expected(path, space + 1, desc[0] == OBS_CREATED_MADE, 0, dc, m))
		buf_addch(out, 'A');
	else
		buf_add(out, now.data, now.len);
	buf_free(&seen);
	buf_free(&now);
}

void observe_value(enum obs_kind kind, unsigned flags, const char *path,
                   const char *const *excluded, struct digest_cache *dc, struct buf *out)
{
	observe_value_memo(kind, flags, path, excluded, dc, NULL, out, NULL);
}

void observe_value_detail(enum obs_kind kind, unsigned flags, const char *path,
                          const char *const *excluded, struct digest_cache *dc, struct buf *out,
                          struct buf *detail)
{
	observe_value_memo(kind, flags, path, excluded, dc, NULL, out, detail);
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* 'x' and the digest of every extended attribute of path, names sorted,
 * each name with its NUL, the value's length (u32) and the value; or 'E'.
 * A file system without them (ENOTSUP) has none: the same value as a file
 * that has none. */
static void value_of_xattrs(unsigned flags, const char *path, struct buf *out)
{
	int nofollow = flags & OBS_F_NOFOLLOW;
	struct buf names, all;
	buf_init(&names);
	buf_init(&all);
	ssize_t n;
	for (size_t cap = 256;; cap *= 2) {
		buf_reset(&names);
		buf_grow(&names, cap);
		n = nofollow ? llistxattr(path, names.data, cap) : listxattr(path, names.data, cap);
		if (n >= 0 || errno != ERANGE || cap > (1u << 24))
			break;
	}
	if (n < 0 && errno != ENOTSUP) {
		put_errno(out, errno);
		goto done;
	}
	size_t count = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names.data + i) + 1)
		count++;
	const char **sorted = xcalloc(count ? count : 1, sizeof *sorted);
	count = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names.data + i) + 1)
		sorted[count++] = names.data + i;
	qsort(sorted, count, sizeof *sorted, compare_names);
	struct buf val;
	buf_init(&val);
	for (size_t k = 0; k < count; k++) {
		ssize_t v;
		for (size_t cap = 256;; cap *= 2) {
			buf_reset(&val);
			buf_grow(&val, cap);
			v = nofollow ? lgetxattr(path, sorted[k], val.data, cap)
			             : getxattr(path, sorted[k], val.data, cap);
			if (v >= 0 || errno != ERANGE || cap > (1u << 24))
				break;
		}
		buf_add(&all, sorted[k], strlen(sorted[k]) + 1);
		buf_put_u32(&all, v < 0 ? UINT32_MAX : (uint32_t)v);
		if (v > 0)
			buf_add(&all, val.data, (size_t)v);
	}
	buf_free(&val);
	free(sorted);
	struct digest d;
	digest_bytes(all.data, all.len, &d);
	buf_addch(out, 'x');
	buf_add(out, d.b, DIGEST_LEN);
done:
	buf_free(&names);
	buf_free(&all);
}

void observe_value_memo(enum obs_kind kind, unsigned flags, const char *path,
                        const char *const *excluded, struct digest_cache *dc,
                        struct observe_memo *memo, struct buf *out, struct buf *detail)
{
	switch (kind) {
	case OBS_READ:
	case OBS_EXEC:
		value_of_file(kind, flags, path, dc, memo, out);
		break;
	case OBS_STAT:
		value_of_stat(flags, path, memo, out);
		break;
	case OBS_LIST:
		value_of_listing(path, excluded, out, detail);
		break;
	case OBS_READLINK:
		value_of_readlink(path, memo, out);
		break;
	case OBS_BASE:
		buf_addch(out, 'B');
		buf_addstr(out, path);
		break;
	case OBS_XATTR:
		value_of_xattrs(flags, path, out);
		break;
	case OBS_FACT:
		observe_fact_value_memo(path, memo, out);
		break;
	case OBS_CREATED:
		value_of_created(flags, path, excluded, dc, memo, out);
		break;
	default:
		put_errno(out, EINVAL);
	}
}

static const char *type_name(unsigned t)
{
	switch (t << 12) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "directory";
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFCHR:
		return "character device";
	case S_IFBLK:
		return "block device";
	default:
		return "unknown type";
	}
}

void observe_describe_value(const void *value, size_t len, struct buf *out)
{
	const unsigned char *v = value;
	char hex[DIGEST_SHORT_LEN + 1];
	if (len == 0) {
		buf_addstr(out, "(none)");
		return;
	}
	switch (v[0]) {
	case 'F':
	case 'X':
	case 'L':
	case 'x':
		if (len < 1 + DIGEST_LEN)
			break;
		digest_to_short_hex(v + 1, hex);
		buf_addf(out, "%s %s",
		         v[0] == 'L'   ? "listing"
		         : v[0] == 'x' ? "extended attributes"
		                       : "sha256",
		         hex);
		if (v[0] == 'X' && len >= 1 + DIGEST_LEN + 2)
			buf_addf(out, " mode %04o", v[1 + DIGEST_LEN] | v[2 + DIGEST_LEN] << 8);
		return;
	case 'S':
	case 's':
		if (len < 1 + 1 + 2 + 8 + (v[0] == 's' ? 8 : 0))
			break;
		buf_addf(out, "%s mode %04o", type_name(v[1]), v[2] | v[3] << 8);
		if (v[1] << 12 == S_IFREG) {
			struct reader r;
			reader_init(&r, v + 4, len - 4);
			buf_addf(out, " size %llu", (unsigned long long)reader_u64(&r));
			if (v[0] == 's') {
				uint64_t ns = reader_u64(&r);
				time_t sec = (time_t)(ns / 1000000000);
				struct tm tm;
				char when[32];
				gmtime_r(&sec, &tm);
				strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
				buf_addf(out, " mtime %s.%09llu UTC", when,
				         (unsigned long long)(ns % 1000000000));
			}
		}
		return;
	case 'T':
		if (len < 2)
			break;
		buf_addf(out, "%s", type_name(v[1]));
		return;
	case 'R':
		buf_addstr(out, "-> ");
		buf_add(out, v + 1, len - 1);
		return;
	case 'B':
		buf_addstr(out, "at ");
		buf_add(out, v + 1, len - 1);
		return;
	case 'P':
		buf_add(out, v + 1, len - 1);
		return;
	case 'A':
		buf_addstr(out, "absent, the step's own output, or as the step found it");
		return;
	case 'r':
		if (len < 1 + DIGEST_LEN)
			break;
		digest_to_short_hex(v + 1, hex);
		buf_addf(out, "symlink (target sha256 %s)", hex);
		return;
	case 'E':
		if (len < 5)
			break;
		{
			struct reader r;
			reader_init(&r, v + 1, 4);
			int err = (int)reader_u32(&r);
			buf_addstr(out, err == ENOENT ? "absent" : strerror(err));
		}
		return;
	}
	buf_addstr(out, "(unreadable value)");
}
