/*
 * The local store: an SQLite index (WAL mode) and a directory of blobs named
 * by the SHA-256 of their uncompressed content. It knows nothing of tracing
 * or of what a path set or a result means: bodies are opaque byte strings
 * that src/key encodes.
 *
 * Layout under the cache directory:
 *   index.db (+ -wal, -shm)     path sets, results, fingerprints
 *   blobs/ab/<64 hex>[.zst]      contents; .zst = one zstd frame with checksum
 *   memo/<64 hex>                the last hit or store of each step, answered
 *                                without opening the index (memo.c)
 *   stats                        counters, updated without the index lock
 *   tmp/                         temporary files, renamed into place
 *   evict.lock, gc.stamp         one evicting process at a time; time of the last sweep
 *
 * Concurrency: many cachet processes share one store. Writes are
 * `BEGIN IMMEDIATE` transactions with a busy timeout; the hit path only reads
 * (its LRU updates are best effort and never wait). Every file write is a
 * temporary file + rename, so a crash leaves either the old or the new state.
 */
#ifndef CACHET_STORE_H
#define CACHET_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/digest.h"
#include "cachet/error.h"
#include "cachet/fileid.h"

struct store;

enum {
	STORE_READONLY = 1 << 0, /* never write (read-only mode, or directory not writable) */
	/* A cache shared between users: directories and files get 0777/0666
	 * less the mask given with STORE_UMASK, exactly (whatever the process
	 * umask, which the step inherits and must keep), instead of 0700/0600. */
	STORE_SHARED = 1 << 1,
	/* Do not open the index yet (store_index_open does): a hit through a
	 * memo needs only blobs, counters and logs. */
	STORE_DEFER_INDEX = 1 << 2,
};

/* The flags of a shared cache whose files take umask m (e.g. 002). */
#define STORE_UMASK(m) (STORE_SHARED | ((unsigned)(m)&0777u) << 16)

/* Opens (creating if needed, mode 0700 directory, 0600 index) the store in
 * dir. On a directory that cannot be written, opens read-only if possible.
 * An index that is not a database or is corrupt is moved aside to
 * index.db.corrupt-<time> and recreated (counted as "index_recreated"). */
int store_open(const char *dir, unsigned flags, struct store **out, struct error *e);
void store_close(struct store *s);
/* Opens the index of a store opened with STORE_DEFER_INDEX (a no-op when it
 * is open). On failure the store is unusable but for store_close. */
int store_index_open(struct store *s, struct error *e);
const char *store_dir(const struct store *s);
int store_is_readonly(const struct store *s);

/* ---- blobs ---- */

/* How a blob is kept on disk. */
enum blob_form {
	BLOB_RAW = 0,  /* the bytes as they are: restores can reflink/copy_file_range */
	BLOB_ZSTD = 1, /* one zstd frame with content checksum */
};

struct blob_ref {
	struct digest digest; /* SHA-256 of the uncompressed content */
	uint64_t size;        /* uncompressed size */
	enum blob_form form;
};

/* Stores the content readable from fd (from offset 0; fd must be a regular
 * file). The caller passes the digest it already computed; the store hashes
 * again while copying and fails ("content changed while being stored") if the
 * bytes differ, so an output rewritten by a sibling process is never stored
 * under the wrong name. Compresses with zstd when that saves at least 10% and
 * the content is below 64 MiB; keeps large or incompressible content raw.
 * Existing blobs are not rewritten (nor fd read). Errors: code EAGAIN for
 * changed content, EROFS on a read-only store. */
int store_put_blob_fd(struct store *s, int fd, const struct digest *expected, struct blob_ref *out,
                      struct error *e);
int store_put_blob_mem(struct store *s, const void *data, size_t len, struct blob_ref *out,
                       struct error *e);

/* Writes the blob's uncompressed content to out_fd (a new, empty regular
 * file) starting at offset 0. Raw blobs: ioctl(FICLONE), else
 * copy_file_range, else read/write. Verifies integrity: the zstd frame
 * checksum, or for raw blobs the SHA-256, re-hashed only when the blob file's
 * fingerprint is not the one recorded when it was last verified. A corrupt
 * or missing blob is an error (code EBADMSG / ENOENT) and a corrupt one is
 * removed. */
