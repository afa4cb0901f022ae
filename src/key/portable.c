#include "cachet/portable.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cachet/find.h"
#include "cachet/path.h"
#include "cachet/pathset.h"

const char *portable_base_at(const struct step_bases *b, int i)
{
	const char *d = b ? b->dir[i] : NULL;
	/* "/" is refused by portable_base; a HOME of "/" is simply no base. */
	return d && d[0] == '/' && d[1] ? d : NULL;
}

int portable_has_bases(const struct step_bases *b)
{
	for (int i = 0; i < STEP_MAX_BASES; i++)
		if (portable_base_at(b, i))
			return 1;
	return 0;
}

char *portable_base(const char *dir, const char *name, struct error *e)
{
	/* A relative base would mean another directory from every cwd. */
	if (dir[0] != '/') {
		error_set(e, "%s %s: not an absolute path", name, dir);
		return NULL;
	}
	char *real = realpath(dir, NULL);
	if (!real) {
		error_errno(e, "%s %s", name, dir);
		return NULL;
	}
	struct stat st;
	if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		error_set(e, "%s %s: not a directory", name, dir);
		free(real);
		return NULL;
	}
	if (!strcmp(real, "/")) {
		error_set(e,
		          "%s %s: is the root directory, under which every path would be keyed "
		          "as relative",
		          name, dir);
		free(real);
		return NULL;
	}
	return real;
}

/* Characters that end one path inside a text and may start the next. */
static int is_text_separator(char c)
{
	return c == ' ' || c == '\t' || c == ':' || c == ';' || c == ',' || c == '=' || c == '"' ||
	       c == '\'';
}

/* The deepest base that s starts with, followed by its end, a '/' or (in a
 * text) a separator, or -1: component-wise, "/a/bc" does not start with
 * base "/a/b". */
static int base_starting(const char *s, const struct step_bases *b, int in_text)
{
	int best = -1;
	size_t best_len = 0;
	for (int i = 0; i < STEP_MAX_BASES; i++) {
		const char *d = portable_base_at(b, i);
		size_t n = d ? strlen(d) : 0;
		if (!d || n <= best_len || strncmp(s, d, n) != 0)
			continue;
		if (s[n] == '\0' || s[n] == '/' || (in_text && is_text_separator(s[n]))) {
			best = i;
			best_len = n;
		}
	}
	return best;
}

/* The deepest base containing path, or -1. */
int portable_base_of(const char *path, const struct step_bases *b)
{
	return base_starting(path, b, 0);
}

const char *portable_cwd_base(const struct step_bases *b, const char *cwd)
{
	const char *d = portable_base_at(b, STEP_BASE_DIR);
	return d && cwd && cwd[0] == '/' && path_is_under(cwd, d) ? cwd : NULL;
}

/* 1 when paths under base_dir are written relative to the cwd base. */
int portable_cwd_relative(const struct step_bases *b)
{
	return portable_base_at(b, STEP_BASE_DIR) && portable_base_at(b, STEP_BASE_CWD);
}

/* path[0..len), under base_dir, relative to the cwd base: the prefix, a
 * "/.." per level from the cwd up to the deepest directory both lie under,
 * and the rest of path. */
static void add_cwd_relative(struct buf *out, const char *path, size_t len,
                             const struct step_bases *b)
{
	const char *cwd = b->dir[STEP_BASE_CWD];
	/* The common part, component-wise. */
	size_t common = 0;
	for (size_t i = 0;; i++) {
		int path_end = i == len || path[i] == '/';
		int cwd_end = cwd[i] == '\0' || cwd[i] == '/';
		if (path_end && cwd_end)
			common = i;
		if (i == len || cwd[i] == '\0' || path[i] != cwd[i])
			break;
	}
	buf_addf(out, "%s%d", STEP_PORTABLE_PREFIX, STEP_BASE_CWD);
	for (const char *p = cwd + common; *p; p++)
		if (*p == '/')
			buf_addstr(out, "/..");
	buf_add(out, path + common, len - common);
}

static int has_reserved_prefix(const char *s)
{
	return strstr(s, STEP_PORTABLE_PREFIX) != NULL;
}

char *portable_path(const char *path, const struct step_bases *b)
{
	if (has_reserved_prefix(path))
		return NULL;
	int i = portable_base_of(path, b);
	if (i < 0)
		return xstrdup(path);
	if (i == STEP_BASE_DIR && portable_cwd_relative(b)) {
		struct buf out;
		buf_init(&out);
		add_cwd_relative(&out, path, strlen(path), b);
		return buf_detach(&out, NULL);
	}
	return xasprintf("%s%d%s", STEP_PORTABLE_PREFIX, i, path + strlen(b->dir[i]));
}

/* The cwd base's path k levels up (malloc'd), or NULL when that is above
 * base_dir: no recorded path leads there. */
