/*
 * trace_run over real programs: the shell, coreutils, python3, and a helper
 * program compiled here (dynamic and -static) for the calls the shell does
 * not make (O_TMPFILE + linkat, exec from a thread, a 32-bit syscall).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cachet/digest.h"
#include "cachet/fileid.h"
#include "cachet/trace.h"

extern char **environ;

static char dir[PATH_MAX];           /* the test's scratch directory (real path) */
static char helper[PATH_MAX];        /* dynamic helper */
static char helper_static[PATH_MAX]; /* "" when gcc -static is not available */

static const char helper_src[] =
    "#define _GNU_SOURCE\n"
    "#include <fcntl.h>\n#include <pthread.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
    "#include <string.h>\n#include <sys/resource.h>\n#include <sys/syscall.h>\n"
    "#include <unistd.h>\n"
    "static char *prog;\n"
    "static void *thread_exec(void *arg) { execl(prog, prog, (char *)0); _exit(99); }\n"
    "int main(int argc, char **argv) {\n"
    "  if (argc < 2) return 2;\n"
    "  if (!strcmp(argv[1], \"open\")) {\n"
    "    char b[64]; int fd = open(argv[2], O_RDONLY);\n"
    "    if (fd < 0) return 1; while (read(fd, b, sizeof b) > 0) ; close(fd); return 0; }\n"
    "  if (!strcmp(argv[1], \"tmpfile\")) {\n"
    "    int fd = open(argv[2], O_TMPFILE | O_WRONLY, 0644); if (fd < 0) return 3;\n"
    "    if (write(fd, \"tmp\\n\", 4) != 4) return 4;\n"
    "    char p[64]; snprintf(p, sizeof p, \"/proc/self/fd/%d\", fd);\n"
    "    return linkat(AT_FDCWD, p, AT_FDCWD, argv[3], AT_SYMLINK_FOLLOW) ? 5 : 0; }\n"
    "  if (!strcmp(argv[1], \"threadexec\")) {\n"
    "    pthread_t t; prog = argv[2];\n"
    "    if (pthread_create(&t, 0, thread_exec, 0)) return 6;\n"
    "    pthread_join(t, 0); return 7; }\n"
    "  if (!strcmp(argv[1], \"int80\")) {\n"
    "    long r; __asm__ volatile(\"int $0x80\" : \"=a\"(r) : \"a\"(20L) : \"memory\");\n"
    "    return r > 0 ? 0 : 8; }\n"
    "  if (!strcmp(argv[1], \"rdwr\")) {\n"
    "    int fd = open(argv[2], O_RDWR); if (fd < 0) return 9;\n"
    "    lseek(fd, 0, SEEK_END); return write(fd, \"more\\n\", 5) == 5 ? 0 : 10; }\n"
    "  if (!strcmp(argv[1], \"limits\")) {\n"
    "    struct rlimit l; int n = atoi(argv[2]);\n"
    "    for (int i = 0; i < n; i++) if (syscall(SYS_prlimit64, 0, RLIMIT_STACK, 0, &l)) return "
    "11;\n"
    "    return syscall(SYS_prlimit64, 0, RLIMIT_DATA, 0, &l) ? 12 : 0; }\n"
    "  return 2;\n"
    "}\n";

static void write_file(const char *name, const char *content)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static const char *at(const char *name)
{
	static char bufs[4][PATH_MAX];
	static int next;
	char *b = bufs[next++ % 4];
	snprintf(b, PATH_MAX, "%s/%s", dir, name);
	return b;
}

