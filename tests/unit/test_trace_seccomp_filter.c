/*
 * The seccomp program as a search over the syscall number decides every
 * call as the chain of one comparison per block did (the program before
 * it, kept below as the reference): every number, both architectures, the
 * argument and instruction-pointer values the blocks test. And the kernel
 * can cache at least the same numbers' verdicts (seccomp_cache_prepare:
 * the path to ALLOW reads only nr and arch).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "cachet/bug.h"
#include "cachet/trace.h"
#include "trace/ring.h"
#include "trace/seccomp_filter.h"

/* The program before the search (commit 86dc31b), the reference. */
#define ARG_LO(i) ((unsigned)offsetof(struct seccomp_data, args[i]))
#define ARG_HI(i) ((unsigned)offsetof(struct seccomp_data, args[i]) + 4)
#define RET_TRACE (SECCOMP_RET_TRACE | FILTER_DATA_SYSCALL)
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static void put(struct seccomp_program *p, struct sock_filter f)
{
	if (p->len >= FILTER_MAX_INSNS)
		BUG("the seccomp table outgrew its array");
	p->insns[p->len++] = f;
}

static void ld(struct seccomp_program *p, unsigned off)
{
	put(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, off));
}

static void ret(struct seccomp_program *p, unsigned v)
{
	put(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, v));
}

/* `if (A == k) goto next; else skip n` : emits a jeq whose false branch is
 * patched by block_end. */
static unsigned short block_begin(struct seccomp_program *p, int nr)
{
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 0));
	return (unsigned short)(p->len - 1);
}

/* A forward jump emitted before its target was known: the index of the
 * instruction, plus JUMP_TRUE when its true branch is the one to point. */
#define JUMP_TRUE 0x8000u

/* Points the jump `at` (in the form above) at instruction `to`, after it. */
static void jump_to(struct seccomp_program *p, unsigned at, unsigned to)
{
	unsigned i = at & ~JUMP_TRUE;
	unsigned span = to - i - 1u;
	if (span > 255)
		BUG("a seccomp jump longer than a jump reaches");
	if (at & JUMP_TRUE)
		p->insns[i].jt = (unsigned char)span;
	else
		p->insns[i].jf = (unsigned char)span;
}

static void block_end(struct seccomp_program *p, unsigned short at)
{
	jump_to(p, at, p->len);
}

/* Every block below ends in a return on every path, so that the
 * accumulator (overwritten by argument loads) never flows into the next
 * block's nr comparison. */
static void block_trace(struct seccomp_program *p, int nr)
{
	unsigned short b = block_begin(p, nr);
	ret(p, RET_TRACE);
	block_end(p, b);
}

/* Trace when (low word of arg i) & mask != 0. */
static void block_trace_if_bits(struct seccomp_program *p, int nr, int arg, unsigned mask)
{
	unsigned short b = block_begin(p, nr);
	ld(p, ARG_LO(arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1));
	ret(p, RET_TRACE);
	ret(p, SECCOMP_RET_ALLOW);
	block_end(p, b);
}

/* Trace when the low word of arg i equals k (an int argument: the kernel
 * uses the low 32 bits only). */
static void block_trace_if_eq(struct seccomp_program *p, int nr, int arg, unsigned k)
{
	unsigned short b = block_begin(p, nr);
	ld(p, ARG_LO(arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 1));
	ret(p, RET_TRACE);
	ret(p, SECCOMP_RET_ALLOW);
	block_end(p, b);
}

/* Trace when the descriptor in argument in_arg is one of in_fds, or the
 * one in out_arg one of out_fds (-1: no such argument). */
static void block_trace_fds(struct seccomp_program *p, int nr, int in_arg, const int *in_fds,
                            size_t nin, int out_arg, const int *out_fds, size_t nout)
{
	if (in_arg < 0)
		nin = 0;
	if (out_arg < 0)
		nout = 0;
	if (!nin && !nout)
		return;
	unsigned short b = block_begin(p, nr);
	/* stdin and stdout/stderr beside the inherited ones */
	unsigned short jumps[2 * TRACE_MAX_WATCHED_FDS + 3];
	size_t n = 0;
	for (int side = 0; side < 2; side++) {
		int arg = side ? out_arg : in_arg;
		const int *fds = side ? out_fds : in_fds;
		size_t count = side ? nout : nin;
		if (!count)
			continue;
		ld(p, ARG_LO(arg));
		for (size_t i = 0; i < count && n < sizeof jumps / sizeof jumps[0]; i++) {
			put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
			                                    (unsigned)fds[i], 0, 0));
			jumps[n++] = (unsigned short)(p->len - 1);
		}
	}
	ret(p, SECCOMP_RET_ALLOW);
	unsigned trace_at = p->len;
	ret(p, RET_TRACE);
	for (size_t i = 0; i < n; i++)
		p->insns[jumps[i]].jt = (unsigned char)(trace_at - jumps[i] - 1);
	block_end(p, b);
}

