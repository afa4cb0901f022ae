/*
 * The seccomp-bpf program that decides which syscalls stop in the tracer.
 * Built in the parent before fork (the child may only make async-signal-safe
 * calls), installed by the child after PR_SET_NO_NEW_PRIVS.
 */
#ifndef CACHET_TRACE_SECCOMP_FILTER_H
#define CACHET_TRACE_SECCOMP_FILTER_H

#include <linux/filter.h>
#include <stddef.h>

/* SECCOMP_RET_TRACE data values, seen by the tracer in ret_data. */
enum {
	FILTER_DATA_SYSCALL = 0, /* an ordinary traced call */
	FILTER_DATA_ARCH = 1,    /* seccomp_data.arch is not x86_64 */
	FILTER_DATA_X32 = 2,     /* an x32 syscall number */
};

#define FILTER_MAX_INSNS 512

struct seccomp_program {
	struct sock_filter insns[FILTER_MAX_INSNS];
	unsigned short len;
};

/* Fills prog. stdin_is_stream adds the reads of fd 0. */
/* fast_path: lookups made from the preload library's trusted page
 * (ring.h) go through without a stop. */
void seccomp_filter_build(struct seccomp_program *prog, int stdin_is_stream, int fast_path);

/* Installs prog on the calling thread. Async-signal-safe. Returns 0 or -1
 * with errno set. */
int seccomp_filter_install(const struct seccomp_program *prog);

#endif
