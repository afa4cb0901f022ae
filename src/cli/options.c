#include "cli/options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cli/cli.h"

/* Where a generated usage line is wrapped, and the column of the option
 * list's descriptions at the most. */
#define USAGE_WIDTH     80
#define HELP_COLUMN_MAX 22

void cli_args_init(struct cli_args *a, const struct cli_command *cmd, int argc, char **argv)
{
	memset(a, 0, sizeof *a);
	a->cmd = cmd;
	a->argc = argc;
	a->argv = argv;
	a->next = 1;
}

static const struct cli_option *find_long(const struct cli_command *c, const char *name, size_t len)
{
	for (const struct cli_option *o = c->options; o && o->id; o++)
		if (o->long_name && strlen(o->long_name) == len && !memcmp(o->long_name, name, len))
			return o;
	return NULL;
}

static const struct cli_option *find_short(const struct cli_command *c, char name)
{
	for (const struct cli_option *o = c->options; o && o->id; o++)
		if (o->short_name && o->short_name == name)
			return o;
	return NULL;
}

static int usage_error(struct cli_args *a, const char *fmt, const char *word)
{
	struct buf line;
	buf_init(&line);
	buf_addf(&line, fmt, word);
	cli_error("%s: %s (see cachet %s --help)", a->cmd->name, line.data, a->cmd->name);
	buf_free(&line);
	a->exit = EXIT_USAGE;
	return CLI_ARG_EXIT;
}

int cli_args_next(struct cli_args *a)
{
	a->value = NULL;
	a->word = NULL;
	if (a->next >= a->argc)
		return CLI_ARG_END;
	char *w = a->argv[a->next];
	int is_option = !a->operands_only && w[0] == '-' && w[1];
	if (!is_option) {
		if (a->cmd->flags & CLI_STOP_AT_OPERAND)
			return CLI_ARG_END;
		a->next++;
		if (!a->cmd->operands)
			return usage_error(a, "unexpected argument '%s'", w);
		a->value = w;
		return CLI_ARG_OPERAND;
	}
	a->next++;
	if (!strcmp(w, "--")) {
		if (a->cmd->flags & CLI_STOP_AT_OPERAND)
			return CLI_ARG_END;
		a->operands_only = 1;
		return cli_args_next(a);
	}
	if (!strcmp(w, "-h") || !strcmp(w, "--help")) {
		cli_print_usage(a->cmd);
		a->exit = 0;
		return CLI_ARG_EXIT;
	}
	const struct cli_option *o;
	const char *inline_value = NULL;
	if (w[1] == '-') {
		const char *eq = strchr(w + 2, '=');
		size_t len = eq ? (size_t)(eq - (w + 2)) : strlen(w + 2);
		o = find_long(a->cmd, w + 2, len);
		if (o && eq) {
			if (!o->value)
				return usage_error(a, "--%s takes no value", o->long_name);
			inline_value = eq + 1;
		}
	} else {
		o = find_short(a->cmd, w[1]);
		/* -n5: a short option's value may follow it in the same word. */
		if (o && w[2]) {
			if (!o->value)
				o = NULL;
			else
				inline_value = w + 2;
		}
	}
	if (!o)
		return usage_error(a, "unknown option '%s'", w);
	a->word = w;
	a->option = o;
	if (o->value) {
		if (inline_value) {
			a->value = inline_value;
		} else if (a->next < a->argc) {
			a->value = a->argv[a->next++];
		} else {
			/* Without this, the missing value would read as an unknown
			 * option or an operand. */
			cli_error("%s: %s needs a value", a->cmd->name, w);
			a->exit = EXIT_USAGE;
			return CLI_ARG_EXIT;
		}
	}
	return o->id;
}

int cli_args_count(const struct cli_args *a, size_t *out)
{
	const char *v = a->value;
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (!*v || *end || errno || n <= 0) {
		if (a->option->short_name)
			cli_error("%s: -%c takes a positive number, not '%s'", a->cmd->name,
			          a->option->short_name, v);
		else
			cli_error("%s: --%s takes a positive number, not '%s'", a->cmd->name,
			          a->option->long_name, v);
		return -1;
	}
	*out = (size_t)n;
	return 0;
}

/* "-n", "--dry-run" or "--max-size SIZE": the option as the usage line
 * shows it (its short form where it has one). */
