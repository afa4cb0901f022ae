#include "cli/shared_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static int others_can_write(int dirfd, const char *name)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) < 0)
		return errno != ENOENT; /* not made yet: nothing in it to trust */
	/* A symlink in place of the index or the memo directory is someone
	 * else's doing: cachet makes neither. */
	return S_ISLNK(st.st_mode) || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 ||
	       st.st_uid != geteuid();
}

int cache_others_can_write(const char *cache_dir)
{
	int fd = open(cache_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	int shared = others_can_write(fd, "") || others_can_write(fd, "index.db") ||
		     others_can_write(fd, "memo");
	close(fd);
	return shared;
}
