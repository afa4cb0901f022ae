/*
 * Syscall stops -> events. syscall_entry runs at the seccomp stop, before
 * the kernel executes the call: it reads the arguments, resolves paths as
 * the tracee would, records changes (TRACE_TOUCH must describe the state
 * before the call) and decides whether the exit stop is worth its cost.
 * syscall_exit records outcomes (errno, the descriptor an open returned).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "cachet/digest.h"
#include "cachet/fdio.h"
#include "cachet/ldcache.h"
#include "cachet/observe.h"
#include "cachet/path.h"
#include "trace/classify.h"
#include "trace/dirorder.h"
#include "trace/ring.h"
#include "trace/seccomp_filter.h"
#include "trace/exec_image.h"
#include "trace/tracer.h"

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif

/* ---- paths ---------------------------------------------------------- */

static const char *const always_ignored[] = {"/proc", "/sys"};

/* Cuts path (in place) to its parent directory; 0 at the root. */
static int cut_to_parent(char *path)
{
	char *slash = strrchr(path, '/');
	if (!slash || slash == path)
		return 0;
	*slash = '\0';
	return 1;
}

/* Under /dev, devices are ignored by what they are, not by where: a device
 * node, FIFO or socket (/dev/null, /dev/tty, /dev/log), and whatever lies
 * on /dev's own file system (devtmpfs: its entries, and the absence of a
 * device another host has), are not files of the step. A file system
 * mounted below /dev (the tmpfs at /dev/shm, where people build for speed)
 * holds ordinary files, inputs and outputs as anywhere else, except at its
 * top: a non-directory there is an IPC object (shm_open, sem_open and
 * mq_open names have no '/'; libfaketime and Python's multiprocessing make
 * them with names of their pid), not a file of a build. */
static int is_device(struct tracer *tr, const char *path)
{
	if (path[0] != '/' || path[1] != 'd' || !path_is_under(path, "/dev"))
		return 0;
	struct stat st;
	if (!tr->dev_fs) {
		if (stat("/dev", &st) < 0)
			return 1;
		tr->dev_fs = st.st_dev;
	}
	char dir[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof dir)
		return 1;
	memcpy(dir, path, n + 1);
	int exists = stat(path, &st) == 0;
	if (exists && (st.st_dev == tr->dev_fs || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))))
		return 1;
	if (exists && S_ISDIR(st.st_mode))
		return 0;
	/* A file, or absent: where its directory lies decides (for an absent
	 * path, the nearest directory that exists). */
	struct stat parent;
	int depth = 0;
	do {
		if (!cut_to_parent(dir))
			return 1;
		depth++;
	} while (stat(dir, &parent) < 0);
	if (parent.st_dev == tr->dev_fs)
		return 1;
	if (depth > 1)
		return 0;
	/* Directly in a directory on another file system: is that directory
	 * the top of it? */
	struct stat above;
	return !cut_to_parent(dir) || stat(dir, &above) < 0 || above.st_dev != parent.st_dev;
}

static int is_ignored(struct tracer *tr, const char *path)
{
	/* The fixed roots ("/x..."), by their second byte first: this runs
	 * for every path recorded. */
	for (size_t i = 0; path[0] && i < sizeof always_ignored / sizeof always_ignored[0]; i++)
		if (path[1] == always_ignored[i][1] && path_is_under(path, always_ignored[i]))
			return 1;
	if (is_device(tr, path))
		return 1;
	/* The preload and audit libraries are the tracer's instruments, not
	 * the step's inputs: keys must not change with cachet's own build. */
	if ((tr->preload_path && strcmp(path, tr->preload_path) == 0) ||
	    (tr->audit_path && strcmp(path, tr->audit_path) == 0))
		return 1;
	const char *const *roots = tr->spec->ignore_roots;
	for (size_t i = 0; roots && roots[i]; i++)
		if (path_is_under(path, roots[i]))
			return 1;
	return 0;
}

/* The tracee's cwd, re-read from /proc only after some chdir. */
static const char *cwd_of(struct tracer *tr, struct tracee *t)
{
	if (t->cwd_gen == tr->cwd_gen && t->cwd[0] == '/')
		return t->cwd;
	if (tracee_fd_path(t->tid, -1, t->cwd, sizeof t->cwd) < 0 || t->cwd[0] != '/') {
		/* A stopped tracee has a cwd (a removed one reads "/x
		 * (deleted)"): not to read it, as when /proc is gone from
		 * under the tracer, is not to see where its relative paths
		 * lead. */
		tracer_mark_uncacheable(tr, "cwd unreadable");
		t->cwd[0] = '\0';
		t->cwd_gen = 0;
		return NULL;
	}
	t->cwd_gen = tr->cwd_gen;
	return t->cwd;
}

/* out = base "/" rel (rel alone when absolute or base is NULL), tidied. */
static int join(char *out, const char *base, const char *rel)
{
	size_t b = base && rel[0] != '/' ? strlen(base) : 0, r = strlen(rel);
	if (b + r + 2 > TRACE_PATHBUF)
		return -1;
	if (b) {
		memcpy(out, base, b);
		out[b] = '/';
		memcpy(out + b + 1, rel, r + 1);
	} else {
		memcpy(out, rel, r + 1);
	}
	path_tidy(out);
	return 0;
}

/* Maps descriptor and cwd magic links (/proc/self/fd/N, /dev/fd/N,
 * /proc/self/cwd/...) to what they point at in the tracee, then applies the
 * ignored roots. Returns 1 to record, 0 for an ignored path (still in
 * path), -1 when nothing sensible is named (a pipe, a closed descriptor). */
static int demagic(struct tracer *tr, struct tracee *t, char *path, int follow_last)
{
	struct magic_ref m;
	classify_magic_path(path, &m);
	/* The tracer's own descriptors (the preload library opens the ring
	 * through /proc/TRACER/fd/N) are none of the step's business. */
	if (m.kind == MAGIC_FD && m.pid == tr->self_pid)
		return 0;
	/* Without follow, a bare magic link is the link itself, under /proc
	 * or /dev: ignored below. */
	if (m.kind != MAGIC_NONE && (m.rest[0] || follow_last)) {
		pid_t pid = m.pid ? m.pid : t->tid;
		int fd = m.kind == MAGIC_FD     ? m.fd
		         : m.kind == MAGIC_ROOT ? TRACEE_FD_ROOT
		                                : TRACEE_FD_CWD;
		if (tracee_fd_path(pid, fd, tr->tmp, sizeof tr->tmp) < 0 || tr->tmp[0] != '/')
			return -1;
		size_t a = strlen(tr->tmp), b = strlen(m.rest);
		/* A root of "/" adds nothing before the rest. */
		if (a == 1 && b)
			a = 0;
		if (a + b + 1 > TRACE_PATHBUF)
			return -1;
		memcpy(tr->tmp2, tr->tmp, a);
		memcpy(tr->tmp2 + a, m.rest, b + 1);
		memcpy(path, tr->tmp2, a + b + 1);
		path_tidy(path);
	}
	return is_ignored(tr, path) ? 0 : 1;
}

/* Resolves (dirfd, raw) the way the tracee's lookup starts: against its cwd
 * or the directory dirfd names. Result in out (never tr->tmp/tmp2);
 * return value as for demagic. */
static int resolve_at(struct tracer *tr, struct tracee *t, int dirfd, const char *raw,
                      int follow_last, char *out)
{
	const char *base = NULL;
	if (raw[0] != '/') {
		if (dirfd == AT_FDCWD) {
			base = cwd_of(tr, t);
		} else if (tracee_fd_path(t->tid, dirfd, tr->tmp, sizeof tr->tmp) == 0) {
			base = tr->tmp;
		}
		/* A deleted directory's link reads "/x (deleted)": lookups in it
		 * fail anyway, and recording the text is harmless. */
		if (!base || base[0] != '/')
			return -1;
	}
	if (join(out, base, raw) < 0)
		return -1;
	return demagic(tr, t, out, follow_last);
}

/* The file a descriptor of the tracee refers to. */
static int fd_target(struct tracer *tr, struct tracee *t, int fd, char *out)
{
	if (tracee_fd_path(t->tid, fd, out, TRACE_PATHBUF) < 0 || out[0] != '/')
		return -1;
	return is_ignored(tr, out) ? 0 : 1;
}

static void emit_link(struct tracer *tr, struct tracee *t, const char *path, const char *target,
                      size_t n);

/* Replaces path by the file that its final-component symlinks lead to: an
 * open without O_NOFOLLOW writes (or creates) the target, and the target is
 * the output. Each link crossed is keyed (a READLINK): retargeted, it sends
 * the write elsewhere, which a hit restoring the old target would not.
 * Same return values as demagic. */