static int sh(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int group_setup(void **state)
{
	char tmpl[] = "/tmp/cachet-trace-XXXXXX";
	if (!mkdtemp(tmpl) || !realpath(tmpl, dir))
		return -1;
	if (chdir(dir) < 0)
		return -1;
	write_file("helper.c", helper_src);
	snprintf(helper, sizeof helper, "%s/helper", dir);
	char cmd[3 * PATH_MAX];
	snprintf(cmd, sizeof cmd, "gcc -O1 -pthread -o %s %s/helper.c", helper, dir);
	if (sh(cmd) != 0)
		return -1;
	snprintf(helper_static, sizeof helper_static, "%s/helper_static", dir);
	snprintf(cmd, sizeof cmd, "gcc -O1 -static -pthread -o %s %s/helper.c 2>/dev/null",
	         helper_static, dir);
	if (sh(cmd) != 0)
		helper_static[0] = '\0';
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return sh(cmd) == 0 ? 0 : -1;
}

struct run_opts {
	int stdin_fd; /* -1: /dev/null */
	int stdin_is_stream;
	const char *file; /* NULL: argv[0] */
	void (*on_input)(void *ctx, const char *path, uint64_t size);
	void *on_input_ctx;
	uint64_t on_input_min_size;
};

static void run_with(char *const argv[], const struct run_opts *o, struct trace_result *r)
{
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	assert_true(devnull >= 0);
	struct trace_spec spec;
	memset(&spec, 0, sizeof spec);
	spec.file = o && o->file ? o->file : argv[0];
	spec.argv = argv;
	spec.envp = environ;
	spec.stdin_fd = o && o->stdin_fd >= 0 ? o->stdin_fd : devnull;
	spec.stdout_fd = devnull;
	spec.stderr_fd = 2;
	spec.stdin_is_stream = o ? o->stdin_is_stream : 0;
	if (o) {
		spec.on_input = o->on_input;
		spec.on_input_ctx = o->on_input_ctx;
		spec.on_input_min_size = o->on_input_min_size;
	}
	struct error e;
	if (trace_run(&spec, r, &e) < 0)
		fail_msg("trace_run: %s", e.msg);
	close(devnull);
}

static void run(char *const argv[], struct trace_result *r)
{
	run_with(argv, NULL, r);
}

static void run_sh(const char *script, struct trace_result *r)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	run(argv, r);
}

static const struct trace_event *find(const struct trace_result *r, enum trace_event_kind kind,
                                      const char *path)
{
	for (size_t i = 0; i < r->nevents; i++)
		if (r->events[i].kind == kind && strcmp(r->events[i].path, path) == 0)
			return &r->events[i];
	return NULL;
}

static size_t index_of(const struct trace_result *r, const struct trace_event *ev)
{
	return (size_t)(ev - r->events);
}

static void dump(const struct trace_result *r)
{
	for (size_t i = 0; i < r->nevents; i++)
		fprintf(stderr, "  %d f=%x err=%d %s\n", r->events[i].kind, r->events[i].flags,
		        r->events[i].err, r->events[i].path);
}

static const struct trace_event *expect(const struct trace_result *r, enum trace_event_kind kind,
                                        const char *path)
{
	const struct trace_event *ev = find(r, kind, path);
	if (!ev) {
		dump(r);
		fail_msg("no event of kind %d for %s", kind, path);
	}
	return ev;
}

static void no_event_under(const struct trace_result *r, const char *root)
{
	size_t n = strlen(root);
	for (size_t i = 0; i < r->nevents; i++)
		if (strncmp(r->events[i].path, root, n) == 0 &&
		    (r->events[i].path[n] == '/' || r->events[i].path[n] == '\0'))
			fail_msg("event for ignored path %s", r->events[i].path);
}

/* ---- tests ---------------------------------------------------------- */

static void cat_of_a_file_is_a_read_with_its_fingerprint(void **state)
{
	write_file("in.txt", "hello\n");
	char *argv[] = {"/bin/cat", (char *)at("in.txt"), NULL};
	struct trace_result r;
	run(argv, &r);
	assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
	assert_null(r.uncacheable);
	assert_true(r.nstops > 0);
	const struct trace_event *ev = expect(&r, TRACE_READ, at("in.txt"));
	struct stat st;
	assert_int_equal(stat(at("in.txt"), &st), 0);
	struct file_id id;
	file_id_from_stat(&st, &id);
	assert_true(file_id_equal(&ev->id, &ev->id));
	assert_true(file_id_equal(&id, &ev->id));
	/* the program, its loader and libc */
	expect(&r, TRACE_EXEC, "/bin/cat");
	expect(&r, TRACE_EXEC, "/lib64/ld-linux-x86-64.so.2");
	no_event_under(&r, "/proc");
	no_event_under(&r, "/dev");
	trace_result_free(&r);
}

