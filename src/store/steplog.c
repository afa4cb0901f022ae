/*
 * The step log: a text file of one tab-separated line per step in the cache
 * directory, outside the index, so that recording a hit costs one append and
 * never a write lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/array.h"
#include "cachet/buf.h"
#include "store/store_internal.h"

void store_log_append(struct store *s, const struct store_log_entry *en, uint64_t max_bytes)
{
	if (s->readonly)
		return;
	struct buf line;
	buf_init(&line);
	buf_addf(&line, "%lld\t", (long long)en->time_ms);
	buf_add_field(&line, en->result);
	buf_addch(&line, '\t');
	buf_add_field(&line, en->reason);
	buf_addf(&line, "\t%lld\t", (long long)en->duration_ms);
	buf_add_field(&line, en->cwd);
	buf_addch(&line, '\t');
	buf_add_field(&line, en->command);
	buf_addch(&line, '\n');
	char *path = xasprintf("%s/steplog", s->dir);
	int fd =
	    store_create_mode(s, store_openat(s, path, O_RDWR | O_APPEND | O_CREAT, s->file_mode));
	if (fd >= 0) {
		/* A line cut short (a full disk, a crash) must not swallow this
		 * one: end it first. */
		struct stat st;
		char last;
		if (fstat(fd, &st) == 0 && st.st_size > 0 &&
		    pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n') {
			ssize_t nl = write(fd, "\n", 1);
			(void)nl;
		}
		ssize_t w = write(fd, line.data, line.len);
		(void)w;
		if (fstat(fd, &st) == 0 && (uint64_t)st.st_size > max_bytes) {
			/* Several processes may rotate at once; each rename is atomic
			 * and at worst one of them drops a generation early. */
			char *old = xasprintf("%s/steplog.1", s->dir);
			store_rename(s, path, old, 0);
			free(old);
		}
		close(fd);
	}
	free(path);
	buf_free(&line);
}

static int parse_line(const char *line, size_t len, struct store_log_entry *en)
{
	const char *field[6];
	size_t flen[6];
	size_t nf = 0;
	const char *start = line;
	for (size_t i = 0; i <= len && nf < 6; i++) {
		if (i == len || line[i] == '\t') {
			field[nf] = start;
			flen[nf] = (size_t)(line + i - start);
			nf++;
			start = line + i + 1;
		}
	}
	if (nf != 6)
		return -1;
	memset(en, 0, sizeof *en);
	en->time_ms = strtoll(field[0], NULL, 10);
	en->result = field_unescape(field[1], flen[1]);
	en->reason = field_unescape(field[2], flen[2]);
	en->duration_ms = strtoll(field[3], NULL, 10);
	en->cwd = field_unescape(field[4], flen[4]);
	en->command = field_unescape(field[5], flen[5]);
	return 0;
}

static void store_log_free_fields(struct store_log_entry *entries, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(entries[i].result);
		free(entries[i].reason);
		free(entries[i].cwd);
		free(entries[i].command);
	}
}

static void read_file(const char *path, struct buf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	char chunk[65536];
	ssize_t n;
	while ((n = read(fd, chunk, sizeof chunk)) > 0)
		buf_add(out, chunk, (size_t)n);
	close(fd);
}

int store_log_read(struct store *s, size_t n, struct store_log_entry **out, size_t *count,
                   struct error *e)
{
	struct buf text;
	buf_init(&text);
	char *older = xasprintf("%s/steplog.1", s->dir);
	char *current = xasprintf("%s/steplog", s->dir);
	read_file(older, &text);
	read_file(current, &text);
	free(older);
	free(current);
	*out = NULL;
	*count = 0;
	size_t alloc = 0;
	for (size_t i = 0; i < text.len;) {
		char *nl = memchr(text.data + i, '\n', text.len - i);
		size_t len = nl ? (size_t)(nl - (text.data + i)) : text.len - i;
		if (len) {
			ARRAY_RESERVE(*out, alloc, *count + 1, 64);
			if (parse_line(text.data + i, len, &(*out)[*count]) == 0)
				(*count)++;
		}
		i += len + 1;
	}
	/* Keep the last n. */
	if (*count > n) {
		size_t drop = *count - n;
		store_log_free_fields(*out, drop);
		memmove(*out, *out + drop, n * sizeof **out);
		*count = n;
	}
	buf_free(&text);
	(void)e;
	return 0;
}

void store_log_free(struct store_log_entry *entries, size_t n)
{
	store_log_free_fields(entries, n);
	free(entries);
}