/* Trace unless the 64-bit pointer arg i is NULL. */
static void block_trace_if_nonnull(struct seccomp_program *p, int nr, int arg)
{
	unsigned short b = block_begin(p, nr);
	ld(p, ARG_LO(arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2));
	ld(p, ARG_HI(arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
	ret(p, RET_TRACE);
	ret(p, SECCOMP_RET_ALLOW);
	block_end(p, b);
}

/* newfstatat/statx. Allowed only when provably a stat of a descriptor:
 * AT_EMPTY_PATH with a NULL path (Linux >= 6.11 accepts that). AT_EMPTY_PATH
 * with a non-NULL path is traced: the filter cannot see the string, and
 * AT_EMPTY_PATH with a non-empty name is an ordinary lookup relative to
 * dirfd. glibc's fstat() passes "": its own calls pass block_empty_name
 * first; "" from anywhere else still stops once (the tracer resumes it
 * without an exit stop). */
static void block_stat(struct seccomp_program *p, int nr, int path_arg, int flags_arg)
{
	unsigned short b = block_begin(p, nr);
	ld(p, ARG_LO(flags_arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, AT_EMPTY_PATH, 0, 4));
	ld(p, ARG_LO(path_arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2));
	ld(p, ARG_HI(path_arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
	ret(p, RET_TRACE);
	ret(p, SECCOMP_RET_ALLOW);
	block_end(p, b);
}

#define IP_LO ((unsigned)offsetof(struct seccomp_data, instruction_pointer))
#define IP_HI (IP_LO + 4)

/* getrlimit and prlimit64: a read of a limit is a fact of the process
 * (syscalls.c, entry_rlimit), save RLIMIT_NOFILE, which is not keyed; a
 * call that only sets one (prlimit64's old_limit NULL) reads nothing:
 * neither of those stops (gcc makes both). Nor does a read of RLIMIT_STACK,
 * which glibc's start makes in every process (a stop each): its fact is
 * keyed at every exec instead (syscall_exec_done). With the fast path, a call from the
 * trusted page goes through too: the preload library reports its read
 * through the ring (a fact holds whatever the order of the file changes
 * around it). res_arg and old_arg: the resource and old_limit arguments. */
static void block_rlimit(struct seccomp_program *p, int nr, int res_arg, int old_arg, int fast_path)
{
	unsigned short b = block_begin(p, nr);
	if (fast_path) {
		ld(p, IP_HI);
		put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		                                    (unsigned)(RING_SAFE_PAGE >> 32), 0, 3));
		ld(p, IP_LO);
		put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K,
		                                    (unsigned)(RING_SAFE_PAGE & 0xffffffffu) +
		                                        (unsigned)RING_SAFE_PAGE_SIZE,
		                                    1, 0));
		ret(p, SECCOMP_RET_ALLOW);
	}
	/* The kernel reads the resource as an unsigned int. */
	ld(p, ARG_LO(res_arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RLIMIT_NOFILE, 5, 0));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RLIMIT_STACK, 4, 0));
	ld(p, ARG_LO(old_arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3));
	ld(p, ARG_HI(old_arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1));
	ret(p, SECCOMP_RET_ALLOW);
	ret(p, RET_TRACE);
	block_end(p, b);
}

/* newfstatat(fd, "", st, AT_EMPTY_PATH) from libc's or the loader's own
 * fstat (empty_name.h): goes through when the flags are exactly
 * AT_EMPTY_PATH and the path pointer lies one site's distance past the
 * instruction pointer, which sits at that site's page offset. Anything
 * else reloads the number and falls through to the blocks after. The
 * pointers are compared in halves: equal high halves and no borrow in the
 * low ones (an object across a 4 GB boundary just stops). */