/* Reads of the stack limit go through without a stop (glibc's start makes
 * one in every process) and are keyed all the same, at the exec of each
 * program; a read of another limit still stops and is keyed by it. */
static void the_stack_limit_is_keyed_without_a_stop_per_read(void **state)
{
	char *few[] = {helper, "limits", "1", NULL};
	char *many[] = {helper, "limits", "200", NULL};
	struct trace_result r1, r2;
	run(few, &r1);
	run(many, &r2);
	assert_true(WIFEXITED(r2.status) && WEXITSTATUS(r2.status) == 0);
	expect(&r2, TRACE_FACT, "rlimit:3");
	expect(&r2, TRACE_FACT, "rlimit:2");
	assert_true(r2.nstops < r1.nstops + 10);
	if (helper_static[0]) {
		struct trace_result rs;
		char *st[] = {helper_static, "limits", "200", NULL};
		run(st, &rs);
		assert_true(WIFEXITED(rs.status) && WEXITSTATUS(rs.status) == 0);
		expect(&rs, TRACE_FACT, "rlimit:3");
		expect(&rs, TRACE_FACT, "rlimit:2");
		trace_result_free(&rs);
	}
	trace_result_free(&r1);
	trace_result_free(&r2);
}

static void test_e_of_a_missing_path_is_a_probe_enoent(void **state)
{
	struct trace_result r;
	run_sh("test -e missing", &r);
	assert_int_equal(WEXITSTATUS(r.status), 1);
	const struct trace_event *ev = expect(&r, TRACE_PROBE, at("missing"));
	assert_int_equal(ev->err, ENOENT);
	trace_result_free(&r);
}

static void ls_of_a_directory_is_a_list(void **state)
{
	assert_int_equal(mkdir(at("listed"), 0755) == 0 || errno == EEXIST, 1);
	write_file("listed/a", "a");
	char *argv[] = {"/bin/ls", (char *)at("listed"), NULL};
	struct trace_result r;
	run(argv, &r);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	expect(&r, TRACE_LIST, at("listed"));
	trace_result_free(&r);
}

static void shell_write_rename_and_remove_touch_with_the_state_before(void **state)
{
	write_file("pre", "existing\n");
	unlink(at("out"));
	unlink(at("out2"));
	struct trace_result r;
	run_sh("echo x > out; mv out out2; rm pre", &r);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	const struct trace_event *out = expect(&r, TRACE_TOUCH, at("out"));
	const struct trace_event *out2 = expect(&r, TRACE_TOUCH, at("out2"));
	const struct trace_event *pre = expect(&r, TRACE_TOUCH, at("pre"));
	assert_false(out->pre_exists);
	assert_false(out2->pre_exists);
	assert_true(pre->pre_exists);
	assert_true(S_ISREG(pre->pre_id.mode));
	assert_int_equal(pre->pre_id.size, 9);
	assert_true(index_of(&r, out) < index_of(&r, out2));
	assert_true(index_of(&r, out2) < index_of(&r, pre));
	/* one TOUCH per path: the rename away from out changes it again */
	size_t touches = 0;
	for (size_t i = 0; i < r.nevents; i++)
		if (r.events[i].kind == TRACE_TOUCH && strcmp(r.events[i].path, at("out")) == 0)
			touches++;
	assert_int_equal(touches, 1);
	trace_result_free(&r);
}

