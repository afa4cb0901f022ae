/*
 * The remote tier of `cachet run`: its configuration from the settings, the
 * lookup (the engine's, remote_lookup.h) with the replay of a hit, and the
 * uploads (the engine's, remote_upload.h): a stored miss spooled with a
 * background drainer started, and the drain that `cachet remote` runs.
 *
 * Nothing here ever fails a step: a remote that is down, slow, answers
 * garbage or hostile entries costs a miss and a counter (remote_* in
 * `cachet remote status`).
 */
#ifndef CACHET_CLI_REMOTE_TIER_H
#define CACHET_CLI_REMOTE_TIER_H

#include <stddef.h>
#include "cachet/error.h"

struct step;
struct record;
struct store;
struct digest_cache;
struct progress;

struct settings;

/* Whether st names a remote: what decides that this tier (and its
 * plugins) is used at all. */
int remote_tier_configured(const struct settings *st);

/* After a local miss: asks the remotes. Returns 1 on a hit: the outputs are
 * restored (only inside the output roots: the cwd subtree and base_dir),
 * stdout and stderr replayed, the entry stored locally, *exit_code set.
 * Returns 0 otherwise. Loads the transport plugin only when a remote is
 * configured and not resting after a failure. */
int remote_tier_lookup(struct store *s, const struct step *step, struct digest_cache *dc,
                       int *exit_code);

/* What the configured remotes say about the step (remote_lookup_explain);
 * out->verdict is REMOTE_VERDICT_NONE when no remote is configured. */
struct remote_explanation;
void remote_tier_explain(struct store *s, const struct step *step, struct digest_cache *dc,
                         struct remote_explanation *out);

/* After a miss stored its entry: writes an upload job to the spool
 * (remote_upload_spool) and starts a background drainer if none runs.
 * Never waits for the network.
 * rec is in the stored, portable form (portable_record). */
void remote_tier_upload(struct store *s, const struct step *step, const struct record *rec);

/* Uploads spooled jobs (remote_upload_drain), signed with the sign_key
 * setting. wait: wait for a running drainer instead of leaving the work to
 * it. force: try servers whose breaker is open. shown: where the count goes
 * as jobs are uploaded, or NULL. */
struct remote_drain_report;
int remote_tier_drain(struct store *s, int wait, int force, struct progress *shown,
                      struct remote_drain_report *out, struct error *e);

#endif
