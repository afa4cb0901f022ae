#include "cachet/define_words.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/bug.h"
#include "cachet/output_words.h"
#include "cachet/path.h"
#include "cachet/strv.h"
#include "cachet/toolchain.h"

/* Options of gcc and clang whose argument is the next word: that word is
 * never a define word, even when it starts with -D. */
static const char *const separate_argument[] = {
    "-o",
    "-x",
    "-MF",
    "-MT",
    "-MQ",
    "-include",
    "-imacros",
    "-isystem",
    "-idirafter",
    "-iquote",
    "-iprefix",
    "-iwithprefix",
    "-isysroot",
    "-imultilib",
    "-I",
    "-L",
    "-l",
    "-A",
    "-Xassembler",
    "-Xlinker",
    "-mllvm",
    "-aux-info",
    "-target",
    "-arch",
    "-T",
    "-u",
    "-z",
    "-e",
    "--param",
    "-MJ",
    "-iframework",
    "-F",
    "--sysroot",
    "-isystem-after",
    "-iwithprefixbefore",
    "-ivfsoverlay",
    "-gcc-toolchain",
    NULL,
};

static int in_list(const char *word, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(word, *list))
			return 1;
	return 0;
}

static int has_prefix(const char *word, const char *prefix)
{
	return !strncmp(word, prefix, strlen(prefix));
}

/* Words that make a compile ineligible, whole. */
static const char *const refused_words[] = {
    /* -E's text would not be what the compile preprocesses, or the
     * step is no compile of one source to one object. */
    "-E",
    "-M",
    "-MM",
    "-MG",
    "-P",
    "-C",
    "-CC",
    "-",
    "-traditional",
    "--preprocess",
    "--dependencies",
    "--user-dependencies",
    "--no-line-commands",
    "--comments",
    "--comments-in-macros",
    /* -E that leaves macros unexpanded (their uses would read the same
     * under any -D), or a source taken as preprocessed already. */
    "-fdirectives-only",
    "-fpreprocessed",
    /* The command line written out: stderr (the driver's commands),
     * clang's DW_AT_producer and its .GCC.command.line. */
    "-v",
    "--verbose",
    "-###",
    "-frecord-gcc-switches",
    "-grecord-command-line",
    "-frecord-command-line",
    "-gcodeview-command-line",
    /* The macros written into the debug information. */
    "-fdebug-macro",
    "-gmacro",
    /* Options passed to a part of the toolchain as they are: anything. */
    "-Xclang",
    "-Xpreprocessor",
    "-Xarch_host",
    "-Xarch_device",
    "-Xopenmp-target",
    "-include-pch",
    NULL,
};

/* Prefixes of words that make a compile ineligible. */
static const char *const refused_prefixes[] = {
    /* gcc's -d<letters> dumps (-dD, -dM, -dN, -dI, -dU write macros into
     * the output; -dumpbase names dump files). */
    "-d",
    "-save-temps",
    "--save-temps",
    /* Bitcode embedded with its command line; modules and precompiled
     * headers that are valid for one set of macros only. */
    "-fembed-bitcode",
    "-fmodule",
    "-gmodules",
    "-fpch",
    "-fimplicit-module",
    "-fprebuilt-module",
    "--precompile",
    "-Xarch_",
    NULL,
};

/* 1 for a word that asks for macro debug information: -g3, -ggdb3,
 * -gdwarf-4 -g3 (its -g3), -gstabs3..., not -gdwarf-3 (a DWARF version). */
static int macro_debug_level(const char *word)
{
	size_t n = strlen(word);
	if (n < 3 || strncmp(word, "-g", 2) || word[n - 1] != '3')
		return 0;
	return strcmp(word, "-gdwarf-3") != 0;
}

const char *define_words_ineligible(const char *exe, char *const *argv)
{
	enum toolchain_role role = toolchain_role(path_basename(exe));
	if (role != TOOLCHAIN_GCC && role != TOOLCHAIN_CLANG && role != TOOLCHAIN_SYSTEM_CC)
		return "not a C compiler driver";
	int compiles = 0;
	for (size_t i = 1; argv[i]; i++) {
		const char *w = argv[i];
		if (in_list(w, separate_argument)) {
			if (!argv[i + 1])
				return "an option without its argument";
			i++;
			continue;
		}
		if (!strcmp(w, "-c") || !strcmp(w, "-S")) {
			compiles++;
			continue;
		}
		if (in_list(w, refused_words))
			return "an option that writes macros or the command line out";
		for (const char *const *p = refused_prefixes; *p; p++)
			if (has_prefix(w, *p))
				return "an option that writes macros or the command line out";
		if (macro_debug_level(w))
			return "macros in the debug information (-g3)";
		/* clang takes gcc's name for its -grecord-command-line. */
		if (role != TOOLCHAIN_GCC && !strcmp(w, "-grecord-gcc-switches"))
			return "an option that writes macros or the command line out";
		/* Options handed to the preprocessor as they are, but for a
		 * depfile: a -Wp,-DX stays in the key, but the -E command
		 * moves the define words before it, which may change what a
		 * -Wp,-UX after them does. */
		if (has_prefix(w, "-Wp,") && !has_prefix(w, "-Wp,-MD,") &&
		    !has_prefix(w, "-Wp,-MMD,"))
			return "an option handed to the preprocessor";
	}
	return compiles == 1 ? NULL : "not a -c or -S compile";
}

/* 1 when argv[i] is -D or -U alone (its macro is the next word), 2 when
 * joined with its macro, 0 for any other word. */
