/*
 * trace_run: the child's setup, PTRACE_SEIZE and the stop loop over the
 * whole process tree.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define TRACER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRACER_ASAN 1
#endif
#endif
#ifdef TRACER_ASAN
#include <sanitizer/asan_interface.h>
#endif

#include "cachet/trace.h"
#include "trace/raw_syscall.h"
#include "trace/seccomp_filter.h"
#include "trace/tracer.h"

#define SEIZE_OPTIONS                                                                              \
	(PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC |     \
	 PTRACE_O_TRACESECCOMP | PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL)

/* What the child tells the parent through its close-on-exec pipe; nothing
 * arrives when execve succeeded. */
enum child_stage { STAGE_SETUP = 1, STAGE_SECCOMP = 2, STAGE_EXEC = 3 };
struct child_report {
	int stage;
	int err;
};

/* err: a positive errno. */
static void __attribute__((noreturn)) child_fail(int fd, int stage, long err)
{
	struct child_report r = {stage, (int)err};
	raw_syscall(__NR_write, fd, (long)&r, sizeof r, 0, 0, 0);
	raw_syscall(__NR_exit_group, 127, 0, 0, 0, 0, 0);
	__builtin_unreachable();
}

/* Writes "a b 1" (an id map of one id) or text to a /proc file; async-
 * signal-safe. */
static int write_proc(const char *path, const char *text, unsigned a, unsigned b)
{
	char line[64];
	size_t n = 0;
	if (text) {
		while (text[n] && n < sizeof line)
			line[n] = text[n], n++;
	} else {
		unsigned v[2] = {a, b};
		for (int k = 0; k < 2; k++) {
			char digits[12];
			size_t d = 0;
			do
				digits[d++] = (char)('0' + v[k] % 10);
			while ((v[k] /= 10) && d < sizeof digits);
			while (d)
				line[n++] = digits[--d];
			line[n++] = ' ';
		}
		line[n++] = '1';
	}
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, line, n);
	close(fd);
	return w == (ssize_t)n ? 0 : -1;
}

/* trace_spec.namespaces, in the child. A user namespace maps one id each
 * way: the step's ns_uid is the caller's uid outside, so what it writes
 * belongs to the caller. */
int trace_enter_namespaces(const struct trace_spec *spec)
{
	unsigned uid = (unsigned)geteuid(), gid = (unsigned)getegid();
	int flags = 0;
	if (spec->namespaces & TRACE_NS_USER)
		flags |= CLONE_NEWUSER;
	if (spec->namespaces & TRACE_NS_UTS)
		flags |= CLONE_NEWUTS | (uid ? CLONE_NEWUSER : 0);
	if (!flags)
		return 0;
	if (unshare(flags) < 0)
		return -1;
	if (flags & CLONE_NEWUSER) {
		int user = spec->namespaces & TRACE_NS_USER;
		if (write_proc("/proc/self/setgroups", "deny", 0, 0) < 0 ||
		    write_proc("/proc/self/uid_map", NULL, user ? spec->ns_uid : uid, uid) < 0 ||
		    write_proc("/proc/self/gid_map", NULL, user ? spec->ns_gid : gid, gid) < 0)
			return -1;
	}
	if (flags & CLONE_NEWUTS) {
		const char *h = spec->hostname ? spec->hostname : "", *d = spec->domainname;
		if (sethostname(h, strlen(h)) < 0 || (d && setdomainname(d, strlen(d)) < 0))
			return -1;
	}
	return 0;
}

/* The variations of trace_spec, in the child only: the tracer keeps its
 * own umask, personality, CPUs and namespaces. 0 or a negative errno;
 * raw syscalls but for the namespaces, which only a forked child enters
 * (spawn_child). */
