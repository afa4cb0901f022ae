/*
 * The seccomp-bpf program that decides which syscalls stop in the tracer.
 * Built in the parent before fork (the child may only make async-signal-safe
 * calls), installed by the child after PR_SET_NO_NEW_PRIVS.
 */
#ifndef CACHET_TRACE_SECCOMP_FILTER_H
#define CACHET_TRACE_SECCOMP_FILTER_H

#include <linux/filter.h>
#include <stddef.h>
#include <sys/syscall.h>

#include "trace/empty_name.h"

/* Syscalls newer than the build host's headers, which the filter stops and
 * the tracer decodes alike. */
#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_setxattrat
#define __NR_setxattrat 463
#endif
#ifndef __NR_removexattrat
#define __NR_removexattrat 466
#endif
#ifndef __NR_getxattrat
#define __NR_getxattrat 464
#endif
#ifndef __NR_listxattrat
#define __NR_listxattrat 465
#endif
#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467
#endif

/* SECCOMP_RET_TRACE data values, seen by the tracer in ret_data. */
enum {
	FILTER_DATA_SYSCALL = 0, /* an ordinary traced call */
	FILTER_DATA_ARCH = 1,    /* seccomp_data.arch is not x86_64 */
	FILTER_DATA_X32 = 2,     /* an x32 syscall number */
};

#define FILTER_MAX_INSNS 2048

struct seccomp_program {
	struct sock_filter insns[FILTER_MAX_INSNS];
	unsigned short len;
};

/* The calls that use a descriptor's data or copy it, with the argument
 * indexes of the descriptors they read from (in) and write to (out); -1:
 * none. dup_like: the call copies the descriptor (fcntl only with
 * F_DUPFD or F_DUPFD_CLOEXEC). Shared by the filter, which stops them on
 * the watched descriptors, and the tracer, which judges the stop. */
struct fd_use {
	int nr;
	signed char in, out;
	unsigned char dup_like;
};
extern const struct fd_use fd_uses[];
/* The calls that stop whatever their arguments. */
extern const int always_traced[];
extern const size_t nalways_traced;
extern const size_t nfd_uses;

/* Fills prog. The calls of fd_uses stop when they read one of read_fds
 * (stdin when it is a stream, and the inherited descriptors) or write one
 * of write_fds (the inherited descriptors). fast_path: lookups made from
 * the preload library's trusted page (ring.h) go through without a stop;
 * so does glibc's fstat at the sites given (empty_name.h). */
void seccomp_filter_build(struct seccomp_program *prog, const int *read_fds, size_t nread_fds,
                          const int *write_fds, size_t nwrite_fds, int fast_path,
                          const struct empty_name_site *sites, size_t nsites);

/* Installs prog on the calling thread. Async-signal-safe, and sets no
 * errno (raw_syscall.h). Returns 0 or a negative errno. */
int seccomp_filter_install(const struct seccomp_program *prog);

#endif
