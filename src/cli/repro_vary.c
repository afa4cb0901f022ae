/* cachet repro: the variations of the conditions a step runs under. */
#include "cli/repro.h"

#include <ctype.h>
#include <ftw.h>
#include <locale.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cachet/path.h"

#define LIBFAKETIME "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

/* The time variation moves the clock this many days per variant: far enough
 * that a date changes, as reprotest's faketime does. */
#define TIME_SHIFT_DAYS 373

static const char *const names[VARY_COUNT] = {
    [VARY_ENV] = "env",       [VARY_TZ] = "tz",
    [VARY_LOCALE] = "locale", [VARY_UMASK] = "umask",
    [VARY_ASLR] = "aslr",     [VARY_CPUS] = "cpus",
    [VARY_TIME] = "time",     [VARY_DIRORDER] = "dirorder",
    [VARY_HOME] = "home",     [VARY_PATH] = "path",
    [VARY_USER] = "user",     [VARY_HOST] = "host",
    [VARY_KERNEL] = "kernel", [VARY_BUILDPATH] = "buildpath",
};

/* A work tree larger than this is not copied for the build path variation
 * (a cwd of $HOME would copy everything in it). */
#define BUILDPATH_MAX_BYTES (2ull << 30)
#define BUILDPATH_MAX_FILES 200000

/* reprotest's values where it has them: what a step embeds is found by
 * grepping its outputs for them. */
#define VARIED_HOME       "/nonexistent/cachet-repro-home"
#define VARIED_PATH_DIR   "/i_capture_the_path"
#define VARIED_HOSTNAME   "i-capture-the-hostname"
#define VARIED_DOMAINNAME "i-capture-the-domainname"
#define VARIED_ID         1234

const char *vary_name(int v)
{
	return v >= 0 && v < VARY_COUNT ? names[v] : "?";
}

static int vary_lookup(const char *name, size_t len)
{
	for (int v = 0; v < VARY_COUNT; v++)
		if (strlen(names[v]) == len && !strncmp(names[v], name, len))
			return v;
	return -1;
}

int vary_parse(const char *list, unsigned *mask, char *err, size_t cap)
{
	unsigned m = 0;
	for (const char *p = list; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int drop = len && p[0] == '-';
		const char *name = p + drop;
		size_t nlen = len - (size_t)drop;
		if (nlen == 3 && !strncmp(name, "all", 3) && !drop) {
			m = VARY_ALL;
		} else if (nlen == 4 && !strncmp(name, "none", 4) && !drop) {
			m = 0;
		} else {
			int v = vary_lookup(name, nlen);
			if (v < 0) {
				struct buf known;
				buf_init(&known);
				for (int k = 0; k < VARY_COUNT; k++)
					buf_addf(&known, "%s, ", names[k]);
				snprintf(err, cap, "unknown variation '%.*s' (known: %sall)",
				         (int)nlen, name, known.data);
				buf_free(&known);
				return -1;
			}
			if (drop)
				m &= ~(1u << v);
			else
				m |= 1u << v;
		}
		if (!end)
			break;
		p = end + 1;
	}
	*mask = m;
	return 0;
}

/* ---- the control's conditions, as the variations see them ---- */

static unsigned current_umask(void)
{
	mode_t u = umask(022);
	umask(u);
	return (unsigned)u;
}

static int online_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) < 0)
		return 1;
	return CPU_COUNT(&set);
}

static int faketime_installed(void)
{
	return access(LIBFAKETIME, R_OK) == 0;
}

/* "C.UTF-8" and "C.utf8" name one locale, as do "C" and "POSIX". */
static void normalise_locale(const char *in, char *out, size_t cap)
{
	if (!strcmp(in, "POSIX"))
		in = "C";
	size_t k = 0;
	for (; *in && k + 1 < cap; in++)
		if (*in != '-')
			out[k++] = (char)tolower((unsigned char)*in);
	out[k] = '\0';
}

/* An installed locale other than the control's: reprotest's et_EE (its
 * collation sorts "z" after "s" differently) when installed, else one of a
 * few common ones, else C.UTF-8 against C. */
