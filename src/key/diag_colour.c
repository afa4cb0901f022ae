#include "cachet/diag_colour.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/path.h"
#include "cachet/toolchain.h"

static enum diag_colour family_of_name(const char *name)
{
	switch (toolchain_role(name)) {
	case TOOLCHAIN_GCC:
		return DIAG_COLOUR_GCC;
	case TOOLCHAIN_CLANG:
		return DIAG_COLOUR_CLANG;
	default:
		return DIAG_COLOUR_NONE;
	}
}

/* Options after which the compiler's stderr no longer depends on the
 * terminal in the way cachet undoes, or holds no diagnostics at all. */
static int decides_itself(const char *a)
{
	static const char *const prefixes[] = {
	    "-fdiagnostics-color",
	    "-fno-diagnostics-color",
	    "-fcolor-diagnostics",
	    "-fno-color-diagnostics",
	    "-fdiagnostics-urls",
	    "-fdiagnostics-plain-output",
	    "-fdiagnostics-format",
	    "-fansi-escape-codes",
	    "--help",
	    "--version",
	    "-Xclang",
	    "-###", /* prints the sub-commands, forced options and all */
	};
	if (a[0] == '@' || !strcmp(a, "-v"))
		return 1;
	for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
		if (!strncmp(a, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

/* Options under which the forced colour option would reach the outputs,
 * which must be what the compiler writes without cachet: clang writes its
 * whole command line into the object when asked to record it. gcc's DWARF
 * producer string, -frecord-gcc-switches, -fverbose-asm and LTO objects
 * leave the colour option out (checked with gcc 12). */
static int records_options(enum diag_colour family, const char *a)
{
	return family == DIAG_COLOUR_CLANG &&
	       (!strcmp(a, "-grecord-command-line") || !strcmp(a, "-frecord-command-line") ||
	        !strcmp(a, "-frecord-gcc-switches"));
}

enum diag_colour diag_colour_family(char *const *argv, const char *exe)
{
	const char *base = path_basename(exe);
	enum diag_colour f = family_of_name(base);
	/* cc and c++ are whichever compiler the system chose (Debian's
	 * alternatives): only the name their links lead to says which. */
	if (f == DIAG_COLOUR_NONE && toolchain_role(base) == TOOLCHAIN_SYSTEM_CC) {
		char *real = realpath(exe, NULL);
		if (real)
			f = family_of_name(path_basename(real));
		free(real);
	}
	if (f == DIAG_COLOUR_NONE)
		return f;
	for (char *const *a = argv + 1; *a; a++)
		if (decides_itself(*a) || records_options(f, *a))
			return DIAG_COLOUR_NONE;
	return f;
}

const char *const *diag_colour_options(enum diag_colour family)
{
	/* Colours only: gcc writes -fdiagnostics-urls=always into the DWARF
	 * producer string of every -g object, -fverbose-asm output and
	 * -frecord-gcc-switches, so forcing its hyperlinks would change what
	 * the step writes. */
	static const char *const gcc[] = {"-fdiagnostics-color=always", NULL};
	static const char *const clang[] = {"-fcolor-diagnostics", NULL};
	static const char *const none[] = {NULL};
	if (family == DIAG_COLOUR_GCC)
		return gcc;
	return family == DIAG_COLOUR_CLANG ? clang : none;
}

unsigned diag_colour_shown(enum diag_colour family, const char *term, const char *colorterm,
                           const char *vte_version)
{
	if (family == DIAG_COLOUR_NONE || !term || !*term || !strcmp(term, "dumb"))
		return 0;
	if (family == DIAG_COLOUR_CLANG)
		return DIAG_SHOW_COLOURS;
	if (colorterm && !strcmp(colorterm, "xfce4-terminal"))
		return DIAG_SHOW_COLOURS;
	if (!strcmp(term, "xterm") && vte_version && atoi(vte_version) < 5000)
		return DIAG_SHOW_COLOURS;
	if (!strcmp(term, "linux"))
		return DIAG_SHOW_COLOURS;
	return DIAG_SHOW_COLOURS | DIAG_SHOW_URLS;
}

/* ---- the stream ---- */

void diag_strip_init(struct diag_strip *s, unsigned keep)
{
	s->keep = keep;
	s->nheld = 0;
}

enum held_state { HELD_OPEN, HELD_FOREIGN, HELD_COLOUR, HELD_URL };

/* What the held bytes are so far. */
static enum held_state classify(const char *h, size_t n)
{
	if (n < 2)
		return HELD_OPEN;
	if (h[1] == '[') {
		for (size_t i = 2; i < n; i++) {
			char c = h[i];
			if ((c >= '0' && c <= '9') || c == ';')
				continue;
			return i == n - 1 && (c == 'm' || c == 'K') ? HELD_COLOUR : HELD_FOREIGN;
		}
		return HELD_OPEN;
	}
	if (h[1] != ']')
		return HELD_FOREIGN;
	if (n >= 3 && h[2] != '8')
		return HELD_FOREIGN;
	if (n >= 4 && h[3] != ';')
		return HELD_FOREIGN;
	if (n >= 5 && h[n - 1] == '\a')
		return HELD_URL;
	if (n >= 6 && h[n - 2] == '\033' && h[n - 1] == '\\')
		return HELD_URL;
	/* An ESC inside an OSC that is not its ST (ESC \\): not ours. */
	for (size_t i = 2; i + 1 < n; i++)
		if (h[i] == '\033')
			return HELD_FOREIGN;
	return HELD_OPEN;
}

void diag_strip_add(struct diag_strip *s, const void *data, size_t len, struct buf *out)
{
	const char *p = data;
	for (size_t i = 0; i < len; i++) {
		char c = p[i];
		if (!s->nheld) {
			if (c == '\033')
				s->held[s->nheld++] = c;
			else
				buf_addch(out, c);
			continue;
		}
		s->held[s->nheld++] = c;
		enum held_state st = classify(s->held, s->nheld);
		if (st == HELD_OPEN && s->nheld < sizeof s->held)
			continue;
		if (st == HELD_FOREIGN && c == '\033') {
			/* The ESC that ended a foreign sequence may start one of ours. */
			buf_add(out, s->held, s->nheld - 1);
			s->held[0] = c;
			s->nheld = 1;
			continue;
		}
		int drop = (st == HELD_COLOUR && !(s->keep & DIAG_SHOW_COLOURS)) ||
		           (st == HELD_URL && !(s->keep & DIAG_SHOW_URLS));
		if (!drop)
			buf_add(out, s->held, s->nheld);
		s->nheld = 0;
	}
}

void diag_strip_finish(struct diag_strip *s, struct buf *out)
{
	buf_add(out, s->held, s->nheld);
	s->nheld = 0;
}
