#include "trace/seccomp_filter.h"

#include "cachet/bug.h"
#include "cachet/buf.h"
#include "cachet/trace.h"
#include "trace/raw_syscall.h"
#include "trace/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* Little-endian halves of a 64-bit syscall argument. */
#define ARG_LO(i) ((unsigned)offsetof(struct seccomp_data, args[i]))
#define ARG_HI(i) ((unsigned)offsetof(struct seccomp_data, args[i]) + 4)

#define RET_TRACE (SECCOMP_RET_TRACE | FILTER_DATA_SYSCALL)

/* Traced whatever their arguments: every one carries a path, changes how
 * paths resolve, or makes the step uncacheable; or reads or sets a CPU
 * affinity, which the tracer may be holding for the step (placement.h);
 * or reads a fact of the process (below). */
const int always_traced[] = {
    __NR_open,
    __NR_openat,
    __NR_openat2,
    __NR_creat,
    __NR_stat,
    __NR_lstat,
    __NR_access,
    __NR_faccessat,
    __NR_faccessat2,
    __NR_readlink,
    __NR_readlinkat,
    __NR_execve,
    __NR_execveat,
    __NR_getdents,
    __NR_getdents64,
    __NR_chdir,
    __NR_fchdir,
    __NR_rename,
    __NR_renameat,
    __NR_renameat2,
    __NR_link,
    __NR_linkat,
    __NR_symlink,
    __NR_symlinkat,
    __NR_unlink,
    __NR_unlinkat,
    __NR_rmdir,
    __NR_mkdir,
    __NR_mkdirat,
    __NR_mknod,
    __NR_mknodat,
    __NR_truncate,
    __NR_ftruncate,
    __NR_chmod,
    __NR_fchmod,
    __NR_fchmodat,
    __NR_fchmodat2,
    __NR_utime,
    __NR_utimes,
    __NR_futimesat,
    __NR_utimensat,
    __NR_setxattr,
    __NR_lsetxattr,
    __NR_fsetxattr,
    __NR_setxattrat,
    __NR_removexattr,
    __NR_lremovexattr,
    __NR_fremovexattr,
    __NR_removexattrat,
    __NR_connect,
    __NR_setns,
    __NR_chroot,
    __NR_mount,
    __NR_umount2,
    __NR_pivot_root,
    __NR_open_tree,
    __NR_move_mount,
    __NR_fsmount,
    __NR_fspick,
    __NR_mount_setattr,
    __NR_open_tree_attr,
    __NR_ptrace,
    __NR_clone3,
    __NR_open_by_handle_at,
    __NR_sched_getaffinity,
    __NR_sched_setaffinity,
    /* extended attributes read: inputs (OBS_XATTR) */
    __NR_getxattr,
    __NR_lgetxattr,
    __NR_fgetxattr,
    __NR_listxattr,
    __NR_llistxattr,
    __NR_flistxattr,
    __NR_getxattrat,
    __NR_listxattrat,
    __NR_chown,
    __NR_fchown,
    __NR_lchown,
    __NR_fchownat,
    /* Facts of the process that a step may put into its outputs (uname
     * -n, id -u, getconf ARG_MAX): keyed where the step asks for them. */
    __NR_uname,
    __NR_getuid,
    __NR_geteuid,
    __NR_getgid,
    __NR_getegid,
    __NR_getresuid,
    __NR_getresgid,
    __NR_getgroups,
};
const size_t nalways_traced = sizeof always_traced / sizeof always_traced[0];

/* sendto is not here: its own block below stops it when it names a
 * destination, and a descriptor given to the step is hardly a socket. */
