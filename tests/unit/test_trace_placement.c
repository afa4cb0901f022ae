/*
 * Where the step runs (src/trace/placement.h): held on the tracer's CPU
 * while it is serial, and never reading a mask that is not its own; let go
 * when a program asks for its CPUs (with what it starts after) and when
 * two of its programs run side by side. Needs two CPUs or more; with one,
 * nothing is held and the tests only check that the step sees its mask.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cachet/trace.h"
#include "test_compile.h"

extern char **environ;

static char dir[PATH_MAX];
static char probe[PATH_MAX];
static int ncpus; /* the test's own affinity */

/* "mask": the CPU count sched_getaffinity returns; "status": the CPU count
 * of Cpus_allowed_list in /proc/self/status (no syscall the tracer sees);
 * "spin MS": burns MS ms of CPU first; "pin": sets its mask to its first
 * CPU, then prints what sched_getaffinity returns; "fork": the rest of the
 * arguments in a child, waited for. */
static const char probe_src[] =
    "#define _GNU_SOURCE\n"
    "#include <sched.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
    "#include <sys/wait.h>\n#include <time.h>\n#include <unistd.h>\n"
    "static int status_count(void) {\n"
    "  FILE *f = fopen(\"/proc/self/status\", \"r\"); char l[256]; int n = 0;\n"
    "  while (f && fgets(l, sizeof l, f)) if (!strncmp(l, \"Cpus_allowed_list:\", 18)) {\n"
    "    for (char *p = l + 18; *p;) { while (*p == ' ' || *p == '\\t' || *p == ',') p++;\n"
    "      if (!*p || *p == '\\n') break; int a = (int)strtol(p, &p, 10), b = a;\n"
    "      if (*p == '-') b = (int)strtol(p + 1, &p, 10); n += b - a + 1; } }\n"
    "  if (f) fclose(f); return n; }\n"
    "int main(int argc, char **argv) {\n"
    "  for (int i = 1; i < argc; i++) {\n"
    "    cpu_set_t s; CPU_ZERO(&s);\n"
    "    if (!strcmp(argv[i], \"mask\")) { sched_getaffinity(0, sizeof s, &s); printf(\"mask "
    "%d\\n\", CPU_COUNT(&s)); }\n"
    "    else if (!strcmp(argv[i], \"status\")) printf(\"status %d\\n\", status_count());\n"
    "    else if (!strcmp(argv[i], \"spin\")) { struct timespec a, b; "
    "clock_gettime(CLOCK_MONOTONIC, &a);\n"
    "      long ms = atol(argv[++i]); volatile unsigned long x = 0;\n"
    "      do { for (int k = 0; k < 100000; k++) x++; clock_gettime(CLOCK_MONOTONIC, &b); }\n"
    "      while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms); }\n"
    "    else if (!strcmp(argv[i], \"pin\")) { sched_getaffinity(0, sizeof s, &s); int c = 0;\n"
    "      while (!CPU_ISSET(c, &s)) c++; CPU_ZERO(&s); CPU_SET(c, &s); sched_setaffinity(0, "
    "sizeof s, &s);\n"
    "      CPU_ZERO(&s); sched_getaffinity(0, sizeof s, &s); printf(\"pinned %d %d\\n\", "
    "CPU_COUNT(&s), CPU_ISSET(c, &s)); }\n"
    "    else if (!strcmp(argv[i], \"fork\")) { fflush(stdout); pid_t p = fork();\n"
    "      if (p == 0) { argv[i] = argv[0]; execv(argv[0], argv + i); _exit(127); }\n"
    "      int st; waitpid(p, &st, 0); return 0; }\n"
    "  }\n"
    "  return 0;\n"
    "}\n";

