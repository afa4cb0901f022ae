#include "cachet/dirfp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cachet/array.h"
#include "cachet/ldcache.h"
#include "cachet/observe.h"
#include "cachet/path.h"
#include "cachet/strmap.h"

/* Bounds for decoding untrusted bytes; far above any real path set. */
#define DIRFP_MAX_DIRS (1u << 20)

/* Splits values (buf_put_bytes each) into one pointer and length per
 * observation. 0 when they are exactly n values. */
static int split_values(const void *values, size_t len, size_t n, const unsigned char ***vals,
                        size_t **lens)
{
	*vals = xcalloc(n ? n : 1, sizeof **vals);
	*lens = xcalloc(n ? n : 1, sizeof **lens);
	struct reader r;
	reader_init(&r, values, len);
	for (size_t i = 0; i < n; i++) {
		(*vals)[i] = reader_bytes(&r, &(*lens)[i]);
		if (!(*vals)[i])
			return -1;
	}
	return r.failed || r.left ? -1 : 0;
}

static int is_errno(const unsigned char *v, size_t len, int err)
{
	if (len != 5 || v[0] != 'E')
		return 0;
	struct reader r;
	reader_init(&r, v + 1, 4);
	return reader_u32(&r) == (uint32_t)err;
}

static int is_real_name(const char *path)
{
	const char *base = path_basename(path);
	return *base && strcmp(base, ".") && strcmp(base, "..") && path[strlen(path) - 1] != '/';
}

/* Whether the file system of the directories of one st_dev is trusted:
 * file_id_fs_trusted asks the file system, which every directory of one
 * device shares (overlayfs gives its directories its own st_dev; only its
 * other files carry a lower layer's). */
struct fs_trust {
	dev_t dev;
	int trusted;
};

/* What one collection (or a recording and then the collection of its
 * memo) has looked up, so that no path is looked up twice: the directories
 * of a compiler's include search are the same few for every header. */
struct dirfp_notes {
	struct dirfp *dirs; /* the fingerprints taken, in order */
	size_t ndirs, alloc;
	struct strmap index;     /* dir -> index + 1 into dirs, or -1 if unusable */
	struct strmap ancestors; /* dir -> struct looked (malloc'd) */
	struct strmap absent;    /* absent path -> index + 1 into dirs, or -1 */
	struct fs_trust *fs;     /* one per st_dev met */
	size_t nfs, fs_alloc;
	/* When the notes began: no lookup in them is older. A fingerprint
	 * may come from an earlier lookup than its own use (one per path),
	 * so it is kept only when settled since then, not just now. */
	int64_t since_ns;
	/* dirfp_notes_lookups: the caller's lstat */
	int (*lstat_of)(void *ctx, const char *path, struct stat *st);
	void *lstat_ctx;
};

/* An lstat and what it found: errno, 0 with st. */
struct looked {
	int err;
	struct stat st;
};

struct dirfp_notes *dirfp_notes_new(void)
{
	struct dirfp_notes *n = xcalloc(1, sizeof *n);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	n->since_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	strmap_init(&n->index);
	strmap_init(&n->ancestors);
	strmap_init(&n->absent);
	return n;
}

void dirfp_notes_free(struct dirfp_notes *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->ndirs; i++)
		free(n->dirs[i].dir);
	free(n->dirs);
	for (size_t i = 0; i < n->ancestors.cap; i++)
		free(n->ancestors.slots[i].value);
	strmap_free(&n->index);
	strmap_free(&n->ancestors);
	strmap_free(&n->absent);
	free(n->fs);
	free(n);
}

/* lstat of an ancestor, through the answers of this collection. */
static const struct looked *ancestor_lookup(struct dirfp_notes *n, const char *dir)
{
	int added;
	struct looked *l = strmap_get_or_new(&n->ancestors, dir, sizeof *l, &added);
	if (added && n->lstat_of)
		l->err = n->lstat_of(n->lstat_ctx, dir, &l->st) == 0 ? 0 : errno;
	else if (added)
		l->err = lstat(dir, &l->st) == 0 ? 0 : errno;
	return l;
}

