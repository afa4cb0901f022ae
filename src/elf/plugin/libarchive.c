/* The archive plugin (src/elf/archive_plugin.h) over libarchive. */
#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cachet/array.h"
#include "elf/archive_plugin.h"

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void listing_free(struct archive_listing *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		struct archive_member *m = &l->members[i];
		free(m->name);
		free(m->link);
		free(m->uname);
		free(m->gname);
		free(m->data);
	}
	free(l->members);
	free(l->format);
	free(l->filter);
	free(l);
}

static char member_type(mode_t t, const struct archive_entry *en)
{
	if (archive_entry_hardlink((struct archive_entry *)en))
		return 'h';
	switch (t) {
	case AE_IFREG:
		return 'f';
	case AE_IFDIR:
		return 'd';
	case AE_IFLNK:
		return 'l';
	default:
		return 'o';
	}
}

/* The member's contents, at most max bytes; -1 past that or on error. */
static int read_data(struct archive *a, size_t max, unsigned char **out, size_t *len)
{
	size_t cap = 65536, n = 0;
	unsigned char *buf = malloc(cap);
	if (!buf)
		return -1;
	for (;;) {
		if (n == cap) {
			if (cap >= max) {
				free(buf);
				return -1;
			}
			cap = cap * 2 > max ? max : cap * 2;
			unsigned char *grown = realloc(buf, cap);
			if (!grown) {
				free(buf);
				return -1;
			}
			buf = grown;
		}
		la_ssize_t r = archive_read_data(a, buf + n, cap - n);
		if (r < 0) {
			free(buf);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*out = buf;
	*len = n;
	return 0;
}

/* raw: the data is one compressed stream, not an archive. */
static struct archive_listing *listing_try(const void *data, size_t len, size_t max_member, int raw,
                                           char *why, size_t cap)
{
	struct archive *a = archive_read_new();
	struct archive_listing *l = calloc(1, sizeof *l);
	if (!a || !l) {
		snprintf(why, cap, "out of memory");
		free(l);
		if (a)
			archive_read_free(a);
		return NULL;
	}
	archive_read_support_filter_all(a);
	if (raw) {
		archive_read_support_format_raw(a);
	} else {
		/* Archive formats with a signature of their own: mtree (and
		 * raw) would take any text for an archive. */
		archive_read_support_format_tar(a);
		archive_read_support_format_cpio(a);
		archive_read_support_format_zip(a);
		archive_read_support_format_7zip(a);
		archive_read_support_format_iso9660(a);
		archive_read_support_format_xar(a);
		archive_read_support_format_cab(a);
		archive_read_support_format_lha(a);
		archive_read_support_format_rar(a);
		archive_read_support_format_rar5(a);
		archive_read_support_format_warc(a);
		archive_read_support_format_ar(a);
	}
	int ok = archive_read_open_memory(a, data, len) == ARCHIVE_OK;
	size_t alloc = 0;
	struct archive_entry *en;
	int r = ARCHIVE_OK;
	while (ok && (r = archive_read_next_header(a, &en)) == ARCHIVE_OK) {
		struct archive_member *grown =
		    array_grow_try(l->members, &alloc, l->n + 1, sizeof *grown, 16);
		if (!grown) {
			ok = 0;
			break;
		}
		l->members = grown;
		struct archive_member *m = &l->members[l->n++];
		memset(m, 0, sizeof *m);
		const char *name = archive_entry_pathname(en);
		m->name = strdup(name ? name : "(unnamed)");
		m->type = member_type(archive_entry_filetype(en), en);
		m->link = dup_or_null(m->type == 'h' ? archive_entry_hardlink(en)
		                                     : archive_entry_symlink(en));
		m->mode = (unsigned)archive_entry_perm(en) & 07777;
		m->has_mtime = archive_entry_mtime_is_set(en);
		m->mtime = (int64_t)archive_entry_mtime(en);
		m->uid = (int64_t)archive_entry_uid(en);
		m->gid = (int64_t)archive_entry_gid(en);
		m->uname = dup_or_null(archive_entry_uname(en));
		m->gname = dup_or_null(archive_entry_gname(en));
		if (m->type == 'f' && read_data(a, max_member, &m->data, &m->size) < 0) {
			snprintf(why, cap, "member %s: %s", m->name,
			         archive_error_string(a) ? archive_error_string(a) : "too large");
			ok = 0;
		}
	}
	if (ok && r != ARCHIVE_EOF)
		ok = 0;
	if (!ok && !why[0])
		snprintf(why, cap, "%s",
		         archive_error_string(a) ? archive_error_string(a)
		                                 : "not a readable archive");
	if (ok) {
		const char *f = archive_format_name(a);
		const char *z = archive_filter_count(a) > 1 ? archive_filter_name(a, 0) : "none";
		l->format = strdup(f ? f : "unknown");
		l->filter = strdup(z ? z : "unknown");
	}
	archive_read_free(a);
	if (!ok) {
		listing_free(l);
		return NULL;
	}
	return l;
}

static struct archive_listing *listing_read(const void *data, size_t len, size_t max_member,
                                            char *why, size_t cap)
{
	struct archive_listing *l = listing_try(data, len, max_member, 0, why, cap);
	if (l)
		return l;
	/* Not an archive: one compressed stream (a .gz of one file). */
	char raw_why[256] = "";
	l = listing_try(data, len, max_member, 1, raw_why, sizeof raw_why);
	if (l)
		why[0] = '\0';
	return l;
}

static const struct archive_ops ops = {
    .read = listing_read,
    .free = listing_free,
};

__attribute__((visibility("default"))) const struct archive_ops *cachet_archive_ops(void);
const struct archive_ops *cachet_archive_ops(void)
{
	return &ops;
}
