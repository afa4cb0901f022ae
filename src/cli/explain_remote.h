/*
 * `cachet explain`'s word on the remotes (remote_tier_explain): whether the
 * remote would serve the step, or why not, so that a miss of CI's cache can
 * be understood without copying it over.
 */
#ifndef CACHET_CLI_EXPLAIN_REMOTE_H
#define CACHET_CLI_EXPLAIN_REMOTE_H

#include "cachet/buf.h"
#include "cachet/remote_lookup.h"
#include "cli/remote_tier.h"

/* Lines for the text form ("remote: ..."); nothing without a remote. */
void explain_remote_print_text(const struct remote_explanation *rx);
/* `, "remote": {...}` for the JSON form (`, "remote": null` without one). */
void explain_remote_json(const struct remote_explanation *rx, struct buf *out);

#endif