const struct fd_use fd_uses[] = {
    {__NR_read, 0, -1, 0},           {__NR_readv, 0, -1, 0},    {__NR_pread64, 0, -1, 0},
    {__NR_preadv, 0, -1, 0},         {__NR_preadv2, 0, -1, 0},  {__NR_recvfrom, 0, -1, 0},
    {__NR_recvmsg, 0, -1, 0},        {__NR_recvmmsg, 0, -1, 0}, {__NR_write, -1, 0, 0},
    {__NR_writev, -1, 0, 0},         {__NR_pwrite64, -1, 0, 0}, {__NR_pwritev, -1, 0, 0},
    {__NR_pwritev2, -1, 0, 0},       {__NR_sendmsg, -1, 0, 0},  {__NR_sendmmsg, -1, 0, 0},
    {__NR_splice, 0, 2, 0},          {__NR_tee, 0, 1, 0},       {__NR_sendfile, 1, 0, 0},
    {__NR_copy_file_range, 0, 2, 0}, {__NR_dup, 0, -1, 1},      {__NR_dup2, 0, -1, 1},
    {__NR_dup3, 0, -1, 1},           {__NR_fcntl, 0, -1, 1},    {__NR_vmsplice, -1, 0, 0},
};
const size_t nfd_uses = sizeof fd_uses / sizeof fd_uses[0];

/*
 * The program is a binary search over the syscall number, whose leaves
 * allow, stop, or jump to the code that decides by the arguments. Each
 * number's code is what the blocks below emit for it, in their order
 * (struct builder): the first block naming the number that returns on
 * every path decides it. A chain of comparisons, one per block, cost the
 * kernel a walk of the whole chain for every number at install (the
 * verdict cache, below) and made the program twice as long to convert
 * and compile; the search takes a dozen steps.
 */

/* Above every syscall number the blocks name. */
#define NR_LIMIT 1024

/* A stretch of code one block emitted for one number; it ends where the
 * next piece starts. */
struct piece {
	unsigned short nr, start, end;
};

/* The blocks run once: each emits its number's code into one program,
 * piece after piece, unless an earlier block decided the number. */
struct builder {
	struct seccomp_program *p; /* every piece, in the order emitted */
	struct piece *pieces;
	size_t npieces, cap;
	unsigned cur;                    /* the number of the piece being emitted */
	unsigned char decided[NR_LIMIT]; /* a block returned on every path */
};
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

/* Whether the block for nr emits its code now (no earlier block decided
 * nr); it then starts a piece. */
static int block_begin(struct builder *b, int nr)
{
	if (nr < 0 || nr >= NR_LIMIT)
		BUG("a syscall number beyond the seccomp builder's table");
	if (b->decided[nr])
		return 0;
	if (b->npieces == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 256;
		b->pieces = xrealloc(b->pieces, b->cap * sizeof *b->pieces);
	}
	b->pieces[b->npieces++] = (struct piece){(unsigned short)nr, b->p->len, 0};
	b->cur = (unsigned)nr;
	return 1;
}

