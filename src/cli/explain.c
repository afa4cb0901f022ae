/*
 * cachet explain: without running the command, say whether it would hit,
 * and if not, name the first difference in plain words.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/explain.h"
#include "cachet/lookup.h"
#include "cachet/path.h"
#include "cli/cli.h"
#include "cli/explain_remote.h"
#include "cli/options.h"

extern char **environ;

/* How many recorded steps are searched for the nearest one. */
#define NEAREST_SEARCH_LIMIT 5000

struct verdict {
	int hit;
	const char *summary; /* "new step", "inputs changed" */
	char *nearest;       /* command line of the nearest recorded step, or NULL */
	struct explain_list items;
};

/* 1 when the recorded step runs the same program: the same path, or the
 * same name (a program reached through another PATH, or rebuilt). */
static int same_program(const struct step *now, const struct step *rec)
{
	return !strcmp(now->exe, rec->exe) ||
	       !strcmp(path_basename(now->exe), path_basename(rec->exe)) ||
	       !strcmp(path_basename(now->argv[0]), path_basename(rec->argv[0]));
}

/* A new weak key: find the recorded step of the same program that differs
 * least (explain_step_distance; the newest of equals) and name every way in
 * which they differ. */
static void explain_new_step(struct store *s, const struct step *now, struct verdict *v)
{
	struct store_step *steps;
	size_t n;
	struct error e = {0};
	v->summary = "new step";
	if (store_recent_steps(s, NEAREST_SEARCH_LIMIT, &steps, &n, &e) < 0)
		return;
	size_t best_distance = SIZE_MAX;
	struct step best;
	memset(&best, 0, sizeof best);
	for (size_t i = 0; i < n; i++) {
		struct step rec;
		if (step_decode(steps[i].body, steps[i].len, &rec, &e) < 0)
			continue;
		size_t d = same_program(now, &rec) ? explain_step_distance(now, &rec) : SIZE_MAX;
		if (d < best_distance) {
			if (best_distance != SIZE_MAX)
				step_free(&best);
			best = rec;
			best_distance = d;
		} else {
			step_free(&rec);
		}
	}
	store_steps_free(steps, n);
	if (best_distance == SIZE_MAX)
		return;
	explain_steps(now, &best, &v->items);
	v->nearest = cli_command_line(best.argv);
	step_free(&best);
}

/* A known weak key: evaluate each path set; a path set whose strong key has
 * a result would hit. Otherwise report the recorded run closest to now. */
static void explain_known_step(struct store *s, const struct step *now, struct store_pathset *sets,
                               size_t nsets, int all, struct digest_cache *dc, struct verdict *v)
{
	struct error e = {0};
	size_t best_differ = SIZE_MAX;
	v->summary = "inputs changed";
	for (size_t i = 0; i < nsets && !v->hit; i++) {
		struct buf values;
		buf_init(&values);
		/* As run evaluates it: a damaged path set, or one recorded under a
		 * base that is not set here, cannot hit. */
		struct pathset_evaluation ev = {
		    .digest = &sets[i].digest,
		    .body = sets[i].body,
		    .len = sets[i].len,
		    .values = &values,
		    .keep_pathset = 1,
		};
		int rc = lookup_evaluate_pathset(&now->bases, &now->weak, dc, &ev, &e);
		if (rc != LOOKUP_PATHSET_KEYED) {
			if (rc != LOOKUP_PATHSET_DAMAGED)
				pathset_free(&ev.ps);
			buf_free(&values);
			continue;
		}
		struct pathset ps = ev.ps;
		struct digest strong = ev.strong;
		void *body;
		size_t len;
		if (store_get_result(s, &strong, &body, &len, &e) == 1) {
			free(body);
			v->hit = 1;
		} else {
			struct store_result_row *rows;
			size_t nrows;
			if (store_results_for_pathset(s, &now->weak, &sets[i].digest, &rows, &nrows,
			                              &e) == 0) {
				for (size_t r = 0; r < nrows; r++) {
					struct result res;
					if (result_decode(rows[r].body, rows[r].len, &res, &e) < 0)
						continue;
					struct explain_list found = {0};
					size_t d =
					    explain_pathset(&ps, &res, values.data, values.len,
					                    now->cwd, &now->bases, all, &found);
					if (d != SIZE_MAX && d < best_differ) {
						explain_list_free(&v->items);
						v->items = found;
						best_differ = d;
					} else {
						explain_list_free(&found);
					}
					result_free(&res);
				}
				store_result_rows_free(rows, nrows);
			}
		}
		buf_free(&values);
		pathset_free(&ps);
	}
}

static void print_text(const struct verdict *v)
{
	if (v->hit) {
		printf("hit\n");
		return;
	}
	if (!strcmp(v->summary, "new step")) {
		if (!v->nearest) {
			printf("miss: new step; no recorded step runs the same program\n");
			return;
		}
		if (v->items.n == 0) {
			printf("miss: new step; the nearest recorded step (%s) differs in nothing "
			       "cachet can name\n",
			       v->nearest);
			return;
		}
		/* An argv difference reads best as a new step; a changed variable
		 * or program, as what changed. */
		for (size_t i = 0; i < v->items.n; i++) {
			const struct explain_item *it = &v->items.items[i];
			if (i == 0 && !strcmp(it->what, "argv differs"))
				printf(
				    "miss: new step; nearest recorded step with the same program "
				    "differs in %s\n",
				    it->text);
			else
				printf("miss: %s\n", it->text);
		}
		printf("      nearest recorded step: %s\n", v->nearest);
		return;
	}
	if (v->items.n == 0) {
		printf("miss: inputs changed (no recorded run left to compare with)\n");
		return;
	}
	for (size_t i = 0; i < v->items.n; i++)
		printf("miss: %s\n", v->items.items[i].text);
}

