/*
 * Hashing a step's big inputs while it runs. A miss's record needs the
 * digest of every file the step read or executed; with a cold cache that is
 * most of cc1 (33 MB) and the libraries, some 35 ms after a small compile
 * ends, and 150 MB for nvcc's toolchain. The step is held on the tracer's
 * CPU (placement.h), so the other CPUs are free while it runs: the tracer
 * names each big input as it sees it (trace_spec.on_input), and a worker
 * thread looks it up in the digest cache, hashing it if it is not there,
 * which leaves the digest where the record looks first. A warm cache costs
 * the worker one lookup per file.
 *
 * A digest is cached only as digest_cached caches it (the file unchanged
 * while hashed, its times older than the cache margin), so what the worker
 * leaves is what the record would have computed itself.
 */
#ifndef CACHET_PREFETCH_H
#define CACHET_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#include "cachet/observe.h"

/* Smaller files cost the record less than handing them over costs the
 * tracer: headers are a few KB, the toolchain's files megabytes. */
#define PREFETCH_MIN_SIZE ((uint64_t)256 * 1024)
/* A run that fails waits for the file being hashed, which it would not
 * have hashed at all: past this size (0.2 s of hashing) the record is left
 * to hash the file, when there is a record. */
#define PREFETCH_MAX_SIZE ((uint64_t)256 * 1024 * 1024)

struct prefetch;

/* A prefetcher hashing through dc, which is its worker's alone until
 * prefetch_finish. NULL when this process may use a single CPU: the worker
 * would only take it from the step. Its thread starts with the first path,
 * on the CPUs this process may use now (before the tracer pins itself). */
struct prefetch *prefetch_new(struct digest_cache *dc);
/* Runs fn(arg) once on the worker, the first time it has nothing queued
 * while the step runs: work of the caller's that the worker's resources
 * allow (run.c: the store's statements, while the worker holds the store
 * through dc). Not at all when the worker never starts or the step ends
 * first. Before the first prefetch_add. */
void prefetch_when_idle(struct prefetch *p, void (*fn)(void *arg), void *arg);
/* trace_spec.on_input: queues path, once, unless it is larger than
 * PREFETCH_MAX_SIZE; ctx is the prefetch. */
void prefetch_add(void *ctx, const char *path, uint64_t size);
/* Tells the worker to end as prefetch_finish says, without waiting for
 * it: its thread wakes and exits while the caller ends its other ones
 * (each wake-up and exit is ~0.2 ms of a thread that slept). Once; NULL:
 * nothing. */
void prefetch_close(struct prefetch *p, int keep);
/* Ends the worker and frees p (NULL: nothing). With keep, it first hashes
 * what is queued, which the record would hash anyway; without (the run
 * will not be stored), it ends after the file it is hashing. Returns how
 * many files the worker looked up. */
size_t prefetch_finish(struct prefetch *p, int keep);

#endif