static int follow_final(struct tracer *tr, struct tracee *t, char *path)
{
	for (int i = 0; i < 40; i++) {
		struct stat st;
		if (lstat(path, &st) < 0 || !S_ISLNK(st.st_mode))
			break;
		ssize_t n = readlink(path, tr->tmp, sizeof tr->tmp - 1);
		if (n <= 0)
			break;
		tr->tmp[n] = '\0';
		emit_link(tr, t, path, tr->tmp, (size_t)n);
		if (tr->tmp[0] == '/') {
			memcpy(tr->tmp2, tr->tmp, (size_t)n + 1);
		} else {
			const char *slash = strrchr(path, '/');
			size_t d = slash ? (size_t)(slash - path) : 0;
			if (d + (size_t)n + 2 > TRACE_PATHBUF)
				return -1;
			memcpy(tr->tmp2, path, d);
			tr->tmp2[d] = '/';
			memcpy(tr->tmp2 + d + 1, tr->tmp, (size_t)n + 1);
		}
		strcpy(path, tr->tmp2);
		path_tidy(path);
	}
	return is_ignored(tr, path) ? 0 : 1;
}

static int read_str(struct tracee *t, uint64_t addr, char *out)
{
	if (!addr)
		return -1;
	if (t->rec_str) {
		size_t n = strnlen(t->rec_str, PATH_MAX);
		if (n >= PATH_MAX)
			return -1;
		memcpy(out, t->rec_str, n + 1);
		return 0;
	}
	return tracee_read_string(t->tid, addr, out, PATH_MAX);
}

/* ---- events --------------------------------------------------------- */

static void emit(struct tracer *tr, struct tracee *t, enum trace_event_kind kind, unsigned flags,
                 int err, const char *path, const struct stat *st)
{
	struct trace_event ev;
	memset(&ev, 0, sizeof ev);
	ev.kind = kind;
	ev.flags = flags;
	ev.err = err;
	ev.pid = t->tid;
	ev.path = (char *)path;
	if (st)
		file_id_from_stat(st, &ev.id);
	const struct trace_spec *spec = tr->spec;
	if (event_log_add(&tr->log, &ev) && spec->on_input && st && S_ISREG(st->st_mode) &&
	    (kind == TRACE_READ || kind == TRACE_EXEC) &&
	    (uint64_t)st->st_size >= spec->on_input_min_size)
		spec->on_input(spec->on_input_ctx, path, (uint64_t)st->st_size);
}

/* The step read stdin, /dev/null, or made a copy of it (whose reads are
 * not watched): what it read is the same every time, as long as stdin is
 * /dev/null. Keyed as a fact, so that a step that read nothing from
 * /dev/null is no answer when stdin is a pipe or terminal (which hold
 * data), while a step that never reads stdin keys nothing of it. */
static void stdin_null_used(struct tracer *tr, struct tracee *t)
{
	if (tr->stdin_fact_made)
		return;
	tr->stdin_fact_made = 1;
	emit(tr, t, TRACE_FACT, 0, 0, TRACE_FACT_STDIN, NULL);
}

/* A PROBE that found the path: st is what the lookup found (NULL when not
 * known), whose type, permission bits and size src/key keys and checks. */
static void emit_found(struct tracer *tr, struct tracee *t, unsigned flags, const char *path,
                       const struct stat *st)
{
	struct trace_event ev;
	memset(&ev, 0, sizeof ev);
	ev.kind = TRACE_PROBE;
	ev.flags = flags;
	ev.pid = t->tid;
	ev.path = (char *)path;
	if (st) {
		file_id_from_stat(st, &ev.id);
		ev.has_seen = 1;
	}
	event_log_add(&tr->log, &ev);
}

/* A READLINK of path that found target (n bytes), unless path is ignored. */
static void emit_link(struct tracer *tr, struct tracee *t, const char *path, const char *target,
                      size_t n)
{
	if (is_ignored(tr, path))
		return;
	struct trace_event ev;
	memset(&ev, 0, sizeof ev);
	ev.kind = TRACE_READLINK;
	ev.flags = TRACE_F_NOFOLLOW;
	ev.pid = t->tid;
	ev.path = (char *)path;
	digest_bytes(target, n, &ev.seen);
	ev.has_seen = 1;
	event_log_add(&tr->log, &ev);
}

/* Cuts cur (len bytes, "" for the root) to its parent; the new length. */
static size_t parent_len(char *cur, size_t len)
{
	while (len > 0 && cur[len - 1] != '/')
		len--;
	if (len > 0)
		len--;
	cur[len] = '\0';
	return len;
}

/* Keys every symlink that the lookup of path (absolute, as the step named
 * it) crosses, the final ones included, by a READLINK of each. For the
 * lookups after which the step works from where the name led rather than
 * from the name: a chdir (later lookups are recorded at the physical cwd),
 * an exec (/proc/self/exe and $ORIGIN are the resolved program's) and a
 * directory opened as a base for *at calls. Without them, `build ->
 * build-debug` retargeted to build-release would still hit. One lstat per
 * component, for these few lookups only; nothing is recorded where no
 * symlink is crossed. Resolves as the kernel does: ".." applies to the
 * directory reached so far. */
static void key_links_crossed(struct tracer *tr, struct tracee *t, const char *path)
{
	char cur[PATH_MAX], rest[PATH_MAX], target[PATH_MAX];
	size_t len = 0, restlen = strlen(path);
	if (path[0] != '/' || restlen >= sizeof rest)
		return;
	memcpy(rest, path, restlen + 1);
	cur[0] = '\0';
	const char *r = rest;
	for (int links = 0;;) {
		while (*r == '/')
			r++;
		if (!*r)
			return;
		const char *end = strchrnul(r, '/');
		size_t clen = (size_t)(end - r);
		if (clen == 1 && r[0] == '.') {
			r = end;
			continue;
		}
		if (clen == 2 && r[0] == '.' && r[1] == '.') {
			len = parent_len(cur, len);
			r = end;
			continue;
		}
		if (len + 1 + clen >= sizeof cur)
			return;
		cur[len] = '/';
		memcpy(cur + len + 1, r, clen);
		len += 1 + clen;
		cur[len] = '\0';
		r = end;
		struct stat st;
		if (lstat(cur, &st) < 0)
			return;
		if (!S_ISLNK(st.st_mode))
			continue;
		ssize_t n = readlink(cur, target, sizeof target - 1);
		if (n <= 0 || ++links > 40)
			return;
		target[n] = '\0';
		emit_link(tr, t, cur, target, (size_t)n);
		/* The rest of the name now follows the target. */
		size_t left = strlen(r);
		if ((size_t)n + left + 1 >= sizeof rest)
			return;
		memmove(rest + n, r, left + 1);
		memcpy(rest, target, (size_t)n);
		r = rest;
		len = target[0] == '/' ? 0 : parent_len(cur, len);
		cur[len] = '\0';
	}
}

/* An open of a directory: its descriptor can be the base of *at lookups,
 * which are recorded at the directory's physical path. */
static void key_dir_base(struct tracer *tr, struct tracee *t, const struct stat *st)
{
	if (S_ISDIR(st->st_mode))
		key_links_crossed(tr, t, t->p.path);
}

/* The stat a preload record's call reported (ring.h), as a struct stat
 * with the fields file_id_from_stat reads. 0, or -1 when it has none. */
static int reported_stat(const struct ring_result *r, struct stat *st)
{
	if (!(r->flags & RING_RES_STAT))
		return -1;
	memset(st, 0, sizeof *st);
	st->st_mode = r->mode;
	st->st_dev = (dev_t)r->dev;
	st->st_ino = (ino_t)r->ino;
	st->st_size = (off_t)r->size;
	st->st_mtim.tv_sec = r->mtime_ns / 1000000000;
	st->st_mtim.tv_nsec = r->mtime_ns % 1000000000;
	st->st_ctim.tv_sec = r->ctime_ns / 1000000000;
	st->st_ctim.tv_nsec = r->ctime_ns % 1000000000;
	return 0;
}

/* The errno of a raw syscall return, 0 for success. */
static int rv_errno(int64_t rv)
{
	return rv < 0 && rv > -4096 ? (int)-rv : 0;
}

/* The first change of path. keeps_content: the call leaves the old bytes
 * in place or moves them elsewhere (append, chmod, rename's source...), so
 * the output depends on them: they are read, and hashed now, while they
 * still exist. how: TRACE_CHANGE_MOVES for a rename that moves path away,
 * which the before_change callback hears of even after the first change. */
static void touch_flags(struct tracer *tr, struct tracee *t, const char *path, int keeps_content,
                        unsigned how, unsigned flags)
{
	const struct trace_spec *sp = tr->spec;
	if (event_log_was_touched(&tr->log, path)) {
		if ((how & TRACE_CHANGE_MOVES) && sp->before_change)
			sp->before_change(sp->before_change_ctx, path, how);
		return;
	}
	if (sp->before_change)
		sp->before_change(sp->before_change_ctx, path,
		                  how | (keeps_content ? TRACE_CHANGE_KEEPS : 0));
	struct trace_event ev;
	memset(&ev, 0, sizeof ev);
	ev.kind = TRACE_TOUCH;
	ev.flags = flags;
	ev.pid = t->tid;
	ev.path = (char *)path;
	struct stat st;
	if (lstat(path, &st) == 0) {
		ev.pre_exists = 1;
		file_id_from_stat(&st, &ev.pre_id);
		if (S_ISREG(st.st_mode)) {
			if (keeps_content)
				emit(tr, t, TRACE_READ, 0, 0, path, &st);
			struct error e;
			if (event_log_was_read(&tr->log, path) &&
			    digest_file(path, &ev.pre_digest, NULL, &e) == 0)
				ev.has_pre_digest = 1;
		}
	}
	event_log_touch(&tr->log, &ev);
}