static void rename_of_an_existing_file_reads_its_content_first(void **state)
{
	write_file("src.txt", "moved content\n");
	struct digest want;
	assert_int_equal(digest_file(at("src.txt"), &want, NULL, NULL), 0);
	unlink(at("dst.txt"));
	struct trace_result r;
	run_sh("mv src.txt dst.txt", &r);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	const struct trace_event *rd = expect(&r, TRACE_READ, at("src.txt"));
	const struct trace_event *t = expect(&r, TRACE_TOUCH, at("src.txt"));
	expect(&r, TRACE_TOUCH, at("dst.txt"));
	assert_true(index_of(&r, rd) < index_of(&r, t));
	assert_true(t->has_pre_digest);
	assert_true(digest_equal(&t->pre_digest, &want));
	trace_result_free(&r);
}

static void append_reads_the_old_content_before_the_touch(void **state)
{
	write_file("log.txt", "line1\n");
	struct digest want;
	assert_int_equal(digest_file(at("log.txt"), &want, NULL, NULL), 0);
	struct trace_result r;
	run_sh("echo line2 >> log.txt", &r);
	const struct trace_event *rd = expect(&r, TRACE_READ, at("log.txt"));
	const struct trace_event *t = expect(&r, TRACE_TOUCH, at("log.txt"));
	assert_true(index_of(&r, rd) < index_of(&r, t));
	assert_true(t->pre_exists);
	assert_true(t->has_pre_digest);
	assert_true(digest_equal(&t->pre_digest, &want));
	trace_result_free(&r);
}

static void rdwr_open_of_an_existing_file_is_read_then_touched(void **state)
{
	write_file("rw.txt", "abc\n");
	char *argv[] = {helper, "rdwr", (char *)at("rw.txt"), NULL};
	struct trace_result r;
	run(argv, &r);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	const struct trace_event *rd = expect(&r, TRACE_READ, at("rw.txt"));
	const struct trace_event *t = expect(&r, TRACE_TOUCH, at("rw.txt"));
	assert_true(index_of(&r, rd) < index_of(&r, t));
	assert_true(t->has_pre_digest);
	trace_result_free(&r);
}

static void relative_path_after_cd_resolves_against_the_new_cwd(void **state)
{
	assert_int_equal(mkdir(at("sub"), 0755) == 0 || errno == EEXIST, 1);
	write_file("sub/inner.txt", "inner\n");
	struct trace_result r;
	run_sh("cd sub && cat inner.txt >/dev/null && cat ../sub/./inner.txt", &r);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	expect(&r, TRACE_READ, at("sub/inner.txt"));
	/* ".." is kept as text: with symlinks a/b/.. need not be a */
	expect(&r, TRACE_READ, at("sub/../sub/inner.txt"));
	const struct trace_event *cd = expect(&r, TRACE_PROBE, at("sub"));
	assert_int_equal(cd->err, 0);
	assert_false(find(&r, TRACE_READ, at("inner.txt")));
	trace_result_free(&r);
}

static void static_binary_open_is_seen(void **state)
{
	if (!helper_static[0])
		skip();
	write_file("static-in.txt", "static\n");
	char *argv[] = {helper_static, "open", (char *)at("static-in.txt"), NULL};
	struct trace_result r;
	run(argv, &r);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	expect(&r, TRACE_READ, at("static-in.txt"));
	expect(&r, TRACE_EXEC, helper_static);
	/* a static program has no ELF interpreter */
	assert_null(find(&r, TRACE_EXEC, "/lib64/ld-linux-x86-64.so.2"));
	trace_result_free(&r);
}

static void script_exec_records_the_interpreter_and_reads_the_script(void **state)
{
	write_file("script.sh", "#!/bin/sh\nexit 3\n");
	assert_int_equal(chmod(at("script.sh"), 0755), 0);
	char *argv[] = {(char *)at("script.sh"), NULL};
	struct trace_result r;
	run(argv, &r);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 3);
	expect(&r, TRACE_EXEC, at("script.sh"));
	expect(&r, TRACE_READ, at("script.sh"));
	const struct trace_event *interp = expect(&r, TRACE_EXEC, "/bin/sh");
	struct stat st;
	assert_int_equal(stat("/bin/sh", &st), 0);
	assert_int_equal(interp->id.ino, st.st_ino);
	expect(&r, TRACE_EXEC, "/lib64/ld-linux-x86-64.so.2");
	trace_result_free(&r);
}

