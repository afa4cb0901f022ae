/*
 * The tracer's pure decisions: which flags make an open a read, a change or
 * a lookup; which AT_ flags mean "this descriptor"; which names are
 * descriptor magic links; how the kernel reads a "#!" line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cachet/trace.h"
#include "trace/classify.h"
#include "trace/exec_image.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#define RENAME_EXCHANGE  (1 << 1)
#define RENAME_WHITEOUT  (1 << 2)
#endif

static void open_flag_table_classifies_every_access_mode(void **state)
{
	static const struct {
		uint64_t oflags;
		enum open_kind kind;
		unsigned flags;
		int follow_last, keeps;
	} rows[] = {
	    {O_RDONLY, OPEN_KIND_READ, 0, 1, 0},
	    {O_RDONLY | O_CLOEXEC | O_NOCTTY, OPEN_KIND_READ, 0, 1, 0},
	    {O_RDONLY | O_CREAT, OPEN_KIND_CREATE, 0, 1, 0},
	    {O_RDONLY | O_CREAT | O_EXCL, OPEN_KIND_CREATE, 0, 0, 0},
	    {O_WRONLY | O_CREAT | O_TRUNC, OPEN_KIND_WRITE, TRACE_F_WRITE, 1, 0},
	    {O_WRONLY | O_TRUNC, OPEN_KIND_WRITE, TRACE_F_WRITE, 1, 0},
	    {O_WRONLY, OPEN_KIND_WRITE, TRACE_F_WRITE, 1, 1},
	    {O_RDWR, OPEN_KIND_WRITE, TRACE_F_WRITE, 1, 1},
	    {O_WRONLY | O_APPEND | O_CREAT, OPEN_KIND_WRITE, TRACE_F_WRITE, 1, 1},
	    {O_WRONLY | O_CREAT | O_EXCL, OPEN_KIND_WRITE, TRACE_F_WRITE, 0, 1},
	    /* Linux truncates on O_RDONLY|O_TRUNC. */
	    {O_RDONLY | O_TRUNC, OPEN_KIND_WRITE, 0, 1, 0},
	    /* O_PATH ignores O_CREAT and O_TRUNC. */
	    {O_PATH, OPEN_KIND_PATH, 0, 1, 0},
	    {O_PATH | O_CREAT | O_TRUNC, OPEN_KIND_PATH, 0, 1, 0},
	    {O_PATH | O_NOFOLLOW, OPEN_KIND_PATH, TRACE_F_NOFOLLOW, 0, 0},
	    {O_RDONLY | O_DIRECTORY, OPEN_KIND_READ, TRACE_F_DIRECTORY, 1, 0},
	    {O_RDONLY | O_NOFOLLOW, OPEN_KIND_READ, TRACE_F_NOFOLLOW, 0, 0},
	    /* O_TMPFILE contains O_DIRECTORY; a plain O_DIRECTORY is no tmpfile. */
	    {O_TMPFILE | O_WRONLY, OPEN_KIND_TMPFILE, TRACE_F_WRITE | TRACE_F_DIRECTORY, 1, 0},
	    {O_TMPFILE | O_RDWR | O_EXCL, OPEN_KIND_TMPFILE, TRACE_F_WRITE | TRACE_F_DIRECTORY, 1,
	     0},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct open_class c;
		classify_open(rows[i].oflags, 0, &c);
		if (c.kind != rows[i].kind || c.flags != rows[i].flags ||
		    c.follow_last != rows[i].follow_last || c.keeps_content != rows[i].keeps)
			fail_msg("row %zu (oflags %#llx): kind %d flags %#x follow %d keeps %d", i,
			         (unsigned long long)rows[i].oflags, c.kind, c.flags, c.follow_last,
			         c.keeps_content);
	}
}

