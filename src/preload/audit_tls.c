/*
 * The audit library's start-up check of static TLS (audit.c loads it).
 *
 * With an audit library, the loader sizes the static TLS block before it
 * loads the program's libraries: from the executable, the loader and a
 * surplus (glibc 2.36: about 2 KB with the default tunables), where each
 * library that uses the initial-exec TLS model (DF_STATIC_TLS) must then
 * fit. Without one, the block is sized after they are loaded, to what they
 * need plus that surplus. librustc_driver needs some 20 KB: rustc, rustdoc
 * and clippy-driver exit 127, "cannot allocate memory in static TLS block".
 * No fixed larger surplus is right for every program: each thread's stack
 * gives up the whole block, and node's small-stack threads fail to start
 * with 28 KB more.
 *
 * So the program's own need is added, and only where it would not fit: as
 * each library is mapped (before any is relocated, which is where the
 * loader would fail), the initial-exec TLS of those mapped so far is added
 * up; once it exceeds what the surplus holds, the program is executed
 * again, the same file with the same arguments and environment, with
 * glibc.rtld.optional_static_tls raised by that need (after the user's own
 * GLIBC_TUNABLES, whose other settings stay). The program then has the
 * room a plain start gives it. The preload library puts GLIBC_TUNABLES back
 * as it was before the program's code runs (TLS_TUNABLES_WAS_ENV), so the
 * program and its children see the environment they were given.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>

#include "preload/audit_tls.h"
#include "preload/ring_client.h"

#define TUNABLE "glibc.rtld.optional_static_tls="
/* glibc's default for the tunable, and what the surplus holds beyond it
 * with one audit module (dl-tls.c: 4 * 144 + 5 * 144 + 144 bytes), less a
 * margin for the alignment between blocks. */
#define DEFAULT_OPTIONAL_TLS    512
#define SURPLUS_BEYOND_OPTIONAL 1024
/* Room given beyond the need found: blocks are aligned, and a library
 * mapped after the check's last look may need some too. */
#define EXTRA_ROOM 4096
/* The most of /proc/self/cmdline and /proc/self/environ taken, each:
 * reserved address space, touched only as far as they go. */
#define PROC_FILE_MAX (8UL << 20)

static int started;            /* the program's own libraries are relocated */
static unsigned long tls_need; /* initial-exec TLS of the libraries mapped */
static int gave_up;            /* tried, or cannot: never again */

void audit_tls_started(void)
{
	started = 1;
}

static int same_prefix(const char *s, const char *prefix)
{
	while (*prefix)
		if (*s++ != *prefix++)
			return 0;
	return 1;
}

/* The initial-exec TLS bytes of a mapped object: its PT_TLS, when its
 * DT_FLAGS has DF_STATIC_TLS; 0 otherwise, or when its headers are not
 * where a shared object has them. */
static unsigned long static_tls_of(const struct link_map *map)
{
	int static_tls = 0;
	for (const ElfW(Dyn) *d = map->l_ld; d && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_STATIC_TLS))
			static_tls = 1;
	if (!static_tls || map->l_addr == 0)
		return 0;
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)map->l_addr;
	if (eh->e_ident[EI_MAG0] != ELFMAG0 || eh->e_ident[EI_MAG1] != ELFMAG1 ||
	    eh->e_ident[EI_MAG2] != ELFMAG2 || eh->e_ident[EI_MAG3] != ELFMAG3 ||
	    eh->e_phentsize != sizeof(ElfW(Phdr)))
		return 0;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(map->l_addr + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_TLS) {
			unsigned long align = ph[i].p_align ? ph[i].p_align : 1;
			return (ph[i].p_memsz + align - 1) / align * align;
		}
	return 0;
}

/* The whole of a /proc file into a fresh mapping: its length, or -1. */
static long slurp(const char *path, char **out)
{
	long m = rc_syscall(SYS_mmap, 0, (long)PROC_FILE_MAX, PROT_READ | PROT_WRITE,
	                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m < 0 && m > -4096)
		return -1;
	long fd = rc_safe_syscall(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0) {
		rc_syscall(SYS_munmap, m, (long)PROC_FILE_MAX, 0, 0, 0, 0);
		return -1;
	}
	unsigned long len = 0;
	long n;
	while ((n = rc_syscall(SYS_read, fd, m + (long)len, (long)(PROC_FILE_MAX - len - 1), 0, 0,
	                       0)) > 0)
		len += (unsigned long)n;
	rc_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
	if (n < 0 || len >= PROC_FILE_MAX - 1) {
		rc_syscall(SYS_munmap, m, (long)PROC_FILE_MAX, 0, 0, 0, 0);
		return -1;
	}
	((char *)m)[len] = '\0';
	*out = (char *)m;
	return (long)len;
}

/* NUL-separated strings of buf[0..len) into a NULL-terminated array at
 * *vec, with room for extra more; the count. */
