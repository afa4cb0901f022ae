/*
 * The archive plugin (libcachet-archive.so): libarchive, which `cachet
 * diff` and `cachet repro` need to compare tarballs, zip files and
 * compressed streams member by member, and nothing else does. Loaded on
 * demand, so that no other cachet process maps libarchive and the
 * compression libraries it pulls in (the hit path's start stays as it is).
 *
 * The plugin links nothing of cachet's: errors come back as text in why.
 */
#ifndef CACHET_ELF_ARCHIVE_PLUGIN_H
#define CACHET_ELF_ARCHIVE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#define ARCHIVE_PLUGIN        "libcachet-archive.so"
#define ARCHIVE_PLUGIN_SYMBOL "cachet_archive_ops"

struct archive_member {
	char *name;    /* the path in the archive; "data" for a bare compressed stream */
	char type;     /* 'f' file, 'd' directory, 'l' symlink, 'h' hard link, 'o' other */
	char *link;    /* 'l', 'h': the target; else NULL */
	unsigned mode; /* permission bits (07777) */
	int64_t mtime; /* seconds; meaningful when has_mtime */
	int has_mtime;
	int64_t uid, gid;
	char *uname, *gname; /* may be NULL */
	unsigned char *data; /* 'f': the contents */
	size_t size;
};

struct archive_listing {
	char *format; /* "POSIX ustar format", "ZIP 2.0 (deflation)", "raw" */
	char *filter; /* "gzip", "xz", "none" */
	struct archive_member *members;
	size_t n;
};

struct archive_ops {
	/* Reads every member of an archive in memory (tar, cpio, zip, 7z, ar...,
	 * compressed or not, or one compressed stream). A member larger than
	 * max_member bytes fails the read. NULL with why set. */
	struct archive_listing *(*read)(const void *data, size_t len, size_t max_member, char *why,
	                                size_t cap);
	void (*free)(struct archive_listing *l);
};

typedef const struct archive_ops *(*archive_plugin_fn)(void);

#endif
