#include "cachet/env.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cachet/digest.h"
#include "cachet/observe.h"
#include "cachet/path.h"
#include "cachet/pathset.h"
#include "cachet/toolchain.h"

/* The next word of MAKEFLAGS from *p ("\ " is a space inside a word). */
static const char *next_word(const char **p, size_t *len)
{
	const char *s = *p;
	while (*s == ' ')
		s++;
	if (!*s)
		return NULL;
	const char *w = s;
	while (*s && *s != ' ') {
		if (*s == '\\' && s[1])
			s++;
		s++;
	}
	*len = (size_t)(s - w);
	*p = s;
	return w;
}

/* The name that word (of length len) assigns as a command-line variable
 * of MAKEFLAGS, in *name_len, or NULL: NAME=v, NAME:=v, NAME::=v, NAME+=v,
 * NAME?=v, NAME!=v, after "--" or, as the user may set MAKEFLAGS=V=1,
 * anywhere but in an option. */
static const char *assigned_name(const char *w, size_t len, int after_dashdash, size_t *name_len)
{
	if (!after_dashdash && w[0] == '-')
		return NULL;
	const char *eq = memchr(w, '=', len);
	if (!eq)
		return NULL;
	size_t n = (size_t)(eq - w);
	while (n && strchr(":+?!", w[n - 1]))
		n--;
	*name_len = n;
	return n ? w : NULL;
}

/* Calls fn for each command-line variable of makeflags: the word as
 * MAKEFLAGS has it, the length of the word and of the name it starts with. */
static void each_command_var(const char *makeflags,
                             void (*fn)(const char *, size_t, size_t, void *), void *arg)
{
	const char *p = makeflags, *w;
	size_t len, n;
	int after_dashdash = 0;
	while (p && (w = next_word(&p, &len))) {
		if (!after_dashdash && len == 2 && !memcmp(w, "--", 2)) {
			after_dashdash = 1;
			continue;
		}
		if (assigned_name(w, len, after_dashdash, &n))
			fn(w, len, n, arg);
	}
}

struct wanted {
	const char *name;
	size_t len;
	int found;
};

static void find_name(const char *word, size_t word_len, size_t len, void *arg)
{
	(void)word_len;
	struct wanted *w = arg;
	w->found |= len == w->len && !memcmp(word, w->name, len);
}

int env_is_make_command_var(const char *makeflags, const char *name, size_t name_len)
{
	struct wanted w = {name, name_len, 0};
	each_command_var(makeflags, find_name, &w);
	return w.found;
}

/* The word as MAKEFLAGS has it (what a script that parses MAKEFLAGS sees)
 * and the variable's value in the environment (what the recipe got, which
 * the recipe's caller may have changed). */
static void put_assignment(const char *word, size_t word_len, size_t len, void *arg)
{
	struct buf *b = arg;
	buf_add(b, word, word_len);
	buf_addch(b, '\0');
	char *var = xstrndup(word, len);
	const char *v = getenv(var);
	if (v)
		buf_addf(b, "%s=%s", var, v);
	else
		buf_addf(b, "%s unset", var);
	buf_addch(b, '\0');
	free(var);
}

void env_make_vars_value(const char *makeflags, struct buf *out)
{
	struct buf all;
	buf_init(&all);
	each_command_var(makeflags, put_assignment, &all);
	if (!all.len) {
		buf_addstr(out, "no make-vars");
	} else {
		/* A digest, as env: facts: no path set carries a value. */
		struct digest d;
		digest_bytes(all.data, all.len, &d);
		char hex[2 * DIGEST_LEN + 1];
		digest_to_hex(&d, hex);
		buf_addf(out, "make-vars %s", hex);
	}
	buf_free(&all);
}

/* What those programs and the C library under them read (getenv traced on
 * gcc 12's compile and link, and the variables their manuals name): a
 * command-line variable of one of these names still reaches them. A
 * leading or trailing '*' matches a suffix or a prefix. */
static const char *const closed_reads[] = {
    "*PATH",
    "LD_*",
    "LC_*",
    "LANG*",
    "GCC_*",
    "COLLECT_*",
    "GNU*",
    "TMP*",
    "TEMP",
    "TERM*",
    "COLUMNS",
    "NO_COLOR",
    "DEPENDENCIES_OUTPUT",
    "SUNPRO_DEPENDENCIES",
    "SOURCE_DATE_EPOCH",
    "PWD",
    "HOME",
    "TZ*",
    "MALLOC_*",
    "GLIBC_*",
    "POSIXLY_CORRECT",
    "LDEMULATION",
    "BINUTILS_*",
    "LIBCTF_*",
    "LTO_*",
    "MAKEFLAGS",
    "HOSTALIASES",
    "LOCALDOMAIN",
    "RES_OPTIONS",
    "DEBUGINFOD_*",
    NULL,
};

