#include "trace/events.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cachet/array.h"

void event_log_init(struct event_log *l)
{
	memset(l, 0, sizeof *l);
	strmap_init(&l->seen);
	strmap_init(&l->touched);
	strmap_init(&l->read);
	buf_init(&l->key);
}

void trace_listing_free(struct trace_listing *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nviews; i++)
		free(l->views[i].entries);
	free(l->views);
	free(l);
}

void event_log_free(struct event_log *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->ev[i].path);
		trace_listing_free(l->ev[i].listing);
	}
	free(l->ev);
	strmap_free(&l->seen);
	strmap_free(&l->touched);
	strmap_free(&l->read);
	buf_free(&l->key);
	memset(l, 0, sizeof *l);
}

static void append(struct event_log *l, const struct trace_event *ev)
{
	ARRAY_RESERVE(l->ev, l->cap, l->n + 1, 256);
	struct trace_event *e = &l->ev[l->n++];
	*e = *ev;
	e->path = xstrdup(ev->path);
	e->listing = NULL; /* attached at the end of the run (dirviews.h) */
}

/* One field of the de-duplication key, in hex and ':'-terminated: a
 * printf per event was a tenth of the tracer's time per event. */
static void key_num(struct buf *b, unsigned long long v)
{
	buf_addhex(b, v);
	buf_addch(b, ':');
}

int event_log_add(struct event_log *l, const struct trace_event *ev)
{
	buf_reset(&l->key);
	key_num(&l->key, (unsigned)ev->kind);
	key_num(&l->key, ev->flags);
	key_num(&l->key, (unsigned)ev->err);
	if (ev->kind == TRACE_READ || ev->kind == TRACE_EXEC) {
		key_num(&l->key, (unsigned long long)ev->id.dev);
		key_num(&l->key, (unsigned long long)ev->id.ino);
		key_num(&l->key, (unsigned long long)ev->id.size);
		key_num(&l->key, (unsigned long long)ev->id.mtime_ns);
		key_num(&l->key, (unsigned long long)ev->id.ctime_ns);
		key_num(&l->key, ev->id.mode);
	}
	/* A stat and an access() of one path are two lookups: the stat's
	 * value is checked at the end, the access's is not. */
	key_num(&l->key, (unsigned)(ev->has_seen | ev->seen_unknown << 1));
	buf_addstr(&l->key, ev->path);
	if (strmap_get(&l->seen, l->key.data))
		return 0;
	strmap_put(&l->seen, l->key.data, (void *)1);
	if (ev->kind == TRACE_READ && !strmap_get(&l->read, ev->path))
		strmap_put(&l->read, ev->path, (void *)1);
	append(l, ev);
	return 1;
}

int event_log_was_touched(const struct event_log *l, const char *path)
{
	return strmap_get(&l->touched, path) != NULL;
}

int event_log_was_read(const struct event_log *l, const char *path)
{
	return strmap_get(&l->read, path) != NULL;
}

void event_log_touch(struct event_log *l, const struct trace_event *ev)
{
	l->touches++;
	strmap_put(&l->touched, ev->path, (void *)1);
	append(l, ev);
}

/* One TRACE_FINAL for path, unless it has one already; returns lstat's
 * result (st filled when 0). */
static int add_final(struct event_log *l, struct strmap *done, const char *path, struct stat *st)
{
	int rc = lstat(path, st);
	if (strmap_get(done, path))
		return rc;
	strmap_put(done, path, (void *)1);
	struct trace_event ev;
	memset(&ev, 0, sizeof ev);
	ev.kind = TRACE_FINAL;
	ev.path = (char *)path;
	if (rc == 0)
		file_id_from_stat(st, &ev.id);
	else
		ev.err = errno;
	append(l, &ev);
	return rc;
}

/* Every entry beneath dir, depth first, without following symlinks. */
static void add_finals_beneath(struct event_log *l, struct strmap *done, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return; /* replaced meanwhile: the recorder finds it changed */
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *path = xasprintf("%s/%s", dir, de->d_name);
		struct stat st;
		if (add_final(l, done, path, &st) == 0 && S_ISDIR(st.st_mode))
			add_finals_beneath(l, done, path);
		free(path);
	}
	closedir(d);
}

void event_log_add_finals(struct event_log *l)
{
	struct strmap done;
	strmap_init(&done);
	size_t n = l->n; /* the events of the run; finals are appended after */
	for (size_t i = 0; i < n; i++) {
		if (l->ev[i].kind != TRACE_TOUCH && l->ev[i].kind != TRACE_MOVED_IN)
			continue;
		/* append() may move l->ev: hold the path, which it does not move. */
		const char *path = l->ev[i].path;
		struct stat st;
		if (add_final(l, &done, path, &st) == 0 && S_ISDIR(st.st_mode) &&
		    l->ev[i].kind == TRACE_MOVED_IN)
			add_finals_beneath(l, &done, path);
	}
	strmap_free(&done);
}

struct trace_event *event_log_detach(struct event_log *l, size_t *n_out)
{
	struct trace_event *ev = l->ev;
	*n_out = l->n;
	l->ev = NULL;
	l->n = l->cap = 0;
	return ev;
}