int store_blob_write_to_fd(struct store *s, const struct blob_ref *ref, int out_fd,
                           struct error *e);
/* Reads a whole blob into memory (malloc'd, caller frees); same checks. */
int store_blob_read(struct store *s, const struct blob_ref *ref, void **data, size_t *len,
                    struct error *e);
int store_blob_exists(struct store *s, const struct blob_ref *ref);
/* The zstd level for blobs stored from now on by this handle (default 3).
 * Returns 0, or -1 when level is outside zstd's range. */
int store_set_compression_level(struct store *s, int level);

/* ---- index ---- */

/* One path set of a weak key. body is owned by the list. */
struct store_pathset {
	struct digest digest;
	void *body;
	size_t len;
};

/* The path sets recorded for weak, most recently used first. *out is a
 * malloc'd array (free with store_pathsets_free); *n may be 0. */
int store_get_pathsets(struct store *s, const struct digest *weak, struct store_pathset **out,
                       size_t *n, struct error *e);
void store_pathsets_free(struct store_pathset *ps, size_t n);

/* The key of the group of path sets recorded with argv words `words`
 * (argv_inputs_key): 0, or -1 when no path set of it can hold now. */
typedef int (*store_argv_key_fn)(void *ctx, uint64_t words, struct digest *key);
/* The path sets of weak in the groups that argv_key finds for this step,
 * most recently used first, as store_get_pathsets. *any is 1 when weak has
 * path sets at all (in any group). */
int store_get_pathsets_argv(struct store *s, const struct digest *weak, store_argv_key_fn argv_key,
                            void *ctx, struct store_pathset **out, size_t *n, int *any,
                            struct error *e);

/* The result body stored under strong. Returns 1 and a malloc'd body when
 * found, 0 when not, -1 on error. */
int store_get_result(struct store *s, const struct digest *strong, void **body, size_t *len,
                     struct error *e);

/* What a new entry holds: the weak key's step description (for explain and
 * show), one path set and one result, and the blobs the result references
 * (so that eviction can find them). */
struct store_entry {
	const struct digest *weak;
	const void *step_body; /* argv, cwd, environment, executable: opaque */
	size_t step_len;
	const struct digest *pathset;
	const void *pathset_body;
	size_t pathset_len;
	const struct digest *strong;
	const void *result_body;
	size_t result_len;
	const struct blob_ref *blobs;
	size_t nblobs;
	int64_t duration_ms;
	/* The group of the path set (argv_inputs.h): argv_words 0 (argv_key
	 * unused) when the step's argv names no input. */
	uint64_t argv_words;
	const struct digest *argv_key;
	/* NULL, or a row for the duplicates (store_duplicate_put), written in
	 * the entry's transaction: one commit per stored miss. */
	const struct store_duplicate *duplicate;
	/* NULL, or the identity (step_name.h) whose newest step weak is from
	 * now on (store_step_name_put), in the same transaction. */
	const struct digest *step_ident;
};

/* Stores the entry in one BEGIN IMMEDIATE transaction (replacing an equal
 * strong key). Keeps at most max_pathsets path sets per weak key (0: no
 * bound), dropping the least recently used ones with their results. Fails
 * (code ENOENT) without storing anything if a blob of the entry is missing. */
int store_put_entry(struct store *s, const struct store_entry *entry, unsigned max_pathsets,
                    struct error *e);
/* store_put_entry for n entries in one transaction: all are stored or none
 * (imports, and the benchmark's store of a million entries). */
int store_put_entries(struct store *s, const struct store_entry *entries, size_t n,
                      unsigned max_pathsets, struct error *e);
/* What the entry of a step about to run is expected to write, beyond the
 * rows every entry writes (store_prepare_entry_statements): */
