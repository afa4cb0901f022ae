/*
 * Path text helpers. cachet never normalises ".." as text: with symlinks,
 * "a/b/.." need not be "a". Only "." components and repeated slashes, which
 * the kernel ignores during lookup, are removed.
 */
#ifndef CACHET_PATH_H
#define CACHET_PATH_H

#include <stddef.h>

/* Joins base (absolute) and p: p itself when absolute. Returns a malloc'd,
 * tidied path (see path_tidy). An empty p yields base. */
char *path_join(const char *base, const char *p);

/* In place: collapses "//", removes "/./" and a trailing "/." or "/", keeps
 * ".." and a lone "/". */
void path_tidy(char *p);

/* 1 if path equals root or lies below it (component-wise: "/a/bc" is not
 * under "/a/b"). */
int path_is_under(const char *path, const char *root);

/* Pointer to the last component; dirname copies into a malloc'd string
 * ("/" for "/x", "." for "x"). */
const char *path_basename(const char *p);
char *path_dirname(const char *p);

/* mkdir -p with mode; 0 or -1 with errno set. */
int path_mkdirs(const char *path, unsigned mode);
/* 1 when the entry of a colon-separated search list (PATH) that starts at
 * entry, len bytes long, is also an earlier entry of list: a search finds
 * there what it found the first time. */
int path_list_repeats(const char *list, const char *entry, size_t len);

#endif
