/*
 * The one-line messages cachet prints on stderr ("cachet: ..."): apart from
 * the rest of cli/common.c, so that the configuration parser (settings.c)
 * and its fuzz target can warn without the remote tier and the store.
 */
#include "cli/cli.h"

#include <stdarg.h>
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
