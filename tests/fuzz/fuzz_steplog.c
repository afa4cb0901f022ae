/*
 * libFuzzer target: reading the step log (`cachet log`), a text file in the
 * cache directory that any process sharing the cache appends to and that a
 * crash can leave with a torn last line. The input becomes the log file.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cachet/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct store *store;
static char *log_path;

static void setup(void)
{
	/* In the working directory, which run.sh empties before each run. */
	char tmpl[] = "steplog-store.XXXXXX";
	char *dir = mkdtemp(tmpl);
	struct error e = {0};
	if (!dir || store_open(dir, 0, &store, &e) < 0)
		abort();
	log_path = xasprintf("%s/steplog", dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!store)
		setup();
	int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	struct store_log_entry *entries = NULL;
	size_t n = 0;
	struct error e = {0};
	if (store_log_read(store, 50, &entries, &n, &e) == 0) {
		if (n > 50)
			abort();
		for (size_t i = 0; i < n; i++)
			if (!entries[i].result || !entries[i].reason || !entries[i].cwd ||
			    !entries[i].command)
				abort();
		store_log_free(entries, n);
	}
	/* An append after whatever the file holds must stay readable. */
	struct store_log_entry en = {.time_ms = 1,
	                             .result = "hit",
	                             .reason = "a\tb\nc\\",
	                             .duration_ms = 2,
	                             .cwd = "/w",
	                             .command = "cc -c x.c"};
	store_log_append(store, &en, 1 << 20);
	if (store_log_read(store, 1, &entries, &n, &e) == 0) {
		if (n != 1 || strcmp(entries[0].reason, en.reason) != 0)
			abort();
		store_log_free(entries, n);
	}
	return 0;
}
