/*
 * The event log of one traced run, with the sets that keep it small and the
 * TOUCH rule ("first change of a path only") cheap to apply:
 *   - exact duplicates (same kind, flags, err, path and, for READ/EXEC, the
 *     same fingerprint) are dropped: the consumer would dedup them anyway,
 *     and gcc repeats the same readlink hundreds of times;
 *   - touched: the paths that already have their TRACE_TOUCH;
 *   - read: the paths with a TRACE_READ, whose content is hashed at their
 *     first change (has_pre_digest).
 * The log owns every event's path.
 */
#ifndef CACHET_TRACE_EVENTS_H
#define CACHET_TRACE_EVENTS_H

#include <stddef.h>

#include <stdint.h>

#include "cachet/hash_index.h"
#include "cachet/strmap.h"
#include "cachet/trace.h"

struct event_log {
	struct trace_event *ev;
	size_t n, cap;
	/* Indexes over ev, so that a lookup builds no key string and an
	 * addition copies nothing: the events event_log_add kept, by all they
	 * say; the first TRACE_READ of each path, by path. */
	struct hash_index seen, read;
	struct strmap touched; /* path -> (void *)1 */
	size_t touches;        /* TRACE_TOUCH events so far */
};

void event_log_init(struct event_log *l);
/* Frees the sets; frees the events too unless they were detached. */
void event_log_free(struct event_log *l);

/* Appends a copy of ev (its path copied) unless an exact duplicate was
 * logged before. Returns 1 when appended, 0 when dropped. TRACE_TOUCH
 * events go through event_log_touch instead. */
int event_log_add(struct event_log *l, const struct trace_event *ev);

int event_log_was_touched(const struct event_log *l, const char *path);
int event_log_was_read(const struct event_log *l, const char *path);

/* Appends a TRACE_TOUCH (caller checked event_log_was_touched) and marks
 * the path touched. */
void event_log_touch(struct event_log *l, const struct trace_event *ev);

/* Appends the TRACE_FINAL events (trace.h): the state of every touched
 * path, and of every entry beneath a directory moved into place, now. Called
 * once, when the step's process tree has ended. */
void event_log_add_finals(struct event_log *l);

/* Moves the events out (to a trace_result); the log keeps no reference. */
struct trace_event *event_log_detach(struct event_log *l, size_t *n_out);

#endif
