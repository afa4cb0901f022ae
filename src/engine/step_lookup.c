/*
 * The lookup of one step, for `cachet run`, read top to bottom: the step's
 * memo, then the index, then the tiers after a local miss (the remotes),
 * and the memo a hit or a stored miss leaves for the next run. Restoring,
 * replaying and saying what happened are the caller's (lookup.h).
 */
#include "cachet/lookup.h"

#include <stdlib.h>
#include <unistd.h>

#include "cachet/dirfp.h"
#include "cachet/duplicate.h"
#include "cachet/preprocessed_duplicate.h"
#include "cachet/portable.h"
#include "cachet/record.h"
#include "cachet/result.h"
#include "cachet/step.h"
#include "cachet/step_name.h"
#include "cachet/store.h"

/* ---- the memo: the hit path without the index ---- */

/* What names a step's memo: its command, directory and program, and the
 * user (in a cache shared between users, what a lookup finds can depend on
 * who looks). The rest of the weak key (environment, platform, the
 * program's digest) is checked against the memo's weak key. */
static void memo_name(struct step_lookup *sl)
{
	struct hasher h;
	hasher_init(&h, NULL);
	hasher_update_str(&h, "cachet memo");
	hasher_update_u64(&h, (uint64_t)geteuid());
	for (char *const *a = sl->argv; *a; a++)
		hasher_update_str(&h, *a);
	char *cwd = getcwd(NULL, 0);
	hasher_update_str(&h, cwd ? cwd : "");
	free(cwd);
	hasher_update_str(&h, sl->program);
	hasher_final(&h, &sl->memo_name);
}

/* The memo's directory fingerprints (dirfp.h) for a path set and the values
 * its result recorded, encoded into out. */
struct memo_dirs {
	const struct step_lookup *sl;
	const void *pathset_body;
	size_t pathset_len;
	const struct result *res;
	/* What the recording already found (record.dirs), or NULL. */
	struct dirfp_notes *notes;
	struct buf out;
};

static void memo_dirs_collect(void *arg)
{
	struct memo_dirs *md = arg;
	/* The directories that vouch for the values the result recorded:
	 * they held when this run looked them up or recorded them. */
	struct pathset ps;
	struct dirfp_set dirs = {0};
	struct error e = {0};
	if (pathset_decode(md->pathset_body, md->pathset_len, &ps, &e) == 0) {
		/* The directories of this checkout. */
		if (portable_localise_pathset(&ps, &md->sl->step->bases) == 0)
			dirfp_collect_noted(&ps, md->res->values, md->res->values_len, md->notes,
			                    &dirs);
		pathset_free(&ps);
	}
	dirfp_encode(&dirs, &md->out);
	dirfp_free(&dirs);
}

/* Leaves the entry just hit or stored, with the fingerprints this run
 * used and the directories md found, as the step's memo. Best effort. */
static void put_memo(struct step_lookup *sl, const struct digest *strong, const void *result_body,
                     size_t result_len, const struct memo_dirs *md, const struct digest *pathset)
{
	struct store_memo m = {
	    .weak = sl->step->weak,
	    .pathset = *pathset,
	    .strong = *strong,
	    .pathset_body = (void *)md->pathset_body,
	    .pathset_len = md->pathset_len,
	    .result_body = (void *)result_body,
	    .result_len = result_len,
	    .dirs = md->out.data,
	    .dirs_len = md->out.len,
	};
	struct error e = {0};
	m.fps = fplog_used(&sl->fps, &m.nfps);
	if (store_memo_write(sl->store, &sl->memo_name, &m, &e) < 0)
		sl->note(sl->ctx, "cannot write a memo", &e);
	free(m.fps);
}

/* put_memo after a hit. An index hit's directories come through the
 * lookups its evaluation noted (sl->tiers.notes): looked up again, they
 * were 280 of the 693 stats of a hit of Lua's lparser.c. */
static void write_memo(struct step_lookup *sl, const struct lookup_candidate *c)
{
	if (!store_keeps_memos(sl->store))
		return;
	struct dirfp_notes *notes = c->tier == LOOKUP_TIER_INDEX ? sl->tiers.notes : NULL;
	struct memo_dirs md = {sl, c->pathset_body, c->pathset_len, c->result, notes, {0}};
	buf_init(&md.out);
	memo_dirs_collect(&md);
	put_memo(sl, &c->strong, c->result_body, c->result_len, &md, c->pathset);
	buf_free(&md.out);
}

/* ---- the local tiers, through the caller's hands ---- */

/* The caller's serve, leaving the entry served as the step's memo where
 * it was not already. */
