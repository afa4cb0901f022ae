/*
 * The variations the tracer applies for `cachet repro`: directory entries
 * reordered within one getdents buffer (with d_off kept consistent), and a
 * child whose umask, personality and CPUs differ from the tracer's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cachet/trace.h"
#include "trace/dirorder.h"

/* A linux_dirent64 buffer as the kernel fills it: names[i] with d_off i+1. */
static size_t build(unsigned char *buf, size_t cap, const char *const *names, size_t n)
{
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(names[i]);
		uint16_t reclen = (uint16_t)((19 + len + 1 + 7) & ~(size_t)7);
		assert_true(at + reclen <= cap);
		memset(buf + at, 0, reclen);
		uint64_t ino = 100 + i, off = (uint64_t)(i + 1) * 1000;
		memcpy(buf + at, &ino, 8);
		memcpy(buf + at + 8, &off, 8);
		memcpy(buf + at + 16, &reclen, 2);
		buf[at + 18] = DT_REG;
		memcpy(buf + at + 19, names[i], len + 1);
		at += reclen;
	}
	return at;
}

/* The names in buffer order, and every d_off. */
static size_t parse(const unsigned char *buf, size_t len, const char **names, uint64_t *offs)
{
	size_t n = 0;
	for (size_t at = 0; at < len; n++) {
		uint16_t reclen;
		memcpy(&reclen, buf + at + 16, 2);
		memcpy(&offs[n], buf + at + 8, 8);
		names[n] = (const char *)buf + at + 19;
		at += reclen;
	}
	return n;
}

static const char *const six[] = {".", "..", "a", "bb", "a-much-longer-name", "z"};

static void reverse_puts_the_last_entry_first_and_keeps_the_final_offset(void **state)
{
	unsigned char buf[512];
	size_t len = build(buf, sizeof buf, six, 6);
	assert_int_equal(dirents_reorder(buf, len, TRACE_DIRORDER_REVERSE, 0), 6);
	const char *names[8];
	uint64_t offs[8];
	assert_int_equal(parse(buf, len, names, offs), 6);
	for (size_t i = 0; i < 6; i++) {
		assert_string_equal(names[i], six[5 - i]);
		/* Where the next getdents continues: never an entry twice. */
		assert_int_equal(offs[i], 6000);
	}
}

static void shuffle_is_a_permutation_fixed_by_its_seed_and_never_the_identity(void **state)
{
	unsigned char a[512], b[512], c[512];
	size_t len = build(a, sizeof a, six, 6);
	build(b, sizeof b, six, 6);
	build(c, sizeof c, six, 6);
	assert_int_equal(dirents_reorder(a, len, TRACE_DIRORDER_SHUFFLE, 7), 6);
	assert_int_equal(dirents_reorder(b, len, TRACE_DIRORDER_SHUFFLE, 7), 6);
	assert_memory_equal(a, b, len);
	const char *names[8];
	uint64_t offs[8];
	parse(a, len, names, offs);
	int seen[6] = {0}, identity = 1;
	for (size_t i = 0; i < 6; i++) {
		for (size_t j = 0; j < 6; j++)
			if (!strcmp(names[i], six[j]))
				seen[j]++;
		identity &= !strcmp(names[i], six[i]);
	}
	for (size_t j = 0; j < 6; j++)
		assert_int_equal(seen[j], 1);
	assert_false(identity);
	/* Two entries: the only other order. */
	size_t len2 = build(c, sizeof c, six, 2);
	for (uint64_t seed = 0; seed < 16; seed++) {
		unsigned char d[64];
		memcpy(d, c, len2);
		dirents_reorder(d, len2, TRACE_DIRORDER_SHUFFLE, seed);
		parse(d, len2, names, offs);
		assert_string_equal(names[0], "..");
	}
}

static void a_buffer_that_does_not_parse_is_left_alone(void **state)
{
	unsigned char buf[512], copy[512];
	size_t len = build(buf, sizeof buf, six, 6);
	uint16_t bad = 4000;
	memcpy(buf + 16, &bad, 2); /* reclen beyond the buffer */
	memcpy(copy, buf, len);
	assert_int_equal(dirents_reorder(buf, len, TRACE_DIRORDER_REVERSE, 0), -1);
	assert_memory_equal(buf, copy, len);
	/* A truncated record. */
	len = build(buf, sizeof buf, six, 3);
	memcpy(copy, buf, len);
	assert_int_equal(dirents_reorder(buf, len - 3, TRACE_DIRORDER_REVERSE, 0), -1);
	assert_memory_equal(buf, copy, len);
	/* One entry: nothing to reorder. */
	len = build(buf, sizeof buf, six, 1);
	assert_int_equal(dirents_reorder(buf, len, TRACE_DIRORDER_REVERSE, 0), 1);
}