static long apply_variations(const struct trace_spec *spec, const cpu_set_t *cpus)
{
	if (spec->namespaces && trace_enter_namespaces(spec) < 0)
		return -errno;
	long cur = 0;
	if (spec->uname26 || spec->aslr) {
		cur = raw_syscall(__NR_personality, 0xffffffff, 0, 0, 0, 0, 0);
		if (cur < 0)
			return cur;
	}
	if (spec->uname26) {
		cur = (long)((unsigned)cur | UNAME26);
		long r = raw_syscall(__NR_personality, cur, 0, 0, 0, 0, 0);
		if (r < 0)
			return r;
	}
	if (spec->set_umask)
		raw_syscall(__NR_umask, spec->umask & 0777, 0, 0, 0, 0, 0);
	if (spec->aslr) {
		unsigned long want = spec->aslr > 0
		                         ? ((unsigned)cur | ADDR_NO_RANDOMIZE)
		                         : ((unsigned)cur & ~(unsigned)ADDR_NO_RANDOMIZE);
		long r = raw_syscall(__NR_personality, (long)want, 0, 0, 0, 0, 0);
		if (r < 0)
			return r;
	}
	if (cpus) {
		long r = raw_syscall(__NR_sched_setaffinity, 0, sizeof *cpus, (long)cpus, 0, 0, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

/* At most max of the CPUs the caller may use, in *out; 0 when that is no
 * restriction at all (or the affinity cannot be read). */
static int fewer_cpus(int max, cpu_set_t *out)
{
	cpu_set_t all;
	if (max <= 0 || sched_getaffinity(0, sizeof all, &all) < 0 || CPU_COUNT(&all) <= max)
		return 0;
	CPU_ZERO(out);
	int kept = 0;
	for (int c = 0; c < CPU_SETSIZE && kept < max; c++)
		if (CPU_ISSET(c, &all)) {
			CPU_SET(c, out);
			kept++;
		}
	return 1;
}

/* Closes every descriptor above 2 but report_fd and those the step
 * inherits (trace_spec.inherited_fds, jobserver_fds). Async-signal-safe.
 * 0 or a negative errno. */
static long close_all_but(const struct trace_spec *spec, int report_fd)
{
	int keep[2 * TRACE_MAX_WATCHED_FDS + 1];
	size_t n = 0;
	keep[n++] = report_fd;
	for (size_t i = 0; i < spec->ninherited_fds && i < TRACE_MAX_WATCHED_FDS; i++)
		keep[n++] = spec->inherited_fds[i];
	for (size_t i = 0; i < spec->njobserver_fds && i < TRACE_MAX_WATCHED_FDS; i++)
		keep[n++] = spec->jobserver_fds[i];
	/* Sorted (insertion: a handful), then the gaps between them closed. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int x = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = x;
		}
	unsigned from = 3;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < 3 || (unsigned)keep[i] < from)
			continue;
		long r = (unsigned)keep[i] > from ? raw_syscall(__NR_close_range, from,
		                                                (unsigned)keep[i] - 1, 0, 0, 0, 0)
		                                  : 0;
		if (r < 0)
			return r;
		from = (unsigned)keep[i] + 1;
	}
	return raw_syscall(__NR_close_range, from, ~0U, 0, 0, 0, 0);
}

/* What the child reads until it execs. With CLONE_VM the parent keeps it
 * alive (in trace_run's frame) and unchanged until then. */
struct child_args {
	const struct trace_spec *spec;
	char *const *envp;
	const struct seccomp_program *prog;
	int go_fd, report_fd; /* the child's ends */
	int parent_fds[2];    /* the parent's ends, closed in the child */
	int have_cpus;        /* cpus: the step's CPUs (placement.h) */
	cpu_set_t cpus;
};

/* child_main's frame and what it calls, with room. */
#define CHILD_STACK (64 * 1024)

#define RAW(nr, a, b, c) raw_syscall(nr, (long)(a), (long)(b), (long)(c), 0, 0, 0)

/* The child, forked or cloned with its parent's memory (spawn_child):
 * only raw syscalls (no errno: it would be the parent thread's) and code
 * without state until execve. */
static int child_main(void *arg)
{
	const struct child_args *ca = arg;
	const struct trace_spec *spec = ca->spec;
	RAW(__NR_close, ca->parent_fds[0], 0, 0);
	RAW(__NR_close, ca->parent_fds[1], 0, 0);
	char c;
	long n;
	/* Wait until the parent has seized us: a syscall before that would
	 * run untraced, and the filter installed without a tracer would fail
	 * every RET_TRACE call with ENOSYS. */
	do
		n = RAW(__NR_read, ca->go_fd, &c, 1);
	while (n == -EINTR);
	if (n != 1)
		RAW(__NR_exit_group, 127, 0, 0);

	/* SIG_DFL everywhere (an ignored signal stays ignored across exec),
	 * then nothing blocked (the parent blocked all around the clone). */
	struct {
		unsigned long handler, flags, restorer, mask;
	} dfl = {0, 0, 0, 0};
	for (int s = 1; s <= 64; s++)
		if (s != SIGKILL && s != SIGSTOP)
			raw_syscall(__NR_rt_sigaction, s, (long)&dfl, 0, 8, 0, 0);
	unsigned long none = 0;
	raw_syscall(__NR_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, 8, 0, 0);

	/* Move everything above 2 first, so that a spec fd that is itself 0-2
	 * survives the dup2 of another one onto it. */
	long rep = RAW(__NR_fcntl, ca->report_fd, F_DUPFD_CLOEXEC, 3);
	if (rep < 0)
		child_fail(ca->report_fd, STAGE_SETUP, -rep);
	int src[3] = {spec->stdin_fd, spec->stdout_fd, spec->stderr_fd};
	long hi[3];
	for (int i = 0; i < 3; i++) {
		long fd = src[i];
		long opened = -1;
		if (fd < 0)
			fd = opened = RAW(__NR_openat, AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC);
		hi[i] = fd < 0 ? fd : RAW(__NR_fcntl, fd, F_DUPFD_CLOEXEC, 3);
		if (hi[i] < 0)
			child_fail((int)rep, STAGE_SETUP, -hi[i]);
		if (opened >= 0)
			RAW(__NR_close, opened, 0, 0);
	}
	for (int i = 0; i < 3; i++) {
		long r = RAW(__NR_dup2, hi[i], i, 0);
		if (r < 0)
			child_fail((int)rep, STAGE_SETUP, -r);
	}
	long r = close_all_but(spec, (int)rep);
	if (r >= 0)
		r = apply_variations(spec, ca->have_cpus ? &ca->cpus : NULL);
	if (r >= 0)
		r = raw_syscall(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0);
	if (r < 0)
		child_fail((int)rep, STAGE_SETUP, -r);
	r = seccomp_filter_install(ca->prog);
	if (r < 0)
		child_fail((int)rep, STAGE_SECCOMP, -r);
	r = RAW(__NR_execve, spec->file, spec->argv, ca->envp);
	child_fail((int)rep, STAGE_EXEC, -r);
}

/* Valgrind runs no clone but a thread's, a fork's or a vfork's (its
 * leak and profile runs of cachet); it preloads its core into us. */
static int under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");
	return preload && strstr(preload, "/vgpreload_core");
}

/* The child running child_main, or -1 with errno set. Cloned with this
 * process's memory (no page tables copied, no copy-on-write faults here
 * afterwards), on a stack of its own, all signals blocked meanwhile so
 * that no handler of ours runs in it; forked when it enters namespaces,
 * which takes libc calls, and under valgrind. */
static pid_t spawn_child(struct child_args *ca, void **stack)
{
	*stack = NULL;
	if (ca->spec->namespaces || under_valgrind()) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(child_main(ca));
		return pid;
	}
	*stack = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE,
	              MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (*stack == MAP_FAILED) {
		*stack = NULL;
		return -1;
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(child_main, (char *)*stack + CHILD_STACK, CLONE_VM | SIGCHLD, ca);
	int err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = err;
	return pid;
}

static void resume(pid_t tid, int request, int sig)
{
	/* ESRCH: killed meanwhile (SIGKILL, a sibling thread's exec); its
	 * exit is reported by waitpid. */
	ptrace(request, tid, 0, (void *)(long)sig);
}

static int syscall_info(pid_t tid, struct __ptrace_syscall_info *si)
{
	memset(si, 0, sizeof *si);
	return ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof *si, si) > 0 ? 0 : -1;
}

/* The main process has exited: anything of the tree still alive (not a
 * zombie waiting for us to reap it) outlives the step. */
static void check_left_running(struct tracer *tr)
{
	struct tracee_table *tab = &tr->tracees;
	for (size_t i = 0; i < tab->cap; i++) {
		if (!tab->slots[i])
			continue;
		char st = tracee_state(tab->slots[i]->tid);
		if (st && st != 'Z' && st != 'X') {
			tracer_mark_uncacheable(tr, "process left running");
			return;
		}
	}
}

static void on_new_child(struct tracer *tr, struct tracee *parent)
{
	unsigned long msg = 0;
	if (ptrace(PTRACE_GETEVENTMSG, parent->tid, 0, &msg) < 0 || msg == 0)
		return;
	pid_t tid = (pid_t)msg;
	struct tracee *c = tracee_find(&tr->tracees, tid);
	if (!c)
		c = tracee_add(&tr->tracees, tid);
	placement_new_tracee(&tr->place, c, parent);
	/* A child starts in its parent's cwd; a valid cached copy saves a
	 * /proc read at its first relative lookup. */
	if (c->cwd_gen == 0 && parent->cwd_gen == tr->cwd_gen && parent->cwd[0] == '/') {
		strcpy(c->cwd, parent->cwd);
		c->cwd_gen = parent->cwd_gen;
	}
}

static void handle_stop(struct tracer *tr, struct tracee *t, int status)
{
	int sig = WSTOPSIG(status);
	int event = (status >> 16) & 0xff;
	struct __ptrace_syscall_info si;

	ring_note_stop(tr);
	if (sig == (SIGTRAP | 0x80)) { /* a syscall-exit stop we asked for */
		t->started = 1;
		tr->nexit_stops++;
		if (syscall_info(t->tid, &si) == 0)
			syscall_exit(tr, t, &si);
		else
			t->p.what = PEND_NONE;
		resume(t->tid, PTRACE_CONT, 0);
		return;
	}
	switch (event) {
	case PTRACE_EVENT_SECCOMP: {
		t->started = 1;
		tr->nstops++;
		enum resume r = RESUME_CONT;
		if (syscall_info(t->tid, &si) == 0) {
			r = syscall_entry(tr, t, &si);
			placement_at_syscall(&tr->place, &tr->tracees, t, (long)si.seccomp.nr,
			                     (pid_t)si.seccomp.args[0]);
		}
		resume(t->tid, r == RESUME_SYSCALL ? PTRACE_SYSCALL : PTRACE_CONT, 0);
		return;
	}
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
	case PTRACE_EVENT_CLONE:
		t->started = 1;
		on_new_child(tr, t);
		resume(t->tid, PTRACE_CONT, 0);
		return;
	case PTRACE_EVENT_EXEC: {
		t->started = 1;
		unsigned long former = 0;
		/* An exec from a non-leader thread: the thread now has the
		 * leader's tid, and its pending execve is in its old record. */
		if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &former) == 0 &&
		    (pid_t)former != t->tid && tracee_find(&tr->tracees, (pid_t)former)) {
			pid_t tid = t->tid;
			t = tracee_rekey(&tr->tracees, (pid_t)former, tid);
			t->started = 1;
		}
		syscall_exec_done(tr, t);
		/* The kernel places a new program on the idlest CPU (sched_exec):
		 * follow it there. */
		placement_follow(&tr->place, t->tid);
		/* PTRACE_CONT, not SYSCALL: the exec's own exit stop would only
		 * repeat what we know. */
		resume(t->tid, PTRACE_CONT, 0);
		return;
	}
	case PTRACE_EVENT_STOP:
		if (!t->started) { /* the attach stop of a new child */
			t->started = 1;
			placement_new_tracee(&tr->place, t, NULL);
			resume(t->tid, PTRACE_CONT, 0);
		} else if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
			/* A group-stop: stay stopped (as without a tracer) but let
			 * SIGCONT wake it. */
			ptrace(PTRACE_LISTEN, t->tid, 0, 0);
		} else {
			resume(t->tid, PTRACE_CONT, 0);
		}
		return;
	case 0: /* signal-delivery-stop: deliver it */
		t->started = 1;
		resume(t->tid, PTRACE_CONT, sig);
		return;
	default:
		resume(t->tid, PTRACE_CONT, 0);
		return;
	}
}

