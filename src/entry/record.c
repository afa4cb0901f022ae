#include "cachet/record.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cachet/array.h"
#include "cachet/dirfp.h"
#include "cachet/env.h"
#include "cachet/find.h"
#include "cachet/output_words.h"
#include "cachet/path.h"
#include "cachet/step.h"
#include "cachet/strmap.h"

static const char MODIFIED[] = "input modified during run";

/* The first change the step made to a path, and what it did to its times. */
struct touch {
	size_t index; /* event index of the first TRACE_TOUCH */
	const struct trace_event *ev;
	int set_mtime;
	int moved_in; /* a rename put something here (TRACE_MOVED_IN) */
};

struct recorder {
	const struct trace_event *events;
	size_t n;
	const char *const *ignore_roots;
	const struct step_bases *scan;
	const struct record_env *env;
	char *const *scan_env;   /* env's variables, when it scans */
	struct strmap touched;   /* path -> struct touch */
	struct strmap dir_names; /* directory -> struct buf of NUL-separated names */
	struct strmap outputs;   /* path -> (void *)1, outputs already added */
	struct strmap finals;    /* path -> its TRACE_FINAL: the state the step left */
	struct strmap physical;  /* directory -> its real path (malloc'd), for outputs */
	/* The touched paths by their physical path, and their last components:
	 * a path the step changed is often looked up under another spelling
	 * (touch_of). */
	struct strmap touched_real;
	struct strmap touched_names;
	struct strmap inodes; /* "dev:ino" -> struct link_group, files with several names */
	/* path -> struct observe_memo: the lookups that found an observation
	 * still holding, from which its value is then computed (one stat
	 * where there were two, and the value is that of the state checked). */
	struct strmap lookups;
	/* the paths of the lookups that dirfp's notes made (notes_lstat) */
	char **ancestors;
	size_t nancestors, alloc_ancestors;
	/* "dev:ino" of the files whose names the step itself changed: a hard
	 * link made from one, a name of one removed or replaced (own_links). */
	struct strmap relinked;
	int relinked_ready;
	/* path -> (void *)1: read or executed by the step */
	struct strmap read_paths;
	/* directory -> (void *)1: the step listed it or looked a name up
	 * inside it (at any depth) */
	struct strmap looked_inside;
	/* the probes made of a path before the step's first change to it, in
	 * event order (add_prior_states) */
	const struct trace_event **prior;
	size_t nprior;
	/* the step's cwd (cachet runs in it), or NULL */
	char *cwd;
	/* the mtimes the step set on purpose on its outputs (cp -p, touch -r) */
	int64_t *set_mtimes;
	size_t nset_mtimes;
	size_t walked; /* entries met by the walk of a moved-in directory */
	struct record *rec;
	struct store *store;
	struct digest_cache *dc;
	/* per observation added (in pathset_add order) */
	const struct trace_event **obs_event;
	/* forced value, len 0 = none: a read's pre-state digest, a listing's
	 * value from the views the step saw */
	struct buf *forced;
	struct buf *detail; /* a forced listing's entries, for explain */
	size_t nobs, alloc_obs;
};

static int ignored(const struct recorder *rc, const char *path)
{
	for (const char *const *r = rc->ignore_roots; r && *r; r++)
		if (path_is_under(path, *r))
			return 1;
	return 0;
}

/* path with its directory as the kernel resolved it (realpath), or path
 * itself where the directory is gone; malloc'd. The tracer records the
 * text the step wrote ("link/f" where link -> real): a restore walks
 * without following symlinks, so an output is kept where it really is. */
static char *physical_path(struct recorder *rc, const char *path)
{
	char *dir = path_dirname(path);
	char *real = strmap_get(&rc->physical, dir);
	if (!real) {
		real = realpath(dir, NULL);
		if (!real)
			real = xstrdup(dir);
		strmap_put(&rc->physical, dir, real);
	}
	free(dir);
	const char *name = path_basename(path);
	return strcmp(real, "/") ? xasprintf("%s/%s", real, name) : xasprintf("/%s", name);
}

static void collect_touches(struct recorder *rc)
{
	for (size_t i = 0; i < rc->n; i++) {
		const struct trace_event *ev = &rc->events[i];
		if (ev->kind != TRACE_TOUCH && ev->kind != TRACE_SET_MTIME &&
		    ev->kind != TRACE_MOVED_IN && ev->kind != TRACE_FINAL)
			continue;
		if (ignored(rc, ev->path))
			continue;
		if (ev->kind == TRACE_FINAL) {
			strmap_put(&rc->finals, ev->path, (void *)ev);
			continue;
		}
		if (ev->kind == TRACE_MOVED_IN) {
			/* The rename's TOUCH of the same path came first. */
			struct touch *mt = strmap_get(&rc->touched, ev->path);
			if (mt)
				mt->moved_in = 1;
			continue;
		}
		int added;
		struct touch *t = strmap_get_or_new(&rc->touched, ev->path, sizeof *t, &added);
		if (added) {
			t->index = i;
			t->ev = ev;
			/* Remember the name under its directory, for listings. */
			char *dir = path_dirname(ev->path);
			struct buf *names =
			    strmap_get_or_new(&rc->dir_names, dir, sizeof *names, &added);
			if (added)
				buf_init(names);
			buf_add(names, path_basename(ev->path),
			        strlen(path_basename(ev->path)) + 1);
			free(dir);
		}
		if (ev->kind == TRACE_SET_MTIME)
			t->set_mtime = 1;
	}
	for (size_t i = 0; i < rc->touched.cap; i++) {
		if (!rc->touched.slots[i].key)
			continue;
		char *real = physical_path(rc, rc->touched.slots[i].key);
		strmap_put(&rc->touched_real, real, rc->touched.slots[i].value);
		strmap_put(&rc->touched_names, path_basename(real), (void *)1);
		free(real);
	}
}

/* The step's first change to the file at path, under whichever name it
 * made it: after a chdir the step names one file with `..` (`cd src && gcc
 * -o ../a.o`), and the gcc driver then looks it up by the absolute path it
 * computed itself. Names are never equated as text ("d/.." is not "." when
 * d is a symlink): a path whose directory resolves to the same real one is
 * the same file. Only a last component that some touched path has costs a
 * realpath. */
static struct touch *touch_of(struct recorder *rc, const char *path)
{
	struct touch *t = strmap_get(&rc->touched, path);
	if (t || !strmap_get(&rc->touched_names, path_basename(path)))
		return t;
	char *real = physical_path(rc, path);
	t = strmap_get(&rc->touched_real, real);
	free(real);
	return t;
}

/* The names the step created or removed in dir, as a NULL-terminated array
 * pointing into the recorder (malloc'd), or NULL. */
static const char **excluded_names(struct recorder *rc, const char *dir)
{
	struct buf *names = strmap_get(&rc->dir_names, dir);
	if (!names || !names->len)
		return NULL;
	size_t count = 0;
	for (size_t i = 0; i < names->len; i++)
		count += names->data[i] == '\0';
	const char **out = xmalloc((count + 1) * sizeof *out);
	size_t k = 0;
	for (size_t i = 0; i < names->len; i += strlen(names->data + i) + 1)
		out[k++] = names->data + i;
	out[k] = NULL;
	return out;
}

/* The value of one view (trace.h: sorted entries, type byte then name). */
static void view_value(const struct trace_dir_view *v, const char *const *excluded,
                       struct buf *value, struct buf *detail)
{
	size_t n = 0;
	for (size_t i = 0; i < v->len; i += 1 + strlen(v->entries + i + 1) + 1)
		n++;
	struct listing_entry *e = xmalloc((n ? n : 1) * sizeof *e);
	size_t k = 0;
	for (size_t i = 0; i < v->len; i += 1 + strlen(v->entries + i + 1) + 1) {
		e[k].type = (unsigned char)v->entries[i];
		e[k].name = v->entries + i + 1;
		k++;
	}
	observe_listing_value(e, n, excluded, value, detail);
	free(e);
}

