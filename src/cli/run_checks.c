#include "cli/run_checks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cachet/compare.h"
#include "cachet/elfsyms.h"
#include "cachet/spawn.h"
#include "cachet/strmap.h"

int verify_chosen(int forced, double rate)
{
	if (forced)
		return 1;
	if (rate <= 0)
		return 0;
	uint32_t x;
	if (getrandom(&x, sizeof x, GRND_NONBLOCK) != sizeof x)
		x = (uint32_t)getpid() ^ (uint32_t)time(NULL);
	return (double)x / 4294967296.0 < rate;
}

static const struct output *find_output(const struct result *r, const char *path)
{
	for (size_t i = 0; i < r->noutputs; i++)
		if (!strcmp(r->outputs[i].path, path))
			return &r->outputs[i];
	return NULL;
}

/* How the cached content and the file now at path differ, in one line. */
static char *content_difference(struct store *s, const struct output *cached, const char *path)
{
	void *old = NULL;
	size_t oldlen = 0;
	struct error e = {0};
	if (store_blob_read(s, &cached->blob, &old, &oldlen, &e) < 0)
		return xasprintf("%s: content differs (cached copy unreadable: %s)", path, e.msg);
	FILE *f = fopen(path, "rbe");
	struct buf now;
	buf_init(&now);
	if (f) {
		char chunk[65536];
		size_t n;
		while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
			buf_add(&now, chunk, n);
		fclose(f);
	}
	struct compare_report rep;
	struct compare_options opt = {.label_a = "cached", .label_b = "rerun"};
	compare_buffers(old, oldlen, now.data, now.len, path, &opt, &rep);
	char *line = xasprintf("%s: %s", path, rep.summary ? rep.summary : "content differs");
	compare_report_free(&rep);
	buf_free(&now);
	free(old);
	return line;
}

int verify_compare(struct store *s, const struct result *cached, const struct result *fresh,
                   const struct buf *fresh_stdout, int fresh_exit, char **summary)
{
	*summary = NULL;
	for (size_t i = 0; i < cached->noutputs && !*summary; i++) {
		const struct output *a = &cached->outputs[i];
		if (a->kind == OUT_XATTR || a->kind == OUT_OWNER)
			continue; /* about an output compared on its own */
		const struct output *b = find_output(fresh, a->path);
		if (!b)
			*summary =
			    xasprintf("%s: output of the cached run, not of the rerun", a->path);
		else if (a->kind != b->kind)
			*summary = xasprintf("%s: another kind of output in the rerun", a->path);
		else if (a->kind == OUT_FILE && !digest_equal(&a->blob.digest, &b->blob.digest))
			*summary = content_difference(s, a, a->path);
		else if (a->kind == OUT_FILE && (a->mode & 0111) != (b->mode & 0111))
			*summary = xasprintf("%s: executable bit differs", a->path);
		else if (a->kind == OUT_SYMLINK && strcmp(a->target, b->target))
			*summary =
			    xasprintf("%s: symlink target %s → %s", a->path, a->target, b->target);
	}
	for (size_t i = 0; i < fresh->noutputs && !*summary; i++)
		if (!find_output(cached, fresh->outputs[i].path))
			*summary = xasprintf("%s: output of the rerun, not of the cached run",
			                     fresh->outputs[i].path);
	if (!*summary) {
		struct digest d;
		digest_bytes(fresh_stdout->data, fresh_stdout->len, &d);
		if (!digest_equal(&d, &cached->out.digest))
			*summary = xstrdup("stdout differs");
		else if (fresh_exit != cached->exit_code)
			*summary = xasprintf("exit status %d → %d", cached->exit_code, fresh_exit);
	}
	return *summary == NULL;
}

int run_check_command(const char *cmd)
{
	char *argv[] = {"sh", "-c", (char *)cmd, NULL};
	return spawn_wait("/bin/sh", argv, NULL, -1, -1, NULL);
}

int check_required_symbols(const char *file, const struct result *result, char **missing)
{
	FILE *f = fopen(file, "re");
	if (!f) {
		*missing = xasprintf("%s: %s", file, strerror(errno));
		return -1;
	}
	struct strmap defined;
	strmap_init(&defined);
	for (size_t i = 0; i < result->noutputs; i++) {
		if (result->outputs[i].kind != OUT_FILE)
			continue;
		struct error e = {0};
		elf_defined_symbols(result->outputs[i].path, &defined, &e);
	}
	struct buf out;
	buf_init(&out);
	char *line = NULL;
	size_t cap = 0;
	size_t nmissing = 0;
	while (getline(&line, &cap, f) >= 0) {
		char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		p[strcspn(p, " \t\r\n")] = '\0';
		if (!*p || *p == '#')
			continue;
		if (!strmap_get(&defined, p)) {
			buf_addf(&out, "%s%s", nmissing ? ", " : "", p);
			nmissing++;
		}
	}
	free(line);
	fclose(f);
	strmap_free(&defined);
	if (!nmissing) {
		buf_free(&out);
		return 0;
	}
	*missing = buf_detach(&out, NULL);
	return 1;
}
