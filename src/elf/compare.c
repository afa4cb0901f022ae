/*
 * Comparing paths: directories walked in byte order of names, symlinks by
 * target, regular files by content, dispatched on what the content is.
 */
#include "elf/compare_internal.h"

#include <ar.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/array.h"
#include "cachet/plugin.h"

/* Text is judged on this much of the start, as git and diff do. */
#define TEXT_PROBE 8192

const void *compare_plugin(const char *path, const char *symbol)
{
	/* A few plugins, each loaded once; they stay loaded. */
	static struct {
		char *path;
		const void *ops;
	} loaded[4];
	if (!path)
		return NULL;
	size_t i = 0;
	for (; i < sizeof loaded / sizeof *loaded && loaded[i].path; i++)
		if (!strcmp(loaded[i].path, path))
			return loaded[i].ops;
	const void *(*fn)(void) = (const void *(*)(void))plugin_symbol(path, symbol, NULL);
	const void *ops = fn ? fn() : NULL;
	if (i < sizeof loaded / sizeof *loaded) {
		loaded[i].path = xstrdup(path);
		loaded[i].ops = ops;
	}
	return ops;
}

void compare_add_time(struct buf *out, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	char s[32];
	if (t > 0 && gmtime_r(&tt, &tm) && strftime(s, sizeof s, "%Y-%m-%d %H:%M:%S UTC", &tm))
		buf_addf(out, "%s (%lld)", s, (long long)t);
	else
		buf_addf(out, "%lld", (long long)t);
}

