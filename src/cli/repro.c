/*
 * cachet repro: runs a step several times from the same starting state,
 * each under the tracer as `cachet run` would on a miss, and compares what
 * the runs left behind (outputs by final state, stdout, exit status). Stores
 * nothing in the cache.
 *
 * The same starting state: the tracer calls back at the step's first change
 * to each path, before the change, and the snapshot (repro_snapshot.h)
 * saves that path's state then. After every run the snapshot is restored,
 * so the next run starts from the tree the first one found.
 *
 * What a run left behind: after it, the final state of every path any run
 * changed so far is copied to run-N/fs/<path>; a path first changed by a
 * later run is copied into the earlier runs' captures once the snapshot has
 * put it back (their runs left it as it was). Directories that existed
 * before are captured without their untouched contents.
 *
 * The work tree at the end: as the control run (run 1) left it, copied back
 * from its capture after the last restore.
 */
#include "cli/cli.h"
#include "cli/options.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cachet/array.h"
#include "cachet/buf.h"
#include "cachet/path.h"
#include "cachet/record.h"
#include "cachet/step.h"
#include "cachet/trace.h"
#include "cachet/strv.h"
#include "cli/progress.h"
#include "cli/repro.h"
#include "cli/repro_snapshot.h"
#include "cli/settings.h"
#include "cli/step_env.h"
#include "cli/tee.h"

#define MAX_RUNS 1000

/* The state of one `cachet repro`, beyond the report (struct repro). */
struct ctx {
	struct repro *r;
	const struct settings *settings;
	char *cache_dir;
	struct snapshot *snap;
	int snap_failed;
	int control_done;     /* run 1 ran and was captured */
	const char *moved_to; /* the running step's copy of the work tree, or NULL */
	struct error snap_error;
	int stdin_is_file;
	int64_t start_ms;
	struct progress progress;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

/* ---- capturing what a run left behind ---- */

/* path under root from moved to root to, malloc'd; NULL when it is not
 * under from. */
static char *moved_path(const char *path, const char *from, const char *to)
{
	if (!from || !to || !path_is_under(path, from))
		return NULL;
	return xasprintf("%s%s", to, path + strlen(from));
}

/* run->dir "/fs" path: where path's state is kept for that run. */
static char *fs_path(const struct repro_run *run, const char *path)
{
	return xasprintf("%s/fs%s", run->dir, path);
}

static int captured_absent(const struct repro_run *run, const char *path)
{
	char *p = fs_path(run, path);
	struct stat st;
	int absent = lstat(p, &st) < 0;
	free(p);
	return absent;
}

/* 1 when an ancestor of path that some run changed decides path's state in
 * this run's capture: it was captured with its whole tree, or is absent. */
static int decided_by_ancestor(const struct repro_run *run, const char *path,
                               const struct strmap *changed_paths)
{
	char *p = xstrdup(path);
	int decided = 0;
	for (char *slash = strrchr(p, '/'); slash && slash > p && !decided;
	     slash = strrchr(p, '/')) {
		*slash = '\0';
		if (!strmap_get(changed_paths, p))
			continue;
		decided = strmap_get(&run->deep, p) || captured_absent(run, p);
	}
	free(p);
	return decided;
}

static int by_depth(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	size_t dx = 0, dy = 0;
	for (const char *p = x; *p; p++)
		dx += *p == '/';
	for (const char *p = y; *p; p++)
		dy += *p == '/';
	if (dx != dy)
		return dx < dy ? -1 : 1;
	return strcmp(x, y);
}

/* The snapshot's paths from index `from` on, parents first. malloc'd;
 * the strings belong to the snapshot. */
static const char **paths_by_depth(struct ctx *c, size_t from, size_t *n)
{
	size_t total = snapshot_count(c->snap);
	*n = total > from ? total - from : 0;
	const char **v = xmalloc((*n ? *n : 1) * sizeof *v);
	for (size_t i = 0; i < *n; i++)
		v[i] = snapshot_path(c->snap, from + i);
	qsort(v, *n, sizeof *v, by_depth);
	return v;
}

static void changed_set(struct ctx *c, struct strmap *m)
{
	strmap_init(m);
	for (size_t i = 0; i < snapshot_count(c->snap); i++)
		strmap_put(m, snapshot_path(c->snap, i), (void *)(uintptr_t)(i + 1));
}

/* Copies the live state of the snapshot's paths [from, end) into run's
 * capture. A directory that existed before the step (and still is one) is
 * captured without its contents: what the step changed in it is captured
 * on its own. */
static int capture(struct ctx *c, struct repro_run *run, size_t from, const char *moved_to,
                   struct error *e)
{
	struct strmap changed;
	changed_set(c, &changed);
	size_t n;
	const char **paths = paths_by_depth(c, from, &n);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *path = paths[i];
		if (decided_by_ancestor(run, path, &changed))
			continue;
		/* Where the run left it: in its copy of the work tree, if any. */
		char *moved = moved_path(path, c->r->cwd, moved_to);
		const char *live = moved ? moved : path;
		struct stat st;
		if (lstat(live, &st) < 0) {
			free(moved);
			continue; /* absent: nothing to keep */
		}
		size_t idx = (size_t)(uintptr_t)strmap_get(&changed, path) - 1;
		char *to = fs_path(run, path);
		char *parent = path_dirname(to);
		if (path_mkdirs(parent, 0755) < 0) {
			rc = error_errno(e, "cannot create %s", parent);
		} else if (S_ISDIR(st.st_mode) && snapshot_kind(c->snap, idx) == SNAP_DIR &&
		           !snapshot_is_covered(c->snap, idx)) {
			if ((mkdir(to, 0755) < 0 && errno != EEXIST) ||
			    chmod(to, st.st_mode & 07777) < 0)
				rc = error_errno(e, "cannot create %s", to);
		} else if (snapshot_remove(to, e) == 0 && snapshot_copy(live, to, 1, e) == 0) {
			strmap_put(&run->deep, path, (void *)1);
		} else {
			rc = -1;
		}
		free(parent);
		free(to);
		free(moved);
	}
	free(paths);
	strmap_free(&changed);
	return rc;
}