static void run_loop(struct tracer *tr, pid_t main_pid, int *status_out)
{
	int main_done = 0;
	while (!main_done || tr->tracees.n > 0) {
		int status;
		/* Note: this reaps any child of the calling process; the caller
		 * must not wait for children of its own meanwhile. */
		pid_t tid = placement_wait(&tr->place, &tr->tracees, &status);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: nothing is left to wait for */
		}
		/* What the preload library reported happened before this stop's
		 * call runs: classify it first (ring.h). */
		ring_drain(tr, 0);
		struct tracee *t = tracee_find(&tr->tracees, tid);
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (t)
				tracee_remove(&tr->tracees, tid);
			if (tid == main_pid) {
				*status_out = status;
				main_done = 1;
				check_left_running(tr);
			}
			continue;
		}
		if (!WIFSTOPPED(status))
			continue;
		/* A new child's first stop may come before its parent's
		 * fork/clone event. */
		if (!t)
			t = tracee_add(&tr->tracees, tid);
		handle_stop(tr, t, status);
	}
}

static void free_child(struct seccomp_program *prog, void *stack)
{
	free(prog);
	if (!stack)
		return;
#ifdef TRACER_ASAN
	/* The child's frames poisoned their red zones in the shadow memory
	 * it shared with us and, having exec'd, never cleared them: the next
	 * mapping at these addresses would inherit them. */
	__asan_unpoison_memory_region(stack, CHILD_STACK);
#endif
	munmap(stack, CHILD_STACK);
}