/* A listing is keyed on the entries the step's getdents calls returned
 * (trace.h, struct trace_listing), not on what the directory holds once the
 * step has ended: under make -j, siblings keep adding files to shared
 * directories, and a step that listed one before a sibling's file appeared
 * computed its outputs without it. Each complete pass over the directory is
 * one view; views that differ (once the step's own creations and removals
 * are left out) mean the directory changed under the step, which is then
 * not stored.
 *
 * A partial read (the step stopped before the end, seeked, or outgrew the
 * tracer's bound) saw an unknown part of the directory: the names it got do
 * not say which entries it would have seen next, nor whether one added in
 * the range it read came before or after its read. It is keyed as before,
 * on the listing after the run, which holds only if the directory did not
 * change at all from the step's first getdents of it to the end of the run
 * (its fingerprint: any entry added, removed or renamed moves its mtime and
 * ctime). A step that reads part of a directory and then writes into it is
 * not stored; such steps are rare (a full pass is what readdir loops,
 * ls, find, Python and make's own scans do). Returns 1 when value holds the
 * value (and detail its entries), 0 to take the value after the run, -1 when
 * the run is not storable. */
static int listing_seen(const struct trace_event *ev, const char *const *excluded,
                        struct buf *value, struct buf *detail)
{
	const struct trace_listing *l = ev->listing;
	if (!l || (!l->nviews && !l->partial))
		return 0; /* no entry was returned to the step */
	int rc = 1;
	if (l->partial) {
		struct stat st;
		struct file_id now;
		if (!l->has_first_id || stat(ev->path, &st) < 0)
			rc = -1;
		if (rc == 1) {
			file_id_from_stat(&st, &now);
			if (!file_id_equal(&now, &l->first_id))
				rc = -1;
		}
		if (rc == 1)
			observe_value_detail(OBS_LIST, 0, ev->path, excluded, NULL, value, detail);
	} else {
		view_value(&l->views[0], excluded, value, detail);
	}
	/* Every complete view must say the same. */
	struct buf other;
	buf_init(&other);
	for (size_t i = l->partial ? 0 : 1; i < l->nviews && rc == 1; i++) {
		buf_reset(&other);
		view_value(&l->views[i], excluded, &other, NULL);
		if (other.len != value->len || memcmp(other.data, value->data, value->len))
			rc = -1;
	}
	buf_free(&other);
	return rc;
}

/* The recorder's slot for the observation just added to the path set. */
static void add_obs_slot(struct recorder *rc, const struct trace_event *ev)
{
	if (rc->nobs == rc->alloc_obs) {
		rc->alloc_obs = rc->alloc_obs ? rc->alloc_obs * 2 : 256;
		rc->obs_event = xrealloc(rc->obs_event, rc->alloc_obs * sizeof *rc->obs_event);
		rc->forced = xrealloc(rc->forced, rc->alloc_obs * sizeof *rc->forced);
		rc->detail = xrealloc(rc->detail, rc->alloc_obs * sizeof *rc->detail);
	}
	rc->obs_event[rc->nobs] = ev;
	buf_init(&rc->forced[rc->nobs]);
	buf_init(&rc->detail[rc->nobs]);
	rc->nobs++;
}

/* Adds observation (kind, flags, path), made for event ev: ev's outcome is
 * what compute_values checks still holds at the end of the run. */
static void add_obs_at(struct recorder *rc, enum obs_kind kind, unsigned flags, const char *path,
                       const struct trace_event *ev, const struct digest *forced)
{
	const char **excluded = kind == OBS_LIST ? excluded_names(rc, path) : NULL;
	pathset_add(&rc->rec->ps, kind, flags, path, excluded);
	add_obs_slot(rc, ev);
	size_t k = rc->nobs - 1;
	if (forced) {
		buf_addch(&rc->forced[k], 'F');
		buf_add(&rc->forced[k], forced->b, DIGEST_LEN);
	}
	if (kind == OBS_LIST && ev->kind == TRACE_LIST && !rc->rec->not_storable) {
		int seen = listing_seen(ev, excluded, &rc->forced[k], &rc->detail[k]);
		if (seen < 0)
			rc->rec->not_storable = MODIFIED;
		if (seen <= 0) {
			buf_reset(&rc->forced[k]);
			buf_reset(&rc->detail[k]);
		}
	}
	free(excluded);
}

static unsigned obs_flags_of(const struct trace_event *ev)
{
	return (ev->flags & TRACE_F_NOFOLLOW) ? OBS_F_NOFOLLOW : 0;
}

static void add_obs(struct recorder *rc, enum obs_kind kind, const struct trace_event *ev,
                    const struct digest *forced)
{
	add_obs_at(rc, kind, obs_flags_of(ev), ev->path, ev, forced);
}

static enum obs_kind obs_kind_of(enum trace_event_kind k)
{
	switch (k) {
	case TRACE_READ:
		return OBS_READ;
	case TRACE_EXEC:
		return OBS_EXEC;
	case TRACE_LIST:
		return OBS_LIST;
	case TRACE_READLINK:
		return OBS_READLINK;
	case TRACE_XATTR:
		return OBS_XATTR;
	case TRACE_FACT:
		return OBS_FACT;
	default:
		return OBS_STAT;
	}
}

/* The source D/N.py of a bytecode file D/__pycache__/N.TAG.pyc (or
 * N.TAG.opt-K.pyc), malloc'd, or NULL when path is none. Python loads such a
 * file when its header matches the source's mtime and size, without reading
 * the source: a same-size edit with the mtime restored would load stale
 * code. The source is therefore keyed by content as if read (and, stat'ed
 * and not read, by its mtime too: Python compared it with the header). */
static char *pyc_source(const char *path)
{
	const char *base = path_basename(path);
	size_t n = strlen(base);
	if (n < 5 || strcmp(base + n - 4, ".pyc") != 0)
		return NULL;
	char *dir = path_dirname(path);
	if (strcmp(path_basename(dir), "__pycache__") != 0) {
		free(dir);
		return NULL;
	}
	char *name = xstrndup(base, n - 4);
	char *dot = strrchr(name, '.');
	if (dot && !strncmp(dot, ".opt-", 5)) {
		*dot = '\0';
		dot = strrchr(name, '.');
	}
	char *src = NULL;
	if (dot && dot != name) {
		*dot = '\0';
		char *top = path_dirname(dir);
		char *py = xasprintf("%s.py", name);
		src = path_join(top, py);
		free(py);
		free(top);
	}
	free(name);
	free(dir);
	return src;
}

/* Cuts path (a scratch copy) to its dirname in place, as path_dirname
 * names it ("." without a slash, "/" for a child of the root); 0 when
 * path is its own dirname ("/" or "."), and is left as it is. The
 * ancestors of each of a miss's thousand events were a dup and a free
 * each. */
static int cut_to_dirname(char *path)
{
	char *slash = strrchr(path, '/');
	if (!slash) {
		if (!strcmp(path, "."))
			return 0;
		strcpy(path, "."); /* the caller leaves room for it */
		return 1;
	}
	if (slash == path) {
		if (!path[1])
			return 0;
		path[1] = '\0';
		return 1;
	}
	*slash = '\0';
	return 1;
}

/* Marks dir and its ancestors as looked inside, up to one already marked;
 * dir is a scratch copy, cut as it goes. */
static void mark_looked_inside(struct recorder *rc, char *dir)
{
	while (!strmap_get(&rc->looked_inside, dir)) {
		strmap_put(&rc->looked_inside, dir, (void *)1);
		if (!cut_to_dirname(dir))
			break;
	}
}

/* What the observations of a probe depend on: which paths the step read
 * or ran, where it looked names up, and the mtimes it set on purpose. */
static void collect_uses(struct recorder *rc)
{
	struct buf scratch;
	buf_init(&scratch);
	for (size_t i = 0; i < rc->n; i++) {
		const struct trace_event *ev = &rc->events[i];
		if (ev->kind == TRACE_FINAL || ev->kind == TRACE_MOVED_IN || ev->kind == TRACE_FACT)
			continue;
		if (ev->kind == TRACE_READ || ev->kind == TRACE_EXEC)
			strmap_put(&rc->read_paths, ev->path, (void *)1);
		buf_reset(&scratch);
		buf_addstr(&scratch, ev->path);
		buf_addch(&scratch, '\0'); /* room for "." if the path is "" */
		if (ev->kind == TRACE_LIST)
			mark_looked_inside(rc, scratch.data);
		else if (cut_to_dirname(scratch.data))
			mark_looked_inside(rc, scratch.data);
	}
	buf_free(&scratch);
	for (size_t i = 0; i < rc->touched.cap; i++) {
		const struct touch *t = rc->touched.slots[i].value;
		if (!rc->touched.slots[i].key || !t->set_mtime)
			continue;
		const struct trace_event *fin = strmap_get(&rc->finals, t->ev->path);
		if (!fin || fin->err)
			continue;
		rc->set_mtimes =
		    xrealloc(rc->set_mtimes, (rc->nset_mtimes + 1) * sizeof *rc->set_mtimes);
		rc->set_mtimes[rc->nset_mtimes++] = fin->id.mtime_ns;
	}
}