static const char *other_locale(void)
{
	static const char *const candidates[] = {"et_EE.UTF-8", "fr_CH.UTF-8", "de_DE.UTF-8",
	                                         "en_US.UTF-8", "C.UTF-8",     "C"};
	const char *cur = getenv("LC_ALL");
	if (!cur || !*cur)
		cur = getenv("LC_CTYPE");
	if (!cur || !*cur)
		cur = getenv("LANG");
	if (!cur || !*cur)
		cur = "C";
	char ncur[64], ncand[64];
	normalise_locale(cur, ncur, sizeof ncur);
	for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
		normalise_locale(candidates[i], ncand, sizeof ncand);
		if (!strcmp(ncand, ncur))
			continue;
		locale_t l = newlocale(LC_ALL_MASK, candidates[i], (locale_t)0);
		if (l) {
			freelocale(l);
			return candidates[i];
		}
	}
	return "C";
}

/* Whether the child will be allowed to flip ADDR_NO_RANDOMIZE: tried here
 * and undone (container seccomp profiles allow only a few personalities). */
static int can_flip_aslr(void)
{
	int cur = personality(0xffffffff);
	if (cur < 0)
		return 0;
	if (personality((unsigned)cur ^ ADDR_NO_RANDOMIZE) < 0)
		return 0;
	personality((unsigned)cur);
	return 1;
}

/* Whether the step's process may enter the namespaces (TRACE_NS_* bits):
 * tried in a child (a user namespace needs a single-threaded process, and
 * containers and sysctls forbid them). */