static int define_form(const char *word)
{
	if ((word[0] != '-') || (word[1] != 'D' && word[1] != 'U'))
		return 0;
	return word[2] ? 2 : 1;
}

char **define_words_remove(char *const *argv, size_t **at, char ***defines)
{
	size_t n = strv_len(argv);
	char **out = xcalloc(n + 1, sizeof *out);
	size_t *pos = xcalloc(n + 1, sizeof *pos);
	char **defs = NULL;
	size_t k = 0, ndefs = 0;
	for (size_t i = 0; i < n; i++) {
		int form = i ? define_form(argv[i]) : 0;
		if (form == 1) {
			if (!argv[i + 1]) {
				strv_free(out);
				strv_free(defs);
				free(pos);
				return NULL;
			}
			strv_push(&defs, &ndefs, xasprintf("%s%s", argv[i], argv[i + 1]));
			i++;
			continue;
		}
		if (form == 2) {
			strv_push(&defs, &ndefs, xstrdup(argv[i]));
			continue;
		}
		pos[k] = i;
		out[k++] = xstrdup(argv[i]);
		/* An option's argument is never a define word. */
		if (i && in_list(argv[i], separate_argument) && argv[i + 1]) {
			i++;
			pos[k] = i;
			out[k++] = xstrdup(argv[i]);
		}
	}
	if (at)
		*at = pos;
	else
		free(pos);
	if (defines) {
		if (!defs)
			defs = xcalloc(1, sizeof *defs);
		*defines = defs;
	} else {
		strv_free(defs);
	}
	return out;
}

/* The options whose argument names an output (output_words.h's separate
 * forms): left out with it. */
static const char *const output_options[] = {"-o", "-MF", "-MT", "-MQ", NULL};

/* Options that only ask for a depfile, which -E would write too. */
static const char *const depfile_options[] = {"-MD", "-MMD", "-MP", NULL};

char **define_words_preprocess_argv(char *const *argv, uint64_t out_mask, char *const *defines)
{
	size_t n = strv_len(argv);
	char **out = NULL;
	size_t k = 0;
	strv_push(&out, &k, xstrdup(argv[0]));
	for (char *const *d = defines; d && *d; d++)
		strv_push(&out, &k, xstrdup(*d));
	for (size_t i = 1; i < n; i++) {
		const char *w = argv[i];
		int masked = i < OUTPUT_WORDS_MAX && (out_mask & ((uint64_t)1 << i));
		int next_masked = i + 1 < OUTPUT_WORDS_MAX && argv[i + 1] &&
		                  (out_mask & ((uint64_t)1 << (i + 1)));
		size_t prefix;
		output_word_path(w, &prefix);
		/* A bare masked path that no option before it names, or an
		 * output option whose path is not masked: the command would
		 * write where the compile writes. */
		if (masked != (prefix != 0) && (masked || w[0] == '-')) {
			strv_free(out);
			return NULL;
		}
		if (masked)
			continue;
		if (in_list(w, output_options)) {
			if (!next_masked) {
				strv_free(out);
				return NULL;
			}
			i++;
			continue;
		}
		if (in_list(w, depfile_options))
			continue;
		int form = define_form(w);
		if (form) {
			i += form == 1;
			continue;
		}
		if (!strcmp(w, "-c") || !strcmp(w, "-S")) {
			strv_push(&out, &k, xstrdup("-E"));
			strv_push(&out, &k, xstrdup("-dD"));
			continue;
		}
		strv_push(&out, &k, xstrdup(w));
		if (in_list(w, separate_argument) && argv[i + 1])
			strv_push(&out, &k, xstrdup(argv[++i]));
	}
	return out;
}

/* 1 when the line is a line marker (`# <n> "<file>"...`) naming the file
 * the command line's definitions are read from. */
static int command_line_marker(const char *line, size_t len, int *is_marker)
{
	*is_marker = 0;
	if (len < 2 || line[0] != '#' || line[1] != ' ')
		return 0;
	size_t i = 2;
	while (i < len && line[i] >= '0' && line[i] <= '9')
		i++;
	if (i == 2 || i + 1 >= len || line[i] != ' ' || line[i + 1] != '"')
		return 0;
	*is_marker = 1;
	const char *name = line + i + 1;
	size_t left = len - i - 1;
	static const char *const names[] = {"\"<command-line>\"", "\"<command line>\""};
	for (size_t k = 0; k < 2; k++) {
		size_t m = strlen(names[k]);
		if (left >= m && !memcmp(name, names[k], m))
			return 1;
	}
	return 0;
}

static int directive(const char *line, size_t len, const char *name)
{
	size_t m = strlen(name);
	return len > m && !memcmp(line, name, m) && line[m] == ' ';
}

void define_words_text_digest(const void *text, size_t len, struct digest *out)
{
	struct hasher h;
	if (hasher_init(&h, NULL) < 0)
		BUG("SHA-256 could not be started");
	const char *p = text, *end = p + len;
	int in_command_line = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;
		size_t line_len = (size_t)((nl ? nl : end) - p);
		int marker;
		int names_command_line = command_line_marker(p, line_len, &marker);
		if (marker)
			in_command_line = names_command_line;
		int skip =
		    names_command_line || (in_command_line && (directive(p, line_len, "#define") ||
		                                               directive(p, line_len, "#undef")));
		if (!skip)
			hasher_update(&h, p, (size_t)(next - p));
		p = next;
	}
	hasher_final(&h, out);
}