static int group_setup(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/cachet-placement-XXXXXX";
	if (!mkdtemp(tmpl) || !realpath(tmpl, dir))
		return -1;
	if (compile_program(dir, "probe", probe_src, "", probe, sizeof probe) < 0)
		return -1;
	cpu_set_t s;
	if (sched_getaffinity(0, sizeof s, &s) < 0)
		return -1;
	ncpus = CPU_COUNT(&s);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The step's stdout. */
static char *traced(char *const argv[])
{
	int out = open(dir, O_TMPFILE | O_RDWR, 0600);
	assert_true(out >= 0);
	struct trace_spec spec;
	memset(&spec, 0, sizeof spec);
	spec.file = argv[0];
	spec.argv = argv;
	spec.envp = environ;
	spec.stdin_fd = -1;
	spec.stdout_fd = out;
	spec.stderr_fd = 2;
	struct trace_result r;
	struct error e;
	if (trace_run(&spec, &r, &e) < 0)
		fail_msg("trace_run: %s", e.msg);
	assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
	trace_result_free(&r);
	struct buf b;
	buf_init(&b);
	char chunk[512];
	ssize_t n;
	lseek(out, 0, SEEK_SET);
	while ((n = read(out, chunk, sizeof chunk)) > 0)
		buf_add(&b, chunk, (size_t)n);
	close(out);
	return buf_detach(&b, NULL);
}

/* A serial step runs on the tracer's CPU (visible in /proc only), and the
 * mask it asks for is its own; what it starts after asking is let go. */
static void a_serial_step_is_held_and_reads_its_own_mask(void **state)
{
	(void)state;
	char *argv[] = {probe, "status", "mask", "status", "fork", "status", NULL};
	char *out = traced(argv);
	char want[64];
	snprintf(want, sizeof want, "status %d\nmask %d\nstatus %d\nstatus %d\n",
	         ncpus > 1 ? 1 : ncpus, ncpus, ncpus, ncpus);
	assert_string_equal(out, want);
	free(out);
}

/* A step that sets its own mask keeps it: the tracer lets go before. */
static void a_mask_the_step_sets_is_its_own(void **state)
{
	(void)state;
	char *argv[] = {probe, "pin", "status", NULL};
	char *out = traced(argv);
	assert_string_equal(out, "pinned 1 1\nstatus 1\n");
	free(out);
}

/* Two programs burning CPU side by side, neither asking for its mask: the
 * step is let go once they wait for the one CPU, long before they end. */
static void parallel_programs_are_let_go(void **state)
{
	(void)state;
	if (ncpus < 2)
		skip();
	char *script = xasprintf("%s spin 400 status & %s spin 400 status & wait", probe, probe);
	char *argv[] = {"/bin/sh", "-c", script, NULL};
	char *out = traced(argv);
	char want[32];
	snprintf(want, sizeof want, "status %d\n", ncpus);
	const char *second = strstr(out, want);
	if (!second || !strstr(second + 1, want))
		fail_msg("both should see %d CPUs after spinning:\n%s", ncpus, out);
	free(out);
	free(script);
}

/* The same after a long serial start, through which the checks grow
 * rarer: the programs it starts then are checked soon again. */
static void parallel_programs_after_a_long_serial_start_are_let_go(void **state)
{
	(void)state;
	if (ncpus < 2)
		skip();
	char *script =
	    xasprintf("%s spin 700 && { %s spin 400 status & %s spin 400 status & wait; }", probe,
	              probe, probe);
	char *argv[] = {"/bin/sh", "-c", script, NULL};
	char *out = traced(argv);
	char want[32];
	snprintf(want, sizeof want, "status %d\n", ncpus);
	const char *second = strstr(out, want);
	if (!second || !strstr(second + 1, want))
		fail_msg("both should see %d CPUs after spinning:\n%s", ncpus, out);
	free(out);
	free(script);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(a_serial_step_is_held_and_reads_its_own_mask),
	    cmocka_unit_test(a_mask_the_step_sets_is_its_own),
	    cmocka_unit_test(parallel_programs_are_let_go),
	    cmocka_unit_test(parallel_programs_after_a_long_serial_start_are_let_go),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