/* Makes the work tree what run 1 left behind, from its capture; the tree
 * holds the state from before the runs. */
static int put_back_control(struct ctx *c, struct error *e)
{
	struct repro_run *run = &c->r->runs[0];
	struct strmap changed;
	changed_set(c, &changed);
	size_t n;
	const char **paths = paths_by_depth(c, 0, &n);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *path = paths[i];
		if (decided_by_ancestor(run, path, &changed))
			continue;
		char *from = fs_path(run, path);
		struct stat st, live;
		if (lstat(from, &st) < 0) {
			rc = snapshot_remove(path, e);
		} else if (strmap_get(&run->deep, path)) {
			if (snapshot_remove(path, e) == 0)
				rc = snapshot_copy(from, path, 1, e);
			else
				rc = -1;
		} else if (lstat(path, &live) < 0 || !S_ISDIR(live.st_mode)) {
			if (snapshot_remove(path, e) < 0 || mkdir(path, st.st_mode & 07777) < 0)
				rc = error_errno(e, "cannot create the directory %s", path);
		} else if ((live.st_mode & 07777) != (st.st_mode & 07777)) {
			if (chmod(path, st.st_mode & 07777) < 0)
				rc = error_errno(e, "cannot set the mode of %s", path);
		}
		free(from);
	}
	free(paths);
	strmap_free(&changed);
	return rc;
}

/* ---- one run ---- */

static void before_change(void *arg, const char *path, unsigned how)
{
	struct ctx *c = arg;
	if (c->snap_failed)
		return;
	unsigned flags = (how & TRACE_CHANGE_MOVES) ? SNAPSHOT_TREE : 0;
	/* In a copy of the work tree (the build path variation) the copy is
	 * thrown away; what the report compares is the same path in the work
	 * tree, which still holds its state from before. */
	char *original = moved_path(path, c->moved_to, c->r->cwd);
	if (snapshot_save(c->snap, original ? original : path, flags, &c->snap_error) < 0)
		c->snap_failed = 1;
	free(original);
}

static char **ignore_roots(struct ctx *c, const char *tmpdir)
{
	char **roots = step_ignore_roots(c->settings, tmpdir, c->cache_dir);
	size_t n = strv_len(roots);
	roots = xrealloc(roots, (n + 2) * sizeof *roots);
	/* The snapshot and captures: never inputs or outputs of the step. */
	roots[n] = xstrdup(c->r->work);
	roots[n + 1] = NULL;
	return roots;
}