/* The block just begun returns on every path: later ones add nothing. */
static void block_decides(struct builder *b)
{
	b->decided[b->cur] = 1;
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

/* Every block below but block_empty_name returns on every path. */
static void block_trace(struct builder *b, int nr)
{
	if (!block_begin(b, nr))
		return;
	ret(b->p, RET_TRACE);
	block_decides(b);
}

/* Trace when (low word of arg i) & mask != 0. */
static void block_trace_if_bits(struct builder *b, int nr, int arg, unsigned mask)
{
	if (!block_begin(b, nr))
		return;
	struct seccomp_program *p = b->p;
	ld(p, ARG_LO(arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1));
	ret(p, RET_TRACE);
	ret(p, SECCOMP_RET_ALLOW);
	block_decides(b);
}

/* Trace when the low word of arg i equals k (an int argument: the kernel
 * uses the low 32 bits only). */
static void block_trace_if_eq(struct builder *b, int nr, int arg, unsigned k)
{
	if (!block_begin(b, nr))
		return;
	struct seccomp_program *p = b->p;
	ld(p, ARG_LO(arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 1));
	ret(p, RET_TRACE);
	ret(p, SECCOMP_RET_ALLOW);
	block_decides(b);
}

/* Trace when the descriptor in argument in_arg is one of in_fds, or the
 * one in out_arg one of out_fds (-1: no such argument). */
static void block_trace_fds(struct builder *b, int nr, int in_arg, const int *in_fds, size_t nin,
                            int out_arg, const int *out_fds, size_t nout)
{
	if (in_arg < 0)
		nin = 0;
	if (out_arg < 0)
		nout = 0;
	if ((!nin && !nout) || !block_begin(b, nr))
		return;
	struct seccomp_program *p = b->p;
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
	block_decides(b);
}

/* Trace unless the 64-bit pointer arg i is NULL. */
static void block_trace_if_nonnull(struct builder *b, int nr, int arg)
{
	if (!block_begin(b, nr))
		return;
	struct seccomp_program *p = b->p;
	ld(p, ARG_LO(arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2));
	ld(p, ARG_HI(arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
	ret(p, RET_TRACE);
	ret(p, SECCOMP_RET_ALLOW);
	block_decides(b);
}

/* The stat calls' verdict: stop unless AT_EMPTY_PATH with a NULL path. */
static void stat_verdict(struct seccomp_program *p, int path_arg, int flags_arg)
{
	ld(p, ARG_LO(flags_arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, AT_EMPTY_PATH, 0, 4));
	ld(p, ARG_LO(path_arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2));
	ld(p, ARG_HI(path_arg));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
	ret(p, RET_TRACE);
	ret(p, SECCOMP_RET_ALLOW);
}

/* newfstatat/statx. Allowed only when provably a stat of a descriptor:
 * AT_EMPTY_PATH with a NULL path (Linux >= 6.11 accepts that). AT_EMPTY_PATH
 * with a non-NULL path is traced: the filter cannot see the string, and
 * AT_EMPTY_PATH with a non-empty name is an ordinary lookup relative to
 * dirfd. glibc's fstat() passes "": its own calls pass block_empty_name
 * first; "" from anywhere else still stops once (the tracer resumes it
 * without an exit stop). */
static void block_stat(struct builder *b, int nr, int path_arg, int flags_arg)
{
	if (!block_begin(b, nr))
		return;
	stat_verdict(b->p, path_arg, flags_arg);
	block_decides(b);
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
static void block_rlimit(struct builder *b, int nr, int res_arg, int old_arg, int fast_path)
{
	if (!block_begin(b, nr))
		return;
	struct seccomp_program *p = b->p;
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
	block_decides(b);
}

/* newfstatat(fd, "", st, AT_EMPTY_PATH) from libc's or the loader's own
 * fstat (empty_name.h): goes through when the flags are exactly
 * AT_EMPTY_PATH and the path pointer lies one site's distance past the
 * instruction pointer, which sits at that site's page offset. Anything
 * else falls through to the next block's code for the number. The
 * pointers are compared in halves: equal high halves and no borrow in the
 * low ones (an object across a 4 GB boundary just stops). */
static void block_empty_name(struct builder *b, const struct empty_name_site *sites, size_t nsites)
{
	if (!nsites || !block_begin(b, __NR_newfstatat))
		return;
	struct seccomp_program *p = b->p;
	unsigned short to_next[4];
	int n = 0;
	ld(p, ARG_LO(3));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AT_EMPTY_PATH, 0, 0));
	to_next[n++] = (unsigned short)(p->len - 1);
	ld(p, IP_HI);
	put(p, (struct sock_filter)BPF_STMT(BPF_MISC | BPF_TAX, 0));
	ld(p, ARG_HI(1));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_X, 0, 0, 0));
	to_next[n++] = (unsigned short)(p->len - 1);
	ld(p, IP_LO);
	put(p, (struct sock_filter)BPF_STMT(BPF_MISC | BPF_TAX, 0));
	ld(p, ARG_LO(1));
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_X, 0, 0, 0));
	to_next[n++] = (unsigned short)(p->len - 1);
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
	/* The last site's miss falls through too. */
	for (int i = 0; i < n; i++)
		jump_to(p, to_next[i], p->len);
}

/* The preload fast path (ring.h): the call goes through when it comes
 * from the trusted page and, for an open (flags_arg >= 0), cannot write,
 * create or truncate, whoever jumped there; else it gets the verdict it
 * would have had (a stop, or block_stat's for the stat calls). Checking
 * the instruction pointer makes the kernel run the program for these
 * numbers, which it runs for them anyway: they are traced. */
static void block_fast(struct builder *b, int nr, int flags_arg, int stat_path_arg,
                       int stat_flags_arg)
{
	if (!block_begin(b, nr))
		return;
	struct seccomp_program *p = b->p;
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
	if (stat_path_arg >= 0)
		stat_verdict(p, stat_path_arg, stat_flags_arg);
	else
		ret(p, RET_TRACE);
	block_decides(b);
}

