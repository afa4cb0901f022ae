#include "trace/classify.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cachet/trace.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

void classify_open(uint64_t oflags, uint64_t resolve, struct open_class *out)
{
	memset(out, 0, sizeof *out);
	if (oflags & O_NOFOLLOW || resolve & RESOLVE_NO_SYMLINKS)
		out->flags |= TRACE_F_NOFOLLOW;
	if (oflags & O_DIRECTORY)
		out->flags |= TRACE_F_DIRECTORY;
	out->follow_last = !(out->flags & TRACE_F_NOFOLLOW);

	/* O_PATH ignores every flag but O_DIRECTORY, O_NOFOLLOW and O_CLOEXEC:
	 * O_PATH|O_CREAT|O_TRUNC creates and truncates nothing. */
	if (oflags & O_PATH) {
		out->kind = OPEN_KIND_PATH;
		return;
	}
	unsigned acc = (unsigned)(oflags & O_ACCMODE);
	int write_access = acc == O_WRONLY || acc == O_RDWR;
	if (write_access)
		out->flags |= TRACE_F_WRITE;
	/* O_TMPFILE contains the O_DIRECTORY bit: test the whole mask. */
	if ((oflags & O_TMPFILE) == O_TMPFILE) {
		out->kind = OPEN_KIND_TMPFILE;
		out->flags |= TRACE_F_DIRECTORY;
		return;
	}
	/* O_CREAT|O_EXCL never follows a final symlink: it fails with EEXIST. */
	if ((oflags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)) {
		out->follow_last = 0;
		out->exclusive = 1;
	}
	/* Linux truncates on O_RDONLY|O_TRUNC too (it asks for write permission). */
	if (write_access || oflags & O_TRUNC) {
		out->kind = OPEN_KIND_WRITE;
		out->keeps_content = !(oflags & O_TRUNC);
		return;
	}
	out->kind = oflags & O_CREAT ? OPEN_KIND_CREATE : OPEN_KIND_READ;
}

unsigned classify_at_flags(uint64_t at_flags)
{
	return at_flags & AT_SYMLINK_NOFOLLOW ? TRACE_F_NOFOLLOW : 0;
}

int classify_is_fd_op(uint64_t at_flags, int path_is_null, int path_is_empty)
{
	if (path_is_null)
		return 1;
	return path_is_empty && (at_flags & AT_EMPTY_PATH);
}

unsigned classify_access_mode(uint64_t mode)
{
	return mode & X_OK ? TRACE_F_EXECUTE : 0;
}

void classify_rename(uint64_t flags, struct rename_class *out)
{
	/* RENAME_NOREPLACE and RENAME_WHITEOUT move the source like rename();
	 * a whiteout left at the old name is a change the final state shows. */
	out->old_keeps = 1;
	out->new_keeps = (flags & RENAME_EXCHANGE) != 0;
}

int classify_utimens_sets_mtime(const struct timespec *times)
{
	if (!times)
		return 0;
	long ns = times[1].tv_nsec;
	return ns != UTIME_NOW && ns != UTIME_OMIT;
}

int classify_new_namespace(uint64_t flags, int is_clone)
{
	uint64_t mask = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
	                CLONE_NEWNET | CLONE_NEWCGROUP;
	if (!is_clone)
		mask |= CLONE_NEWTIME;
	return (flags & mask) != 0;
}

int classify_is_restart(int64_t rval)
{
	/* ERESTARTSYS 512, ERESTARTNOINTR 513, ERESTARTNOHAND 514,
	 * ENOIOCTLCMD 515, ERESTART_RESTARTBLOCK 516: kernel-internal. */
	return rval <= -512 && rval >= -516;
}

int classify_setuid_mode(uint32_t mode)
{
	if (mode & S_ISUID)
		return 1;
	return (mode & S_ISGID) && (mode & S_IXGRP);
}

enum net_class classify_sockaddr(const void *addr, size_t len)
{
	sa_family_t family;
	if (len < sizeof family)
		return NET_LOCAL;
	memcpy(&family, addr, sizeof family);
	switch (family) {
	case AF_INET:
	case AF_INET6:
		return NET_REMOTE;
	case AF_UNIX: {
		size_t off = offsetof(struct sockaddr_un, sun_path);
		/* Abstract names (leading NUL) reach any process on the host. */
		if (len <= off || ((const char *)addr)[off] == '\0')
			return NET_REMOTE;
		return NET_UNIX;
	}
	default:
		return NET_LOCAL;
	}
}

/* Parses a decimal number at *p ending at '/' or NUL; advances *p. */
static int parse_num(const char **p, long *out)
{
	const char *s = *p;
	if (*s < '0' || *s > '9')
		return -1;
	long v = 0;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (*s - '0');
		if (v > 1 << 30)
			return -1;
		s++;
	}
	if (*s != '/' && *s != '\0')
		return -1;
	*p = s;
	*out = v;
	return 0;
}

/* After the "/proc/X" prefix: "/fd/N...", "/cwd..." or "/root...". */
static void parse_proc_tail(const char *s, pid_t pid, struct magic_ref *out)
{
	long n;
	if (strncmp(s, "/fd/", 4) == 0) {
		s += 4;
		if (parse_num(&s, &n) < 0)
			return;
		out->kind = MAGIC_FD;
		out->pid = pid;
		out->fd = (int)n;
		out->rest = s;
	} else if (strncmp(s, "/cwd", 4) == 0 && (s[4] == '/' || s[4] == '\0')) {
		out->kind = MAGIC_CWD;
		out->pid = pid;
		out->rest = s + 4;
	} else if (strncmp(s, "/root", 5) == 0 && (s[5] == '/' || s[5] == '\0')) {
		out->kind = MAGIC_ROOT;
		out->pid = pid;
		out->rest = s + 5;
	}
}

void classify_magic_path(const char *path, struct magic_ref *out)
{
	memset(out, 0, sizeof *out);
	out->kind = MAGIC_NONE;
	out->rest = "";
	/* Most paths are neither: one look at their start. */
	if (strncmp(path, "/dev/", 5) != 0 && strncmp(path, "/proc/", 6) != 0)
		return;
	static const char *const stdnames[] = {"/dev/stdin", "/dev/stdout", "/dev/stderr"};
	for (int i = 0; i < 3; i++) {
		size_t n = strlen(stdnames[i]);
		if (strncmp(path, stdnames[i], n) == 0 && (path[n] == '/' || path[n] == '\0')) {
			out->kind = MAGIC_FD;
			out->fd = i;
			out->rest = path + n;
			return;
		}
	}
	if (strncmp(path, "/dev/fd/", 8) == 0) {
		const char *s = path + 8;
		long n;
		if (parse_num(&s, &n) == 0) {
			out->kind = MAGIC_FD;
			out->fd = (int)n;
			out->rest = s;
		}
		return;
	}
	if (strncmp(path, "/proc/", 6) != 0)
		return;
	const char *s = path + 6;
	if (strncmp(s, "self", 4) == 0 && (s[4] == '/' || s[4] == '\0')) {
		parse_proc_tail(s + 4, 0, out);
		return;
	}
	if (strncmp(s, "thread-self", 11) == 0 && (s[11] == '/' || s[11] == '\0')) {
		parse_proc_tail(s + 11, 0, out);
		return;
	}
	long pid;
	if (parse_num(&s, &pid) < 0)
		return;
	if (strncmp(s, "/task/", 6) == 0) {
		s += 6;
		if (parse_num(&s, &pid) < 0)
			return;
	}
	parse_proc_tail(s, (pid_t)pid, out);
}
