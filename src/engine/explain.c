#include "cachet/explain.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cachet/array.h"
#include "cachet/path.h"
#include "cachet/redact.h"
#include "cachet/strv.h"

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
	ARRAY_RESERVE(l->items, l->alloc, l->n + 1, 8);
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
	return redact_argv(argv, i);
}

/* Past this many cells, the edit distance between the differing middles of
 * two argvs is not computed (a link line of thousands of objects): each
 * element of the longer middle counts as one edit. */
#define ARGV_ALIGN_MAX_CELLS (1u << 20)

/* The differing middle of two argvs, after their common prefix and suffix. */
struct argv_middle {
	size_t p;      /* common prefix */
	size_t nn, nr; /* lengths of the middles (now, recorded) */
};

static struct argv_middle argv_middle(char *const *now, size_t nn, char *const *rec, size_t nr)
{
	struct argv_middle m = {0};
	while (m.p < nn && m.p < nr && !strcmp(now[m.p], rec[m.p]))
		m.p++;
	size_t s = 0;
	while (s < nn - m.p && s < nr - m.p && !strcmp(now[nn - 1 - s], rec[nr - 1 - s]))
		s++;
	m.nn = nn - m.p - s;
	m.nr = nr - m.p - s;
	return m;
}

/* The edit table of the middles: d[i][j] edits turn rec[p..p+j) into
 * now[p..p+i). NULL when it would be too large. */
static size_t *argv_edit_table(char *const *now, char *const *rec, struct argv_middle m)
{
	size_t cols = m.nr + 1;
	if ((m.nn + 1) > ARGV_ALIGN_MAX_CELLS / cols)
		return NULL;
	size_t *d = xcalloc((m.nn + 1) * cols, sizeof *d);
	for (size_t i = 0; i <= m.nn; i++)
		d[i * cols] = i;
	for (size_t j = 0; j <= m.nr; j++)
		d[j] = j;
	for (size_t i = 1; i <= m.nn; i++)
		for (size_t j = 1; j <= m.nr; j++) {
			size_t sub = d[(i - 1) * cols + j - 1] +
			             (strcmp(now[m.p + i - 1], rec[m.p + j - 1]) != 0);
			size_t del = d[i * cols + j - 1] + 1, ins = d[(i - 1) * cols + j] + 1;
			size_t best = sub < del ? sub : del;
			d[i * cols + j] = best < ins ? best : ins;
		}
	return d;
}

static size_t argv_distance(char *const *now, char *const *rec)
{
	struct argv_middle m = argv_middle(now, strv_len(now), rec, strv_len(rec));
	if (!m.nn || !m.nr)
		return m.nn + m.nr;
	size_t *d = argv_edit_table(now, rec, m);
	if (!d)
		return m.nn > m.nr ? m.nn : m.nr;
	size_t dist = d[m.nn * (m.nr + 1) + m.nr];
	free(d);
	return dist;
}

static void argv_item(struct explain_list *out, char *const *now, size_t i, char *const *rec,
                      size_t j, int op)
{
	char subject[32];
	snprintf(subject, sizeof subject, "argv[%zu]", op == '-' ? j : i);
	struct explain_item *it = add_item(out, "argv differs", subject);
	it->recorded = op == '+' ? xstrdup("(none)") : shown_arg(rec, j);
	it->now = op == '-' ? xstrdup("(none)") : shown_arg(now, i);
	if (op == '+')
		it->text = xasprintf("%s: %s added", subject, it->now);
	else if (op == '-')
		it->text = xasprintf("%s: %s removed", subject, it->recorded);
	else
		it->text = xasprintf("%s: %s → %s", subject, it->recorded, it->now);
}

/* Two argv elements alike enough to read as one replaced: the same option
 * letter (-O2, -O3), or the same file name with other directories. */
static int alike(const char *a, const char *b)
{
	if (a[0] == '-' && b[0] == '-')
		return a[1] && a[1] == b[1];
	return !strcmp(path_basename(a), path_basename(b)) || (a[0] && a[0] == b[0]);
}

/* Every element added, removed or replaced, in argv order: the fewest edits
 * that turn the recorded argv into this one. */
