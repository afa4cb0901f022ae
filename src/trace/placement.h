/*
 * Which CPUs the tracer and the step run on.
 *
 * A stop hands the CPU from a tracee to the tracer and back: about 10 us
 * when both are on one CPU, about 60 us more across two on VMs whose idle
 * vCPUs halt (waking one is an exit to the host). The scheduler wakes a
 * task on an idle CPU when it can, and places new programs on the idlest
 * one, so left alone the step settles on one CPU and the tracer on the
 * other, and every stop crosses twice. Measured here, an nvcc miss cost
 * 1.16 times plain nvcc that way and 0.95 times with both on one CPU.
 *
 * So the step starts on the tracer's CPU, its processes and threads
 * inheriting that affinity, and gets its own back for good:
 *   - a process or thread that reads or sets its affinity, at that call
 *     (those calls stop, and the mask is given back before they run, so
 *     that the step never reads a mask that is not its own; Cpus_allowed
 *     in /proc/PID/status is the one place it could), and with it all it
 *     starts after; a call about another tracee lets the whole step go;
 *   - the whole step once it waits for the CPU: its threads' time waiting
 *     on a run queue, read from /proc every 20 ms (less often while it
 *     does not wait: placement.c), passes a fifth of two periods in a
 *     row, be it two of them running side by side or another program
 *     beside.
 * Never held when it was given fewer CPUs (trace_spec.max_cpus) or when
 * there is only one.
 */
#ifndef CACHET_TRACE_PLACEMENT_H
#define CACHET_TRACE_PLACEMENT_H

#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "trace/tracee.h"

struct placement {
	int can_pin;
	int start_cpu;           /* where the tracer ran before the fork */
	int cpu;                 /* the tracer's CPU; -1: not pinned */
	cpu_set_t own_affinity;  /* the tracer's, restored at the end */
	cpu_set_t step_affinity; /* the step's own */
	cpu_set_t one;           /* {cpu}: the step's while it is held there */
	int step_held, step_was_held;
	int64_t last_check_ns, next_check_ns;
	int64_t period_ns; /* between checks now (placement.c) */
	int slow_checks;   /* periods in a row with too much waiting */
	struct sigaction old_alarm;
	int alarm_installed;
	timer_t timer;
	int has_timer;
};

/* Before the fork, on the CPU the tracer runs on (cpu): the affinity to
 * give the step (NULL: its own), given restrict (NULL: none) from
 * trace_spec.max_cpus. */
const cpu_set_t *placement_init(struct placement *p, int cpu, const cpu_set_t *restrict_to);
/* After the step's first process is seized: pins the tracer and, while the
 * step is held, arms the periodic check. */
void placement_start(struct placement *p);
/* The step's affinities and the tracer's own back, the check disarmed. */
void placement_end(struct placement *p, struct tracee_table *tracees);
/* A new program runs in tid: follow it to the CPU the kernel placed it on,
 * unless the step is held on the tracer's. */
void placement_follow(struct placement *p, pid_t tid);
/* A syscall stop of nr by t, whose first argument is target, before the
 * tracee is resumed. */
void placement_at_syscall(struct placement *p, struct tracee_table *tracees, struct tracee *t,
                          long nr, pid_t target);
/* A new tracee, at its parent's fork or clone event (parent) or at its
 * first stop when that came first (parent NULL). */
void placement_new_tracee(struct placement *p, struct tracee *t, const struct tracee *parent);
/* waitpid(-1, status, __WALL), with the periodic check while held. */
pid_t placement_wait(struct placement *p, struct tracee_table *tracees, int *status);

#endif
