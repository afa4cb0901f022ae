/*
 * glibc's fstat goes through the filter without a stop (trace/empty_name.h),
 * and nothing else that names a path with AT_EMPTY_PATH does: a name
 * relative to a descriptor stops and is recorded, and so does "" passed
 * from any other code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cachet/trace.h"
#include "test_compile.h"
#include "trace/empty_name.h"

extern char **environ;

static char dir[PATH_MAX];
static char prog[PATH_MAX];

/* argv[1]: how many fstat() calls; argv[2]: how many raw newfstatat(fd,
 * "", AT_EMPTY_PATH) from this program's own code; argv[3], when given: a
 * name looked up with fstatat(dirfd, name, AT_EMPTY_PATH) in the
 * directory argv[4]. */
static const char prog_src[] =
    "#define _GNU_SOURCE\n"
    "#include <fcntl.h>\n#include <stdlib.h>\n#include <sys/stat.h>\n"
    "#include <sys/syscall.h>\n#include <unistd.h>\n"
    "int main(int argc, char **argv) {\n"
    "  struct stat st; int fd = 0;\n"
    "  for (int i = atoi(argv[1]); i > 0; i--) if (fstat(fd, &st)) return 1;\n"
    "  for (int i = atoi(argv[2]); i > 0; i--)\n"
    "    if (syscall(SYS_newfstatat, fd, \"\", &st, AT_EMPTY_PATH)) return 2;\n"
    "  if (argc > 4) {\n"
    "    int d = open(argv[4], O_RDONLY | O_DIRECTORY);\n"
    "    if (d < 0) return 3;\n"
    "    fstatat(d, argv[3], &st, AT_EMPTY_PATH);\n"
    "  }\n"
    "  return 0;\n"
    "}\n";

static int group_setup(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/cachet-empty-name-XXXXXX";
	if (!mkdtemp(tmpl) || !realpath(tmpl, dir))
		return -1;
	return compile_program(dir, "prog", prog_src, "", prog, sizeof prog);
}

