#include "cachet/observe.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cachet/env.h"
#include "cachet/fdio.h"
#include "cachet/ldcache.h"
#include "cachet/path.h"
#include "cachet/step.h"
#include "cachet/trace.h"

/* The resources by number, for a readable value. */
static const char *const rlimit_names[] = {
    [RLIMIT_CPU] = "cpu time",
    [RLIMIT_FSIZE] = "file size",
    [RLIMIT_DATA] = "data size",
    [RLIMIT_STACK] = "stack size",
    [RLIMIT_CORE] = "core size",
    [RLIMIT_RSS] = "resident set",
    [RLIMIT_NPROC] = "processes",
    [RLIMIT_NOFILE] = "open files",
    [RLIMIT_MEMLOCK] = "locked memory",
    [RLIMIT_AS] = "address space",
    [RLIMIT_LOCKS] = "file locks",
    [RLIMIT_SIGPENDING] = "pending signals",
    [RLIMIT_MSGQUEUE] = "message queues",
    [RLIMIT_NICE] = "nice ceiling",
    [RLIMIT_RTPRIO] = "realtime priority",
    [RLIMIT_RTTIME] = "realtime timeout",
};

/* The resource number of a TRACE_FACT_RLIMIT name, or -1. */
static int rlimit_of(const char *name)
{
	size_t n = strlen(TRACE_FACT_RLIMIT);
	if (strncmp(name, TRACE_FACT_RLIMIT, n) != 0 || !name[n])
		return -1;
	char *end;
	long r = strtol(name + n, &end, 10);
	if (*end || r < 0 || r >= (long)(sizeof rlimit_names / sizeof rlimit_names[0]) ||
	    !rlimit_names[r] || (name[n] == '0' && name[n + 1]))
		return -1;
	return (int)r;
}

/* The part after prefix when name starts with it and the rest is a name
 * of that kind, else NULL. */
static const char *named(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	if (strncmp(name, prefix, n) || !name[n])
		return NULL;
	const char *rest = name + n;
	if (!strcmp(prefix, OBSERVE_FACT_WHICH) || !strcmp(prefix, OBSERVE_FACT_LDCACHE))
		return strchr(rest, '/') ? NULL : rest;
	for (const char *p = rest; *p; p++)
		if (*p == '=')
			return NULL;
	return rest;
}

int observe_fact_known(const char *name)
{
	return named(name, OBSERVE_FACT_ENV) || named(name, OBSERVE_FACT_WHICH) ||
	       named(name, OBSERVE_FACT_LDCACHE) || !strcmp(name, OBSERVE_FACT_MAKE_VARS) ||
	       !strcmp(name, TRACE_FACT_UNAME) || !strcmp(name, TRACE_FACT_UID) ||
	       !strcmp(name, TRACE_FACT_GID) || !strcmp(name, TRACE_FACT_GROUPS) ||
	       !strcmp(name, TRACE_FACT_CPUS) || !strcmp(name, TRACE_FACT_STDIN) ||
	       rlimit_of(name) >= 0;
}

static void put_limit(struct buf *out, const char *what, rlim_t v)
{
	if (v == RLIM_INFINITY)
		buf_addf(out, " %s unlimited", what);
	else
		buf_addf(out, " %s %llu", what, (unsigned long long)v);
}

/* The CPUs of mask as a list ("0-3,6"). */
static void put_cpus(struct buf *out, const cpu_set_t *mask)
{
	const char *sep = "";
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, mask))
			continue;
		int last = c;
		while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, mask))
			last++;
		if (last == c)
			buf_addf(out, "%s%d", sep, c);
		else
			buf_addf(out, "%s%d-%d", sep, c, last);
		sep = ",";
		c = last;
	}
}

static void env_value(const char *var, struct buf *out)
{
	const char *v = getenv(var);
	if (!v) {
		buf_addf(out, "%s unset", var);
		return;
	}
	char *stripped = env_is_make_var(var, strlen(var)) ? env_strip_make_jobs(v) : NULL;
	struct digest d;
	digest_bytes(stripped ? stripped : v, strlen(stripped ? stripped : v), &d);
	free(stripped);
	char hex[2 * DIGEST_LEN + 1];
	digest_to_hex(&d, hex);
	buf_addf(out, "%s=%s", var, hex);
}

/* As execvp searches: the first entry holding an executable regular file
 * ("" is the cwd, which is the step's: cachet runs in it). A candidate the
 * memo knows absent needs no stat: the step's own search of PATH recorded
 * those lookups, and an unchanged directory vouches for them. */