enum {
	STORE_ENTRY_DUPLICATE = 1 << 0, /* a duplicate key row (store_entry.duplicate) */
	STORE_ENTRY_NEW_STEP = 1 << 1,  /* its weak key had no path set at lookup */
	STORE_ENTRY_AGAIN = 1 << 2,     /* its strong key is probably stored already */
};
/* Prepares the statements store_put_entry runs for an entry that writes
 * what (above), which it would prepare at their first use (~0.3 ms for a
 * compile's entry, 12 to 50 us a statement), for a thread that holds s
 * while its owner waits for something else (a step that runs). A wrong
 * guess costs time only: a statement not prepared here is prepared at its
 * first use, one prepared and not run is CPU spent for nothing. Nothing
 * when the index is not open or s is read-only; errors are found again at
 * first use. */
void store_prepare_entry_statements(struct store *s, unsigned what);

/* An entry that may serve duplicates of its step (duplicate.h): under
 * dkey, the key of the step with the words of mask replaced, the keys of
 * its entry and the words masked (each NUL-terminated, in argv order). */
struct store_duplicate {
	struct digest dkey, shape;
	uint64_t mask;
	struct digest weak, pathset, strong;
	void *words; /* owned by what store_duplicate_get returns */
	size_t words_len;
	/* Set when the step may also serve compiles that differ from it in
	 * their define words (preprocessed_duplicate.h): pkey, the key of its
	 * argv with them removed and the words of pmask (over that argv)
	 * masked; pshape, the shape of that argv; defines, the words removed
	 * (each NUL-terminated, in argv order). */
	int has_pp;
	struct digest pkey, pshape;
	uint64_t pmask;
	void *defines; /* owned as words */
	size_t defines_len;
};
/* Records d (replacing one under the same dkey). */
int store_duplicate_put(struct store *s, const struct store_duplicate *d, struct error *e);
/* The masks recorded for shape, most recently recorded first, at most max,
 * into masks[0..*n). */
int store_duplicate_masks(struct store *s, const struct digest *shape, uint64_t *masks, size_t max,
                          size_t *n, struct error *e);
/* 1 and *out (free with store_duplicate_free) when dkey is recorded, 0 when
 * not, -1 on error. */
int store_duplicate_get(struct store *s, const struct digest *dkey, struct store_duplicate *out,
                        struct error *e);
void store_duplicate_free(struct store_duplicate *d);
/* The masks recorded for pshape (store_duplicate.pmask), as
 * store_duplicate_masks. */
int store_pp_duplicate_masks(struct store *s, const struct digest *pshape, uint64_t *masks,
                             size_t max, size_t *n, struct error *e);
/* The entries recorded under pkey, most recently recorded first, at most
 * max, into out[0..*n) (each freed with store_duplicate_free). */
int store_pp_duplicate_find(struct store *s, const struct digest *pkey, struct store_duplicate *out,
                            size_t max, size_t *n, struct error *e);

/* Best effort, never waits for the write lock: marks the path set and result
 * as used now and counts a hit. Returns 0 even when skipped because busy.
 * The mark usually goes to a log beside the index that the next write
 * transaction folds in (so a hit writes nothing to the index);
 * store_get_pathsets and eviction see it at once all the same. */
int store_touch_hit(struct store *s, const struct digest *weak, const struct digest *pathset,
                    const struct digest *strong);

/* Reads made between these two see one snapshot of the index and take its
 * shared lock once instead of once per query (the hit path makes a hundred
 * fingerprint lookups). Write transactions end the snapshot first; do not
 * hold one across a long wait, since it keeps the WAL from being reset. */
int store_snapshot_begin(struct store *s);
void store_snapshot_end(struct store *s);

/* Removes every entry and blob (and the fingerprint cache). Counters stay,
 * as with `ccache -C`; store_counters_zero resets them. */
int store_clear(struct store *s, struct error *e);

struct store_usage {
	uint64_t entries; /* results */
	uint64_t pathsets;
	uint64_t blobs;
	uint64_t blob_bytes; /* bytes on disk */
};
int store_usage(struct store *s, struct store_usage *out, struct error *e);

/* ---- eviction ---- */