/* Runs argv traced with the variations in v; returns its stdout. */
static char *traced_output(const struct trace_spec *v, char *const *argv)
{
	char path[] = "/tmp/cachet-test-variations-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	extern char **environ;
	struct trace_spec spec = *v;
	spec.file = argv[0];
	spec.argv = argv;
	spec.envp = environ;
	spec.stdin_fd = -1;
	spec.stdout_fd = fd;
	spec.stderr_fd = 2;
	struct trace_result tr;
	struct error e = {0};
	assert_int_equal(trace_run(&spec, &tr, &e), 0);
	assert_true(WIFEXITED(tr.status) && WEXITSTATUS(tr.status) == 0);
	trace_result_free(&tr);
	off_t size = lseek(fd, 0, SEEK_END);
	char *out = calloc(1, (size_t)size + 1);
	assert_int_equal(pread(fd, out, (size_t)size, 0), size);
	close(fd);
	return out;
}

static void the_step_sees_a_reversed_listing(void **state)
{
	char dir[] = "/tmp/cachet-test-dirorder-XXXXXX";
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < 5; i++) {
		char p[128];
		snprintf(p, sizeof p, "%s/f%d", dir, i);
		close(open(p, O_CREAT | O_WRONLY, 0644));
	}
	char *const argv[] = {"/bin/ls", "-U", dir, NULL};
	struct trace_spec plain = {0}, reversed = {.dirorder = TRACE_DIRORDER_REVERSE};
	char *a = traced_output(&plain, argv);
	char *b = traced_output(&reversed, argv);
	/* b's lines are a's, last first. */
	char *lines_a[8], *lines_b[8];
	size_t na = 0, nb = 0;
	for (char *s = strtok(a, "\n"); s && na < 8; s = strtok(NULL, "\n"))
		lines_a[na++] = s;
	for (char *s = strtok(b, "\n"); s && nb < 8; s = strtok(NULL, "\n"))
		lines_b[nb++] = s;
	assert_int_equal(na, 5);
	assert_int_equal(nb, 5);
	for (size_t i = 0; i < 5; i++)
		assert_string_equal(lines_a[i], lines_b[4 - i]);
	free(a);
	free(b);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void umask_personality_and_cpus_change_in_the_child_only(void **state)
{
	mode_t mine = umask(022);
	umask(mine);
	cpu_set_t before;
	assert_int_equal(sched_getaffinity(0, sizeof before, &before), 0);
	int my_persona = personality(0xffffffff);

	struct trace_spec v = {.set_umask = 1, .umask = 0027, .aslr = 1, .max_cpus = 1};
	char *const argv[] = {"/bin/sh", "-c", "umask; cat /proc/self/personality; nproc", NULL};
	char *out = traced_output(&v, argv);
	char um[16], persona[32];
	int nproc = 0;
	assert_int_equal(sscanf(out, "%15s %31s %d", um, persona, &nproc), 3);
	assert_string_equal(um, "0027");
	assert_true(strtoul(persona, NULL, 16) & ADDR_NO_RANDOMIZE);
	assert_int_equal(nproc, CPU_COUNT(&before) >= 2 ? 1 : CPU_COUNT(&before));
	free(out);

	/* The tracer kept its own. */
	mode_t now = umask(022);
	umask(now);
	assert_int_equal(now, mine);
	cpu_set_t after;
	assert_int_equal(sched_getaffinity(0, sizeof after, &after), 0);
	assert_true(CPU_EQUAL(&before, &after));
	assert_int_equal(personality(0xffffffff), my_persona);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(reverse_puts_the_last_entry_first_and_keeps_the_final_offset),
	    cmocka_unit_test(shuffle_is_a_permutation_fixed_by_its_seed_and_never_the_identity),
	    cmocka_unit_test(a_buffer_that_does_not_parse_is_left_alone),
	    cmocka_unit_test(the_step_sees_a_reversed_listing),
	    cmocka_unit_test(umask_personality_and_cpus_change_in_the_child_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