static void which_value(const char *prog, struct observe_memo *memo, struct buf *out)
{
	const char *path = getenv("PATH");
	/* Each candidate built in one buffer: an xasprintf apiece (a compile
	 * asks for two programs over a dozen directories) was most of the
	 * fact's CPU beside its stats. */
	struct buf cand;
	buf_init(&cand);
	for (const char *p = path; p;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (path_list_repeats(path, p, len)) {
			p = end ? end + 1 : NULL;
			continue;
		}
		buf_reset(&cand);
		if (len) {
			buf_add(&cand, p, len);
			buf_addch(&cand, '/');
		}
		buf_addstr(&cand, prog);
		struct stat st;
		int absent = memo && memo->known_absent &&
		             memo->known_absent(memo->known_absent_ctx, cand.data);
		if (!absent && stat(cand.data, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(cand.data, X_OK) == 0) {
			buf_add(out, cand.data, cand.len);
			buf_free(&cand);
			return;
		}
		p = end ? end + 1 : NULL;
	}
	buf_free(&cand);
	buf_addf(out, "%s not found", prog);
}

/* The loader's cache as this process last read it: evaluating a path set
 * asks for one soname per fact, and a cache file is read and checked once
 * while it is the same file (ldconfig replaces it by a rename: another
 * inode); each fact then costs a stat and a scan of the names' lengths. */
static struct {
	int have, valid;
	struct ldcache_index index;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	unsigned char *data;
} ldcache;

/* 0, or -1 with errno. */
static int ldcache_value(const char *soname, struct observe_memo *memo, struct buf *out)
{
	struct stat st;
	if (memo && memo->ldcache_checked && ldcache.have)
		goto read;
	if (stat(LDCACHE_PATH, &st) < 0)
		return -1;
	if (!ldcache.have || st.st_dev != ldcache.dev || st.st_ino != ldcache.ino ||
	    st.st_size != ldcache.size || st.st_mtim.tv_sec != ldcache.mtime.tv_sec ||
	    st.st_mtim.tv_nsec != ldcache.mtime.tv_nsec) {
		int fd = open(LDCACHE_PATH, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		struct stat fst;
		unsigned char *data = NULL;
		if (fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode)) {
			data = xmalloc((size_t)fst.st_size + 1);
			if (read_full(fd, data, (size_t)fst.st_size) != fst.st_size) {
				free(data);
				data = NULL;
			}
		}
		int saved = errno;
		close(fd);
		if (!data) {
			errno = saved ? saved : EIO;
			return -1;
		}
		free(ldcache.data);
		ldcache_index_free(&ldcache.index);
		ldcache.have = 1;
		ldcache.dev = fst.st_dev;
		ldcache.ino = fst.st_ino;
		ldcache.size = fst.st_size;
		ldcache.mtime = fst.st_mtim;
		ldcache.data = data;
		ldcache.valid = ldcache_index_init(&ldcache.index, data, (size_t)fst.st_size) == 0;
	}
	if (memo)
		memo->ldcache_checked = 1;
read:
	if (!ldcache.valid) {
		errno = EBADMSG;
		return -1;
	}
	ldcache_index_lookup(&ldcache.index, soname, out);
	return 0;
}

/* Values are text after the 'P', so that explain can show them as they
 * are: the facts are the caller's, which every process of the step
 * inherited (what the step then changed of them itself is the step's own
 * doing, a function of its other inputs). */
void observe_fact_value(const char *name, struct buf *out)
{
	observe_fact_value_memo(name, NULL, out);
}

void observe_fact_value_memo(const char *name, struct observe_memo *memo, struct buf *out)
{
	size_t start = out->len;
	buf_addch(out, 'P');
	int r = rlimit_of(name);
	const char *var = named(name, OBSERVE_FACT_ENV);
	const char *prog = named(name, OBSERVE_FACT_WHICH);
	const char *soname = named(name, OBSERVE_FACT_LDCACHE);
	if (var) {
		env_value(var, out);
	} else if (prog) {
		which_value(prog, memo, out);
	} else if (soname) {
		if (ldcache_value(soname, memo, out) < 0)
			goto failed;
	} else if (!strcmp(name, OBSERVE_FACT_MAKE_VARS)) {
		env_make_vars_value(getenv("MAKEFLAGS"), out);
	} else if (!strcmp(name, TRACE_FACT_UNAME)) {
		struct utsname u;
		if (uname(&u) < 0)
			goto failed;
		buf_addf(out, "%s %s %s %s %s", u.sysname, u.nodename, u.release, u.version,
		         u.machine);
	} else if (!strcmp(name, TRACE_FACT_UID)) {
		uid_t ru, eu, su;
		if (getresuid(&ru, &eu, &su) < 0)
			goto failed;
		buf_addf(out, "uid %u euid %u suid %u", ru, eu, su);
	} else if (!strcmp(name, TRACE_FACT_GID)) {
		gid_t rg, eg, sg;
		if (getresgid(&rg, &eg, &sg) < 0)
			goto failed;
		buf_addf(out, "gid %u egid %u sgid %u", rg, eg, sg);
	} else if (!strcmp(name, TRACE_FACT_GROUPS)) {
		int n = getgroups(0, NULL);
		gid_t *g = xmalloc((n > 0 ? (size_t)n : 1) * sizeof *g);
		n = getgroups(n, g);
		if (n < 0) {
			free(g);
			goto failed;
		}
		buf_addstr(out, "groups");
		for (int i = 0; i < n; i++)
			buf_addf(out, " %u", g[i]);
		free(g);
	} else if (!strcmp(name, TRACE_FACT_CPUS)) {
		cpu_set_t mask;
		if (sched_getaffinity(0, sizeof mask, &mask) < 0)
			goto failed;
		buf_addstr(out, "cpus ");
		put_cpus(out, &mask);
	} else if (!strcmp(name, TRACE_FACT_STDIN)) {
		/* Only /dev/null is keyed as itself: the others are a regular
		 * file (keyed by content in the weak key) or streams, whose
		 * reads make a step uncacheable. */
		struct stat st;
		if (fstat(0, &st) < 0)
			buf_addstr(out, "stdin closed");
		else if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3))
			buf_addstr(out, "stdin /dev/null");
		else
			buf_addstr(out,
			           S_ISREG(st.st_mode) ? "stdin a regular file" : "stdin a stream");
	} else if (r >= 0) {
		struct rlimit l;
		if (getrlimit(r, &l) < 0)
			goto failed;
		buf_addstr(out, rlimit_names[r]);
		put_limit(out, "soft", l.rlim_cur);
		put_limit(out, "hard", l.rlim_max);
	} else {
		errno = EINVAL;
		goto failed;
	}
	return;
failed:
	out->len = start;
	out->data[start] = '\0';
	buf_addch(out, 'E');
	buf_put_u32(out, (uint32_t)errno);
}