static int matches(const char *name, size_t len, const char *pattern)
{
	size_t plen = strlen(pattern);
	if (pattern[0] == '*')
		return len >= plen - 1 && !memcmp(name + len - (plen - 1), pattern + 1, plen - 1);
	if (pattern[plen - 1] == '*')
		return len >= plen - 1 && !memcmp(name, pattern, plen - 1);
	return len == plen && !memcmp(name, pattern, len);
}

static int in_list(const char *name, size_t len, const char *const *list)
{
	for (const char *const *p = list; *p; p++)
		if (matches(name, len, *p))
			return 1;
	return 0;
}

/* Programs whose reads of the environment are known by name: the GNU
 * toolchain's driver, compilers proper, assembler and linker, and the
 * dynamic loader that starts each of them (LD_*). Not clang or lld, which
 * read variables of their own. */
static int closed_name(const char *base)
{
	switch (toolchain_role(base)) {
	case TOOLCHAIN_GCC:
	case TOOLCHAIN_SYSTEM_CC:
	case TOOLCHAIN_GNU_PROGRAM:
	case TOOLCHAIN_LOADER:
		return 1;
	default:
		return 0;
	}
}

/* 1 when path leads to an ELF file named as a closed program (a script
 * named gcc is a shell, which reads every variable; a gcc that is a link
 * to python is python); -1 when nothing is there (an exec that failed). */
/* The file absolute path leads to, with its last component as realpath
 * finds it (malloc'd), or NULL with errno. Only the last component's
 * symlinks decide that name, not those of the directories above it, so
 * they alone are followed: a relative target joined to the directory of
 * its link is resolved as the kernel resolves the link ("dir/../x" is not
 * folded). realpath would read every directory on the way (six readlinks
 * for cc1, ten for the loader through /lib64 and /lib). */
static char *program_file(const char *path)
{
	char *p = xstrdup(path);
	for (int hops = 0; hops < 40; hops++) {
		const char *base = path_basename(p);
		struct stat st;
		if (p[0] != '/' || !*base || !strcmp(base, ".") || !strcmp(base, "..")) {
			char *real = realpath(p, NULL);
			free(p);
			return real;
		}
		if (lstat(p, &st) < 0) {
			int err = errno;
			free(p);
			errno = err;
			return NULL;
		}
		if (!S_ISLNK(st.st_mode))
			return p;
		char target[4096];
		ssize_t n = readlink(p, target, sizeof target - 1);
		if (n <= 0) {
			free(p);
			errno = n < 0 ? errno : ENOENT;
			return NULL;
		}
		target[n] = '\0';
		char *dir = path_dirname(p);
		free(p);
		p = path_join(dir, target);
		free(dir);
	}
	free(p);
	errno = ELOOP;
	return NULL;
}

static int closed_program(const char *path)
{
	char *real = program_file(path);
	if (!real)
		return errno == ENOENT || errno == ENOTDIR ? -1 : 0;
	int closed = 0;
	int fd = open(real, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char magic[4];
		closed = read(fd, magic, sizeof magic) == 4 && !memcmp(magic, "\177ELF", 4) &&
		         closed_name(path_basename(real));
		close(fd);
	}
	free(real);
	return closed;
}

/* 1 for a shared object a program may have loaded on its own: a gcc
 * plugin (-fplugin, in a plugin directory) or a library outside the
 * system's, where an LD_PRELOAD or a private build would put it. */
static int foreign_code(const char *path)
{
	const char *base = path_basename(path);
	if (!strstr(base, ".so"))
		return 0;
	if (strstr(path, "/plugin/"))
		return 1;
	static const char *const system_dirs[] = {"/lib",       "/lib64",       "/usr/lib",
	                                          "/usr/lib64", "/usr/libexec", NULL};
	for (const char *const *d = system_dirs; *d; d++)
		if (path_is_under(path, *d))
			return 0;
	return 1;
}

int env_closed_programs(const struct pathset *ps)
{
	for (size_t i = 0; i < ps->nobs; i++) {
		const struct observation *o = &ps->obs[i];
		const char *path = ps->paths[o->path];
		if (o->kind == OBS_READ && foreign_code(path))
			return 0;
		if (o->kind != OBS_EXEC)
			continue;
		if (!closed_program(path))
			return 0;
	}
	return 1;
}

int env_read_by_closed_programs(const char *name, size_t name_len)
{
	return in_list(name, name_len, closed_reads);
}
