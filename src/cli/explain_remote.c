#include "cli/explain_remote.h"

#include <stdio.h>
#include <string.h>

static const char *verdict_word(enum remote_verdict v)
{
	switch (v) {
	case REMOTE_VERDICT_UNREACHABLE:
		return "unreachable";
	case REMOTE_VERDICT_UNKNOWN_STEP:
		return "new step";
	case REMOTE_VERDICT_HIT:
		return "hit";
	case REMOTE_VERDICT_INPUTS:
		return "inputs changed";
	default:
		return NULL;
	}
}

/* ", 2 not signed by a trusted key, 1 refused" or "". */
static void counts(const struct remote_explanation *rx, struct buf *b)
{
	if (rx->untrusted)
		buf_addf(b, ", %zu not signed by a trusted key (not evaluated)", rx->untrusted);
	if (rx->refused)
		buf_addf(b,
		         ", %zu refused (corrupt, empty, recorded under a base unset here, or "
		         "naming paths outside the step's roots)",
		         rx->refused);
}

void explain_remote_print_text(const struct remote_explanation *rx)
{
	struct buf b;
	buf_init(&b);
	switch (rx->verdict) {
	case REMOTE_VERDICT_NONE:
		break;
	case REMOTE_VERDICT_UNREACHABLE:
		buf_addf(&b, "remote: not asked: %s\n",
		         rx->error ? rx->error : "no server answered");
		break;
	case REMOTE_VERDICT_UNKNOWN_STEP:
		buf_addstr(&b, "remote: new step there too: no step stored there has this command, "
		               "environment, working directory, program and platform\n");
		break;
	case REMOTE_VERDICT_HIT:
		buf_addstr(&b, "hit: from the remote, whose entry holds for the files here\n");
		break;
	case REMOTE_VERDICT_INPUTS:
		buf_addf(&b, "remote: inputs changed: the remote knows this step (%zu path set%s",
		         rx->pathsets, rx->pathsets == 1 ? "" : "s");
		counts(rx, &b);
		buf_addstr(&b,
		           "), but none holds for the files here; remotes keep no recorded "
		           "values, so the file is named once a run here has recorded its own\n");
		break;
	}
	fputs(b.len ? b.data : "", stdout);
	buf_free(&b);
}

void explain_remote_json(const struct remote_explanation *rx, struct buf *out)
{
	const char *word = verdict_word(rx->verdict);
	if (!word) {
		buf_addstr(out, ", \"remote\": null");
		return;
	}
	buf_addstr(out, ", \"remote\": {\"result\": ");
	buf_add_json_string(out, word, strlen(word));
	buf_addf(out, ", \"pathsets\": %zu, \"untrusted\": %zu, \"refused\": %zu, \"error\": ",
	         rx->pathsets, rx->untrusted, rx->refused);
	if (rx->error)
		buf_add_json_string(out, rx->error, strlen(rx->error));
	else
		buf_addstr(out, "null");
	buf_addch(out, '}');
}