static void failed_exec_in_a_path_search_is_a_probe(void **state)
{
	struct trace_result r;
	run_sh("PATH=/nonexistent-dir:/usr/bin:/bin; env true", &r);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	/* env execvp()s along PATH: the miss is kept */
	const struct trace_event *miss = expect(&r, TRACE_PROBE, "/nonexistent-dir/true");
	assert_int_equal(miss->err, ENOENT);
	expect(&r, TRACE_EXEC, "/usr/bin/true");
	trace_result_free(&r);
}

static void exec_of_a_missing_file_reports_enoent(void **state)
{
	char *argv[] = {"nothing-here", NULL};
	struct run_opts o = {.stdin_fd = -1, .file = at("nothing-here")};
	struct trace_result r;
	run_with(argv, &o, &r);
	assert_int_equal(r.exec_errno, ENOENT);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 127);
	trace_result_free(&r);
}

static void on_term(int sig)
{
	(void)sig;
}

/* The step starts as after a plain exec from a clean state, whatever the
 * caller's signals: nothing ignored or blocked; and with the variations
 * asked for (the child sets them with raw syscalls). */
static void the_step_gets_default_signals_and_its_variations(void **state)
{
	(void)state;
	struct sigaction ign = {.sa_handler = SIG_IGN}, term = {.sa_handler = on_term}, old_int,
	                 old_term;
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGTERM, &term, &old_term);
	sigset_t usr1, old_mask;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old_mask);

	int out = open(at("status.txt"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	assert_true(out >= 0 && devnull >= 0);
	char *argv[] = {"/bin/cat", "/proc/self/status", NULL};
	struct trace_spec spec;
	memset(&spec, 0, sizeof spec);
	spec.file = argv[0];
	spec.argv = argv;
	spec.envp = environ;
	spec.stdin_fd = devnull;
	spec.stdout_fd = out;
	spec.stderr_fd = 2;
	spec.set_umask = 1;
	spec.umask = 027;
	spec.max_cpus = 1;
	struct trace_result r;
	struct error e;
	errno = 0;
	if (trace_run(&spec, &r, &e) < 0)
		fail_msg("trace_run: %s", e.msg);
	close(out);
	close(devnull);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
	trace_result_free(&r);

	char text[8192];
	int fd = open(at("status.txt"), O_RDONLY | O_CLOEXEC);
	ssize_t n = read(fd, text, sizeof text - 1);
	close(fd);
	assert_true(n > 0);
	text[n] = '\0';
	assert_non_null(strstr(text, "\nSigIgn:\t0000000000000000\n"));
	assert_non_null(strstr(text, "\nSigBlk:\t0000000000000000\n"));
	assert_non_null(strstr(text, "\nUmask:\t0027\n"));
	cpu_set_t own;
	if (sched_getaffinity(0, sizeof own, &own) == 0 && CPU_COUNT(&own) > 1) {
		const char *cpus = strstr(text, "\nCpus_allowed_list:\t");
		assert_non_null(cpus);
		cpus += strlen("\nCpus_allowed_list:\t");
		assert_int_equal(strcspn(cpus, ",-\n"), strcspn(cpus, "\n"));
	}
}

static void exit_status_and_death_by_signal_are_preserved(void **state)
{
	struct trace_result r;
	run_sh("exit 7", &r);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 7);
	trace_result_free(&r);
	run_sh("kill -TERM $$", &r);
	assert_true(WIFSIGNALED(r.status));
	assert_int_equal(WTERMSIG(r.status), SIGTERM);
	trace_result_free(&r);
	/* a stopped and continued child: the group-stop must not hang */
	run_sh("sleep 0.2 & kill -STOP $!; kill -CONT $!; wait", &r);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
	trace_result_free(&r);
}

