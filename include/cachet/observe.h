/*
 * Observations and their values. An observation is one lookup the step made
 * (kind, the flags that shaped it, the path); its value is what the same
 * lookup, repeated through the kernel, finds now. Recording and evaluating
 * use the one function observe_value, so the two can never drift apart.
 *
 * Values are short byte strings:
 *   'F' digest[32]                  READ: a regular file's content
 *   'X' digest[32] perm[2]          EXEC: content and permission bits
 *   'S' type[1] perm[2] size[8]     STAT: an existing path (size 0 for non-files)
 *   's' type[1] perm[2] size[8] mtime_ns[8]
 *                                   STAT with OBS_F_MTIME of a regular file
 *   'T' type[1]                     READ/EXEC of something not a regular file
 *   'L' digest[32]                  LIST: sorted names and types, minus the step's own
 *   'R' target                      READLINK
 *   'E' errno[4]                    any lookup that failed
 *   'B' path                        BASE: the path itself (portable.h)
 *   'x' digest[32]                  XATTR: sorted names, each with its value
 *   'P' text                        FACT: the fact, readable ("uid 1000 euid ...")
 *   'r' digest[32]                  CREATED: a symlink, by its target's digest
 *   'A'                             CREATED: as the step found it (see there)
 * observe_value never opens a FIFO, socket or device, whatever a path set says.
 */
#ifndef CACHET_OBSERVE_H
#define CACHET_OBSERVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include "cachet/buf.h"
#include "cachet/digest.h"
#include "cachet/fileid.h"

enum obs_kind {
	OBS_READ = 1,
	OBS_EXEC = 2,
	OBS_STAT = 3,
	OBS_LIST = 4,
	OBS_READLINK = 5,
	/* Not a lookup: a base (portable.h) whose real path a run's outputs
	 * hold. Its path is the base's, which evaluation turns into the
	 * current checkout's; its value is that path as text, so the run
	 * holds only where the base lies at the same real path. */
	OBS_BASE = 6,
	/* The extended attributes of a path: every name and value. */
	OBS_XATTR = 7,
	/* Not a lookup: a fact of the process that the step asked the kernel
	 * for (trace.h TRACE_FACT_*: host name, ids, CPU set, a resource
	 * limit). Its path is the fact's name; its value ('P') the caller's
	 * fact now. */
	OBS_FACT = 8,
	/* A probe (stat, access, failed open, readlink) of a path the step
	 * then created, replaced or removed, or a directory or symlink it made
	 * where there was none. Its one "excluded" string
	 * (observe_created_describe) holds the probe's kind (OBS_CREATED_*),
	 * the value that probe found, in hex, and what the entry restores
	 * there: "F<sha256 hex> <mode>", "L<target>", "D<mode>", or "-".
	 * Its value is 'A' where the path is absent, holds that, or
	 * looks to the probe as it did to the step ("absent, or what
	 * this entry restores there", or the state the run replaced); else
	 * what the probe finds: 'S' (no mtime), an 'E' errno, or 'r' for a
	 * symlink. A regular file holds "that" when its content is this
	 * entry's output or another output that this cache restores at the
	 * path (digest_cache.held): a compile hits over the object of another
	 * version of its source, which a branch switch or an undone edit
	 * leaves, while a file the user wrote or edited there (`[ -e f ] ||
	 * cp`, `cp -n`) is what the step would find, and misses. A directory,
	 * symlink or exclusively created file made with no probe first
	 * (OBS_CREATED_MADE) is never "exactly": mkdir, symlink and O_EXCL
	 * fail where the path exists. */
	OBS_CREATED = 9,
};

#define OBS_CREATED_STAT     'S'
#define OBS_CREATED_READLINK 'R'
/* A directory or symlink made where there was none, or a file made by a
 * call that fails where the path exists (trace.h TRACE_F_EXCLUSIVE), with
 * no probe first: looked at as lstat does. */
#define OBS_CREATED_MADE 'M'

enum {
	OBS_F_NOFOLLOW = 1 << 0,
	/* STAT: a regular file's mtime is part of the value ('s'): the step
	 * stat'ed the file without reading it, and may have judged it by its
	 * time (make, `[ a -nt b ]`), or copied its time onto an output. */
	OBS_F_MTIME = 1 << 4,
};

/* The fingerprint -> digest cache that every path set shares. A content
 * digest is trusted without reading the file while its stat fingerprint is
 * unchanged. Implemented over the store by the caller (cli), so that this
 * layer knows nothing of SQLite. */
