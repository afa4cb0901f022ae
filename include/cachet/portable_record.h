/*
 * Entries in their stored, portable form (portable.h): a result's outputs
 * back in this checkout, and a recorded run made portable
 * (src/entry/portable_record.c).
 */
#ifndef CACHET_PORTABLE_RECORD_H
#define CACHET_PORTABLE_RECORD_H

#include "cachet/portable.h"

struct record;
struct result;

/* Turns a result's output paths and absolute symlink targets into this
 * checkout's, in place. -1 when one names a base that is unset here. */
int portable_localise_result(struct result *r, const struct step_bases *b);

/* Turns a recorded run (record.h: real paths, canonical path set, values,
 * listings, result) into the form that is stored, in place: paths, values
 * and outputs portable, the path set canonical again (listings renumbered),
 * plus one OBS_BASE observation for every base that rec->pinned names or
 * that a lookup pins (rec->pinned and pinned_by updated), and the reasons
 * in rec->result.pinned. Without bases it changes nothing. Returns -1 when
 * the run cannot be shared (it names the reserved prefix); rec is then left
 * as it was. */
int portable_record(struct record *rec, const struct step_bases *b);

#endif
