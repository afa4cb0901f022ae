#include "cachet/output_words.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/path.h"
#include "cachet/toolchain.h"
#include "cachet/strv.h"

/* The forms of a word that name an output file by a path after a prefix.
 * Only options whose value the compiler uses as a name: `-frandom-seed=X`
 * or `-fprofile-generate=X` derive other things from it and must keep
 * their word in the key. */
static const char *const path_forms[] = {
    "-Wp,-MMD,", "-Wp,-MD,", "--output=", "-o", "-MF", "-MT", "-MQ", NULL,
};

const char *output_word_path(const char *word, size_t *prefix_len)
{
	for (const char *const *f = path_forms; *f; f++) {
		size_t n = strlen(*f);
		if (!strncmp(word, *f, n) && word[n]) {
			*prefix_len = n;
			return word + n;
		}
	}
	*prefix_len = 0;
	return word;
}

/* The index of path among outputs, or -1. */
static long output_index(char *const *outputs, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(outputs[i], path))
			return (long)i;
	return -1;
}

uint64_t output_words_mask(char *const *argv, const char *cwd, char *const *outputs, size_t n,
                           int *all_named)
{
	size_t nwords = strv_len(argv);
	if (nwords > OUTPUT_WORDS_MAX)
		nwords = OUTPUT_WORDS_MAX;
	uint64_t mask = 0;
	unsigned char *named = calloc(n ? n : 1, 1);
	/* Words that are an output's path, whole or after a form's prefix;
	 * the word itself first (a file may be called "-ofoo"). */
	for (size_t i = 1; i < nwords; i++) {
		size_t prefix;
		const char *part = output_word_path(argv[i], &prefix);
		const char *tries[2] = {argv[i], prefix ? part : NULL};
		for (size_t t = 0; t < 2 && tries[t]; t++) {
			if (!*tries[t])
				continue;
			char *abs = path_join(cwd, tries[t]);
			long k = output_index(outputs, n, abs);
			free(abs);
			if (k >= 0) {
				named[k] = 1;
				mask |= (uint64_t)1 << i;
				break;
			}
		}
	}
	/* Words that repeat a masked word's path as text: `-MT <object>`
	 * names the depfile's target, which need not exist. */
	uint64_t named_words = mask;
	for (size_t i = 1; i < nwords; i++) {
		if (mask & ((uint64_t)1 << i))
			continue;
		size_t prefix;
		const char *part = output_word_path(argv[i], &prefix);
		for (size_t j = 1; j < nwords; j++) {
			if (!(named_words & ((uint64_t)1 << j)))
				continue;
			size_t jp;
			const char *jpart = output_word_path(argv[j], &jp);
			if (!strcmp(argv[i], jpart) || (prefix && !strcmp(part, jpart))) {
				mask |= (uint64_t)1 << i;
				break;
			}
		}
	}
	int all = 1;
	for (size_t k = 0; k < n; k++)
		all = all && named[k];
	free(named);
	*all_named = all;
	return mask;
}

char *output_word_placeholder(const char *word)
{
	size_t prefix;
	const char *part = output_word_path(word, &prefix);
	const char *base = path_basename(part);
	const char *dot = strrchr(base, '.');
	/* \001 cannot occur in a word that names a real file by accident. */
	return xasprintf("%.*s\001output%s", (int)prefix, word, dot && dot != base ? dot : "");
}

char *output_name_stem(const char *path)
{
	const char *base = path_basename(path);
	const char *dot = strrchr(base, '.');
	if (!dot || dot == base)
		return NULL;
	return xasprintf("%.*s", (int)(dot - path), path);
}

/* The programs of a C toolchain write an output's NAME only where they
 * write it out (which the scan of outputs finds). A generic program may
 * derive content from its output's name in any form (a generator that
 * writes the include guard OUT1_H for out1.h, `tar -caf x.tar.gz` choosing
 * its compression by the extension), so a step that runs anything else
 * keeps its whole argv in its key. */
int output_program_name_blind(const char *path)
{
	return toolchain_role(path_basename(path)) != TOOLCHAIN_NONE;
}

static int boundary(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':';
}

size_t output_text_rewrite(const void *data, size_t len, char *const *from, char *const *to,
                           size_t n, struct buf *out)
{
	const unsigned char *p = data;
	size_t replaced = 0;
	for (size_t i = 0; i < len;) {
		if (boundary(p[i])) {
			buf_addch(out, (char)p[i++]);
			continue;
		}
		size_t end = i;
		while (end < len && !boundary(p[end]))
			end++;
		size_t k = 0;
		for (; k < n; k++)
			if (strlen(from[k]) == end - i && !memcmp(from[k], p + i, end - i))
				break;
		if (k < n) {
			if (to && to[k])
				buf_addstr(out, to[k]);
			replaced++;
		} else {
			buf_add(out, p + i, end - i);
		}
		i = end;
	}
	return replaced;
}

static int holds_any(const void *data, size_t len, char *const *needles, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (needles[i][0] && memmem(data, len, needles[i], strlen(needles[i])))
			return 1;
	return 0;
}

int output_bytes_rewritable(const void *data, size_t len, char *const *tokens, size_t n,
                            char *const *needles, size_t nneedles)
{
	if (!holds_any(data, len, needles, nneedles))
		return 1;
	if (memchr(data, '\0', len))
		return 0;
	/* What is left once the tokens are taken out must not name them. */
	struct buf rest;
	buf_init(&rest);
	output_text_rewrite(data, len, tokens, NULL, n, &rest);
	int ok = !holds_any(rest.data, rest.len, needles, nneedles);
	buf_free(&rest);
	return ok;
}
