#include "cachet/bug.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void bug_at(const char *file, int line, const char *why)
{
	/* One write of a formatted line: a BUG may be reached in a forked
	 * child or with stdio's locks held, where fprintf could block. */
	char msg[512];
	int n = snprintf(msg, sizeof msg, "cachet: BUG at %s:%d: %s\n", file, line, why);
	if (n > 0) {
		ssize_t w = write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
		(void)w;
	}
	abort();
}
