#include "cli/shared_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static int others_can_write(const char *dir, const char *name, uid_t me)
{
	char path[4096];
	if (snprintf(path, sizeof path, "%s%s%s", dir, *name ? "/" : "", name) >= (int)sizeof path)
		return 1;
	struct stat st;
	/* The directory itself may be reached through a symlink of the
	 * user's (CACHET_DIR=~/cache -> /data/cache). */
	if ((*name ? lstat(path, &st) : stat(path, &st)) < 0)
		return errno != ENOENT; /* not made yet: nothing in it to trust */
	/* A symlink in place of the index or the memo directory is someone
	 * else's doing: cachet makes neither. */
	return S_ISLNK(st.st_mode) || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || st.st_uid != me;
}

int cache_others_can_write(const char *cache_dir)
{
	uid_t me = geteuid();
	return others_can_write(cache_dir, "", me) || others_can_write(cache_dir, "index.db", me) ||
	       others_can_write(cache_dir, "memo", me);
}
