#include "cachet/path.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cachet/buf.h"

/* 1 when path_tidy would leave p as it is: most paths a tracer sees are
 * tidy already, and this looks at its slashes only. */
static int is_tidy(const char *p)
{
	if (!p[0] || (p[0] == '.' && p[1] == '/'))
		return 0;
	for (const char *s = strchr(p, '/'); s; s = strchr(s + 1, '/')) {
		if (s[1] == '/' || (s[1] == '.' && (s[2] == '/' || !s[2])) || (!s[1] && s != p))
			return 0;
	}
	return 1;
}

void path_tidy(char *p)
{
	if (is_tidy(p))
		return;
	char *r = p, *w = p;
	int absolute = *p == '/';
	while (*r) {
		if (*r == '/') {
			/* collapse runs of '/' */
			while (r[1] == '/')
				r++;
			/* drop "/." components */
			if (r[1] == '.' && (r[2] == '/' || r[2] == '\0')) {
				r += 2;
				continue;
			}
			*w++ = *r++;
		} else if (w == p && r[0] == '.' && r[1] == '/') {
			r += 2; /* leading "./" */
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	size_t len = (size_t)(w - p);
	if (len > 1 && p[len - 1] == '/')
		p[len - 1] = '\0';
	if (*p == '\0')
		strcpy(p, absolute ? "/" : ".");
}

char *path_join(const char *base, const char *p)
{
	char *out;
	if (p[0] == '/' || !base)
		out = xstrdup(p);
	else if (p[0] == '\0')
		out = xstrdup(base);
	else
		out = xasprintf("%s/%s", base, p);
	path_tidy(out);
	return out;
}

int path_is_under(const char *path, const char *root)
{
	size_t n = strlen(root);
	while (n > 1 && root[n - 1] == '/')
		n--;
	if (n == 1 && root[0] == '/')
		return path[0] == '/';
	if (strncmp(path, root, n) != 0)
		return 0;
	return path[n] == '\0' || path[n] == '/';
}

const char *path_basename(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

char *path_dirname(const char *p)
{
	const char *s = strrchr(p, '/');
	if (!s)
		return xstrdup(".");
	if (s == p)
		return xstrdup("/");
	return xstrndup(p, (size_t)(s - p));
}

int path_mkdirs(const char *path, unsigned mode)
{
	struct stat st;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		errno = ENOTDIR;
		return -1;
	}
	char *copy = xstrdup(path);
	for (char *s = copy + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(copy, mode) < 0 && errno != EEXIST) {
			free(copy);
			return -1;
		}
		*s = '/';
	}
	int rc = mkdir(copy, mode);
	free(copy);
	if (rc < 0 && errno != EEXIST)
		return -1;
	return 0;
}

int path_list_repeats(const char *list, const char *entry, size_t len)
{
	for (const char *p = list; p < entry;) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n == len && memcmp(p, entry, len) == 0)
			return 1;
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}