static int can_unshare(unsigned namespaces)
{
	struct trace_spec probe = {.namespaces = namespaces,
	                           .ns_uid = VARIED_ID,
	                           .ns_gid = VARIED_ID,
	                           .hostname = VARIED_HOSTNAME,
	                           .domainname = VARIED_DOMAINNAME};
	pid_t pid = fork();
	if (pid == 0)
		_exit(trace_enter_namespaces(&probe) < 0 ? 1 : 0);
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int can_set_uname26(void)
{
	int cur = personality(0xffffffff);
	if (cur < 0 || personality((unsigned)cur | UNAME26) < 0)
		return 0;
	personality((unsigned)cur);
	return 1;
}

void vary_check(unsigned *mask, struct buf *notes)
{
	if ((*mask & (1u << VARY_USER)) && !can_unshare(TRACE_NS_USER)) {
		buf_addstr(notes, "user: a user namespace may not be created here: not varied\n");
		*mask &= ~(1u << VARY_USER);
	}
	if ((*mask & (1u << VARY_HOST)) && !can_unshare(TRACE_NS_UTS)) {
		buf_addstr(notes, "host: a UTS namespace may not be created here: not varied\n");
		*mask &= ~(1u << VARY_HOST);
	}
	if ((*mask & (1u << VARY_KERNEL)) && !can_set_uname26()) {
		buf_addstr(notes, "kernel: this process may not set the UNAME26 personality: "
		                  "not varied\n");
		*mask &= ~(1u << VARY_KERNEL);
	}
	if ((*mask & (1u << VARY_TIME)) && !faketime_installed())
		buf_addstr(notes, "time: libfaketime is not installed (Debian package faketime): "
		                  "only SOURCE_DATE_EPOCH varies, not the clock\n");
	if ((*mask & (1u << VARY_CPUS)) && online_cpus() < 2) {
		buf_addstr(notes, "cpus: the step may use only one CPU here: not varied\n");
		*mask &= ~(1u << VARY_CPUS);
	}
	if ((*mask & (1u << VARY_ASLR)) && !can_flip_aslr()) {
		buf_addstr(notes,
		           "aslr: this process may not change its personality: not varied\n");
		*mask &= ~(1u << VARY_ASLR);
	}
}

/* ---- applying ---- */

/* Sets NAME=value in *env, replacing an existing NAME. */
static void env_set(char ***env, const char *name, const char *value)
{
	size_t nlen = strlen(name), n = 0;
	char **v = *env;
	for (; v[n]; n++) {
		if (!strncmp(v[n], name, nlen) && v[n][nlen] == '=') {
			free(v[n]);
			v[n] = xasprintf("%s=%s", name, value);
			return;
		}
	}
	v = xrealloc(v, (n + 2) * sizeof *v);
	v[n] = xasprintf("%s=%s", name, value);
	v[n + 1] = NULL;
	*env = v;
}

static const char *env_get(char **env, const char *name)
{
	size_t nlen = strlen(name);
	for (; *env; env++)
		if (!strncmp(*env, name, nlen) && (*env)[nlen] == '=')
			return *env + nlen + 1;
	return NULL;
}

static void describe(struct buf *text, struct buf *json, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void describe(struct buf *text, struct buf *json, const char *key, const char *fmt, ...)
{
	struct buf v;
	buf_init(&v);
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(&v, fmt, ap);
	va_end(ap);
	if (text->len)
		buf_addstr(text, ", ");
	buf_add(text, v.data, v.len);
	if (json->len)
		buf_addstr(json, ", ");
	buf_add_json_string(json, key, strlen(key));
	buf_addstr(json, ": ");
	buf_add_json_string(json, v.data, v.len);
	buf_free(&v);
}

static void vary_time(unsigned k, char ***env, struct buf *text, struct buf *json)
{
	long long days = (long long)k * TIME_SHIFT_DAYS;
	/* From the control's SOURCE_DATE_EPOCH when it has one, else from now:
	 * either way a value the control did not see. */
	const char *sde = env_get(*env, "SOURCE_DATE_EPOCH");
	char *end = NULL;
	long long base = sde ? strtoll(sde, &end, 10) : 0;
	if (!sde || !*sde || *end)
		base = (long long)time(NULL);
	char value[32];
	snprintf(value, sizeof value, "%lld", base + days * 86400);
	env_set(env, "SOURCE_DATE_EPOCH", value);
	if (!faketime_installed()) {
		describe(text, json, "time", "SOURCE_DATE_EPOCH=%s", value);
		return;
	}
	/* The vDSO answers clock_gettime without a syscall, so no tracer trick
	 * can move the clock; an LD_PRELOAD library can (not for static
	 * binaries). Stat times and the monotonic clock stay real: make and
	 * timeouts keep working. */
	const char *pre = env_get(*env, "LD_PRELOAD");
	char *preload = pre && *pre ? xasprintf("%s:%s", LIBFAKETIME, pre) : xstrdup(LIBFAKETIME);
	char shift[32];
	snprintf(shift, sizeof shift, "+%lldd", days); /* libfaketime's "+373d" */
	env_set(env, "LD_PRELOAD", preload);
	env_set(env, "FAKETIME", shift);
	env_set(env, "NO_FAKE_STAT", "1");
	env_set(env, "DONT_FAKE_MONOTONIC", "1");
	free(preload);
	describe(text, json, "time", "SOURCE_DATE_EPOCH=%s, clock +%lld days", value, days);
}

static uint64_t tree_bytes, tree_files;

static int tree_add(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	tree_files++;
	if (type == FTW_F)
		tree_bytes += (uint64_t)st->st_size;
	return tree_bytes > BUILDPATH_MAX_BYTES || tree_files > BUILDPATH_MAX_FILES;
}

char *vary_buildpath_dir(const char *cwd, struct buf *notes)
{
	const char *base = getenv("TMPDIR");
	if (!base || !*base || access(base, W_OK) < 0)
		base = "/tmp";
	char *real_base = realpath(base, NULL);
	if (!strcmp(cwd, "/") || !real_base || path_is_under(real_base, cwd)) {
		buf_addf(notes,
		         "buildpath: the work tree %s holds %s, where it would be copied: "
		         "not varied\n",
		         cwd, real_base ? real_base : base);
		free(real_base);
		return NULL;
	}
	tree_bytes = tree_files = 0;
	if (nftw(cwd, tree_add, 32, FTW_PHYS) != 0) {
		buf_addf(notes,
		         "buildpath: the work tree %s is too large to copy (more than %llu "
		         "files or %llu MB) or unreadable: not varied\n",
		         cwd, (unsigned long long)BUILDPATH_MAX_FILES,
		         (unsigned long long)(BUILDPATH_MAX_BYTES >> 20));
		free(real_base);
		return NULL;
	}
	/* Another length too: a path embedded in a fixed-size field shows. */
	char *tmpl = xasprintf("%s/cachet-repro-buildpath-XXXXXX", real_base);
	free(real_base);
	if (!mkdtemp(tmpl)) {
		buf_addf(notes, "buildpath: cannot create a directory for the copy: not varied\n");
		free(tmpl);
		return NULL;
	}
	const char *name = path_basename(cwd);
	char *dir = xasprintf("%s/%s", tmpl, name);
	free(tmpl);
	return dir;
}

void vary_apply(unsigned mask, unsigned variant, const char *moved_cwd, char ***env,
                struct trace_spec *spec, struct buf *text, struct buf *json)
{
	if (!variant)
		return;
	unsigned k = variant;
	if ((mask & (1u << VARY_BUILDPATH)) && moved_cwd) {
		env_set(env, "PWD", moved_cwd);
		describe(text, json, "buildpath", "build path %s", moved_cwd);
	}
	if (mask & (1u << VARY_ENV)) {
		env_set(env, "CAPTURE_ENVIRONMENT", "i_capture_the_environment");
		describe(text, json, "env", "CAPTURE_ENVIRONMENT=i_capture_the_environment");
	}
	if (mask & (1u << VARY_TZ)) {
		/* reprotest's pair: 26 hours apart, so the date differs too. */
		const char *tz = k % 2 ? "GMT-14" : "GMT+12";
		env_set(env, "TZ", tz);
		describe(text, json, "tz", "TZ=%s", tz);
	}
	if (mask & (1u << VARY_LOCALE)) {
		const char *loc = other_locale();
		env_set(env, "LC_ALL", loc);
		describe(text, json, "locale", "LC_ALL=%s", loc);
	}
	if (mask & (1u << VARY_UMASK)) {
		unsigned u = current_umask() == 002 ? 022 : 002;
		spec->set_umask = 1;
		spec->umask = u;
		describe(text, json, "umask", "umask %03o", u);
	}
	if (mask & (1u << VARY_ASLR)) {
		int cur = personality(0xffffffff);
		int off = cur >= 0 && (cur & ADDR_NO_RANDOMIZE);
		spec->aslr = off ? -1 : 1;
		describe(text, json, "aslr", "%s", off ? "ASLR on" : "ASLR off");
	}
	if (mask & (1u << VARY_CPUS)) {
		int n = online_cpus();
		spec->max_cpus = n / 2;
		describe(text, json, "cpus", "%d of %d CPUs", n / 2, n);
	}
	if (mask & (1u << VARY_TIME))
		vary_time(k, env, text, json);
	if (mask & (1u << VARY_HOME)) {
		env_set(env, "HOME", VARIED_HOME);
		describe(text, json, "home", "HOME=%s", VARIED_HOME);
	}
	if (mask & (1u << VARY_PATH)) {
		const char *path = env_get(*env, "PATH");
		char *varied = xasprintf("%s%s%s", path && *path ? path : "",
		                         path && *path ? ":" : "", VARIED_PATH_DIR);
		env_set(env, "PATH", varied);
		free(varied);
		describe(text, json, "path", "PATH=…:%s", VARIED_PATH_DIR);
	}
	if (mask & (1u << VARY_USER)) {
		spec->namespaces |= TRACE_NS_USER;
		spec->ns_uid = spec->ns_gid = VARIED_ID;
		describe(text, json, "user", "uid and gid %d (user namespace)", VARIED_ID);
	}
	if (mask & (1u << VARY_HOST)) {
		spec->namespaces |= TRACE_NS_UTS;
		spec->hostname = VARIED_HOSTNAME;
		spec->domainname = VARIED_DOMAINNAME;
		describe(text, json, "host", "host name %s, domain %s (UTS namespace)",
		         VARIED_HOSTNAME, VARIED_DOMAINNAME);
	}
	if (mask & (1u << VARY_KERNEL)) {
		spec->uname26 = 1;
		describe(text, json, "kernel", "kernel release 2.6.x (personality UNAME26)");
	}
	if (mask & (1u << VARY_DIRORDER)) {
		/* Reversed first: it differs from the kernel's order for any
		 * directory of two or more entries, whatever its size. */
		if (k % 2) {
			spec->dirorder = TRACE_DIRORDER_REVERSE;
			describe(text, json, "dirorder", "directory order reversed");
		} else {
			spec->dirorder = TRACE_DIRORDER_SHUFFLE;
			spec->dirorder_seed = k;
			describe(text, json, "dirorder", "directory order shuffled (seed %u)", k);
		}
	}
}
