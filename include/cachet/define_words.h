/*
 * The -D and -U words of a compile, for preprocessed duplicates
 * (preprocessed_duplicate.h): CMake compiles a source for a static and a
 * shared library with argvs that differ in their output words and in one
 * `-D<target>_EXPORTS` that the source may never test. Such a compile
 * computes what the other did when the two preprocessed translation units
 * are the same: a macro reaches the compiler only through the text the
 * preprocessor gives it, unless an option writes the command line or the
 * macros out (`-g3`, `-frecord-gcc-switches`, ...), which makes the compile
 * ineligible.
 *
 * Pure functions of argv and bytes: no file is looked at.
 */
#ifndef CACHET_DEFINE_WORDS_H
#define CACHET_DEFINE_WORDS_H

#include <stddef.h>
#include <stdint.h>

#include "cachet/digest.h"

/* NULL when the compile of argv (argv[0] any name; exe its program's path)
 * may be compared by its preprocessed text: a gcc or clang driver compiling
 * with -c or -S, no option that puts macros or the command line into an
 * output or that makes -E differ from what the compile preprocesses. Else
 * why not (a static string). */
const char *define_words_ineligible(const char *exe, char *const *argv);

/* argv without its define words (`-DX`, `-D X`, `-UX`, `-U X`; not
 * `-Wp,-DX`, nor a word that is another option's argument), malloc'd
 * vector of malloc'd strings. at (malloc'd, may be NULL) gets, for each
 * word of the result, its index in argv; defines (may be NULL) the define
 * words in order, each joined into one word (`-D X` as `-DX`). NULL when a
 * -D or -U has no macro after it. */
char **define_words_remove(char *const *argv, size_t **at, char ***defines);

/* The command that preprocesses what argv (eligible) compiles, with the
 * define words given instead of its own: -c or -S replaced by -E and -dD
 * (the macros' definitions, where they are, written into the text), the
 * output words (bits of out_mask, an output_words.h mask of argv) and the
 * options that write a depfile left out, so that it writes nothing but
 * its stdout. malloc'd; NULL when an output word cannot be left out alone
 * (a bare path that is no option's argument). */
char **define_words_preprocess_argv(char *const *argv, uint64_t out_mask, char *const *defines);

/* The digest of the text written by a preprocess_argv command, without
 * what the command line itself defines: the #define and #undef lines and
 * the line markers of "<command-line>" (gcc) and "<command line>" (clang).
 * The macros it defines show in the text where they are used or tested. */
void define_words_text_digest(const void *text, size_t len, struct digest *out);

#endif