static void openat2_resolve_no_symlinks_is_nofollow(void **state)
{
	struct open_class c;
	classify_open(O_RDONLY, RESOLVE_NO_SYMLINKS, &c);
	assert_int_equal(c.kind, OPEN_KIND_READ);
	assert_int_equal(c.flags, TRACE_F_NOFOLLOW);
	assert_int_equal(c.follow_last, 0);
	classify_open(O_RDONLY, RESOLVE_BENEATH, &c);
	assert_int_equal(c.flags, 0);
}

static void at_flags_nofollow_and_empty_path(void **state)
{
	assert_int_equal(classify_at_flags(AT_SYMLINK_NOFOLLOW), TRACE_F_NOFOLLOW);
	assert_int_equal(classify_at_flags(AT_EMPTY_PATH), 0);
	assert_int_equal(classify_at_flags(AT_SYMLINK_FOLLOW), 0);
	/* fstat(fd) as glibc makes it: "" with AT_EMPTY_PATH */
	assert_true(classify_is_fd_op(AT_EMPTY_PATH, 0, 1));
	/* AT_EMPTY_PATH with a name is an ordinary lookup */
	assert_false(classify_is_fd_op(AT_EMPTY_PATH, 0, 0));
	/* "" without AT_EMPTY_PATH is ENOENT, no descriptor operation */
	assert_false(classify_is_fd_op(0, 0, 1));
	/* utimensat(fd, NULL, ...) */
	assert_true(classify_is_fd_op(0, 1, 0));
}

static void access_mode_x_ok_is_execute(void **state)
{
	assert_int_equal(classify_access_mode(F_OK), 0);
	assert_int_equal(classify_access_mode(R_OK | W_OK), 0);
	assert_int_equal(classify_access_mode(X_OK), TRACE_F_EXECUTE);
	assert_int_equal(classify_access_mode(R_OK | X_OK), TRACE_F_EXECUTE);
}

static void renameat2_exchange_keeps_both_contents(void **state)
{
	struct rename_class r;
	classify_rename(0, &r);
	assert_true(r.old_keeps);
	assert_false(r.new_keeps);
	classify_rename(RENAME_NOREPLACE, &r);
	assert_true(r.old_keeps);
	assert_false(r.new_keeps);
	classify_rename(RENAME_WHITEOUT, &r);
	assert_false(r.new_keeps);
	classify_rename(RENAME_EXCHANGE, &r);
	assert_true(r.old_keeps);
	assert_true(r.new_keeps);
}

static void utimensat_sets_mtime_only_with_an_explicit_mtime(void **state)
{
	struct timespec ts[2] = {{5, 0}, {7, 0}};
	assert_false(classify_utimens_sets_mtime(NULL));
	assert_true(classify_utimens_sets_mtime(ts));
	ts[1].tv_nsec = UTIME_NOW;
	assert_false(classify_utimens_sets_mtime(ts));
	ts[1].tv_nsec = UTIME_OMIT; /* atime only */
	assert_false(classify_utimens_sets_mtime(ts));
	ts[0].tv_nsec = UTIME_NOW;
	ts[1].tv_nsec = 0; /* explicit mtime, atime now */
	assert_true(classify_utimens_sets_mtime(ts));
}

static void clone_flags_with_new_namespaces(void **state)
{
	assert_false(classify_new_namespace(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_THREAD, 1));
	assert_false(classify_new_namespace(SIGCHLD, 1));
	assert_true(classify_new_namespace(CLONE_NEWUSER | SIGCHLD, 1));
	assert_true(classify_new_namespace(CLONE_NEWNS, 0));
	assert_true(classify_new_namespace(CLONE_NEWNET, 0));
	/* 0x80 is CLONE_NEWTIME for unshare/clone3 but the exit signal byte
	 * for clone() */
	assert_true(classify_new_namespace(0x80, 0));
	assert_false(classify_new_namespace(0x80, 1));
}