static void block_empty_name(struct seccomp_program *p, const struct empty_name_site *sites,
                             size_t nsites)
{
	if (!nsites)
		return;
	unsigned short b = block_begin(p, __NR_newfstatat);
	unsigned short to_reload[4];
	int n = 0;
	ld(p, ARG_LO(3));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AT_EMPTY_PATH, 0, 0));
	to_reload[n++] = (unsigned short)(p->len - 1);
	ld(p, IP_HI);
	put(p, (struct sock_filter)BPF_STMT(BPF_MISC | BPF_TAX, 0));
	ld(p, ARG_HI(1));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_X, 0, 0, 0));
	to_reload[n++] = (unsigned short)(p->len - 1);
	ld(p, IP_LO);
	put(p, (struct sock_filter)BPF_STMT(BPF_MISC | BPF_TAX, 0));
	ld(p, ARG_LO(1));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_X, 0, 0, 0));
	to_reload[n++] = (unsigned short)(p->len - 1);
	put(p, (struct sock_filter)BPF_STMT(BPF_ALU | BPF_SUB | BPF_X, 0));
	put(p, (struct sock_filter)BPF_STMT(BPF_ST, 0)); /* M[0]: path - ip */
	for (size_t i = 0; i < nsites; i++) {
		put(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_MEM, 0));
		put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, sites[i].distance, 0,
		                                    4));
		ld(p, IP_LO);
		put(p, (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xfff));
		put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		                                    sites[i].ip_page_offset, 0, 1));
		ret(p, SECCOMP_RET_ALLOW);
	}
	unsigned reload = p->len;
	for (int i = 0; i < n; i++)
		jump_to(p, to_reload[i], reload);
	ld(p, (unsigned)offsetof(struct seccomp_data, nr));
	block_end(p, b);
}

/* The preload fast path (ring.h): the call goes through when it comes
 * from the trusted page and, for an open (flags_arg >= 0), cannot write,
 * create or truncate, whoever jumped there; else it gets the verdict it
 * would have had (a stop, or block_stat's for the stat calls). Checking
 * the instruction pointer makes the kernel run the program for these
 * numbers, which it runs for them anyway: they are traced. */
static void block_fast(struct seccomp_program *p, int nr, int flags_arg, int stat_path_arg,
                       int stat_flags_arg)
{
	unsigned short b = block_begin(p, nr);
	unsigned short to_normal[3];
	int n = 0;
	if (flags_arg >= 1) {
		/* An open of the trusted page's empty name (RING_EMPTY_NAME),
		 * from anywhere: it fails with ENOENT and opens nothing. The
		 * loader makes it for each absent library candidate that the
		 * audit library looked up already. */
		unsigned path_arg = (unsigned)flags_arg - 1;
		ld(p, ARG_HI(path_arg));
		put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		                                    (unsigned)(RING_EMPTY_NAME >> 32), 0, 5));
		ld(p, ARG_LO(path_arg));
		put(p,
		    (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		                                 (unsigned)(RING_EMPTY_NAME & 0xffffffffu), 0, 3));
		ld(p, ARG_LO(flags_arg));
		put(p, (struct sock_filter)BPF_JUMP(
		           BPF_JMP | BPF_JSET | BPF_K,
		           O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | __O_TMPFILE, 1, 0));
		ret(p, SECCOMP_RET_ALLOW);
	}
	ld(p, IP_HI);
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	                                    (unsigned)(RING_SAFE_PAGE >> 32), 0, 0));
	to_normal[n++] = (unsigned short)(p->len - 1);
	ld(p, IP_LO);
	put(p, (struct sock_filter)BPF_JUMP(
	           BPF_JMP | BPF_JGE | BPF_K,
	           (unsigned)(RING_SAFE_PAGE & 0xffffffffu) + (unsigned)RING_SAFE_PAGE_SIZE, 0, 0));
	to_normal[n++] = (unsigned short)(p->len - 1 + JUMP_TRUE);
	if (flags_arg >= 0) {
		ld(p, ARG_LO(flags_arg));
		put(p, (struct sock_filter)BPF_JUMP(
		           BPF_JMP | BPF_JSET | BPF_K,
		           O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | __O_TMPFILE, 0, 0));
		to_normal[n++] = (unsigned short)(p->len - 1 + JUMP_TRUE);
	}
	ret(p, SECCOMP_RET_ALLOW);
	unsigned normal = p->len;
	for (int i = 0; i < n; i++)
		jump_to(p, to_normal[i], normal);
	if (stat_path_arg >= 0) {
		/* block_stat's body */
		ld(p, ARG_LO(stat_flags_arg));
		put(p,
		    (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, AT_EMPTY_PATH, 0, 4));
		ld(p, ARG_LO(stat_path_arg));
		put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2));
		ld(p, ARG_HI(stat_path_arg));
		put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
		ret(p, RET_TRACE);
		ret(p, SECCOMP_RET_ALLOW);
	} else {
		ret(p, RET_TRACE);
	}
	block_end(p, b);
}

