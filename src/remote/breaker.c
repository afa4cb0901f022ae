/*
 * The circuit breaker, shared by every cachet process on one cache: after a
 * server fails, the file <state_dir>/breaker-<id> holds the unix time (ms)
 * until which nobody asks it again. A dead server then costs one timeout per
 * retry interval, not one per compile. Two processes that trip it at once
 * both write a time in the future; either wins, both are right.
 *
 * The file's next lines keep the failure for `cachet remote status`: the
 * unix time (ms) it happened and its reason (an HTTP status, a curl or
 * hiredis message), one line. It outlives the rest period: the last error
 * is worth showing after the server is asked again.
 */
#include "cachet/remote.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cachet/fdio.h"

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *breaker_path(const char *state_dir, const char *id)
{
	return xasprintf("%s/breaker-%s", state_dir, id);
}

/* The file's text (at most len-1 bytes), or 0 when there is none. */
static size_t read_state(const char *state_dir, const char *id, char *buf, size_t len)
{
	char *path = breaker_path(state_dir, id);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	free(path);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return (size_t)n;
}

int64_t breaker_until(const char *state_dir, const char *id)
{
	char buf[32];
	if (!read_state(state_dir, id, buf, sizeof buf))
		return 0;
	long long until = strtoll(buf, NULL, 10);
	return until > wall_ms() ? (int64_t)until : 0;
}

int breaker_last_error(const char *state_dir, const char *id, int64_t *when_ms, char *reason,
                       size_t len)
{
	char buf[BREAKER_REASON_MAX + 64];
	if (!read_state(state_dir, id, buf, sizeof buf))
		return 0;
	char *when = strchr(buf, '\n');
	char *why = when ? strchr(when + 1, '\n') : NULL;
	if (!why)
		return 0; /* written before reasons were kept */
	*when_ms = strtoll(when + 1, NULL, 10);
	why++;
	why[strcspn(why, "\n")] = '\0';
	snprintf(reason, len, "%s", *why ? why : "unknown");
	return 1;
}

int breaker_is_open(const char *state_dir, const char *id)
{
	return breaker_until(state_dir, id) != 0;
}

void breaker_trip(const char *state_dir, const char *id, long retry_ms, const char *reason)
{
	if (mkdir(state_dir, 0700) < 0 && errno != EEXIST)
		return;
	/* One line, whatever the server or library said. */
	char why[BREAKER_REASON_MAX];
	snprintf(why, sizeof why, "%s", reason && *reason ? reason : "unknown");
	for (char *p = why; *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			*p = ' ';
	char *path = breaker_path(state_dir, id);
	char *tmp = xasprintf("%s.%d.tmp", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		int64_t now = wall_ms();
		char *text =
		    xasprintf("%lld\n%lld\n%s\n", (long long)(now + retry_ms), (long long)now, why);
		size_t n = strlen(text);
		int ok = write_all(fd, text, n) == 0;
		free(text);
		if (close(fd) == 0 && ok && rename(tmp, path) == 0) {
			free(tmp);
			free(path);
			return;
		}
	}
	unlink(tmp);
	free(tmp);
	free(path);
}