static void restart_errors_are_not_outcomes(void **state)
{
	assert_true(classify_is_restart(-512));
	assert_true(classify_is_restart(-516));
	assert_false(classify_is_restart(-ENOENT));
	assert_false(classify_is_restart(0));
	assert_false(classify_is_restart(3));
}

static void setuid_and_setgid_executables(void **state)
{
	assert_false(classify_setuid_mode(S_IFREG | 0755));
	assert_true(classify_setuid_mode(S_IFREG | S_ISUID | 0755));
	assert_true(classify_setuid_mode(S_IFREG | S_ISGID | 0755));
	/* setgid without group execute is mandatory locking, not setgid */
	assert_false(classify_setuid_mode(S_IFREG | S_ISGID | 0644));
}

static void socket_families(void **state)
{
	struct sockaddr_in in = {.sin_family = AF_INET};
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	strcpy(un.sun_path, "/run/x.sock");
	struct sockaddr_un abstract = {.sun_family = AF_UNIX};
	strcpy(abstract.sun_path + 1, "name");
	sa_family_t nl = AF_NETLINK;
	assert_int_equal(classify_sockaddr(&in, sizeof in), NET_REMOTE);
	assert_int_equal(classify_sockaddr(&in6, sizeof in6), NET_REMOTE);
	assert_int_equal(classify_sockaddr(&un, sizeof un), NET_UNIX);
	assert_int_equal(classify_sockaddr(&abstract, sizeof abstract), NET_REMOTE);
	assert_int_equal(classify_sockaddr(&nl, sizeof nl), NET_LOCAL);
	assert_int_equal(classify_sockaddr(&in, 1), NET_LOCAL);
}

static void descriptor_magic_links(void **state)
{
	struct magic_ref m;
	classify_magic_path("/proc/self/fd/3", &m);
	assert_int_equal(m.kind, MAGIC_FD);
	assert_int_equal(m.pid, 0);
	assert_int_equal(m.fd, 3);
	assert_string_equal(m.rest, "");

	classify_magic_path("/dev/fd/12/sub/x", &m);
	assert_int_equal(m.kind, MAGIC_FD);
	assert_int_equal(m.fd, 12);
	assert_string_equal(m.rest, "/sub/x");

	classify_magic_path("/proc/thread-self/fd/0", &m);
	assert_int_equal(m.kind, MAGIC_FD);
	assert_int_equal(m.fd, 0);

	classify_magic_path("/proc/4242/task/4243/fd/7", &m);
	assert_int_equal(m.kind, MAGIC_FD);
	assert_int_equal(m.pid, 4243);
	assert_int_equal(m.fd, 7);

	classify_magic_path("/proc/99/fd/1", &m);
	assert_int_equal(m.pid, 99);

	classify_magic_path("/dev/stdin", &m);
	assert_int_equal(m.kind, MAGIC_FD);
	assert_int_equal(m.fd, 0);
	classify_magic_path("/dev/stderr", &m);
	assert_int_equal(m.fd, 2);

	classify_magic_path("/proc/self/cwd/src/a.c", &m);
	assert_int_equal(m.kind, MAGIC_CWD);
	assert_string_equal(m.rest, "/src/a.c");
	classify_magic_path("/proc/thread-self/root/etc/x", &m);
	assert_int_equal(m.kind, MAGIC_ROOT);
	assert_int_equal(m.pid, 0);
	assert_string_equal(m.rest, "/etc/x");
	classify_magic_path("/proc/77/root", &m);
	assert_int_equal(m.kind, MAGIC_ROOT);
	assert_int_equal(m.pid, 77);
	assert_string_equal(m.rest, "");
	classify_magic_path("/proc/self/rootfs/x", &m);
	assert_int_equal(m.kind, MAGIC_NONE);

	/* Not magic: other /proc entries, names that only start alike. */
	classify_magic_path("/proc/self/exe", &m);
	assert_int_equal(m.kind, MAGIC_NONE);
	classify_magic_path("/proc/selfish/fd/1", &m);
	assert_int_equal(m.kind, MAGIC_NONE);
	classify_magic_path("/proc/self/fd/3x", &m);
	assert_int_equal(m.kind, MAGIC_NONE);
	classify_magic_path("/proc/self/fd", &m);
	assert_int_equal(m.kind, MAGIC_NONE);
	classify_magic_path("/dev/fdx/1", &m);
	assert_int_equal(m.kind, MAGIC_NONE);
	classify_magic_path("/home/u/proc/self/fd/1", &m);
	assert_int_equal(m.kind, MAGIC_NONE);
}