static void old_filter_build(struct seccomp_program *p, const int *read_fds, size_t nread_fds,
                             const int *write_fds, size_t nwrite_fds, int fast_path,
                             const struct empty_name_site *sites, size_t nsites)
{
	p->len = 0;
	/* The architecture first: a 32-bit int 0x80 call from this process uses
	 * other syscall numbers, and the table below would misread them. */
	ld(p, (unsigned)offsetof(struct seccomp_data, arch));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
	ret(p, SECCOMP_RET_TRACE | FILTER_DATA_ARCH);
	ld(p, (unsigned)offsetof(struct seccomp_data, nr));
	/* x32 calls pass the arch check with their own numbering. */
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, __X32_SYSCALL_BIT, 0, 1));
	ret(p, SECCOMP_RET_TRACE | FILTER_DATA_X32);
	/* io_uring runs opens, reads and renames without any syscall we see:
	 * the step is uncacheable (syscalls.c). Not ENOSYS: a program without
	 * a fallback would fail where it runs without cachet. */
	block_trace(p, __NR_io_uring_setup);

	/* First: the blocks below would stop these whatever their origin. */
	block_empty_name(p, sites, nsites);
	if (fast_path) {
		block_fast(p, __NR_open, 1, -1, -1);
		block_fast(p, __NR_openat, 2, -1, -1);
		block_fast(p, __NR_stat, -1, -1, -1);
		block_fast(p, __NR_lstat, -1, -1, -1);
		block_fast(p, __NR_newfstatat, -1, 1, 3);
		block_fast(p, __NR_access, -1, -1, -1);
		block_fast(p, __NR_faccessat2, -1, -1, -1);
		block_fast(p, __NR_readlink, -1, -1, -1);
	}
	for (size_t i = 0; i < nalways_traced; i++)
		block_trace(p, always_traced[i]);
	block_rlimit(p, __NR_getrlimit, 0, 1, 0);
	block_rlimit(p, __NR_prlimit64, 1, 3, fast_path);
	block_stat(p, __NR_newfstatat, 1, 3);
	block_stat(p, __NR_statx, 1, 2);
	block_trace_if_eq(p, __NR_prctl, 0, PR_SET_SECCOMP);
	block_trace_if_eq(p, __NR_seccomp, 0, SECCOMP_SET_MODE_FILTER);
	/* clone(): the low byte is the exit signal, so CLONE_NEWTIME (0x80)
	 * cannot be asked for there. */
	block_trace_if_bits(p, __NR_clone, 0,
	                    CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
	                        CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP);
	block_trace_if_bits(p, __NR_unshare, 0,
	                    CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
	                        CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME);
	/* sendto with a destination address reaches a host without connect(). */
	block_trace_if_nonnull(p, __NR_sendto, 4);
	for (size_t i = 0; i < nfd_uses; i++)
		block_trace_fds(p, fd_uses[i].nr, fd_uses[i].in, read_fds, nread_fds,
		                fd_uses[i].out, write_fds, nwrite_fds);
	/* Everything else runs untouched. The kernel caches this verdict per
	 * syscall number (the path to it reads only arch and nr), so untraced
	 * calls do not even run the program. */
	ret(p, SECCOMP_RET_ALLOW);
}

/* A classic BPF interpreter for what the builders emit. *data_read: an
 * argument or the instruction pointer was loaded on the way. */
