#include "cachet/explain.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cachet/path.h"
#include "cachet/redact.h"

void explain_list_free(struct explain_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->items[i].subject);
		free(l->items[i].recorded);
		free(l->items[i].now);
		free(l->items[i].note);
		free(l->items[i].text);
	}
	free(l->items);
	memset(l, 0, sizeof *l);
}

static struct explain_item *add_item(struct explain_list *l, const char *what, const char *subject)
{
	if (l->n == l->alloc) {
		l->alloc = l->alloc ? l->alloc * 2 : 8;
		l->items = xrealloc(l->items, l->alloc * sizeof *l->items);
	}
	struct explain_item *it = &l->items[l->n++];
	memset(it, 0, sizeof *it);
	it->what = what;
	it->subject = xstrdup(subject);
	return it;
}

void explain_short_digest(const unsigned char *digest, struct buf *out)
{
	char s[DIGEST_SHORT_LEN + 1];
	digest_to_short_hex(digest, s);
	buf_addstr(out, s);
}

char *explain_display_path(const char *path, const char *cwd)
{
	if (cwd && strcmp(cwd, "/") != 0 && path_is_under(path, cwd) && strlen(path) > strlen(cwd))
		return xstrdup(path + strlen(cwd) + 1);
	return xstrdup(path);
}

/* ---- step differences ---- */

static char *shown_arg(char *const *argv, size_t i)
{
	return redact_arg(argv[i], i ? argv[i - 1] : NULL);
}

static size_t argc_of(char *const *argv)
{
	size_t n = 0;
	while (argv[n])
		n++;
	return n;
}

static void explain_argv(const struct step *now, const struct step *rec, struct explain_list *out)
{
	size_t nn = argc_of(now->argv), nr = argc_of(rec->argv);
	size_t p = 0;
	while (p < nn && p < nr && !strcmp(now->argv[p], rec->argv[p]))
		p++;
	if (p == nn && p == nr)
		return;
	/* A common suffix too: one side has elements the other lacks. */
	size_t s = 0;
	while (s < nn - p && s < nr - p && !strcmp(now->argv[nn - 1 - s], rec->argv[nr - 1 - s]))
		s++;
	char subject[32];
	snprintf(subject, sizeof subject, "argv[%zu]", p);
	struct explain_item *it = add_item(out, "argv differs", subject);
	if (nn != nr && (p + s == nn || p + s == nr)) {
		int added = nn > nr;
		char *const *v = added ? now->argv : rec->argv;
		char *shown = shown_arg(v, p);
		size_t extra = (added ? nn : nr) - p - s;
		it->recorded = added ? xstrdup("(none)") : xstrdup(shown);
		it->now = added ? xstrdup(shown) : xstrdup("(none)");
		it->text = xasprintf("argv[%zu]: %s %s%s", p, shown, added ? "added" : "removed",
				     extra > 1 ? " (and more)" : "");
		free(shown);
		return;
	}
	it->recorded = p < nr ? shown_arg(rec->argv, p) : xstrdup("(none)");
	it->now = p < nn ? shown_arg(now->argv, p) : xstrdup("(none)");
	it->text = xasprintf("argv[%zu]: %s → %s", p, it->recorded, it->now);
}

static size_t name_len(const char *entry)
{
	const char *eq = strchr(entry, '=');
	return eq ? (size_t)(eq - entry) : strlen(entry);
}

static char *shown_value(const char *entry)
{
	size_t n = name_len(entry);
	if (!entry[n])
		return xstrdup("");
	if (redact_is_secret_name(entry, n))
		return xstrdup("***");
	return xstrdup(entry + n + 1);
}