static int is_set_mtime(const struct recorder *rc, int64_t mtime_ns)
{
	for (size_t i = 0; i < rc->nset_mtimes; i++)
		if (rc->set_mtimes[i] == mtime_ns)
			return 1;
	return 0;
}

/* The observations of a lookup of a path the step did not change. A file
 * that the step stat'ed but never read may have been judged by its mtime
 * (make, ninja, `[ a -nt b ]`, `cp -u`, rsync): its mtime is keyed. A
 * directory that it stat'ed but neither listed nor looked into can only
 * have told it its times (make's directory prerequisites): it is keyed by
 * its listing, which moves with every entry added, removed or renamed, as
 * its mtime does, but survives a checkout. Only beneath the step's cwd,
 * where a build's own directories are (every shell stats the cwd itself to
 * check $PWD, and would key it for nothing): the gcc driver stats the system library
 * directories of its search path (/usr/lib as "/lib/../lib") without
 * looking into them on a compile, and every package install would
 * otherwise change every compile's key. A file whose mtime
 * the step copied onto an output (cp -p, touch -r) is keyed by its mtime
 * too: a hit restores that mtime. */
static void add_unchanged(struct recorder *rc, const struct trace_event *ev)
{
	enum obs_kind kind = obs_kind_of(ev->kind);
	unsigned flags = obs_flags_of(ev);
	if (ev->kind == TRACE_PROBE && ev->err == 0 && ev->has_seen) {
		if (S_ISREG(ev->id.mode) && !strmap_get(&rc->read_paths, ev->path))
			flags |= OBS_F_MTIME;
		if (S_ISDIR(ev->id.mode) && rc->cwd && path_is_under(ev->path, rc->cwd) &&
		    strcmp(ev->path, rc->cwd) != 0 && !strmap_get(&rc->looked_inside, ev->path))
			add_obs_at(rc, OBS_LIST, 0, ev->path, ev, NULL);
	}
	add_obs_at(rc, kind, flags, ev->path, ev, NULL);
	if (ev->kind != TRACE_READ)
		return;
	if (rc->nset_mtimes && is_set_mtime(rc, ev->id.mtime_ns))
		add_obs_at(rc, OBS_STAT, flags | OBS_F_MTIME, ev->path, ev, NULL);
	char *src = pyc_source(ev->path);
	if (src && !touch_of(rc, src) && !ignored(rc, src))
		add_obs_at(rc, OBS_READ, 0, src, ev, NULL);
	free(src);
}

static void collect_observations(struct recorder *rc)
{
	for (size_t i = 0; i < rc->n; i++) {
		const struct trace_event *ev = &rc->events[i];
		if (ev->kind == TRACE_TOUCH || ev->kind == TRACE_SET_MTIME ||
		    ev->kind == TRACE_MOVED_IN || ev->kind == TRACE_FINAL)
			continue;
		if (ignored(rc, ev->path))
			continue;
		const struct touch *t = touch_of(rc, ev->path);
		if (!t) {
			add_unchanged(rc, ev);
			continue;
		}
		if (i > t->index)
			continue; /* after the step's own first change: its own write */
		if (ev->kind == TRACE_READ) {
			/* Read, then changed by the step (sed -i, ar r): an input by
			 * its content before the change. */
			if (t->ev->has_pre_digest)
				add_obs(rc, OBS_READ, ev, &t->ev->pre_digest);
			else if (!rc->rec->not_storable)
				rc->rec->not_storable = MODIFIED;
		} else if (ev->kind == TRACE_EXEC) {
			/* A program the step ran and then replaced: its earlier
			 * content is unknown, so the run cannot be a memo. */
			if (!rc->rec->not_storable)
				rc->rec->not_storable = MODIFIED;
		} else if (ev->kind == TRACE_PROBE || ev->kind == TRACE_READLINK) {
			/* The state before a path the run then creates or
			 * replaces: keyed once the outputs are known. */
			rc->prior = xrealloc(rc->prior, (rc->nprior + 1) * sizeof *rc->prior);
			rc->prior[rc->nprior++] = ev;
		}
	}
}

/* A stat's value (observe.h 'S'): type, permission bits and, for a
 * regular file, the size; rc is the result of the stat that filled st. */
static int same_stat_value(const struct file_id *seen, const struct stat *st, int rc)
{
	if (rc < 0)
		return 0;
	if ((seen->mode & S_IFMT) != (st->st_mode & S_IFMT) ||
	    (seen->mode & 07777) != (st->st_mode & 07777))
		return 0;
	return !S_ISREG(st->st_mode) || seen->size == (uint64_t)st->st_size;
}

static int same_target(const char *path, const struct digest *seen)
{
	char target[4096];
	ssize_t n = readlink(path, target, sizeof target);
	if (n < 0)
		return 0;
	struct digest d;
	digest_bytes(target, (size_t)n, &d);
	return memcmp(d.b, seen->b, DIGEST_LEN) == 0;
}

static struct observe_memo *lookups_of(struct recorder *rc, const char *path)
{
	return strmap_get_or_new(&rc->lookups, path, sizeof(struct observe_memo), NULL);
}

/* The notes' lstat of an ancestor of an absent path (dirfp.h), through
 * the lookups that check_holds makes: the include directories whose
 * entries gcc's search probes are themselves observed (a readlink of
 * each prefix), and one lstat of such a path, taken after the step
 * ended, is both the check that it still holds and the ancestor's
 * answer (each only needs a lookup made after the step ended and before
 * the value is keyed; the value keyed is then the one checked). */
static int notes_lstat(void *ctx, const char *path, struct stat *st)
{
	struct recorder *rc = ctx;
	int added;
	struct observe_memo *m =
	    strmap_get_or_new(&rc->lookups, path, sizeof(struct observe_memo), &added);
	if (added) {
		/* A memo keeps the path it holds, which must outlive it: the
		 * notes' ancestors are their own strings, not events'. */
		ARRAY_RESERVE(rc->ancestors, rc->alloc_ancestors, rc->nancestors + 1, 16);
		rc->ancestors[rc->nancestors] = xstrdup(path);
		path = rc->ancestors[rc->nancestors++];
	}
	return observe_stat(m, m->path ? m->path : path, 1, st);
}

/* Answers m, the lookup of path, from its directory's when a lookup of
 * this recorder found that missing (lstat: ENOENT or ENOTDIR): the kernel
 * walks path through the directory's components as the directory's lookup
 * did, and fails at the same one with the same error (a last component
 * that lstat cannot find, a walk cannot enter or follow). Every lookup
 * here is made after the step ended, so the answer is one of that time,
 * as its own lstat's would be. gcc probes each header in each include
 * directory, and "bits/x.h" or "sys/x.h" in every one without such a
 * subdirectory: the ancestors that dirfp's notes look up for the first
 * probe (notes_lstat) answer the others, a third of a Lua compile's
 * lookups. */
static void answer_below_missing(struct recorder *rc, struct observe_memo *m, const char *path)
{
	/* A path too long for the kernel fails its own way (ENAMETOOLONG). */
	if (m->have_lstat || strlen(path) >= PATH_MAX)
		return;
	char dir[PATH_MAX];
	strcpy(dir, path);
	if (!cut_to_dirname(dir))
		return;
	const struct observe_memo *d = strmap_get(&rc->lookups, dir);
	if (!d || !d->path || strcmp(d->path, dir) != 0 || !d->have_lstat ||
	    (d->lstat_err != ENOENT && d->lstat_err != ENOTDIR))
		return;
	m->path = path;
	m->have_lstat = 1;
	m->lstat_err = d->lstat_err;
	m->have_stat = m->have_digest = 0;
}

/* Does what the step saw still hold at the end of the run? A file read has
 * the same fingerprint; a path found present (or absent) still is. */
