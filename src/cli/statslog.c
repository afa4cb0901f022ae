/* stats_log: one line per step in a file of the build's choosing (see
 * statslog.h), and reading such a file back into counters. */
#include "cli/statslog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cachet/array.h"
#include "cachet/buf.h"
#include "cli/cli.h"
#include "cli/settings.h"
#include "cli/tee.h"

/* Errors counted by this process: one process runs one step. */
static int64_t step_errors;

void cli_stats_log_note(const char *counter, int64_t delta)
{
	if (!strcmp(counter, "errors"))
		step_errors += delta;
}

void cli_stats_log_step(const struct settings *st, const char *result, const char *reason,
                        int64_t duration_ms)
{
	const char *path = st ? settings_str(st, "stats_log") : NULL;
	if (!path)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct buf line;
	buf_init(&line);
	buf_addf(&line, "%lld\t", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	buf_add_field(&line, result);
	buf_addch(&line, '\t');
	buf_add_field(&line, reason);
	buf_addf(&line, "\t%lld\t%lld\n", (long long)duration_ms, (long long)step_errors);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		write_all(fd, line.data, line.len);
		close(fd);
	}
	buf_free(&line);
}

/* ---- reading ---- */

struct tally {
	struct store_counter *c;
	size_t n, alloc;
};

static void add(struct tally *t, const char *name, int64_t delta)
{
	char key[sizeof t->c->name];
	snprintf(key, sizeof key, "%s", name); /* long reasons are cut, never dropped */
	for (size_t i = 0; i < t->n; i++) {
		if (!strcmp(t->c[i].name, key)) {
			t->c[i].value += delta;
			return;
		}
	}
	ARRAY_RESERVE(t->c, t->alloc, t->n + 1, 16);
	memcpy(t->c[t->n].name, key, sizeof key);
	t->c[t->n].value = delta;
	t->n++;
}

/* Splits line (without its newline) into at most max tab-separated fields. */
static size_t split(char *line, char **f, size_t max)
{
	size_t n = 0;
	while (n < max) {
		f[n++] = line;
		char *tab = strchr(line, '\t');
		if (!tab)
			break;
		*tab = '\0';
		line = tab + 1;
	}
	return n;
}

static void count_line(struct tally *t, char *line)
{
	char *f[5];
	if (split(line, f, 5) < 5)
		return;
	char *result = f[1];
	char *reason = field_unescape(f[2], strlen(f[2]));
	char *name;
	if (!strcmp(result, "hit")) {
		/* A sampled re-run of a hit counts as the cache counts it. */
		if (!strcmp(reason, "verified: nondeterministic"))
			add(t, "nondeterministic", 1);
		else if (!strncmp(reason, "verified", 8))
			add(t, "verified", 1);
		else
			add(t, "hits", 1);
	} else if (!strcmp(result, "miss") || !strcmp(result, "uncacheable")) {
		int miss = result[0] == 'm';
		add(t, miss ? "misses" : "uncacheable", 1);
		name = xasprintf("%s: %s", miss ? "miss" : "uncacheable",
		                 *reason ? reason : "unknown");
		add(t, name, 1);
		free(name);
	} else {
		free(reason);
		return;
	}
	free(reason);
	add(t, "errors", strtoll(f[4], NULL, 10));
	add(t, "steps", 1);
}

int cli_stats_log_read(const char *path, struct store_counter **out, size_t *n, struct error *e)
{
	*out = NULL;
	*n = 0;
	FILE *f = fopen(path, "re");
	if (!f)
		return error_errno(e, "%s", path);
	struct tally t = {0};
	/* Present even when zero, as the cache's counters are. */
	static const char *const always[] = {"steps", "hits", "misses", "uncacheable", "errors"};
	for (size_t i = 0; i < sizeof always / sizeof always[0]; i++)
		add(&t, always[i], 0);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] != '\n')
			break; /* a line still being written */
		line[len - 1] = '\0';
		count_line(&t, line);
	}
	int err = ferror(f);
	free(line);
	fclose(f);
	if (err) {
		free(t.c);
		errno = EIO;
		return error_errno(e, "reading %s", path);
	}
	*out = t.c;
	*n = t.n;
	return 0;
}
