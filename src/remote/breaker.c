/*
 * The circuit breaker, shared by every cachet process on one cache: after a
 * server fails, the file <state_dir>/breaker-<id> holds the unix time (ms)
 * until which nobody asks it again. A dead server then costs one timeout per
 * retry interval, not one per compile. Two processes that trip it at once
 * both write a time in the future; either wins, both are right.
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

int64_t breaker_until(const char *state_dir, const char *id)
{
	char *path = breaker_path(state_dir, id);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	free(path);
	if (fd < 0)
		return 0;
	char buf[32];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	long long until = strtoll(buf, NULL, 10);
	return until > wall_ms() ? (int64_t)until : 0;
}

int breaker_is_open(const char *state_dir, const char *id)
{
	return breaker_until(state_dir, id) != 0;
}

void breaker_trip(const char *state_dir, const char *id, long retry_ms)
{
	if (mkdir(state_dir, 0700) < 0 && errno != EEXIST)
		return;
	char *path = breaker_path(state_dir, id);
	char *tmp = xasprintf("%s.%d.tmp", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		char buf[32];
		int n = snprintf(buf, sizeof buf, "%lld\n", (long long)(wall_ms() + retry_ms));
		int ok = write(fd, buf, (size_t)n) == n;
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
