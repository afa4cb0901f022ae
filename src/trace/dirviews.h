/*
 * The directory views of one traced run: which entries the step's getdents
 * calls returned, assembled into complete passes (trace.h, struct
 * trace_listing), so that a listing is keyed on what the step saw and not
 * on what the directory holds once the step has ended (a sibling under
 * make -j adds files to shared directories all the time).
 *
 * A pass is followed by stream position, not by descriptor: a call that
 * starts at the position where a pass in progress stopped continues it,
 * whoever makes it (a thread sharing the descriptor, a child that inherited
 * it); a call at position 0 starts a new pass (open, rewinddir, lseek to
 * 0). Positions are the kernel's (d_off of the last record returned), so a
 * descriptor number reused for another directory, or a seek elsewhere,
 * never extends a pass with entries from another stream: a call at a
 * position no pass waits for is a partial read.
 */
#ifndef CACHET_TRACE_DIRVIEWS_H
#define CACHET_TRACE_DIRVIEWS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "cachet/strmap.h"
#include "cachet/trace.h"

/* What the tracer may hold of names in passes and views: beyond it, a
 * directory's reads count as partial (src/key then checks the directory
 * the conservative way) instead of the tracer growing without bound. */
#define DIR_VIEWS_MAX_BYTES (64u << 20)
/* Distinct complete views of one directory kept; more mark it partial. */
#define DIR_VIEWS_MAX_VIEWS 16

struct dir_pass;

struct dir_views {
	struct strmap dirs;    /* path -> struct trace_listing * (being built) */
	struct strmap waiting; /* "pos:path" -> struct dir_pass * awaiting that position */
	struct dir_pass *all;  /* every pass, for the end of the run */
	size_t bytes;          /* names held, against DIR_VIEWS_MAX_BYTES */
};

void dir_views_init(struct dir_views *v);
void dir_views_free(struct dir_views *v);

/* At the entry of a getdents of the directory at path: st is its fstat (NULL
 * when it could not be taken); the first one is kept as first_id. */
void dir_views_entry(struct dir_views *v, const char *path, const struct stat *st);

/* At the exit of that call, which started at stream position pos (pos_known
 * 0: the position could not be read) and returned buf, len bytes of records
 * (is64: getdents64's layout); len 0 is the end of the directory. */
void dir_views_exit(struct dir_views *v, const char *path, int pos_known, uint64_t pos,
                    const void *buf, size_t len, int is64);

/* The end of the run: passes still in progress become partial reads (the
 * step stopped reading before the end). Call once, before dir_views_take. */
void dir_views_finish(struct dir_views *v);

/* The listing of path, handed over (the caller owns it; later calls for the
 * same path return NULL), or NULL when no getdents of it was seen. */
struct trace_listing *dir_views_take(struct dir_views *v, const char *path);

#endif