static long split(char *buf, long len, char ***vec, long extra)
{
	long count = 0;
	for (long i = 0; i < len; i++)
		if (buf[i] == '\0')
			count++;
	long bytes = (count + extra + 1) * (long)sizeof(char *);
	long m = rc_syscall(SYS_mmap, 0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	                    -1, 0);
	if (m < 0 && m > -4096)
		return -1;
	char **v = (char **)m;
	long k = 0;
	for (long i = 0; i < len; i += (long)rc_strnlen(buf + i, (size_t)(len - i)) + 1)
		v[k++] = buf + i;
	v[k] = 0;
	*vec = v;
	return k;
}

static char *put_decimal(char *at, unsigned long v)
{
	char digits[24];
	int n = 0;
	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n)
		*at++ = digits[--n];
	return at;
}

static char *put_string(char *at, const char *s)
{
	while (*s)
		*at++ = *s++;
	return at;
}

/* The user's glibc.rtld.optional_static_tls in a GLIBC_TUNABLES value (the
 * last one counts, as for the loader), or the default. */
static unsigned long user_optional_tls(const char *tunables)
{
	unsigned long v = DEFAULT_OPTIONAL_TLS;
	for (const char *p = tunables; p && *p;) {
		if (same_prefix(p, TUNABLE)) {
			unsigned long n = 0;
			for (p += sizeof TUNABLE - 1; *p >= '0' && *p <= '9'; p++)
				n = n * 10 + (unsigned long)(*p - '0');
			v = n;
		}
		while (*p && *p != ':')
			p++;
		if (*p == ':')
			p++;
	}
	return v;
}

/* Executes the program again with room for need bytes more; returns only
 * when that cannot be done (the loader then fails as it would have). */
static void again_with_room(unsigned long need)
{
	char *env, *args;
	long env_len = slurp("/proc/self/environ", &env);
	long args_len = env_len < 0 ? -1 : slurp("/proc/self/cmdline", &args);
	if (args_len <= 0)
		return;
	char **envv, **argv;
	long nenv = split(env, env_len, &envv, 2);
	if (nenv < 0 || split(args, args_len, &argv, 0) < 0)
		return;
	const char *tunables = 0;
	long k = 0;
	for (long i = 0; i < nenv; i++) {
		if (same_prefix(envv[i], TLS_TUNABLES_WAS_ENV "="))
			return; /* executed again already: it did not help */
		if (same_prefix(envv[i], "GLIBC_TUNABLES="))
			tunables = envv[i] + sizeof "GLIBC_TUNABLES=" - 1;
		else
			envv[k++] = envv[i];
	}
	unsigned long opt = user_optional_tls(tunables);
	if (need <= opt + SURPLUS_BEYOND_OPTIONAL)
		return; /* the user's setting holds it */
	unsigned long tlen = tunables ? rc_strnlen(tunables, PROC_FILE_MAX) : 0;
	unsigned long bytes = 2 * tlen + 256;
	long m = rc_syscall(SYS_mmap, 0, (long)bytes, PROT_READ | PROT_WRITE,
	                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m < 0 && m > -4096)
		return;
	char *at = (char *)m;
	envv[k++] = at;
	at = put_string(at, "GLIBC_TUNABLES=");
	if (tunables && *tunables) {
		at = put_string(at, tunables);
		*at++ = ':';
	}
	at = put_string(at, TUNABLE);
	at = put_decimal(at, opt + need + EXTRA_ROOM);
	*at++ = '\0';
	envv[k++] = at;
	at = put_string(at, TLS_TUNABLES_WAS_ENV "=");
	if (tunables) {
		*at++ = '1';
		at = put_string(at, tunables);
	} else {
		*at++ = '0';
	}
	*at = '\0';
	envv[k] = 0;
	char exe[4096];
	long n =
	    rc_safe_syscall(SYS_readlink, (long)"/proc/self/exe", (long)exe, sizeof exe - 1, 0);
	if (n <= 0 || n >= (long)sizeof exe - 1)
		return;
	exe[n] = '\0';
	static const char deleted[] = " (deleted)";
	if (n >= (long)sizeof deleted - 1 && same_prefix(exe + n - (sizeof deleted - 1), deleted))
		return;
	rc_syscall(SYS_execve, (long)exe, (long)argv, (long)envv, 0, 0, 0);
}

void audit_tls_object(const struct link_map *map, Lmid_t lmid)
{
	/* The executable (l_name "") and what the loader had mapped before
	 * it sized the block are in the block already. */
	if (started || gave_up || lmid != LM_ID_BASE || !map->l_name || !map->l_name[0])
		return;
	tls_need += static_tls_of(map);
	if (tls_need <= DEFAULT_OPTIONAL_TLS + SURPLUS_BEYOND_OPTIONAL)
		return;
	gave_up = 1;
	again_with_room(tls_need);
	/* Returned: the user's tunables may hold it, and if not the loader
	 * fails as it did without this check. */
}
