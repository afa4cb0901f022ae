#include "cachet/step.h"

#include <stdlib.h>
#include <string.h>

/* Variables that cannot change what a step computes. PWD is deliberately
 * absent: gcc writes it into debug info when the cwd is reached through a
 * symlink; so is OLDPWD, where `cd -` goes. TMPDIR is absent from the key because every step gets a private
 * one. */
static const char *const neutral[] = {
	"TERM", "SHLVL", "_", "SSH_*", "DISPLAY", "XAUTHORITY", "CACHET_*", "TMPDIR",
	NULL,
};

static int name_matches(const char *name, size_t len, const char *pattern)
{
	size_t plen = strlen(pattern);
	if (plen && pattern[plen - 1] == '*')
		return len >= plen - 1 && memcmp(name, pattern, plen - 1) == 0;
	return len == plen && memcmp(name, pattern, len) == 0;
}

int env_is_neutral(const char *name, size_t name_len, const char *const *extra)
{
	for (const char *const *p = neutral; *p; p++)
		if (name_matches(name, name_len, *p))
			return 1;
	for (const char *const *p = extra; p && *p; p++)
		if (**p && name_matches(name, name_len, *p))
			return 1;
	return 0;
}

/* A word of MAKEFLAGS that only says how many jobs run at once or how they
 * share job slots; neither changes what one step computes. */
static int is_job_word(const char *w, size_t len)
{
	static const char *const prefixes[] = { "--jobserver-auth=", "--jobserver-fds=", "--jobs",
						"-j", NULL };
	for (const char *const *p = prefixes; *p; p++) {
		size_t n = strlen(*p);
		if (len >= n && memcmp(w, *p, n) == 0)
			return 1;
	}
	return 0;
}

/* MAKEFLAGS is "flags -- VAR=value..." with single-letter flags first,
 * e.g. "ks -j4 --jobserver-auth=3,4". The first word may hold 'j' among
 * other letters only as a bare "-j" in newer makes; letters are kept. */
char *env_strip_make_jobs(const char *value)
{
	struct buf out;
	buf_init(&out);
	const char *p = value;
	int after_dashdash = 0;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		const char *w = p;
		while (*p && *p != ' ') {
			if (*p == '\\' && p[1])
				p++;
			p++;
		}
		size_t len = (size_t)(p - w);
		if (len == 2 && memcmp(w, "--", 2) == 0)
			after_dashdash = 1;
		if (!after_dashdash && is_job_word(w, len))
			continue;
		if (out.len)
			buf_addch(&out, ' ');
		buf_add(&out, w, len);
	}
	return buf_detach(&out, NULL);
}