struct filter_args {
	const int *read_fds, *write_fds;
	size_t nread_fds, nwrite_fds;
	int fast_path;
	const struct empty_name_site *sites;
	size_t nsites;
};

/* The blocks in the order they decide: for a number named by several,
 * the first that returns on every path. */
static void run_blocks(struct builder *b, const struct filter_args *a)
{
	/* io_uring runs opens, reads and renames without any syscall we see:
	 * the step is uncacheable (syscalls.c). Not ENOSYS: a program without
	 * a fallback would fail where it runs without cachet. */
	block_trace(b, __NR_io_uring_setup);

	/* First: the blocks below would stop these whatever their origin. */
	block_empty_name(b, a->sites, a->nsites);
	if (a->fast_path) {
		block_fast(b, __NR_open, 1, -1, -1);
		block_fast(b, __NR_openat, 2, -1, -1);
		block_fast(b, __NR_stat, -1, -1, -1);
		block_fast(b, __NR_lstat, -1, -1, -1);
		block_fast(b, __NR_newfstatat, -1, 1, 3);
		block_fast(b, __NR_access, -1, -1, -1);
		block_fast(b, __NR_faccessat2, -1, -1, -1);
		block_fast(b, __NR_readlink, -1, -1, -1);
	}
	for (size_t i = 0; i < nalways_traced; i++)
		block_trace(b, always_traced[i]);
	block_rlimit(b, __NR_getrlimit, 0, 1, 0);
	block_rlimit(b, __NR_prlimit64, 1, 3, a->fast_path);
	block_stat(b, __NR_newfstatat, 1, 3);
	block_stat(b, __NR_statx, 1, 2);
	block_trace_if_eq(b, __NR_prctl, 0, PR_SET_SECCOMP);
	block_trace_if_eq(b, __NR_seccomp, 0, SECCOMP_SET_MODE_FILTER);
	/* clone(): the low byte is the exit signal, so CLONE_NEWTIME (0x80)
	 * cannot be asked for there. */
	block_trace_if_bits(b, __NR_clone, 0,
	                    CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
	                        CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP);
	block_trace_if_bits(b, __NR_unshare, 0,
	                    CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
	                        CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME);
	/* sendto with a destination address reaches a host without connect(). */
	block_trace_if_nonnull(b, __NR_sendto, 4);
	for (size_t i = 0; i < nfd_uses; i++)
		block_trace_fds(b, fd_uses[i].nr, fd_uses[i].in, a->read_fds, a->nread_fds,
		                fd_uses[i].out, a->write_fds, a->nwrite_fds);
}

/* A leaf of the search: LEAF_ALLOW, LEAF_TRACE or the index of a code. */
enum { LEAF_ALLOW = -1, LEAF_TRACE = -2 };

/* Numbers lo up to the next segment's lo decide alike. */
struct segment {
	unsigned lo;
	int leaf;
};

struct code {
	unsigned short start, len; /* in the table of codes */
};

#define MAX_CODES 128

static int cmp_piece(const void *x, const void *y)
{
	const struct piece *a = x, *c = y;
	if (a->nr != c->nr)
		return (a->nr > c->nr) - (a->nr < c->nr);
	return (a->start > c->start) - (a->start < c->start);
}

/* Whether code returns on every path: no jump leaves it and it ends in a
 * return (a fall-through block with nothing after it would not). */
static int returns_everywhere(const struct sock_filter *f, unsigned len)
{
	if (!len || BPF_CLASS(f[len - 1].code) != BPF_RET)
		return 0;
	for (unsigned i = 0; i < len; i++) {
		if (BPF_CLASS(f[i].code) != BPF_JMP)
			continue;
		if (BPF_OP(f[i].code) == BPF_JA ? f[i].k >= len - i - 1
		                                : f[i].jt >= len - i - 1 || f[i].jf >= len - i - 1)
			return 0;
	}
	return 1;
}

/* The leaf for the code just emitted at codes->len - len: a plain verdict,
 * or the index of an equal code emitted before (the new copy dropped), or
 * of this one. */
