/*
 * Directory fingerprints: lookups that a directory's entries alone decide,
 * known without repeating them.
 *
 * Looking NAME up in a directory and finding no entry, finding what
 * readlink finds (a symlink's target, or that it is no symlink), or
 * listing the directory, depends only on which names the directory holds
 * and which inodes they name. A local file system moves a directory's
 * mtime and ctime whenever an entry is added, removed or renamed (inode
 * types and symlink targets never change in place). So while the directory
 * that a path's parent resolves to keeps its device, inode, mtime and
 * ctime, such a value still holds. gcc's include search makes most of its
 * lookups this way: of 426 for one compile of Lua's lparser.c, 227 find
 * nothing and 116 are readlinks. The facts the loader's cache answers
 * (facts.c) are decided the same way by that file's fingerprint.
 *
 * A fingerprint is only kept of a directory that has not changed within
 * DIGEST_CACHE_MARGIN_NS before the collection began (inode times come
 * from a coarse clock: two changes in one tick would leave the same
 * times), and vouches for values known to hold during the collection: the
 * directory had the fingerprinted entries from before it began until the
 * fingerprint was taken, and any later change shows.
 * Not used on network file systems (the caller's choice: the memo is not).
 */
#ifndef CACHET_DIRFP_H
#define CACHET_DIRFP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "cachet/buf.h"
#include "cachet/fileid.h"
#include "cachet/pathset.h"

struct dirfp {
	char *dir;
	struct file_id id;
	int state; /* while evaluating: 0 not checked, 1 unchanged, -1 changed */
};

struct dirfp_set {
	struct dirfp *dirs;
	size_t ndirs;
	uint32_t *obs_dir; /* per observation: index + 1 into dirs, 0 = look it up */
	size_t nobs;
	/* while evaluating: the recorded values, split per observation */
	const unsigned char **vals;
	size_t *val_lens;
};

/* The fingerprints that vouch for path set ps, whose values (as
 * pathset_strong_key_from_values takes them) hold now. */
void dirfp_collect(const struct pathset *ps, const void *values, size_t values_len,
                   struct dirfp_set *out);
/* What a collection has looked up: each path and directory once. A
 * recording that checks its values (record.h) notes there the absent
 * paths it has just found absent, so that the collection of its memo
 * neither looks them up again nor takes their directories' fingerprints
 * once more. */
struct dirfp_notes;
struct dirfp_notes *dirfp_notes_new(void);
void dirfp_notes_free(struct dirfp_notes *n); /* NULL: nothing */
/* Called just after an lstat of path failed with ENOENT: finds the
 * directory that decides its absence and takes its fingerprint, as
 * dirfp_collect would after its own lstat of path. An absolute path only. */
void dirfp_note_absent(struct dirfp_notes *n, const char *path);
/* Called when a lookup (dirfp_notes_lookups) of path found a directory:
 * its fingerprint, should a collection want one, is that lookup's. */
void dirfp_note_directory(struct dirfp_notes *n, const char *path);
/* An lstat of path that found err (0: st) made after the notes began, by
 * an evaluation whose memo these notes will collect: an observe_looked_fn
 * (observe_memo.looked), the notes its ctx. Taken as the notes' own lookup
 * of path, an ancestor's or an absent path's (a file found is not kept: no
 * collection asks). The first one of a path holds. */
void dirfp_note_lookup(void *notes, const char *path, int err, const struct stat *st);
/* The lstat the notes take of an ancestor (NULL: lstat itself): a
 * recording's, which its values share. 0 or -1 with errno. */
void dirfp_notes_lookups(struct dirfp_notes *n,
                         int (*lstat_of)(void *ctx, const char *path, struct stat *st), void *ctx);
/* dirfp_collect through notes (NULL: none), which it adds to. */
void dirfp_collect_noted(const struct pathset *ps, const void *values, size_t values_len,
                         struct dirfp_notes *notes, struct dirfp_set *out);
void dirfp_encode(const struct dirfp_set *set, struct buf *out);
/* Untrusted bytes, for a path set of nobs observations. */
int dirfp_decode(const void *data, size_t len, size_t nobs, struct dirfp_set *out);
void dirfp_free(struct dirfp_set *set);

/* The strong key of ps (this checkout's paths) as pathset_strong_key
 * computes it under bases b, taking the recorded value (values, as above)
 * of each observation whose directory is unchanged instead of looking it
 * up. Returns how many lookups it saved. */
size_t dirfp_strong_key(struct dirfp_set *set, const struct pathset *ps, const struct step_bases *b,
                        const struct digest *weak, const struct digest *ps_digest,
                        struct digest_cache *dc, const void *values, size_t values_len,
                        struct digest *strong);

#endif