static int still_holds(struct recorder *rc, const struct trace_event *ev)
{
	/* Only a file read or run, a probe and a readlink are lookups of a
	 * path: a fact's name ("ldcache:libc.so.6") is none, and was looked up
	 * in the cwd for nothing (with a memo of its own, which then made
	 * every ldcache fact stat the loader's cache again). */
	if (ev->kind != TRACE_READ && ev->kind != TRACE_EXEC && ev->kind != TRACE_PROBE &&
	    ev->kind != TRACE_READLINK)
		return 1;
	struct stat st;
	int nofollow = ev->flags & TRACE_F_NOFOLLOW;
	struct observe_memo *m = lookups_of(rc, ev->path);
	answer_below_missing(rc, m, ev->path);
	int r = observe_stat(m, ev->path, nofollow, &st);
	int absent = r < 0 && (errno == ENOENT || errno == ENOTDIR);
	/* Found absent as the step found it: the value keyed is this lookup's
	 * (compute_values takes it from the memo), so the memo's directory
	 * fingerprint is taken now, just after it, as dirfp_collect did after
	 * a lookup of its own, which then need not be made again. */
	if (rc->rec->dirs && r < 0 && errno == ENOENT && ev->err == ENOENT &&
	    (ev->kind == TRACE_PROBE || ev->kind == TRACE_READLINK))
		dirfp_note_absent(rc->rec->dirs, ev->path);
	/* A directory found: the include directories gcc stats, the prefixes
	 * its realpath reads; their fingerprints are the memo's too. */
	else if (rc->rec->dirs && r == 0 && S_ISDIR(st.st_mode))
		dirfp_note_directory(rc->rec->dirs, ev->path);
	switch (ev->kind) {
	case TRACE_READ:
	case TRACE_EXEC: {
		if (r < 0)
			return 0;
		struct file_id now;
		file_id_from_stat(&st, &now);
		return file_id_equal(&now, &ev->id);
	}
	case TRACE_PROBE:
		if (ev->seen_unknown)
			return 0;
		if (ev->err == 0 && ev->has_seen && S_ISREG(ev->id.mode) && r == 0 &&
		    !strmap_get(&rc->read_paths, ev->path) &&
		    ev->id.mtime_ns != (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec)
			return 0; /* its mtime is keyed (add_unchanged) */
		if (ev->err == 0)
			return !absent && (!ev->has_seen || same_stat_value(&ev->id, &st, r));
		if (ev->err == ENOENT || ev->err == ENOTDIR)
			return absent;
		return 1;
	case TRACE_READLINK:
		/* The lstat above is readlink's lookup: EINVAL is "not a
		 * symlink", and a target is compared by digest. */
		if (ev->seen_unknown)
			return 0;
		if (ev->err == ENOENT || ev->err == ENOTDIR)
			return absent;
		if (ev->err == EINVAL)
			return r == 0 && !S_ISLNK(st.st_mode);
		if (ev->err == 0 && ev->has_seen)
			return r == 0 && S_ISLNK(st.st_mode) && same_target(ev->path, &ev->seen);
		return 1;
	default:
		return 1;
	}
}

static void inode_key(struct buf *b, const struct file_id *id)
{
	buf_reset(b);
	buf_addhex(b, id->dev);
	buf_addch(b, ':');
	buf_addhex(b, id->ino);
}

/* The files whose link count the step changed: the sources of the hard
 * links it made, and what the names it removed or replaced held before. */
static void own_links(struct recorder *rc)
{
	struct buf k;
	buf_init(&k);
	for (size_t i = 0; i < rc->n; i++) {
		const struct trace_event *ev = &rc->events[i];
		const struct file_id *id = NULL;
		if (ev->kind == TRACE_READ && (ev->flags & TRACE_F_LINKED))
			id = &ev->id;
		else if (ev->kind == TRACE_TOUCH && ev->pre_exists)
			id = &ev->pre_id;
		if (!id)
			continue;
		inode_key(&k, id);
		strmap_put(&rc->relinked, k.data, (void *)1);
	}
	buf_free(&k);
}

/* A file read whose fingerprint at the end differs in its ctime alone,
 * when the step itself gave it a name or took one away (a link or unlink
 * moves the ctime of every name of the file): rustc's incremental mode
 * hard-links the files of its previous session into a new one and then
 * replaces those links. Its bytes, size and mtime are as the step read
 * them; someone else's change with a restored mtime in that same file
 * during the run would go unseen, as it would for a file not read. */
static int relinked_by_step(struct recorder *rc, const struct trace_event *ev)
{
	if (ev->kind != TRACE_READ && ev->kind != TRACE_EXEC)
		return 0;
	struct stat st;
	if (((ev->flags & TRACE_F_NOFOLLOW) ? lstat(ev->path, &st) : stat(ev->path, &st)) < 0)
		return 0;
	struct file_id now;
	file_id_from_stat(&st, &now);
	if (now.dev != ev->id.dev || now.ino != ev->id.ino || now.size != ev->id.size ||
	    now.mtime_ns != ev->id.mtime_ns || now.mode != ev->id.mode)
		return 0;
	if (!rc->relinked_ready) {
		own_links(rc);
		rc->relinked_ready = 1;
	}
	struct buf k;
	buf_init(&k);
	inode_key(&k, &ev->id);
	int own = strmap_get(&rc->relinked, k.data) != NULL;
	buf_free(&k);
	return own;
}

static void check_holds(struct recorder *rc)
{
	struct record *rec = rc->rec;
	/* At most one lookup per observation (fewer paths than observations,
	 * plus a few ancestors of absent ones): the table sized once, not
	 * grown through four rehashes. */
	strmap_reserve(&rc->lookups, rc->nobs);
	for (size_t i = 0; i < rc->nobs && !rec->not_storable; i++)
		if (!rc->forced[i].len && !still_holds(rc, rc->obs_event[i]) &&
		    !relinked_by_step(rc, rc->obs_event[i]))
			rec->not_storable = MODIFIED;
}

/* A which fact's candidate (facts.c) that a lookup of check_holds (or the
 * notes' ancestors) found missing: PATH's directories are the step's own
 * search, so each candidate it probed was lstat'ed there, after the step
 * ended, and a stat now would only look again. An lstat and a stat resolve
 * every component but the last alike, and a last component that lstat
 * cannot find, stat cannot follow: a failed lstat is a failed stat, the
 * answer which_value skips the candidate for. The fact's value is then
 * keyed from that lookup, as compute_values keys a path's value from the
 * lookup that checked it. */
static int checked_missing(void *ctx, const char *path)
{
	struct recorder *rc = ctx;
	const struct observe_memo *m = strmap_get(&rc->lookups, path);
	return m && m->path && !strcmp(m->path, path) && m->have_lstat && m->lstat_err != 0;
}

static void compute_values(struct recorder *rc)
{
	struct record *rec = rc->rec;

	size_t *perm;
	size_t before = rec->ps.nobs;
	pathset_canonicalise(&rec->ps, &perm);
	/* The forced value of each canonical observation, if any. */
	const struct buf **forced = xcalloc(rec->ps.nobs ? rec->ps.nobs : 1, sizeof *forced);
	const struct buf **detail = xcalloc(rec->ps.nobs ? rec->ps.nobs : 1, sizeof *detail);
	for (size_t i = 0; i < before; i++)
		if (rc->forced[i].len) {
			forced[perm[i]] = &rc->forced[i];
			detail[perm[i]] = &rc->detail[i];
		}
	free(perm);

	struct buf value, listing;
	struct observe_memo memo;
	memset(&memo, 0, sizeof memo);
	memo.known_absent = checked_missing;
	memo.known_absent_ctx = rc;
	buf_init(&value);
	buf_init(&listing);
	for (size_t i = 0; i < rec->ps.nobs; i++) {
		const struct observation *o = &rec->ps.obs[i];
		buf_reset(&value);
		buf_reset(&listing);
		if (forced[i]) {
			buf_add(&value, forced[i]->data, forced[i]->len);
			buf_add(&listing, detail[i]->data, detail[i]->len);
		} else {
			const char *path = rec->ps.paths[o->path];
			struct observe_memo *checked = strmap_get(&rc->lookups, path);
			const char **excluded = pathset_excluded(&rec->ps, i);
			observe_value_memo(o->kind, o->flags, path, excluded, rc->dc,
			                   checked ? checked : &memo, &value, &listing);
			free(excluded);
		}
		buf_put_bytes(&rec->values, value.data, value.len);
		if (o->kind == OBS_LIST) {
			buf_put_u32(&rec->listings, (uint32_t)i);
			buf_put_bytes(&rec->listings, listing.data, listing.len);
		}
	}
	buf_free(&value);
	buf_free(&listing);
	free(forced);
	free(detail);

	pathset_encode(&rec->ps, &rec->ps_body);
	digest_bytes(rec->ps_body.data, rec->ps_body.len, &rec->ps_digest);
}

/* What the entry restores at path, as observe.h's OBS_CREATED expects it,
 * appended to out: the output captured there, or when nothing was captured
 * (no store), the state the step left. */
static void expected_output(struct recorder *rc, const struct strmap *outs, const char *path,
                            struct buf *out)
{
	const struct output *o = strmap_get(outs, path);
	if (!o) {
		/* Outputs are kept at their physical paths (capture_path). */
		char *real = physical_path(rc, path);
		o = strmap_get(outs, real);
		free(real);
	}
	if (o) {
		switch (o->kind) {
		case OUT_FILE:
			observe_created_file(out, &o->blob.digest, o->mode);
			return;
		case OUT_SYMLINK:
			observe_created_symlink(out, o->target);
			return;
		case OUT_DIR:
			observe_created_dir(out, o->mode);
			return;
		default:
			buf_addch(out, '-');
			return;
		}
	}
	const struct trace_event *fin = strmap_get(&rc->finals, path);
	struct touch *t = strmap_get(&rc->touched, path);
	struct stat st;
	if (!fin || fin->err || lstat(path, &st) < 0) {
		buf_addch(out, '-');
		return;
	}
	struct digest d;
	if (S_ISDIR(st.st_mode) && t && t->ev->pre_exists && S_ISDIR(t->ev->pre_id.mode) &&
	    (t->ev->pre_id.mode & 07777) == (st.st_mode & 07777))
		buf_addch(out, '-'); /* an existing directory is no output */
	else if (S_ISDIR(st.st_mode))
		observe_created_dir(out, st.st_mode & 07777);
	else if (S_ISREG(st.st_mode) && digest_cached(path, 1, NULL, &d, NULL) == 0)
		observe_created_file(out, &d, st.st_mode & 07777);
	else if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t n = readlink(path, target, sizeof target - 1);
		target[n > 0 ? n : 0] = '\0';
		observe_created_symlink(out, target);
	} else
		buf_addch(out, '-');
}