static int leaf_of(struct seccomp_program *codes, unsigned start, struct code *table,
                   size_t *ntable)
{
	unsigned len = codes->len - start;
	const struct sock_filter *f = codes->insns + start;
	if (!returns_everywhere(f, len))
		BUG("a syscall's seccomp code falls off its end");
	if (len == 1 && f->k == RET_TRACE)
		return codes->len = (unsigned short)start, LEAF_TRACE;
	if (len == 1 && f->k == SECCOMP_RET_ALLOW)
		return codes->len = (unsigned short)start, LEAF_ALLOW;
	for (size_t i = 0; i < *ntable; i++)
		if (table[i].len == len &&
		    !memcmp(codes->insns + table[i].start, f, len * sizeof *f)) {
			codes->len = (unsigned short)start;
			return (int)i;
		}
	if (*ntable == MAX_CODES)
		BUG("more distinct seccomp codes than the table holds");
	table[*ntable] = (struct code){(unsigned short)start, (unsigned short)len};
	return (int)(*ntable)++;
}

/* Up to this many segments are scanned in order rather than split: fewer
 * instructions (leaves of one verdict share one return) for a few more
 * steps. */
#define SCAN_SEGMENTS 8

/* The distinct leaves of seg[0, n), the last segment's first. */
static size_t scan_targets(const struct segment *seg, size_t n, int *leaves)
{
	size_t nleaves = 0;
	for (size_t k = n; k-- > 0;) {
		size_t i = 0;
		while (i < nleaves && leaves[i] != seg[k].leaf)
			i++;
		if (i == nleaves)
			leaves[nleaves++] = seg[k].leaf;
	}
	return nleaves;
}

/* Instructions the search over seg[0, n) takes (emit_search's layout). */
static unsigned search_len(const struct segment *seg, size_t n)
{
	if (n <= SCAN_SEGMENTS) {
		int leaves[SCAN_SEGMENTS];
		return (unsigned)(n - 1 + scan_targets(seg, n, leaves));
	}
	unsigned low = search_len(seg, n / 2);
	return 1 + (low > 255) + low + search_len(seg + n / 2, n - n / 2);
}

/* A leaf: a verdict, or a jump to a code, which at[] collects to be
 * patched once the codes' places are known. */
static void emit_leaf(struct seccomp_program *p, int leaf, unsigned short *at, size_t *nat)
{
	if (leaf == LEAF_ALLOW)
		ret(p, SECCOMP_RET_ALLOW);
	else if (leaf == LEAF_TRACE)
		ret(p, RET_TRACE);
	else {
		at[(*nat)++] = p->len;
		put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, (unsigned)leaf, 0, 0));
	}
}

/* A balanced search: `nr >= lo of the upper half`, the lower half next
 * (a jump that would reach over more than 255 goes through a ja), down to
 * a few segments, scanned: `nr > the segment's last number`, else its
 * leaf; the last segment's leaf comes first after the comparisons. */
static void emit_search(struct seccomp_program *p, const struct segment *seg, size_t n,
                        unsigned short *at, size_t *nat)
{
	if (n <= SCAN_SEGMENTS) {
		int leaves[SCAN_SEGMENTS];
		size_t nleaves = scan_targets(seg, n, leaves);
		unsigned first = p->len, targets = first + (unsigned)n - 1;
		for (size_t k = 0; k + 1 < n; k++) {
			size_t i = 0;
			while (leaves[i] != seg[k].leaf)
				i++;
			put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K,
			                                    seg[k + 1].lo - 1u, 0, 0));
			jump_to(p, p->len - 1, targets + (unsigned)i);
		}
		for (size_t i = 0; i < nleaves; i++)
			emit_leaf(p, leaves[i], at, nat);
		return;
	}
	size_t half = n / 2;
	unsigned low = search_len(seg, half);
	if (low > 255) {
		put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, seg[half].lo, 0, 1));
		put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, low, 0, 0));
	} else {
		put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, seg[half].lo,
		                                    (unsigned char)low, 0));
	}
	emit_search(p, seg, half, at, nat);
	emit_search(p, seg + half, n - half, at, nat);
}

/* Distinct verdicts a program returns, at most. */
#define MAX_VERDICTS 8

/* Where a jump to instruction t ends up: through any `ja`, and from a
 * `ret k` to the program's last `ret k` (shared[k's index]). */