void dirfp_notes_lookups(struct dirfp_notes *n,
                         int (*lstat_of)(void *ctx, const char *path, struct stat *st), void *ctx)
{
	n->lstat_of = lstat_of;
	n->lstat_ctx = ctx;
}

/* The directory that decides why absent path p is absent: its nearest
 * ancestor that exists, whose missing entry (the next component, a real
 * name, absent itself and not a dangling symlink) makes the lookup fail;
 * NULL when there is none. Ancestors are taken as text, component by
 * component from the end, so ".." is never folded: the kernel resolves
 * the ancestor as it resolved that part of the path. An ancestor that
 * changes while this runs cannot mislead: its directory's fingerprint,
 * taken after, is then too recent to be kept. The caller has just found p
 * absent (lstat: ENOENT). */
static char *absent_from(struct dirfp_notes *n, const char *p)
{
	/* The ancestors are cut from one copy of p, in place: two
	 * allocations per component (a dup of the child, then its dirname)
	 * were most of this function's own cost on a compile's 271 absent
	 * paths. The callers pass absolute paths, whose ancestors all are. */
	size_t len = strlen(p);
	if (p[0] != '/')
		return NULL;
	char *dir = xmalloc(len + 1);
	memcpy(dir, p, len + 1);
	for (;;) {
		/* dir holds the child, len its length; cut it to its dirname. */
		char *slash = memrchr(dir, '/', len);
		const char *base = slash + 1;
		size_t base_len = len - (size_t)(base - dir);
		int real = base_len && !(base_len == 1 && base[0] == '.') &&
		           !(base_len == 2 && base[0] == '.' && base[1] == '.');
		int root = len == 1; /* the child is "/", its own dirname */
		len = slash == dir ? 1 : (size_t)(slash - dir);
		dir[len] = '\0';
		int err = ancestor_lookup(n, dir)->err;
		if (err == 0) {
			if (real && !root)
				return dir;
			free(dir);
			return NULL;
		}
		if (err != ENOENT || root) {
			free(dir);
			return NULL;
		}
	}
}

static int fs_trusted(struct dirfp_notes *n, const struct stat *st, const char *path)
{
	if (!S_ISDIR(st->st_mode))
		return file_id_fs_trusted(-1, path);
	for (size_t i = 0; i < n->nfs; i++)
		if (n->fs[i].dev == st->st_dev)
			return n->fs[i].trusted;
	ARRAY_RESERVE(n->fs, n->fs_alloc, n->nfs + 1, 4);
	n->fs[n->nfs].dev = st->st_dev;
	n->fs[n->nfs].trusted = file_id_fs_trusted(-1, path);
	return n->fs[n->nfs++].trusted;
}

/* The fingerprint of dir, taken once: index + 1 into n->dirs, or -1 when
 * it cannot vouch (not settled, not a directory, an untrusted file
 * system). */
