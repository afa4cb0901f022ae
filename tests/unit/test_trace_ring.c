/*
 * The tracer's drain of the preload ring (src/trace/ring.c): a record whose
 * call has not returned when its thread is found gone is classified without
 * its result, and its slot stays taken until a result comes or the run
 * ends. The thread a record names is the preload library's copy of its
 * id, which may name another thread (a vfork child records with its
 * parent's): a writer still in its call must never write into the slot of
 * a later record.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <fcntl.h>

#include "cachet/trace.h"
#include "preload/ring_client.h"
#include "trace/tracer.h"

/* A tracer with a ring and no step: what ring_drain needs. */
static struct tracer *tracer_with_ring(struct trace_spec *spec)
{
	memset(spec, 0, sizeof *spec);
	struct tracer *tr = xcalloc(1, sizeof *tr);
	tr->spec = spec;
	tr->cwd_gen = 1;
	tr->ring_fd = -1;
	event_log_init(&tr->log);
	dir_views_init(&tr->views);
	tracee_table_init(&tr->tracees);
	buf_init(&tr->rec_paths);
	void *m =
	    mmap(NULL, RING_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	tr->ring = m;
	tr->ring->slots = RING_SLOTS;
	tr->ring->magic = RING_MAGIC;
	return tr;
}

static void tracer_free_ring(struct tracer *tr)
{
	munmap(tr->ring, RING_BYTES);
	tr->ring = NULL;
	free(tr->ring_pending);
	free(tr->ring_held);
	free(tr->rec_seen);
	hash_index_free(&tr->rec_index);
	buf_free(&tr->rec_paths);
	dir_views_free(&tr->views);
	event_log_free(&tr->log);
	tracee_table_free(&tr->tracees);
	free(tr);
}

static size_t events_of(const struct tracer *tr, const char *path)
{
	size_t n = 0;
	for (size_t i = 0; i < tr->log.n; i++)
		n += !strcmp(tr->log.ev[i].path, path);
	return n;
}

static void a_record_of_a_gone_thread_keeps_its_slot_until_its_result(void **state)
{
	(void)state;
	struct trace_spec spec;
	struct tracer *tr = tracer_with_ring(&spec);
	struct ring *r = tr->ring;
	/* Thread 7 is not traced (gone, or a copy naming another thread): its
	 * call has not returned. */
	uint64_t seq = 0;
	struct ring_slot *s = rc_record(r, 7, SYS_newfstatat, AT_FDCWD, (long)"/", 0, 0, "/", &seq);
	assert_non_null(s);
	ring_drain(tr, 0); /* pending: its call runs */
	assert_int_equal(tr->npending, 1);
	assert_true(r->tail == seq);
	ring_drain(tr, 0); /* its thread is gone: classified, the slot kept */
	assert_int_equal(tr->npending, 0);
	assert_int_equal(tr->nheld, 1);
	assert_int_equal(events_of(tr, "/"), 1);
	assert_true(r->tail == seq);
	/* A later record does not free it either. */
	uint64_t seq2 = 0;
	struct ring_slot *s2 =
	    rc_record(r, 7, SYS_newfstatat, AT_FDCWD, (long)"/tmp", 0, 0, "/tmp", &seq2);
	rc_done(s2, seq2, 0);
	ring_drain(tr, 0);
	assert_true(r->tail == seq);
	assert_int_equal(events_of(tr, "/tmp"), 1);
	/* The writer was alive after all: its result comes, the slot is freed,
	 * the record is not classified again. */
	rc_done(s, seq, 0);
	ring_drain(tr, 0);
	assert_int_equal(tr->nheld, 0);
	assert_true(r->tail == seq2 + 1);
	assert_int_equal(events_of(tr, "/"), 1);
	tracer_free_ring(tr);
}

static void the_end_of_the_run_frees_every_slot(void **state)
{
	(void)state;
	struct trace_spec spec;
	struct tracer *tr = tracer_with_ring(&spec);
	struct ring *r = tr->ring;
	uint64_t seq = 0;
	assert_non_null(rc_record(r, 7, SYS_newfstatat, AT_FDCWD, (long)"/", 0, 0, "/", &seq));
	ring_drain(tr, 0);
	ring_drain(tr, 0);
	assert_int_equal(tr->nheld, 1);
	ring_drain(tr, 1);
	assert_int_equal(tr->nheld, 0);
	assert_true(r->tail == seq + 1);
	assert_int_equal(events_of(tr, "/"), 1);
	tracer_free_ring(tr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(a_record_of_a_gone_thread_keeps_its_slot_until_its_result),
	    cmocka_unit_test(the_end_of_the_run_frees_every_slot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
