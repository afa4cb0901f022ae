#include "trace/placement.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

/* How often the held step's waiting is read, and the share of a period
 * that, waited two periods in a row, lets it go. A serial step waits only
 * for the tracer, a few percent even in a burst of stops. Each check
 * wakes the tracer on the step's CPU (about 15 us of its time, more when
 * the CPU was idle): a check that finds the step not waiting doubles the
 * period, up to MAX_CHECK_NS, and one that finds it waiting, or a new
 * process or thread of the step, brings it back to CHECK_NS. A program
 * that comes to share the CPU with a long serial step is then seen within
 * MAX_CHECK_NS + CHECK_NS (another traced step sees it from its own side
 * within 2 * CHECK_NS); a gcc -O2 compile of half a second is checked 8
 * times, not 22. */
#define CHECK_NS           20000000
#define MAX_CHECK_NS       (4 * CHECK_NS)
#define WAIT_SHARE_DIVISOR 5
/* More tracees than this run side by side, or soon will: each check would
 * read /proc for all of them. */
#define MAX_HELD_TRACEES 16

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void pin_self(struct placement *p, int cpu)
{
	if (!p->can_pin || cpu < 0 || cpu >= CPU_SETSIZE || cpu == p->cpu ||
	    !CPU_ISSET(cpu, &p->own_affinity))
		return;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof one, &one) == 0)
		p->cpu = cpu;
}

const cpu_set_t *placement_init(struct placement *p, int cpu, const cpu_set_t *restrict_to)
{
	memset(p, 0, sizeof *p);
	p->cpu = -1;
	p->start_cpu = -1;
	p->can_pin = sched_getaffinity(0, sizeof p->own_affinity, &p->own_affinity) == 0;
	if (!p->can_pin || cpu < 0 || cpu >= CPU_SETSIZE)
		return restrict_to;
	p->step_affinity = restrict_to ? *restrict_to : p->own_affinity;
	p->step_held =
	    !restrict_to && CPU_ISSET(cpu, &p->own_affinity) && CPU_COUNT(&p->own_affinity) > 1;
	p->step_was_held = p->step_held;
	CPU_ZERO(&p->one);
	CPU_SET(cpu, &p->one);
	p->start_cpu = cpu;
	return p->step_held ? &p->one : restrict_to;
}

/* Interrupts the tracer's waitpid for the periodic check. */
static void on_alarm(int sig)
{
	(void)sig;
}

/* The next check comes period_ns after the last one, and the alarm every
 * period_ns from now. */
static void set_period(struct placement *p, int64_t period_ns)
{
	p->next_check_ns = p->last_check_ns + period_ns;
	if (period_ns == p->period_ns)
		return;
	p->period_ns = period_ns;
	struct itimerspec every = {{period_ns / 1000000000, period_ns % 1000000000},
	                           {period_ns / 1000000000, period_ns % 1000000000}};
	if (p->has_timer)
		timer_settime(p->timer, 0, &every, NULL);
}

void placement_start(struct placement *p)
{
	pin_self(p, p->start_cpu);
	if (!p->step_held)
		return;
	/* Without SA_RESTART: the alarm ends the tracer's waitpid (EINTR).
	 * Sent to this thread only: cachet's others (tee) block in reads. */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, &p->old_alarm);
	p->alarm_installed = 1;
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGALRM;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid); /* sigev_notify_thread_id */
	p->has_timer = timer_create(CLOCK_MONOTONIC, &ev, &p->timer) == 0;
	p->last_check_ns = now_ns();
	p->period_ns = 0;
	set_period(p, CHECK_NS);
}

static void disarm(struct placement *p)
{
	if (p->has_timer)
		timer_delete(p->timer);
	p->has_timer = 0;
}

/* Gives t its own mask, if it still has the held one. */
static void give_back(struct placement *p, struct tracee *t)
{
	cpu_set_t got;
	if (!t->own_affinity && sched_getaffinity(t->tid, sizeof got, &got) == 0 &&
	    CPU_EQUAL(&got, &p->one))
		sched_setaffinity(t->tid, sizeof p->step_affinity, &p->step_affinity);
	t->own_affinity = 1;
}