/* The value of a prior probe as the step saw it (observe.h OBS_CREATED),
 * or -1 when what it saw is not known. */
static int prior_value(struct recorder *rc, const struct trace_event *ev, struct buf *out)
{
	const struct touch *t = touch_of(rc, ev->path);
	if (ev->seen_unknown)
		return -1;
	if (ev->err) {
		buf_addch(out, 'E');
		buf_put_u32(out, (uint32_t)ev->err);
		return 0;
	}
	if (ev->kind == TRACE_READLINK) {
		if (!ev->has_seen)
			return -1;
		observe_created_link_value(out, &ev->seen);
		return 0;
	}
	struct file_id seen;
	if (ev->has_seen)
		seen = ev->id;
	else if (t && t->ev->pre_exists && !S_ISLNK(t->ev->pre_id.mode))
		seen = t->ev->pre_id; /* access(): the path as lstat found it */
	else
		return -1;
	observe_created_stat_value(out, seen.mode, seen.size);
	return 0;
}

/* One OBS_CREATED observation: probe kind, the value the probe saw and what
 * the entry restores there go into the path set; its value, as the step
 * found the path, is 'A' (observe.h). */
static void add_created(struct recorder *rc, const struct trace_event *ev, unsigned flags,
                        char probe, const struct buf *seen, const char *expected)
{
	struct buf desc;
	buf_init(&desc);
	observe_created_describe(&desc, probe, seen->data, seen->len, expected);
	const char *ex[] = {desc.data, NULL};
	pathset_add(&rc->rec->ps, OBS_CREATED, flags, ev->path, ex);
	add_obs_slot(rc, ev);
	buf_addch(&rc->forced[rc->nobs - 1], 'A');
	buf_free(&desc);
}

/* The state before each path the step created or replaced, as its probes
 * saw it: "absent, or what this entry restores there" holds it (observe.h
 * OBS_CREATED; for a regular file, any regular file), so `gcc -o a.o` hits
 * whether a.o is absent, this output or another version's, while `[ -d d ]
 * || mkdir d` over a file, `mkdir d` and `ln -s` over an existing path miss.
 * A directory or symlink that the step made where there was none without
 * looking first is keyed as absent: `mkdir d` and `ln -s` fail where the
 * path exists (after a probe, as in Python's __pycache__, the probe decides,
 * and an existing directory of the same mode is exactly the output).
 * And the parent of every path the step changed must be a directory again,
 * unless the step made it: `echo x > d/out` fails where d is gone. */
static void add_prior_states(struct recorder *rc)
{
	struct strmap outs;
	strmap_init(&outs);
	for (size_t i = 0; i < rc->rec->result.noutputs; i++)
		strmap_put(&outs, rc->rec->result.outputs[i].path, &rc->rec->result.outputs[i]);
	struct buf expected, value;
	buf_init(&expected);
	buf_init(&value);
	struct strmap probed; /* paths with a prior probe: those decide */
	strmap_init(&probed);
	for (size_t i = 0; i < rc->nprior && !rc->rec->not_storable; i++) {
		const struct trace_event *ev = rc->prior[i];
		strmap_put(&probed, ev->path, (void *)1);
		buf_reset(&expected);
		buf_reset(&value);
		if (prior_value(rc, ev, &value) < 0) {
			rc->rec->not_storable = MODIFIED;
			break;
		}
		expected_output(rc, &outs, ev->path, &expected);
		add_created(rc, ev, obs_flags_of(ev),
		            ev->kind == TRACE_READLINK ? OBS_CREATED_READLINK : OBS_CREATED_STAT,
		            &value, expected.data);
	}
	for (size_t i = 0; i < rc->touched.cap && !rc->rec->not_storable; i++) {
		const struct touch *t = rc->touched.slots[i].value;
		if (!rc->touched.slots[i].key)
			continue;
		buf_reset(&expected);
		expected_output(rc, &outs, t->ev->path, &expected);
		const struct trace_event *fin = strmap_get(&rc->finals, t->ev->path);
		int exclusive = (t->ev->flags & TRACE_F_EXCLUSIVE) && fin && !fin->err;
		if (!t->ev->pre_exists &&
		    (expected.data[0] == 'D' || expected.data[0] == 'L' || exclusive) &&
		    !strmap_get(&probed, t->ev->path)) {
			/* Absent when the step made a directory or symlink
			 * there, or a file by a call that fails where the path
			 * exists (O_EXCL, link): mkdir and
			 * symlink fail there too, and are made without any
			 * probe. (A regular file made otherwise is written
			 * whatever was there: `>` and mv replace it; its
			 * probes, if any, decide.) */
			buf_reset(&value);
			buf_addch(&value, 'E');
			buf_put_u32(&value, ENOENT);
			add_created(rc, t->ev, OBS_F_NOFOLLOW, OBS_CREATED_MADE, &value,
			            expected.data);
		}
		char *dir = path_dirname(t->ev->path);
		if (strcmp(dir, t->ev->path) != 0 && !touch_of(rc, dir) && !ignored(rc, dir))
			add_obs_at(rc, OBS_STAT, 0, dir, t->ev, NULL);
		free(dir);
	}
	buf_free(&expected);
	buf_free(&value);
	strmap_free(&outs);
	strmap_free(&probed);
}

/* Notes the bases that f found, seen first in `where`. */
static void pin(struct record *rec, const struct finder *f, const char *where)
{
	for (int i = 0; i < STEP_MAX_BASES; i++) {
		if (!(f->found & (1u << i)) || (rec->pinned & (1u << i)))
			continue;
		rec->pinned |= 1u << i;
		rec->pinned_by[i] = xasprintf("%s contains %s", where, f->needle[i]);
	}
}

/* The searches that ride on reading an output or a stream: the bases'
 * real paths, the values of the variables keyed by effect, the names of
 * the paths the step changed (record.names, outputs only). */
struct scans {
	int bases, env, names;
	struct finder f;
	struct env_finder ef;
	struct finder nf;
	int has_nul;
};