static void shebang_lines_as_the_kernel_reads_them(void **state)
{
	char interp[256];
	const char *s = "#!/bin/sh\necho\n";
	assert_true(shebang_interpreter(s, strlen(s), interp, sizeof interp));
	assert_string_equal(interp, "/bin/sh");
	s = "#! \t/usr/bin/env python3 -u\n";
	assert_true(shebang_interpreter(s, strlen(s), interp, sizeof interp));
	assert_string_equal(interp, "/usr/bin/env");
	/* A short file without a newline: the kernel's buffer is zero-filled
	 * after it, which ends the line. */
	s = "#!relative/interp";
	assert_true(shebang_interpreter(s, strlen(s), interp, sizeof interp));
	assert_string_equal(interp, "relative/interp");
	/* A name running past the 256-byte buffer is refused... */
	char longline[EXEC_HEAD_LEN];
	memset(longline, 'a', sizeof longline);
	longline[0] = '#';
	longline[1] = '!';
	assert_false(shebang_interpreter(longline, sizeof longline, interp, sizeof interp));
	/* ...but a name that ends inside it, with arguments cut off, is not. */
	memcpy(longline, "#!/bin/i x", 10);
	assert_true(shebang_interpreter(longline, sizeof longline, interp, sizeof interp));
	assert_string_equal(interp, "/bin/i");
	s = "#!   \n";
	assert_false(shebang_interpreter(s, strlen(s), interp, sizeof interp));
	s = "\x7f"
	    "ELF";
	assert_false(shebang_interpreter(s, 4, interp, sizeof interp));
	s = "#";
	assert_false(shebang_interpreter(s, 1, interp, sizeof interp));
}

