/*
 * Portable forms: keys and entries that do not depend on where a tree lives.
 *
 * A base is a directory whose location differs between checkouts, users or
 * machines: base_dir, and HOME in the hermetic mode. A path under a base is
 * stored in its portable form, which names the base by index:
 * "/@cachet-base0/src/x.c" for <base_dir>/src/x.c. The weak key (step.h),
 * the paths of path sets, readlink targets among observation values, and the
 * output paths and absolute symlink targets of results are kept in that
 * form, in the local store as on remotes, and turned into the current
 * checkout's paths where they are evaluated or restored. Paths outside every
 * base (system headers, the compiler) stay as they are.
 *
 * ".." is never resolved as text: "/@cachet-base0/build/../../x" means under
 * another checkout what the same text means there, which is what a step
 * that spelled it alike reaches there. A stat or readlink of a directory
 * above a base (glibc's realpath makes them) is stored as so many levels
 * above it, "/@cachet-base0/..": above a canonical base, every such
 * directory is one, whichever checkout asks.
 *
 * A hit must not be wrong: an output, stdout or stderr that holds the
 * recording checkout's real path (a depfile, an RPATH, a generated script)
 * would make another checkout use the first one's files. Such a run is
 * pinned: its path set gets one OBS_BASE observation per base it names,
 * whose value is that base's real path, so it hits only where the base lies
 * at the same real path. So is a run that searched upwards from a checkout
 * (a name looked up level after level above it) or listed a directory above
 * it: what lies there differs between checkouts.
 *
 * base_dir is what ccache users set: a parent of all their checkouts ($HOME,
 * /builds, a CI workspace root), or the checkout itself. When the step's cwd
 * lies under it, the cwd is a base too (STEP_BASE_CWD), and every path under
 * base_dir is written relative to the cwd, with its ".." resolved (the cwd
 * is canonical, so its parent as text is its parent on disk):
 * "/@cachet-base2/../src/x.c" for <cwd>/../src/x.c, as ccache rewrites an
 * absolute path to a relative one. Checkouts at different depths below
 * base_dir then share; a path outside the checkout lies at another number
 * of levels up in each and stays apart. The weak key also holds the cwd's
 * own name (step.c): one checkout's directories do not share a key. A run
 * whose outputs name base_dir's real path is pinned on the real cwd: the
 * name of the checkout that base_dir no longer tells apart. A readlink of a
 * directory above the cwd and within base_dir that found no symlink is
 * dropped: above a canonical cwd every such directory is one, and their
 * number differs with the depth of the checkout.
 *
 * Bases are canonical absolute paths (realpath: no symlinks, no trailing
 * '/'), never "/"; NULL when unset. Without any base, every conversion here
 * is the identity, except that localising still refuses a portable path: it
 * names a base that is not set here.
 */
#ifndef CACHET_PORTABLE_H
#define CACHET_PORTABLE_H

#include <stddef.h>
#include "cachet/buf.h"
#include "cachet/error.h"

struct finder;
struct pathset;

#define STEP_MAX_BASES       3
#define STEP_BASE_DIR        0 /* base_dir */
#define STEP_BASE_HOME       1 /* HOME, in the hermetic mode */
#define STEP_BASE_CWD        2 /* the cwd, when it lies under base_dir */
#define STEP_PORTABLE_PREFIX "/@cachet-base"

struct step_bases {
	const char *dir[STEP_MAX_BASES]; /* not owned */
};

/* 1 when b (may be NULL) sets at least one base. */
int portable_has_bases(const struct step_bases *b);

/* The canonical form of a directory the user names as a base (malloc'd):
 * realpath of it, so that a checkout reached through a symlink keys like
 * the cwd the kernel reports. NULL with e when it is not absolute, does not
 * exist, is not a directory, or is "/" (which would make every path
 * portable); name ("base_dir") starts the message. */
char *portable_base(const char *dir, const char *name, struct error *e);

/* The cwd as a base for b: cwd when it lies under (or is) b's base_dir,
 * else NULL. */
const char *portable_cwd_base(const struct step_bases *b, const char *cwd);

/* The portable form of an absolute path (malloc'd): under the deepest base
 * that contains it, "/@cachet-base<i>" + the rest (relative to the cwd
 * base, with leading "/.." for each level up, for one under base_dir);
 * else a copy. NULL when
 * the path itself holds the reserved prefix (it cannot be shared). */
char *portable_path(const char *path, const struct step_bases *b);
/* The local path for a portable one (malloc'd), or NULL when it names a
 * base that is unset here. Other paths come back unchanged. */
char *portable_local_path(const char *portable, const struct step_bases *b);
/* Text (an argv element, an environment value) with every base that starts
 * a path in it replaced by its portable name (malloc'd). NULL when the text
 * already holds the reserved prefix. */
char *portable_text(const char *text, const struct step_bases *b);
/* i when path is exactly the portable name of base i, else -1. */
int portable_base_index(const char *path);

/* Appends the portable form of one observation value (observe.h): a
 * READLINK target that is an absolute path under a base is written in
 * portable form; every other value is copied. Returns -1 when the value
 * cannot be shared (a target that holds the reserved prefix): what is
 * written then never equals a recorded value. */
int portable_value(const void *value, size_t len, const struct step_bases *b, struct buf *out);

/* Base i of b when it is set (b may be NULL), else NULL. */
const char *portable_base_at(const struct step_bases *b, int i);
/* The deepest base containing path, or -1. */
int portable_base_of(const char *path, const struct step_bases *b);
/* 1 when paths under base_dir are written relative to the cwd base. */
int portable_cwd_relative(const struct step_bases *b);
/* In place: *path (malloc'd) from portable to local. -1 when it names a
 * base that is unset here. */
int portable_localise_path(char **path, const struct step_bases *b);

/* Turns a stored path set's paths into this checkout's, in place (names in
 * listings are left alone). -1 when one names a base that is unset here:
 * the path set cannot hold here. */
int portable_localise_pathset(struct pathset *ps, const struct step_bases *b);

/* Sets f up to find the real path of each base (needle i = base i), for
 * the scan of outputs, stdout and stderr. Free with finder_free. */
void portable_finder(struct finder *f, const struct step_bases *b);

#endif
