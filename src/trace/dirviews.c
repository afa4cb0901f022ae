#include "trace/dirviews.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "trace/dirents.h"

struct dir_pass {
	struct trace_listing *l; /* of its directory */
	char *path;
	struct buf entries;    /* type byte, name, NUL; kernel order */
	int done;              /* completed into a view, or abandoned */
	struct dir_pass *same; /* another pass awaiting the same position */
	struct dir_pass *all;
};

void dir_views_init(struct dir_views *v)
{
	memset(v, 0, sizeof *v);
	strmap_init(&v->dirs);
	strmap_init(&v->waiting);
}

void dir_views_free(struct dir_views *v)
{
	for (struct dir_pass *p = v->all, *next; p; p = next) {
		next = p->all;
		buf_free(&p->entries);
		free(p->path);
		free(p);
	}
	for (size_t i = 0; i < v->dirs.cap; i++)
		if (v->dirs.slots[i].key)
			trace_listing_free(v->dirs.slots[i].value);
	strmap_free(&v->dirs);
	strmap_free(&v->waiting);
	memset(v, 0, sizeof *v);
}

static struct trace_listing *listing_of(struct dir_views *v, const char *path)
{
	return strmap_get_or_new(&v->dirs, path, sizeof(struct trace_listing), NULL);
}

void dir_views_entry(struct dir_views *v, const char *path, const struct stat *st)
{
	struct trace_listing *l = listing_of(v, path);
	if (!l->has_first_id && st) {
		file_id_from_stat(st, &l->first_id);
		l->has_first_id = 1;
	}
}

static char *wait_key(uint64_t pos, const char *path)
{
	return xasprintf("%llx:%s", (unsigned long long)pos, path);
}

/* Takes a pass awaiting pos out of the waiting set, or NULL. */
static struct dir_pass *take_waiting(struct dir_views *v, uint64_t pos, const char *path)
{
	char *k = wait_key(pos, path);
	struct dir_pass *p = strmap_get(&v->waiting, k);
	if (p)
		strmap_put(&v->waiting, k, p->same);
	free(k);
	if (p)
		p->same = NULL;
	return p;
}

static void put_waiting(struct dir_views *v, struct dir_pass *p, uint64_t pos)
{
	char *k = wait_key(pos, p->path);
	p->same = strmap_put(&v->waiting, k, p);
	free(k);
}

/* A pass that will never complete: what it saw is not known as a whole. */
static void abandon(struct dir_views *v, struct dir_pass *p)
{
	p->l->partial = 1;
	p->done = 1;
	v->bytes -= p->entries.len;
	buf_free(&p->entries);
}

static void add_entry(void *ctx, const struct dirent_rec *r)
{
	struct dir_pass *p = ctx;
	if ((r->name_len == 1 && r->name[0] == '.') ||
	    (r->name_len == 2 && r->name[0] == '.' && r->name[1] == '.'))
		return;
	buf_addch(&p->entries, (char)r->type);
	buf_add(&p->entries, r->name, r->name_len + 1);
}

static void last_off(void *ctx, const struct dirent_rec *r)
{
	*(uint64_t *)ctx = r->off;
}

struct sorted {
	const char *name;
	unsigned char type;
};

static int cmp_sorted(const void *a, const void *b)
{
	return strcmp(((const struct sorted *)a)->name, ((const struct sorted *)b)->name);
}

/* The pass reached the end: its entries, sorted, are one view. */
static void complete(struct dir_views *v, struct dir_pass *p)
{
	struct trace_listing *l = p->l;
	size_t n = 0;
	for (size_t i = 0; i < p->entries.len; i += 1 + strlen(p->entries.data + i + 1) + 1)
		n++;
	struct sorted *s = xmalloc((n ? n : 1) * sizeof *s);
	size_t k = 0;
	for (size_t i = 0; i < p->entries.len; i += 1 + strlen(p->entries.data + i + 1) + 1) {
		s[k].type = (unsigned char)p->entries.data[i];
		s[k].name = p->entries.data + i + 1;
		k++;
	}
	qsort(s, n, sizeof *s, cmp_sorted);
	struct buf view;
	buf_init(&view);
	buf_grow(&view, p->entries.len);
	for (size_t i = 0; i < n; i++) {
		buf_addch(&view, (char)s[i].type);
		buf_add(&view, s[i].name, strlen(s[i].name) + 1);
	}
	free(s);
	v->bytes -= p->entries.len;
	buf_free(&p->entries);
	p->done = 1;
	for (size_t i = 0; i < l->nviews; i++)
		if (l->views[i].len == view.len &&
		    !memcmp(l->views[i].entries, view.data, view.len)) {
			buf_free(&view);
			return;
		}
	if (l->nviews == DIR_VIEWS_MAX_VIEWS) {
		l->partial = 1;
		buf_free(&view);
		return;
	}
	l->views = xrealloc(l->views, (l->nviews + 1) * sizeof *l->views);
	l->views[l->nviews].len = view.len;
	l->views[l->nviews].entries = buf_detach(&view, NULL);
	v->bytes += l->views[l->nviews].len;
	l->nviews++;
}

void dir_views_exit(struct dir_views *v, const char *path, int pos_known, uint64_t pos,
                    const void *buf, size_t len, int is64)
{
	struct trace_listing *l = listing_of(v, path);
	/* A call at a position no pass waits for (a seek, a descriptor
	 * inherited in the middle of a pass we did not see begin) sees a part
	 * of the directory only. */
	struct dir_pass *p = pos_known ? take_waiting(v, pos, path) : NULL;
	if (!p && pos_known && pos == 0) {
		p = xcalloc(1, sizeof *p);
		p->l = l;
		p->path = xstrdup(path);
		buf_init(&p->entries);
		p->all = v->all;
		v->all = p;
	}
	if (!p) {
		l->partial = 1;
		return;
	}
	if (len == 0) {
		complete(v, p);
		return;
	}
	uint64_t next = 0;
	size_t before = p->entries.len;
	if (dirents_walk(buf, len, is64, add_entry, p) < 0 ||
	    dirents_walk(buf, len, is64, last_off, &next) < 0) {
		abandon(v, p);
		return;
	}
	v->bytes += p->entries.len - before;
	if (v->bytes > DIR_VIEWS_MAX_BYTES) {
		abandon(v, p);
		return;
	}
	put_waiting(v, p, next);
}

void dir_views_finish(struct dir_views *v)
{
	for (struct dir_pass *p = v->all; p; p = p->all)
		if (!p->done)
			abandon(v, p);
}

struct trace_listing *dir_views_take(struct dir_views *v, const char *path)
{
	struct trace_listing *l = strmap_get(&v->dirs, path);
	if (l)
		strmap_put(&v->dirs, path, NULL);
	return l;
}