static void let_go(struct placement *p, struct tracee_table *tracees)
{
	if (!p->step_held)
		return;
	p->step_held = 0;
	disarm(p);
	for (size_t i = 0; i < tracees->cap; i++)
		if (tracees->slots[i])
			give_back(p, tracees->slots[i]);
}

void placement_end(struct placement *p, struct tracee_table *tracees)
{
	let_go(p, tracees);
	if (p->alarm_installed) {
		/* A deleted timer's signal may still be pending, and the old
		 * action is likely the default, which ends the process: take it
		 * first, with the signal blocked. */
		sigset_t alarm, old;
		sigemptyset(&alarm);
		sigaddset(&alarm, SIGALRM);
		pthread_sigmask(SIG_BLOCK, &alarm, &old);
		struct timespec zero = {0, 0};
		while (sigtimedwait(&alarm, NULL, &zero) == SIGALRM)
			;
		sigaction(SIGALRM, &p->old_alarm, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		p->alarm_installed = 0;
	}
	if (p->cpu >= 0)
		sched_setaffinity(0, sizeof p->own_affinity, &p->own_affinity);
	p->cpu = -1;
}

void placement_follow(struct placement *p, pid_t tid)
{
	if (p->can_pin && !p->step_held)
		pin_self(p, tracee_cpu(tid));
}

void placement_at_syscall(struct placement *p, struct tracee_table *tracees, struct tracee *t,
                          long nr, pid_t target)
{
	if (!p->step_was_held || (nr != __NR_sched_getaffinity && nr != __NR_sched_setaffinity))
		return;
	/* A program that asks how many CPUs it has means to use them (LLVM's
	 * thread pools do): it gets its own mask for good, and so do the
	 * processes and threads it starts after. The rest of the step stays
	 * held. A call about another tracee lets the whole step go. */
	if (target == 0 || target == t->tid)
		give_back(p, t);
	else
		let_go(p, tracees);
}

void placement_new_tracee(struct placement *p, struct tracee *t, const struct tracee *parent)
{
	/* Started by a program with its own mask, or born held just before
	 * the step was let go: its own too. */
	if (parent && parent->own_affinity)
		t->own_affinity = 1;
	else if (p->step_was_held && !p->step_held)
		give_back(p, t);
	/* One more to run beside the others: checked soon again. */
	if (p->step_held && p->period_ns > CHECK_NS)
		set_period(p, CHECK_NS);
}

/* The time the step's threads waited on a run queue since the last check. */
static uint64_t waited_since(struct tracee_table *tracees)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < tracees->cap; i++) {
		struct tracee *t = tracees->slots[i];
		uint64_t d;
		if (!t || tracee_run_delay(t, &d) < 0)
			continue;
		if (t->has_run_delay && d > t->run_delay_ns)
			sum += d - t->run_delay_ns;
		t->run_delay_ns = d;
		t->has_run_delay = 1;
	}
	return sum;
}

static void check(struct placement *p, struct tracee_table *tracees)
{
	int64_t now = now_ns();
	if (now < p->next_check_ns)
		return;
	int64_t period = now - p->last_check_ns;
	p->last_check_ns = now;
	if (tracees->n > MAX_HELD_TRACEES) {
		let_go(p, tracees);
		return;
	}
	if (waited_since(tracees) * WAIT_SHARE_DIVISOR > (uint64_t)period) {
		p->slow_checks++;
		set_period(p, CHECK_NS);
	} else {
		p->slow_checks = 0;
		set_period(p, p->period_ns * 2 < MAX_CHECK_NS ? p->period_ns * 2 : MAX_CHECK_NS);
	}
	if (p->slow_checks >= 2)
		let_go(p, tracees);
}

pid_t placement_wait(struct placement *p, struct tracee_table *tracees, int *status)
{
	for (;;) {
		pid_t tid = waitpid(-1, status, __WALL);
		int err = errno;
		if (p->step_held)
			check(p, tracees);
		/* EINTR from the alarm: wait on. */
		if (tid >= 0 || err != EINTR || !p->step_was_held) {
			errno = err;
			return tid;
		}
	}
}