static intptr_t fingerprint(struct dirfp_notes *n, const char *dir)
{
	intptr_t at = (intptr_t)strmap_get(&n->index, dir);
	if (at)
		return at;
	at = -1;
	/* An ancestor lookup that found a directory is the stat the
	 * fingerprint takes (no symlink to follow). It may be older than the
	 * lookup of a path it then decides (a recording's check of the
	 * directory itself, an earlier absent path): sound, as any stat
	 * taken once and reused for a directory. Kept only when the directory
	 * has not changed since before the notes began (since_ns), it had
	 * the same entries from then until this stat; a change after it moves
	 * its times away from the fingerprint, which then vouches for
	 * nothing. A value looked up at any point of the notes is thus one
	 * that the fingerprinted entries decide. */
	const struct looked *l = strmap_get(&n->ancestors, dir);
	struct stat st;
	int found;
	if (l && l->err == 0 && S_ISDIR(l->st.st_mode)) {
		st = l->st;
		found = 1;
	} else {
		found = stat(dir, &st) == 0;
	}
	if (found && (S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && !strcmp(dir, LDCACHE_PATH)))) {
		struct file_id id;
		file_id_from_stat(&st, &id);
		int64_t newest = id.mtime_ns > id.ctime_ns ? id.mtime_ns : id.ctime_ns;
		if (n->since_ns - newest > DIGEST_CACHE_MARGIN_NS && fs_trusted(n, &st, dir)) {
			ARRAY_RESERVE(n->dirs, n->alloc, n->ndirs + 1, 16);
			n->dirs[n->ndirs].dir = xstrdup(dir);
			n->dirs[n->ndirs].id = id;
			n->dirs[n->ndirs].state = 0;
			at = (intptr_t)++n->ndirs;
		}
	}
	strmap_put(&n->index, dir, (void *)at);
	return at;
}

/* The fingerprint that vouches for absent path p, once per path: index +
 * 1 into n->dirs, or -1. looked: the caller has just found p absent. */
static intptr_t absent_fingerprint(struct dirfp_notes *n, const char *p, int looked)
{
	intptr_t at = (intptr_t)strmap_get(&n->absent, p);
	if (at)
		return at;
	struct stat st;
	char *dir = NULL;
	if (!looked) {
		/* An lstat of p the notes hold (dirfp_note_lookup) is this one. */
		const struct looked *l = strmap_get(&n->ancestors, p);
		looked = l ? l->err == ENOENT : lstat(p, &st) < 0 && errno == ENOENT;
	}
	if (looked)
		dir = absent_from(n, p);
	at = dir ? fingerprint(n, dir) : -1;
	free(dir);
	strmap_put(&n->absent, p, (void *)at);
	return at;
}

void dirfp_note_directory(struct dirfp_notes *n, const char *path)
{
	ancestor_lookup(n, path);
}

void dirfp_note_lookup(void *notes, const char *path, int err, const struct stat *st)
{
	struct dirfp_notes *n = notes;
	/* A collection asks only of paths found missing (absent values, the
	 * ancestors of one) and of directories (fingerprints): a file's
	 * lookup would only take room. */
	if (!err && !S_ISDIR(st->st_mode))
		return;
	int added;
	struct looked *l = strmap_get_or_new(&n->ancestors, path, sizeof *l, &added);
	if (!added)
		return;
	l->err = err;
	if (!err)
		l->st = *st;
}

void dirfp_note_absent(struct dirfp_notes *n, const char *path)
{
	if (path[0] == '/')
		absent_fingerprint(n, path, 1);
}

/* A recorded listing is the one the step saw (record.h), which a sibling
 * may have changed before the run was stored: a fingerprint of the
 * directory as it is now must not vouch for it unless it is also the
 * listing now. */
static int listing_holds(const struct pathset *ps, const struct observation *o,
                         const unsigned char *v, size_t len)
{
	const char **excluded = pathset_excluded(ps, (size_t)(o - ps->obs));
	struct buf now;
	buf_init(&now);
	observe_value(OBS_LIST, o->flags, ps->paths[o->path], excluded, NULL, &now);
	int same = now.len == len && memcmp(now.data, v, len) == 0;
	buf_free(&now);
	free(excluded);
	return same;
}

/* 1 for a fact that the loader's cache answers (facts.c): its value is a
 * function of that file's bytes alone. */
static int is_ldcache_fact(const struct observation *o, const char *name)
{
	return o->kind == OBS_FACT &&
	       !strncmp(name, OBSERVE_FACT_LDCACHE, strlen(OBSERVE_FACT_LDCACHE));
}

/* The fingerprint of the directory whose entries decide observation o's
 * value v (index + 1 into n->dirs), or -1 when they do not decide it
 * alone. For a fact the loader's cache answered, that file instead:
 * ldconfig replaces it by a rename (another inode), and an edit in place
 * moves its times, as a new entry moves a directory's. Reading and
 * indexing it (44 KB here) was the costliest fact of a compile's hit. */