/* Told as long work goes (eviction's phases: what, done of total items,
 * total 0 when not known in advance), for a progress display: the store
 * itself prints nothing. */
typedef void (*store_progress_fn)(void *ctx, const char *what, uint64_t done, uint64_t total);
void store_set_progress(struct store *s, store_progress_fn fn, void *ctx);

/* What store_evict removed (or, with STORE_EVICT_DRY_RUN, would remove). */
struct store_evict_report {
	uint64_t entries;      /* results removed */
	uint64_t blobs;        /* blob files removed */
	uint64_t bytes_freed;  /* bytes on disk of those blobs */
	uint64_t tmp_files;    /* abandoned temporary files removed */
	uint64_t entries_left; /* results afterwards */
	uint64_t bytes_left;   /* blob bytes on disk afterwards (as store_usage counts) */
	int skipped;           /* STORE_EVICT_NOWAIT and another process was evicting */
};

enum {
	STORE_EVICT_DRY_RUN = 1 << 0, /* count what would go; change nothing */
	/* Also collect what no index row accounts for: files in tmp/ and blob
	 * files without a row, both only when older than an hour (younger ones
	 * may belong to a store in flight), and fingerprint rows of blob files
	 * that are gone. Lists every blob directory: not for every step. */
	STORE_EVICT_SWEEP = 1 << 1,
	STORE_EVICT_NOWAIT = 1 << 2, /* return at once (skipped = 1) if another process evicts */
};

/* Removes blobs no result references, then entries (a result with its
 * blob references, its path set when no result is left under it, its step
 * when no path set is left) in least recently used order while the blob
 * bytes exceed max_bytes (0: no size bound) or the entry was last used more
 * than max_age_s seconds ago (0: no age bound); blob files no longer
 * referenced go with them. Work is done in short BEGIN IMMEDIATE
 * transactions (about 100 entries each), so concurrent steps wait at most
 * one batch for the write lock. Blob files are deleted inside the
 * transaction that drops their last reference: store_put_entry checks its
 * blobs under the same lock, so a store in flight either commits its
 * reference first (and the blob stays) or finds the blob gone and stores
 * nothing (ENOENT). One process evicts at a time (a lock file). Afterwards
 * the size estimate of store_evict_due is reset to the real size. */
int store_evict(struct store *s, uint64_t max_bytes, int64_t max_age_s, unsigned flags,
                struct store_evict_report *out, struct error *e);

/* Whether eviction is due, as bits: */
enum {
	STORE_EVICT_DUE_SIZE = 1 << 0,  /* the size estimate passed max_bytes */
	STORE_EVICT_DUE_SWEEP = 1 << 1, /* the last sweep is older than sweep_interval_s */
};
/* For the miss path, after an entry of about `bytes` bytes (uncompressed:
 * an overestimate of what it adds on disk) was stored: adds them to a
 * running estimate of the cache's size kept in a counter (no index scan,
 * no lock; the estimate is recomputed from the index when it is 0, as
 * after `stats -z`) and says whether eviction is due. max_bytes 0: no size
 * bound; sweep_interval_s 0: no periodic sweep. */
unsigned store_evict_due(struct store *s, uint64_t bytes, uint64_t max_bytes,
                         int64_t sweep_interval_s);

/* ---- inspection (explain, show, log): never on the hit path ---- */

struct store_step {
	struct digest weak;
	void *body; /* as given to store_put_entry; owned */
	size_t len;
	int64_t created_ns;
};

/* The step description stored under weak: 1 and a malloc'd body, 0 when
 * unknown, -1 on error. */
int store_get_step(struct store *s, const struct digest *weak, void **body, size_t *len,
                   struct error *e);
/* The most recently recorded steps, newest first, at most limit. */
int store_recent_steps(struct store *s, size_t limit, struct store_step **out, size_t *n,
                       struct error *e);
void store_steps_free(struct store_step *steps, size_t n);

/* One path set's body by weak key and digest: 1, 0 when unknown, -1. */
int store_get_pathset(struct store *s, const struct digest *weak, const struct digest *pathset,
                      void **body, size_t *len, struct error *e);