static void connect_to_a_tcp_listener_is_uncacheable(void **state)
{
	if (access("/usr/bin/python3", X_OK) != 0)
		skip();
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(s, 4), 0);
	socklen_t len = sizeof a;
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &len), 0);
	char code[256];
	snprintf(code, sizeof code,
	         "import socket; socket.create_connection((\"127.0.0.1\", %d)).close()",
	         ntohs(a.sin_port));
	char *argv[] = {"/usr/bin/python3", "-c", code, NULL};
	struct trace_result r;
	run(argv, &r);
	close(s);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	assert_non_null(r.uncacheable);
	assert_string_equal(r.uncacheable, "network connection");
	trace_result_free(&r);
}

static void background_process_left_running_is_uncacheable(void **state)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct trace_result r;
	run_sh("sleep 1 &", &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	assert_non_null(r.uncacheable);
	assert_string_equal(r.uncacheable, "process left running");
	/* trace_run served the leftover until it ended */
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_true(secs > 0.8);
	trace_result_free(&r);
	/* a child that finishes before the main process does not count */
	run_sh("true & wait", &r);
	assert_null(r.uncacheable);
	trace_result_free(&r);
}

static void reading_a_stdin_pipe_is_uncacheable_but_a_redirected_file_is_not(void **state)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(write(p[1], "data\n", 5), 5);
	close(p[1]);
	char *argv[] = {"/bin/cat", NULL};
	struct run_opts o = {.stdin_fd = p[0], .stdin_is_stream = 1};
	struct trace_result r;
	run_with(argv, &o, &r);
	close(p[0]);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	assert_non_null(r.uncacheable);
	assert_string_equal(r.uncacheable, "reads stdin stream");
	trace_result_free(&r);

	write_file("stdin-file.txt", "file\n");
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	close(p[1]);
	char *argv2[] = {"/bin/sh", "-c", "cat < stdin-file.txt", NULL};
	struct run_opts o2 = {.stdin_fd = p[0], .stdin_is_stream = 1};
	run_with(argv2, &o2, &r);
	close(p[0]);
	assert_null(r.uncacheable);
	expect(&r, TRACE_READ, at("stdin-file.txt"));
	trace_result_free(&r);
}

static void descriptor_paths_resolve_to_their_targets(void **state)
{
	assert_int_equal(mkdir(at("fddir"), 0755) == 0 || errno == EEXIST, 1);
	write_file("fddir/x.txt", "x\n");
	struct trace_result r;
	run_sh("exec 3< fddir; cat /dev/fd/3/x.txt /proc/self/fd/3/x.txt", &r);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	expect(&r, TRACE_READ, at("fddir/x.txt"));
	no_event_under(&r, "/proc");
	no_event_under(&r, "/dev");
	trace_result_free(&r);
}

static void ignored_roots_produce_no_events(void **state)
{
	assert_int_equal(mkdir(at("private"), 0755) == 0 || errno == EEXIST, 1);
	write_file("private/p.txt", "p\n");
	const char *roots[] = {at("private"), NULL};
	char *argv[] = {"/bin/sh", "-c", "cat private/p.txt; echo y > private/new", NULL};
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	struct trace_spec spec = {.file = "/bin/sh",
	                          .argv = argv,
	                          .envp = environ,
	                          .stdin_fd = devnull,
	                          .stdout_fd = devnull,
	                          .stderr_fd = 2,
	                          .ignore_roots = roots};
	struct trace_result r;
	struct error e;
	assert_int_equal(trace_run(&spec, &r, &e), 0);
	close(devnull);
	no_event_under(&r, at("private"));
	trace_result_free(&r);
}

static void touch_with_explicit_time_sets_mtime(void **state)
{
	write_file("stamped", "s\n");
	struct trace_result r;
	run_sh("touch -d @1000000000 stamped", &r);
	expect(&r, TRACE_TOUCH, at("stamped"));
	expect(&r, TRACE_SET_MTIME, at("stamped"));
	trace_result_free(&r);
	run_sh("touch stamped", &r);
	expect(&r, TRACE_TOUCH, at("stamped"));
	assert_null(find(&r, TRACE_SET_MTIME, at("stamped")));
	trace_result_free(&r);
}