static unsigned landing(const struct sock_filter *f, unsigned t, const unsigned *verdicts,
                        const unsigned short *shared, unsigned nverdicts)
{
	while (f[t].code == (BPF_JMP | BPF_JA))
		t += 1 + f[t].k;
	if (f[t].code != (BPF_RET | BPF_K))
		return t;
	for (unsigned v = 0; v < nverdicts; v++)
		if (verdicts[v] == f[t].k)
			return shared[v];
	BUG("a seccomp verdict missing from the shared returns");
}

/*
 * The program with its returns shared: every jump to a `ret k` or to a
 * `ja` pointed straight where it ends, at the program's last `ret k`, and
 * the instructions nothing reaches any more dropped. The search's leaves
 * and most of the codes' returns go: a quarter of the program, which the
 * kernel converts and compiles at every step's start. Sound: a jump lands
 * where it landed before, or on a return of the same verdict, so every
 * path compares and reads what it did and returns what it did. A
 * conditional jump reaches 255 instructions only: one that would reach
 * further keeps its target (dropping instructions only brings targets
 * nearer, so another pass may point more of them). Whether the program
 * got shorter.
 */
static int share_returns(struct seccomp_program *p)
{
	const struct sock_filter *f = p->insns;
	unsigned n = p->len;
	unsigned verdicts[MAX_VERDICTS], nverdicts = 0;
	unsigned short shared[MAX_VERDICTS];
	for (unsigned i = 0; i < n; i++) {
		if (f[i].code != (BPF_RET | BPF_K))
			continue;
		unsigned v = 0;
		while (v < nverdicts && verdicts[v] != f[i].k)
			v++;
		if (v == MAX_VERDICTS)
			BUG("more seccomp verdicts than the shared returns hold");
		if (v == nverdicts)
			verdicts[nverdicts++] = f[i].k;
		shared[v] = (unsigned short)i;
	}
	/* The targets, absolute: jt/jf, or the ja's in jt. */
	unsigned short jt[FILTER_MAX_INSNS], jf[FILTER_MAX_INSNS], at[FILTER_MAX_INSNS];
	unsigned char reached[FILTER_MAX_INSNS];
	for (unsigned i = 0; i < n; i++) {
		if (BPF_CLASS(f[i].code) != BPF_JMP)
			continue;
		if (BPF_OP(f[i].code) == BPF_JA) {
			jt[i] =
			    (unsigned short)landing(f, i + 1 + f[i].k, verdicts, shared, nverdicts);
			continue;
		}
		unsigned t = landing(f, i + 1 + f[i].jt, verdicts, shared, nverdicts);
		unsigned e = landing(f, i + 1 + f[i].jf, verdicts, shared, nverdicts);
		jt[i] = (unsigned short)(t - i - 1 <= 255 ? t : i + 1 + f[i].jt);
		jf[i] = (unsigned short)(e - i - 1 <= 255 ? e : i + 1 + f[i].jf);
	}
	/* What the first instruction reaches; the targets all lie ahead. */
	memset(reached, 0, n);
	reached[0] = 1;
	for (unsigned i = 0; i < n; i++) {
		if (!reached[i] || BPF_CLASS(f[i].code) == BPF_RET)
			continue;
		if (BPF_CLASS(f[i].code) != BPF_JMP)
			reached[i + 1] = 1;
		else if (BPF_OP(f[i].code) == BPF_JA)
			reached[jt[i]] = 1;
		else
			reached[jt[i]] = reached[jf[i]] = 1;
	}
	unsigned m = 0;
	for (unsigned i = 0; i < n; i++)
		at[i] = (unsigned short)(reached[i] ? m++ : m);
	/* In place: an instruction moves to an index no later than its own. */
	for (unsigned i = 0; i < n; i++) {
		if (!reached[i])
			continue;
		struct sock_filter g = f[i];
		if (BPF_CLASS(g.code) == BPF_JMP && BPF_OP(g.code) == BPF_JA) {
			g.k = at[jt[i]] - at[i] - 1u;
		} else if (BPF_CLASS(g.code) == BPF_JMP) {
			unsigned t = at[jt[i]] - at[i] - 1u, e = at[jf[i]] - at[i] - 1u;
			if (t > 255 || e > 255)
				BUG("a seccomp jump longer than a jump reaches");
			g.jt = (unsigned char)t;
			g.jf = (unsigned char)e;
		}
		p->insns[at[i]] = g;
	}
	p->len = (unsigned short)m;
	return m < n;
}

