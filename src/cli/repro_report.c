/* cachet repro: the report, as text and as JSON. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cachet/redact.h"
#include "cli/cli.h"
#include "cli/repro.h"

/* "exit 0", "killed by SIGSEGV". */
static void describe_status(int status, struct buf *out)
{
	if (WIFEXITED(status)) {
		buf_addf(out, "exit %d", WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		const char *name = sigabbrev_np(WTERMSIG(status));
		if (name)
			buf_addf(out, "killed by SIG%s", name);
		else
			buf_addf(out, "killed by signal %d", WTERMSIG(status));
	} else {
		buf_addf(out, "status %d", status);
	}
}

static size_t count_differing(const struct repro *r, size_t from, size_t to)
{
	size_t n = 0;
	for (size_t i = from; i < to && i < r->n; i++)
		n += repro_run_differs(&r->runs[i]) != 0;
	return n;
}

static int reproducible(const struct repro *r)
{
	return count_differing(r, 1, r->nruns) == 0;
}

/* ---- text ---- */

const char *repro_shown_path(const struct repro *r, const char *path)
{
	size_t n = r->cwd ? strlen(r->cwd) : 0;
	if (n > 1 && !strncmp(path, r->cwd, n) && path[n] == '/' && path[n + 1])
		return path + n + 1;
	return path;
}

static void text_diff(const struct repro *rp, const struct repro_run *run,
                      const struct repro_diff *d, struct buf *out)
{
	const char *path = repro_shown_path(rp, d->path);
	switch (d->kind) {
	case RDIFF_EXIT:
		buf_addstr(out, "  exit status: ");
		describe_status(d->status_a, out);
		buf_addstr(out, " in run 1, ");
		describe_status(d->status_b, out);
		buf_addf(out, " in run %u\n", run->number);
		return;
	case RDIFF_ONLY_IN_A:
		buf_addf(out, "  %s: left by run 1, not by run %u\n", path, run->number);
		return;
	case RDIFF_ONLY_IN_B:
		buf_addf(out, "  %s: left by run %u, not by run 1\n", path, run->number);
		return;
	case RDIFF_CONTENT:
		break;
	}
	struct buf r;
	buf_init(&r);
	compare_report_render(&d->rep, &r);
	buf_addf(out, "  %s: ", path);
	/* The report's first line is its summary; the rest is indented under
	 * the path. */
	int first = 1;
	for (size_t i = 0; i < r.len;) {
		const char *nl = memchr(r.data + i, '\n', r.len - i);
		size_t len = nl ? (size_t)(nl - (r.data + i)) : r.len - i;
		if (!first)
			buf_addstr(out, "  ");
		buf_add(out, r.data + i, len);
		buf_addch(out, '\n');
		first = 0;
		i += len + 1;
	}
	buf_free(&r);
}

static void text_run(const struct repro *rp, const struct repro_run *run, struct buf *out)
{
	if (run->role == ROLE_BISECT)
		buf_addstr(out, "bisect: ");
	buf_addf(out, "run %u", run->number);
	if (run->role == ROLE_CONTROL) {
		buf_addstr(out, " (control): ");
		describe_status(run->status, out);
		buf_addf(out, ", %zu path%s changed, %.2f s", run->nchanged,
		         run->nchanged == 1 ? "" : "s", (double)run->duration_ms / 1000.0);
		if (run->note)
			buf_addf(out, " (note: %s)", run->note);
		buf_addch(out, '\n');
		return;
	}
	if (run->role == ROLE_BISECT && run->single < 0)
		buf_addstr(out, " (control again)");
	else if (run->role == ROLE_BISECT)
		buf_addf(out, " (%s alone: %.*s)", vary_name(run->single), (int)run->desc_text.len,
		         run->desc_text.data);
	else if (run->desc_text.len)
		buf_addf(out, " (%.*s)", (int)run->desc_text.len, run->desc_text.data);
	if (!repro_run_differs(run)) {
		buf_addstr(out, ": same as run 1\n");
		return;
	}
	buf_addstr(out, ": differs from run 1");
	if (!run->inputs_same && run->inputs_differ)
		buf_addf(out, " (it also relied on different inputs: %s)", run->inputs_differ);
	else if (!run->inputs_same)
		buf_addstr(out, " (it also relied on different inputs)");
	if (run->note)
		buf_addf(out, " (note: %s)", run->note);
	buf_addstr(out, "\n");
	for (size_t i = 0; i < run->ndiffs; i++)
		text_diff(rp, run, &run->diffs[i], out);
}

static void text_mask(unsigned mask, struct buf *out)
{
	int first = 1;
	for (int v = 0; v < VARY_COUNT; v++) {
		if (!((mask >> v) & 1))
			continue;
		buf_addf(out, "%s%s", first ? "" : ", ", vary_name(v));
		first = 0;
	}
}

void repro_render_text(const struct repro *r, struct buf *out)
{
	char *cmd = cli_command_line(r->argv);
	buf_addf(out, "cachet repro: %u runs of %s\n", r->nruns, cmd);
	free(cmd);
	if (r->mask) {
		if (r->nruns == 2)
			buf_addstr(out, "varied in run 2: ");
		else
			buf_addf(out, "varied in runs 2 to %u: ", r->nruns);
		text_mask(r->mask, out);
		buf_addch(out, '\n');
	}
	for (size_t i = 0; i < r->notes.len;) {
		const char *nl = memchr(r->notes.data + i, '\n', r->notes.len - i);
		size_t len = nl ? (size_t)(nl - (r->notes.data + i)) : r->notes.len - i;
		buf_addf(out, "note: %.*s\n", (int)len, r->notes.data + i);
		i += len + 1;
	}
	for (size_t i = 0; i < r->n; i++)
		text_run(r, &r->runs[i], out);
	if (r->bisected) {
		if (r->causes) {
			buf_addstr(out, "bisect: the outputs differ with ");
			text_mask(r->causes, out);
			buf_addstr(out, " alone\n");
		} else if (!r->control_again_differs) {
			buf_addstr(out,
			           "bisect: no single variation makes the outputs differ: only "
			           "their combination does\n");
		}
		if (r->control_again_differs)
			buf_addstr(out,
			           "bisect: the outputs differ even with nothing varied: the step "
			           "is nondeterministic by itself (no variation tried alone)\n");
	}
	size_t varied = r->nruns - 1, differ = count_differing(r, 1, r->nruns);
	if (!differ)
		buf_addf(out,
		         "reproducible: all %u runs left the same outputs, stdout and exit "
		         "status\n",
		         r->nruns);
	else
		buf_addf(out,
		         "not reproducible: %zu of %zu run%s differ%s from run 1 (A is run 1, "
		         "B the run named)\n",
		         differ, varied, varied == 1 ? "" : "s", differ == 1 ? "s" : "");
}

/* ---- JSON ---- */

static void json_str(struct buf *out, const char *s)
{
	buf_add_json_string(out, s, strlen(s));
}

static void json_mask(unsigned mask, struct buf *out)
{
	buf_addch(out, '[');
	int first = 1;
	for (int v = 0; v < VARY_COUNT; v++) {
		if (!((mask >> v) & 1))
			continue;
		if (!first)
			buf_addstr(out, ", ");
		json_str(out, vary_name(v));
		first = 0;
	}
	buf_addch(out, ']');
}

static void json_status(int status, struct buf *out)
{
	struct buf s;
	buf_init(&s);
	describe_status(status, &s);
	buf_add_json_string(out, s.data, s.len);
	buf_free(&s);
}

static void json_diff(const struct repro_diff *d, struct buf *out)
{
	static const char *const kinds[] = {
	    [RDIFF_CONTENT] = "content",
	    [RDIFF_ONLY_IN_A] = "only_in_control",
	    [RDIFF_ONLY_IN_B] = "only_in_run",
	    [RDIFF_EXIT] = "exit_status",
	};
	buf_addstr(out, "{\"path\": ");
	json_str(out, d->path);
	buf_addstr(out, ", \"kind\": ");
	json_str(out, kinds[d->kind]);
	if (d->kind == RDIFF_EXIT) {
		buf_addstr(out, ", \"control\": ");
		json_status(d->status_a, out);
		buf_addstr(out, ", \"run\": ");
		json_status(d->status_b, out);
	}
	if (d->kind == RDIFF_CONTENT) {
		buf_addstr(out, ", \"summary\": ");
		json_str(out, d->rep.summary ? d->rep.summary : "");
		buf_addstr(out, ", \"report\": ");
		size_t at = out->len;
		compare_report_json(&d->rep, out);
		while (out->len > at && out->data[out->len - 1] == '\n')
			out->len--;
	}
	buf_addch(out, '}');
}

static void json_run(const struct repro_run *run, struct buf *out)
{
	static const char *const roles[] = {
	    [ROLE_CONTROL] = "control",
	    [ROLE_VARIED] = "varied",
	    [ROLE_BISECT] = "bisect",
	};
	buf_addf(out, "{\"run\": %u, \"role\": ", run->number);
	json_str(out, roles[run->role]);
	if (run->role == ROLE_BISECT) {
		buf_addstr(out, ", \"variation\": ");
		if (run->single < 0)
			buf_addstr(out, "null");
		else
			json_str(out, vary_name(run->single));
	}
	buf_addstr(out, ", \"variations\": {");
	buf_add(out, run->desc_json.data, run->desc_json.len);
	buf_addstr(out, "}, \"exit_status\": ");
	json_status(run->status, out);
	buf_addstr(out, ", \"exit_code\": ");
	if (WIFEXITED(run->status))
		buf_addf(out, "%d", WEXITSTATUS(run->status));
	else
		buf_addstr(out, "null");
	buf_addf(out, ", \"duration_ms\": %lld, \"changed_paths\": %zu, \"inputs_same\": %s",
	         (long long)run->duration_ms, run->nchanged, run->inputs_same ? "true" : "false");
	buf_addstr(out, ", \"inputs_differ\": ");
	if (run->inputs_differ)
		buf_add_json_string(out, run->inputs_differ, strlen(run->inputs_differ));
	else
		buf_addstr(out, "null");
	buf_addstr(out, ", \"note\": ");
	if (run->note)
		json_str(out, run->note);
	else
		buf_addstr(out, "null");
	buf_addf(out, ", \"same\": %s, \"differences\": [",
	         repro_run_differs(run) ? "false" : "true");
	for (size_t i = 0; i < run->ndiffs; i++) {
		if (i)
			buf_addstr(out, ", ");
		json_diff(&run->diffs[i], out);
	}
	buf_addstr(out, "]}");
}

void repro_render_json(const struct repro *r, struct buf *out)
{
	buf_addf(out, "{\"reproducible\": %s, \"command\": [", reproducible(r) ? "true" : "false");
	for (size_t i = 0; r->argv[i]; i++) {
		if (i)
			buf_addstr(out, ", ");
		char *shown = redact_argv(r->argv, i);
		json_str(out, shown);
		free(shown);
	}
	buf_addf(out, "], \"runs\": %u, \"vary\": ", r->nruns);
	json_mask(r->mask, out);
	buf_addstr(out, ", \"notes\": [");
	int first = 1;
	for (size_t i = 0; i < r->notes.len;) {
		const char *nl = memchr(r->notes.data + i, '\n', r->notes.len - i);
		size_t len = nl ? (size_t)(nl - (r->notes.data + i)) : r->notes.len - i;
		if (!first)
			buf_addstr(out, ", ");
		buf_add_json_string(out, r->notes.data + i, len);
		first = 0;
		i += len + 1;
	}
	buf_addstr(out, "], \"results\": [");
	for (size_t i = 0; i < r->n; i++) {
		if (i)
			buf_addstr(out, ", ");
		json_run(&r->runs[i], out);
	}
	/* Every path that differs in some run, once, in the order first seen. */
	buf_addstr(out, "], \"differing_paths\": [");
	first = 1;
	for (size_t i = 1; i < r->nruns && i < r->n; i++) {
		const struct repro_run *run = &r->runs[i];
		for (size_t j = 0; j < run->ndiffs; j++) {
			int seen = 0;
			for (size_t k = 1; k <= i && !seen; k++) {
				const struct repro_run *p = &r->runs[k];
				size_t upto = k == i ? j : p->ndiffs;
				for (size_t m = 0; m < upto && !seen; m++)
					seen = !strcmp(p->diffs[m].path, run->diffs[j].path);
			}
			if (seen)
				continue;
			if (!first)
				buf_addstr(out, ", ");
			json_str(out, run->diffs[j].path);
			first = 0;
		}
	}
	buf_addstr(out, "], \"bisect\": ");
	if (!r->bisected) {
		buf_addstr(out, "null");
	} else {
		buf_addf(out, "{\"control_again_differs\": %s, \"causes\": ",
		         r->control_again_differs ? "true" : "false");
		json_mask(r->causes, out);
		buf_addch(out, '}');
	}
	buf_addstr(out, "}\n");
}