struct digest_cache {
	/* 1 and *out when path has an entry with exactly id, else 0 */
	int (*get)(void *ctx, const char *path, const struct file_id *id, struct digest *out);
	void (*put)(void *ctx, const char *path, const struct file_id *id, const struct digest *d);
	void *ctx;
	/* 1 when d is the content of an output that an entry of this cache
	 * restores at path: a file there with that content was made by a step
	 * or a hit, not by a user's edit (OBS_CREATED). NULL: never. */
	int (*held)(void *ctx, const char *path, const struct digest *d);
	/* Optional (NULL: none). note: a digest this process just took of
	 * path at exactly id, which put was not told (id too recent to be
	 * kept, or the file system not trusted with it). seen: 1 and *out
	 * when this process took or trusted path's digest at exactly id
	 * (get's, put's and note's alike): for the restore of an output,
	 * which rewrites the file unless it holds the content already, so
	 * that the lookup's hash of it serves there too. A file that changes
	 * between the two without its id moving changed during the hit: as
	 * if after it, as within the restore's own hash. Never for a key. */
	void (*note)(void *ctx, const char *path, const struct file_id *id, const struct digest *d);
	int (*seen)(void *ctx, const char *path, const struct file_id *id, struct digest *out);
};

/* How close to "now" a file may have changed and still have its digest
 * cached: inode times come from a coarse clock (and from the server's on
 * NFS), so a write in the same tick as the hash would go unnoticed. */
#define DIGEST_CACHE_MARGIN_NS (1000LL * 1000 * 1000)

/* 1 when id's mtime and ctime are both older than DIGEST_CACHE_MARGIN_NS:
 * a fingerprint of it can be trusted to move with any later change. */
int file_id_settled(const struct file_id *id);

/* Content digest of the regular file at path (following symlinks unless
 * nofollow) through the cache. Returns 0; or -1 with errno set (ENOENT...,
 * EINVAL when not a regular file). st_out, if not NULL, gets the stat. */
int digest_cached(const char *path, int nofollow, struct digest_cache *dc, struct digest *out,
                  struct file_id *id_out);

/* Appends the current value of (kind, flags, path) to out. For OBS_LIST,
 * names in `excluded` (sorted, NULL-terminated, may be NULL) are left out:
 * they are the step's own creations and removals. */
void observe_value(enum obs_kind kind, unsigned flags, const char *path,
                   const char *const *excluded, struct digest_cache *dc, struct buf *out);

/* observe_value that also appends, for OBS_LIST, the listing itself to
 * detail: for each name in sorted order, one type byte (d_type) and the name
 * with its NUL. explain uses it to say which names appeared or went. */
void observe_value_detail(enum obs_kind kind, unsigned flags, const char *path,
                          const char *const *excluded, struct digest_cache *dc, struct buf *out,
                          struct buf *detail);

/* An lstat made: the path, its errno or 0, and what it found. */
typedef void (*observe_looked_fn)(void *ctx, const char *path, int err, const struct stat *st);

/* What one path's lookups found, shared by consecutive observations of the
 * same path (a path set sorts them together: a header is typically read,
 * stat'ed and readlink'ed). Start zeroed; it resets itself when the path
 * changes. Values come out exactly as without it: lstat and stat differ
 * only when the last component is a symlink, and readlink fails as lstat
 * does, or with EINVAL on anything but a symlink. */
struct observe_memo {
	const char *path;
	int have_lstat, lstat_err;
	int have_stat, stat_err;
	struct stat lst, st;
	/* The content digest of the file last hashed at path, and the
	 * identity it had then: a path created by the step is probed several
	 * times (each probe its observation), and a file that changed since
	 * has another identity. Within one evaluation only: this is no
	 * fingerprint cache, which keeps settled files alone. */
	int have_digest;
	struct file_id digest_id;
	struct digest digest;
	/* The loader's cache file was found as last read in this evaluation:
	 * its other ldcache facts (one per soname, ten for a compile) skip
	 * the stat. An evaluation is not atomic anyway: its facts are then
	 * all read at the first one, which ldconfig could as well have
	 * followed. */
	int ldcache_checked;
	/* 1 when the evaluation knows path absent without a lookup (a
	 * vouched, recorded stat of it that found no entry): a which fact
	 * skips that candidate as execvp would (NULL: none). */
	int (*known_absent)(void *ctx, const char *path);
	void *known_absent_ctx;
	/* Told of each lstat the memo takes (its errno or 0, and what it
	 * found), or NULL: a hit's memo takes its directory fingerprints from
	 * the lookups its evaluation made (dirfp_note_lookup). */
	observe_looked_fn looked;
	void *looked_ctx;
};

