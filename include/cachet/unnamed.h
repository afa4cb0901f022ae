/*
 * Files written unnamed (O_TMPFILE) and named only once complete: a
 * process killed while it writes one leaves nothing behind. The name is
 * given through /proc/self/fd, as open(2) describes, which needs no
 * privilege (linkat with AT_EMPTY_PATH would).
 */
#ifndef CACHET_UNNAMED_H
#define CACHET_UNNAMED_H

/* An unnamed file in the directory dir (relative to dirfd), open with
 * flags (O_WRONLY or O_RDWR, and O_CLOEXEC): its descriptor; or -1 with
 * errno set where the file system has no O_TMPFILE, or no /proc is mounted
 * to name the file through (the caller then names one from the start). */
int unnamed_open(int dirfd, const char *dir, int flags);

/* Gives the unnamed file fd the name (dirfd, name). As a link, it never
 * replaces what is there (EEXIST). 0, or -1 with errno set. */
int unnamed_link(int fd, int dirfd, const char *name);

#endif
