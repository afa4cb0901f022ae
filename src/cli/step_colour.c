#include "cli/step_colour.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/diag_colour.h"
#include "cachet/fdio.h"
#include "cli/cli.h"

char **step_colour_argv(const struct step *step, char **argv)
{
	if (!step->colour)
		return argv;
	enum diag_colour family = (enum diag_colour)step->colour;
	int urls = family == DIAG_COLOUR_GCC && diag_colour_knows_urls(step->exe);
	const char *const *extra = diag_colour_options(family, urls);
	size_t n = 0, k = 0;
	while (argv[n])
		n++;
	while (extra[k])
		k++;
	char **out = xcalloc(n + k + 1, sizeof *out);
	memcpy(out, argv, n * sizeof *out);
	for (size_t i = 0; i < k; i++)
		out[n + i] = (char *)extra[i];
	return out;
}

void step_colour_argv_free(char **exec_argv, char **argv)
{
	if (exec_argv != argv)
		free(exec_argv);
}

unsigned step_colour_keep(const struct step *step)
{
	if (!(cli_step_terminal() & STEP_TTY_STDERR))
		return 0;
	return diag_colour_shown((enum diag_colour)step->colour, getenv("TERM"),
				 getenv("COLORTERM"), getenv("VTE_VERSION"));
}

void step_colour_write_stderr(const struct step *step, const void *data, size_t len)
{
	if (!step->colour) {
		write_all(2, data, len);
		return;
	}
	struct diag_strip s;
	struct buf out;
	buf_init(&out);
	diag_strip_init(&s, step_colour_keep(step));
	diag_strip_add(&s, data, len, &out);
	diag_strip_finish(&s, &out);
	write_all(2, out.data, out.len);
	buf_free(&out);
}