static int serve_and_memo(void *ctx, struct lookup_candidate *c)
{
	struct step_lookup *sl = ctx;
	int memo = c->tier == LOOKUP_TIER_MEMO;
	int served = sl->serve(sl->ctx, c);
	/* The outputs just restored have new times (or are new files): their
	 * fingerprints cannot serve the next run, nor make a memo worth
	 * writing (the object file of every hit that restores in place). */
	if (served == LOOKUP_SERVED && c->result)
		for (size_t i = 0; i < c->result->noutputs; i++)
			fplog_forget(&sl->fps, c->result->outputs[i].path);
	/* From the memo: files hashed again (changed times, same content)
	 * keep their new fingerprints for the next hit. */
	if (served == LOOKUP_SERVED && (memo ? sl->fps.added != 0 : !sl->nondeterministic))
		write_memo(sl, c);
	return served;
}

static void tier_count(void *ctx, const char *name, int64_t delta)
{
	struct step_lookup *sl = ctx;
	sl->count(sl->ctx, name, delta);
}

static void tier_fault(void *ctx, const char *what, const struct error *e)
{
	struct step_lookup *sl = ctx;
	sl->fault(sl->ctx, what, e);
}

static int tier_preprocess(void *ctx, char *const *argv, int want_record,
                           struct lookup_preprocessed *out)
{
	struct step_lookup *sl = ctx;
	return sl->preprocess(sl->ctx, argv, want_record, out);
}

void lookup_step_init(struct step_lookup *sl)
{
	fplog_init(&sl->fps);
	sl->tiers = (struct lookup_tiers){
	    .store = sl->store,
	    .step = sl->step,
	    .dc = &sl->fps.dc,
	    .serve = serve_and_memo,
	    .count = tier_count,
	    .fault = tier_fault,
	    .preprocess = sl->preprocess ? tier_preprocess : NULL,
	    .ctx = sl,
	};
	sl->step_ready = 0;
	sl->nondeterministic = 0;
	sl->miss_reason = NULL;
	memo_name(sl);
}

void lookup_step_free(struct step_lookup *sl)
{
	fplog_free(&sl->fps);
}

/* The step's memo, if it still holds (lookup_memo_tier): LOOKUP_SERVED on
 * a hit, LOOKUP_STOP for a re-run, else 0 with the memo's fingerprints
 * kept for the index lookup that follows. */
static int memo_tier(struct step_lookup *sl)
{
	struct store_memo m;
	struct error e = {0};
	int found = store_memo_read(sl->store, &sl->memo_name, &m, &e);
	if (found < 0)
		sl->fault(sl->ctx, "unusable memo", &e);
	if (found != 1)
		return 0;
	fplog_load(&sl->fps, &m);
	int served = 0;
	if (sl->init_step(sl->ctx, sl->step, &sl->fps.dc, &e) == 0) {
		sl->step_ready = 1;
		served = lookup_memo_tier(&sl->tiers, &m);
	}
	/* else said by the index path, which tries again */
	store_memo_free(&m);
	return served;
}

/* ---- after a local miss ---- */

/* The tiers asked when the local ones found nothing, in order: each
 * returns LOOKUP_SERVED on a hit, else 0. A tier that saves the trip to a
 * remote goes before it. */
static int duplicate_tier(struct step_lookup *sl)
{
	return lookup_duplicate_tier(&sl->tiers);
}

static int preprocessed_duplicate_tier(struct step_lookup *sl)
{
	return lookup_preprocessed_duplicate_tier(&sl->tiers);
}

static int remote_tier(struct step_lookup *sl)
{
	/* A remote hit is stored before it is restored: a read-only cache
	 * cannot take one, and is not worth the remotes' configuration. */
	return sl->remote && !store_is_readonly(sl->store) ? sl->remote(sl->ctx) : 0;
}

static const struct {
	enum lookup_tier tier;
	int (*ask)(struct step_lookup *sl);
} tiers_after_local_miss[] = {
    {LOOKUP_TIER_DUPLICATE, duplicate_tier},
    {LOOKUP_TIER_PREPROCESSED_DUPLICATE, preprocessed_duplicate_tier},
    {LOOKUP_TIER_REMOTE, remote_tier},
};

/* ---- the lookup ---- */

