#include "cli/options.h"

#include <stdio.h>
#include <string.h>

#include "cachet/buf.h"
#include "cli/cli.h"

/* Where a generated usage line is wrapped, and the column of the option
 * list's descriptions at the most. */
#define USAGE_WIDTH 80
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

static int usage_error(const struct cli_args *a, const char *fmt, const char *word)
{
	struct buf line;
	buf_init(&line);
	buf_addf(&line, fmt, word);
	cli_error("%s: %s (see cachet %s --help)", a->cmd->name, line.data, a->cmd->name);
	buf_free(&line);
	return CLI_ARG_ERROR;
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
		a->value = w;
		a->next++;
		return CLI_ARG_OPERAND;
	}
	a->next++;
	if (!strcmp(w, "--")) {
		if (a->cmd->flags & CLI_STOP_AT_OPERAND)
			return CLI_ARG_END;
		a->operands_only = 1;
		return cli_args_next(a);
	}
	if (!strcmp(w, "-h") || !strcmp(w, "--help"))
		return CLI_ARG_HELP;
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
	if (o->value) {
		if (inline_value) {
			a->value = inline_value;
		} else if (a->next < a->argc) {
			a->value = a->argv[a->next++];
		} else {
			/* Without this, the missing value would read as an unknown
			 * option or an operand. */
			cli_error("%s: %s needs a value", a->cmd->name, w);
			return CLI_ARG_ERROR;
		}
	}
	return o->id;
}

/* "-n", "--dry-run" or "--max-size SIZE": the option as the usage line
 * shows it (its short form where it has one). */
static void add_synopsis(struct buf *b, const struct cli_option *o)
{
	if (o->short_name)
		buf_addf(b, "[-%c%s%s]", o->short_name, o->value ? " " : "", o->value ? o->value : "");
	else
		buf_addf(b, "[--%s%s%s]", o->long_name, o->value ? " " : "", o->value ? o->value : "");
}

void cli_usage_line(const struct cli_command *cmd, struct buf *out)
{
	const char *indent = "       ";
	if (cmd->usage) {
		buf_addstr(out, "usage: ");
		for (const char *p = cmd->usage; *p;) {
			const char *nl = strchrnul(p, '\n');
			if (p != cmd->usage)
				buf_addstr(out, indent);
			buf_add(out, p, (size_t)(nl - p));
			buf_addch(out, '\n');
			p = *nl ? nl + 1 : nl;
		}
	} else {
		size_t start = out->len;
		buf_addf(out, "usage: cachet %s", cmd->name);
		size_t hang = out->len - start + 1, line_start = start;
		struct buf word;
		buf_init(&word);
		for (const struct cli_option *o = cmd->options; o && o->id; o++) {
			if (!o->help)
				continue;
			buf_reset(&word);
			add_synopsis(&word, o);
			/* Wrapped under the first option, as a man page's synopsis. */
			if (out->len - line_start + 1 + word.len > USAGE_WIDTH) {
				buf_addch(out, '\n');
				line_start = out->len;
				for (size_t k = 0; k < hang - 1; k++)
					buf_addch(out, ' ');
			}
			buf_addch(out, ' ');
			buf_add(out, word.data, word.len);
		}
		if (cmd->operands && *cmd->operands) {
			if (out->len - line_start + 1 + strlen(cmd->operands) > USAGE_WIDTH) {
				buf_addch(out, '\n');
				for (size_t k = 0; k < hang - 1; k++)
					buf_addch(out, ' ');
			}
			buf_addch(out, ' ');
			buf_addstr(out, cmd->operands);
		}
		buf_free(&word);
		buf_addch(out, '\n');
	}
	for (const char *p = cmd->more_usage; p && *p;) {
		const char *nl = strchrnul(p, '\n');
		buf_addstr(out, indent);
		buf_add(out, p, (size_t)(nl - p));
		buf_addch(out, '\n');
		p = *nl ? nl + 1 : nl;
	}
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

void cli_usage(const struct cli_command *cmd, struct buf *out)
{
	cli_usage_line(cmd, out);
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