static int group_teardown(void **state)
{
	(void)state;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* prog traced without the preload library (its fstat would take the NULL
 * path): the stops the C library's own calls make. */
static void run(const char *nfstat, const char *nraw, const char *name, struct trace_result *r)
{
	char *argv[] = {prog, (char *)nfstat, (char *)nraw, (char *)name, name ? dir : NULL, NULL};
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	assert_true(devnull >= 0);
	struct trace_spec spec;
	memset(&spec, 0, sizeof spec);
	spec.file = prog;
	spec.argv = argv;
	spec.envp = environ;
	spec.stdin_fd = devnull;
	spec.stdout_fd = devnull;
	spec.stderr_fd = 2;
	spec.preload = "";
	struct error e;
	if (trace_run(&spec, r, &e) < 0)
		fail_msg("trace_run: %s", e.msg);
	close(devnull);
	assert_true(WIFEXITED(r->status));
	assert_int_equal(WEXITSTATUS(r->status), 0);
}

static void libc_fstat_does_not_stop(void **state)
{
	(void)state;
	struct empty_name_site sites[EMPTY_NAME_MAX_SITES];
	if (empty_name_sites(sites, EMPTY_NAME_MAX_SITES) == 0)
		skip(); /* not glibc as this finder knows it: every call stops */
	struct trace_result none, many;
	run("0", "0", NULL, &none);
	run("50", "0", NULL, &many);
	assert_int_equal(many.nstops, none.nstops);
	trace_result_free(&none);
	trace_result_free(&many);
}

static void empty_name_from_other_code_stops(void **state)
{
	(void)state;
	struct trace_result none, raw;
	run("0", "0", NULL, &none);
	run("0", "20", NULL, &raw);
	assert_int_equal(raw.nstops, none.nstops + 20);
	trace_result_free(&none);
	trace_result_free(&raw);
}

static void name_with_at_empty_path_is_recorded(void **state)
{
	(void)state;
	struct trace_result r;
	run("0", "0", "looked_up", &r);
	char want[PATH_MAX + 16];
	snprintf(want, sizeof want, "%s/looked_up", dir);
	int seen = 0;
	for (size_t i = 0; i < r.nevents; i++)
		seen |= strcmp(r.events[i].path, want) == 0;
	assert_true(seen);
	trace_result_free(&r);
}

/* ---- the finder on made-up code ------------------------------------- */

/* text: fstat's caller, then the wrapper; rodata after it, where the lea
 * points. */
struct fake {
	unsigned char mem[256];
	int read_only;
};

static int fake_read_only_nul(uintptr_t addr, void *ctx)
{
	struct fake *f = ctx;
	return f->read_only && addr >= (uintptr_t)f->mem + 128 && addr < (uintptr_t)f->mem + 256 &&
	       *(const unsigned char *)addr == 0;
}

/* Lays out: at 16 the caller (mov ecx; lea rsi -> mem+200; jmp 64), at 64
 * the wrapper. */
static void fake_code(struct fake *f, unsigned char literal)
{
	memset(f->mem, 0x90, sizeof f->mem);
	static const unsigned char caller[] = {0xb9, 0x00, 0x10, 0x00, 0x00, 0x48, 0x8d, 0x35};
	static const unsigned char wrapper[] = {0x41, 0x89, 0xca, 0xb8, 0x06,
	                                        0x01, 0x00, 0x00, 0x0f, 0x05};
	memcpy(f->mem + 16, caller, sizeof caller);
	int32_t disp = 200 - (16 + 12);
	memcpy(f->mem + 24, &disp, 4);
	f->mem[28] = 0xe9;
	int32_t rel = 64 - (16 + 17);
	memcpy(f->mem + 29, &rel, 4);
	memcpy(f->mem + 64, wrapper, sizeof wrapper);
	f->mem[200] = literal;
	f->read_only = 1;
}

static int find_in(struct fake *f, uintptr_t wrapper, struct empty_name_site *s)
{
	return empty_name_site_in(f->mem, 128, (uintptr_t)f->mem, wrapper, fake_read_only_nul, f,
	                          s);
}

static void finder_takes_the_distance_from_the_syscall_to_the_literal(void **state)
{
	(void)state;
	struct fake f;
	fake_code(&f, 0);
	struct empty_name_site s;
	assert_int_equal(find_in(&f, 0, &s), 1);
	uintptr_t site = (uintptr_t)f.mem + 74;
	assert_int_equal(s.ip_page_offset, site & 0xfff);
	assert_int_equal(s.distance, 200 - 74);
	assert_int_equal(find_in(&f, (uintptr_t)f.mem + 64, &s), 1);
	assert_int_equal(s.distance, 200 - 74);
	/* Another copy of the wrapper after it: the one fstat jumps to. */
	memcpy(f.mem + 96, f.mem + 64, 10);
	assert_int_equal(find_in(&f, 0, &s), 1);
	assert_int_equal(s.distance, 200 - 74);
}

static void finder_refuses_what_is_not_an_empty_read_only_name(void **state)
{
	(void)state;
	struct fake f;
	struct empty_name_site s;
	fake_code(&f, 'x'); /* a name, not "" */
	assert_int_equal(find_in(&f, 0, &s), 0);
	fake_code(&f, 0);
	f.read_only = 0; /* writable: could hold anything by the time of the call */
	assert_int_equal(find_in(&f, 0, &s), 0);
	fake_code(&f, 0);
	f.mem[30] ^= 1; /* the jmp leads elsewhere */
	assert_int_equal(find_in(&f, 0, &s), 0);
	fake_code(&f, 0);
	assert_int_equal(find_in(&f, (uintptr_t)f.mem + 60, &s), 0); /* not the wrapper */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(libc_fstat_does_not_stop),
	    cmocka_unit_test(empty_name_from_other_code_stops),
	    cmocka_unit_test(name_with_at_empty_path_is_recorded),
	    cmocka_unit_test(finder_takes_the_distance_from_the_syscall_to_the_literal),
	    cmocka_unit_test(finder_refuses_what_is_not_an_empty_read_only_name),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
