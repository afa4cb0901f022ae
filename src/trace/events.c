#include "trace/events.h"

#include <stdlib.h>
#include <string.h>

void event_log_init(struct event_log *l)
{
	memset(l, 0, sizeof *l);
	strmap_init(&l->seen);
	strmap_init(&l->touched);
	strmap_init(&l->read);
	buf_init(&l->key);
}

void event_log_free(struct event_log *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->ev[i].path);
	free(l->ev);
	strmap_free(&l->seen);
	strmap_free(&l->touched);
	strmap_free(&l->read);
	buf_free(&l->key);
	memset(l, 0, sizeof *l);
}

static void append(struct event_log *l, const struct trace_event *ev)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		l->ev = xrealloc(l->ev, l->cap * sizeof *l->ev);
	}
	struct trace_event *e = &l->ev[l->n++];
	*e = *ev;
	e->path = xstrdup(ev->path);
}

/* One field of the de-duplication key, in hex and ':'-terminated: a
 * printf per event was a tenth of the tracer's time per event. */
static void key_num(struct buf *b, unsigned long long v)
{
	char t[17];
	int n = 0;
	do {
		t[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	while (n)
		buf_addch(b, t[--n]);
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

struct trace_event *event_log_detach(struct event_log *l, size_t *n_out)
{
	struct trace_event *ev = l->ev;
	*n_out = l->n;
	l->ev = NULL;
	l->n = l->cap = 0;
	return ev;
}