static void env_item(struct explain_list *out, const char *now, const char *rec)
{
	const char *any = now ? now : rec;
	size_t n = name_len(any);
	char *name = xstrndup(any, n);
	struct explain_item *it = add_item(out, "environment changed", name);
	it->recorded = rec ? shown_value(rec) : NULL;
	it->now = now ? shown_value(now) : NULL;
	if (rec && now)
		it->text = xasprintf("environment changed: %s=%s → %s", name, it->recorded, it->now);
	else if (now)
		it->text = xasprintf("environment changed: %s=%s (recorded unset)", name, it->now);
	else
		it->text = xasprintf("environment changed: %s unset (recorded %s=%s)", name, name,
				     it->recorded);
	free(name);
}

static void explain_env(const struct step *now, const struct step *rec, struct explain_list *out)
{
	/* Both lists are sorted by the whole "NAME=VALUE" string; compare names. */
	char *const *a = now->env, *const *b = rec->env;
	while (*a || *b) {
		int c;
		if (!*a)
			c = 1;
		else if (!*b)
			c = -1;
		else {
			size_t la = name_len(*a), lb = name_len(*b);
			c = strncmp(*a, *b, la < lb ? la : lb);
			if (!c)
				c = la < lb ? -1 : la > lb;
		}
		if (c == 0) {
			if (strcmp(*a, *b))
				env_item(out, *a, *b);
			a++, b++;
		} else if (c < 0) {
			env_item(out, *a++, NULL);
		} else {
			env_item(out, NULL, *b++);
		}
	}
}

size_t explain_steps(const struct step *now, const struct step *rec, struct explain_list *out)
{
	size_t before = out->n;
	explain_argv(now, rec, out);
	if (strcmp(now->cwd, rec->cwd)) {
		struct explain_item *it = add_item(out, "cwd differs", "cwd");
		it->recorded = xstrdup(rec->cwd);
		it->now = xstrdup(now->cwd);
		it->text = xasprintf("cwd: %s → %s", rec->cwd, now->cwd);
	}
	if (strcmp(now->exe, rec->exe) || !digest_equal(&now->exe_digest, &rec->exe_digest)) {
		struct explain_item *it = add_item(out, "executable changed", now->exe);
		struct buf r, n;
		buf_init(&r);
		buf_init(&n);
		buf_addf(&r, "%s sha256 ", rec->exe);
		explain_short_digest(rec->exe_digest.b, &r);
		buf_addf(&n, "%s sha256 ", now->exe);
		explain_short_digest(now->exe_digest.b, &n);
		it->recorded = buf_detach(&r, NULL);
		it->now = buf_detach(&n, NULL);
		it->text = xasprintf("executable changed: %s → %s", it->recorded, it->now);
	}
	explain_env(now, rec, out);
	if (strcmp(now->platform, rec->platform)) {
		struct explain_item *it = add_item(out, "platform changed", "platform");
		it->recorded = xstrdup(rec->platform);
		it->now = xstrdup(now->platform);
		it->text = xasprintf("platform changed: %s → %s", rec->platform, now->platform);
	}
	if (now->stdin_kind != rec->stdin_kind ||
	    (now->stdin_kind == STEP_STDIN_FILE && !digest_equal(&now->stdin_digest, &rec->stdin_digest))) {
		struct explain_item *it = add_item(out, "stdin changed", "stdin");
		it->text = xstrdup(now->stdin_kind == rec->stdin_kind
					   ? "stdin changed: the file on stdin has other content"
					   : "stdin changed: another kind of stdin (file, stream or none)");
	}
	return out->n - before;
}

/* ---- observation differences ---- */

static const void *value_at(struct reader *r, size_t *len)
{
	return reader_bytes(r, len);
}

static void describe(const void *v, size_t len, struct buf *out)
{
	observe_describe_value(v, len, out);
}

static int is_absent(const unsigned char *v, size_t len)
{
	if (len < 5 || v[0] != 'E')
		return 0;
	struct reader r;
	reader_init(&r, v + 1, 4);
	int err = (int)reader_u32(&r);
	return err == ENOENT || err == ENOTDIR;
}

