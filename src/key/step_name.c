#include "cachet/step_name.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/path.h"
#include "cachet/redact.h"

#define SHORT_NAME_MAX 60

/* Options whose value is the next argument: not operands. The compilers'
 * own, which most steps are; another program's operand that follows one of
 * these names only shows less in its name. */
static int takes_value(const char *a)
{
	static const char *const opts[] = {
	    "-o",        "-I",          "-D",
	    "-U",        "-MF",         "-MT",
	    "-MQ",       "-include",    "-imacros",
	    "-isystem",  "-iquote",     "-idirafter",
	    "-iprefix",  "-isysroot",   "-x",
	    "-L",        "-l",          "-T",
	    "-Xlinker",  "-Xassembler", "-Xpreprocessor",
	    "-Xclang",   "-aux-info",   "-e",
	    "--sysroot", "-target",     "-arch",
	    "-ccbin",    "-gencode",
	};
	for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
		if (!strcmp(a, opts[i]))
			return 1;
	return 0;
}

/* Calls fn for each argument that names the step (see step_name.h). */
static void each_named_arg(char *const *argv, int modes,
                           void (*fn)(void *ctx, char *const *argv, size_t i), void *ctx)
{
	for (size_t i = 1; argv[i]; i++) {
		const char *a = argv[i];
		if (a[0] == '-' && a[1]) {
			if (modes && (!strcmp(a, "-c") || !strcmp(a, "-S") || !strcmp(a, "-E")))
				fn(ctx, argv, i);
			else if (takes_value(a) && argv[i + 1])
				i++;
			continue;
		}
		fn(ctx, argv, i);
	}
}

static void add_shown(void *ctx, char *const *argv, size_t i)
{
	struct buf *b = ctx;
	if (b->len > SHORT_NAME_MAX)
		return;
	char *shown = redact_argv(argv, i);
	const char *base = shown[0] == '-' || !strchr(shown, '/') || strchr(shown, ' ')
	                       ? shown
	                       : path_basename(shown);
	buf_addch(b, ' ');
	if (strpbrk(base, " \t\n'\"")) {
		/* A script (sh -c '...'): quoted, so that it reads as one. */
		buf_addch(b, '\'');
		buf_addstr(b, base);
		buf_addch(b, '\'');
	} else {
		buf_addstr(b, *base ? base : shown);
	}
	free(shown);
}

char *step_short_name(char *const *argv)
{
	struct buf b;
	buf_init(&b);
	buf_addstr(&b, path_basename(argv[0]));
	each_named_arg(argv, 1, add_shown, &b);
	if (b.len > SHORT_NAME_MAX) {
		b.len = SHORT_NAME_MAX;
		/* Not inside a UTF-8 sequence. */
		while (b.len && ((unsigned char)b.data[b.len] & 0xc0) == 0x80)
			b.len--;
		b.data[b.len] = '\0';
		buf_addstr(&b, "…");
	}
	return buf_detach(&b, NULL);
}

static void add_whole(void *ctx, char *const *argv, size_t i)
{
	struct buf *b = ctx;
	buf_put_str(b, argv[i]);
}

void step_identity(const struct step *step, struct digest *out)
{
	struct buf b;
	buf_init(&b);
	buf_put_str(&b, "cachet step identity 1");
	buf_put_str(&b, path_basename(step->argv[0]));
	each_named_arg(step->argv, 0, add_whole, &b);
	digest_bytes(b.data, b.len, out);
	buf_free(&b);
}