static void add_synopsis(struct buf *b, const struct cli_option *o)
{
	if (o->short_name)
		buf_addf(b, "[-%c%s%s]", o->short_name, o->value ? " " : "",
		         o->value ? o->value : "");
	else
		buf_addf(b, "[--%s%s%s]", o->long_name, o->value ? " " : "",
		         o->value ? o->value : "");
}

static void add_indented(struct buf *out, const char *text, size_t column, int first_indented)
{
	for (const char *p = text; *p;) {
		const char *nl = strchrnul(p, '\n');
		if (p != text || first_indented)
			for (size_t k = 0; k < column; k++)
				buf_addch(out, ' ');
		buf_add(out, p, (size_t)(nl - p));
		buf_addch(out, '\n');
		p = *nl ? nl + 1 : nl;
	}
}

/* " word" on the usage line, or on a new one indented by hang where the
 * line would pass USAGE_WIDTH. */
static void add_wrapped(struct buf *out, size_t *line_start, size_t hang, const char *word)
{
	if (out->len - *line_start + 1 + strlen(word) > USAGE_WIDTH) {
		buf_addch(out, '\n');
		*line_start = out->len;
		for (size_t k = 1; k < hang; k++)
			buf_addch(out, ' ');
	}
	buf_addch(out, ' ');
	buf_addstr(out, word);
}

static void usage_lines(const struct cli_command *cmd, struct buf *out)
{
	/* Under the first, as in a man page's synopsis: strlen("usage: "). */
	const size_t indent = 7;
	if (cmd->usage) {
		buf_addstr(out, "usage: ");
		add_indented(out, cmd->usage, indent, 0);
	} else {
		size_t line_start = out->len;
		buf_addf(out, "usage: cachet %s", cmd->name);
		size_t hang = out->len - line_start + 1;
		struct buf word;
		buf_init(&word);
		for (const struct cli_option *o = cmd->options; o && o->id; o++) {
			if (!o->help)
				continue;
			buf_reset(&word);
			add_synopsis(&word, o);
			add_wrapped(out, &line_start, hang, word.data);
		}
		if (cmd->operands)
			add_wrapped(out, &line_start, hang, cmd->operands);
		buf_free(&word);
		buf_addch(out, '\n');
	}
	if (cmd->more_usage)
		add_indented(out, cmd->more_usage, indent, 1);
}

/* "-n, --dry-run", "--max-size SIZE", "-o FILE, --output FILE". */
static void add_label(struct buf *b, const struct cli_option *o)
{
	const char *v = o->value ? o->value : "";
	const char *sp = o->value ? " " : "";
	if (o->short_name)
		buf_addf(b, "-%c%s%s", o->short_name, sp, v);
	if (o->short_name && o->long_name)
		buf_addstr(b, ", ");
	if (o->long_name)
		buf_addf(b, "--%s%s%s", o->long_name, sp, v);
}

void cli_usage(const struct cli_command *cmd, struct buf *out)
{
	usage_lines(cmd, out);
	if (cmd->description)
		buf_addf(out, "\n%s", cmd->description);
	size_t column = 0;
	struct buf label;
	buf_init(&label);
	for (const struct cli_option *o = cmd->options; o && o->id; o++) {
		if (!o->help)
			continue;
		buf_reset(&label);
		add_label(&label, o);
		if (label.len + 4 > column && label.len + 4 <= HELP_COLUMN_MAX)
			column = label.len + 4;
	}
	if (!column)
		column = HELP_COLUMN_MAX;
	for (const struct cli_option *o = cmd->options; o && o->id; o++) {
		if (!o->help)
			continue;
		buf_reset(&label);
		add_label(&label, o);
		buf_addf(out, "  %s", label.data);
		/* A label too long for the column has its description below. */
		if (2 + label.len + 2 > column) {
			buf_addch(out, '\n');
			add_indented(out, o->help, column, 1);
		} else {
			for (size_t k = 2 + label.len; k < column; k++)
				buf_addch(out, ' ');
			add_indented(out, o->help, column, 0);
		}
	}
	buf_free(&label);
	if (cmd->epilogue)
		buf_addstr(out, cmd->epilogue);
}

int cli_print_usage(const struct cli_command *cmd)
{
	struct buf b;
	buf_init(&b);
	cli_usage(cmd, &b);
	fputs(b.data, stdout);
	buf_free(&b);
	return 0;
}