/* The recorded listing of observation i, or NULL. */
static const unsigned char *recorded_listing(const struct result *res, size_t i, size_t *len)
{
	struct reader r;
	reader_init(&r, res->listings, res->listings_len);
	while (r.left && !r.failed) {
		uint32_t idx = reader_u32(&r);
		const unsigned char *l = reader_bytes(&r, len);
		if (idx == i)
			return l;
	}
	return NULL;
}

/* Names in listing a that are not in listing b, as "x, y" (bounded). */
static void listing_minus(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen,
			  struct buf *out)
{
	size_t shown = 0, more = 0;
	for (size_t i = 0; i + 1 < alen;) {
		const char *name = (const char *)a + i + 1;
		size_t nl = strnlen(name, alen - i - 1);
		int found = 0;
		for (size_t j = 0; j + 1 < blen && !found;) {
			const char *other = (const char *)b + j + 1;
			size_t ol = strnlen(other, blen - j - 1);
			found = ol == nl && !memcmp(name, other, nl);
			j += ol + 2;
		}
		if (!found) {
			if (shown < 10) {
				buf_addf(out, "%s%.*s", shown ? ", " : "", (int)nl, name);
				shown++;
			} else {
				more++;
			}
		}
		i += nl + 2;
	}
	if (more)
		buf_addf(out, " and %zu more", more);
}

static void listing_item(struct explain_item *it, const struct pathset *ps, size_t i,
			 const struct result *res, const char *path)
{
	size_t rlen = 0;
	const unsigned char *rl = recorded_listing(res, i, &rlen);
	struct buf value, now;
	buf_init(&value);
	buf_init(&now);
	const char **excluded = pathset_excluded(ps, i);
	observe_value_detail(OBS_LIST, ps->obs[i].flags, path, excluded, NULL, &value, &now);
	free(excluded);
	struct buf added, removed, note;
	buf_init(&added);
	buf_init(&removed);
	buf_init(&note);
	if (rl) {
		listing_minus((const unsigned char *)now.data, now.len, rl, rlen, &added);
		listing_minus(rl, rlen, (const unsigned char *)now.data, now.len, &removed);
	}
	if (added.len)
		buf_addf(&note, "added: %s", added.data);
	if (removed.len)
		buf_addf(&note, "%sremoved: %s", note.len ? "; " : "", removed.data);
	if (!note.len)
		buf_addstr(&note, "entries changed type");
	it->note = buf_detach(&note, NULL);
	buf_free(&added);
	buf_free(&removed);
	buf_free(&value);
	buf_free(&now);
}

static char *format_time(int64_t unix_seconds)
{
	char out[64];
	time_t t = (time_t)unix_seconds;
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(out, sizeof out, "%Y-%m-%d %H:%M", &tm);
	return xstrdup(out);
}