enum lookup_step_outcome lookup_step(struct step_lookup *sl, struct error *e)
{
	int memo_served = sl->recache ? 0 : memo_tier(sl);
	if (memo_served == LOOKUP_SERVED) {
		sl->tier = LOOKUP_TIER_MEMO;
		return LOOKUP_STEP_HIT;
	}
	if (store_index_open(sl->store, e) < 0)
		return LOOKUP_STEP_NO_INDEX;
	fplog_set_inner(&sl->fps, &sl->index_dc);
	if (!sl->step_ready) {
		if (sl->init_step(sl->ctx, sl->step, &sl->fps.dc, e) < 0)
			return LOOKUP_STEP_NO_KEY;
		sl->step_ready = 1;
	}
	/* A memo's entry held: the index knew the step. */
	int had_pathsets = memo_served == LOOKUP_STOP;
	/* A step known to give different outputs on identical runs: with
	 * rerun_nondeterministic it always runs (and is never stored); else
	 * its hits come with the caller's warning. */
	struct error ne = {0};
	sl->nondeterministic =
	    store_nondeterministic(sl->store, &sl->step->weak, NULL, NULL, &ne) == 1;
	int rerun = sl->nondeterministic && sl->rerun_nondeterministic;
	enum lookup_step_outcome outcome = LOOKUP_STEP_MISS;
	if (memo_served == LOOKUP_STOP) {
		/* A memo's hit chosen for a re-run runs now. */
		outcome = LOOKUP_STEP_RERUN;
	} else if (!sl->recache && !rerun) {
		/* Begun before the first lookup that its memo may use. */
		if (store_keeps_memos(sl->store))
			sl->tiers.notes = dirfp_notes_new();
		int served = lookup_index_tier(&sl->tiers);
		dirfp_notes_free(sl->tiers.notes);
		sl->tiers.notes = NULL;
		if (served == LOOKUP_SERVED) {
			sl->tier = LOOKUP_TIER_INDEX;
			return LOOKUP_STEP_HIT;
		}
		had_pathsets = sl->tiers.had_pathsets;
		if (served == LOOKUP_STOP)
			outcome = LOOKUP_STEP_RERUN; /* a hit being verified runs */
		for (size_t i = 0;
		     outcome == LOOKUP_STEP_MISS &&
		     i < sizeof tiers_after_local_miss / sizeof *tiers_after_local_miss;
		     i++) {
			if (tiers_after_local_miss[i].ask(sl) == LOOKUP_SERVED) {
				sl->tier = tiers_after_local_miss[i].tier;
				return LOOKUP_STEP_HIT;
			}
		}
	}
	/* A forced re-run and a nondeterministic step's re-run looked nothing
	 * up: "new step" would have them counted as steps never seen. */
	if (sl->recache)
		sl->miss_reason = "recache";
	else if (rerun)
		sl->miss_reason = "nondeterministic step";
	else
		sl->miss_reason = had_pathsets ? "inputs changed" : "new step";
	return outcome;
}

/* ---- the miss's entry ---- */

/* Stores the entry of a miss (lookup_store_entry) and, unless the step is
 * nondeterministic or the store read-only, leaves it as the step's memo,
 * with the fingerprints this run used. The memo's directories are found on
 * this thread: since the record notes them (record.dirs) they are ~0.1 ms
 * of stats, less than starting a thread costs. */
static int store_with_memo(struct step_lookup *sl, const struct lookup_entry *en,
                           struct dirfp_notes *notes, struct error *e)
{
	int rc = lookup_store_entry(sl->store, en, e);
	if (rc == 0 && !sl->nondeterministic && store_keeps_memos(sl->store)) {
		struct memo_dirs md = {sl, en->pathset_body, en->pathset_len, en->result, notes,
		                       {0}};
		buf_init(&md.out);
		memo_dirs_collect(&md);
		put_memo(sl, en->strong, en->result_body, en->result_len, &md, en->pathset);
		buf_free(&md.out);
	}
	return rc;
}

int lookup_store_run(struct step_lookup *sl, struct record *rec, const struct lookup_run_end *end,
                     struct error *e)
{
	struct digest strong;
	struct buf result_body;
	buf_init(&result_body);
	if (lookup_finish_record(sl->store, sl->step, rec, end, &strong, &result_body, e) < 0) {
		buf_free(&result_body);
		return -1;
	}
	struct lookup_entry entry = {
	    .step = sl->step,
	    .pathset = &rec->ps_digest,
	    .pathset_body = rec->ps_body.data,
	    .pathset_len = rec->ps_body.len,
	    .strong = &strong,
	    .result_body = result_body.data,
	    .result_len = result_body.len,
	    .result = &rec->result,
	};
	struct digest ident;
	if (end->name_step) {
		step_identity(sl->step, &ident);
		entry.step_ident = &ident;
	}
	struct digest argv_key;
	entry.argv_words = argv_inputs_recorded(sl->step, rec, &argv_key);
	entry.argv_key = &argv_key;
	/* Under its duplicate key too, when another step that differs only in
	 * its output names may be served from it. */
	struct duplicate_streams streams = {end->out, end->out_len, end->err, end->err_len};
	struct store_duplicate dup;
	if (duplicate_note(sl->store, sl->step, rec, &strong, &streams, &dup, NULL) == 1)
		entry.duplicate = &dup;
	int rc = store_with_memo(sl, &entry, rec->dirs, e);
	store_duplicate_free(&dup);
	buf_free(&result_body);
	return rc;
}
