/*
 * Compiler diagnostics on a terminal or in a pipe.
 *
 * gcc and clang colour their diagnostics (and gcc 10+ adds hyperlinks to
 * the option that gave a warning) only when stderr is a terminal. Keying
 * that fact would split every compile between `make` in a terminal and
 * `make | tee log`. For a compiler whose colouring cachet knows, the step
 * is keyed without it, always run in a pipe with the colours forced on, and
 * its stderr stored as the compiler prints it on a terminal; a replay then
 * removes what the compiler would not print where the stream goes now.
 * Any other program keeps the terminal fact in its key: it may print
 * something else entirely to a terminal (progress bars, columns, a pager).
 */
#ifndef CACHET_DIAG_COLOUR_H
#define CACHET_DIAG_COLOUR_H

#include <stddef.h>

#include "cachet/buf.h"

enum diag_colour {
	DIAG_COLOUR_NONE = 0,  /* not a compiler cachet can colour: terminal keyed */
	DIAG_COLOUR_GCC = 1,   /* gcc, g++ and cross gcc: -fdiagnostics-color=always */
	DIAG_COLOUR_CLANG = 2, /* clang, clang++: -fcolor-diagnostics */
};

/* The family of the step's compiler, by the name of its executable (exe, as
 * found on PATH; "cc" and "c++" by the name their symlinks lead to), or
 * DIAG_COLOUR_NONE when argv decides colours, URLs or the diagnostics'
 * form itself (-fdiagnostics-color=..., -fdiagnostics-plain-output, a
 * response file that may hold them), prints help, version text (which
 * gcc wraps to the terminal's width) or its sub-commands (-###), or would
 * write the forced option into its outputs (clang's
 * -grecord-command-line). */
enum diag_colour diag_colour_family(char *const *argv, const char *exe);

/* The options that make the compiler print its colours in a pipe as on a
 * terminal: NULL-terminated, static. Not gcc's hyperlinks (see there). */
const char *const *diag_colour_options(enum diag_colour family);

enum {
	DIAG_SHOW_COLOURS = 1 << 0, /* SGR sequences: ESC [ params m, ESC [ K */
	DIAG_SHOW_URLS = 1 << 1,    /* OSC 8 hyperlinks: ESC ] 8 ; ... BEL or ST */
};

/* What the compiler of this family prints to a terminal with these
 * variables (NULL when unset): DIAG_SHOW_* bits. gcc's rule: colours unless
 * TERM is unset or "dumb"; URLs as well, except on the terminals gcc knows
 * to garble them (COLORTERM=xfce4-terminal, an old VTE under TERM=xterm,
 * the Linux console). clang: colours unless TERM is unset or "dumb". */
unsigned diag_colour_shown(enum diag_colour family, const char *term, const char *colorterm,
                           const char *vte_version);

/* Removes escape sequences from a stream that arrives in chunks: a
 * sequence cut by a chunk boundary is held back until the next chunk. */
struct diag_strip {
	unsigned keep;  /* DIAG_SHOW_* bits of what passes through */
	char held[512]; /* the start of a sequence not yet complete */
	size_t nheld;
};

void diag_strip_init(struct diag_strip *s, unsigned keep);
/* Appends to out what of data passes. */
void diag_strip_add(struct diag_strip *s, const void *data, size_t len, struct buf *out);
/* Appends to out what is still held (an unfinished sequence, as it came). */
void diag_strip_finish(struct diag_strip *s, struct buf *out);

#endif