/* stat (or lstat, with nofollow) of path through the memo (NULL: none),
 * which it resets first when it holds another path: 0 or -1 with errno. */
int observe_stat(struct observe_memo *m, const char *path, int nofollow, struct stat *st);

/* observe_value_detail through a memo (NULL: none). */
void observe_value_memo(enum obs_kind kind, unsigned flags, const char *path,
                        const char *const *excluded, struct digest_cache *dc,
                        struct observe_memo *memo, struct buf *out, struct buf *detail);

/* One entry of a directory listing. */
struct listing_entry {
	const char *name;
	unsigned char type; /* d_type */
};

/* Appends the 'L' value of a directory holding entries (in any order:
 * sorted here, in place), leaving out "." and ".." and the names in
 * excluded (NULL-terminated, may be NULL); detail as observe_value_detail's
 * (may be NULL). Recording (from the entries the step's getdents calls
 * returned) and evaluation (from a readdir now) both use it. */
void observe_listing_value(struct listing_entry *entries, size_t n, const char *const *excluded,
                           struct buf *out, struct buf *detail);

/* OBS_FACT names beyond the kernel's (trace.h TRACE_FACT_*), which
 * recording adds for the variables keyed by effect (step.h
 * env_effect_facts), and which hold in the caller's environment, which is
 * the step's:
 *   "env:NAME"    the variable's value ('P' "NAME=<sha256 hex>", or
 *                 "NAME unset"), make's own without their job parts: a
 *                 digest, so that no path set carries a secret's value;
 *   "which:NAME"  where PATH leads the program NAME now: the first
 *                 "<entry>/NAME" that is an executable regular file, as
 *                 execvp finds it ('P' path, or "NAME not found");
 *   "ldcache:NAME" what the loader's cache (/etc/ld.so.cache) maps the
 *                 soname NAME to now (ldcache.h ldcache_lookup), for a
 *                 step whose loaders searched for NAME: an 'E' value when
 *                 the cache cannot be read or parsed;
 *   "make-vars"   make's command-line variables, as MAKEFLAGS names them
 *                 and the environment holds them ('P' "make-vars <sha256
 *                 hex>", or "no make-vars"), for a step that ran a program
 *                 that may read them (step.h env_closed_programs). */
#define OBSERVE_FACT_MAKE_VARS "make-vars"
#define OBSERVE_FACT_ENV       "env:"
#define OBSERVE_FACT_WHICH     "which:"
#define OBSERVE_FACT_LDCACHE   "ldcache:"

/* 1 when name is one of the facts OBS_FACT knows (trace.h TRACE_FACT_*). */
int observe_fact_known(const char *name);
/* Appends the 'P' value of fact `name` now (the calling process's), or an
 * 'E' value when it cannot be had. */
void observe_fact_value(const char *name, struct buf *out);
/* observe_fact_value within an evaluation (memo: as observe_value_memo). */
void observe_fact_value_memo(const char *name, struct observe_memo *memo, struct buf *out);

/* The parts of an OBS_CREATED observation (see there): what the entry
 * restores at the path, appended to out, and the values of the state a
 * probe saw, appended to out. */
void observe_created_file(struct buf *out, const struct digest *d, unsigned mode);
void observe_created_symlink(struct buf *out, const char *target);
void observe_created_dir(struct buf *out, unsigned mode);
/* The observation's string: probe kind, the value it saw, expected. */
void observe_created_describe(struct buf *out, char probe, const void *seen, size_t seen_len,
                              const char *expected);
void observe_created_link_value(struct buf *out, const struct digest *target);
void observe_created_stat_value(struct buf *out, unsigned st_mode, uint64_t size);

/* 1 when path holds exactly what the OBS_CREATED observation whose string
 * is desc says the entry restores there (a directory or symlink the step
 * made included): its output is in place, as a run or a hit leaves it.
 * Not a value: show asks it, whose question is whether an artifact is what
 * its step made, not whether the step would hit again. */
int observe_created_in_place(const char *path, const char *desc, struct digest_cache *dc);

/* Human-readable rendering of a value, for explain and show. */
void observe_describe_value(const void *value, size_t len, struct buf *out);

#endif