static void explain_argv(const struct step *now, const struct step *rec, struct explain_list *out)
{
	struct argv_middle m =
	    argv_middle(now->argv, strv_len(now->argv), rec->argv, strv_len(rec->argv));
	if (!m.nn && !m.nr)
		return;
	size_t *d = argv_edit_table(now->argv, rec->argv, m);
	size_t cols = m.nr + 1, i = m.nn, j = m.nr;
	/* The edits come out last first; a table too large pairs the middles
	 * element by element. */
	size_t cap = m.nn + m.nr, k = 0;
	struct {
		size_t i, j;
		int op;
	} *ed = xcalloc(cap ? cap : 1, sizeof *ed);
	while (i || j) {
		int op;
		if (!d)
			op = i && j && i == j
			         ? (strcmp(now->argv[m.p + i - 1], rec->argv[m.p + j - 1]) ? '~'
			                                                                   : '=')
			     : i > j ? '+'
			             : '-';
		else {
			const char *a = i ? now->argv[m.p + i - 1] : NULL;
			const char *b = j ? rec->argv[m.p + j - 1] : NULL;
			int same = a && b && !strcmp(a, b);
			int sub = a && b && d[i * cols + j] == d[(i - 1) * cols + j - 1] + !same;
			int ins = i && d[i * cols + j] == d[(i - 1) * cols + j] + 1;
			int del = j && d[i * cols + j] == d[i * cols + j - 1] + 1;
			/* Of equally few edits, a replacement reads best between
			 * alike elements (-O2 → -O3), else an addition or removal
			 * (-g added rather than -O2 → -g). */
			if (sub && (same || alike(a, b) || (!ins && !del)))
				op = same ? '=' : '~';
			else if (ins)
				op = '+';
			else
				op = '-';
		}
		if (op != '=') {
			ed[k].i = m.p + i - (i > 0);
			ed[k].j = m.p + j - (j > 0);
			ed[k].op = op;
			k++;
		}
		if (op != '-')
			i--;
		if (op != '+')
			j--;
	}
	while (k--)
		argv_item(out, now->argv, ed[k].i, rec->argv, ed[k].j, ed[k].op);
	free(ed);
	free(d);
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

/* Values longer than this are shortened in the one-line text (a PATH or
 * CFLAGS of thousands of characters would bury the finding); recorded and
 * now keep them whole. */
#define ENV_TEXT_MAX     120
#define ENV_TEXT_CONTEXT 40

/* value as the text shows it: whole when short, else the part around
 * offset at (where it first differs from the other value) with how long it
 * is. malloc'd. */
static char *text_value(const char *value, size_t at)
{
	size_t len = strlen(value);
	if (len <= ENV_TEXT_MAX)
		return xstrdup(value);
	size_t from = at > ENV_TEXT_CONTEXT ? at - ENV_TEXT_CONTEXT : 0;
	if (from + 2 * ENV_TEXT_CONTEXT > len)
		from = len - 2 * ENV_TEXT_CONTEXT;
	size_t n = 2 * ENV_TEXT_CONTEXT;
	return xasprintf("%s%.*s%s (%zu characters)", from ? "…" : "", (int)n, value + from,
	                 from + n < len ? "…" : "", len);
}

static void env_item(struct explain_list *out, const char *now, const char *rec)
{
	const char *any = now ? now : rec;
	size_t n = name_len(any);
	char *name = xstrndup(any, n);
	struct explain_item *it = add_item(out, "environment changed", name);
	it->recorded = rec ? shown_value(rec) : NULL;
	it->now = now ? shown_value(now) : NULL;
	size_t at = 0;
	if (rec && now)
		while (it->recorded[at] && it->recorded[at] == it->now[at])
			at++;
	char *r = rec ? text_value(it->recorded, at) : NULL;
	char *v = now ? text_value(it->now, at) : NULL;
	if (rec && now)
		it->text = xasprintf("environment changed: %s=%s → %s", name, r, v);
	else if (now)
		it->text = xasprintf("environment changed: %s=%s (recorded unset)", name, v);
	else
		it->text =
		    xasprintf("environment changed: %s unset (recorded %s=%s)", name, name, r);
	free(r);
	free(v);
	free(name);
}

/* The order of two entries of sorted environments by name (a NULL entry,
 * past the end of its list, comes last). */
static int env_order(const char *a, const char *b)
{
	if (!a || !b)
		return !a - !b;
	size_t la = name_len(a), lb = name_len(b);
	int c = strncmp(a, b, la < lb ? la : lb);
	return c ? c : la < lb ? -1 : la > lb;
}

static void explain_env(const struct step *now, const struct step *rec, struct explain_list *out)
{
	/* Both lists are sorted by the whole "NAME=VALUE" string; compare names. */
	char *const *a = now->env, *const *b = rec->env;
	while (*a || *b) {
		int c = env_order(*a, *b);
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

/* How many environment entries differ (set on one side only, or to another
 * value). */
static size_t env_distance(char *const *a, char *const *b)
{
	size_t d = 0;
	while (*a || *b) {
		int c = env_order(*a, *b);
		if (c != 0 || strcmp(*a, *b))
			d++;
		if (c <= 0)
			a++;
		if (c >= 0)
			b++;
	}
	return d;
}

size_t explain_step_distance(const struct step *now, const struct step *rec)
{
	return argv_distance(now->argv, rec->argv) + env_distance(now->env, rec->env) +
	       (strcmp(now->cwd, rec->cwd) != 0) + (strcmp(now->exe, rec->exe) != 0) +
	       !digest_equal(&now->exe_digest, &rec->exe_digest) +
	       (strcmp(now->platform, rec->platform) != 0) + (now->terminal != rec->terminal) +
	       (now->colour != rec->colour);
}

/* "a terminal on stdout and stderr (TERM=xterm)", "pipes" (malloc'd). */
static char *terminal_text(const struct step *s)
{
	if (s->colour)
		return xstrdup("any (cachet colours the compiler's diagnostics itself)");
	if (!s->terminal)
		return xstrdup("no terminal");
	const char *which = s->terminal == (STEP_TTY_STDOUT | STEP_TTY_STDERR) ? "stdout and stderr"
	                    : s->terminal & STEP_TTY_STDOUT                    ? "stdout"
	                                                                       : "stderr";
	return xasprintf("a terminal on %s (TERM=%s)", which, s->term ? s->term : "");
}

/* The terminal fact is keyed for a program whose colours cachet cannot
 * undo: a build in a terminal and the same build through `| tee` differ
 * in it alone. */
static void explain_terminal(const struct step *now, const struct step *rec,
                             struct explain_list *out)
{
	int same_term = !now->term == !rec->term && (!now->term || !strcmp(now->term, rec->term));
	if (now->colour == rec->colour && now->terminal == rec->terminal && same_term)
		return;
	struct explain_item *it = add_item(out, "terminal differs", "terminal");
	it->recorded = terminal_text(rec);
	it->now = terminal_text(now);
	it->text = xasprintf("terminal differs: %s → %s (a program may print other things to a "
	                     "terminal, so the fact is keyed; color = never gives it pipes)",
	                     it->recorded, it->now);
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
		char rh[DIGEST_HEX_LEN + 1], nh[DIGEST_HEX_LEN + 1];
		digest_to_hex(&rec->exe_digest, rh);
		digest_to_hex(&now->exe_digest, nh);
		it->recorded = xasprintf("%s sha256 %s", rec->exe, rh);
		it->now = xasprintf("%s sha256 %s", now->exe, nh);
		buf_addf(&r, "%s sha256 ", rec->exe);
		explain_short_digest(rec->exe_digest.b, &r);
		buf_addf(&n, "%s sha256 ", now->exe);
		explain_short_digest(now->exe_digest.b, &n);
		it->text = xasprintf("executable changed: %s → %s", r.data, n.data);
		buf_free(&r);
		buf_free(&n);
	}
	explain_env(now, rec, out);
	explain_terminal(now, rec, out);
	if (strcmp(now->platform, rec->platform)) {
		struct explain_item *it = add_item(out, "platform changed", "platform");
		it->recorded = xstrdup(rec->platform);
		it->now = xstrdup(now->platform);
		it->text = xasprintf("platform changed: %s → %s", rec->platform, now->platform);
	}
	if (now->stdin_kind != rec->stdin_kind ||
	    (now->stdin_kind == STEP_STDIN_FILE &&
	     !digest_equal(&now->stdin_digest, &rec->stdin_digest))) {
		struct explain_item *it = add_item(out, "stdin changed", "stdin");
		it->text =
		    xstrdup(now->stdin_kind == rec->stdin_kind
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

/* As describe, but a digest whole: what --json gives. */
static void describe_whole(const unsigned char *v, size_t len, struct buf *out)
{
	if (len >= 1 + DIGEST_LEN && (v[0] == 'F' || v[0] == 'X' || v[0] == 'L')) {
		struct digest d;
		char hex[DIGEST_HEX_LEN + 1];
		memcpy(d.b, v + 1, DIGEST_LEN);
		digest_to_hex(&d, hex);
		buf_addf(out, "%s %s", v[0] == 'L' ? "listing" : "sha256", hex);
		if (v[0] == 'X' && len >= 1 + DIGEST_LEN + 2)
			buf_addf(out, " mode %04o", v[1 + DIGEST_LEN] | v[2 + DIGEST_LEN] << 8);
		return;
	}
	describe(v, len, out);
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
		                     "absent or an output of this cache there would do)",
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
		it =
		    add_item(out, o->kind == OBS_EXEC ? "program changed" : "input changed", shown);
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
		it->text = xasprintf("%s: %s\n      sha256 %s (recorded %s) → %s (now)", it->what,
		                     shown, rs.data, when, ns.data);
		buf_free(&rs);
		buf_free(&ns);
	} else if (o->kind == OBS_BASE) {
		/* Not a file: the run's outputs name where its checkout lay. */
		it = add_item(out, "keyed on the real path", path);
		it->text = xasprintf("keyed on the real path: recorded %s, now %s%s%s%s", r.data,
		                     n.data, res->pinned ? " (" : "",
		                     res->pinned ? res->pinned : "", res->pinned ? ")" : "");
	} else if (o->kind == OBS_XATTR) {
		it = add_item(out, "extended attributes changed", shown);
		it->text =
		    xasprintf("extended attributes changed: %s (%s → %s)", shown, r.data, n.data);
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
	buf_reset(&r);
	buf_reset(&n);
	describe_whole(rv, rlen, &r);
	describe_whole(nv, nlen, &n);
	it->recorded = buf_detach(&r, NULL);
	it->now = buf_detach(&n, NULL);
	free(when);
	free(shown);
}

/* 1 when the path is the user's: below the step's cwd (not "/") or a base. */
static int is_users(const char *path, const char *cwd, const struct step_bases *b)
{
	if (cwd && strcmp(cwd, "/") && path_is_under(path, cwd))
		return 1;
	for (int i = 0; b && i < STEP_MAX_BASES; i++)
		if (b->dir[i] && path_is_under(path, b->dir[i]))
			return 1;
	return 0;
}

size_t explain_pathset(const struct pathset *ps, const struct result *recorded,
                       const void *now_values, size_t now_len, const char *cwd,
                       const struct step_bases *bases, int all, struct explain_list *out)
{
	struct reader rr, nr;
	reader_init(&rr, recorded->values, recorded->values_len);
	reader_init(&nr, now_values, now_len);
	/* The differences under the step's cwd and bases come first: the
	 * user's runlist.txt tells more than /etc/ld.so.cache. */
	struct explain_list users = {0}, system = {0};
	size_t differ = 0;
	for (size_t i = 0; i < ps->nobs; i++) {
		size_t rlen, nlen;
		const unsigned char *rv = value_at(&rr, &rlen);
		const unsigned char *nv = value_at(&nr, &nlen);
		if (!rv || !nv) {
			differ = SIZE_MAX;
			break;
		}
		if (rlen == nlen && !memcmp(rv, nv, rlen))
			continue;
		int mine = is_users(ps->paths[ps->obs[i].path], cwd, bases);
		struct explain_list *to = mine ? &users : &system;
		if (all || (mine ? users.n == 0 : system.n == 0))
			observation_item(ps, i, recorded, rv, rlen, nv, nlen, cwd, to);
		differ++;
	}
	if (differ != SIZE_MAX && (rr.left || nr.left))
		differ = SIZE_MAX;
	if (differ != SIZE_MAX) {
		for (size_t k = 0; k < users.n + system.n; k++) {
			if (!all && k)
				break;
			struct explain_item *from =
			    k < users.n ? &users.items[k] : &system.items[k - users.n];
			struct explain_item *it = add_item(out, from->what, "");
			free(it->subject);
			*it = *from;
			memset(from, 0, sizeof *from);
		}
	}
	explain_list_free(&users);
	explain_list_free(&system);
	return differ;
}