static void tracer_free(struct tracer *tr)
{
	ring_close(tr);
	dir_views_free(&tr->views);
	event_log_free(&tr->log);
	tracee_table_free(&tr->tracees);
	free(tr);
}

int trace_run(const struct trace_spec *spec, struct trace_result *out, struct error *e)
{
	memset(out, 0, sizeof *out);
	/* Relative paths resolve against the tracees' cwds and descriptors
	 * as /proc shows them: without it, the step's relative reads and
	 * writes would go unseen. */
	char cwd[2];
	if (readlink("/proc/self/cwd", cwd, sizeof cwd) < 0)
		return error_errno(e, "trace: reading /proc/self/cwd (is /proc mounted?)");
	struct tracer *tr = xmalloc(sizeof *tr);
	memset(tr, 0, offsetof(struct tracer, rec_tracee));
	tracee_init(&tr->rec_tracee, 0);
	tr->raw[0] = tr->raw2[0] = tr->tmp[0] = tr->tmp2[0] = tr->path2[0] = tr->path3[0] = '\0';
	tr->spec = spec;
	tr->cwd_gen = 1;
	tr->ring_fd = -1;
	tr->self_pid = getpid();
	event_log_init(&tr->log);
	dir_views_init(&tr->views);
	tracee_table_init(&tr->tracees);
	int fast = ring_open(tr);

	struct seccomp_program *prog = xmalloc(sizeof *prog);
	struct stat st;
	if (spec->stdin_is_stream && spec->stdin_fd >= 0 && fstat(spec->stdin_fd, &st) == 0) {
		tr->have_stdin_id = 1;
		tr->stdin_dev = st.st_dev;
		tr->stdin_ino = st.st_ino;
		tr->stdin_is_null = S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
	}
	int read_fds[TRACE_MAX_WATCHED_FDS + 1];
	size_t nread = 0;
	if (tr->have_stdin_id)
		read_fds[nread++] = 0;
	/* More than the filter watches: one of them may be used unseen. */
	if (spec->ninherited_fds > TRACE_MAX_WATCHED_FDS)
		tracer_mark_uncacheable(tr, "uses inherited descriptor");
	for (size_t i = 0; i < spec->ninherited_fds && i < TRACE_MAX_WATCHED_FDS; i++) {
		int fd = spec->inherited_fds[i];
		if (fd <= 2 || fstat(fd, &st) < 0)
			continue;
		tr->watched_fd[tr->nwatched] = fd;
		tr->watched_dev[tr->nwatched] = st.st_dev;
		tr->watched_ino[tr->nwatched] = st.st_ino;
		tr->nwatched++;
		read_fds[nread++] = fd;
	}
	/* Writes to stdout and stderr stop too when the caller follows their
	 * order: the step's only descriptors at 1 and 2 are the ones given. */
	int write_fds[TRACE_MAX_WATCHED_FDS + 2];
	size_t nwrite = 0;
	for (size_t i = 0; i < tr->nwatched; i++)
		write_fds[nwrite++] = tr->watched_fd[i];
	if (spec->on_stream_write) {
		write_fds[nwrite++] = 1;
		write_fds[nwrite++] = 2;
	}
	struct empty_name_site sites[EMPTY_NAME_MAX_SITES];
	size_t nsites = empty_name_sites(sites, EMPTY_NAME_MAX_SITES);
	seccomp_filter_build(prog, read_fds, nread, write_fds, nwrite, fast, sites, nsites);

	int go[2], rep[2];
	if (pipe2(go, O_CLOEXEC) < 0) {
		free(prog);
		tracer_free(tr);
		return error_errno(e, "trace: pipe");
	}
	if (pipe2(rep, O_CLOEXEC) < 0) {
		close(go[0]);
		close(go[1]);
		free(prog);
		tracer_free(tr);
		return error_errno(e, "trace: pipe");
	}
	cpu_set_t child_cpus;
	int restrict_cpus = fewer_cpus(spec->max_cpus, &child_cpus);
	const cpu_set_t *step_cpus =
	    placement_init(&tr->place, sched_getcpu(), restrict_cpus ? &child_cpus : NULL);
	struct child_args ca = {.spec = spec,
	                        .envp = fast ? tr->ring_env : spec->envp,
	                        .prog = prog,
	                        .go_fd = go[0],
	                        .report_fd = rep[1],
	                        .parent_fds = {go[1], rep[0]},
	                        .have_cpus = step_cpus != NULL};
	if (step_cpus)
		ca.cpus = *step_cpus;
	void *stack;
	pid_t pid = spawn_child(&ca, &stack);
	int fork_errno = errno;
	close(go[0]);
	close(rep[1]);
	if (pid < 0) {
		close(go[1]);
		close(rep[0]);
		free_child(prog, stack);
		tracer_free(tr);
		errno = fork_errno;
		return error_errno(e, "trace: fork");
	}
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *)(long)SEIZE_OPTIONS) < 0) {
		int err = errno;
		kill(pid, SIGKILL);
		close(go[1]);
		close(rep[0]);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		free_child(prog, stack);
		tracer_free(tr);
		errno = err;
		return error_errno(e, "trace: ptrace is not permitted here (PTRACE_SEIZE)");
	}
	placement_start(&tr->place);
	struct tracee *mt = tracee_add(&tr->tracees, pid);
	mt->started = 1; /* seized, not auto-attached: no attach stop */
	ssize_t w = write(go[1], "g", 1);
	(void)w;
	close(go[1]);

	run_loop(tr, pid, &out->status);
	/* The step's first process has exec'd or exited: its start is done
	 * with what it read of ours. */
	free_child(prog, stack);
	ring_drain(tr, 1);
	syscall_attach_listings(tr);
	/* At once: from now on anyone may change the outputs (trace.h). */
	event_log_add_finals(&tr->log);

	placement_end(&tr->place, &tr->tracees);
	struct child_report r;
	fcntl(rep[0], F_SETFL, O_NONBLOCK);
	ssize_t n = read(rep[0], &r, sizeof r);
	close(rep[0]);
	if (n == (ssize_t)sizeof r && r.stage != STAGE_EXEC) {
		tracer_free(tr);
		errno = r.err;
		if (r.stage == STAGE_SECCOMP)
			return error_errno(e, "trace: seccomp filters are not permitted here");
		return error_errno(e, "trace: setting up the child failed");
	}
	if (n == (ssize_t)sizeof r)
		out->exec_errno = r.err ? r.err : ENOEXEC;
	out->uncacheable = tr->uncacheable;
	out->nstops = tr->nstops;
	out->nexit_stops = tr->nexit_stops;
	out->nrecords = tr->nrecords;
	out->nring = (size_t)tr->ring_next;
	out->events = event_log_detach(&tr->log, &out->nevents);
	tracer_free(tr);
	return 0;
}

void trace_result_free(struct trace_result *r)
{
	for (size_t i = 0; i < r->nevents; i++) {
		free(r->events[i].path);
		trace_listing_free(r->events[i].listing);
	}
	free(r->events);
	memset(r, 0, sizeof *r);
}

int trace_self_is_traced(void)
{
	/* One read into the stack: TracerPid is on the status's eighth line
	 * (stdio's buffer and code were a tenth of a hit's start). */
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char text[1024];
	ssize_t n = read(fd, text, sizeof text - 1);
	close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	const char *line = strstr(text, "\nTracerPid:");
	return line && atoi(line + strlen("\nTracerPid:")) != 0;
}