static unsigned run(const struct seccomp_program *p, const struct seccomp_data *d, int *data_read)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
	*data_read = 0;
	for (unsigned pc = 0; pc < p->len; pc++) {
		const struct sock_filter *f = &p->insns[pc];
		uint32_t src = BPF_SRC(f->code) == BPF_X ? x : f->k;
		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS: {
			assert_true(f->k % 4 == 0 && f->k < sizeof *d);
			if (f->k != offsetof(struct seccomp_data, nr) &&
			    f->k != offsetof(struct seccomp_data, arch))
				*data_read = 1;
			memcpy(&a, (const char *)d + f->k, 4);
			break;
		}
		case BPF_LD | BPF_MEM:
			a = mem[f->k];
			break;
		case BPF_ST:
			mem[f->k] = a;
			break;
		case BPF_MISC | BPF_TAX:
			x = a;
			break;
		case BPF_ALU | BPF_AND | BPF_K:
			a &= f->k;
			break;
		case BPF_ALU | BPF_SUB | BPF_X:
			a -= x;
			break;
		case BPF_JMP | BPF_JA:
			pc += f->k;
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
		case BPF_JMP | BPF_JEQ | BPF_X:
			pc += a == src ? f->jt : f->jf;
			break;
		case BPF_JMP | BPF_JGE | BPF_K:
		case BPF_JMP | BPF_JGE | BPF_X:
			pc += a >= src ? f->jt : f->jf;
			break;
		case BPF_JMP | BPF_JGT | BPF_K:
			pc += a > src ? f->jt : f->jf;
			break;
		case BPF_JMP | BPF_JSET | BPF_K:
			pc += a & src ? f->jt : f->jf;
			break;
		case BPF_RET | BPF_K:
			return f->k;
		default:
			fail_msg("instruction %#x at %u not interpreted", f->code, pc);
		}
	}
	fail_msg("ran off the end of the program");
	return 0;
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Values the blocks compare arguments with, and their neighbours. */
static const uint64_t arg_pool[] = {0,
                                    1,
                                    2,
                                    3,
                                    4,
                                    5,
                                    6,
                                    7,
                                    8,
                                    0x11,
                                    AT_EMPTY_PATH,
                                    AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
                                    AT_EMPTY_PATH - 1,
                                    O_WRONLY,
                                    O_RDWR,
                                    O_CREAT,
                                    O_TRUNC,
                                    __O_TMPFILE,
                                    O_RDONLY | O_CLOEXEC,
                                    O_DIRECTORY,
                                    RLIMIT_NOFILE,
                                    RLIMIT_STACK,
                                    RLIMIT_AS,
                                    PR_SET_SECCOMP,
                                    PR_SET_NAME,
                                    SECCOMP_SET_MODE_FILTER,
                                    SECCOMP_SET_MODE_STRICT,
                                    CLONE_NEWNS,
                                    CLONE_NEWUSER,
                                    CLONE_NEWTIME,
                                    CLONE_VM | 0x11,
                                    CLONE_NEWNET | CLONE_VM,
                                    RING_EMPTY_NAME,
                                    RING_EMPTY_NAME + 1,
                                    RING_EMPTY_NAME - 0x100000000ULL,
                                    RING_SAFE_PAGE,
                                    RING_SAFE_PAGE + 8,
                                    0x100000000ULL,
                                    0x100000001ULL,
                                    0x7ffd12345000ULL,
                                    0xffffffffULL,
                                    0xffffffffffffffffULL,
                                    0x100000000ULL | AT_EMPTY_PATH,
                                    0x500000000ULL | 1};

static const uint64_t ip_pool[] = {RING_SAFE_PAGE,
                                   RING_SAFE_PAGE + 100,
                                   RING_SAFE_PAGE + RING_SAFE_PAGE_SIZE - 1,
                                   RING_SAFE_PAGE + RING_SAFE_PAGE_SIZE,
                                   RING_SAFE_PAGE - 1,
                                   0x7f1234567abcULL,
                                   RING_SAFE_PAGE + 0x100000000ULL,
                                   0x401000};

static uint64_t pick(const uint64_t *pool, size_t n)
{
	uint64_t r = rnd();
	return r % 4 == 0 ? rnd() : pool[(r >> 8) % n];
}

struct config {
	int read_fds[4], write_fds[4];
	size_t nread, nwrite;
	int fast;
	size_t nsites;
};

/* The program's returns are shared (seccomp_filter.c, share_returns):
 * every instruction is reached, no jump lands on a `ja`, and one that
 * lands on a `ret k` lands on the last `ret k` unless that one lies
 * beyond its reach. */
static void check_shared(const struct seccomp_program *p)
{
	unsigned char reached[FILTER_MAX_INSNS] = {1};
	for (unsigned i = 0; i < p->len; i++) {
		const struct sock_filter *f = &p->insns[i];
		assert_true(reached[i]);
		if (BPF_CLASS(f->code) == BPF_RET)
			continue;
		unsigned to[2] = {i + 1, i + 1};
		if (BPF_CLASS(f->code) == BPF_JMP)
			to[0] += BPF_OP(f->code) == BPF_JA ? f->k : f->jt;
		if (BPF_CLASS(f->code) == BPF_JMP && BPF_OP(f->code) != BPF_JA)
			to[1] += f->jf;
		for (int j = 0; j < 2; j++) {
			assert_true(to[j] < p->len);
			reached[to[j]] = 1;
			const struct sock_filter *g = &p->insns[to[j]];
			if (BPF_CLASS(f->code) != BPF_JMP)
				continue;
			assert_int_not_equal(g->code, BPF_JMP | BPF_JA);
			if (g->code != (BPF_RET | BPF_K))
				continue;
			unsigned last = p->len - 1;
			while (p->insns[last].code != g->code || p->insns[last].k != g->k)
				last--;
			assert_true(to[j] == last ||
			            (BPF_OP(f->code) != BPF_JA && last - i - 1 > 255));
		}
	}
}

