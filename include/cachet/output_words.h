/*
 * The argv words that name a step's outputs, for duplicate compiles: CMake
 * compiles a source for a static and a shared library (or a library and a
 * program) with argvs that differ only in `-o`, `-MF` and `-MT`. A step
 * whose outputs depend on their names only literally, where the names occur
 * at all, computes the same thing under another name (duplicate.h).
 *
 * Pure functions of argv, cwd, paths and bytes: no file is looked at.
 */
#ifndef CACHET_OUTPUT_WORDS_H
#define CACHET_OUTPUT_WORDS_H

#include <stddef.h>
#include <stdint.h>

#include "cachet/buf.h"

/* Words past this position are never masked (a bit per word). */
#define OUTPUT_WORDS_MAX 64

/* The path part of word in one of the forms that name an output file
 * (`-o<path>`, `--output=<path>`, `-MF<path>`, `-MT<path>`, `-MQ<path>`,
 * `-Wp,-MD,<path>`, `-Wp,-MMD,<path>`), or the whole word; *prefix_len
 * gets the length of the form's prefix. Only these forms: an option that
 * derives anything else from the name (gcc's -frandom-seed=<name> hashes
 * it) keeps its word in the key. */
const char *output_word_path(const char *word, size_t *prefix_len);

/* The mask of the words of argv (from 1, below OUTPUT_WORDS_MAX) that name
 * outputs: a word whose path part, taken relative to cwd, is one of the n
 * outputs (absolute, tidied paths), and a word whose path part is textually
 * the path part of such a word (gcc's `-MT <target>` names the object).
 * *all_named is set to 1 when every output is named by a masked word, 0
 * when one is not (a derived name: `-MD` without `-MF` writes x.d beside
 * x.o; the step would write another name under another -o). */
uint64_t output_words_mask(char *const *argv, const char *cwd, char *const *outputs, size_t n,
                           int *all_named);

/* The word that stands for masked word `word` in a duplicate key: its
 * form's prefix and its path's extension kept (x.o and x.s, x.o and x.i
 * must never share a key), the rest of the path left out. malloc'd. */
char *output_word_placeholder(const char *word);

/* The path without the extension of its basename (malloc'd), or NULL when
 * that is the path itself: the name derived outputs share (x.c.gcda and
 * x.c.dwo beside x.c.o). */
char *output_name_stem(const char *path);

/* 1 when a program the step executed computes outputs that depend on their
 * names only where it writes the names out (see output_words.c for the
 * list and why a generic program cannot be one). */
int output_program_name_blind(const char *path);

/* Rewrites the text data (no NUL byte) into out, replacing every token
 * (a run of bytes bounded by the start, the end, white space or ':')
 * equal to from[i] by to[i]; to NULL removes it. Returns the number of
 * tokens replaced. */
size_t output_text_rewrite(const void *data, size_t len, char *const *from, char *const *to,
                           size_t n, struct buf *out);

/* 1 when bytes may be served under another output name with rewritten
 * names: none of needles[0..nneedles) occurs in them, or they are text (no
 * NUL) and every occurrence left is one of the n tokens tokens[] (at path
 * boundaries, as a depfile names its target), which a restore rewrites.
 * 0 otherwise: the output holds its own name in a form a rewrite cannot
 * reach (an ELF naming its .dwo or .gcda, a generated header's guard). */
int output_bytes_rewritable(const void *data, size_t len, char *const *tokens, size_t n,
                            char *const *needles, size_t nneedles);

#endif
