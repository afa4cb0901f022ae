#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cachet/buf.h"

static void vreport(const char *fmt, va_list ap)
{
	struct buf b;
	buf_init(&b);
	buf_addstr(&b, "cachet: ");
	buf_vaddf(&b, fmt, ap);
	buf_addch(&b, '\n');
	/* One write, so that parallel steps' messages do not interleave. */
	ssize_t rc = write(2, b.data, b.len);
	(void)rc;
	buf_free(&b);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
}

int env_flag(const char *name)
{
	const char *v = getenv(name);
	return v && *v && strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0 &&
	       strcasecmp(v, "no") != 0;
}

char *cli_cache_dir(void)
{
	const char *dir = getenv("CACHET_DIR");
	if (dir && *dir)
		return xstrdup(dir);
	const char *xdg = getenv("XDG_CACHE_HOME");
	if (xdg && *xdg)
		return xasprintf("%s/cachet", xdg);
	const char *home = getenv("HOME");
	if (!home || !*home)
		home = "/tmp";
	return xasprintf("%s/.cache/cachet", home);
}

struct store *cli_open_store(unsigned flags)
{
	char *dir = cli_cache_dir();
	struct store *s = NULL;
	struct error e = { 0 };
	if (store_open(dir, flags, &s, &e) < 0) {
		cli_warn("cache unusable, running without it: %s", e.msg);
		s = NULL;
	}
	free(dir);
	return s;
}

static int dc_get(void *ctx, const char *path, const struct file_id *id, struct digest *out)
{
	return store_fp_get(ctx, path, id, out) == 1;
}

static void dc_put(void *ctx, const char *path, const struct file_id *id, const struct digest *d)
{
	store_fp_put(ctx, path, id, d);
}

void cli_digest_cache(struct store *s, struct digest_cache *dc)
{
	dc->get = dc_get;
	dc->put = dc_put;
	dc->ctx = s;
}

char *cli_self_exe(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return xstrdup(buf);
}

int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int run_direct(char **argv, const char *program)
{
	execv(program, argv);
	int err = errno;
	cli_error("%s: %s", argv[0], strerror(err));
	exit(err == ENOENT ? 127 : 126);
}