size_t first_difference(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	size_t i = 0;
	/* Word-sized strides: outputs can be hundreds of megabytes. */
	while (i + 8 <= n && !memcmp(a + i, b + i, 8))
		i += 8;
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

void compare_bytes(struct cmp_ctx *c, size_t entry, const char *prefix, const unsigned char *a,
                   size_t alen, const unsigned char *b, size_t blen)
{
	size_t off = first_difference(a, alen, b, blen);
	struct compare_item *it;
	if (alen == blen) {
		size_t ndiff = 0;
		for (size_t i = off; i < alen; i++)
			ndiff += a[i] != b[i];
		it = report_add_item(c->rep, entry, CMP_BYTES_DIFFER, "",
		                     "%sboth %zu bytes; first difference at offset %zu (0x%zx); "
		                     "%zu byte%s differ%s",
		                     prefix, alen, off, off, ndiff, ndiff == 1 ? "" : "s",
		                     ndiff == 1 ? "s" : "");
	} else {
		const char *shorter = alen < blen ? "A" : "B";
		size_t n = alen < blen ? alen : blen;
		if (off == n)
			it = report_add_item(
			    c->rep, entry, CMP_BYTES_DIFFER, "",
			    "%s%zu bytes in A, %zu in B; first difference at offset "
			    "%zu (0x%zx), the end of %s",
			    prefix, alen, blen, off, off, shorter);
		else
			it = report_add_item(
			    c->rep, entry, CMP_BYTES_DIFFER, "",
			    "%s%zu bytes in A, %zu in B; first difference at offset "
			    "%zu (0x%zx)",
			    prefix, alen, blen, off, off);
	}
	it->have = CMP_HAVE_SIZE_A | CMP_HAVE_SIZE_B | CMP_HAVE_OFFSET;
	it->size_a = alen;
	it->size_b = blen;
	it->offset = off;
}

struct name_key {
	const char *name;
	int cls;
	size_t pos, occ;
};

static int key_cmp(const void *x, const void *y)
{
	const struct name_key *a = x, *b = y;
	if (a->cls != b->cls)
		return a->cls < b->cls ? -1 : 1;
	int c = strcmp(a->name, b->name);
	if (c)
		return c;
	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Sorted by (class, name, position), each numbered within its name. */
static struct name_key *sorted_keys(const char *const *names, const int *cls, size_t n)
{
	struct name_key *k = xcalloc(n + 1, sizeof *k);
	for (size_t i = 0; i < n; i++)
		k[i] = (struct name_key){names[i], cls ? cls[i] : 0, i, 0};
	qsort(k, n, sizeof *k, key_cmp);
	for (size_t i = 1; i < n; i++)
		if (k[i].cls == k[i - 1].cls && !strcmp(k[i].name, k[i - 1].name))
			k[i].occ = k[i - 1].occ + 1;
	return k;
}

void match_names(const char *const *names_a, const int *cls_a, size_t na,
                 const char *const *names_b, const int *cls_b, size_t nb, size_t *peer_a,
                 size_t *peer_b)
{
	struct name_key *ka = sorted_keys(names_a, cls_a, na);
	struct name_key *kb = sorted_keys(names_b, cls_b, nb);
	for (size_t i = 0; i < na; i++)
		peer_a[i] = SIZE_MAX;
	for (size_t i = 0; i < nb; i++)
		peer_b[i] = SIZE_MAX;
	size_t i = 0, j = 0;
	while (i < na && j < nb) {
		int c = ka[i].cls != kb[j].cls ? (ka[i].cls < kb[j].cls ? -1 : 1)
		                               : strcmp(ka[i].name, kb[j].name);
		if (!c)
			c = ka[i].occ < kb[j].occ ? -1 : ka[i].occ > kb[j].occ;
		if (c < 0) {
			i++;
		} else if (c > 0) {
			j++;
		} else {
			peer_a[ka[i].pos] = kb[j].pos;
			peer_b[kb[j].pos] = ka[i].pos;
			i++, j++;
		}
	}
	free(ka);
	free(kb);
}

static int is_elf(const unsigned char *p, size_t n)
{
	return n >= SELFMAG && !memcmp(p, ELFMAG, SELFMAG);
}

static int is_ar(const unsigned char *p, size_t n)
{
	return n >= SARMAG && !memcmp(p, ARMAG, SARMAG);
}

/* Length of the UTF-8 sequence at p (1 for ASCII), 0 if invalid, or SIZE_MAX
 * if it is cut short by the end of the window. */
static size_t utf8_len(const unsigned char *p, size_t left)
{
	unsigned cp, min;
	size_t n;
	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0)
		n = 2, min = 0x80, cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		n = 3, min = 0x800, cp = p[0] & 0x0f;
	else if ((p[0] & 0xf8) == 0xf0)
		n = 4, min = 0x10000, cp = p[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if (i >= left)
			return SIZE_MAX;
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Text: valid UTF-8 (ASCII included) without NUL in the first 8 KiB. A
 * sequence cut by the end of the probe counts as valid only when the file
 * goes on. */
static int is_text(const unsigned char *p, size_t n)
{
	size_t probe = n < TEXT_PROBE ? n : TEXT_PROBE;
	for (size_t i = 0; i < probe;) {
		if (!p[i])
			return 0;
		size_t l = utf8_len(p + i, probe - i);
		if (l == SIZE_MAX)
			return probe < n;
		if (!l)
			return 0;
		i += l;
	}
	return 1;
}

/* "A/sub/x.o" or "A/lib.a(x.o)": how a file is named in diff headers. */
static char *label(const char *root, const char *path, const char *member)
{
	struct buf b;
	buf_init(&b);
	buf_addstr(&b, root);
	if (*path)
		buf_addf(&b, "/%s", path);
	if (member)
		buf_addf(&b, "(%s)", member);
	return buf_detach(&b, NULL);
}

int compare_contents(struct cmp_ctx *c, const char *path, const char *member, unsigned depth,
                     const unsigned char *a, size_t alen, const unsigned char *b, size_t blen,
                     size_t *entry_out)
{
	c->rep->files_compared++;
	if (alen == blen && !memcmp(a, b, alen))
		return 0;
	enum compare_format fmt = CMP_FMT_BINARY;
	if (is_elf(a, alen) && is_elf(b, blen))
		fmt = CMP_FMT_ELF;
	else if (is_ar(a, alen) && is_ar(b, blen) && depth < CMP_MAX_NESTING)
		fmt = CMP_FMT_AR;
	else if (depth < CMP_MAX_NESTING && archive_is(c, a, alen) && archive_is(c, b, blen))
		fmt = CMP_FMT_ARCHIVE;
	else if (is_text(a, alen) && is_text(b, blen))
		fmt = CMP_FMT_TEXT;
	size_t entry = report_add_entry(c->rep, path, member, depth, fmt);
	int rc = 0;
	if (fmt == CMP_FMT_ELF) {
		rc = elf_compare(c, entry, a, alen, b, blen);
	} else if (fmt == CMP_FMT_AR) {
		rc = ar_compare(c, entry, a, alen, b, blen);
	} else if (fmt == CMP_FMT_ARCHIVE) {
		rc = archive_compare(c, entry, a, alen, b, blen);
	} else if (fmt == CMP_FMT_TEXT) {
		char *la = label(c->rep->label_a, path, member);
		char *lb = label(c->rep->label_b, path, member);
		text_compare(c, entry, la, lb, a, alen, b, blen);
		free(la);
		free(lb);
	}
	/* Re-fetch: members' entries may have moved the array. */
	const char *name = member ? member : *path ? path : c->rep->label_a;
	if (rc < 0) {
		compare_bytes(c, entry, "", a, alen, b, blen);
	} else if (fmt == CMP_FMT_BINARY && pyc_is(name, a, alen) && pyc_is(name, b, blen)) {
		struct buf header;
		buf_init(&header);
		pyc_header_differs(a, alen, b, blen, &header);
		compare_bytes(c, entry, header.data ? header.data : "", a, alen, b, blen);
		buf_free(&header);
	} else if (!c->rep->entries[entry].nitems)
		compare_bytes(c, entry,
		              fmt == CMP_FMT_ELF ? "no symbol or section differs; "
		              : fmt == CMP_FMT_AR || fmt == CMP_FMT_ARCHIVE ? "no member differs; "
		                                                            : "",
		              a, alen, b, blen);
	report_finish_entry(c->rep, entry);
	if (entry_out)
		*entry_out = entry;
	return 1;
}

void compare_member(struct cmp_ctx *c, size_t entry, const char *path, unsigned depth,
                    const char *name, const unsigned char *a, size_t alen, const unsigned char *b,
                    size_t blen)
{
	size_t sub;
	if (!compare_contents(c, path, name, depth + 1, a, alen, b, blen, &sub))
		return;
	struct compare_item *it =
	    report_add_item(c->rep, entry, CMP_MEMBER_DIFFERS, name, "member %s differs: %s", name,
	                    c->rep->entries[sub].summary);
	it->sub = sub;
	it->have = CMP_HAVE_SIZE_A | CMP_HAVE_SIZE_B;
	it->size_a = alen;
	it->size_b = blen;
}

/* ---- files and directories ---- */

static const char *type_name(mode_t m)
{
	if (S_ISREG(m))
		return "regular file";
	if (S_ISDIR(m))
		return "directory";
	if (S_ISLNK(m))
		return "symlink";
	if (S_ISFIFO(m))
		return "FIFO";
	if (S_ISSOCK(m))
		return "socket";
	if (S_ISCHR(m))
		return "character device";
	if (S_ISBLK(m))
		return "block device";
	return "special file";
}

/* The entry for directory-level items: the root entry, made on first use
 * when A and B are not directories (a type or symlink difference at the top). */
static size_t container(struct cmp_ctx *c, enum compare_format fmt)
{
	if (c->container == SIZE_MAX)
		c->container = report_add_entry(c->rep, "", NULL, 0, fmt);
	return c->container;
}

/* Reads a whole regular file without following a symlink or blocking on a
 * FIFO that replaced it since lstat. */
static int read_file(const char *path, struct buf *out, struct error *e)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return error_errno(e, "%s", path);
	struct stat st;
	if (fstat(fd, &st) < 0) {
		error_errno(e, "%s", path);
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return error_set(e, "%s: not a regular file", path);
	}
	buf_grow(out, (size_t)st.st_size);
	for (;;) {
		buf_grow(out, 65536);
		ssize_t n = read(fd, out->data + out->len, out->alloc - out->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			error_errno(e, "%s", path);
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		out->len += (size_t)n;
		out->data[out->len] = '\0';
	}
	close(fd);
	return 0;
}

static char *read_link(const char *path, size_t hint, struct error *e)
{
	size_t size = hint ? hint + 1 : 256;
	for (;;) {
		char *t = xmalloc(size);
		ssize_t n = readlink(path, t, size);
		if (n < 0) {
			free(t);
			error_errno(e, "%s", path);
			return NULL;
		}
		if ((size_t)n < size) {
			t[n] = '\0';
			return t;
		}
		free(t);
		size *= 2;
	}
}

static int compare_node(struct cmp_ctx *c, const char *rel, const char *pa, const char *pb,
                        const struct stat *sa, const struct stat *sb);

static int name_cmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The names in a directory, sorted bytewise; NULL-terminated, malloc'd. */
static char **list_dir(const char *path, size_t *n_out, struct error *e)
{
	DIR *d = opendir(path);
	if (!d) {
		error_errno(e, "%s", path);
		return NULL;
	}
	size_t n = 0, alloc = 16;
	char **v = xmalloc(alloc * sizeof *v);
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ARRAY_RESERVE(v, alloc, n + 2, 16);
		v[n++] = xstrdup(de->d_name);
	}
	int err = errno;
	closedir(d);
	if (err) {
		errno = err;
		error_errno(e, "%s", path);
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		return NULL;
	}
	qsort(v, n, sizeof *v, name_cmp);
	v[n] = NULL;
	*n_out = n;
	return v;
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static int lstat_or_fail(const char *path, struct stat *st, struct error *e)
{
	if (lstat(path, st) < 0)
		return error_errno(e, "%s", path);
	return 0;
}

static int compare_dirs(struct cmp_ctx *c, const char *rel, const char *pa, const char *pb)
{
	size_t na = 0, nb = 0;
	char **va = list_dir(pa, &na, c->e);
	if (!va)
		return -1;
	char **vb = list_dir(pb, &nb, c->e);
	if (!vb) {
		free_names(va, na);
		return -1;
	}
	int rc = 0;
	size_t i = 0, j = 0;
	while (rc == 0 && (i < na || j < nb)) {
		int cmp = i == na ? 1 : j == nb ? -1 : strcmp(va[i], vb[j]);
		const char *name = cmp <= 0 ? va[i] : vb[j];
		char *sub = *rel ? xasprintf("%s/%s", rel, name) : xstrdup(name);
		char *ca = xasprintf("%s/%s", pa, name), *cb = xasprintf("%s/%s", pb, name);
		struct stat sa, sb;
		if (cmp < 0) {
			rc = lstat_or_fail(ca, &sa, c->e);
			if (!rc)
				report_add_item(c->rep, c->container, CMP_ENTRY_MISSING_IN_B, sub,
				                "only in A: %s (%s)", sub, type_name(sa.st_mode));
			i++;
		} else if (cmp > 0) {
			rc = lstat_or_fail(cb, &sb, c->e);
			if (!rc)
				report_add_item(c->rep, c->container, CMP_ENTRY_ONLY_IN_B, sub,
				                "only in B: %s (%s)", sub, type_name(sb.st_mode));
			j++;
		} else {
			rc = lstat_or_fail(ca, &sa, c->e);
			if (!rc)
				rc = lstat_or_fail(cb, &sb, c->e);
			if (!rc)
				rc = compare_node(c, sub, ca, cb, &sa, &sb);
			i++, j++;
		}
		free(sub);
		free(ca);
		free(cb);
	}
	free_names(va, na);
	free_names(vb, nb);
	return rc;
}

static int compare_files(struct cmp_ctx *c, const char *rel, const char *pa, const char *pb,
                         const struct stat *sa, const struct stat *sb)
{
	struct buf a, b;
	buf_init(&a);
	buf_init(&b);
	if (read_file(pa, &a, c->e) < 0 || read_file(pb, &b, c->e) < 0) {
		buf_free(&a);
		buf_free(&b);
		return -1;
	}
	size_t entry;
	int differ = compare_contents(c, rel, NULL, 0, (const unsigned char *)a.data, a.len,
	                              (const unsigned char *)b.data, b.len, &entry);
	buf_free(&a);
	buf_free(&b);
	if (differ && c->container != SIZE_MAX) {
		struct compare_item *it =
		    report_add_item(c->rep, c->container, CMP_FILE_DIFFERS, rel, "%s: %s", rel,
		                    c->rep->entries[entry].summary);
		it->sub = entry;
	}
	if (c->modes && (sa->st_mode & 07777) != (sb->st_mode & 07777)) {
		size_t to = c->container != SIZE_MAX ? c->container
		            : differ                 ? entry
		                                     : container(c, CMP_FMT_OTHER);
		report_add_item(c->rep, to, CMP_MODE_DIFFERS, rel, "%s%smode %04o in A, %04o in B",
		                rel, *rel ? ": " : "", (unsigned)(sa->st_mode & 07777),
		                (unsigned)(sb->st_mode & 07777));
		if (to == entry)
			report_finish_entry(c->rep, entry);
	} else if (c->exec_bit && (sa->st_mode & S_IXUSR) != (sb->st_mode & S_IXUSR)) {
		int in_a = (sa->st_mode & S_IXUSR) != 0;
		/* In a tree the root collects it; for two files, their own entry. */
		size_t to = c->container != SIZE_MAX ? c->container
		            : differ                 ? entry
		                                     : container(c, CMP_FMT_OTHER);
		report_add_item(c->rep, to, CMP_MODE_DIFFERS, rel, "%s%sexecutable in %s only", rel,
		                *rel ? ": " : "", in_a ? "A" : "B");
		if (to == entry)
			report_finish_entry(c->rep, entry);
	}
	return 0;
}

static int compare_node(struct cmp_ctx *c, const char *rel, const char *pa, const char *pb,
                        const struct stat *sa, const struct stat *sb)
{
	mode_t ta = sa->st_mode & S_IFMT, tb = sb->st_mode & S_IFMT;
	if (ta != tb) {
		report_add_item(c->rep, container(c, CMP_FMT_OTHER), CMP_TYPE_DIFFERS, rel,
		                "%s%s%s in A, %s in B", rel, *rel ? ": " : "", type_name(ta),
		                type_name(tb));
		return 0;
	}
	if (sa->st_dev == sb->st_dev && sa->st_ino == sb->st_ino)
		return 0; /* the same file reached twice */
	if (S_ISDIR(ta)) {
		if (c->modes && (sa->st_mode & 07777) != (sb->st_mode & 07777))
			report_add_item(c->rep, container(c, CMP_FMT_DIR), CMP_MODE_DIFFERS, rel,
			                "%s%smode %04o in A, %04o in B", *rel ? rel : ".", ": ",
			                (unsigned)(sa->st_mode & 07777),
			                (unsigned)(sb->st_mode & 07777));
		return compare_dirs(c, rel, pa, pb);
	}
	if (S_ISREG(ta))
		return compare_files(c, rel, pa, pb, sa, sb);
	if (S_ISLNK(ta)) {
		char *la = read_link(pa, (size_t)sa->st_size, c->e);
		char *lb = la ? read_link(pb, (size_t)sb->st_size, c->e) : NULL;
		if (!la || !lb) {
			free(la);
			return -1;
		}
		if (strcmp(la, lb) != 0)
			report_add_item(c->rep, container(c, CMP_FMT_SYMLINK), CMP_SYMLINK_DIFFERS,
			                rel, "%s%ssymlink to %s in A, to %s in B", rel,
			                *rel ? ": " : "", la, lb);
		free(la);
		free(lb);
		return 0;
	}
	/* FIFOs, sockets and devices of the same type: nothing to read. */
	return 0;
}

static void init_ctx(struct cmp_ctx *c, struct compare_report *out,
                     const struct compare_options *opt, struct error *e)
{
	c->rep = out;
	c->max_diff_lines = opt && opt->max_diff_lines ? opt->max_diff_lines : 200;
	c->exec_bit = opt ? opt->exec_bit : 0;
	c->modes = opt ? opt->modes : 0;
	c->archive_plugin = opt ? opt->archive_plugin : NULL;
	c->dwarf_plugin = opt ? opt->dwarf_plugin : NULL;
	c->container = SIZE_MAX;
	c->e = e;
	/* Idempotent; libelf refuses every call until it is told the version. */
	elf_version(EV_CURRENT);
}

int compare_paths(const char *a, const char *b, const struct compare_options *opt,
                  struct compare_report *out, struct error *e)
{
	report_init(out, opt, opt && opt->label_a ? opt->label_a : a,
	            opt && opt->label_b ? opt->label_b : b);
	struct cmp_ctx c;
	init_ctx(&c, out, opt, e);
	struct stat sa, sb;
	if (lstat_or_fail(a, &sa, e) < 0 || lstat_or_fail(b, &sb, e) < 0)
		return -1;
	int rc;
	if (S_ISDIR(sa.st_mode) && S_ISDIR(sb.st_mode)) {
		c.container = report_add_entry(out, "", NULL, 0, CMP_FMT_DIR);
		rc = compare_node(&c, "", a, b, &sa, &sb);
		if (!out->entries[c.container].nitems)
			report_pop_entry(out); /* nothing differs: it is the only entry */
	} else {
		rc = compare_node(&c, "", a, b, &sa, &sb);
	}
	if (c.container != SIZE_MAX && out->nentries > c.container)
		report_finish_entry(out, c.container);
	report_finish(out);
	return rc;
}

void compare_buffers(const void *a, size_t alen, const void *b, size_t blen, const char *name,
                     const struct compare_options *opt, struct compare_report *out)
{
	report_init(out, opt, opt && opt->label_a ? opt->label_a : "a",
	            opt && opt->label_b ? opt->label_b : "b");
	struct cmp_ctx c;
	init_ctx(&c, out, opt, NULL);
	/* The name is the path below the labels: "a/stdout" vs "b/stdout". */
	compare_contents(&c, name ? name : "", NULL, 0, a, alen, b, blen, NULL);
	report_finish(out);
}
