#include "cachet/unnamed.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int unnamed_open(int dirfd, const char *dir, int flags)
{
	if (access("/proc/self/fd", X_OK) < 0)
		return -1;
	return openat(dirfd, dir, flags | O_TMPFILE, 0600);
}

int unnamed_link(int fd, int dirfd, const char *name)
{
	char self[64];
	snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, self, dirfd, name, AT_SYMLINK_FOLLOW);
}