static char *cwd_levels_up(const struct step_bases *b, int k)
{
	const char *cwd = portable_base_at(b, STEP_BASE_CWD);
	const char *top = portable_base_at(b, STEP_BASE_DIR);
	if (!cwd || !top)
		return NULL;
	size_t len = strlen(cwd);
	while (k-- > 0) {
		while (len && cwd[len - 1] != '/')
			len--;
		if (len)
			len--; /* the '/' */
		if (len < strlen(top))
			return NULL;
	}
	return xstrndup(cwd, len);
}

char *portable_local_path(const char *portable, const struct step_bases *b)
{
	size_t plen = strlen(STEP_PORTABLE_PREFIX);
	if (strncmp(portable, STEP_PORTABLE_PREFIX, plen) != 0)
		return xstrdup(portable);
	const char *p = portable + plen;
	if (*p < '0' || *p >= '0' + STEP_MAX_BASES || (p[1] != '/' && p[1] != '\0'))
		return NULL;
	int i = *p - '0';
	if (i == STEP_BASE_CWD && portable_cwd_relative(b)) {
		int k = 0;
		const char *rest = p + 1;
		while (!strncmp(rest, "/..", 3) && (rest[3] == '/' || rest[3] == '\0')) {
			k++;
			rest += 3;
		}
		char *up = cwd_levels_up(b, k);
		if (!up)
			return NULL;
		char *local = xasprintf("%s%s", up, rest);
		free(up);
		return local;
	}
	const char *d = portable_base_at(b, i);
	if (!d)
		return NULL;
	return xasprintf("%s%s", d, p + 1);
}

int portable_base_index(const char *path)
{
	size_t plen = strlen(STEP_PORTABLE_PREFIX);
	if (strncmp(path, STEP_PORTABLE_PREFIX, plen) != 0)
		return -1;
	const char *p = path + plen;
	if (*p < '0' || *p >= '0' + STEP_MAX_BASES || p[1] != '\0')
		return -1;
	return *p - '0';
}

char *portable_text(const char *text, const struct step_bases *b)
{
	if (has_reserved_prefix(text))
		return NULL;
	struct buf out;
	buf_init(&out);
	int slash_in_word = 0; /* a base only counts where a path starts */
	for (const char *p = text; *p;) {
		int best = *p == '/' && !slash_in_word ? base_starting(p, b, 1) : -1;
		if (best == STEP_BASE_DIR && portable_cwd_relative(b)) {
			size_t len = 0;
			while (p[len] && !is_text_separator(p[len]))
				len++;
			add_cwd_relative(&out, p, len, b);
			p += len;
			slash_in_word = 1;
			continue;
		}
		if (best >= 0) {
			buf_addf(&out, "%s%d", STEP_PORTABLE_PREFIX, best);
			p += strlen(b->dir[best]);
			slash_in_word = 1;
			continue;
		}
		if (*p == '/')
			slash_in_word = 1;
		else if (is_text_separator(*p))
			slash_in_word = 0;
		buf_addch(&out, *p++);
	}
	return buf_detach(&out, NULL);
}

/* ---- values ---- */

int portable_value(const void *value, size_t len, const struct step_bases *b, struct buf *out)
{
	const char *v = value;
	if (len < 2 || v[0] != 'R' || v[1] != '/' || !portable_has_bases(b)) {
		buf_add(out, value, len);
		return 0;
	}
	char *target = xstrndup(v + 1, len - 1);
	char *p = strlen(target) == len - 1 ? portable_path(target, b) : NULL;
	if (!p) {
		/* 'Q' is never recorded: a run that saw such a target is not
		 * stored, and one that sees it now matches nothing. */
		buf_addch(out, 'Q');
		buf_add(out, v + 1, len - 1);
		free(target);
		return -1;
	}
	buf_addch(out, 'R');
	buf_addstr(out, p);
	free(p);
	free(target);
	return 0;
}

/* ---- back to this checkout ---- */

/* In place: *path from portable to local. -1 when it names an unset base. */
int portable_localise_path(char **path, const struct step_bases *b)
{
	char *local = portable_local_path(*path, b);
	if (!local)
		return -1;
	free(*path);
	*path = local;
	return 0;
}

int portable_localise_pathset(struct pathset *ps, const struct step_bases *b)
{
	for (size_t i = 0; i < ps->npaths; i++) {
		/* Names in listings, and paths outside every base, stay: this
		 * runs on every hit, so no copy is made of them. */
		if (strncmp(ps->paths[i], STEP_PORTABLE_PREFIX, strlen(STEP_PORTABLE_PREFIX)) != 0)
			continue;
		pathset_own_paths(ps);
		if (portable_localise_path(&ps->paths[i], b) < 0)
			return -1;
	}
	return 0;
}

/* ---- the scan ---- */

void portable_finder(struct finder *f, const struct step_bases *b)
{
	const char *needles[STEP_MAX_BASES];
	for (int i = 0; i < STEP_MAX_BASES; i++)
		needles[i] = portable_base_at(b, i);
	finder_init(f, needles, STEP_MAX_BASES);
}