struct store_result_row {
	struct digest strong, weak, pathset;
	void *body; /* owned */
	size_t len;
	int64_t created_ns, last_used_ns;
	int64_t hits;
	int64_t duration_ms;
};

/* Results recorded under one path set of a weak key, newest first. */
int store_results_for_pathset(struct store *s, const struct digest *weak,
                              const struct digest *pathset, struct store_result_row **out,
                              size_t *n, struct error *e);
/* Results that reference the blob with this digest (an output, stdout or
 * stderr), newest first. */
int store_results_with_blob(struct store *s, const struct digest *blob,
                            struct store_result_row **out, size_t *n, struct error *e);
/* At most limit results whose stored body contains the bytes needle (a
 * path's base name: what may have written a file), newest first. */
int store_results_naming(struct store *s, const void *needle, size_t len, size_t limit,
                         struct store_result_row **out, size_t *n, struct error *e);
/* At most limit results that reference the blob with this digest and whose
 * stored body contains the bytes needle (an output path's base name),
 * newest first: the results that may restore that content at that path. */
int store_results_with_blob_naming(struct store *s, const struct digest *blob, const void *needle,
                                   size_t len, size_t limit, struct store_result_row **out,
                                   size_t *n, struct error *e);
void store_result_rows_free(struct store_result_row *rows, size_t n);

/* ---- steps found nondeterministic (cachet run --verify) ---- */

/* Records that the step with this weak key gave different outputs on
 * identical runs; summary says how (one line). */
int store_mark_nondeterministic(struct store *s, const struct digest *weak, const char *summary,
                                struct error *e);
/* 1 and (if summary_out) a malloc'd summary and the times seen, when the
 * step is marked; 0 when not; -1 on error. */
int store_nondeterministic(struct store *s, const struct digest *weak, char **summary_out,
                           int64_t *count_out, struct error *e);

/* ---- for cachet report (src/store/report_queries.c) ---- */

/* One stored result with the step that made it. */
struct store_sized_result {
	struct digest strong, weak;
	uint64_t size; /* uncompressed bytes of the blobs it references */
	int64_t hits;
	int64_t duration_ms; /* how long the recorded run took */
	int64_t created_ns, last_used_ns;
	void *step_body; /* as given to store_put_entry (step_decode); owned, NULL if missing */
	size_t step_len;
};
/* The limit largest results, largest first. *out malloc'd (free with
 * store_sized_results_free); *n may be 0. */
int store_largest_results(struct store *s, size_t limit, struct store_sized_result **out, size_t *n,
                          struct error *e);
void store_sized_results_free(struct store_sized_result *rows, size_t n);

/* One step marked by store_mark_nondeterministic. */
struct store_nondet_step {
	struct digest weak;
	char *summary; /* owned */
	int64_t count; /* times a verification found a difference */
	int64_t first_seen_ns, last_seen_ns;
	void *step_body; /* owned, NULL when the step's description is gone */
	size_t step_len;
};
/* Steps marked nondeterministic, most recently seen first, at most limit.
 * *out malloc'd (free with store_nondet_steps_free). */
int store_nondet_steps(struct store *s, size_t limit, struct store_nondet_step **out, size_t *n,
                       struct error *e);
void store_nondet_steps_free(struct store_nondet_step *rows, size_t n);

/* ---- the step log: one line per step, bounded, cheap to append ---- */

struct store_log_entry {
	int64_t time_ms; /* unix milliseconds */
	char *result;    /* "hit", "miss", "uncacheable" */
	char *reason;    /* may be "" */
	int64_t duration_ms;
	char *cwd;
	char *command; /* already redacted by the caller */
};

/* Appends one entry with a single O_APPEND write (lines of parallel steps
 * stay whole). When the log passes max_bytes it is renamed to steplog.1
 * (replacing the previous one), so the log never holds more than about
 * twice max_bytes. Failures are ignored: a log line is not worth a build. */
