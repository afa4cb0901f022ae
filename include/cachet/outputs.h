/*
 * Results: what a step left behind (its outputs by final state), its stdout,
 * stderr and exit status, and where it came from. Capturing turns the final
 * state of the paths a run touched into blobs in the store; restoring puts
 * them back atomically (temporary file, then rename or an exchange of
 * names), and leaves a file that already holds the content in place.
 */
#ifndef CACHET_OUTPUTS_H
#define CACHET_OUTPUTS_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/buf.h"
#include "cachet/error.h"
#include "cachet/store.h"

enum output_kind {
	OUT_FILE = 1,     /* regular file: blob, mode, maybe an mtime the step set */
	OUT_SYMLINK = 2,  /* symlink: target */
	OUT_DIR = 3,      /* directory created: mode */
	OUT_DELETE = 4,   /* a path that existed before the run and is gone */
};

struct output {
	uint8_t kind;
	char *path;             /* absolute; owned */
	uint32_t mode;          /* permission bits (07777) */
	struct blob_ref blob;   /* OUT_FILE */
	int has_mtime;          /* OUT_FILE: the step set its times on purpose */
	int64_t mtime_ns;
	char *target;           /* OUT_SYMLINK; owned */
};

struct result {
	struct output *outputs;
	size_t noutputs, alloc;
	struct blob_ref out, err; /* stdout and stderr */
	int exit_code;
	int64_t duration_ms;
	/* provenance */
	int64_t created;        /* unix seconds */
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
};

void result_init(struct result *r);
void result_free(struct result *r);
struct output *result_add_output(struct result *r, enum output_kind kind, const char *path);

/* pinned and stdin_advance are written only when set (pinned, as "", when
 * only stdin_advance is), so results without them encode as they always
 * did. */
void result_encode(const struct result *r, struct buf *out);
/* A hit leaves stdin, a regular file shared with the caller, where the
 * step left it (stdin_advance). */
void result_replay_stdin_advance(const struct result *r);
/* Decodes untrusted bytes; checks the trailing SHA-256 that result_encode
 * writes, then every length, kind and path (absolute, no NUL). */
int result_decode(const void *data, size_t len, struct result *r, struct error *e);

/* Puts the outputs back, deletions first, then directories (parents before
 * children), files, and symlinks last. Each file is written to a temporary
 * name in its directory and renamed into place; mode and (where recorded)
 * mtime are set before the rename. Returns -1 at the first failure; what was
 * restored before stays (every piece is a complete, correct output). */
int result_restore(const struct result *r, struct store *s, struct error *e);

/* result_restore for an entry that came from a remote cache: every output
 * must lie strictly beneath one of roots (canonical absolute directories,
 * NULL-terminated) with no "." or ".." component, symlink targets must stay
 * inside the roots, and no output may lie beneath a symlink the entry
 * creates. Every path component below the root is walked with O_NOFOLLOW,
 * so an existing symlink on the way is refused, not followed; the entry's
 * own symlinks are created last; setuid, setgid and sticky bits are
 * dropped. Everything is checked before anything is written: a refused
 * entry (error code EPERM) writes nothing. */
int result_restore_beneath(const struct result *r, struct store *s, const char *const *roots,
			   struct error *e);

/* Every blob the result references (outputs, stdout, stderr); malloc'd. */
struct blob_ref *result_blobs(const struct result *r, size_t *n);

#endif
