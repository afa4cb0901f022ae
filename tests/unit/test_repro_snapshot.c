/*
 * Snapshots for `cachet repro`: a path saved before the step's first change
 * to it comes back as it was (content, mode, mtime, symlink target,
 * absence), a directory renamed away comes back with its tree, and paths
 * below an absent or tree-saved parent are left to that parent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cli/repro_snapshot.h"

struct fixture {
	char root[64];
	char *tree;  /* the "work tree" */
	char *store; /* the snapshot's directory */
	struct snapshot *snap;
};

static char *at(struct fixture *f, const char *rel)
{
	static char bufs[4][512];
	static int k;
	char *b = bufs[k++ % 4];
	snprintf(b, 512, "%s/%s", f->tree, rel);
	return b;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void assert_file(const char *path, const char *text, mode_t mode)
{
	char b[256] = {0};
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t n = read(fd, b, sizeof b - 1);
	close(fd);
	assert_true(n >= 0);
	assert_string_equal(b, text);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, mode);
}

static int absent(const char *path)
{
	struct stat st;
	return lstat(path, &st) < 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	strcpy(f->root, "/tmp/cachet-test-snapshot-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	f->tree = xasprintf("%s/tree", f->root);
	f->store = xasprintf("%s/store", f->root);
	assert_int_equal(mkdir(f->tree, 0755), 0);
	assert_int_equal(mkdir(f->store, 0700), 0);
	f->snap = snapshot_new(f->store);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	snapshot_free(f->snap);
	struct error e = {0};
	assert_int_equal(snapshot_remove(f->root, &e), 0);
	assert_true(absent(f->root));
	free(f->tree);
	free(f->store);
	free(f);
	return 0;
}

static void files_symlinks_and_absent_paths_come_back(void **state)
{
	struct fixture *f = *state;
	struct error e = {0};
	write_file(at(f, "input.txt"), "before\n", 0755);
	struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
	assert_int_equal(utimensat(AT_FDCWD, at(f, "input.txt"), old, 0), 0);
	assert_int_equal(symlink("input.txt", at(f, "link")), 0);
	assert_int_equal(mkdir(at(f, "dir"), 0750), 0);
	write_file(at(f, "dir/gone.txt"), "removed by the step\n", 0644);

	/* The step's first changes, each saved just before. */
	assert_int_equal(snapshot_save(f->snap, at(f, "input.txt"), 0, &e), 1);
	write_file(at(f, "input.txt"), "after\n", 0600);
	assert_int_equal(snapshot_save(f->snap, at(f, "input.txt"), 0, &e), 0); /* once */
	assert_int_equal(snapshot_save(f->snap, at(f, "link"), 0, &e), 1);
	unlink(at(f, "link"));
	assert_int_equal(symlink("elsewhere", at(f, "link")), 0);
	assert_int_equal(snapshot_save(f->snap, at(f, "new.o"), 0, &e), 1);
	write_file(at(f, "new.o"), "output\n", 0644);
	assert_int_equal(snapshot_save(f->snap, at(f, "dir/gone.txt"), 0, &e), 1);
	assert_int_equal(snapshot_save(f->snap, at(f, "dir"), 0, &e), 1);
	unlink(at(f, "dir/gone.txt"));
	assert_int_equal(rmdir(at(f, "dir")), 0);
	assert_int_equal(snapshot_count(f->snap), 5);
	assert_int_equal(snapshot_kind(f->snap, 2), SNAP_ABSENT);

	for (int round = 0; round < 2; round++) {
		assert_int_equal(snapshot_restore(f->snap, &e), 0);
		assert_file(at(f, "input.txt"), "before\n", 0755);
		struct stat st;
		assert_int_equal(stat(at(f, "input.txt"), &st), 0);
		assert_int_equal(st.st_mtim.tv_sec, 1000000000);
		char target[64] = {0};
		assert_int_equal(readlink(at(f, "link"), target, sizeof target - 1), 9);
		assert_string_equal(target, "input.txt");
		assert_true(absent(at(f, "new.o")));
		assert_file(at(f, "dir/gone.txt"), "removed by the step\n", 0644);
		assert_int_equal(lstat(at(f, "dir"), &st), 0);
		assert_int_equal(st.st_mode & 07777, 0750);
		/* A second run changes things again. */
		write_file(at(f, "new.o"), "output 2\n", 0644);
		write_file(at(f, "input.txt"), "after 2\n", 0600);
	}
}

static void a_directory_renamed_away_comes_back_with_its_tree(void **state)
{
	struct fixture *f = *state;
	struct error e = {0};
	assert_int_equal(mkdir(at(f, "old"), 0755), 0);
	assert_int_equal(mkdir(at(f, "old/sub"), 0700), 0);
	write_file(at(f, "old/sub/kept.txt"), "kept\n", 0644);
	/* First touched without its tree (mkdir -p on an existing directory),
	 * then renamed: the rename brings the tree in. */
	assert_int_equal(snapshot_save(f->snap, at(f, "old"), 0, &e), 1);
	assert_int_equal(snapshot_save(f->snap, at(f, "old"), SNAPSHOT_TREE, &e), 1);
	assert_int_equal(snapshot_save(f->snap, at(f, "new"), 0, &e), 1);
	assert_int_equal(rename(at(f, "old"), at(f, "new")), 0);
	/* Changes under the new name are first changes of those paths, but
	 * their "before" is the step's own doing: covered by new (absent). */
	assert_int_equal(snapshot_save(f->snap, at(f, "new/sub/kept.txt"), 0, &e), 1);
	write_file(at(f, "new/sub/kept.txt"), "changed\n", 0644);
	assert_true(snapshot_is_covered(f->snap, 2));
	assert_false(snapshot_is_covered(f->snap, 0));

	assert_int_equal(snapshot_restore(f->snap, &e), 0);
	assert_true(absent(at(f, "new")));
	assert_file(at(f, "old/sub/kept.txt"), "kept\n", 0644);
	struct stat st;
	assert_int_equal(lstat(at(f, "old/sub"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
}

static void read_only_directories_are_removed_and_copied(void **state)
{
	struct fixture *f = *state;
	struct error e = {0};
	assert_int_equal(snapshot_save(f->snap, at(f, "out"), 0, &e), 1);
	assert_int_equal(mkdir(at(f, "out"), 0755), 0);
	assert_int_equal(mkdir(at(f, "out/ro"), 0755), 0);
	write_file(at(f, "out/ro/x"), "x\n", 0444);
	assert_int_equal(chmod(at(f, "out/ro"), 0555), 0);
	char *copy = xasprintf("%s/copy", f->root);
	assert_int_equal(snapshot_copy(at(f, "out"), copy, 1, &e), 0);
	char *x = xasprintf("%s/ro/x", copy);
	assert_file(x, "x\n", 0444);
	assert_int_equal(snapshot_remove(copy, &e), 0);
	assert_true(absent(copy));
	free(x);
	free(copy);
	assert_int_equal(snapshot_restore(f->snap, &e), 0);
	assert_true(absent(at(f, "out")));
}

static void devices_cannot_be_saved(void **state)
{
	struct fixture *f = *state;
	struct error e = {0};
	assert_int_equal(snapshot_save(f->snap, "/dev/null", 0, &e), -1);
	assert_non_null(strstr(e.msg, "/dev/null"));
	assert_int_equal(snapshot_count(f->snap), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(files_symlinks_and_absent_paths_come_back, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(a_directory_renamed_away_comes_back_with_its_tree,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(read_only_directories_are_removed_and_copied, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(devices_cannot_be_saved, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