static void observation_item(const struct pathset *ps, size_t i, const struct result *res,
			     const unsigned char *rv, size_t rlen, const unsigned char *nv,
			     size_t nlen, const char *cwd, struct explain_list *out)
{
	const struct observation *o = &ps->obs[i];
	const char *path = ps->paths[o->path];
	char *shown = explain_display_path(path, cwd);
	struct buf r, n;
	buf_init(&r);
	buf_init(&n);
	describe(rv, rlen, &r);
	describe(nv, nlen, &n);
	char *when = format_time(res->created);
	struct explain_item *it;
	if (o->kind == OBS_CREATED) {
		/* Neither absent nor what the entry would restore: the step
		 * may decide by it (`[ -e f ] || cp`, `cp -n`, `mkdir`). */
		it = add_item(out, "path the step creates is in another state", shown);
		it->text = xasprintf("path the step creates is in another state: %s (%s → %s; "
				     "absent or the step's own output would do)",
				     shown, r.data, n.data);
	} else if (o->kind == OBS_LIST && !is_absent(rv, rlen) && !is_absent(nv, nlen)) {
		it = add_item(out, "directory listing changed", shown);
		listing_item(it, ps, i, res, path);
		it->text = xasprintf("directory listing changed: %s (%s)", shown, it->note);
	} else if (is_absent(rv, rlen) && !is_absent(nv, nlen)) {
		it = add_item(out, "path now exists", shown);
		it->text = xasprintf("path now exists: %s (recorded absent)", shown);
	} else if (!is_absent(rv, rlen) && is_absent(nv, nlen)) {
		it = add_item(out, "path now absent", shown);
		it->text = xasprintf("path now absent: %s (recorded %s)", shown, r.data);
	} else if (o->kind == OBS_READ || o->kind == OBS_EXEC) {
		it = add_item(out, o->kind == OBS_EXEC ? "program changed" : "input changed", shown);
		struct buf rs, ns;
		buf_init(&rs);
		buf_init(&ns);
		if (rlen >= 1 + DIGEST_LEN && (rv[0] == 'F' || rv[0] == 'X'))
			explain_short_digest(rv + 1, &rs);
		else
			buf_addstr(&rs, r.data);
		if (nlen >= 1 + DIGEST_LEN && (nv[0] == 'F' || nv[0] == 'X'))
			explain_short_digest(nv + 1, &ns);
		else
			buf_addstr(&ns, n.data);
		it->text = xasprintf("%s: %s\n      sha256 %s (recorded %s) → %s (now)", it->what, shown,
				     rs.data, when, ns.data);
		buf_free(&rs);
		buf_free(&ns);
	} else if (o->kind == OBS_BASE) {
		/* Not a file: the run's outputs name where its checkout lay. */
		it = add_item(out, "keyed on the real path", path);
		it->text = xasprintf("keyed on the real path: recorded %s, now %s%s%s%s", r.data,
				     n.data, res->pinned ? " (" : "", res->pinned ? res->pinned : "",
				     res->pinned ? ")" : "");
	} else if (o->kind == OBS_FACT) {
		/* Not a file: the host, ids, CPUs or limits the step asked for. */
		it = add_item(out, "process fact changed", path);
		it->text = xasprintf("process fact changed: %s (%s → %s)", path, r.data, n.data);
	} else if (o->kind == OBS_STAT && (o->flags & OBS_F_MTIME)) {
		/* Stat'ed, never read: the step may have decided by the time. */
		it = add_item(out, "file time changed", shown);
		it->text = xasprintf("file time changed: %s (%s → %s)", shown, r.data, n.data);
	} else if (o->kind == OBS_READLINK) {
		it = add_item(out, "symlink changed", shown);
		it->text = xasprintf("symlink changed: %s (%s → %s)", shown, r.data, n.data);
	} else {
		it = add_item(out, "path changed", shown);
		it->text = xasprintf("path changed: %s (%s → %s)", shown, r.data, n.data);
	}
	it->recorded = buf_detach(&r, NULL);
	it->now = buf_detach(&n, NULL);
	free(when);
	free(shown);
}

size_t explain_pathset(const struct pathset *ps, const struct result *recorded,
		       const void *now_values, size_t now_len, const char *cwd, int all,
		       struct explain_list *out)
{
	struct reader rr, nr;
	reader_init(&rr, recorded->values, recorded->values_len);
	reader_init(&nr, now_values, now_len);
	size_t differ = 0;
	for (size_t i = 0; i < ps->nobs; i++) {
		size_t rlen, nlen;
		const unsigned char *rv = value_at(&rr, &rlen);
		const unsigned char *nv = value_at(&nr, &nlen);
		if (!rv || !nv)
			return SIZE_MAX;
		if (rlen == nlen && !memcmp(rv, nv, rlen))
			continue;
		if (differ == 0 || all)
			observation_item(ps, i, recorded, rv, rlen, nv, nlen, cwd, out);
		differ++;
	}
	if (rr.left || nr.left)
		return SIZE_MAX;
	return differ;
}
