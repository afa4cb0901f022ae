/*
 * The upload half of the remote tier (src/engine/remote_upload.c): a miss
 * stored locally is packaged into a job in the spool (remote.h), and a
 * drainer sends the spool's jobs to every writable remote, blobs first, so
 * that a reader never finds an entry whose blobs are not there yet.
 *
 * What goes up is what the local store keeps, in its portable form: the
 * path set and strong key as stored, the result without what is for local
 * eyes only. The remote never sees an environment value or an argv
 * element: only digests over them, paths, modes and content digests.
 *
 * Never prints, never waits for the network on a step's behalf, never fails
 * a step: faults are counted (the remote_* counters of the store) and what
 * is worth saying to those who asked goes to note.
 */
#ifndef CACHET_REMOTE_UPLOAD_H
#define CACHET_REMOTE_UPLOAD_H

#include <stddef.h>
#include "cachet/buf.h"
#include "cachet/digest.h"
#include "cachet/error.h"
#include "cachet/remote.h"

struct record;
struct store;

/* Jobs the spool takes while every writable server rests; later ones are
 * dropped (counted as remote_spool_full). */
#define REMOTE_SPOOL_MAX_JOBS 10000
/* The least op-timeout of a drain: uploads run in the background and send
 * whole blobs, so a request may take longer than a lookup may make a step
 * wait. */
#define REMOTE_DRAIN_OP_TIMEOUT_MS 30000

/* The local store and the configured remotes, for a spool or a drain. */
struct remote_upload {
	struct store *store;          /* blobs read, counters */
	struct remote_client *client; /* the configured remotes */
	const char *state_dir;        /* the store's remote state: spool, breakers */
	/* Worth saying to those who asked (-v): always is 0, as everything an
	 * upload finds only costs a later miss (the shape of the lookup's
	 * note, remote_lookup.h). NULL says nothing. */
	void (*note)(void *ctx, int always, const char *what, const struct error *e);
	/* A drain's progress: job (0-based) of njobs about to be sent, or
	 * NULL. */
	void (*progress)(void *ctx, size_t job, size_t njobs);
	void *ctx;
};

/* ---- packaging ---- */

/* Fills job (spool_job_init'd by the caller) with the upload of a stored
 * run of the step whose weak key is weak, rec in its stored, portable form
 * (portable_record): the path set as stored and the strong key of its
 * recorded values; the result with every blob in its raw form (how a store
 * keeps a blob is its own business) and without values, listings or why it
 * is pinned (the receiver finds its own); each non-empty blob of the result
 * listed once with its size. */
void remote_upload_package(const struct digest *weak, const struct record *rec,
                           struct spool_job *job);

/* What remote_upload_spool did with a stored run. */
enum remote_spooled {
	REMOTE_SPOOLED_NO_WRITABLE, /* every remote is read-only: nothing to send */
	REMOTE_SPOOLED_FULL,        /* every writable server rests and the spool is
	                             * full: dropped (counted) */
	REMOTE_SPOOLED_QUEUED,      /* written (counted): start a drainer */
	REMOTE_SPOOLED_WAITING,     /* written (counted) while every writable server
	                             * rests: the next drainer takes it */
	REMOTE_SPOOLED_FAILED,      /* the spool cannot be written (counted, e says why) */
};

/* Packages a stored run (remote_upload_package) into a job file of the
 * spool under u->state_dir, unless no remote takes writes or the spool is
 * full while every writable server rests. Never touches the network.
 * Returns one of enum remote_spooled. */
enum remote_spooled remote_upload_spool(struct remote_upload *u, const struct digest *weak,
                                        const struct record *rec, struct error *e);

/* The number of jobs waiting in the spool under state_dir (0 when it
 * cannot be read). */
size_t remote_spool_size(const char *state_dir);

/* ---- what a job puts on a remote ---- */

/* The entry of a job, as stored under remote_key_entry(job->strong):
 * encoded into out (initialised by the caller), signed by signer unless it
 * is NULL. -1 (e set) when it cannot be signed. */
int remote_upload_entry(const struct spool_job *job, struct remote_signer *signer, struct buf *out,
                        struct error *e);
/* The path set of a job, for the list under remote_key_pathsets(job->weak):
 * its body borrowed from job, signed by signer unless it is NULL. -1 (e
 * set) when it cannot be signed. */
int remote_upload_pathset(const struct spool_job *job, struct remote_signer *signer,
                          struct remote_pathset *out, struct error *e);

/* ---- the drain ---- */

/* Raises every server's op-timeout to REMOTE_DRAIN_OP_TIMEOUT_MS, for the
 * client of a drain (which reads config when it connects). */
void remote_upload_drain_timeouts(struct remote_config *config);

struct remote_drain_report {
	size_t uploaded; /* jobs every writable remote now has */
	size_t dropped;  /* jobs whose blobs left the local store, or corrupt */
	size_t left;     /* jobs still waiting */
};

/* Sends the spooled jobs to every writable tier, oldest first, while one
 * drainer at a time holds the spool's lock; wait: wait for a running
 * drainer instead of leaving the work to it. A job leaves the spool when
 * every writable tier has it (or cannot take it: a blob above its
 * max-size), or when it cannot be sent whole (a blob gone from the local
 * store, a job file corrupt); it stays, for the next drainer, while a
 * server fails or rests. sign_key: the private key (PEM) that signs every
 * entry and path set sent, or NULL. Returns 0, or -1 (e set, nothing sent)
 * when sign_key cannot be loaded: uploading unsigned would be silently
 * worse, the jobs wait. *rep is filled either way. */
int remote_upload_drain(struct remote_upload *u, const char *sign_key, int wait,
                        struct remote_drain_report *rep, struct error *e);

#endif