static void scans_init(struct scans *sc, const struct step_bases *scan, char *const *scan_env,
                       const struct record *names_of)
{
	sc->bases = portable_has_bases(scan);
	sc->env = scan_env && scan_env[0];
	sc->names = names_of && names_of->nnames;
	sc->has_nul = 0;
	if (sc->bases)
		portable_finder(&sc->f, scan);
	if (sc->env)
		env_finder_init(&sc->ef, (const char *const *)scan_env);
	if (sc->names)
		finder_init(&sc->nf, (const char *const *)names_of->names, names_of->nnames);
}

static void feed_scans(void *p, const void *chunk, size_t len)
{
	struct scans *sc = p;
	if (sc->bases)
		finder_feed(&sc->f, chunk, len);
	if (sc->env)
		env_finder_feed(&sc->ef, chunk, len);
	if (sc->names) {
		/* A binary shows its NUL in its first bytes. */
		if (!sc->has_nul && memchr(chunk, '\0', len))
			sc->has_nul = 1;
		finder_feed(&sc->nf, chunk, len);
	}
}

/* Notes what the scans found (where: "output x", "stdout") and frees them;
 * found nothing when abandoned (the bytes were not all fed). */
static void scans_done(struct scans *sc, struct record *rec, const char *where)
{
	if (sc->bases) {
		if (where)
			pin(rec, &sc->f, where);
		finder_free(&sc->f);
	}
	if (sc->env) {
		uint64_t held = env_finder_done(&sc->ef);
		if (where)
			rec->env_held |= held;
	}
	if (sc->names)
		finder_free(&sc->nf);
}

/* Notes what the search for rec->names found in the content, once per
 * content. */
static void names_seen(struct record *rec, const struct scans *sc, const struct digest *content)
{
	if (!sc->names)
		return;
	for (size_t i = 0; i < rec->nseen; i++)
		if (digest_equal(&rec->seen[i].content, content))
			return;
	rec->seen = xrealloc(rec->seen, (rec->nseen + 1) * sizeof *rec->seen);
	rec->seen[rec->nseen++] = (struct record_names_seen){*content, sc->nf.found, sc->has_nul};
}

int record_names_held(const struct record *rec, const struct digest *content, char *const *needles,
                      size_t n, int *has_nul)
{
	const struct record_names_seen *seen = NULL;
	for (size_t i = 0; i < rec->nseen && !seen; i++)
		if (digest_equal(&rec->seen[i].content, content))
			seen = &rec->seen[i];
	if (!seen)
		return -1;
	int held = 0;
	for (size_t k = 0; k < n; k++) {
		if (!needles[k][0])
			continue;
		size_t i = 0;
		while (i < rec->nnames && strcmp(rec->names[i], needles[k]))
			i++;
		if (i == rec->nnames)
			return -1;
		if (seen->found & (1ull << i))
			held = 1;
	}
	*has_nul = seen->has_nul;
	return held;
}

/* A name to search the outputs for, unless it is one already or the
 * finder holds no more (a name left out is unknown: duplicate_note reads
 * the output back). Takes name. */
static void name_add(struct record *rec, char *name)
{
	if (!name)
		return;
	for (size_t i = 0; i < rec->nnames; i++)
		if (!strcmp(rec->names[i], name)) {
			free(name);
			return;
		}
	if (rec->nnames >= FINDER_MAX || !name[0]) {
		free(name);
		return;
	}
	rec->names = xrealloc(rec->names, (rec->nnames + 1) * sizeof *rec->names);
	rec->names[rec->nnames++] = name;
}

/* The names an argv word naming path may give it (duplicate.c's names_add
 * for a word that is path, absolute or relative to the cwd). */
static void names_of_path(struct record *rec, const char *path, const char *cwd)
{
	name_add(rec, xstrdup(path));
	name_add(rec, output_name_stem(path));
	if (!cwd || !path_is_under(path, cwd) || !strcmp(path, cwd))
		return;
	const char *rel = path + (strcmp(cwd, "/") ? strlen(cwd) + 1 : 1);
	name_add(rec, xstrdup(rel));
	if (strchr(rel, '/'))
		name_add(rec, output_name_stem(rel));
}

/* Sets rec->names when every program the step ran may have its outputs
 * served under other names (duplicate.h): the only steps noted. */
static void collect_names(struct recorder *rc)
{
	int ran = 0;
	for (size_t i = 0; i < rc->n; i++) {
		const struct trace_event *ev = &rc->events[i];
		if (ev->kind != TRACE_EXEC)
			continue;
		if (!output_program_name_blind(ev->path))
			return;
		ran = 1;
	}
	if (!ran)
		return;
	const struct strmap *maps[2] = {&rc->touched, &rc->touched_real};
	for (int m = 0; m < 2; m++)
		for (size_t i = 0; i < maps[m]->cap; i++)
			if (maps[m]->slots[i].key)
				names_of_path(rc->rec, maps[m]->slots[i].key, rc->cwd);
}

void record_scan_stream(struct record *rec, const char *name, const void *data, size_t len,
                        const struct step_bases *scan)
{
	struct scans sc;
	scans_init(&sc, scan, NULL, NULL);
	feed_scans(&sc, data, len);
	scans_done(&sc, rec, name);
}

/* The facts of the variables keyed by effect, added before the path set
 * is put in canonical order: once, where adding them after it meant
 * building, ordering and encoding the whole path set a second time. A
 * value held by stdout or stderr keys its variable as one held by an
 * output does; each stream is searched on its own, as a value split
 * between the two is printed by neither. */
static void add_env_facts(struct recorder *rc)
{
	const struct record_env *env = rc->env;
	struct record *rec = rc->rec;
	if (env->scan && env->effect_env && env->effect_env[0]) {
		const void *data[] = {env->out, env->err};
		size_t len[] = {env->out_len, env->err_len};
		for (int i = 0; i < 2; i++) {
			struct scans sc;
			scans_init(&sc, NULL, env->effect_env, NULL);
			feed_scans(&sc, data[i], len[i]);
			scans_done(&sc, rec, "");
		}
	}
	char **names = env_effect_facts(&rec->ps, env->effect_env, rec->env_held, env->cwd);
	for (char **n = names; *n; n++) {
		pathset_add(&rec->ps, OBS_FACT, 0, *n, NULL);
		add_obs_slot(rc, NULL);
		free(*n);
	}
	free(names);
}

/* The output at a path is the step's only while it is what the step left
 * there (its TRACE_FINAL): a sibling under make -j, or a parallel cachet
 * restoring the same output, may replace, truncate or remove it, or put
 * files beside it, between the end of the step and this capture. Stored,
 * any of those would be a wrong hit. A directory's times change with its
 * entries, which other processes may add beside the step's: only its type
 * and mode are the step's. */
static int as_the_step_left_it(const struct trace_event *fin, const struct stat *st)
{
	struct file_id now;
	file_id_from_stat(st, &now);
	if (S_ISDIR(st->st_mode))
		return fin->id.mode == now.mode;
	return file_id_equal(&fin->id, &now);
}

/* Still the file described by st (same inode, size and times), through fd
 * or, when fd is -1, at path? */
static int unchanged(int fd, const char *path, const struct stat *st)
{
	struct stat now;
	if (fd >= 0 ? fstat(fd, &now) < 0 : lstat(path, &now) < 0)
		return 0;
	return file_id_stat_equal(st, &now);
}

static int modified(struct recorder *rc)
{
	rc->rec->not_storable = MODIFIED;
	return 0;
}

static int capture_xattrs(struct recorder *rc, int fd, const char *path, struct error *e);
static void capture_owner(struct recorder *rc, const char *path, const struct stat *st);

