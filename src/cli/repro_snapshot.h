/*
 * Snapshots: the state a set of paths had before a step changed them, saved
 * into a private directory and put back on demand. `cachet repro` saves each
 * path at the step's first change to it (the tracer's before_change
 * callback, while the path still holds its old state) and restores all of
 * them before each later run, so that every run starts from the same tree.
 *
 * What is saved of a path:
 *  - absent: that it was absent (a restore removes whatever is there);
 *  - regular file: content, permission bits, mtime;
 *  - symlink: its target;
 *  - directory: permission bits and mtime; its whole tree only when
 *    SNAPSHOT_TREE is asked (a rename is about to move it away with its
 *    content). Otherwise its entries are saved on their own, as the step
 *    changes them;
 *  - FIFO: that it was one (mode); sockets and devices cannot be saved.
 * Not saved: owners, xattrs, ACLs, hard-link identity, atimes.
 *
 * Nesting. A path saved as absent or as a tree covers the paths below it
 * that were first saved after it: they cannot have existed before the step
 * (absent parent) or their old state is in the tree, and their own saves
 * describe a state the step made. A restore skips them.
 *
 * Invariants: at most one entry per path text; entries are kept in the order
 * they were first saved. The snapshot owns its directory's contents, not the
 * directory (the caller creates and removes it).
 */
#ifndef CACHET_CLI_REPRO_SNAPSHOT_H
#define CACHET_CLI_REPRO_SNAPSHOT_H

#include <stddef.h>
#include "cachet/error.h"

struct snapshot;

enum snapshot_kind {
	SNAP_ABSENT,
	SNAP_FILE,
	SNAP_SYMLINK,
	SNAP_DIR,
	SNAP_FIFO,
};

/* snapshot_save flags */
#define SNAPSHOT_TREE 1u /* a directory: save everything below it too */

/* A new, empty snapshot keeping its copies in dir (an existing directory
 * that only this snapshot writes to). Never NULL. */
struct snapshot *snapshot_new(const char *dir);
/* Frees the snapshot; its copies in dir stay until the caller removes dir. */
void snapshot_free(struct snapshot *s);

/* Saves path's current state (lstat: a final symlink is saved as a link)
 * unless it was saved before; with SNAPSHOT_TREE, a directory saved earlier
 * without its tree gets it now. Returns 1 when something was saved, 0 when
 * nothing needed to be, -1 with e set (a socket or device, an unreadable
 * file, a full disk). */
int snapshot_save(struct snapshot *s, const char *path, unsigned flags, struct error *e);

/* Puts every saved path back as it was saved: parents before children,
 * covered entries skipped, directory mtimes set last. Returns 0, or -1 with
 * e set at the first path that cannot be restored (what was restored before
 * stays). */
int snapshot_restore(struct snapshot *s, struct error *e);

/* The saved paths, in the order first saved. */
size_t snapshot_count(const struct snapshot *s);
const char *snapshot_path(const struct snapshot *s, size_t i);
enum snapshot_kind snapshot_kind(const struct snapshot *s, size_t i);
/* 1 when entry i lies below another saved path that covers it (see
 * Nesting): its own saved state is not what it was before the step. */
int snapshot_is_covered(const struct snapshot *s, size_t i);

/* Copies from's current state to `to`, which must not exist (its parent
 * must): a regular file with its content, a symlink, a FIFO, a directory
 * (with everything below it when recursive, else empty). Permission bits and
 * mtimes are kept; symlinks are never followed. -1 with e set. */
int snapshot_copy(const char *from, const char *to, int recursive, struct error *e);

/* Removes path and everything below it, never following symlinks (making
 * read-only directories writable on the way). 0 also when path was absent;
 * -1 with e set. */
int snapshot_remove(const char *path, struct error *e);

#endif