static void elf_interpreter_of_a_dynamic_program(void **state)
{
	char interp[4096];
	int fd = open("/bin/sh", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(elf_interpreter(fd, interp, sizeof interp), 1);
	close(fd);
	assert_string_equal(interp, "/lib64/ld-linux-x86-64.so.2");
	/* not an ELF file */
	fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(elf_interpreter(fd, interp, sizeof interp), 0);
	close(fd);
}

/* A made-up ELF file whose program headers start at phoff and whose
 * interpreter name lies at interp_off: headers anywhere in the file are
 * read, within the first block or beyond it. */
static int made_up_elf(unsigned long phoff, unsigned long interp_off, const char *name)
{
	int fd = open("/tmp", O_TMPFILE | O_RDWR, 0600);
	assert_true(fd >= 0);
	Elf64_Ehdr eh;
	memset(&eh, 0, sizeof eh);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_phoff = phoff;
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = 3;
	Elf64_Phdr ph[3];
	memset(ph, 0, sizeof ph);
	ph[0].p_type = PT_PHDR;
	ph[1].p_type = PT_LOAD;
	ph[2].p_type = PT_INTERP;
	ph[2].p_offset = interp_off;
	ph[2].p_filesz = strlen(name) + 1;
	assert_int_equal(pwrite(fd, &eh, sizeof eh, 0), (ssize_t)sizeof eh);
	assert_int_equal(pwrite(fd, ph, sizeof ph, (off_t)phoff), (ssize_t)sizeof ph);
	assert_int_equal(pwrite(fd, name, strlen(name) + 1, (off_t)interp_off),
	                 (ssize_t)strlen(name) + 1);
	return fd;
}

/* The interpreter of a file read once is read again only when the file
 * has changed: another size, mtime or ctime. */
static void elf_interpreter_cached_until_the_file_changes(void **state)
{
	static struct exec_interp_cache cache;
	char path[64], interp[4096];
	int fd = made_up_elf(64, 400, "/lib/ld-one.so");
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(elf_interpreter_cached(&cache, path, &st, interp, sizeof interp), 1);
	assert_string_equal(interp, "/lib/ld-one.so");
	/* The same file state: from the cache, with no open of the path. */
	assert_int_equal(
	    elf_interpreter_cached(&cache, "/nonexistent/x", &st, interp, sizeof interp), 1);
	assert_string_equal(interp, "/lib/ld-one.so");
	/* Rewritten in place, same size; its times are set apart from the
	 * first state's (a rewrite within one clock tick keeps them). */
	assert_int_equal(pwrite(fd, "/lib/ld-two.so", 15, 400), 15);
	struct timespec times[2] = {{0, UTIME_OMIT}, {st.st_mtim.tv_sec - 10, 0}};
	assert_int_equal(futimens(fd, times), 0);
	struct stat st2;
	assert_int_equal(fstat(fd, &st2), 0);
	assert_int_equal(elf_interpreter_cached(&cache, path, &st2, interp, sizeof interp), 1);
	assert_string_equal(interp, "/lib/ld-two.so");
	/* Another file with the first one's times is not the first one. */
	int other = made_up_elf(64, 400, "/lib/ld-three.so");
	char opath[64];
	snprintf(opath, sizeof opath, "/proc/self/fd/%d", other);
	struct stat ost;
	assert_int_equal(fstat(other, &ost), 0);
	assert_int_equal(elf_interpreter_cached(&cache, opath, &ost, interp, sizeof interp), 1);
	assert_string_equal(interp, "/lib/ld-three.so");
	close(other);
	close(fd);
}

static void elf_interpreter_wherever_the_headers_lie(void **state)
{
	const unsigned long at[][2] = {{64, 400},    {64, 5000},  {900, 1100},
	                               {1000, 1200}, {3000, 200}, {5000, 9000}};
	for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
		char interp[64];
		int fd = made_up_elf(at[i][0], at[i][1], "/opt/ld-test.so");
		assert_int_equal(elf_interpreter(fd, interp, sizeof interp), 1);
		assert_string_equal(interp, "/opt/ld-test.so");
		/* Too long for the caller's buffer. */
		assert_int_equal(elf_interpreter(fd, interp, 8), -1);
		/* Cut off before its program headers. */
		assert_int_equal(ftruncate(fd, (off_t)at[i][0] + 10), 0);
		assert_int_equal(elf_interpreter(fd, interp, sizeof interp), -1);
		close(fd);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(open_flag_table_classifies_every_access_mode),
	    cmocka_unit_test(openat2_resolve_no_symlinks_is_nofollow),
	    cmocka_unit_test(at_flags_nofollow_and_empty_path),
	    cmocka_unit_test(access_mode_x_ok_is_execute),
	    cmocka_unit_test(renameat2_exchange_keeps_both_contents),
	    cmocka_unit_test(utimensat_sets_mtime_only_with_an_explicit_mtime),
	    cmocka_unit_test(clone_flags_with_new_namespaces),
	    cmocka_unit_test(restart_errors_are_not_outcomes),
	    cmocka_unit_test(setuid_and_setgid_executables),
	    cmocka_unit_test(socket_families),
	    cmocka_unit_test(descriptor_magic_links),
	    cmocka_unit_test(shebang_lines_as_the_kernel_reads_them),
	    cmocka_unit_test(elf_interpreter_of_a_dynamic_program),
	    cmocka_unit_test(elf_interpreter_wherever_the_headers_lie),
	    cmocka_unit_test(elf_interpreter_cached_until_the_file_changes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