/* What the step left is taken when it ends: each path it changed, and all
 * that a directory it renamed into place holds. */
static void the_final_state_of_changed_paths_follows_the_run(void **state)
{
	struct trace_result r;
	run_sh("rm -rf mv.t mv.d && mkdir mv.t && echo a > mv.t/a && mv mv.t mv.d && echo f > mv.f",
	       &r);
	expect(&r, TRACE_MOVED_IN, at("mv.d"));
	assert_null(find(&r, TRACE_MOVED_IN, at("mv.f")));
	size_t first_final = r.nevents;
	for (size_t i = 0; i < r.nevents; i++)
		if (r.events[i].kind == TRACE_FINAL && first_final == r.nevents)
			first_final = i;
	for (size_t i = first_final; i < r.nevents; i++)
		assert_int_equal(r.events[i].kind, TRACE_FINAL); /* after all others */
	assert_int_equal(expect(&r, TRACE_FINAL, at("mv.t"))->err, ENOENT);
	assert_true(S_ISDIR(expect(&r, TRACE_FINAL, at("mv.d"))->id.mode));
	const struct trace_event *a = expect(&r, TRACE_FINAL, at("mv.d/a"));
	const struct trace_event *f = expect(&r, TRACE_FINAL, at("mv.f"));
	struct stat st;
	struct file_id id;
	assert_int_equal(lstat(at("mv.f"), &st), 0);
	file_id_from_stat(&st, &id);
	assert_true(file_id_equal(&f->id, &id));
	assert_int_equal(a->err, 0);
	assert_int_equal(a->id.size, 2);
	trace_result_free(&r);
}

static void tmpfile_linked_into_place_touches_the_new_name(void **state)
{
	unlink(at("linked.txt"));
	char *argv[] = {helper, "tmpfile", dir, (char *)at("linked.txt"), NULL};
	struct trace_result r;
	run(argv, &r);
	if (WEXITSTATUS(r.status) == 3) { /* file system without O_TMPFILE */
		trace_result_free(&r);
		skip();
	}
	assert_int_equal(WEXITSTATUS(r.status), 0);
	const struct trace_event *t = expect(&r, TRACE_TOUCH, at("linked.txt"));
	assert_false(t->pre_exists);
	const struct trace_event *d = expect(&r, TRACE_PROBE, dir);
	assert_true(d->flags & TRACE_F_DIRECTORY);
	trace_result_free(&r);
}

static void exec_from_a_non_leader_thread_is_seen(void **state)
{
	char *argv[] = {helper, "threadexec", "/bin/true", NULL};
	struct trace_result r;
	run(argv, &r);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
	expect(&r, TRACE_EXEC, "/bin/true");
	trace_result_free(&r);
}

static void int80_syscall_is_uncacheable(void **state)
{
	char *argv[] = {helper, "int80", NULL};
	struct trace_result r;
	run(argv, &r);
	/* Kernels without IA32 emulation kill the process instead. */
	if (WIFSIGNALED(r.status)) {
		trace_result_free(&r);
		skip();
	}
	assert_non_null(r.uncacheable);
	assert_string_equal(r.uncacheable, "32-bit syscall");
	trace_result_free(&r);
}

/* on_input names each regular file the step reads or runs, of the size
 * asked or more, once: the big file read twice and cat itself, not the
 * small file. */
struct named_inputs {
	char paths[16][PATH_MAX];
	int n;
};

static void note_input(void *ctx, const char *path, uint64_t size)
{
	struct named_inputs *in = ctx;
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(size, (uint64_t)st.st_size);
	if (in->n < 16)
		snprintf(in->paths[in->n], sizeof in->paths[0], "%s", path);
	in->n++;
}

