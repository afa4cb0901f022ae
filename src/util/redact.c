#include "cachet/redact.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "cachet/buf.h"

/* PASS covers PASSWORD, PASSWD and DB_PASS; PWD alone is the working
 * directory, not a password, and is left alone. */
static const char *const secret_words[] = {
    "KEY", "TOKEN", "SECRET", "PASS", "CREDENTIAL", "AUTH", "BEARER", "COOKIE", "SESSION", NULL,
};

/* Programs whose -pVALUE (no space) is a password. */
static const char *const dash_p_password_tools[] = {
    "mysql",         "mysqldump",      "mysqladmin",    "mysqlimport",  "mysqlshow",
    "mysqlcheck",    "mysqlpump",      "mysqlbinlog",   "mariadb",      "mariadb-dump",
    "mariadb-admin", "mariadb-import", "mariadb-check", "mariadb-show", NULL,
};

int redact_is_secret_name(const char *name, size_t len)
{
	for (const char *const *w = secret_words; *w; w++) {
		size_t wl = strlen(*w);
		for (size_t i = 0; i + wl <= len; i++)
			if (strncasecmp(name + i, *w, wl) == 0)
				return 1;
	}
	return 0;
}

static int is_dash_p_tool(const char *argv0)
{
	if (!argv0)
		return 0;
	const char *base = strrchr(argv0, '/');
	base = base ? base + 1 : argv0;
	for (const char *const *t = dash_p_password_tools; *t; t++)
		if (!strcmp(base, *t))
			return 1;
	return 0;
}

/* "scheme://user:password@host..." anywhere in s: the password hidden. */
static void hide_url_passwords(struct buf *b, const char *s)
{
	const char *p = s;
	for (const char *sep; (sep = strstr(p, "://"));) {
		const char *auth = sep + 3;
		size_t span = strcspn(auth, "/?#@ \t");
		const char *colon = memchr(auth, ':', span);
		buf_add(b, p, (size_t)(auth - p));
		if (auth[span] == '@' && colon) {
			buf_add(b, auth, (size_t)(colon - auth));
			buf_addstr(b, ":***");
			p = auth + span;
		} else {
			p = auth;
		}
	}
	buf_addstr(b, p);
}

/* "Authorization: Bearer x", "X-Auth-Token: x", "Bearer x" inside s. */
static int hide_header(struct buf *b, const char *s)
{
	const char *colon = strchr(s, ':');
	if (colon && colon > s && colon[1] == ' ') {
		size_t n = (size_t)(colon - s);
		int name_ok = 1;
		for (size_t i = 0; i < n && name_ok; i++)
			name_ok = isalnum((unsigned char)s[i]) || s[i] == '-' || s[i] == '_';
		if (name_ok && redact_is_secret_name(s, n)) {
			buf_add(b, s, n);
			buf_addstr(b, ": ***");
			return 1;
		}
	}
	const char *bearer = strcasestr(s, "bearer ");
	if (bearer && (bearer == s || !isalnum((unsigned char)bearer[-1]))) {
		buf_add(b, s, (size_t)(bearer - s) + 7);
		buf_addstr(b, "***");
		return 1;
	}
	return 0;
}

char *redact_argv(char *const *argv, size_t i)
{
	const char *arg = argv[i];
	const char *prev = i ? argv[i - 1] : NULL;
	if (prev && prev[0] == '-' && !strchr(prev, '=') &&
	    redact_is_secret_name(prev, strlen(prev)))
		return xstrdup("***");
	/* curl -u user:password, --user user:password, -uuser:password. */
	if (prev &&
	    (!strcmp(prev, "-u") || !strcmp(prev, "--user") || !strcmp(prev, "--proxy-user") ||
	     !strcmp(prev, "-U")) &&
	    strchr(arg, ':'))
		return xasprintf("%.*s:***", (int)(strchr(arg, ':') - arg), arg);
	if (i && !strncmp(arg, "-u", 2) && arg[2] && strchr(arg + 2, ':') && arg[2] != '-')
		return xasprintf("%.*s:***", (int)(strchr(arg, ':') - arg), arg);
	/* mysql -pPASSWORD. */
	if (i && arg[0] == '-' && arg[1] == 'p' && arg[2] && is_dash_p_tool(argv[0]))
		return xstrdup("-p***");
	struct buf b;
	buf_init(&b);
	if (hide_header(&b, arg))
		return buf_detach(&b, NULL);
	const char *eq = strchr(arg, '=');
	if (eq && redact_is_secret_name(arg, (size_t)(eq - arg))) {
		buf_free(&b);
		return xasprintf("%.*s=***", (int)(eq - arg), arg);
	}
	hide_url_passwords(&b, arg);
	return buf_detach(&b, NULL);
}

char *redact_arg(const char *arg, const char *prev)
{
	char *const argv[] = {(char *)prev, (char *)arg, NULL};
	return prev ? redact_argv(argv, 1) : redact_argv(argv + 1, 0);
}
