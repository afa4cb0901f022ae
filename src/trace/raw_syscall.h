/*
 * A syscall without errno: the child of trace_run shares its parent's
 * memory (tracer.c), errno included, until it execs.
 */
#ifndef CACHET_TRACE_RAW_SYSCALL_H
#define CACHET_TRACE_RAW_SYSCALL_H

/* The result, or a negative errno. x86_64 only, as the filter. */
static inline long raw_syscall(long nr, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
	                 : "=a"(ret)
	                 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
	                 : "rcx", "r11", "memory");
	return ret;
}

#endif