static void json_field(struct buf *b, const char *key, const char *value)
{
	buf_addf(b, ", \"%s\": ", key);
	if (value)
		buf_add_json_string(b, value, strlen(value));
	else
		buf_addstr(b, "null");
}

static void print_json(const struct verdict *v, const struct remote_explanation *rx)
{
	struct buf b;
	buf_init(&b);
	buf_addf(&b, "{\"hit\": %s, \"reason\": ", v->hit ? "true" : "false");
	if (v->hit)
		buf_addstr(&b, "null");
	else
		buf_add_json_string(&b, v->summary, strlen(v->summary));
	json_field(&b, "nearest", v->nearest);
	buf_addstr(&b, ", \"differences\": [");
	for (size_t i = 0; i < v->items.n; i++) {
		const struct explain_item *it = &v->items.items[i];
		buf_addstr(&b, i ? ", {\"what\": " : "{\"what\": ");
		buf_add_json_string(&b, it->what, strlen(it->what));
		json_field(&b, "subject", it->subject);
		json_field(&b, "recorded", it->recorded);
		json_field(&b, "now", it->now);
		json_field(&b, "note", it->note);
		json_field(&b, "text", it->text);
		buf_addch(&b, '}');
	}
	buf_addch(&b, ']');
	explain_remote_json(rx, &b);
	buf_addstr(&b, "}\n");
	fputs(b.data, stdout);
	buf_free(&b);
}

enum { OPT_ALL = 1, OPT_JSON };

static const struct cli_option explain_options[] = {
    {OPT_ALL, 0, "all", NULL, "list every observation that no longer holds, not just the first"},
    {OPT_JSON, 0, "json", NULL,
     "one JSON object: hit, reason, nearest, differences[] (whole values), remote"},
    {0},
};

const struct cli_command cli_cmd_explain = {
    .name = "explain",
    .operands = "[--] COMMAND [ARG...]",
    .options = explain_options,
    .flags = CLI_STOP_AT_OPERAND,
    .description = "Without running COMMAND, says whether it would hit and, if not, names the\n"
                   "first difference (below the step's cwd and base_dir first): an input whose\n"
                   "content changed (with both digests), a path that now exists or is gone, a\n"
                   "directory listing that changed, or for a new step every argv, environment,\n"
                   "cwd or executable difference from the recorded step of the same program\n"
                   "that differs least. With a remote configured, a miss here is also checked\n"
                   "against the remote (read-only, with the lookups' deadlines and trust):\n"
                   "whether it would serve the step, knows no such step, or knows it with\n"
                   "other inputs.\n",
    .epilogue = "Exit status: 0 would hit, 1 would miss, 2 usage error.\n",
};

int cmd_explain(int argc, char **argv)
{
	int all = 0, json = 0;
	struct cli_args args;
	cli_args_init(&args, &cli_cmd_explain, argc, argv);
	for (int id; (id = cli_args_next(&args)) != CLI_ARG_END;) {
		if (id == CLI_ARG_EXIT)
			return args.exit;
		if (id == OPT_ALL)
			all = 1;
		else
			json = 1;
	}
	int i = args.next;
	if (i >= argc) {
		cli_error("explain: no command given (see cachet explain --help)");
		return EXIT_USAGE;
	}
	char **cmd = argv + i;
	char *self = cli_self_exe();
	char *program = step_find_program(cmd[0], self);
	free(self);
	if (!program) {
		cli_error("explain: %s: %s", cmd[0],
		          errno == ENOENT ? "command not found" : strerror(errno));
		return EXIT_USAGE;
	}
	struct store *s = cli_open_store(0, NULL);
	if (!s) {
		free(program);
		return EXIT_USAGE;
	}
	struct digest_cache dc;
	cli_digest_cache(s, &dc);
	struct step step;
	struct error e = {0};
	if (cli_step_init(&step, cmd, program, &dc, &e) < 0) {
		cli_error("explain: %s", e.msg);
		store_close(s);
		free(program);
		return EXIT_USAGE;
	}
	struct verdict v;
	memset(&v, 0, sizeof v);
	struct store_pathset *sets = NULL;
	size_t nsets = 0;
	if (store_get_pathsets(s, &step.weak, &sets, &nsets, &e) < 0) {
		cli_error("explain: %s", e.msg);
		store_close(s);
		return EXIT_USAGE;
	}
	if (nsets == 0)
		explain_new_step(s, &step, &v);
	else
		explain_known_step(s, &step, sets, nsets, all, &dc, &v);
	/* A miss here may be a hit there; and a miss there, CI's, is what the
	 * user may be asking about. */
	struct remote_explanation rx = {0};
	if (!v.hit)
		remote_tier_explain(s, &step, &dc, &rx);
	int remote_hit = rx.verdict == REMOTE_VERDICT_HIT;
	if (json) {
		v.hit |= remote_hit;
		print_json(&v, &rx);
	} else if (!remote_hit) {
		print_text(&v);
	}
	if (!json)
		explain_remote_print_text(&rx);
	v.hit |= remote_hit;
	remote_explanation_free(&rx);
	char *nondet = NULL;
	if (!json && store_nondeterministic(s, &step.weak, &nondet, NULL, &e) == 1)
		printf("note: this step is marked nondeterministic (re-runs differed: %s)\n",
		       nondet);
	free(nondet);
	int rc = v.hit ? 0 : 1;
	explain_list_free(&v.items);
	free(v.nearest);
	store_pathsets_free(sets, nsets);
	step_free(&step);
	store_close(s);
	free(program);
	return rc;
}
