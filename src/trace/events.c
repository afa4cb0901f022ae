#include "trace/events.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cachet/array.h"
#include "cachet/buf.h"

void event_log_init(struct event_log *l)
{
	memset(l, 0, sizeof *l);
	strmap_init(&l->touched);
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
	hash_index_free(&l->seen);
	hash_index_free(&l->read);
	strmap_free(&l->touched);
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

/* What makes two events of event_log_add the same observation: kind,
 * flags, errno, path, whether a value was seen (or an unknown one) and,
 * for READ and EXEC, the fingerprint of the file. Not the value seen
 * itself: the first lookup's is kept, and src/key checks it holds. */
static unsigned seen_bits(const struct trace_event *ev)
{
	return (unsigned)ev->has_seen | (unsigned)ev->seen_unknown << 1;
}

static int has_id(const struct trace_event *ev)
{
	return ev->kind == TRACE_READ || ev->kind == TRACE_EXEC;
}

static uint64_t observation_hash(const struct trace_event *ev, uint64_t path_hash)
{
	uint64_t h = hash_mix(path_hash, (uint64_t)ev->kind << 32 | ev->flags);
	h = hash_mix(h, (uint64_t)(unsigned)ev->err << 32 | seen_bits(ev));
	if (has_id(ev)) {
		h = hash_mix(h, ev->id.dev);
		h = hash_mix(h, ev->id.ino);
		h = hash_mix(h, ev->id.size);
		h = hash_mix(h, (uint64_t)ev->id.mtime_ns);
		h = hash_mix(h, (uint64_t)ev->id.ctime_ns);
		h = hash_mix(h, ev->id.mode);
	}
	return h;
}

/* The two events, in the form hash_index_find compares them: an event of
 * the log by its index, and the one looked for. */
struct event_probe {
	const struct event_log *log;
	const struct trace_event *ev;
};

static int same_observation(const void *ctx, size_t index)
{
	const struct event_probe *p = ctx;
	const struct trace_event *a = &p->log->ev[index], *b = p->ev;
	if (a->kind != b->kind || a->flags != b->flags || a->err != b->err ||
	    seen_bits(a) != seen_bits(b))
		return 0;
	if (has_id(a) && (a->id.dev != b->id.dev || a->id.ino != b->id.ino ||
	                  a->id.size != b->id.size || a->id.mtime_ns != b->id.mtime_ns ||
	                  a->id.ctime_ns != b->id.ctime_ns || a->id.mode != b->id.mode))
		return 0;
	return strcmp(a->path, b->path) == 0;
}

static int same_path(const void *ctx, size_t index)
{
	const struct event_probe *p = ctx;
	return strcmp(p->log->ev[index].path, p->ev->path) == 0;
}

int event_log_add(struct event_log *l, const struct trace_event *ev)
{
	struct event_probe probe = {l, ev};
	uint64_t path_hash = strmap_hash(ev->path);
	uint64_t hash = observation_hash(ev, path_hash);
	struct hash_index_slot *seen = hash_index_slot(&l->seen, hash, same_observation, &probe);
	if (seen->index != HASH_INDEX_EMPTY)
		return 0;
	hash_index_fill(&l->seen, seen, hash, l->n);
	if (ev->kind == TRACE_READ) {
		struct hash_index_slot *read =
		    hash_index_slot(&l->read, path_hash, same_path, &probe);
		if (read->index == HASH_INDEX_EMPTY)
			hash_index_fill(&l->read, read, path_hash, l->n);
	}
	append(l, ev);
	return 1;
}

int event_log_was_touched(const struct event_log *l, const char *path)
{
	return strmap_get(&l->touched, path) != NULL;
}

int event_log_was_read(const struct event_log *l, const char *path)
{
	struct trace_event ev = {.path = (char *)path};
	struct event_probe probe = {l, &ev};
	struct hash_index_slot *slot =
	    hash_index_find(&l->read, strmap_hash(path), same_path, &probe);
	return slot && slot->index != HASH_INDEX_EMPTY;
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
	/* The sets hold indexes into the events that leave. */
	hash_index_free(&l->seen);
	hash_index_free(&l->read);
	memset(&l->seen, 0, sizeof l->seen);
	memset(&l->read, 0, sizeof l->read);
	l->ev = NULL;
	l->n = l->cap = 0;
	return ev;
}