static void compare(const struct config *c)
{
	static struct seccomp_program old, new;
	struct empty_name_site sites[3] = {{0x123, 0x200}, {0xff8, 0x10000}, {0, 4}};
	size_t have = empty_name_sites(sites, 2);
	(void)have;
	old_filter_build(&old, c->read_fds, c->nread, c->write_fds, c->nwrite, c->fast, sites,
	                 c->nsites);
	seccomp_filter_build(&new, c->read_fds, c->nread, c->write_fds, c->nwrite, c->fast, sites,
	                     c->nsites);
	/* Shorter: the kernel converts and compiles it at every step's start. */
	assert_true(new.len < old.len);
	check_shared(&new);
	static const unsigned extra[] = {0x40000000, 0x40000002, 0x4000000f, 0x7fffffff,
	                                 0x80000000, 0xfffffffe, 0xffffffff, 100000};
	for (unsigned k = 0; k < 1000 + sizeof extra / sizeof extra[0]; k++) {
		unsigned nr = k < 1000 ? k : extra[k - 1000];
		for (int arch = 0; arch < 2; arch++) {
			struct seccomp_data d;
			memset(&d, 0, sizeof d);
			d.nr = (int)nr;
			d.arch = arch ? AUDIT_ARCH_I386 : AUDIT_ARCH_X86_64;
			int old_read, new_read;
			unsigned want = run(&old, &d, &old_read);
			unsigned got = run(&new, &d, &new_read);
			if (!old_read)
				assert_int_equal(got, want);
			/* What the kernel caches now it still caches. */
			if (!old_read && want == SECCOMP_RET_ALLOW)
				assert_false(new_read);
			for (int trial = 0; trial < 300; trial++) {
				for (int i = 0; i < 6; i++)
					d.args[i] =
					    pick(arg_pool, sizeof arg_pool / sizeof arg_pool[0]);
				d.instruction_pointer =
				    pick(ip_pool, sizeof ip_pool / sizeof ip_pool[0]);
				if (c->nsites && trial % 3 == 0) {
					/* A call from (or next to) an fstat site. */
					const struct empty_name_site *s = &sites[rnd() % c->nsites];
					uint64_t ip =
					    (rnd() & 0x7ffffffff000ULL) | s->ip_page_offset;
					d.instruction_pointer =
					    ip + (trial % 9 == 0 ? rnd() % 3 : 0);
					d.args[1] =
					    ip + s->distance + (trial % 6 == 0 ? rnd() % 3 - 1 : 0);
					d.args[3] = trial % 2 ? AT_EMPTY_PATH : d.args[3];
				}
				want = run(&old, &d, &old_read);
				got = run(&new, &d, &new_read);
				if (got != want)
					fail_msg("nr %u arch %d: %#x, was %#x", nr, arch, got,
					         want);
			}
		}
	}
}

static void plain(void **state)
{
	(void)state;
	compare(&(struct config){.fast = 0});
}

static void fast_path_and_sites(void **state)
{
	(void)state;
	compare(&(struct config){.fast = 1, .nsites = 2});
	compare(&(struct config){.fast = 1, .nsites = 3});
	compare(&(struct config){.fast = 0, .nsites = 1});
}

static void watched_descriptors(void **state)
{
	(void)state;
	compare(&(struct config){.write_fds = {1, 2}, .nwrite = 2, .fast = 1, .nsites = 2});
	compare(&(struct config){.read_fds = {0}, .nread = 1, .fast = 1, .nsites = 2});
	compare(&(struct config){.read_fds = {0, 5, 9},
	                         .nread = 3,
	                         .write_fds = {5, 9, 1, 2},
	                         .nwrite = 4,
	                         .fast = 1,
	                         .nsites = 2});
	compare(&(struct config){.read_fds = {7}, .nread = 1, .write_fds = {7}, .nwrite = 1});
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(plain),
	    cmocka_unit_test(fast_path_and_sites),
	    cmocka_unit_test(watched_descriptors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
