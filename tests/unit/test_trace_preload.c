/*
 * The tracer's preload fast path (src/trace/ring.h): a program traced with
 * libcachet-preload.so behaves exactly as without it (its realpath() is
 * glibc's, answer for answer), the tracer records the same events with or
 * without it, and it spares the stops.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cachet/trace.h"
#include "preload/ring_client.h"
#include "test_compile.h"

extern char **environ;

static char dir[PATH_MAX];   /* scratch directory (real path) */
static char probe[PATH_MAX]; /* the program below, compiled here */

/* For each argument: realpath (into a buffer and malloc'd), stat, lstat,
 * access, readlink and open, with results and errnos on stdout; "@cd=DIR"
 * changes directory instead. */
static const char probe_src[] =
    "#define _GNU_SOURCE\n"
    "#include <errno.h>\n#include <fcntl.h>\n#include <limits.h>\n#include <stdio.h>\n"
    "#include <stdlib.h>\n#include <string.h>\n#include <sys/stat.h>\n#include <unistd.h>\n"
    "int main(int argc, char **argv) {\n"
    "  for (int i = 1; i < argc; i++) {\n"
    "    const char *p = argv[i]; char buf[PATH_MAX]; struct stat st;\n"
    "    if (!strncmp(p, \"@cd=\", 4)) { printf(\"[%s] %d\\n\", p, chdir(p + 4)); continue; }\n"
    "    strcpy(buf, \"untouched\"); errno = 0;\n"
    "    char *r = realpath(p, buf);\n"
    "    printf(\"[%s] realpath %s errno=%d buf=%s\\n\", p, r ? r : \"NULL\", r ? 0 : errno, "
    "buf);\n"
    "    errno = 0; char *m = canonicalize_file_name(p);\n"
    "    printf(\"  canonical %s errno=%d\\n\", m ? m : \"NULL\", m ? 0 : errno); free(m);\n"
    "    errno = 0; int rc = stat(p, &st);\n"
    "    printf(\"  stat %d errno=%d mode=%o\\n\", rc, rc ? errno : 0, rc ? 0 : st.st_mode & "
    "S_IFMT);\n"
    "    errno = 0; rc = lstat(p, &st);\n"
    "    printf(\"  lstat %d errno=%d mode=%o\\n\", rc, rc ? errno : 0, rc ? 0 : st.st_mode & "
    "S_IFMT);\n"
    "    errno = 0; rc = access(p, R_OK); printf(\"  access %d errno=%d\\n\", rc, rc ? errno : "
    "0);\n"
    "    char lb[PATH_MAX]; errno = 0; ssize_t n = readlink(p, lb, sizeof lb);\n"
    "    printf(\"  readlink %zd errno=%d %.*s\\n\", n, n < 0 ? errno : 0, n > 0 ? (int)n : 0, "
    "lb);\n"
    "    errno = 0; int fd = open(p, O_RDONLY);\n"
    "    printf(\"  open errno=%d\\n\", fd < 0 ? errno : 0);\n"
    "    if (fd >= 0) { rc = fstat(fd, &st); printf(\"  fstat %d mode=%o\\n\", rc, st.st_mode & "
    "S_IFMT); close(fd); }\n"
    "  }\n"
    "  return 0;\n"
    "}\n";

static int sh(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int group_setup(void **state)
{
	char tmpl[] = "/tmp/cachet-preload-XXXXXX";
	if (!mkdtemp(tmpl) || !realpath(tmpl, dir) || chdir(dir) < 0)
		return -1;
	if (compile_program(dir, "probe", probe_src, "", probe, sizeof probe) < 0)
		return -1;
	char cmd[4 * PATH_MAX];
	snprintf(cmd, sizeof cmd,
	         "cd %s && mkdir -p dir/sub && echo content > file && ln -s file link_file && "
	         "ln -s %s/dir abs_link && ln -s ../file dir/up && ln -s nowhere dangling && "
	         "ln -s loop2 loop1 && ln -s loop1 loop2 && ln -s sub dir/rel_dir",
	         dir, dir);
	return sh(cmd) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return sh(cmd) == 0 ? 0 : -1;
}

/* The probe's arguments: absolute and relative names through every kind
 * of symlink, "..", ".", trailing slashes, dangling links, loops; then
 * relative names again from another directory, reached through a symlink
 * (the preload library makes them absolute from the cwd at each call). */
static char **probe_argv(void)
{
	static const char *const after_cd[] = {
	    "@cd=abs_link", "sub", "up", "../file", "rel_dir/..", "nonexistent", "@cd=..", "file",
	};
	static const char *const rel[] = {
	    "file",
	    "file/",
	    "dir/.",
	    "dir/..",
	    "dir/sub/../../file",
	    "link_file",
	    "abs_link/sub",
	    "dir/up",
	    "dangling",
	    "loop1",
	    "nonexistent",
	    "nonexistent/x",
	    "file/x",
	    "abs_link/../file",
	    "dir/rel_dir/",
	    "dir/rel_dir/..",
	    "dir//sub///",
	    "link_file/",
	    "abs_link/.",
	    "dir/up/..",
	};
	size_t n = sizeof rel / sizeof rel[0];
	size_t ncd = sizeof after_cd / sizeof after_cd[0];
	char **argv = xcalloc(2 * n + ncd + 5, sizeof *argv);
	size_t k = 0;
	argv[k++] = xstrdup(probe);
	for (size_t i = 0; i < n; i++) {
		argv[k++] = xasprintf("%s/%s", dir, rel[i]);
		argv[k++] = xstrdup(rel[i]);
	}
	for (size_t i = 0; i < ncd; i++)
		argv[k++] = xstrdup(after_cd[i]);
	argv[k++] = xstrdup("/");
	argv[k++] = xstrdup("//");
	argv[k++] = xstrdup("");
	return argv;
}

static void free_argv(char **argv)
{
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}

static char *slurp(int fd)
{
	struct buf b;
	buf_init(&b);
	char chunk[4096];
	ssize_t n;
	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, chunk, sizeof chunk)) > 0)
		buf_add(&b, chunk, (size_t)n);
	return buf_detach(&b, NULL);
}