static int named(const struct named_inputs *in, const char *path)
{
	int times = 0;
	for (int i = 0; i < in->n && i < 16; i++)
		times += strcmp(in->paths[i], path) == 0;
	return times;
}

static void big_inputs_are_named_as_the_step_reads_them(void **state)
{
	char big[PATH_MAX], small[PATH_MAX], cmd[3 * PATH_MAX];
	snprintf(big, sizeof big, "%s/input-big", dir);
	snprintf(small, sizeof small, "%s/input-small", dir);
	snprintf(cmd, sizeof cmd, "head -c 300000 /dev/zero > %s && echo small > %s", big, small);
	assert_int_equal(sh(cmd), 0);
	char script[3 * PATH_MAX];
	snprintf(script, sizeof script, "cat %s %s %s > /dev/null", big, small, big);
	char *argv[] = {"/bin/sh", "-c", script, NULL};
	struct named_inputs in = {0};
	struct run_opts o = {.stdin_fd = -1,
	                     .on_input = note_input,
	                     .on_input_ctx = &in,
	                     .on_input_min_size = 256 * 1024};
	struct trace_result r;
	run_with(argv, &o, &r);
	assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
	assert_int_equal(named(&in, big), 1);
	assert_int_equal(named(&in, small), 0);
	/* Every name is a file of the size asked, read or run by the step. */
	for (int i = 0; i < in.n && i < 16; i++) {
		struct stat st;
		assert_int_equal(stat(in.paths[i], &st), 0);
		assert_true(S_ISREG(st.st_mode) && st.st_size >= 256 * 1024);
		assert_true(find(&r, TRACE_READ, in.paths[i]) || find(&r, TRACE_EXEC, in.paths[i]));
	}
	trace_result_free(&r);
}

static void self_is_not_traced(void **state)
{
	assert_false(trace_self_is_traced());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(the_stack_limit_is_keyed_without_a_stop_per_read),
	    cmocka_unit_test(cat_of_a_file_is_a_read_with_its_fingerprint),
	    cmocka_unit_test(test_e_of_a_missing_path_is_a_probe_enoent),
	    cmocka_unit_test(ls_of_a_directory_is_a_list),
	    cmocka_unit_test(shell_write_rename_and_remove_touch_with_the_state_before),
	    cmocka_unit_test(rename_of_an_existing_file_reads_its_content_first),
	    cmocka_unit_test(append_reads_the_old_content_before_the_touch),
	    cmocka_unit_test(rdwr_open_of_an_existing_file_is_read_then_touched),
	    cmocka_unit_test(relative_path_after_cd_resolves_against_the_new_cwd),
	    cmocka_unit_test(static_binary_open_is_seen),
	    cmocka_unit_test(script_exec_records_the_interpreter_and_reads_the_script),
	    cmocka_unit_test(failed_exec_in_a_path_search_is_a_probe),
	    cmocka_unit_test(exec_of_a_missing_file_reports_enoent),
	    cmocka_unit_test(exit_status_and_death_by_signal_are_preserved),
	    cmocka_unit_test(the_step_gets_default_signals_and_its_variations),
	    cmocka_unit_test(connect_to_a_tcp_listener_is_uncacheable),
	    cmocka_unit_test(background_process_left_running_is_uncacheable),
	    cmocka_unit_test(reading_a_stdin_pipe_is_uncacheable_but_a_redirected_file_is_not),
	    cmocka_unit_test(descriptor_paths_resolve_to_their_targets),
	    cmocka_unit_test(ignored_roots_produce_no_events),
	    cmocka_unit_test(touch_with_explicit_time_sets_mtime),
	    cmocka_unit_test(the_final_state_of_changed_paths_follows_the_run),
	    cmocka_unit_test(tmpfile_linked_into_place_touches_the_new_name),
	    cmocka_unit_test(exec_from_a_non_leader_thread_is_seen),
	    cmocka_unit_test(int80_syscall_is_uncacheable),
	    cmocka_unit_test(big_inputs_are_named_as_the_step_reads_them),
	    cmocka_unit_test(self_is_not_traced),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
