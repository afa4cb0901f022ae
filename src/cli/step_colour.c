#include "cli/step_colour.h"
#include "cli/tee.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/diag_colour.h"
#include "cachet/fdio.h"
#include "cachet/strv.h"
#include "cli/cli.h"

char **step_colour_argv(const struct step *step, char **argv)
{
	if (!step->colour)
		return argv;
	enum diag_colour family = (enum diag_colour)step->colour;
	const char *const *extra = diag_colour_options(family);
	size_t n = strv_len(argv), k = strv_len((char *const *)extra);
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

void step_colour_replay(const struct step *step, const struct result *res, const void *out,
                        size_t out_len, const void *err, size_t err_len)
{
	/* Only stderr is filtered: without any, no terminal to ask about
	 * (two ioctls of every quiet hit). */
	if (!step->colour || !err_len) {
		replay_streams(res, out, out_len, err, err_len, NULL);
		return;
	}
	struct diag_strip strip;
	diag_strip_init(&strip, step_colour_keep(step));
	replay_streams(res, out, out_len, err, err_len, &strip);
}
