#include "cachet/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int error_set(struct error *e, const char *fmt, ...)
{
	if (!e)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	e->code = 0;
	return -1;
}

int error_errno(struct error *e, const char *fmt, ...)
{
	int saved = errno;
	if (!e)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	size_t len = strlen(e->msg);
	snprintf(e->msg + len, sizeof e->msg - len, ": %s", strerror(saved));
	e->code = saved;
	errno = saved;
	return -1;
}

int error_wrap(struct error *e, const char *fmt, ...)
{
	if (!e)
		return -1;
	char prefix[256];
	char old[sizeof e->msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof old);
	snprintf(e->msg, sizeof e->msg, "%s: %s", prefix, old);
	return -1;
}