static intptr_t deciding_fingerprint(struct dirfp_notes *n, const struct pathset *ps,
                                     const struct observation *o, const unsigned char *v,
                                     size_t len)
{
	const char *p = ps->paths[o->path];
	if (is_ldcache_fact(o, p))
		return len > 0 && v[0] == 'P' ? fingerprint(n, LDCACHE_PATH) : -1;
	if (p[0] != '/')
		return -1;
	if (o->kind == OBS_LIST)
		return len > 0 && v[0] == 'L' && listing_holds(ps, o, v, len) ? fingerprint(n, p)
		                                                              : -1;
	if (o->kind != OBS_STAT && o->kind != OBS_READLINK)
		return -1;
	if (is_errno(v, len, ENOENT))
		return absent_fingerprint(n, p, 0);
	/* A directory's own stat, following symlinks as its fingerprint is
	 * taken (stat of the same path): its type and permission bits are in
	 * the fingerprint, and chmod moves its ctime. The include directories
	 * that gcc stats are the ones whose entries decide its other lookups:
	 * their stats were made twice. */
	if (o->kind == OBS_STAT && !(o->flags & OBS_F_NOFOLLOW) && len >= 2 &&
	    (v[0] == 'S' || v[0] == 's') && v[1] == (S_IFDIR >> 12))
		return fingerprint(n, p);
	/* readlink found the entry, a symlink or not: the entry named by the
	 * last component, which must be a real name. */
	if (o->kind == OBS_READLINK && ((len > 0 && v[0] == 'R') || is_errno(v, len, EINVAL)) &&
	    is_real_name(p)) {
		char *dir = path_dirname(p);
		intptr_t at = fingerprint(n, dir);
		free(dir);
		return at;
	}
	return -1;
}

void dirfp_collect(const struct pathset *ps, const void *values, size_t values_len,
                   struct dirfp_set *out)
{
	dirfp_collect_noted(ps, values, values_len, NULL, out);
}

void dirfp_collect_noted(const struct pathset *ps, const void *values, size_t values_len,
                         struct dirfp_notes *notes, struct dirfp_set *out)
{
	memset(out, 0, sizeof *out);
	struct dirfp_notes *n = notes ? notes : dirfp_notes_new();
	const unsigned char **vals;
	size_t *lens;
	int ok = split_values(values, values_len, ps->nobs, &vals, &lens) == 0;
	out->nobs = ps->nobs;
	out->obs_dir = xcalloc(ps->nobs ? ps->nobs : 1, sizeof *out->obs_dir);
	/* n->dirs index + 1 -> out->dirs index + 1: the notes may hold
	 * fingerprints that no observation of ps uses. */
	uint32_t *used = NULL;
	size_t used_len = 0, alloc = 0;
	for (size_t i = 0; ok && i < ps->nobs; i++) {
		intptr_t at = deciding_fingerprint(n, ps, &ps->obs[i], vals[i], lens[i]);
		if (at <= 0)
			continue;
		if ((size_t)at > used_len) {
			used = xrealloc(used, n->ndirs * sizeof *used);
			memset(used + used_len, 0, (n->ndirs - used_len) * sizeof *used);
			used_len = n->ndirs;
		}
		if (!used[at - 1]) {
			const struct dirfp *d = &n->dirs[at - 1];
			ARRAY_RESERVE(out->dirs, alloc, out->ndirs + 1, 16);
			out->dirs[out->ndirs] = (struct dirfp){xstrdup(d->dir), d->id, 0};
			used[at - 1] = (uint32_t)++out->ndirs;
		}
		out->obs_dir[i] = used[at - 1];
	}
	free(used);
	if (!notes)
		dirfp_notes_free(n);
	free(vals);
	free(lens);
}

