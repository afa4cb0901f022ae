/*
 * What `cachet run` and `cachet repro` share to run a step traced: its
 * private TMPDIR (and the sweep of those that killed runs left), its
 * environment and the roots whose accesses are neither inputs nor
 * outputs.
 */
#ifndef CACHET_CLI_STEP_ENV_H
#define CACHET_CLI_STEP_ENV_H

#include <stddef.h>

struct settings;

/* The step's private directory under $TMPDIR (or /tmp): its canonical path
 * (malloc'd), and a descriptor holding a lock on it while this process
 * uses it (-1: none could be taken). A pooled one is kept, empty, for the
 * next step: creating a directory under a busy /tmp on ext4 costs about a
 * millisecond (its allocator walks the recently deleted inodes), a file
 * there a fiftieth of that. */
struct step_tmpdir {
	char *path;
	int lock_fd;
	int pooled;
};

/* An empty directory only this user can enter, locked by this process: a
 * free one of this user's pool (TMPDIR_PREFIX<uid>-<n>), else a new one of
 * a random name. 0, or -1 with errno set (nothing created). */
int step_tmpdir_create(struct step_tmpdir *t);
/* Removes what is under the directory and, unless it is pooled, the
 * directory itself; then lets the lock go. */
void step_tmpdir_remove(struct step_tmpdir *t);
/* When the step left nothing in its pooled directory, lets it go as
 * step_tmpdir_remove would (only the lock, there being nothing to remove)
 * and returns 1; else 0, t untouched. */
int step_tmpdir_release_if_empty(struct step_tmpdir *t);
/* Removes the step directories under $TMPDIR (or /tmp) that no cachet
 * holds locked and nothing changed for an hour: pooled ones, and those a
 * cachet killed on the way (SIGKILL, the OOM killer) left behind; this
 * user's only. How many (that would be, with dry_run). */
size_t step_tmpdir_sweep(int dry_run);

/* The step's environment: the caller's, with TMPDIR set to tmpdir. A
 * NULL-terminated, malloc'd array of malloc'd strings (strv_free). */
char **step_environment(const char *tmpdir);

/* Roots whose accesses are neither inputs nor outputs: the step's private
 * TMPDIR, the cache itself and the user's ignore_paths (none when settings
 * is NULL). Freed with strv_free. */
char **step_ignore_roots(const struct settings *settings, const char *tmpdir,
                         const char *cache_dir);

/* Frees a NULL-terminated array of malloc'd strings and the array. */

#endif