void store_log_append(struct store *s, const struct store_log_entry *entry, uint64_t max_bytes);
/* The last n entries, oldest first. Strings in *out are owned by it. */
int store_log_read(struct store *s, size_t n, struct store_log_entry **out, size_t *count,
                   struct error *e);
void store_log_free(struct store_log_entry *entries, size_t n);

/* ---- step identities (step_name.h): the newest weak key of each ---- */

/* Records weak as the newest step of identity ident, without waiting for
 * a busy index (then nothing is written). 1 when written. */
int store_step_name_put(struct store *s, const struct digest *ident, const struct digest *weak);
/* 1 and *weak when a step of identity ident was recorded, else 0. */
int store_step_name_get(struct store *s, const struct digest *ident, struct digest *weak);

/* ---- fingerprint cache: file_id -> content digest, shared by every path set ---- */

/* Returns 1 and the digest when path has an entry with exactly this id,
 * 0 when not, -1 on error. */
int store_fp_get(struct store *s, const char *path, const struct file_id *id, struct digest *out);
/* Queues an entry; written by store_fp_flush (and by store_close) in one
 * short transaction that does not wait for a busy lock. The caller decides
 * whether a digest is trustworthy (the racy-timestamp margin). */
void store_fp_put(struct store *s, const char *path, const struct file_id *id,
                  const struct digest *d);
void store_fp_flush(struct store *s);

/* ---- counters ---- */

/* Named 64-bit counters in a small shared file, updated with atomic adds on
 * a shared mapping, outside the index lock, so parallel hits never queue.
 * Names are at most 47 bytes; at most 128 distinct names per store.
 * Failures are ignored (a counter is not worth failing a build). */
void store_count(struct store *s, const char *name, int64_t delta);
struct store_counter {
	char name[48];
	int64_t value;
};
/* Snapshot of every counter; *out malloc'd. */
int store_counters(struct store *s, struct store_counter **out, size_t *n, struct error *e);
void store_counters_zero(struct store *s);

/* ---- memos (memo.c) ---- */

/* The last hit or store of a step, answered without the index: a copy of
 * one path set, its strong key and result, and the fingerprints of the
 * files it reads. Named by the caller; a stale or damaged memo is only a
 * slower hit. */
struct store_memo_fp {
	char *path;
	struct file_id id;
	struct digest digest;
};

struct store_memo {
	struct digest weak, pathset, strong;
	void *pathset_body;
	size_t pathset_len;
	void *result_body;
	size_t result_len;
	void *dirs; /* opaque to the store: directory fingerprints (dirfp.h) */
	size_t dirs_len;
	struct store_memo_fp *fps;
	size_t nfps;
	/* Decoded: the bytes read, which the three bodies above are parts of
	 * (store_memo_free frees it); NULL in a memo being written. */
	void *image;
	size_t image_mapped; /* the length of image when it is a read-only mapping */
	char *fp_paths;      /* decoded: the strings fps[].path point into, one block */
};

/* 1 and *out (store_memo_free it), 0 when there is none, -1 with e set when
 * it cannot be read or is damaged (a damaged memo is removed). */
int store_memo_read(struct store *s, const struct digest *name, struct store_memo *out,
                    struct error *e);
int store_memo_write(struct store *s, const struct digest *name, const struct store_memo *m,
                     struct error *e);
/* 1 when store_memo_write keeps memos here: a writable store, not on a
 * network file system (where hits are logged in the index itself and no
 * memo is read). Whatever only serves a memo is not worth collecting
 * elsewhere. */
int store_keeps_memos(const struct store *s);
void store_memo_free(struct store_memo *m);
/* The file's bytes: a SHA-256 over the rest ends them. Decoding takes
 * untrusted bytes (0, or -1 with *m to be freed all the same). */
void store_memo_encode(const struct store_memo *m, struct buf *out);
int store_memo_decode(const void *data, size_t len, struct store_memo *m);
/* Removes every memo: after clearing, eviction, or a step found
 * nondeterministic, whose memo would skip the index's verdict. */
void store_memo_drop_all(struct store *s);

#endif