static void touch_how(struct tracer *tr, struct tracee *t, const char *path, int keeps_content,
                      unsigned how)
{
	touch_flags(tr, t, path, keeps_content, how, 0);
}

static void touch(struct tracer *tr, struct tracee *t, const char *path, int keeps_content)
{
	touch_how(tr, t, path, keeps_content, 0);
}

/* The source of a hard link: its bytes live on under the new name. */
static void read_pre(struct tracer *tr, struct tracee *t, const char *path)
{
	struct stat st;
	if (event_log_was_touched(&tr->log, path) || lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	emit(tr, t, TRACE_READ, TRACE_F_LINKED, 0, path, &st);
}

void tracer_mark_uncacheable(struct tracer *tr, const char *reason)
{
	if (!tr->uncacheable)
		tr->uncacheable = reason;
}

/* ---- entry handlers ------------------------------------------------- */

static enum resume outcome_probe(struct tracer *tr, struct tracee *t, int follow, int access_mode,
                                 int access_flags);
static enum resume outcome_open_read(struct tracer *tr, struct tracee *t,
                                     const struct open_class *c);

/* The reason a read of what st describes, opened by path, makes the step
 * uncacheable, or NULL for a file whose bytes can be keyed. A FIFO,
 * socket or device gives bytes that no digest of a file holds (and cachet
 * must never open one to hash it). The memory devices that give nothing,
 * zeros or randomness (outside the contract: README) are not inputs. */
static const char *special_input(const struct stat *st)
{
	if (S_ISFIFO(st->st_mode))
		return "reads a fifo";
	if (S_ISSOCK(st->st_mode))
		return "reads a socket";
	if (S_ISBLK(st->st_mode))
		return "reads a device";
	if (S_ISCHR(st->st_mode)) {
		unsigned minor_no = minor(st->st_rdev);
		if (major(st->st_rdev) == 1 && (minor_no == 3 || minor_no == 5 || minor_no == 7 ||
		                                minor_no == 8 || minor_no == 9))
			return NULL; /* null, zero, full, random, urandom */
		return "reads a device";
	}
	return NULL;
}

/* A preload record's stat has no st_rdev, which tells the memory devices
 * apart: for a device, the path's own. 1 when a device's cannot be had. */
static int with_rdev(const char *path, int follow, struct stat *st)
{
	struct stat here;
	if (!S_ISCHR(st->st_mode) && !S_ISBLK(st->st_mode))
		return 0;
	if ((follow ? stat(path, &here) : lstat(path, &here)) < 0 ||
	    (here.st_mode & S_IFMT) != (st->st_mode & S_IFMT))
		return 1;
	st->st_rdev = here.st_rdev;
	return 0;
}

static int is_jobserver_fifo(const struct tracer *tr, const char *path)
{
	return tr->spec->jobserver_fifo && !strcmp(path, tr->spec->jobserver_fifo);
}

/* An open for reading that names no file recorded: a device under /dev
 * (an ignored root), or a pipe or socket reached through /proc/PID/fd/N or
 * /dev/fd/N (`cat <(cmd)`). path: the joined path; resolved: resolve_at's
 * result for it. */
static void open_unrecorded(struct tracer *tr, struct tracee *t, const struct open_class *c,
                            const char *path, int resolved)
{
	if (tr->uncacheable || (c->kind != OPEN_KIND_READ && c->kind != OPEN_KIND_CREATE))
		return;
	struct stat st;
	const char *reason = NULL;
	/* A preload record: what the step's open got (its fstat); the
	 * descriptor named may be gone by the time the record is drained. */
	int reported =
	    t->rec_res && !rv_errno(t->rec_res->rv) && reported_stat(t->rec_res, &st) == 0;
	if (resolved == 0) {
		/* Ignored roots (the private TMPDIR, ignore_paths) are none of
		 * the key's business; /dev is ignored by name, not by type. */
		if (strncmp(path, "/dev/", 5))
			return;
		if (reported)
			reason = with_rdev(path, c->follow_last, &st) ? "reads a device"
			                                              : special_input(&st);
		else if ((c->follow_last ? stat(path, &st) : lstat(path, &st)) == 0)
			reason = special_input(&st);
		if (reason)
			tracer_mark_uncacheable(tr, reason);
		return;
	}
	struct magic_ref m;
	classify_magic_path(path, &m);
	if (m.kind != MAGIC_FD || m.rest[0])
		return;
	/* The jobserver crate (rustc, cargo) opens its descriptors again
	 * through /dev/fd/N, for a file description of its own. */
	for (size_t i = 0; i < tr->spec->njobserver_fds; i++)
		if (tr->spec->jobserver_fds[i] == m.fd)
			return;
	if (reported) {
		reason = special_input(&st);
	} else if (tracee_fd_path(m.pid ? m.pid : t->tid, m.fd, tr->tmp, sizeof tr->tmp) == 0) {
		if (!strncmp(tr->tmp, "pipe:", 5))
			reason = "reads a fifo";
		else if (!strncmp(tr->tmp, "socket:", 7))
			reason = "reads a socket";
	}
	if (reason)
		tracer_mark_uncacheable(tr, reason);
}

/* raw names the descriptor 0 of the process that opens it: /dev/stdin,
 * /dev/fd/0, /proc/self/fd/0. */
static int names_stdin(const char *raw)
{
	struct magic_ref m;
	classify_magic_path(raw, &m);
	return m.kind == MAGIC_FD && m.fd == 0 && m.pid == 0 && !m.rest[0];
}

static enum resume entry_open(struct tracer *tr, struct tracee *t, int dirfd, uint64_t addr,
                              uint64_t oflags, uint64_t resolve)
{
	struct pending *p = &t->p;
	struct open_class c;
	classify_open(oflags, resolve, &c);
	if (read_str(t, addr, tr->raw) < 0 || !tr->raw[0])
		return RESUME_CONT;
	int resolved = resolve_at(tr, t, dirfd, tr->raw, c.follow_last, p->path);
	if (resolved <= 0) {
		if (resolved == 0 && tr->stdin_is_null && names_stdin(tr->raw) &&
		    !strcmp(p->path, "/dev/null"))
			stdin_null_used(tr, t);
		open_unrecorded(tr, t, &c, p->path, resolved);
		return RESUME_CONT;
	}
	/* Its tokens are not data, nor is it an output. */
	if (is_jobserver_fifo(tr, p->path))
		return RESUME_CONT;
	p->has_path = 1;
	p->flags = c.flags;
	struct stat st;
	switch (c.kind) {
	case OPEN_KIND_READ:
		return outcome_open_read(tr, t, &c);
	case OPEN_KIND_PATH:
		/* An O_PATH descriptor of a directory is a base too. */
		if (t->rec_res ? reported_stat(t->rec_res, &st) == 0
		               : (c.follow_last ? stat(p->path, &st) : lstat(p->path, &st)) == 0)
			key_dir_base(tr, t, &st);
		return outcome_probe(tr, t, c.follow_last, -1, 0);
	case OPEN_KIND_TMPFILE:
		/* O_TMPFILE names no file until linkat gives it one (a TOUCH
		 * then); the directory is a lookup. */
		return outcome_probe(tr, t, c.follow_last, -1, 0);
	case OPEN_KIND_CREATE:
		/* O_RDONLY|O_CREAT on an existing file changes nothing. */
		if ((c.follow_last ? stat(p->path, &st) : lstat(p->path, &st)) == 0)
			return outcome_open_read(tr, t, &c);
		/* it creates the file: */
		__attribute__((fallthrough));
	case OPEN_KIND_WRITE:
		strcpy(tr->path2, p->path);
		if (!c.follow_last || follow_final(tr, t, tr->path2) > 0)
			touch_flags(tr, t, tr->path2, c.kind == OPEN_KIND_WRITE && c.keeps_content,
			            0, c.exclusive ? TRACE_F_EXCLUSIVE : 0);
		p->what = PEND_OPEN_WRITE;
		break;
	}
	return RESUME_SYSCALL;
}

/* The program interpreter's load address (AT_BASE) in process tid, or 0
 * (a static program, or a loader run as the program). */
static uint64_t interpreter_base(pid_t tid)
{
	char auxv[64];
	snprintf(auxv, sizeof auxv, "/proc/%d/auxv", (int)tid);
	int fd = open(auxv, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* At once: a read per entry was two dozen syscalls per process. One
	 * read, not one more for the end of the file: the kernel hands the
	 * whole vector (a few hundred bytes) to a read that has room for it,
	 * and a vector cut short only loses AT_BASE, which keeps the cache's
	 * bytes keyed. */
	uint64_t v[512], base = 0;
	ssize_t n = read(fd, v, sizeof v);
	close(fd);
	for (size_t i = 0; n > 0 && i + 1 < (size_t)n / sizeof v[0] && v[i] != AT_NULL; i += 2)
		if (v[i] == AT_BASE)
			base = v[i + 1];
	return base;
}

/*
 * 1 when the open of this stop is the dynamic loader's own read of its
 * cache, which is then keyed by what it maps each soname the loader looked
 * up to (the ldcache:NAME facts of the audit library's reports), not by its
 * bytes, which every ldconfig rewrites. That takes all three: the literal
 * path the loader opens; a call made from the code of the process's
 * interpreter (the loader opens the cache only to look sonames up; a
 * program's own read comes from libc or its own code, `ldconfig -p` is
 * static); and a soname search reported by the audit library in this
 * thread since its exec, which proves the library is loaded there and
 * reports every search (it reads the cache itself, with a stop from its
 * own code, for one it cannot report). Anything else keeps the bytes.
 */
static int loaders_cache_read(struct tracer *tr, struct tracee *t)
{
	if (t->rec_res || !t->loader_searched || !t->entry_ip || strcmp(tr->raw, LDCACHE_PATH) != 0)
		return 0;
	uint64_t base = interpreter_base(t->tid);
	return base && tracee_maps_same_file(t->tid, base, t->entry_ip) == 1;
}

void syscall_soname_search(struct tracer *tr, pid_t tid, const char *soname)
{
	struct tracee *t = tracee_find(&tr->tracees, tid);
	if (t)
		t->loader_searched = 1;
	char name[sizeof OBSERVE_FACT_LDCACHE + RING_STR];
	snprintf(name, sizeof name, "%s%s", OBSERVE_FACT_LDCACHE, soname);
	struct tracee *who = &tr->rec_tracee;
	who->tid = tid;
	emit(tr, t ? t : who, TRACE_FACT, 0, 0, name, NULL);
}

/* Lookups that only observe (stat, access, open for reading) take their
 * outcome at entry, from the same lookup made by the tracer, as readlink
 * does below, instead of from an exit stop: a stop is the price of a miss,
 * and these are a quarter of a compile's stops. The tracer shares the
 * step's uid, root and mounts (anything else makes the step uncacheable),
 * and it looks up the resolved path that the observation records, which is
 * the path the values are later taken from. The outcome only ever decides
 * READ against PROBE and checks that the world held still during the run
 * (src/key's still_holds): an open that then fails for a reason a lookup
 * cannot see (EMFILE, O_DIRECTORY on a file) records a READ, one input too
 * many, never one too few. */
/*
 * A stat's value is keyed (type, permission bits, a file's size), so the
 * event carries what the lookup found and src/key refuses to store the run
 * if the path holds another value at its end. For a stop, the tracer's
 * lookup runs while the step waits at the call's entry, microseconds before
 * the step's own: a change in between is a change during the run, which
 * the end-of-run check sees, unless the file changes back (A-B-A) within
 * those microseconds. For a preload record, the tracer would look much
 * later (whenever the ring is drained), so the step's own result is used.
 */
static enum resume outcome_probe(struct tracer *tr, struct tracee *t, int follow, int access_mode,
                                 int access_flags)
{
	struct pending *p = &t->p;
	struct stat st;
	int rc, err;
	if (t->rec_res) {
		err = rv_errno(t->rec_res->rv);
		rc = err ? -1 : access_mode >= 0 ? 0 : reported_stat(t->rec_res, &st);
		if (rc < 0 && !err) /* cannot happen: a stat's result has its fields */
			err = EIO;
	} else {
		if (access_mode >= 0)
			rc = faccessat(AT_FDCWD, p->path, access_mode, access_flags);
		else
			rc = follow ? stat(p->path, &st) : lstat(p->path, &st);
		err = rc < 0 ? errno : 0;
	}
	if (err)
		emit(tr, t, TRACE_PROBE, p->flags, err, p->path, NULL);
	else /* an access() check keys existence only */
		emit_found(tr, t, p->flags, p->path, access_mode >= 0 ? NULL : &st);
	return RESUME_CONT;
}

static enum resume outcome_open_read(struct tracer *tr, struct tracee *t,
                                     const struct open_class *c)
{
	struct pending *p = &t->p;
	struct stat st;
	int err;
	if (loaders_cache_read(tr, t))
		return RESUME_CONT;
	/* A preload record: the file the step's open got (its fstat). */
	const char *special;
	if (t->rec_res &&
	    ((err = rv_errno(t->rec_res->rv)) || reported_stat(t->rec_res, &st) == 0)) {
		if (err)
			emit(tr, t, TRACE_PROBE, p->flags, err, p->path, NULL);
		else if (S_ISREG(st.st_mode))
			emit(tr, t, TRACE_READ, p->flags, 0, p->path, &st);
		else if ((special = with_rdev(p->path, c->follow_last, &st) ? "reads a device"
		                                                            : special_input(&st)))
			tracer_mark_uncacheable(tr, special);
		else
			emit_found(tr, t, p->flags, p->path, &st);
		if (!err)
			key_dir_base(tr, t, &st);
		return RESUME_CONT;
	}
	if ((c->follow_last ? stat(p->path, &st) : lstat(p->path, &st)) < 0) {
		emit(tr, t, TRACE_PROBE, p->flags, errno, p->path, NULL);
	} else if (S_ISREG(st.st_mode)) {
		emit(tr, t, TRACE_READ, p->flags, 0, p->path, &st);
	} else if (S_ISLNK(st.st_mode)) { /* the symlink that O_NOFOLLOW refuses */
		emit(tr, t, TRACE_PROBE, p->flags, ELOOP, p->path, NULL);
	} else if ((special = special_input(&st))) {
		tracer_mark_uncacheable(tr, special);
	} else { /* a directory (listed through getdents) */
		emit_found(tr, t, p->flags, p->path, &st);
		key_dir_base(tr, t, &st);
	}
	return RESUME_CONT;
}

/* stat family (access_mode -1) and access family. */
static enum resume entry_probe(struct tracer *tr, struct tracee *t, int dirfd, uint64_t addr,
                               uint64_t at_flags, int access_mode)
{
	struct pending *p = &t->p;
	/* NULL or "" (with AT_EMPTY_PATH: a stat of dirfd; without: ENOENT
	 * whatever the file system holds): no lookup to record. */
	if (read_str(t, addr, tr->raw) < 0 || !tr->raw[0])
		return RESUME_CONT;
	unsigned flags = classify_at_flags(at_flags);
	if (access_mode >= 0)
		flags |= classify_access_mode((uint64_t)access_mode);
	if (resolve_at(tr, t, dirfd, tr->raw, !(flags & TRACE_F_NOFOLLOW), p->path) <= 0)
		return RESUME_CONT;
	p->flags = flags;
	p->has_path = 1;
	return outcome_probe(tr, t, !(flags & TRACE_F_NOFOLLOW), access_mode,
	                     (int)(at_flags & (AT_EACCESS | AT_SYMLINK_NOFOLLOW)));
}

/* readlink: the outcome is taken at entry, by the same readlink of the
 * resolved path from the tracer, without an exit stop. cc1's realpath()
 * makes ~1,500 readlinks per compile, nearly all failing with EINVAL: the
 * exit stops would be a third of all stops. The tracer shares the step's
 * uid, root and mounts (anything else makes the step uncacheable), so only
 * a concurrent change of the link between the two lookups could make them
 * differ: the event carries the digest of the target found, and src/key
 * does not store a run whose links no longer hold it at the end (the A-B-A
 * window of outcome_probe remains). A preload record carries the step's
 * own errno and a hash of the target it got: a target the tracer finds
 * different when it drains the record was changed after the step read it,
 * and the event says that the step saw something unknown. */
static enum resume entry_readlink(struct tracer *tr, struct tracee *t, int dirfd, uint64_t addr,
                                  uint64_t bufsiz)
{
	if (read_str(t, addr, tr->raw) < 0)
		return RESUME_CONT;
	/* readlinkat(fd, "") reads the symlink an O_PATH|O_NOFOLLOW fd holds. */
	int rc = tr->raw[0] ? resolve_at(tr, t, dirfd, tr->raw, 0, tr->path2)
	                    : fd_target(tr, t, dirfd, tr->path2);
	if (rc <= 0)
		return RESUME_CONT;
	struct trace_event ev;
	memset(&ev, 0, sizeof ev);
	ev.kind = TRACE_READLINK;
	ev.flags = TRACE_F_NOFOLLOW;
	ev.pid = t->tid;
	ev.path = tr->path2;
	ssize_t n = 0;
	if (t->rec_res && (ev.err = rv_errno(t->rec_res->rv)) != 0) {
		event_log_add(&tr->log, &ev);
		return RESUME_CONT;
	}
	n = readlink(tr->path2, tr->tmp, sizeof tr->tmp);
	if (!t->rec_res) {
		ev.err = n < 0 ? errno : 0;
	} else {
		/* The step got rv bytes (all of the target, or its first bufsiz
		 * bytes when its buffer was that small). */
		uint64_t got = (uint64_t)t->rec_res->rv;
		int same = n >= 0 && ((uint64_t)n == got || ((uint64_t)n > got && got == bufsiz)) &&
		           ring_hash(tr->tmp, (size_t)got) == t->rec_res->hash;
		if (!same)
			ev.seen_unknown = 1;
	}
	if (!ev.err && n >= 0) {
		digest_bytes(tr->tmp, (size_t)n, &ev.seen);
		ev.has_seen = 1;
	}
	event_log_add(&tr->log, &ev);
	return RESUME_CONT;
}

/* getdents: the LIST event (one per directory: the log drops the repeats)
 * at entry, and an exit stop to collect the entries the call returned
 * (dirviews.h): getdents is rare next to stat and readlink, and what the
 * step saw cannot be known otherwise. The position and the directory's
 * fingerprint are read now, before the call moves or sees anything. */
static enum resume entry_getdents(struct tracer *tr, struct tracee *t, int fd, uint64_t addr,
                                  int is64)
{
	struct pending *p = &t->p;
	p->what = PEND_GETDENTS;
	p->addr = addr;
	p->is64 = is64;
	if (fd_target(tr, t, fd, p->path) > 0) {
		emit(tr, t, TRACE_LIST, 0, 0, p->path, NULL);
		struct stat st;
		int have = tracee_fd_stat(t->tid, fd, &st) == 0;
		dir_views_entry(&tr->views, p->path, have ? &st : NULL);
		p->pos_known = tracee_fd_pos(t->tid, fd, &p->pos) == 0;
		p->has_path = 1;
	}
	if (!p->has_path && !tr->spec->dirorder) {
		p->what = PEND_NONE;
		return RESUME_CONT;
	}
	return RESUME_SYSCALL;
}

static enum resume entry_exec(struct tracer *tr, struct tracee *t, int dirfd, uint64_t addr,
                              uint64_t at_flags)
{
	struct pending *p = &t->p;
	/* Always pending, even for an ignored path: a script in the private
	 * TMPDIR still has an interpreter to record. */
	p->what = PEND_EXEC;
	p->flags = TRACE_F_EXECUTE | classify_at_flags(at_flags);
	p->path[0] = '\0';
	if (read_str(t, addr, tr->raw) == 0) {
		int rc = classify_is_fd_op(at_flags, 0, !tr->raw[0])
		             ? fd_target(tr, t, dirfd, p->path)
		             : resolve_at(tr, t, dirfd, tr->raw, !(p->flags & TRACE_F_NOFOLLOW),
		                          p->path);
		p->has_path = rc > 0;
		if (rc < 0)
			p->path[0] = '\0';
	}
	return RESUME_SYSCALL;
}

static enum resume entry_chdir(struct tracer *tr, struct tracee *t, uint64_t addr)
{
	struct pending *p = &t->p;
	p->what = PEND_CHDIR;
	p->flags = TRACE_F_DIRECTORY;
	if (read_str(t, addr, tr->raw) == 0 && tr->raw[0])
		p->has_path = resolve_at(tr, t, AT_FDCWD, tr->raw, 1, p->path) > 0;
	return RESUME_SYSCALL;
}

static enum resume entry_rename(struct tracer *tr, struct tracee *t, int olddir, uint64_t oldp,
                                int newdir, uint64_t newp, uint64_t flags)
{
	struct rename_class rc;
	classify_rename(flags, &rc);
	if (read_str(t, oldp, tr->raw) < 0 || read_str(t, newp, tr->raw2) < 0)
		return RESUME_CONT;
	/* Both names are resolved before either is touched: hashing the
	 * source must not move scratch space under the target. The pending
	 * buffer is free: nothing is pending. */
	int r1 = tr->raw[0] ? resolve_at(tr, t, olddir, tr->raw, 0, t->p.path) : -1;
	int r2 = tr->raw2[0] ? resolve_at(tr, t, newdir, tr->raw2, 0, tr->path2) : -1;
	if (r1 > 0)
		touch_how(tr, t, t->p.path, rc.old_keeps, TRACE_CHANGE_MOVES);
	if (r2 > 0)
		touch_how(tr, t, tr->path2, rc.new_keeps, rc.new_keeps ? TRACE_CHANGE_MOVES : 0);
	/* What a rename brings may be a directory with contents written
	 * under other names (trace.h). */
	if (r2 > 0)
		emit(tr, t, TRACE_MOVED_IN, 0, 0, tr->path2, NULL);
	if (r1 > 0 && rc.new_keeps)
		emit(tr, t, TRACE_MOVED_IN, 0, 0, t->p.path, NULL);
	return RESUME_CONT;
}

static enum resume entry_link(struct tracer *tr, struct tracee *t, int olddir, uint64_t oldp,
                              int newdir, uint64_t newp, uint64_t flags)
{
	if (read_str(t, oldp, tr->raw) < 0 || read_str(t, newp, tr->raw2) < 0)
		return RESUME_CONT;
	/* linkat(fd, "", AT_EMPTY_PATH) names an O_TMPFILE file ("/d/#123
	 * (deleted)" in /proc): no such path, so read_pre finds nothing. */
	int r1 =
	    classify_is_fd_op(flags, 0, !tr->raw[0])
	        ? fd_target(tr, t, olddir, t->p.path)
	        : resolve_at(tr, t, olddir, tr->raw, (flags & AT_SYMLINK_FOLLOW) != 0, t->p.path);
	int r2 = tr->raw2[0] ? resolve_at(tr, t, newdir, tr->raw2, 0, tr->path2) : -1;
	if (r1 > 0)
		read_pre(tr, t, t->p.path);
	if (r2 > 0)
		touch_flags(tr, t, tr->path2, 0, 0, TRACE_F_EXCLUSIVE);
	return RESUME_CONT;
}

static enum resume change_fd(struct tracer *tr, struct tracee *t, int fd, int keeps)
{
	if (fd_target(tr, t, fd, t->p.path) > 0)
		touch(tr, t, t->p.path, keeps);
	return RESUME_CONT;
}

/* A change of the name at (dirfd, addr); follow: the call acts on the
 * target of a final symlink (chmod, truncate) rather than the link. */
static enum resume change_at(struct tracer *tr, struct tracee *t, int dirfd, uint64_t addr,
                             int follow, int keeps)
{
	if (read_str(t, addr, tr->raw) < 0 || !tr->raw[0])
		return RESUME_CONT;
	if (resolve_at(tr, t, dirfd, tr->raw, follow, t->p.path) <= 0)
		return RESUME_CONT;
	if (follow && follow_final(tr, t, t->p.path) <= 0)
		return RESUME_CONT;
	touch(tr, t, t->p.path, keeps);
	return RESUME_CONT;
}

/* fchmodat2, setxattrat, removexattrat: AT_ flags, AT_EMPTY_PATH = the fd. */
static enum resume change_at_flags(struct tracer *tr, struct tracee *t, int dirfd, uint64_t addr,
                                   uint64_t at_flags, int keeps)
{
	if (addr && read_str(t, addr, tr->raw) < 0)
		return RESUME_CONT;
	if (classify_is_fd_op(at_flags, addr == 0, addr && !tr->raw[0]))
		return change_fd(tr, t, dirfd, keeps);
	return change_at(tr, t, dirfd, addr, !(at_flags & AT_SYMLINK_NOFOLLOW), keeps);
}

enum times_kind { TIMES_UTIMBUF, TIMES_TIMEVAL, TIMES_TIMESPEC };

/* utime, utimes, futimesat, utimensat: a change that keeps the content,
 * plus TRACE_SET_MTIME when the mtime given is explicit. */
static enum resume entry_utimes(struct tracer *tr, struct tracee *t, int dirfd, uint64_t addr,
                                uint64_t times, enum times_kind kind, uint64_t at_flags)
{
	int sets = 0;
	if (times) {
		if (kind == TIMES_TIMESPEC) {
			struct timespec ts[2];
			if (tracee_read(t->tid, times, ts, sizeof ts) == 0)
				sets = classify_utimens_sets_mtime(ts);
		} else {
			sets = 1; /* utime/utimes have no UTIME_NOW/OMIT */
		}
	}
	if (addr && read_str(t, addr, tr->raw) < 0)
		return RESUME_CONT;
	int fd_op = kind == TIMES_TIMESPEC
	                ? classify_is_fd_op(at_flags, addr == 0, addr && !tr->raw[0])
	                : addr == 0; /* futimesat(fd, NULL, ...) */
	int rc;
	if (fd_op) {
		rc = fd_target(tr, t, dirfd, t->p.path);
	} else {
		if (!tr->raw[0])
			return RESUME_CONT;
		int follow = !(at_flags & AT_SYMLINK_NOFOLLOW);
		rc = resolve_at(tr, t, dirfd, tr->raw, follow, t->p.path);
		if (rc > 0 && follow)
			rc = follow_final(tr, t, t->p.path);
	}
	if (rc <= 0)
		return RESUME_CONT;
	touch(tr, t, t->p.path, 1);
	if (sets)
		emit(tr, t, TRACE_SET_MTIME, 0, 0, t->p.path, NULL);
	return RESUME_CONT;
}

/* getxattr, listxattr and kin: the path's extended attributes are an
 * input. Keyed by all of them (OBS_XATTR), whichever the step asked for:
 * `ls -l` asks each entry for its ACL and security label, whose values
 * stay the same as long as nobody sets them. fd >= 0 with no path: the
 * f- forms; dirfd and at_flags: the -at forms. */
static enum resume entry_xattr(struct tracer *tr, struct tracee *t, int dirfd, uint64_t addr,
                               uint64_t at_flags, int fd_form)
{
	int nofollow = (at_flags & AT_SYMLINK_NOFOLLOW) != 0;
	int rc;
	if (fd_form) {
		rc = fd_target(tr, t, dirfd, t->p.path);
	} else {
		if (read_str(t, addr, tr->raw) < 0)
			return RESUME_CONT;
		if (classify_is_fd_op(at_flags, 0, !tr->raw[0]))
			rc = fd_target(tr, t, dirfd, t->p.path);
		else if (!tr->raw[0])
			return RESUME_CONT;
		else
			rc = resolve_at(tr, t, dirfd, tr->raw, !nofollow, t->p.path);
	}
	if (rc > 0)
		emit(tr, t, TRACE_XATTR, nofollow ? TRACE_F_NOFOLLOW : 0, 0, t->p.path, NULL);
	return RESUME_CONT;
}

static enum resume entry_connect(struct tracer *tr, struct tracee *t, uint64_t addr, uint64_t len)
{
	struct pending *p = &t->p;
	unsigned char sa[sizeof(struct sockaddr_un) + 1];
	size_t n = len < sizeof sa - 1 ? (size_t)len : sizeof sa - 1;
	if (!addr || n < sizeof(sa_family_t) || tracee_read(t->tid, addr, sa, n) < 0)
		return RESUME_CONT;
	sa[n] = '\0';
	switch (classify_sockaddr(sa, n)) {
	case NET_LOCAL:
		return RESUME_CONT;
	case NET_UNIX: {
		/* A socket under an ignored root (the private TMPDIR) joins
		 * processes of the step itself. */
		const char *sun = (const char *)sa + offsetof(struct sockaddr_un, sun_path);
		if (resolve_at(tr, t, AT_FDCWD, sun, 1, p->path) == 0)
			return RESUME_CONT;
		break;
	}
	case NET_REMOTE:
		break;
	}
	p->what = PEND_CONNECT;
	p->reason = "network connection";
	return RESUME_SYSCALL;
}

static enum resume pend_uncacheable(struct tracee *t, const char *reason)
{
	t->p.what = PEND_UNCACHEABLE;
	t->p.reason = reason;
	return RESUME_SYSCALL;
}

/* fd of t still refers to the file dev/ino (a descriptor closed and
 * opened again refers to another). */
static int fd_refers_to(struct tracee *t, int fd, dev_t dev, ino_t ino)
{
	struct stat st;
	return tracee_fd_stat(t->tid, fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

/* A read, write or copy of a descriptor that the filter watches (fd_uses):
 * stdin when it is a stream, the inherited descriptors. Only while the
 * descriptor still refers to the file the step was given: a shell that
 * redirected `< file` reads a file, which is an ordinary READ. A copy is
 * judged as a use: reads through it would not stop (the filter watches
 * descriptor numbers, fixed when the step starts). */
static void entry_fd_use(struct tracer *tr, struct tracee *t, const struct fd_use *u,
                         const uint64_t *a)
{
	/* Not judged by what the descriptor holds: that costs a lookup per
	 * write, and taking in what the streams hold is harmless anyway. */
	if (u->out >= 0 && ((int)a[u->out] == 1 || (int)a[u->out] == 2) &&
	    tr->spec->on_stream_write)
		tr->spec->on_stream_write(tr->spec->on_stream_write_ctx);
	if (tr->uncacheable)
		return;
	if (u->nr == __NR_fcntl && a[1] != F_DUPFD && a[1] != F_DUPFD_CLOEXEC)
		return;
	/* How shells (dash, bash) save a descriptor around a redirection, to
	 * put it back afterwards: not read through (README: a copy to 10 or
	 * above that is then read goes unseen). */
	if (u->nr == __NR_fcntl && a[2] >= 10)
		return;
	for (int side = 0; side < 2; side++) {
		int arg = side ? u->out : u->in;
		if (arg < 0)
			continue;
		int fd = (int)a[arg];
		if (fd == 0 && !side && tr->have_stdin_id &&
		    fd_refers_to(t, 0, tr->stdin_dev, tr->stdin_ino)) {
			if (tr->stdin_is_null)
				stdin_null_used(tr, t);
			else
				tracer_mark_uncacheable(tr, u->dup_like ? "duplicates stdin stream"
				                                        : "reads stdin stream");
			return;
		}
		for (size_t i = 0; i < tr->nwatched; i++)
			if (tr->watched_fd[i] == fd &&
			    fd_refers_to(t, fd, tr->watched_dev[i], tr->watched_ino[i])) {
				tracer_mark_uncacheable(tr, "uses inherited descriptor");
				return;
			}
	}
}

/* A fact of the process the step asked for (trace.h, TRACE_FACT). */
static enum resume entry_fact(struct tracer *tr, struct tracee *t, const char *name)
{
	emit(tr, t, TRACE_FACT, 0, 0, name, NULL);
	return RESUME_CONT;
}

/* A read of resource limit `resource`. RLIMIT_NOFILE is left out: ld and
 * most runtimes read it to size their descriptor tables, and it differs
 * between every login session, container and CI runner (README). */
static enum resume entry_rlimit(struct tracer *tr, struct tracee *t, uint64_t resource)
{
	if (resource == RLIMIT_NOFILE || resource >= RLIM_NLIMITS)
		return RESUME_CONT;
	char name[32];
	snprintf(name, sizeof name, "%s%u", TRACE_FACT_RLIMIT, (unsigned)resource);
	return entry_fact(tr, t, name);
}

enum resume syscall_entry(struct tracer *tr, struct tracee *t,
                          const struct __ptrace_syscall_info *si)
{
	if (si->op != PTRACE_SYSCALL_INFO_SECCOMP)
		return RESUME_CONT;
	if (si->arch != AUDIT_ARCH_X86_64) {
		tracer_mark_uncacheable(tr, "32-bit syscall");
		return RESUME_CONT;
	}
	uint64_t nr = si->seccomp.nr;
	if (nr & __X32_SYSCALL_BIT) {
		tracer_mark_uncacheable(tr, "x32 syscall");
		return RESUME_CONT;
	}
	const uint64_t *a = si->seccomp.args;
	struct pending *p = &t->p;
	t->entry_ip = si->instruction_pointer;
	p->what = PEND_NONE;
	p->flags = 0;
	p->has_path = 0;
	p->reason = NULL;

	switch (nr) {
	case __NR_open:
		return entry_open(tr, t, AT_FDCWD, a[0], a[1], 0);
	case __NR_openat:
		return entry_open(tr, t, (int)a[0], a[1], a[2], 0);
	case __NR_creat:
		return entry_open(tr, t, AT_FDCWD, a[0], O_CREAT | O_WRONLY | O_TRUNC, 0);
	case __NR_openat2: {
		struct open_how how;
		memset(&how, 0, sizeof how);
		size_t n = a[3] < sizeof how ? (size_t)a[3] : sizeof how;
		if (n < sizeof how.flags || tracee_read(t->tid, a[2], &how, n) < 0)
			return RESUME_CONT;
		/* These confine the lookup to a base or refuse some links: its
		 * outcome is not that of the ordinary lookup that a path set
		 * repeats, whether it succeeds or fails. */
		if (how.resolve & (RESOLVE_IN_ROOT | RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
		                   RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS)) {
			tracer_mark_uncacheable(tr, "openat2 resolve flags");
			return RESUME_CONT;
		}
		return entry_open(tr, t, (int)a[0], a[1], how.flags, how.resolve);
	}
	case __NR_stat:
		return entry_probe(tr, t, AT_FDCWD, a[0], 0, -1);
	case __NR_lstat:
		return entry_probe(tr, t, AT_FDCWD, a[0], AT_SYMLINK_NOFOLLOW, -1);
	case __NR_newfstatat:
		return entry_probe(tr, t, (int)a[0], a[1], a[3], -1);
	case __NR_statx:
		return entry_probe(tr, t, (int)a[0], a[1], a[2], -1);
	case __NR_access:
		return entry_probe(tr, t, AT_FDCWD, a[0], 0, (int)(a[1] & 7));
	case __NR_faccessat: /* the syscall has no flags argument */
		return entry_probe(tr, t, (int)a[0], a[1], 0, (int)(a[2] & 7));
	case __NR_faccessat2:
		return entry_probe(tr, t, (int)a[0], a[1], a[3], (int)(a[2] & 7));
	case __NR_readlink:
		return entry_readlink(tr, t, AT_FDCWD, a[0], a[2]);
	case __NR_readlinkat:
		return entry_readlink(tr, t, (int)a[0], a[1], a[3]);
	case __NR_getdents:
		return entry_getdents(tr, t, (int)a[0], a[1], 0);
	case __NR_getdents64:
		return entry_getdents(tr, t, (int)a[0], a[1], 1);
	case __NR_execve:
		return entry_exec(tr, t, AT_FDCWD, a[0], 0);
	case __NR_execveat:
		return entry_exec(tr, t, (int)a[0], a[1], a[4]);
	case __NR_chdir:
		return entry_chdir(tr, t, a[0]);
	case __NR_fchdir:
		p->what = PEND_CHDIR;
		return RESUME_SYSCALL;
	case __NR_rename:
		return entry_rename(tr, t, AT_FDCWD, a[0], AT_FDCWD, a[1], 0);
	case __NR_renameat:
		return entry_rename(tr, t, (int)a[0], a[1], (int)a[2], a[3], 0);
	case __NR_renameat2:
		return entry_rename(tr, t, (int)a[0], a[1], (int)a[2], a[3], a[4]);
	case __NR_link: /* link(2) does not follow a symlink source on Linux */
		return entry_link(tr, t, AT_FDCWD, a[0], AT_FDCWD, a[1], 0);
	case __NR_linkat:
		return entry_link(tr, t, (int)a[0], a[1], (int)a[2], a[3], a[4]);
	case __NR_symlink:
		return change_at(tr, t, AT_FDCWD, a[1], 0, 0);
	case __NR_symlinkat:
		return change_at(tr, t, (int)a[1], a[2], 0, 0);
	case __NR_unlink:
	case __NR_rmdir:
	case __NR_mkdir:
	case __NR_mknod:
		return change_at(tr, t, AT_FDCWD, a[0], 0, 0);
	case __NR_unlinkat:
	case __NR_mkdirat:
	case __NR_mknodat:
		return change_at(tr, t, (int)a[0], a[1], 0, 0);
	case __NR_truncate: /* a shorter file keeps a prefix of the old bytes */
		return change_at(tr, t, AT_FDCWD, a[0], 1, (int64_t)a[1] > 0);
	case __NR_ftruncate:
		return change_fd(tr, t, (int)a[0], (int64_t)a[1] > 0);
	case __NR_chmod:
		return change_at(tr, t, AT_FDCWD, a[0], 1, 1);
	case __NR_fchmodat:
		return change_at(tr, t, (int)a[0], a[1], 1, 1);
	case __NR_fchmodat2:
		return change_at_flags(tr, t, (int)a[0], a[1], a[3], 1);
	case __NR_fchmod:
	case __NR_fsetxattr:
	case __NR_fremovexattr:
		return change_fd(tr, t, (int)a[0], 1);
	case __NR_utime:
		return entry_utimes(tr, t, AT_FDCWD, a[0], a[1], TIMES_UTIMBUF, 0);
	case __NR_utimes:
		return entry_utimes(tr, t, AT_FDCWD, a[0], a[1], TIMES_TIMEVAL, 0);
	case __NR_futimesat:
		return entry_utimes(tr, t, (int)a[0], a[1], a[2], TIMES_TIMEVAL, 0);
	case __NR_utimensat:
		return entry_utimes(tr, t, (int)a[0], a[1], a[2], TIMES_TIMESPEC, a[3]);
	case __NR_setxattr:
	case __NR_removexattr:
		return change_at(tr, t, AT_FDCWD, a[0], 1, 1);
	case __NR_lsetxattr:
	case __NR_lremovexattr:
		return change_at(tr, t, AT_FDCWD, a[0], 0, 1);
	case __NR_setxattrat:
	case __NR_removexattrat:
		return change_at_flags(tr, t, (int)a[0], a[1], a[2], 1);
	case __NR_getxattr:
	case __NR_listxattr:
		return entry_xattr(tr, t, AT_FDCWD, a[0], 0, 0);
	case __NR_lgetxattr:
	case __NR_llistxattr:
		return entry_xattr(tr, t, AT_FDCWD, a[0], AT_SYMLINK_NOFOLLOW, 0);
	case __NR_fgetxattr:
	case __NR_flistxattr:
		return entry_xattr(tr, t, (int)a[0], 0, 0, 1);
	case __NR_getxattrat:
	case __NR_listxattrat:
		return entry_xattr(tr, t, (int)a[0], a[1], a[2], 0);
	/* A new owner keeps the content: the output then records the owner. */
	case __NR_chown:
		return change_at(tr, t, AT_FDCWD, a[0], 1, 1);
	case __NR_lchown:
		return change_at(tr, t, AT_FDCWD, a[0], 0, 1);
	case __NR_fchownat:
		return change_at_flags(tr, t, (int)a[0], a[1], a[4], 1);
	case __NR_fchown:
		return change_fd(tr, t, (int)a[0], 1);
	case __NR_uname:
		return entry_fact(tr, t, TRACE_FACT_UNAME);
	case __NR_getuid:
	case __NR_geteuid:
	case __NR_getresuid:
		return entry_fact(tr, t, TRACE_FACT_UID);
	case __NR_getgid:
	case __NR_getegid:
	case __NR_getresgid:
		return entry_fact(tr, t, TRACE_FACT_GID);
	case __NR_getgroups:
		return entry_fact(tr, t, TRACE_FACT_GROUPS);
	case __NR_sched_getaffinity:
		/* The tracer may hold the step on its CPU, and gives the caller
		 * its own mask back at this very call (placement.h): what the
		 * step sees is the caller's affinity, which is keyed. */
		return entry_fact(tr, t, TRACE_FACT_CPUS);
	case __NR_getrlimit:
		return entry_rlimit(tr, t, (uint32_t)a[0]); /* the kernel's unsigned int */
	case __NR_prlimit64:
		/* Only a call that reads a limit (old_limit given). */
		if (!a[3])
			return RESUME_CONT;
		return entry_rlimit(tr, t, (uint32_t)a[1]);
	case __NR_connect:
		return entry_connect(tr, t, a[1], a[2]);
	case __NR_sendto:
		return entry_connect(tr, t, a[4], a[5]);
	case __NR_clone:
		if (!classify_new_namespace(a[0], 1))
			return RESUME_CONT;
		return pend_uncacheable(t, "new namespace");
	case __NR_unshare:
		if (!classify_new_namespace(a[0], 0))
			return RESUME_CONT;
		return pend_uncacheable(t, "new namespace");
	case __NR_clone3: {
		uint64_t flags;
		/* glibc creates every thread with clone3: one cheap stop each. */
		if (a[1] < sizeof flags || tracee_read(t->tid, a[0], &flags, sizeof flags) < 0 ||
		    !classify_new_namespace(flags, 0))
			return RESUME_CONT;
		return pend_uncacheable(t, "new namespace");
	}
	case __NR_setns:
		return pend_uncacheable(t, "new namespace");
	case __NR_chroot:
		return pend_uncacheable(t, "chroot");
	case __NR_open_tree:
	case __NR_open_tree_attr:
		/* Without OPEN_TREE_CLONE it is an O_PATH open, not a mount. */
		if (!(a[2] & OPEN_TREE_CLONE))
			return RESUME_CONT;
		return pend_uncacheable(t, "mount");
	case __NR_mount:
	case __NR_umount2:
	case __NR_pivot_root:
	case __NR_move_mount:
	case __NR_fsmount:
	case __NR_fspick:
	case __NR_mount_setattr:
		return pend_uncacheable(t, "mount");
	case __NR_ptrace:
		/* Even a failed attempt: the tool behaves differently under a
		 * tracer (LeakSanitizer, gdb) than in a plain run. */
		tracer_mark_uncacheable(tr, "ptrace by the step");
		return RESUME_CONT;
	case __NR_seccomp:
		if (a[0] != SECCOMP_SET_MODE_FILTER)
			return RESUME_CONT;
		return pend_uncacheable(t, "foreign seccomp filter");
	case __NR_prctl:
		if (a[0] != PR_SET_SECCOMP || a[1] != SECCOMP_MODE_FILTER)
			return RESUME_CONT;
		return pend_uncacheable(t, "foreign seccomp filter");
	case __NR_open_by_handle_at:
		tracer_mark_uncacheable(tr, "open by handle");
		return RESUME_CONT;
	case __NR_io_uring_setup:
		tracer_mark_uncacheable(tr, "io_uring");
		return RESUME_CONT;
	default:
		for (size_t i = 0; i < nfd_uses; i++)
			if ((uint64_t)fd_uses[i].nr == nr) {
				entry_fd_use(tr, t, &fd_uses[i], a);
				break;
			}
		return RESUME_CONT;
	}
}

/* A path whose lookup differs from that of its tidied form, which the
 * event records: a trailing "/" or "/." makes the kernel follow a final
 * symlink and require a directory (glibc's realpath checks "file/" and gets
 * ENOTDIR for a file that exists). The step's result answers another
 * question than the observation asks: the tracer looks the tidied path up
 * itself, as for a stop (the step learned only the type, then). */
static int asks_a_directory(const char *str)
{
	size_t n = strlen(str);
	return (n > 1 && str[n - 1] == '/') || (n > 2 && str[n - 1] == '.' && str[n - 2] == '/');
}

/* A scratch tracee, not the thread's own record: the thread may be in the
 * middle of a stopped call whose pending exit must survive. The calls the
 * preload library makes without a stop name absolute paths, need no exit
 * stop and no cwd. */
void syscall_record(struct tracer *tr, pid_t tid, int nr, const uint64_t args[6], const char *str,
                    const struct ring_result *res)
{
	struct tracee *scratch = &tr->rec_tracee;
	scratch->tid = tid;
	scratch->started = 1;
	scratch->cwd_gen = 0;
	scratch->cwd[0] = '\0';
	scratch->rec_str = str;
	scratch->rec_res = asks_a_directory(str) ? NULL : res;
	struct __ptrace_syscall_info si;
	memset(&si, 0, sizeof si);
	si.op = PTRACE_SYSCALL_INFO_SECCOMP;
	si.arch = AUDIT_ARCH_X86_64;
	si.seccomp.nr = (uint64_t)nr;
	memcpy(si.seccomp.args, args, sizeof si.seccomp.args);
	tr->nrecords++;
	syscall_entry(tr, scratch, &si);
}

/* ---- exit ----------------------------------------------------------- */

/* The exit of a getdents: what it returned (len bytes at addr; 0 is the
 * end of the directory) joins the step's views of the directory, in the
 * kernel's order (names and types do not depend on it); then, with
 * trace_spec.dirorder, the entries are reordered. A buffer that cannot be
 * read makes the read a partial one; one that cannot be parsed or written
 * back is left as it is. */
static void exit_getdents(struct tracer *tr, struct tracee *t, size_t len)
{
	struct pending *p = &t->p;
	void *b = len ? malloc(len) : NULL;
	int have = len && b && tracee_read(t->tid, p->addr, b, len) == 0;
	if (p->has_path)
		dir_views_exit(&tr->views, p->path, p->pos_known && (have || !len), p->pos, b,
		               have ? len : 0, p->is64);
	if (have && tr->spec->dirorder &&
	    dirents_reorder(b, len, tr->spec->dirorder, tr->spec->dirorder_seed) > 1)
		tracee_write(t->tid, p->addr, b, len);
	free(b);
}

void syscall_attach_listings(struct tracer *tr)
{
	dir_views_finish(&tr->views);
	for (size_t i = 0; i < tr->log.n; i++)
		if (tr->log.ev[i].kind == TRACE_LIST)
			tr->log.ev[i].listing = dir_views_take(&tr->views, tr->log.ev[i].path);
}

void syscall_exit(struct tracer *tr, struct tracee *t, const struct __ptrace_syscall_info *si)
{
	struct pending *p = &t->p;
	enum pending_what what = p->what;
	p->what = PEND_NONE;
	if (si->op != PTRACE_SYSCALL_INFO_EXIT || what == PEND_NONE)
		return;
	int64_t rv = si->exit.rval;
	/* Interrupted and about to be restarted: the restart stops at entry
	 * again and its outcome is the one the step sees. */
	if (classify_is_restart(rv))
		return;
	int err = si->exit.is_error ? (int)-rv : 0;
	struct stat st;
	switch (what) {
	case PEND_NONE:
		break;
	case PEND_OPEN_READ:
		if (err)
			emit(tr, t, TRACE_PROBE, p->flags, err, p->path, NULL);
		else if (tracee_fd_stat(t->tid, (int)rv, &st) < 0)
			emit(tr, t, TRACE_PROBE, p->flags, 0, p->path, NULL);
		else if (S_ISREG(st.st_mode))
			emit(tr, t, TRACE_READ, p->flags, 0, p->path, &st);
		else if (special_input(&st))
			tracer_mark_uncacheable(tr, special_input(&st));
		else /* a directory (listed through getdents) */
			emit(tr, t, TRACE_PROBE, p->flags, 0, p->path, NULL);
		break;
	case PEND_OPEN_WRITE:
		if (err)
			emit(tr, t, TRACE_PROBE, p->flags, err, p->path, NULL);
		break;
	case PEND_PROBE:
		emit(tr, t, TRACE_PROBE, p->flags, err, p->path, NULL);
		break;
	case PEND_EXEC: /* success never gets here: see syscall_exec_done */
		if (err && p->has_path)
			emit(tr, t, TRACE_PROBE, p->flags, err, p->path, NULL);
		break;
	case PEND_CHDIR:
		if (p->has_path)
			emit(tr, t, TRACE_PROBE, p->flags, err, p->path, NULL);
		if (p->has_path && !err)
			key_links_crossed(tr, t, p->path);
		if (!err)
			tr->cwd_gen++;
		break;
	case PEND_UNCACHEABLE:
		if (!err)
			tracer_mark_uncacheable(tr, p->reason);
		break;
	case PEND_CONNECT:
		if (!err || err == EINPROGRESS)
			tracer_mark_uncacheable(tr, p->reason);
		break;
	case PEND_GETDENTS:
		if (!err)
			exit_getdents(tr, t, (size_t)rv);
		break;
	}
}

/* ---- exec ----------------------------------------------------------- */

static void emit_stat(struct tracer *tr, struct tracee *t, enum trace_event_kind kind,
                      const char *path)
{
	struct stat st;
	if (stat(path, &st) == 0)
		emit(tr, t, kind, 0, 0, path, &st);
}

/* The "#!" chain from path, whose first n bytes are in head (n < 0: not
 * readable): each script is READ, each interpreter EXEC (the kernel opens
 * them with no syscall of the step's). Uses tr->raw2, tr->path2 and
 * tr->path3. */
static void exec_scripts(struct tracer *tr, struct tracee *t, const char *path, int record,
                         char *head, long n)
{
	const char *cur = path;
	/* The kernel allows 4 levels of interpreters (BINPRM_MAX_RECURSION). */
	for (int depth = 0; depth < 5; depth++) {
		if (depth)
			n = exec_image_read_head(cur, head);
		if (n < 2 || !shebang_interpreter(head, (size_t)n, tr->raw2, PATH_MAX))
			break;
		if (record)
			emit_stat(tr, t, TRACE_READ, cur);
		/* The kernel opens the interpreter name as given: relative to the
		 * cwd when it is relative. */
		int rc = resolve_at(tr, t, AT_FDCWD, tr->raw2, 1, tr->path3);
		if (rc < 0)
			break;
		record = rc > 0;
		if (record) {
			emit_stat(tr, t, TRACE_EXEC, tr->path3);
			key_links_crossed(tr, t, tr->path3);
		}
		strcpy(tr->path2, tr->path3);
		cur = tr->path2;
	}
}

void syscall_exec_done(struct tracer *tr, struct tracee *t)
{
	struct pending *p = &t->p;
	/* The next image's loader reports its own searches, if it can. */
	t->loader_searched = 0;
	/* Its reads of the stack limit go through without a stop
	 * (seccomp_filter.c, block_rlimit): keyed as if made, as glibc's
	 * start makes one in every process. */
	entry_rlimit(tr, t, RLIMIT_STACK);
	int known = p->what == PEND_EXEC && p->path[0];
	int record = known && p->has_path;
	p->what = PEND_NONE;
	char exe[64];
	snprintf(exe, sizeof exe, "/proc/%d/exe", (int)t->tid);
	struct stat exe_st;
	int have_exe = stat(exe, &exe_st) == 0;
	if (have_exe && classify_setuid_mode(exe_st.st_mode))
		tracer_mark_uncacheable(tr, "setuid executable");
	if (!known) {
		/* No entry stop seen (cannot happen with the filter above, but a
		 * missing EXEC would be a silent hole): take the kernel's word. */
		ssize_t n = readlink(exe, p->path, sizeof p->path - 1);
		if (n <= 0)
			return;
		p->path[n] = '\0';
		record = !is_ignored(tr, p->path);
	}
	/* The program itself: a script's own bytes, else the binary the
	 * kernel mapped (/proc/PID/exe: immune to a rename since). Its head
	 * is read once, for this and for the "#!" chain; not at all when the
	 * path names the mapped file itself, which no "#!" line led to (a
	 * script's mapped file is its interpreter's). */
	char head[EXEC_HEAD_LEN];
	long n = -1;
	struct stat path_st;
	if (!have_exe || stat(p->path, &path_st) < 0 || path_st.st_dev != exe_st.st_dev ||
	    path_st.st_ino != exe_st.st_ino)
		n = exec_image_read_head(p->path, head);
	if (record) {
		struct stat st;
		if (n >= 2 && shebang_interpreter(head, (size_t)n, tr->raw2, PATH_MAX))
			emit_stat(tr, t, TRACE_EXEC, p->path);
		else if (have_exe)
			emit(tr, t, TRACE_EXEC, 0, 0, p->path, &exe_st);
		else if (stat(p->path, &st) == 0)
			emit(tr, t, TRACE_EXEC, 0, 0, p->path, &st);
		/* /proc/self/exe and $ORIGIN are where the name led. */
		key_links_crossed(tr, t, p->path);
	}
	exec_scripts(tr, t, p->path, record, head, n);
	/* The ELF interpreter (ld.so) of the final program. */
	if (!have_exe)
		return;
	int rc = elf_interpreter_cached(&tr->interps, exe, &exe_st, tr->raw2, PATH_MAX);
	if (rc == 1 && resolve_at(tr, t, AT_FDCWD, tr->raw2, 1, tr->path3) > 0)
		emit_stat(tr, t, TRACE_EXEC, tr->path3);
}