static int read_whole(const char *path, struct buf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char chunk[65536];
	ssize_t n;
	while ((n = read(fd, chunk, sizeof chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		buf_add(out, chunk, (size_t)n);
	}
	close(fd);
	return n < 0 ? -1 : 0;
}

/* What the run relied on, to tell the report whether its inputs were the
 * control's: the path set and values as `cachet run` would record them. */
static void note_inputs(struct repro_run *run, const struct trace_result *tr, char **ignore,
                        const char *cwd)
{
	struct record rec;
	struct error e = {0};
	if (record_run(tr->events, tr->nevents, (const char *const *)ignore, NULL, NULL, NULL, &rec,
	               &e) == 0) {
		run->ps_digest = rec.ps_digest;
		buf_add(&run->values, rec.values.data, rec.values.len);
		buf_add(&run->ps_body, rec.ps_body.data, rec.ps_body.len);
		if (rec.not_storable && !run->note)
			run->note = rec.not_storable;
	}
	record_free(&rec);
	for (size_t i = 0; i < tr->nevents; i++) {
		if (tr->events[i].kind != TRACE_TOUCH)
			continue;
		char *original = moved_path(tr->events[i].path, run->moved_to, cwd);
		if (!strmap_put(&run->changed, original ? original : tr->events[i].path, (void *)1))
			run->nchanged++;
		free(original);
	}
}

/* Runs the step once under run's conditions. -1 with e set when it could
 * not run at all (then nothing else should run). */
static int run_step(struct ctx *c, struct repro_run *run, struct error *e)
{
	struct repro *r = c->r;
	struct step_tmpdir tmp;
	if (step_tmpdir_create(&tmp) < 0)
		return error_errno(e, "cannot create a private TMPDIR");
	char **env = step_environment(tmp.path);
	char **ignore = ignore_roots(c, tmp.path);
	struct trace_spec spec = {
	    .file = r->program,
	    .argv = r->argv,
	    .stdin_fd = -1,
	    .ignore_roots = (const char *const *)ignore,
	    .before_change = before_change,
	    .before_change_ctx = c,
	};
	if (run->variant && (run->mask & (1u << VARY_BUILDPATH))) {
		run->moved_to = vary_buildpath_dir(r->cwd, &r->notes);
		if (!run->moved_to) {
			/* Said once in the notes; the later runs do not try. */
			r->mask &= ~(1u << VARY_BUILDPATH);
			run->mask &= ~(1u << VARY_BUILDPATH);
		} else if (snapshot_copy(r->cwd, run->moved_to, 1, e) < 0) {
			error_wrap(e, "cannot copy the work tree for the build path variation");
			step_tmpdir_remove(&tmp);
			strv_free(env);
			strv_free(ignore);
			return -1;
		}
	}
	vary_apply(run->mask, run->variant, run->moved_to, &env, &spec, &run->desc_text,
	           &run->desc_json);
	spec.envp = env;

	int rc = -1;
	char *out_path = xasprintf("%s/stdout", run->dir);
	char *err_path = xasprintf("%s/stderr", run->dir);
	int out = open(out_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int err = open(err_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	/* A regular file on stdin is read from its start by every run; anything
	 * else (a terminal, a pipe) would feed each run different bytes, so
	 * the step gets /dev/null. */
	int in = c->stdin_is_file ? open("/proc/self/fd/0", O_RDONLY | O_CLOEXEC) : -1;
	if (out < 0 || err < 0) {
		error_errno(e, "cannot create %s", out < 0 ? out_path : err_path);
		goto done;
	}
	spec.stdout_fd = out;
	spec.stderr_fd = err;
	spec.stdin_fd = in;

	struct trace_result tr;
	memset(&tr, 0, sizeof tr);
	int64_t start = now_ms();
	/* The step inherits the cwd: the copy's, for the build path. */
	if (run->moved_to && chdir(run->moved_to) < 0) {
		error_errno(e, "cannot enter %s", run->moved_to);
		goto done;
	}
	c->moved_to = run->moved_to;
	int traced = trace_run(&spec, &tr, e);
	c->moved_to = NULL;
	if (run->moved_to && chdir(r->cwd) < 0) {
		error_errno(e, "cannot return to %s", r->cwd);
		if (traced == 0)
			trace_result_free(&tr);
		goto done;
	}
	if (traced < 0) {
		error_wrap(e, "cannot run the step traced");
		goto done;
	}
	run->duration_ms = now_ms() - start;
	run->status = tr.status;
	if (tr.exec_errno) {
		errno = tr.exec_errno;
		error_errno(e, "%s", r->argv[0]);
		trace_result_free(&tr);
		goto done;
	}
	run->note = tr.uncacheable;
	note_inputs(run, &tr, ignore, r->cwd);
	trace_result_free(&tr);
	rc = 0;
done:
	if (out >= 0)
		close(out);
	if (err >= 0)
		close(err);
	if (in >= 0)
		close(in);
	free(out_path);
	free(err_path);
	step_tmpdir_remove(&tmp);
	strv_free(env);
	strv_free(ignore);
	return rc;
}

/* ---- comparing a run with run 1 ---- */

static struct repro_diff *add_diff(struct repro_run *run, enum repro_diff_kind kind,
                                   const char *path)
{
	run->diffs = xrealloc(run->diffs, (run->ndiffs + 1) * sizeof *run->diffs);
	struct repro_diff *d = &run->diffs[run->ndiffs++];
	memset(d, 0, sizeof *d);
	d->kind = kind;
	d->path = xstrdup(path);
	return d;
}

int repro_run_differs(const struct repro_run *run)
{
	return run->ndiffs > 0;
}

/* How many differing inputs the report names before "and N more". */
#define INPUTS_NAMED 8

/* Each observation of a run as "kind path" -> its value (length-prefixed,
 * as the values buffer holds it). 0, or -1 when the path set is not
 * readable. */
static int input_map(const struct repro_run *run, const char *cwd, struct pathset *ps,
                     struct strmap *m)
{
	struct error e = {0};
	strmap_init(m);
	if (pathset_decode(run->ps_body.data, run->ps_body.len, ps, &e) < 0)
		return -1;
	struct reader rd;
	reader_init(&rd, run->values.data, run->values.len);
	struct buf key;
	buf_init(&key);
	for (size_t i = 0; i < ps->nobs; i++) {
		const unsigned char *at = rd.p;
		size_t len;
		if (!reader_bytes(&rd, &len))
			break;
		const char *path = ps->paths[ps->obs[i].path];
		char *original = moved_path(path, run->moved_to, cwd);
		buf_reset(&key);
		buf_addf(&key, "%d %s", ps->obs[i].kind, original ? original : path);
		strmap_put(m, key.data, (void *)at);
		free(original);
	}
	buf_free(&key);
	return 0;
}

static int same_value(const unsigned char *x, const unsigned char *y)
{
	struct reader rx, ry;
	size_t lx, ly;
	reader_init(&rx, x, 1u << 30);
	reader_init(&ry, y, 1u << 30);
	const void *vx = reader_bytes(&rx, &lx), *vy = reader_bytes(&ry, &ly);
	return vx && vy && lx == ly && !memcmp(vx, vy, lx);
}

/* One side's observations the other lacks or sees otherwise, into names. */
static void inputs_unlike(const struct repro *r, const struct strmap *from,
                          const struct strmap *other, const char *only, struct strmap *named,
                          struct buf *out, size_t *more)
{
	for (size_t i = 0; i < from->cap; i++) {
		const char *key = from->slots[i].key;
		if (!key)
			continue;
		const unsigned char *v = strmap_get(other, key);
		if (v && same_value(from->slots[i].value, v))
			continue;
		const char *path = strchr(key, ' ') + 1;
		if (strmap_put(named, path, (void *)1))
			continue; /* another lookup of the same path */
		if (named->count > INPUTS_NAMED) {
			(*more)++;
			continue;
		}
		buf_addf(out, "%s%s%s", out->len ? ", " : "", repro_shown_path(r, path),
		         v ? "" : only);
	}
}

/* The inputs whose lookups differ between runs a and b, in words. */
static char *inputs_difference(const struct repro *r, const struct repro_run *a,
                               const struct repro_run *b)
{
	struct pathset pa, pb;
	struct strmap ma, mb, named;
	pathset_init(&pa);
	pathset_init(&pb);
	struct buf out;
	buf_init(&out);
	size_t more = 0;
	strmap_init(&named);
	if (input_map(a, r->cwd, &pa, &ma) == 0 && input_map(b, r->cwd, &pb, &mb) == 0) {
		inputs_unlike(r, &ma, &mb, " (run 1 only)", &named, &out, &more);
		inputs_unlike(r, &mb, &ma, " (this run only)", &named, &out, &more);
	}
	if (more)
		buf_addf(&out, " and %zu more", more);
	strmap_free(&ma);
	strmap_free(&mb);
	strmap_free(&named);
	pathset_free(&pa);
	pathset_free(&pb);
	return out.len ? buf_detach(&out, NULL) : NULL;
}

static int compare_runs(struct ctx *c, struct repro_run *a, struct repro_run *b, struct error *e)
{
	if (a->status != b->status) {
		struct repro_diff *d = add_diff(b, RDIFF_EXIT, "exit status");
		d->status_a = a->status;
		d->status_b = b->status;
	}
	char *la = xasprintf("run %u", a->number), *lb = xasprintf("run %u", b->number);
	struct compare_options opt = {.exec_bit = 1,
	                              .archive_plugin = cli_archive_plugin(),
	                              .dwarf_plugin = cli_dwarf_plugin(),
	                              .label_a = la,
	                              .label_b = lb};

	struct buf oa, ob;
	buf_init(&oa);
	buf_init(&ob);
	char *pa = xasprintf("%s/stdout", a->dir), *pb = xasprintf("%s/stdout", b->dir);
	int rc = 0;
	if (read_whole(pa, &oa) < 0 || read_whole(pb, &ob) < 0) {
		rc = error_errno(e, "cannot read the captured stdout");
	} else if (oa.len != ob.len || memcmp(oa.data, ob.data, oa.len)) {
		struct repro_diff *d = add_diff(b, RDIFF_CONTENT, "stdout");
		compare_buffers(oa.data, oa.len, ob.data, ob.len, "stdout", &opt, &d->rep);
	}
	free(pa);
	free(pb);
	buf_free(&oa);
	buf_free(&ob);

	/* Every path some run changed, from the top: a directory's comparison
	 * walks what was captured below it. */
	struct strmap changed;
	changed_set(c, &changed);
	size_t n;
	const char **paths = paths_by_depth(c, 0, &n);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *path = paths[i];
		int nested = 0;
		char *p = xstrdup(path);
		for (char *slash = strrchr(p, '/'); slash && slash > p && !nested;
		     slash = strrchr(p, '/')) {
			*slash = '\0';
			nested = strmap_get(&changed, p) != NULL;
		}
		free(p);
		if (nested)
			continue;
		char *fa = fs_path(a, path), *fb = fs_path(b, path);
		struct stat sa, sb;
		int has_a = lstat(fa, &sa) == 0, has_b = lstat(fb, &sb) == 0;
		if (has_a && !has_b) {
			add_diff(b, RDIFF_ONLY_IN_A, path);
		} else if (!has_a && has_b) {
			add_diff(b, RDIFF_ONLY_IN_B, path);
		} else if (has_a && has_b) {
			const char *shown = repro_shown_path(c->r, path);
			char *fla = xasprintf("run %u:%s", a->number, shown);
			char *flb = xasprintf("run %u:%s", b->number, shown);
			struct compare_options fopt = {.exec_bit = 1,
			                               .archive_plugin = cli_archive_plugin(),
			                               .dwarf_plugin = cli_dwarf_plugin(),
			                               .label_a = fla,
			                               .label_b = flb};
			struct compare_report rep;
			if (compare_paths(fa, fb, &fopt, &rep, e) < 0) {
				rc = -1;
				compare_report_free(&rep);
			} else if (rep.differ) {
				struct repro_diff *d = add_diff(b, RDIFF_CONTENT, path);
				d->rep = rep;
			} else {
				compare_report_free(&rep);
			}
			free(fla);
			free(flb);
		}
		free(fa);
		free(fb);
	}
	free(paths);
	strmap_free(&changed);
	free(la);
	free(lb);
	b->inputs_same = digest_equal(&a->ps_digest, &b->ps_digest) &&
	                 a->values.len == b->values.len &&
	                 !memcmp(a->values.data, b->values.data, a->values.len);
	if (!b->inputs_same)
		b->inputs_differ = inputs_difference(c->r, a, b);
	/* In a copy of the work tree every path differs; the same paths below
	 * it, with the same values, are the same inputs. */
	if (!b->inputs_same && (a->moved_to || b->moved_to) && !b->inputs_differ)
		b->inputs_same = 1;
	return rc;
}

/* ---- the sequence of runs ---- */

static struct repro_run *new_run(struct repro *r, enum repro_role role, unsigned mask,
                                 unsigned variant, int single)
{
	ARRAY_RESERVE(r->runs, r->alloc, r->n + 1, 8);
	struct repro_run *run = &r->runs[r->n++];
	memset(run, 0, sizeof *run);
	run->number = (unsigned)r->n;
	run->role = role;
	run->mask = mask;
	run->variant = variant;
	run->single = single;
	buf_init(&run->desc_text);
	buf_init(&run->desc_json);
	buf_init(&run->values);
	buf_init(&run->ps_body);
	strmap_init(&run->changed);
	strmap_init(&run->deep);
	run->dir = xasprintf("%s/run-%u", r->work, run->number);
	return run;
}

static void free_run(struct repro_run *run)
{
	buf_free(&run->desc_text);
	buf_free(&run->desc_json);
	buf_free(&run->values);
	buf_free(&run->ps_body);
	free(run->inputs_differ);
	free(run->moved_to);
	strmap_free(&run->changed);
	strmap_free(&run->deep);
	free(run->dir);
	for (size_t i = 0; i < run->ndiffs; i++) {
		free(run->diffs[i].path);
		if (run->diffs[i].kind == RDIFF_CONTENT)
			compare_report_free(&run->diffs[i].rep);
	}
	free(run->diffs);
}

/* Runs the newest run: the step, its capture, the restore of the starting
 * state, and the captures of newly changed paths into the earlier runs. */
static int execute(struct ctx *c, struct error *e)
{
	struct repro *r = c->r;
	size_t idx = r->n - 1;
	struct repro_run *run = &r->runs[idx];
	if (mkdir(run->dir, 0700) < 0)
		return error_errno(e, "cannot create %s", run->dir);
	size_t known = snapshot_count(c->snap);
	int rc = run_step(c, run, e);
	if (c->snap_failed) {
		*e = c->snap_error;
		error_wrap(e, "cannot save the state from before the step");
		rc = -1;
	}
	if (rc == 0)
		rc = capture(c, run, 0, run->moved_to, e);
	if (run->moved_to) {
		/* The copy and the directory made for it. */
		char *made = path_dirname(run->moved_to);
		struct error me = {0};
		if (snapshot_remove(made, &me) < 0 && rc == 0) {
			*e = me;
			rc = -1;
		}
		free(made);
	}
	/* Back to the starting state whatever happened. */
	struct error re = {0};
	if (snapshot_restore(c->snap, &re) < 0) {
		if (rc == 0)
			*e = re;
		error_wrap(e, "cannot put the work tree back as it was");
		return -1;
	}
	/* The earlier runs left the newly changed paths as they were before. */
	for (size_t i = 0; i < idx && rc == 0; i++)
		rc = capture(c, &r->runs[i], known, NULL, e);
	if (rc == 0 && idx == 0)
		c->control_done = 1;
	if (rc == 0 && interrupted)
		rc = error_set(e, "interrupted");
	return rc;
}

static int run_all(struct ctx *c, struct error *e)
{
	struct repro *r = c->r;
	for (unsigned i = 1; i <= r->nruns; i++) {
		new_run(r, i == 1 ? ROLE_CONTROL : ROLE_VARIED, r->mask, i - 1, -1);
		progress_update(&c->progress, i - 1, r->nruns, "repro: run %u of %u", i, r->nruns);
		if (execute(c, e) < 0)
			return -1;
	}
	return 0;
}

/* --bisect: the control once more (does the step differ on its own?), then
 * each chosen variation alone. */
static int bisect(struct ctx *c, struct error *e)
{
	struct repro *r = c->r;
	unsigned total = 1;
	for (int v = 0; v < VARY_COUNT; v++)
		total += (r->mask >> v) & 1;
	unsigned k = 0;
	r->bisected = 1;
	for (int v = -1; v < VARY_COUNT; v++) {
		if (v >= 0 && !((r->mask >> v) & 1))
			continue;
		struct repro_run *run =
		    new_run(r, ROLE_BISECT, v < 0 ? 0 : 1u << v, v < 0 ? 0 : 1, v);
		progress_update(&c->progress, k++, total, "repro --bisect: %s",
		                v < 0 ? "control" : vary_name(v));
		if (execute(c, e) < 0)
			return -1;
		run = &r->runs[r->n - 1]; /* execute may have moved the array */
		if (compare_runs(c, &r->runs[0], run, e) < 0)
			return -1;
		if (!repro_run_differs(run))
			continue;
		/* A step that differs with nothing varied (a pid, a random
		 * name) would differ under every variation too: say so once
		 * instead of blaming each. */
		if (run->single < 0) {
			r->control_again_differs = 1;
			return 0;
		}
		r->causes |= 1u << run->single;
	}
	return 0;
}

static int compare_all(struct ctx *c, struct error *e)
{
	struct repro *r = c->r;
	r->runs[0].inputs_same = 1;
	for (size_t i = 1; i < r->n; i++)
		if (compare_runs(c, &r->runs[0], &r->runs[i], e) < 0)
			return -1;
	return 0;
}

/* ---- entry ---- */

/* The snapshot and the captures live here, beside the steps' TMPDIRs. */
static char *make_workdir(void)
{
	const char *base = getenv("TMPDIR");
	if (!base || !*base || access(base, W_OK) < 0)
		base = "/tmp";
	char *tmpl = xasprintf("%s/cachet-repro-XXXXXX", base);
	char *real = mkdtemp(tmpl) ? realpath(tmpl, NULL) : NULL;
	free(tmpl);
	return real;
}

enum { OPT_RUNS = 1, OPT_VARY, OPT_BISECT, OPT_JSON };

static const struct cli_option repro_options[] = {
    {OPT_RUNS, 'n', "runs", "N", "number of runs, 2 to 1000"},
    {OPT_VARY, 0, "vary", "LIST",
     "comma-separated, 'all' (the default), 'none', or 'all,-NAME':\n"
     "  env       an extra environment variable\n"
     "  tz        TZ=GMT-14 (GMT+12 in even variants)\n"
     "  locale    LC_ALL set to another installed locale\n"
     "  umask     002 (022 when the caller's is 002)\n"
     "  aslr      address randomisation turned off (on if off)\n"
     "  cpus      the step pinned to half the CPUs\n"
     "  time      SOURCE_DATE_EPOCH and the clock moved by 373 days\n"
     "            per variant (the clock through libfaketime)\n"
     "  dirorder  the tracer reverses (or shuffles) the entries of\n"
     "            every directory listing the step reads\n"
     "  home      HOME=/nonexistent/cachet-repro-home\n"
     "  path      PATH with /i_capture_the_path appended\n"
     "  user      uid and gid 1234, in a user namespace\n"
     "  host      another host and domain name, in a UTS namespace\n"
     "  kernel    uname's release reads 2.6.x (personality UNAME26)\n"
     "  buildpath the step runs in a copy of the work tree (its\n"
     "            cwd) at another path, under TMPDIR"},
    {OPT_BISECT, 0, "bisect", NULL,
     "when runs differ, run the control again (if it differs too,\n"
     "the step differs by itself: said once, nothing more is run)\n"
     "and each variation alone, and name those that make the\n"
     "outputs differ"},
    {OPT_JSON, 0, "json", NULL,
     "one JSON object: reproducible, results[] (per run: exit\n"
     "status, variations, differences[] with the diff report),\n"
     "differing_paths, bisect"},
    {0},
};

const struct cli_command cli_cmd_repro = {
    .name = "repro",
    .operands = "[--] COMMAND [ARG...]",
    .options = repro_options,
    .flags = CLI_STOP_AT_OPERAND,
    .description =
        "Runs COMMAND N times (default 2) under the tracer, each from the same starting\n"
        "state (what a run changed is put back before the next), and compares what the\n"
        "runs left behind: every file, symlink and directory they changed (contents and\n"
        "the executable bit; ELF files by symbol and section, ar archives by member,\n"
        "text as a diff), stdout and the exit status. Run 1 is the control; runs 2 to\n"
        "N vary the conditions chosen with --vary (by default all of them, as reprotest\n"
        "does; those this machine cannot vary drop out with a note). Afterwards the\n"
        "work tree holds what\n"
        "the control run left, as after one normal run; nothing is stored in the cache.\n"
        "The step's stdout and stderr are kept, not shown (the control's stderr is\n"
        "shown when it fails); stdin is /dev/null unless it is a regular file.\n"
        "\n",
    .epilogue = "On a terminal, stderr shows which run is going and the time elapsed.\n"
                "Exit status: 0 every run matches run 1, 1 some run differs, 2 error.\n",
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	struct buf b;
	buf_init(&b);
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	cli_error("repro: %s (see cachet repro --help)", b.data);
	buf_free(&b);
	return EXIT_USAGE;
}

/* 0 with r filled in; -1 after --help (exit 0); EXIT_USAGE after saying
 * what is wrong. */
static int parse(struct repro *r, int argc, char **argv)
{
	r->nruns = 2;
	/* Varied by default, as reprotest does: run as a user first runs it,
	 * a step that embeds its build time or host is found (--vary none:
	 * nothing varied). */
	r->mask = VARY_ALL;
	struct cli_args args;
	cli_args_init(&args, &cli_cmd_repro, argc, argv);
	for (int id; (id = cli_args_next(&args)) != CLI_ARG_END;) {
		if (id == CLI_ARG_EXIT)
			return args.exit ? args.exit : -1;
		if (id == OPT_JSON) {
			r->json = 1;
		} else if (id == OPT_BISECT) {
			r->bisect = 1;
		} else if (id == OPT_RUNS) {
			char *end;
			errno = 0;
			long n = strtol(args.value, &end, 10);
			if (!*args.value || errno || *end || n < 2 || n > MAX_RUNS)
				return usage_error("%s needs a number of runs from 2 to %d",
				                   args.word[1] == 'n' ? "-n" : "--runs", MAX_RUNS);
			r->nruns = (unsigned)n;
		} else {
			char msg[256];
			if (vary_parse(args.value, &r->mask, msg, sizeof msg) < 0)
				return usage_error("%s", msg);
		}
	}
	if (args.next >= argc)
		return usage_error("no command given");
	r->argv = argv + args.next;
	return 0;
}

static void cleanup(struct ctx *c)
{
	struct repro *r = c->r;
	progress_end(&c->progress);
	if (r->work) {
		struct error e = {0};
		snapshot_remove(r->work, &e);
	}
	snapshot_free(c->snap);
	for (size_t i = 0; i < r->n; i++)
		free_run(&r->runs[i]);
	free(r->runs);
	free(r->work);
	free(r->cwd);
	free(r->program);
	free(c->cache_dir);
	buf_free(&r->notes);
}

static int fail(struct ctx *c, const struct error *e)
{
	progress_end(&c->progress);
	cli_error("repro: %s", e->msg);
	cleanup(c);
	return 2;
}

int cmd_repro(int argc, char **argv)
{
	struct repro r;
	memset(&r, 0, sizeof r);
	buf_init(&r.notes);
	struct ctx c;
	memset(&c, 0, sizeof c);
	c.r = &r;
	c.start_ms = now_ms();
	int prc = parse(&r, argc, argv);
	if (prc < 0) {
		buf_free(&r.notes);
		return 0;
	}
	if (prc > 0) {
		buf_free(&r.notes);
		return prc;
	}
	struct error e = {0};
	char *self = cli_self_exe();
	r.program = step_find_program(r.argv[0], self);
	free(self);
	if (!r.program) {
		int err = errno;
		cli_error("repro: %s: %s", r.argv[0],
		          err == ENOENT ? "command not found" : strerror(err));
		buf_free(&r.notes);
		return 2;
	}
	if (trace_self_is_traced()) {
		cli_error("repro: cachet is itself being traced (under cachet run?): cannot trace "
		          "the step");
		free(r.program);
		buf_free(&r.notes);
		return 2;
	}
	c.settings = cli_settings();
	if (!c.settings)
		buf_addf(&r.notes, "configuration error, ignore_paths not applied: %s\n",
		         cli_settings_error());
	c.cache_dir = cli_cache_dir();
	r.cwd = getcwd(NULL, 0);
	vary_check(&r.mask, &r.notes);
	struct stat st;
	c.stdin_is_file = fstat(0, &st) == 0 && S_ISREG(st.st_mode);

	r.work = make_workdir();
	if (!r.work) {
		error_errno(&e, "cannot create a work directory");
		return fail(&c, &e);
	}
	char *snapdir = xasprintf("%s/snapshot", r.work);
	if (mkdir(snapdir, 0700) < 0) {
		error_errno(&e, "cannot create %s", snapdir);
		free(snapdir);
		return fail(&c, &e);
	}
	c.snap = snapshot_new(snapdir);
	free(snapdir);

	/* An interrupted repro must still put the work tree back: the step dies
	 * of the signal (its dispositions are reset), cachet restores. */
	struct sigaction sa, old_int, old_term, old_hup;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);

	progress_start(&c.progress, !r.json);
	int rc = run_all(&c, &e);
	if (rc == 0)
		rc = compare_all(&c, &e);
	int differ = 0;
	for (size_t i = 1; i < r.n; i++)
		differ |= repro_run_differs(&r.runs[i]);
	if (rc == 0 && r.bisect && differ)
		rc = bisect(&c, &e);
	/* The tree holds the starting state now (or what could be restored):
	 * the control run's outputs go back, unless it never completed or the
	 * user interrupted (then the tree stays as it was before). */
	struct error pe = {0};
	if (c.control_done && !interrupted && put_back_control(&c, &pe) < 0) {
		if (rc == 0)
			e = pe;
		error_wrap(&e, "cannot leave the control run's outputs in place");
		rc = -1;
	}
	progress_end(&c.progress);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	if (rc < 0 && interrupted) {
		int sig = interrupted;
		progress_end(&c.progress);
		cli_error("repro: interrupted; the work tree is as it was before the runs");
		cleanup(&c);
		signal(sig, SIG_DFL);
		raise(sig);
		return 2;
	}
	if (rc < 0)
		return fail(&c, &e);

	struct buf out;
	buf_init(&out);
	if (r.json)
		repro_render_json(&r, &out);
	else
		repro_render_text(&r, &out);
	fwrite(out.data, 1, out.len, stdout);
	buf_free(&out);
	/* A failing control run is worth seeing whatever the comparison says. */
	if (!r.json && !(WIFEXITED(r.runs[0].status) && WEXITSTATUS(r.runs[0].status) == 0)) {
		struct buf err;
		buf_init(&err);
		char *p = xasprintf("%s/stderr", r.runs[0].dir);
		if (read_whole(p, &err) == 0 && err.len) {
			fputs("cachet: repro: the control run's stderr:\n", stderr);
			fwrite(err.data, 1, err.len, stderr);
		}
		free(p);
		buf_free(&err);
	}
	cleanup(&c);
	if (fflush(stdout) != 0)
		return 2;
	return differ ? 1 : 0;
}