static char *run_plain(char **argv)
{
	int out = open(dir, O_TMPFILE | O_RDWR, 0600);
	assert_true(out >= 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(out, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	char *text = slurp(out);
	close(out);
	return text;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Traced, with the preload library (lib) or without it (""). The events
 * go to *events as sorted, de-duplicated lines without pids. */
static char *run_traced(char **argv, const char *lib, struct trace_result *r, char **events)
{
	int out = open(dir, O_TMPFILE | O_RDWR, 0600);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	assert_true(out >= 0 && devnull >= 0);
	struct trace_spec spec;
	memset(&spec, 0, sizeof spec);
	spec.file = argv[0];
	spec.argv = argv;
	spec.envp = environ;
	spec.stdin_fd = devnull;
	spec.stdout_fd = out;
	spec.stderr_fd = 2;
	spec.preload = lib;
	struct error e;
	if (trace_run(&spec, r, &e) < 0)
		fail_msg("trace_run: %s", e.msg);
	assert_true(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
	assert_null(r->uncacheable);
	char *text = slurp(out);
	close(out);
	close(devnull);
	/* Sorted, unique "kind flags err path" lines. */
	char **lines = xcalloc(r->nevents + 1, sizeof *lines);
	for (size_t i = 0; i < r->nevents; i++) {
		const struct trace_event *ev = &r->events[i];
		/* With the audit library the loader's cache is keyed by what
		 * it maps each soname to (ldcache:NAME facts), without it by
		 * the loader's read of the file: one line for either. */
		if (!strncmp(ev->path, "ldcache:", 8) || !strcmp(ev->path, "/etc/ld.so.cache"))
			lines[i] = xstrdup("the loader's cache");
		else
			lines[i] =
			    xasprintf("%d %u %d %s", (int)ev->kind, ev->flags, ev->err, ev->path);
	}
	qsort(lines, r->nevents, sizeof *lines, cmp_line);
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; i < r->nevents; i++) {
		if (i && !strcmp(lines[i], lines[i - 1]))
			continue;
		buf_addstr(&b, lines[i]);
		buf_addch(&b, '\n');
	}
	for (size_t i = 0; i < r->nevents; i++)
		free(lines[i]);
	free(lines);
	*events = buf_detach(&b, NULL);
	return text;
}

/* A step run without the library, then with it. */
struct slow_and_fast {
	struct trace_result slow, fast;
	char *slow_out, *fast_out;
	char *slow_events, *fast_events;
};

static void run_slow_and_fast(char **argv, struct slow_and_fast *r)
{
	r->slow_out = run_traced(argv, "", &r->slow, &r->slow_events);
	r->fast_out = run_traced(argv, CACHET_TEST_PRELOAD, &r->fast, &r->fast_events);
}

static void slow_and_fast_free(struct slow_and_fast *r)
{
	trace_result_free(&r->slow);
	trace_result_free(&r->fast);
	free(r->slow_out);
	free(r->fast_out);
	free(r->slow_events);
	free(r->fast_events);
}

static void realpath_and_lookups_answer_as_without_the_library(void **state)
{
	char **argv = probe_argv();
	char *plain = run_plain(argv);
	struct trace_result r;
	char *events;
	char *fast = run_traced(argv, CACHET_TEST_PRELOAD, &r, &events);
	assert_string_equal(fast, plain);
	assert_true(r.nrecords > 0);
	trace_result_free(&r);
	free(events);
	free(plain);
	free(fast);
	free_argv(argv);
}

static void the_tracer_records_the_same_events_and_spares_the_stops(void **state)
{
	char **argv = probe_argv();
	struct slow_and_fast r;
	run_slow_and_fast(argv, &r);
	assert_string_equal(r.slow_out, r.fast_out);
	assert_string_equal(r.fast_events, r.slow_events);
	int mapped = 0, read = 0;
	for (size_t i = 0; i < r.fast.nevents; i++) {
		mapped |= r.fast.events[i].kind == TRACE_FACT &&
		          !strcmp(r.fast.events[i].path, "ldcache:libc.so.6");
		read |= !strcmp(r.fast.events[i].path, "/etc/ld.so.cache");
	}
	assert_true(mapped && !read);
	assert_int_equal(r.slow.nrecords, 0);
	assert_true(r.fast.nrecords > 0);
	slow_and_fast_free(&r);
	free_argv(argv);
}

/* Relative names take the fast path as absolute ones do: a run of only
 * relative names stops no more than the same run of absolute names. */
static void relative_names_spare_their_stops_too(void **state)
{
	static const char *const names[] = {"file", "link_file", "dir/up", "nonexistent",
	                                    "dir/sub"};
	size_t n = sizeof names / sizeof names[0];
	char *rel[8], *abs[8];
	rel[0] = abs[0] = probe;
	for (size_t i = 0; i < n; i++) {
		rel[i + 1] = (char *)names[i];
		abs[i + 1] = xasprintf("%s/%s", dir, names[i]);
	}
	rel[n + 1] = abs[n + 1] = NULL;
	struct trace_result rr, ar, slow;
	char *re, *ae, *se;
	char *ro = run_traced(rel, CACHET_TEST_PRELOAD, &rr, &re);
	char *ao = run_traced(abs, CACHET_TEST_PRELOAD, &ar, &ae);
	char *so = run_traced(rel, "", &slow, &se);
	assert_string_equal(re, se); /* the same events as the stops record */
	assert_true(rr.nstops <= ar.nstops);
	assert_true(rr.nstops < slow.nstops);
	trace_result_free(&rr);
	trace_result_free(&ar);
	trace_result_free(&slow);
	free(ro);
	free(ao);
	free(so);
	free(re);
	free(ae);
	free(se);
	for (size_t i = 0; i < n; i++)
		free(abs[i + 1]);
}

/* The loader's search along LD_LIBRARY_PATH goes through the audit library
 * beside the preload library: the paths where no library is are skipped
 * without a stop, and still recorded, as the loader's failed opens were. */
static void the_loader_search_is_recorded_without_its_stops(void **state)
{
	static const char uses_src[] =
	    "#include <stdio.h>\n"
	    "int answer(void);\n"
	    "int main(void) { printf(\"%d\\n\", answer()); return 0; }\n";
	char *src = xasprintf("%s/uses.c", dir);
	FILE *f = fopen(src, "w");
	assert_non_null(f);
	fputs(uses_src, f);
	assert_int_equal(fclose(f), 0);
	free(src);
	char cmd[4 * PATH_MAX];
	snprintf(cmd, sizeof cmd,
	         "cd %s && mkdir -p l1 l2 l3 noaudit && "
	         "echo 'int answer(void) { return 42; }' > answer.c && "
	         "gcc -O1 -shared -fPIC -o l3/libanswer.so answer.c && "
	         "gcc -O1 -o uses uses.c -Ll3 -lanswer && cp %s noaudit/",
	         dir, CACHET_TEST_PRELOAD);
	assert_int_equal(sh(cmd), 0);
	char *path = xasprintf("%s/l1:%s/l2:%s/l3", dir, dir, dir);
	assert_int_equal(setenv("LD_LIBRARY_PATH", path, 1), 0);
	free(path);
	char *argv[] = {xasprintf("%s/uses", dir), NULL};
	char *alone = xasprintf("%s/noaudit/libcachet-preload.so", dir);
	struct trace_result with, without;
	char *we, *woe;
	char *wo = run_traced(argv, CACHET_TEST_PRELOAD, &with, &we);
	char *woo = run_traced(argv, alone, &without, &woe);
	assert_string_equal(wo, "42\n");
	assert_string_equal(woo, "42\n");
	/* Each directory before l3, under each capability subdirectory. */
	for (int d = 1; d <= 2; d++) {
		char *probe_line =
		    xasprintf("%d 0 2 %s/l%d/libanswer.so\n", (int)TRACE_PROBE, dir, d);
		if (!strstr(we, probe_line))
			fail_msg("with the audit library, no %s", probe_line);
		free(probe_line);
	}
	assert_true(with.nstops < without.nstops);
	unsetenv("LD_LIBRARY_PATH");
	trace_result_free(&with);
	trace_result_free(&without);
	free(wo);
	free(woo);
	free(we);
	free(woe);
	free(argv[0]);
	free(alone);
}

/* Whether events (run_traced's lines) hold a lookup of path that failed
 * with err, of whatever flags. */
static int has_failed_lookup(const char *events, int err, const char *path)
{
	char *tail = xasprintf(" %d %s\n", err, path);
	int found = 0;
	for (const char *l = events; *l && !found;) {
		const char *nl = strchr(l, '\n');
		const char *t = strstr(l, tail);
		found = t && t < nl && atoi(l) == (int)TRACE_PROBE;
		l = nl + 1;
	}
	free(tail);
	return found;
}

/* execvp's search of PATH, from a vfork child as gcc does it: the
 * directories where the program is not are looked up without a stop and
 * recorded as absent, and a candidate that cannot be run still gets libc's
 * answer (glibc goes on past EACCES). */
static void the_search_of_path_is_recorded_without_its_stops(void **state)
{
	static const char spawner_src[] =
	    "#include <errno.h>\n#include <stdio.h>\n#include <sys/wait.h>\n#include <unistd.h>\n"
	    "int main(int argc, char **argv) {\n"
	    "  pid_t pid = vfork();\n"
	    "  if (pid == 0) { execvp(argv[1], argv + 1); _exit(errno); }\n"
	    "  int st; waitpid(pid, &st, 0);\n"
	    "  printf(\"%d\\n\", WIFEXITED(st) ? WEXITSTATUS(st) : -1);\n"
	    "  return 0;\n"
	    "}\n";
	char cmd[4 * PATH_MAX];
	snprintf(cmd, sizeof cmd,
	         "cd %s && cat > spawner.c && gcc -O1 -o spawner spawner.c && mkdir -p p0 p1 p3 && "
	         "touch p2 && cp probe p3/target && echo 'not a program' > p0/target",
	         dir);
	FILE *f = popen(cmd, "w");
	assert_non_null(f);
	fputs(spawner_src, f);
	assert_int_equal(pclose(f), 0);
	char *saved_path = xstrdup(getenv("PATH"));
	char *spawner = xasprintf("%s/spawner", dir);
	char *argv[] = {spawner, "target", NULL};
	char *missing_argv[] = {spawner, "nosuch", NULL};
	struct trace_result near, far, slow, eacces, missing;
	char *ne, *fe, *se, *ee, *me;

	char *path = xasprintf("%s/p3", dir);
	assert_int_equal(setenv("PATH", path, 1), 0);
	char *near_out = run_traced(argv, CACHET_TEST_PRELOAD, &near, &ne);
	free(path);
	path = xasprintf("%s/p1:%s/p2:%s/p3", dir, dir, dir);
	assert_int_equal(setenv("PATH", path, 1), 0);
	char *far_out = run_traced(argv, CACHET_TEST_PRELOAD, &far, &fe);
	char *slow_out = run_traced(argv, "", &slow, &se);
	char *missing_out = run_traced(missing_argv, CACHET_TEST_PRELOAD, &missing, &me);
	free(path);
	path = xasprintf("%s/p0:%s/p1:%s/p3", dir, dir, dir);
	assert_int_equal(setenv("PATH", path, 1), 0);
	char *eacces_out = run_traced(argv, CACHET_TEST_PRELOAD, &eacces, &ee);
	free(path);
	assert_int_equal(setenv("PATH", saved_path, 1), 0);

	assert_string_equal(near_out, "0\n");
	assert_string_equal(far_out, "0\n");
	assert_string_equal(slow_out, "0\n");
	assert_string_equal(eacces_out, "0\n");
	assert_string_equal(missing_out, "2\n"); /* ENOENT, as libc's search ends */
	/* The absent candidates cost no stop at all. */
	assert_int_equal(far.nstops, near.nstops);
	char *p1 = xasprintf("%s/p1/target", dir), *p2 = xasprintf("%s/p2/target", dir);
	char *p3 = xasprintf("%s/p3/target", dir);
	char *exec_line = xasprintf("%d 0 0 %s\n", (int)TRACE_EXEC, p3);
	const char *const runs[] = {fe, se, ee};
	for (size_t i = 0; i < 3; i++) {
		int p2_in_path = runs[i] != ee;
		if (!has_failed_lookup(runs[i], ENOENT, p1) ||
		    (p2_in_path && !has_failed_lookup(runs[i], ENOTDIR, p2)))
			fail_msg("run %zu: the absent candidates are not recorded:\n%s", i,
			         runs[i]);
		if (!strstr(runs[i], exec_line))
			fail_msg("run %zu: no exec of %s", i, p3);
	}
	char *p0 = xasprintf("%s/p0/target", dir);
	if (!has_failed_lookup(ee, EACCES, p0))
		fail_msg("the candidate that cannot be run is not recorded:\n%s", ee);
	free(p0);
	char *gone = xasprintf("%s/p3/nosuch", dir);
	if (!has_failed_lookup(me, ENOENT, gone))
		fail_msg("a program found nowhere: %s not recorded as absent", gone);
	free(gone);
	free(p1);
	free(p2);
	free(p3);
	free(exec_line);
	trace_result_free(&near);
	trace_result_free(&far);
	trace_result_free(&slow);
	trace_result_free(&eacces);
	trace_result_free(&missing);
	free(near_out);
	free(far_out);
	free(slow_out);
	free(eacces_out);
	free(missing_out);
	free(ne);
	free(fe);
	free(se);
	free(ee);
	free(me);
	free(spawner);
	free(saved_path);
}

/* src compiled as dir/name (with extra gcc options): its path, malloc'd. */
static char *compile_here(const char *name, const char *src, const char *options)
{
	char path[PATH_MAX];
	assert_int_equal(compile_program(dir, name, src, options, path, sizeof path), 0);
	return xstrdup(path);
}

/* The trusted page lets through only what cannot change anything: an
 * open for writing from it still stops (and so is still seen). */
static void a_write_from_the_trusted_page_still_stops(void **state)
{
	static const char src[] =
	    "#include <fcntl.h>\n#include <unistd.h>\n"
	    "int main(int argc, char **argv) {\n"
	    "  long r; register long r10 __asm__(\"r10\") = 0644;\n"
	    "  /* wait until the library has mapped the page, then call through it */\n"
	    "  __asm__ volatile(\"call *%[p]\" : \"=a\"(r) : \"a\"(257L), \"D\"(-100L), "
	    "\"S\"(argv[1]),\n"
	    "      \"d\"((long)(O_WRONLY | O_CREAT | O_TRUNC)), \"r\"(r10), [p] "
	    "\"r\"(0x3afe00000000L)\n"
	    "      : \"rcx\", \"r11\", \"memory\");\n"
	    "  return r >= 0 ? 0 : 1;\n"
	    "}\n";
	char *argv[] = {compile_here("jumper", src, "-mno-red-zone"),
	                xasprintf("%s/written_by_jumper", dir), NULL};
	struct trace_result r;
	char *events;
	char *out = run_traced(argv, CACHET_TEST_PRELOAD, &r, &events);
	char *want = xasprintf("%d 0 0 %s\n", (int)TRACE_TOUCH, argv[1]);
	assert_non_null(strstr(events, want));
	free(want);
	free(out);
	free(events);
	trace_result_free(&r);
	free(argv[0]);
	free(argv[1]);
}

/* A lookup that the fast path has classified once is passed over when it
 * comes again, until the step changes something: then it is classified
 * again. Here the second test -e finds the file that the redirection in
 * between made, and that finding is recorded as without the library. */
static void a_lookup_repeated_after_a_change_is_recorded_again(void **state)
{
	char *made = xasprintf("%s/made_by_the_step", dir);
	unlink(made);
	/* The script removes what the first run made. */
	char *script = xasprintf("test -e %s; test -e %s; : > %s; test -e %s; rm %s", made, made,
	                         made, made, made);
	char *argv[] = {"/bin/sh", "-c", script, NULL};
	struct slow_and_fast r;
	run_slow_and_fast(argv, &r);
	assert_true(r.fast.nrecords > 0);
	assert_string_equal(r.fast_events, r.slow_events);
	char *absent = xasprintf("%d 0 %d %s\n", (int)TRACE_PROBE, ENOENT, made);
	char *found = xasprintf("%d 0 0 %s\n", (int)TRACE_PROBE, made);
	assert_non_null(strstr(r.fast_events, absent));
	assert_non_null(strstr(r.fast_events, found));
	free(absent);
	free(found);
	slow_and_fast_free(&r);
	free(script);
	unlink(made);
	free(made);
}

/* More lookups in a row than the ring has slots, with no stop between
 * them to drain it: the call that finds the ring full takes the ordinary
 * path, whose stop drains it, and the run goes on. Nothing is lost. */
static void a_burst_longer_than_the_ring_loses_nothing(void **state)
{
	static const char src[] =
	    "#include <stdio.h>\n#include <stdlib.h>\n#include <sys/stat.h>\n"
	    "int main(int argc, char **argv) {\n"
	    "  char p[256]; struct stat st; int found = 0, n = atoi(argv[2]);\n"
	    "  for (int i = 0; i < n; i++) {\n"
	    "    snprintf(p, sizeof p, \"%s/absent-%d\", argv[1], i);\n"
	    "    found += stat(p, &st) == 0;\n"
	    "  }\n"
	    "  printf(\"%d\\n\", found);\n"
	    "  return 0;\n"
	    "}\n";
	enum { LOOKUPS = 3000 };
	char count[16];
	snprintf(count, sizeof count, "%d", LOOKUPS);
	char *argv[] = {compile_here("burst", src, ""), dir, count, NULL};
	struct slow_and_fast r;
	run_slow_and_fast(argv, &r);
	assert_string_equal(r.slow_out, "0\n");
	assert_string_equal(r.fast_out, "0\n");
	assert_string_equal(r.fast_events, r.slow_events);
	size_t absent = 0;
	for (const char *p = r.fast_events; (p = strstr(p, "/absent-")); p++)
		absent++;
	assert_int_equal(absent, LOOKUPS);
	/* Most went through the ring, a few through the stops that drained it. */
	assert_true(r.fast.nrecords > LOOKUPS * 9 / 10);
	assert_true(r.fast.nstops + LOOKUPS / 2 < r.slow.nstops);
	slow_and_fast_free(&r);
	free(argv[0]);
}

/* Programs built against glibc before 2.33 stat through __xstat,
 * __lxstat and __fxstatat (nvcc's tools do): those take the fast path
 * too, with the answers and events of a run without the library. */
static void the_stat_functions_of_older_programs_spare_their_stops(void **state)
{
	static const char src[] =
	    "#include <stdio.h>\n#include <sys/stat.h>\n"
	    "int __xstat(int, const char *, struct stat *);\n"
	    "int __lxstat(int, const char *, struct stat *);\n"
	    "int __fxstatat(int, int, const char *, struct stat *, int);\n"
	    "int main(int argc, char **argv) {\n"
	    "  for (int i = 1; i < argc; i++) {\n"
	    "    struct stat a, b, c;\n"
	    "    int ra = __xstat(1, argv[i], &a), rb = __lxstat(1, argv[i], &b);\n"
	    "    int rc = __fxstatat(1, -100, argv[i], &c, 0x100);\n"
	    "    printf(\"%s %d %o %d %o %d %o\\n\", argv[i], ra, ra ? 0 : a.st_mode & S_IFMT, "
	    "rb,\n"
	    "           rb ? 0 : b.st_mode & S_IFMT, rc, rc ? 0 : c.st_mode & S_IFMT);\n"
	    "  }\n"
	    "  return 0;\n"
	    "}\n";
	static const char *const names[] = {"file",    "link_file",    "dangling", "nonexistent",
	                                    "dir/sub", "abs_link/sub", "loop1",    "file/x"};
	enum { N = sizeof names / sizeof names[0] };
	char *argv[N + 2];
	argv[0] = compile_here("old_stat", src, "");
	for (size_t i = 0; i < N; i++)
		argv[i + 1] = xasprintf("%s/%s", dir, names[i]);
	argv[N + 1] = NULL;
	struct slow_and_fast r;
	run_slow_and_fast(argv, &r);
	assert_string_equal(r.fast_out, r.slow_out);
	assert_string_equal(r.fast_events, r.slow_events);
	/* Three calls per name stop without the library; none with it (which
	 * costs a few stops of its own to load). */
	assert_true(r.fast.nrecords >= 2 * N);
	assert_true(r.fast.nstops + 2 * N < r.slow.nstops);
	slow_and_fast_free(&r);
	for (size_t i = 0; i <= N; i++)
		free(argv[i]);
}

/* Reads of resource limits are facts of the process (rlimit:N), reported
 * through the ring without a stop; a read of RLIMIT_NOFILE (not keyed) and
 * a call that only sets a limit stop with or without the library. */
static void limits_read_are_reported_without_their_stops(void **state)
{
	static const char src[] =
	    "#define _GNU_SOURCE\n#include <stdio.h>\n#include <stdlib.h>\n"
	    "#include <sys/resource.h>\n"
	    "int main(int argc, char **argv) {\n"
	    "  int reads = atoi(argv[1]), others = atoi(argv[2]);\n"
	    "  struct rlimit l; struct rlimit64 l64;\n"
	    "  for (int i = 0; i < reads; i++) {\n"
	    "    if (getrlimit(RLIMIT_STACK, &l) || getrlimit64(RLIMIT_AS, &l64) ||\n"
	    "        prlimit(0, RLIMIT_DATA, NULL, &l) || prlimit64(0, RLIMIT_CORE, NULL, &l64))\n"
	    "      return 1;\n"
	    "    printf(\"%llu\\n\", (unsigned long long)l.rlim_cur);\n"
	    "  }\n"
	    "  for (int i = 0; i < others; i++) {\n"
	    "    if (getrlimit(RLIMIT_NOFILE, &l) || setrlimit(RLIMIT_NOFILE, &l) ||\n"
	    "        prlimit(0, RLIMIT_CORE, NULL, NULL))\n"
	    "      return 1;\n"
	    "  }\n"
	    "  puts(\"done\"); /* stdout's first use stops (its fstat) in every run */\n"
	    "  return 0;\n"
	    "}\n";
	char *prog = compile_here("limits", src, "");
	char *none[] = {prog, "0", "0", NULL}, *reads[] = {prog, "3", "0", NULL},
	     *others[] = {prog, "0", "5", NULL};
	struct slow_and_fast base, read, other;
	run_slow_and_fast(none, &base);
	run_slow_and_fast(reads, &read);
	run_slow_and_fast(others, &other);
	assert_string_equal(read.fast_out, read.slow_out);
	assert_string_equal(read.fast_events, read.slow_events);
	const char *const facts[] = {"rlimit:3", "rlimit:9", "rlimit:2", "rlimit:4"};
	for (size_t i = 0; i < 4; i++) {
		int seen = 0;
		for (size_t k = 0; k < read.fast.nevents; k++)
			seen |= read.fast.events[k].kind == TRACE_FACT &&
			        !strcmp(read.fast.events[k].path, facts[i]);
		assert_true(seen);
	}
	/* Twelve reads: those of the stack limit never stop (it is keyed at
	 * each exec), the other nine stop without the library, none with it. */
	assert_true(read.slow.nstops >= base.slow.nstops + 9);
	assert_int_equal(read.fast.nstops, base.fast.nstops);
	assert_true(read.fast.nrecords >= base.fast.nrecords + 12);
	/* Fifteen calls that key nothing: no stop either way. */
	assert_int_equal(other.slow.nstops, base.slow.nstops);
	assert_int_equal(other.fast.nstops, base.fast.nstops);
	assert_string_equal(other.fast_events, base.fast_events);
	slow_and_fast_free(&base);
	slow_and_fast_free(&read);
	slow_and_fast_free(&other);
	free(prog);
}

/* The pid of the first event of path in r, or -1. */
static pid_t pid_of_event(const struct trace_result *r, const char *path)
{
	for (size_t i = 0; i < r->nevents; i++)
		if (!strcmp(r->events[i].path, path))
			return r->events[i].pid;
	return -1;
}

/* The library keeps each thread's id from its first record on: a forked
 * child's records name the child, not the parent whose copy it inherited,
 * and the parent's still name the parent. */
static void records_name_the_process_that_made_them_after_a_fork(void **state)
{
	static const char src[] =
	    "#include <stdio.h>\n#include <sys/stat.h>\n#include <sys/wait.h>\n"
	    "#include <unistd.h>\n"
	    "int main(int argc, char **argv) {\n"
	    "  struct stat st; int status; stat(\"/\", &st);\n"
	    "  pid_t c = fork();\n"
	    "  if (c == 0) { stat(argv[1], &st); printf(\"%d\\n\", (int)getpid()); return 0; }\n"
	    "  waitpid(c, &status, 0); stat(argv[2], &st);\n"
	    "  printf(\"%d\\n\", (int)getpid());\n"
	    "  return 0;\n"
	    "}\n";
	char *argv[] = {compile_here("forker", src, ""), xasprintf("%s/seen-by-child", dir),
	                xasprintf("%s/seen-by-parent", dir), NULL};
	struct trace_result r;
	char *events;
	char *out = run_traced(argv, CACHET_TEST_PRELOAD, &r, &events);
	int child = 0, parent = 0;
	assert_int_equal(sscanf(out, "%d\n%d", &child, &parent), 2);
	assert_true(r.nrecords > 0);
	assert_int_equal(pid_of_event(&r, argv[1]), child);
	assert_int_equal(pid_of_event(&r, argv[2]), parent);
	free(out);
	free(events);
	trace_result_free(&r);
	for (int i = 0; i < 3; i++)
		free(argv[i]);
}

/* A vfork child shares its parent's memory, the library's copy of the
 * thread's id with it: the id execvp's search takes in the child is not
 * left for the parent, whose later records name the parent. */
static void a_vfork_child_leaves_its_parent_its_own_id(void **state)
{
	static const char src[] =
	    "#include <stdio.h>\n#include <stdlib.h>\n#include <sys/stat.h>\n"
	    "#include <sys/wait.h>\n#include <unistd.h>\n"
	    "int main(int argc, char **argv) {\n"
	    "  struct stat st; int status; setenv(\"PATH\", argv[1], 1);\n"
	    "  pid_t c = vfork();\n"
	    "  if (c == 0) { char *a[] = {\"true\", NULL}; execvp(\"true\", a); _exit(127); }\n"
	    "  waitpid(c, &status, 0); stat(argv[2], &st);\n"
	    "  printf(\"%d\\n\", (int)getpid());\n"
	    "  return WEXITSTATUS(status);\n"
	    "}\n";
	char *argv[] = {compile_here("vforker", src, ""),
	                xasprintf("%s/nowhere:/usr/bin:/bin", dir),
	                xasprintf("%s/seen-after-vfork", dir), NULL};
	struct trace_result r;
	char *events;
	char *out = run_traced(argv, CACHET_TEST_PRELOAD, &r, &events);
	int parent = 0;
	assert_int_equal(sscanf(out, "%d", &parent), 1);
	char *searched = xasprintf("%s/nowhere/true", dir);
	assert_true(pid_of_event(&r, searched) > 0); /* the search went through the ring */
	assert_int_equal(pid_of_event(&r, argv[2]), parent);
	free(searched);
	free(out);
	free(events);
	trace_result_free(&r);
	for (int i = 0; i < 3; i++)
		free(argv[i]);
}

/* Each program of the step attaches the ring by the id of its System V
 * segment (no open of /proc/PID/fd/N, which would stop in every process),
 * and its records arrive as from a file. */
static void the_ring_is_attached_by_its_segment_id(void **state)
{
	(void)state;
	assert_int_equal(rc_shm_id("shm:0"), 0);
	assert_int_equal(rc_shm_id("shm:123456"), 123456);
	assert_int_equal(rc_shm_id("shm:"), -1);
	assert_int_equal(rc_shm_id("shm:12x"), -1);
	assert_int_equal(rc_shm_id("shm:99999999999"), -1);
	assert_int_equal(rc_shm_id("/proc/1/fd/3"), -1);
	static const char src[] =
	    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
	    "#include <sys/stat.h>\n"
	    "int main(void) {\n"
	    "  const char *w = getenv(\"" RING_ENV "\"); struct stat st;\n"
	    "  printf(\"%.4s\\n\", w && strlen(w) > 17 ? w + 17 : \"none\");\n"
	    "  return stat(\"/\", &st) != 0;\n"
	    "}\n";
	char *prog = compile_here("ring_where", src, "");
	char *argv[] = {prog, NULL};
	struct slow_and_fast r;
	run_slow_and_fast(argv, &r);
	if (strcmp(r.fast_out, RING_SHM_PREFIX "\n") != 0) {
		slow_and_fast_free(&r);
		free(prog);
		skip(); /* no System V segment here: the memfd, by its path */
	}
	assert_true(r.fast.nrecords > 0);
	assert_string_equal(r.fast_events, r.slow_events);
	slow_and_fast_free(&r);
	free(prog);
}

/* A System V segment made as the tracer makes a ring (removed once the
 * last mapping goes), marked with nonce; its id in *id. Skips where the
 * system has none. */
static struct ring *shm_ring(uint64_t nonce, int *id)
{
	*id = shmget(IPC_PRIVATE, RING_BYTES, IPC_CREAT | 0600);
	if (*id < 0)
		skip(); /* no System V segment here */
	struct ring *r = shmat(*id, NULL, 0);
	shmctl(*id, IPC_RMID, NULL);
	assert_true(r != (void *)-1);
	r->slots = RING_SLOTS;
	r->nonce = nonce;
	r->magic = RING_MAGIC;
	return r;
}

/* A ring reached by the right id but of another number (another tracer's,
 * from another IPC namespace) is refused: the program takes the ordinary
 * path rather than report its calls to a tracer that does not trace it. */
static void a_ring_of_another_number_is_refused(void **state)
{
	(void)state;
	uint64_t nonce = 0;
	assert_null(rc_ring_nonce("shm:1", &nonce));
	assert_null(rc_ring_nonce("0123456789abcdef", &nonce));
	assert_null(rc_ring_nonce("0123456789abcdeF:shm:1", &nonce));
	const char *where = rc_ring_nonce("0123456789abcdef:shm:1", &nonce);
	assert_non_null(where);
	assert_string_equal(where, "shm:1");
	assert_true(nonce == 0x0123456789abcdefull);

	int id;
	struct ring *r = shm_ring(0x0123456789abcdefull, &id);
	char value[64];
	snprintf(value, sizeof value, "0123456789abcdee:shm:%d", id);
	assert_null(rc_map_ring(value));
	snprintf(value, sizeof value, "0123456789abcdef:shm:%d", id);
	struct ring *same = rc_map_ring(value);
	assert_non_null(same);
	assert_true(same->nonce == r->nonce);
	shmdt(same);
	shmdt(r);
}

/* realpath of one name many times, a prefix of it turned into a link by
 * the process itself, then back by another process of the step: each
 * answer as without the library, and the prefixes read once each between
 * changes, not once per call. */
static const char relink_src[] =
    "#define _GNU_SOURCE\n"
    "#include <limits.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n"
    "int main(int argc, char **argv) {\n"
    "  char name[PATH_MAX], got[PATH_MAX], a[PATH_MAX], a2[PATH_MAX], cmd[3 * PATH_MAX];\n"
    "  snprintf(name, sizeof name, \"%s/rp/a/b/file\", argv[1]);\n"
    "  snprintf(a, sizeof a, \"%s/rp/a\", argv[1]);\n"
    "  snprintf(a2, sizeof a2, \"%s/rp/a2\", argv[1]);\n"
    "  for (int i = 0; i < atoi(argv[2]); i++) if (!realpath(name, got)) return 1;\n"
    "  printf(\"%s\\n\", got);\n"
    "  if (rename(a, a2) || symlink(\"a2\", a)) return 2;\n"
    "  printf(\"%s\\n\", realpath(name, got) ? got : \"NULL\");\n"
    "  snprintf(cmd, sizeof cmd, \"rm %s && mv %s %s\", a, a2, a);\n"
    "  if (system(cmd)) return 3;\n"
    "  printf(\"%s\\n\", realpath(name, got) ? got : \"NULL\");\n"
    "  return 0;\n"
    "}\n";

static void a_prefix_found_no_link_is_read_again_only_after_a_change(void **state)
{
	char prog[PATH_MAX];
	assert_int_equal(compile_program(dir, "relink", relink_src, "", prog, sizeof prog), 0);
	char *setup =
	    xasprintf("rm -rf %s/rp && mkdir -p %s/rp/a/b && : > %s/rp/a/b/file", dir, dir, dir);
	assert_int_equal(sh(setup), 0);
	char *argv[] = {prog, dir, "100", NULL};
	char *plain = run_plain(argv);
	struct trace_result r, once;
	char *events, *once_events;
	char *fast = run_traced(argv, CACHET_TEST_PRELOAD, &r, &events);
	assert_string_equal(fast, plain);
	char *through = xasprintf("%s/rp/a2/b/file\n", dir);
	assert_non_null(strstr(fast, through));
	/* The same with one call before the change: the 99 more read no
	 * prefix again (without the memory of them, each would read them all). */
	assert_int_equal(sh(setup), 0);
	argv[2] = "1";
	free(run_traced(argv, CACHET_TEST_PRELOAD, &once, &once_events));
	assert_string_equal(once_events, events);
	assert_true(r.nring < once.nring + 4);
	trace_result_free(&once);
	free(once_events);
	trace_result_free(&r);
	free(events);
	free(plain);
	free(fast);
	free(through);
	assert_int_equal(sh(setup), 0);
	free(setup);
}

/* The audit library takes the ring's name from the environment the loader
 * hands its constructor, not from /proc/self/environ (an open, a read and a
 * close in every program of a step): a name set after this process started,
 * which /proc does not show, is found, and with it the ring. */
static void the_audit_library_reads_the_environment_the_loader_gives_it(void **state)
{
	(void)state;
	int id;
	struct ring *r = shm_ring(0x00000000c0ffee11ull, &id);
	char value[64];
	snprintf(value, sizeof value, "00000000c0ffee11:shm:%d", id);
	assert_int_equal(setenv(RING_ENV, value, 1), 0);
	char *lib = xstrdup(CACHET_TEST_PRELOAD);
	*strrchr(lib, '/') = '\0';
	char *audit = xasprintf("%s/libcachet-audit.so", lib);
	void *h = dlopen(audit, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	unsigned (*la_version)(unsigned) = (unsigned (*)(unsigned))dlsym(h, "la_version");
	assert_non_null(la_version);
	assert_int_equal(la_version(LAV_CURRENT), LAV_CURRENT);
	unsetenv(RING_ENV);
	/* The trusted page it mapped, with the ring noted on it. */
	struct ring *noted = NULL;
	assert_int_equal(rc_map_page(&noted), 0);
	assert_true(noted != NULL && noted->nonce == r->nonce);
	shmdt(noted);
	munmap((void *)RING_SAFE_PAGE, RING_SAFE_PAGE_SIZE);
	shmdt(r);
	dlclose(h);
	free(audit);
	free(lib);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(realpath_and_lookups_answer_as_without_the_library),
	    cmocka_unit_test(the_tracer_records_the_same_events_and_spares_the_stops),
	    cmocka_unit_test(relative_names_spare_their_stops_too),
	    cmocka_unit_test(the_loader_search_is_recorded_without_its_stops),
	    cmocka_unit_test(the_search_of_path_is_recorded_without_its_stops),
	    cmocka_unit_test(a_write_from_the_trusted_page_still_stops),
	    cmocka_unit_test(a_lookup_repeated_after_a_change_is_recorded_again),
	    cmocka_unit_test(a_burst_longer_than_the_ring_loses_nothing),
	    cmocka_unit_test(the_stat_functions_of_older_programs_spare_their_stops),
	    cmocka_unit_test(limits_read_are_reported_without_their_stops),
	    cmocka_unit_test(records_name_the_process_that_made_them_after_a_fork),
	    cmocka_unit_test(a_vfork_child_leaves_its_parent_its_own_id),
	    cmocka_unit_test(the_ring_is_attached_by_its_segment_id),
	    cmocka_unit_test(a_ring_of_another_number_is_refused),
	    cmocka_unit_test(a_prefix_found_no_link_is_read_again_only_after_a_change),
	    cmocka_unit_test(the_audit_library_reads_the_environment_the_loader_gives_it),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
