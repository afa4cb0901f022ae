/*
 * The tracer's event log (src/trace/events.c): an observation made again
 * is dropped, one that differs in anything it says is kept, the paths read
 * are known, and detaching hands every event over.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/events.h"

static struct trace_event event(enum trace_event_kind kind, const char *path)
{
	struct trace_event ev;
	memset(&ev, 0, sizeof ev);
	ev.kind = kind;
	ev.path = (char *)path;
	ev.pid = 1;
	return ev;
}

static void an_observation_made_again_is_dropped(void **state)
{
	(void)state;
	struct event_log l;
	event_log_init(&l);
	struct trace_event ev = event(TRACE_READ, "/usr/include/stdio.h");
	ev.id.dev = 1;
	ev.id.ino = 2;
	ev.id.size = 3;
	ev.id.mtime_ns = 4;
	ev.id.ctime_ns = 5;
	ev.id.mode = 0100644;
	assert_int_equal(event_log_add(&l, &ev), 1);
	/* Another process, the same observation. */
	ev.pid = 2;
	assert_int_equal(event_log_add(&l, &ev), 0);
	/* A path in the caller's buffer, not the log's. */
	char copy[64];
	strcpy(copy, ev.path);
	ev.path = copy;
	assert_int_equal(event_log_add(&l, &ev), 0);
	assert_int_equal(l.n, 1);
	assert_ptr_not_equal(l.ev[0].path, copy);
	event_log_free(&l);
}

static void an_observation_that_differs_in_anything_is_kept(void **state)
{
	(void)state;
	struct event_log l;
	event_log_init(&l);
	struct trace_event base = event(TRACE_READ, "/src/a.h");
	base.id.ino = 7;
	base.id.mode = 0100644;
	assert_int_equal(event_log_add(&l, &base), 1);
	struct trace_event ev;
	size_t kept = 1;
#define KEPT(change)                                                                               \
	do {                                                                                       \
		ev = base;                                                                         \
		change;                                                                            \
		assert_int_equal(event_log_add(&l, &ev), 1);                                       \
		assert_int_equal(event_log_add(&l, &ev), 0);                                       \
		kept++;                                                                            \
	} while (0)
	KEPT(ev.kind = TRACE_EXEC);
	KEPT(ev.flags = TRACE_F_NOFOLLOW);
	KEPT(ev.err = ENOENT);
	KEPT(ev.id.dev = 9);
	KEPT(ev.id.ino = 8);
	KEPT(ev.id.size = 1);
	KEPT(ev.id.mtime_ns = 1);
	KEPT(ev.id.ctime_ns = 1);
	KEPT(ev.id.mode = 0100755);
	KEPT(ev.has_seen = 1);
	KEPT(ev.seen_unknown = 1);
	KEPT(ev.path = "/src/a.h2");
	KEPT(ev.path = "/src/a");
#undef KEPT
	/* A PROBE's fingerprint and value seen are not part of it: the first
	 * lookup's stays, and the end-of-run check judges it. */
	struct trace_event probe = event(TRACE_PROBE, "/src/b.h");
	probe.has_seen = 1;
	probe.id.ino = 1;
	assert_int_equal(event_log_add(&l, &probe), 1);
	probe.id.ino = 2;
	probe.seen.b[0] = 1;
	assert_int_equal(event_log_add(&l, &probe), 0);
	assert_int_equal(l.n, kept + 1);
	event_log_free(&l);
}

static void the_paths_read_are_known(void **state)
{
	(void)state;
	struct event_log l;
	event_log_init(&l);
	struct trace_event probe = event(TRACE_PROBE, "/a");
	assert_int_equal(event_log_add(&l, &probe), 1);
	assert_false(event_log_was_read(&l, "/a"));
	struct trace_event read = event(TRACE_READ, "/a");
	assert_int_equal(event_log_add(&l, &read), 1);
	read.id.size = 5; /* read again, changed: still one path */
	assert_int_equal(event_log_add(&l, &read), 1);
	assert_true(event_log_was_read(&l, "/a"));
	assert_false(event_log_was_read(&l, "/b"));
	assert_false(event_log_was_read(&l, "/a/"));
	event_log_free(&l);
}

/* Thousands of paths: the sets grow and forget nothing. */
static void many_events_are_each_kept_once(void **state)
{
	(void)state;
	struct event_log l;
	event_log_init(&l);
	char path[64];
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 5000; i++) {
			snprintf(path, sizeof path, "/usr/include/h%d.h", i);
			struct trace_event ev = event(i % 2 ? TRACE_READ : TRACE_PROBE, path);
			assert_int_equal(event_log_add(&l, &ev), round == 0);
		}
	assert_int_equal(l.n, 5000);
	for (int i = 0; i < 5000; i++) {
		snprintf(path, sizeof path, "/usr/include/h%d.h", i);
		assert_int_equal(event_log_was_read(&l, path), i % 2);
	}
	size_t n;
	struct trace_event *ev = event_log_detach(&l, &n);
	assert_int_equal(n, 5000);
	assert_string_equal(ev[4999].path, "/usr/include/h4999.h");
	/* Detached, the log starts over. */
	assert_false(event_log_was_read(&l, "/usr/include/h1.h"));
	struct trace_event again = event(TRACE_PROBE, "/usr/include/h0.h");
	assert_int_equal(event_log_add(&l, &again), 1);
	for (size_t i = 0; i < n; i++)
		free(ev[i].path);
	free(ev);
	event_log_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(an_observation_made_again_is_dropped),
	    cmocka_unit_test(an_observation_that_differs_in_anything_is_kept),
	    cmocka_unit_test(the_paths_read_are_known),
	    cmocka_unit_test(many_events_are_each_kept_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