void seccomp_filter_build(struct seccomp_program *p, const int *read_fds, size_t nread_fds,
                          const int *write_fds, size_t nwrite_fds, int fast_path,
                          const struct empty_name_site *sites, size_t nsites)
{
	struct filter_args a = {read_fds,  write_fds, nread_fds, nwrite_fds,
	                        fast_path, sites,     nsites};
	/* Every number's pieces, then sorted by number, each number's in the
	 * order emitted. */
	struct builder b = {.p = xmalloc(sizeof *b.p)};
	b.p->len = 0;
	run_blocks(&b, &a);
	size_t npieces = b.npieces;
	struct piece *pc = b.pieces;
	for (size_t i = 0; i < npieces; i++) {
		pc[i].end = i + 1 < npieces ? pc[i + 1].start : b.p->len;
		if (pc[i].start == pc[i].end)
			BUG("a seccomp block began and emitted nothing");
	}
	qsort(pc, npieces, sizeof *pc, cmp_piece);

	/* Each number's code, equal ones kept once, and the segments of
	 * numbers with the same leaf; numbers no block names are allowed. */
	struct seccomp_program *codes = xmalloc(sizeof *codes);
	codes->len = 0;
	struct code table[MAX_CODES];
	size_t ntable = 0;
	struct segment *seg = xmalloc((2 * npieces + 1) * sizeof *seg);
	size_t nseg = 0;
	seg[nseg++] = (struct segment){0, LEAF_ALLOW};
	unsigned prev = 0;
	int named = 0; /* some number before nr */
	for (size_t i = 0; i < npieces;) {
		unsigned nr = pc[i].nr;
		unsigned start = codes->len;
		for (; i < npieces && pc[i].nr == nr; i++)
			for (unsigned k = pc[i].start; k < pc[i].end; k++)
				put(codes, b.p->insns[k]);
		int leaf = leaf_of(codes, start, table, &ntable);
		if (named && prev + 1 != nr && seg[nseg - 1].leaf != LEAF_ALLOW)
			seg[nseg++] = (struct segment){prev + 1, LEAF_ALLOW};
		if (seg[nseg - 1].lo == nr)
			seg[nseg - 1].leaf = leaf; /* number 0 */
		else if (seg[nseg - 1].leaf != leaf)
			seg[nseg++] = (struct segment){nr, leaf};
		prev = nr;
		named = 1;
	}
	if (npieces && seg[nseg - 1].leaf != LEAF_ALLOW)
		seg[nseg++] = (struct segment){prev + 1, LEAF_ALLOW};
	free(b.pieces);
	free(b.p);

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
	/* Everything no block names runs untouched. The kernel caches this
	 * verdict per syscall number (the path to it reads only arch and nr),
	 * so untraced calls do not even run the program; it finds the
	 * verdicts by running the program for every number at install. */
	unsigned short *at = xmalloc(nseg * sizeof *at);
	size_t nat = 0;
	emit_search(p, seg, nseg, at, &nat);
	unsigned base = p->len;
	for (size_t i = 0; i < codes->len; i++)
		put(p, codes->insns[i]);
	for (size_t i = 0; i < nat; i++) {
		struct sock_filter *j = &p->insns[at[i]];
		j->k = base + table[j->k].start - at[i] - 1u;
	}
	free(at);
	free(seg);
	free(codes);
	while (share_returns(p))
		;
}

int seccomp_filter_install(const struct seccomp_program *prog)
{
	struct sock_fprog fprog = {.len = prog->len, .filter = (struct sock_filter *)prog->insns};
	/* SPEC_ALLOW: without it some kernels force the speculative store
	 * bypass mitigation on every filtered process, slowing the step down
	 * for no reason of its own. */
#ifdef SECCOMP_FILTER_FLAG_SPEC_ALLOW
	long r = raw_syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW,
	                     (long)&fprog, 0, 0, 0);
	if (r != -EINVAL)
		return (int)r;
#endif
	return (int)raw_syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, (long)&fprog, 0, 0, 0);
}