void dirfp_encode(const struct dirfp_set *set, struct buf *out)
{
	buf_put_u32(out, (uint32_t)set->ndirs);
	for (size_t i = 0; i < set->ndirs; i++) {
		buf_put_str(out, set->dirs[i].dir);
		file_id_encode(&set->dirs[i].id, out);
	}
	/* Only the observations that have a directory: most of a path set. */
	uint32_t n = 0;
	for (size_t i = 0; i < set->nobs; i++)
		n += set->obs_dir[i] != 0;
	buf_put_u32(out, n);
	for (size_t i = 0; i < set->nobs; i++)
		if (set->obs_dir[i]) {
			buf_put_u32(out, (uint32_t)i);
			buf_put_u32(out, set->obs_dir[i]);
		}
}

int dirfp_decode(const void *data, size_t len, size_t nobs, struct dirfp_set *out)
{
	memset(out, 0, sizeof *out);
	struct reader r;
	reader_init(&r, data, len);
	uint32_t ndirs = reader_u32(&r);
	if (r.failed || ndirs > DIRFP_MAX_DIRS || ndirs > r.left / 45)
		return -1;
	out->dirs = xcalloc(ndirs ? ndirs : 1, sizeof *out->dirs);
	for (uint32_t i = 0; i < ndirs && !r.failed; i++) {
		struct dirfp *d = &out->dirs[i];
		d->dir = reader_strdup(&r);
		file_id_decode(&r, &d->id);
		out->ndirs = i + 1;
		if (!d->dir || d->dir[0] != '/')
			r.failed = 1;
	}
	out->nobs = nobs;
	out->obs_dir = xcalloc(nobs ? nobs : 1, sizeof *out->obs_dir);
	uint32_t n = reader_u32(&r);
	for (uint32_t k = 0; k < n && !r.failed; k++) {
		uint32_t i = reader_u32(&r), at = reader_u32(&r);
		if (i >= nobs || at == 0 || at > ndirs)
			r.failed = 1;
		else
			out->obs_dir[i] = at;
	}
	if (r.failed || r.left) {
		dirfp_free(out);
		return -1;
	}
	return 0;
}

void dirfp_free(struct dirfp_set *set)
{
	for (size_t i = 0; i < set->ndirs; i++)
		free(set->dirs[i].dir);
	free(set->dirs);
	free(set->obs_dir);
	free(set->vals);
	free(set->val_lens);
	memset(set, 0, sizeof *set);
}

struct known_ctx {
	struct dirfp_set *set;
	size_t saved;
};

static int known_value(void *ctx, size_t i, const void **v, size_t *len)
{
	struct known_ctx *k = ctx;
	struct dirfp_set *set = k->set;
	if (i >= set->nobs || !set->obs_dir[i])
		return 0;
	struct dirfp *d = &set->dirs[set->obs_dir[i] - 1];
	if (d->state == 0) {
		struct stat st;
		struct file_id id;
		d->state = -1;
		if (stat(d->dir, &st) == 0) {
			file_id_from_stat(&st, &id);
			if (file_id_equal(&id, &d->id))
				d->state = 1;
		}
	}
	if (d->state < 0)
		return 0;
	*v = set->vals[i];
	*len = set->val_lens[i];
	k->saved++;
	return 1;
}

size_t dirfp_strong_key(struct dirfp_set *set, const struct pathset *ps, const struct step_bases *b,
                        const struct digest *weak, const struct digest *ps_digest,
                        struct digest_cache *dc, const void *values, size_t values_len,
                        struct digest *strong)
{
	struct known_ctx k = {set, 0};
	free(set->vals);
	free(set->val_lens);
	int usable = set->nobs == ps->nobs &&
	             split_values(values, values_len, ps->nobs, &set->vals, &set->val_lens) == 0;
	struct pathset_lookups lk = {.known = usable ? known_value : NULL, .known_ctx = &k};
	pathset_strong_key_known(ps, b, weak, ps_digest, dc, &lk, NULL, strong);
	return k.saved;
}
