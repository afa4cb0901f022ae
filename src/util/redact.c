#include "cachet/redact.h"

#include <string.h>
#include <strings.h>

#include "cachet/buf.h"

static const char *const secret_words[] = {
	"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", NULL,
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

char *redact_arg(const char *arg, const char *prev)
{
	if (prev && prev[0] == '-' && !strchr(prev, '=') && redact_is_secret_name(prev, strlen(prev)))
		return xstrdup("***");
	const char *eq = strchr(arg, '=');
	if (!eq)
		return xstrdup(arg);
	if (!redact_is_secret_name(arg, (size_t)(eq - arg)))
		return xstrdup(arg);
	return xasprintf("%.*s=***", (int)(eq - arg), arg);
}