static int capture_file(struct recorder *rc, const char *path, const struct stat *st, int set_mtime,
                        struct error *e)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && (errno == ENOENT || errno == ELOOP))
		return modified(rc); /* gone or replaced since the lstat */
	if (fd < 0)
		return error_errno(e, "cannot read output %s", path);
	struct stat fst;
	struct digest d;
	/* The search for the bases' real paths rides on the hashing read: an
	 * output is not read once more for it. */
	struct scans sc;
	scans_init(&sc, rc->scan, rc->scan_env, rc->rec);
	int scan = sc.bases || sc.env || sc.names;
	/* Hashed through a descriptor of the very file that was checked, and
	 * still that file, unchanged, at that path once stored. */
	if (fstat(fd, &fst) < 0 || !file_id_stat_equal(&fst, st) ||
	    digest_fd_each(fd, &d, NULL, scan ? feed_scans : NULL, scan ? &sc : NULL, e) < 0) {
		close(fd);
		scans_done(&sc, rc->rec, NULL);
		return modified(rc);
	}
	if (scan) {
		names_seen(rc->rec, &sc, &d);
		char *where = xasprintf("output %s", path);
		scans_done(&sc, rc->rec, where);
		free(where);
	}
	struct blob_ref ref;
	if (store_put_blob_fd(rc->store, fd, &d, &ref, e) < 0) {
		close(fd);
		/* A sibling (make -j) may still be writing it: not a cachet fault. */
		if (e->code == EAGAIN)
			return modified(rc);
		return -1;
	}
	int same = unchanged(fd, path, st) && unchanged(-1, path, st);
	int xattrs = same ? capture_xattrs(rc, fd, path, e) : 0;
	close(fd);
	if (!same)
		return modified(rc);
	if (xattrs < 0)
		return -1;
	capture_owner(rc, path, st);
	struct output *o = result_add_output(&rc->rec->result, OUT_FILE, path);
	o->mode = st->st_mode & 07777;
	o->blob = ref;
	if (set_mtime) {
		o->has_mtime = 1;
		o->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	}
	return 0;
}

/* One inode with several names: which output names it first, and how many
 * of its names are outputs. */
struct link_group {
	char *first; /* the path of its OUT_FILE, as the output keeps it */
	nlink_t nlink;
	nlink_t names;
};

/* A file with other names: the first one met is captured as a file, the
 * others as links to it. 1 when path was added as a link, 0 to capture it
 * as a file (the group then starts with it), -1 when it cannot be kept. */
static int capture_link(struct recorder *rc, const char *path, const struct stat *st)
{
	char key[48];
	snprintf(key, sizeof key, "%llx:%llx", (unsigned long long)st->st_dev,
	         (unsigned long long)st->st_ino);
	int added;
	struct link_group *g = strmap_get_or_new(&rc->inodes, key, sizeof *g, &added);
	if (added) {
		g->first = physical_path(rc, path);
		g->nlink = st->st_nlink;
		g->names = 1;
		return 0;
	}
	g->names++;
	struct output *o = result_add_output(&rc->rec->result, OUT_HARDLINK, path);
	o->target = xstrdup(g->first);
	return 1;
}

/* Every file with hard links has all its names among the outputs, or the
 * step wrote through a name a hit cannot know (a file linked elsewhere,
 * written in place: the plain run changes both names), or linked an input:
 * not storable. */
static void check_link_groups(struct recorder *rc)
{
	for (size_t i = 0; i < rc->inodes.cap && !rc->rec->not_storable; i++) {
		const struct link_group *g = rc->inodes.slots[i].value;
		if (rc->inodes.slots[i].key && g->names < g->nlink)
			rc->rec->not_storable =
			    "writes a file with a hard link that is not its output";
	}
}

/* The user.* extended attributes of the output at path (open as fd), as
 * OUT_XATTR outputs after it. Other namespaces are the system's (SELinux
 * labels, ACLs, capabilities) and are not carried. */
static int capture_xattrs(struct recorder *rc, int fd, const char *path, struct error *e)
{
	char names[4096];
	ssize_t n = flistxattr(fd, names, sizeof names);
	if (n < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP))
		return 0;
	if (n < 0)
		return error_errno(e, "cannot list the extended attributes of %s", path);
	for (const char *name = names; name < names + n; name += strlen(name) + 1) {
		if (strncmp(name, "user.", 5) != 0)
			continue;
		char value[65536];
		ssize_t len = fgetxattr(fd, name, value, sizeof value);
		if (len < 0)
			return error_errno(e, "cannot read %s of %s", name, path);
		struct output *o = result_add_output(&rc->rec->result, OUT_XATTR, path);
		o->target = xstrdup(name);
		o->value = xmalloc(len ? (size_t)len : 1);
		memcpy(o->value, value, (size_t)len);
		o->value_len = (size_t)len;
	}
	return 0;
}

/* The owner of the output at path, when it is not the one a file the
 * step made gets (chown, tar x as root): the caller's uid, and its gid or
 * that of a setgid parent directory. */
static void capture_owner(struct recorder *rc, const char *path, const struct stat *st)
{
	int usual = st->st_uid == geteuid() && st->st_gid == getegid();
	if (!usual && st->st_uid == geteuid()) {
		char *dir = path_dirname(path);
		struct stat parent;
		usual = stat(dir, &parent) == 0 && (parent.st_mode & S_ISGID) &&
		        parent.st_gid == st->st_gid;
		free(dir);
	}
	if (usual)
		return;
	struct output *o = result_add_output(&rc->rec->result, OUT_OWNER, path);
	o->uid = st->st_uid;
	o->gid = st->st_gid;
}

/* What else an output directory carries: its user.* attributes, its
 * owner. */
static int capture_attributes(struct recorder *rc, const char *path, const struct stat *st,
                              struct error *e)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && (errno == ENOENT || errno == ELOOP))
		return modified(rc);
	if (fd < 0)
		return error_errno(e, "cannot read output %s", path);
	int rc2 = capture_xattrs(rc, fd, path, e);
	close(fd);
	if (rc2 == 0)
		capture_owner(rc, path, st);
	return rc2;
}

static int capture_path(struct recorder *rc, const char *path, const struct touch *t,
                        struct error *e);

/* nftw has no context argument; the walk of a moved-in directory's contents
 * runs on the recorder held here for its duration. */
static struct recorder *walking;
static struct error *walking_error;
/* What capture_walked returns to end the walk (nftw passes it on). */
enum { WALK_STOP = 1, WALK_FAILED = 2 };

static int capture_walked(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (ftw->level == 0 || ignored(walking, path))
		return 0;
	walking->walked++;
	if (strmap_get(&walking->touched, path))
		return 0; /* captured on its own */
	if (capture_path(walking, path, NULL, walking_error) < 0)
		return WALK_FAILED;
	return walking->rec->not_storable ? WALK_STOP : 0;
}

/* The entries beneath dir that the step left there (TRACE_FINAL). */
static size_t finals_beneath(const struct recorder *rc, const char *dir)
{
	size_t n = 0;
	for (size_t i = 0; i < rc->finals.cap; i++) {
		const struct trace_event *fin = rc->finals.slots[i].value;
		if (rc->finals.slots[i].key && !fin->err && path_is_under(fin->path, dir) &&
		    strcmp(fin->path, dir) != 0)
			n++;
	}
	return n;
}

/* A directory moved into place: everything in it is output, although the
 * step wrote it under other names; every entry must be one the step left
 * there, and none may be missing. */
static int capture_moved_in(struct recorder *rc, const char *path, const struct stat *st,
                            struct error *e)
{
	struct recorder *saved = walking;
	struct error *saved_e = walking_error;
	walking = rc;
	walking_error = e;
	rc->walked = 0;
	int rc2 = nftw(path, capture_walked, 16, FTW_PHYS);
	walking = saved;
	walking_error = saved_e;
	if (rc2 == WALK_FAILED)
		return -1;
	if (rc2 < 0 && errno != ENOENT && errno != ENOTDIR)
		return error_errno(e, "cannot walk output directory %s", path);
	if (rc2 < 0 || (!rc->rec->not_storable &&
	                (rc->walked != finals_beneath(rc, path) || !unchanged(-1, path, st))))
		return modified(rc);
	return 0;
}

