#include "cachet/replace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int replace_file(const char *tmp, const char *path, int may_exist)
{
	if (may_exist && renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
		if (unlink(tmp) == 0 || errno == ENOENT)
			return 0;
		/* What was at path is not a file (a directory put there
		 * meanwhile): back as it was, and rename says why it cannot. */
		renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE);
	}
	return rename(tmp, path);
}
