#include "cli/inherited.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachet/buf.h"

/* One more than the tracer watches: the tracer then knows there were too
 * many to watch. */
#define KEPT_MAX (TRACE_MAX_WATCHED_FDS + 1)

static int inherited[KEPT_MAX];
static size_t ninherited;
static int snapshot_taken;

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

void inherited_snapshot(void)
{
	if (snapshot_taken)
		return;
	snapshot_taken = 1;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		if (*end || end == de->d_name || fd <= 2 || fd == dirfd(d))
			continue;
		int flags = fcntl((int)fd, F_GETFD);
		if (flags < 0 || (flags & FD_CLOEXEC))
			continue;
		if (ninherited < KEPT_MAX)
			inherited[ninherited++] = (int)fd;
	}
	closedir(d);
	qsort(inherited, ninherited, sizeof *inherited, cmp_int);
}

/* The value of --jobserver-auth= (or the older --jobserver-fds=) in a
 * MAKEFLAGS-like value: the last one counts, as for make. NULL: none. */
static char *jobserver_auth(const char *flags)
{
	static const char *const names[] = {"--jobserver-auth=", "--jobserver-fds="};
	char *found = NULL;
	for (const char *p = flags; p && *p;) {
		while (*p == ' ')
			p++;
		const char *w = p;
		while (*p && *p != ' ')
			p++;
		for (size_t i = 0; i < 2; i++) {
			size_t n = strlen(names[i]);
			if ((size_t)(p - w) > n && !strncmp(w, names[i], n)) {
				free(found);
				found = xstrndup(w + n, (size_t)(p - w) - n);
			}
		}
	}
	return found;
}

static int jobserver[2];

void inherited_for_step(char *const *envp, struct trace_spec *spec)
{
	static const char *const vars[] = {"MAKEFLAGS=", "MFLAGS=", "CARGO_MAKEFLAGS="};
	size_t njob = 0;
	for (size_t i = 0; envp && envp[i]; i++)
		for (size_t v = 0; v < 3; v++) {
			size_t n = strlen(vars[v]);
			if (strncmp(envp[i], vars[v], n))
				continue;
			char *auth = jobserver_auth(envp[i] + n);
			if (!auth)
				continue;
			int r, w;
			char tail;
			if (!strncmp(auth, "fifo:", 5)) {
				char *real = realpath(auth + 5, NULL);
				if (real)
					spec->jobserver_fifo = real;
			} else if (sscanf(auth, "%d,%d%c", &r, &w, &tail) == 2 && r > 2 && w > 2) {
				jobserver[0] = r;
				jobserver[1] = w;
				njob = 2;
			}
			free(auth);
		}
	/* The jobserver's descriptors are kept, and not watched: taking and
	 * giving back tokens is how a step gets to run jobs, not data. */
	static int watched[KEPT_MAX], tokens[2];
	size_t k = 0, ntokens = 0;
	for (size_t i = 0; i < ninherited; i++)
		if (njob && (inherited[i] == jobserver[0] || inherited[i] == jobserver[1]))
			tokens[ntokens++] = inherited[i];
		else
			watched[k++] = inherited[i];
	spec->inherited_fds = watched;
	spec->ninherited_fds = k;
	spec->jobserver_fds = tokens;
	spec->njobserver_fds = ntokens;
}