static int capture_entry(struct recorder *rc, const char *path, const struct touch *t,
                         struct error *e)
{
	if (strmap_get(&rc->outputs, path) || ignored(rc, path))
		return 0;
	strmap_put(&rc->outputs, path, (void *)1);
	const struct trace_event *fin = strmap_get(&rc->finals, path);
	if (!fin)
		return modified(rc); /* appeared since the step ended */
	if (fin->err) {
		if (fin->err != ENOENT && fin->err != ENOTDIR)
			return error_set(e, "cannot inspect output %s: %s", path,
			                 strerror(fin->err));
		/* Gone when the step ended, whatever another process made of
		 * the name since. */
		if (t && t->ev->pre_exists)
			result_add_output(&rc->rec->result, OUT_DELETE, path);
		return 0; /* else a temporary: created and removed again */
	}
	struct stat st;
	if (lstat(path, &st) < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			return error_errno(e, "cannot inspect output %s", path);
		return modified(rc); /* removed by another process since */
	}
	if (!as_the_step_left_it(fin, &st))
		return modified(rc);
	if (S_ISREG(st.st_mode)) {
		int linked = st.st_nlink > 1 ? capture_link(rc, path, &st) : 0;
		if (linked)
			return 0;
		return capture_file(rc, path, &st, t && t->set_mtime, e);
	}
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t n = readlink(path, target, sizeof target - 1);
		if (n < 0)
			return error_errno(e, "cannot read output symlink %s", path);
		if (!unchanged(-1, path, &st))
			return modified(rc);
		target[n] = '\0';
		struct output *o = result_add_output(&rc->rec->result, OUT_SYMLINK, path);
		o->target = xstrdup(target);
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		int moved_in = t && t->moved_in;
		int existed_as_dir = t && t->ev->pre_exists && S_ISDIR(t->ev->pre_id.mode);
		if (existed_as_dir && (t->ev->pre_id.mode & 07777) == (st.st_mode & 07777) &&
		    !moved_in)
			return 0;
		struct output *o = result_add_output(&rc->rec->result, OUT_DIR, path);
		o->mode = st.st_mode & 07777;
		if (capture_attributes(rc, path, &st, e) < 0)
			return -1;
		/* Made by mkdir, it holds what the step wrote into it by name
		 * (captured on their own) and whatever others put beside. */
		return moved_in ? capture_moved_in(rc, path, &st, e) : 0;
	}
	rc->rec->not_storable = "creates a special file";
	return 0;
}

static int capture_path(struct recorder *rc, const char *path, const struct touch *t,
                        struct error *e)
{
	struct result *res = &rc->rec->result;
	size_t before = res->noutputs;
	if (capture_entry(rc, path, t, e) < 0)
		return -1;
	if (res->noutputs == before)
		return 0;
	char *real = physical_path(rc, path);
	if (!strcmp(real, path)) {
		free(real);
		return 0;
	}
	/* The same file, written under both names: kept once. */
	int seen = strmap_get(&rc->outputs, real) != NULL;
	strmap_put(&rc->outputs, real, (void *)1);
	size_t k = before;
	for (size_t i = before; i < res->noutputs; i++) {
		struct output *o = &res->outputs[i];
		if (strcmp(o->path, path) != 0) {
			res->outputs[k++] = *o;
		} else if (seen) {
			free(o->path);
			free(o->target);
			free(o->value);
		} else {
			free(o->path);
			o->path = xstrdup(real);
			res->outputs[k++] = *o;
		}
	}
	res->noutputs = k;
	free(real);
	return 0;
}

static int cmp_touch_index(const void *a, const void *b)
{
	size_t x = (*(const struct touch *const *)a)->index;
	size_t y = (*(const struct touch *const *)b)->index;
	return x < y ? -1 : x > y;
}

static int capture_outputs(struct recorder *rc, struct error *e)
{
	struct touch **order = xmalloc((rc->touched.count + 1) * sizeof *order);
	size_t k = 0;
	for (size_t i = 0; i < rc->touched.cap; i++)
		if (rc->touched.slots[i].key)
			order[k++] = rc->touched.slots[i].value;
	qsort(order, k, sizeof *order, cmp_touch_index);
	int rc2 = 0;
	for (size_t i = 0; i < k && rc2 == 0 && !rc->rec->not_storable; i++)
		rc2 = capture_path(rc, order[i]->ev->path, order[i], e);
	if (rc2 == 0)
		check_link_groups(rc);
	free(order);
	return rc2;
}

int record_run(const struct trace_event *events, size_t n, const char *const *ignore_roots,
               const struct step_bases *scan, struct store *s, struct digest_cache *dc,
               struct record *out, struct error *e)
{
	return record_run_scanning(events, n, ignore_roots, scan, NULL, s, dc, out, e);
}

int record_run_scanning(const struct trace_event *events, size_t n, const char *const *ignore_roots,
                        const struct step_bases *scan, const struct record_env *env,
                        struct store *s, struct digest_cache *dc, struct record *out,
                        struct error *e)
{
	memset(out, 0, sizeof *out);
	pathset_init(&out->ps);
	buf_init(&out->ps_body);
	buf_init(&out->values);
	buf_init(&out->listings);
	result_init(&out->result);

	struct recorder rc = {.events = events,
	                      .n = n,
	                      .ignore_roots = ignore_roots,
	                      .scan = scan,
	                      .env = env,
	                      .scan_env = env && env->scan ? env->effect_env : NULL,
	                      .rec = out,
	                      .store = s,
	                      .dc = dc};
	strmap_init(&rc.touched);
	strmap_init(&rc.dir_names);
	strmap_init(&rc.outputs);
	strmap_init(&rc.finals);
	strmap_init(&rc.lookups);
	strmap_init(&rc.physical);
	strmap_init(&rc.touched_real);
	strmap_init(&rc.touched_names);
	strmap_init(&rc.inodes);
	strmap_init(&rc.relinked);
	strmap_init(&rc.read_paths);
	strmap_init(&rc.looked_inside);
	rc.cwd = getcwd(NULL, 0);
	if (s && env && env->memo_dirs) {
		out->dirs = dirfp_notes_new();
		dirfp_notes_lookups(out->dirs, notes_lstat, &rc);
	}

	collect_touches(&rc);
	if (s)
		collect_names(&rc);
	collect_uses(&rc);
	collect_observations(&rc);
	check_holds(&rc);
	/* The outputs first: the state before a path the step created is
	 * keyed against what the entry restores there. */
	int rc2 = 0;
	if (s && !out->not_storable)
		rc2 = capture_outputs(&rc, e);
	/* One snapshot of the index for the fingerprint lookups, instead of
	 * a read transaction (and two lock calls) for each. */
	if (s)
		store_snapshot_begin(s);
	if (rc2 == 0)
		add_prior_states(&rc);
	if (env)
		add_env_facts(&rc);
	compute_values(&rc);
	if (s)
		store_snapshot_end(s);
	if (out->dirs) /* the recorder's lookups end here */
		dirfp_notes_lookups(out->dirs, NULL, NULL);

	for (size_t i = 0; i < rc.touched.cap; i++)
		free(rc.touched.slots[i].value);
	for (size_t i = 0; i < rc.dir_names.cap; i++)
		if (rc.dir_names.slots[i].key) {
			buf_free(rc.dir_names.slots[i].value);
			free(rc.dir_names.slots[i].value);
		}
	strmap_free(&rc.touched);
	strmap_free(&rc.dir_names);
	strmap_free(&rc.outputs);
	strmap_free(&rc.finals);
	for (size_t i = 0; i < rc.lookups.cap; i++)
		free(rc.lookups.slots[i].value);
	strmap_free(&rc.lookups);
	for (size_t i = 0; i < rc.physical.cap; i++)
		free(rc.physical.slots[i].value);
	strmap_free(&rc.physical);
	strmap_free(&rc.touched_real);
	strmap_free(&rc.touched_names);
	for (size_t i = 0; i < rc.inodes.cap; i++)
		if (rc.inodes.slots[i].key) {
			free(((struct link_group *)rc.inodes.slots[i].value)->first);
			free(rc.inodes.slots[i].value);
		}
	strmap_free(&rc.inodes);
	strmap_free(&rc.relinked);
	strmap_free(&rc.read_paths);
	strmap_free(&rc.looked_inside);
	free(rc.set_mtimes);
	for (size_t i = 0; i < rc.nancestors; i++)
		free(rc.ancestors[i]);
	free(rc.ancestors);
	free(rc.cwd);
	free(rc.prior);
	for (size_t i = 0; i < rc.nobs; i++) {
		buf_free(&rc.forced[i]);
		buf_free(&rc.detail[i]);
	}
	free(rc.forced);
	free(rc.detail);
	free(rc.obs_event);
	return rc2;
}

void record_free(struct record *r)
{
	pathset_free(&r->ps);
	buf_free(&r->ps_body);
	buf_free(&r->values);
	buf_free(&r->listings);
	result_free(&r->result);
	for (int i = 0; i < STEP_MAX_BASES; i++)
		free(r->pinned_by[i]);
	for (size_t i = 0; i < r->nnames; i++)
		free(r->names[i]);
	free(r->names);
	free(r->seen);
	dirfp_notes_free(r->dirs);
	r->dirs = NULL;
}
