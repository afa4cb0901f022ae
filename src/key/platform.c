#include "cachet/step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>

/* The value after "key\t: " on the first line of /proc/cpuinfo that has key. */
static char *cpuinfo_field(const char *text, const char *key)
{
	size_t klen = strlen(key);
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len > klen && memcmp(line, key, klen) == 0 && (line[klen] == '\t' || line[klen] == ' ' ||
								   line[klen] == ':')) {
			const char *colon = memchr(line, ':', len);
			if (colon) {
				const char *v = colon + 1;
				while (*v == ' ')
					v++;
				return xstrndup(v, len - (size_t)(v - line));
			}
		}
		line = end ? end + 1 : NULL;
	}
	return xstrdup("");
}

static char *read_small_file(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return xstrdup("");
	struct buf b;
	buf_init(&b);
	char chunk[4096];
	size_t n;
	/* The first processor's block is all we need. */
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < 16384)
		buf_add(&b, chunk, n);
	fclose(f);
	return buf_detach(&b, NULL);
}

/* -march=native reads CPUID, which is no syscall: the CPU model and feature
 * flags are part of the key, as are the kernel release and the umask (which
 * decides the modes of the outputs). */
char *platform_describe(void)
{
	struct utsname u;
	if (uname(&u) < 0)
		memset(&u, 0, sizeof u);
	char *cpuinfo = read_small_file("/proc/cpuinfo");
	char *model = cpuinfo_field(cpuinfo, "model name");
	char *flags = cpuinfo_field(cpuinfo, "flags");
	free(cpuinfo);
	struct digest d;
	char hex[DIGEST_HEX_LEN + 1];
	digest_bytes(flags, strlen(flags), &d);
	digest_to_hex(&d, hex);
	mode_t mask = umask(0);
	umask(mask);
	char *line = xasprintf("%s %s | %s | flags %.16s | umask %03o", u.machine, u.release, model,
			       hex, (unsigned)mask);
	free(model);
	free(flags);
	return line;
}
