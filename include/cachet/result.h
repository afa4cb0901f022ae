/*
 * Results: what a step left behind (its outputs by final state), its stdout,
 * stderr and exit status, and where it came from. Capturing turns the final
 * state of the paths a run touched into blobs in the store; restoring puts
 * them back all or nothing (temporary files, then exchanges of names, undone
 * at a failure), and leaves a file that already holds the content in place.
 */
#ifndef CACHET_RESULT_H
#define CACHET_RESULT_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/buf.h"
#include "cachet/error.h"
#include "cachet/store.h"

enum output_kind {
	OUT_FILE = 1,    /* regular file: blob, mode, maybe an mtime the step set */
	OUT_SYMLINK = 2, /* symlink: target */
	OUT_DIR = 3,     /* directory created: mode */
	OUT_DELETE = 4,  /* a path that existed before the run and is gone */
	/* Kinds 5 to 7 came later: an entry without them encodes as it
	 * always did, and a cachet that predates them decodes one that has
	 * them as damaged (a miss). Each follows the output it is about. */
	OUT_HARDLINK = 5, /* another name of the OUT_FILE output named by target */
	OUT_XATTR = 6,    /* an extended attribute (user.*) of the output at path:
	                   * target is its name, value its bytes */
	OUT_OWNER = 7,    /* the owner of the output at path (uid, gid), where it
	                   * is not the one a file the step made would get */
};

struct output {
	uint8_t kind;
	char *path;           /* absolute; owned */
	uint32_t mode;        /* permission bits (07777) */
	struct blob_ref blob; /* OUT_FILE */
	int has_mtime;        /* OUT_FILE: the step set its times on purpose */
	int64_t mtime_ns;
	char *target; /* OUT_SYMLINK, OUT_HARDLINK, OUT_XATTR; owned */
	void *value;  /* OUT_XATTR; owned */
	size_t value_len;
	uint32_t uid, gid; /* OUT_OWNER */
};

struct result {
	struct output *outputs;
	size_t noutputs, alloc;
	struct blob_ref out, err; /* stdout and stderr */
	int exit_code;
	int64_t duration_ms;
	/* provenance */
	int64_t created; /* unix seconds */
	char *host;
	char *cachet_version;
	/* the observation values of the recorded run, for explain */
	void *values;
	size_t values_len;
	/* the directory listings the run saw: for each, buf_put_u32(observation
	 * index) and buf_put_bytes(listing as observe_value_detail writes it) */
	void *listings;
	size_t listings_len;
	/* Why the entry holds only where its bases lie at the recorded real
	 * paths ("output /src/x.d contains /src"; portable.h), for explain and
	 * show; NULL when it is not pinned. Kept in the local index only. */
	char *pinned;
	/* How far the step moved the offset of its stdin, a regular file that
	 * it shares with the caller (`{ head -n1; head -n1; } < data`): a hit
	 * moves it as far. */
	int64_t stdin_advance;
	/* The order in which the step's stdout and stderr reached cachet, as
	 * runs of one stream: each element is the run's length << 1 | the
	 * stream (0 stdout, 1 stderr); consecutive runs alternate, and each
	 * stream's lengths add up to its blob's size. Empty (NULL, 0) when
	 * the order is all of stdout, then all of stderr (also for entries
	 * made before it was kept): a hit writes them one after the other. */
	uint64_t *stream_runs;
	size_t nstream_runs;
};

void result_init(struct result *r);
void result_free(struct result *r);
struct output *result_add_output(struct result *r, enum output_kind kind, const char *path);
/* Adds a copy of o (every field, target and value copied) at path. */
struct output *result_copy_output(struct result *r, const struct output *o, const char *path);
/* Whether o's target is a path of the same tree (an absolute symlink's, a
 * hard link's): made portable and localised as paths are. */
int output_target_is_path(const struct output *o);

/* pinned, stdin_advance and stream_runs are written only when set (each
 * earlier one as its empty value when a later one is set), so results
 * without them encode as they always did. */
void result_encode(const struct result *r, struct buf *out);
/* A hit leaves stdin, a regular file shared with the caller, where the
 * step left it (stdin_advance). */
void result_replay_stdin_advance(const struct result *r);
/* Decodes untrusted bytes; checks the trailing SHA-256 that result_encode
 * writes, then every length, kind and path (absolute, no NUL). */
int result_decode(const void *data, size_t len, struct result *r, struct error *e);
/* result_decode of bytes whose container's checksum, verified as they were
 * read, covers them (a memo's): every length, kind and path is checked, the
 * trailer is not hashed again (7% of a hit's instructions). */
int result_decode_summed(const void *data, size_t len, struct result *r, struct error *e);

/* Puts the outputs back as one transaction: deletions first (deepest
 * first), then directories (parents before children), files, their other
 * names (OUT_HARDLINK), attributes, and symlinks last. Each file is written
 * to an unnamed or temporary file in its directory, with mode and (where
 * recorded) mtime, and exchanged with what the path held, which waits under
 * a temporary name, as does a deleted entry, until everything is in place;
 * at the first failure every change is undone (what was replaced or
 * deleted back, what was made removed) and -1 returned, so that the step
 * runs in the tree as it was. Every directory is opened beneath "/"
 * without following a symlink (openat2 RESOLVE_NO_SYMLINKS, or one
 * component at a time with O_NOFOLLOW): outputs are recorded at their real
 * paths, and a symlink on the way now is someone else's, not followed (a
 * refusal: error code EPERM, nothing left written). No output may lie
 * beneath a symlink the entry creates. */
int result_restore(const struct result *r, struct store *s, struct error *e);
struct digest_cache;
/* result_restore where an output already in place is known to hold its
 * content when seen (observe.h digest_cache.seen) has its digest at the
 * id it has: the lookup's hash of it is not taken again. */
int result_restore_seen(const struct result *r, struct store *s, struct digest_cache *seen,
                        struct error *e);

/* result_restore for an entry that is another's word (a remote's, or a
 * cache others can write): every output must lie strictly beneath one of
 * roots (canonical absolute directories, NULL-terminated) with no "." or
 * ".." component, each directory is walked from its root without
 * following symlinks, symlink targets must lead inside the roots as the
 * kernel will resolve them (a ".." after a symlink, the entry's or one on
 * disk, refuses: "d -> ." makes "d/../x" the parent's x), setuid, setgid
 * and sticky bits are dropped and owners not given. A refused entry (error
 * code EPERM) leaves nothing written. */
int result_restore_beneath(const struct result *r, struct store *s, const char *const *roots,
                           struct error *e);

/* Every blob the result references (outputs, stdout, stderr); malloc'd. */
struct blob_ref *result_blobs(const struct result *r, size_t *n);

#endif
