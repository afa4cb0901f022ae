/* The define words of a compile (define_words.h): which compiles may be
 * compared by their preprocessed text, which words are define words (and
 * which only look like one), the -E command made of a compile, and the
 * digest that leaves out what the command line defines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cachet/define_words.h"
#include "cachet/strv.h"

#define BIT(i) ((uint64_t)1 << (i))

/* argv joined by spaces, for comparing (static buffer). */
static const char *joined(char *const *argv)
{
	static char out[1024];
	out[0] = '\0';
	for (char *const *a = argv; *a; a++) {
		if (a != argv)
			strcat(out, " ");
		strcat(out, *a);
	}
	return out;
}

static void compiles_of_c_drivers_are_eligible(void **state)
{
	(void)state;
	char *cmake[] = {"gcc", "-DX", "-O2", "-o", "a.o", "-c", "a.c", NULL};
	assert_null(define_words_ineligible("/usr/bin/gcc", cmake));
	assert_null(define_words_ineligible("/usr/bin/x86_64-linux-gnu-gcc-12", cmake));
	assert_null(define_words_ineligible("/usr/bin/clang-14", cmake));
	char *asm_only[] = {"cc", "-S", "a.c", "-o", "a.s", NULL};
	assert_null(define_words_ineligible("/usr/bin/cc", asm_only));
	/* Not a driver, not a compile, or one of two sources. */
	assert_non_null(define_words_ineligible("/usr/bin/cpp", cmake));
	assert_non_null(define_words_ineligible("/usr/bin/python3", cmake));
	char *link[] = {"gcc", "a.o", "-o", "a", NULL};
	assert_non_null(define_words_ineligible("/usr/bin/gcc", link));
	char *twice[] = {"gcc", "-c", "-S", "a.c", NULL};
	assert_non_null(define_words_ineligible("/usr/bin/gcc", twice));
}

static void options_that_write_macros_out_are_refused(void **state)
{
	(void)state;
	const char *refused[] = {"-g3",
	                         "-ggdb3",
	                         "-gstabs3",
	                         "-dD",
	                         "-dM",
	                         "-dN",
	                         "-dU",
	                         "-fdebug-macro",
	                         "-frecord-gcc-switches",
	                         "-grecord-command-line",
	                         "-save-temps",
	                         "-save-temps=obj",
	                         "-E",
	                         "-P",
	                         "-v",
	                         "-fembed-bitcode",
	                         "-fmodules",
	                         "-Xclang",
	                         "-Wp,-dD",
	                         "-"};
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		char *argv[] = {"gcc", (char *)refused[i], "-c", "a.c", "-o", "a.o", NULL};
		if (!define_words_ineligible("/usr/bin/gcc", argv))
			fail_msg("%s accepted", refused[i]);
	}
	/* gcc's producer string leaves -D out; clang's record does not. */
	char *record[] = {"cc", "-grecord-gcc-switches", "-c", "a.c", NULL};
	assert_null(define_words_ineligible("/usr/bin/gcc", record));
	assert_non_null(define_words_ineligible("/usr/bin/clang", record));
	/* A DWARF version, not a level; a depfile through the preprocessor. */
	char *fine[] = {"gcc", "-gdwarf-3", "-Wp,-MD,a.d", "-c", "a.c", NULL};
	assert_null(define_words_ineligible("/usr/bin/gcc", fine));
	/* A define handed to the preprocessor, which -E would see after the
	 * define words it moves. */
	char *wp[] = {"gcc", "-Wp,-UX", "-DX", "-c", "a.c", NULL};
	assert_non_null(define_words_ineligible("/usr/bin/gcc", wp));
}

static void define_words_are_removed_and_joined(void **state)
{
	(void)state;
	char *argv[] = {"gcc",     "-DA=1", "-D",       "B",  "-UC", "-U", "D",
	                "-Wp,-DE", "-MT",   "-Dtarget", "-c", "a.c", NULL};
	size_t *at = NULL;
	char **defines = NULL;
	char **rest = define_words_remove(argv, &at, &defines);
	assert_non_null(rest);
	/* -Wp,-DE stays; the argument of -MT is no define word. */
	assert_string_equal(joined(rest), "gcc -Wp,-DE -MT -Dtarget -c a.c");
	assert_string_equal(joined(defines), "-DA=1 -DB -UC -UD");
	size_t expect_at[] = {0, 7, 8, 9, 10, 11};
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(at[i], expect_at[i]);
	strv_free(rest);
	strv_free(defines);
	free(at);
	char *dangling[] = {"gcc", "-c", "a.c", "-D", NULL};
	assert_null(define_words_remove(dangling, NULL, NULL));
}

static void the_preprocess_command_writes_only_stdout(void **state)
{
	(void)state;
	char *argv[] = {"gcc",   "-DOWN", "-O2",   "-MD", "-MT", "d/a.o", "-MF",
	                "d/a.d", "-o",    "d/a.o", "-c",  "a.c", NULL};
	char *defines[] = {"-DOTHER", "-UX", NULL};
	char **pp = define_words_preprocess_argv(argv, BIT(5) | BIT(7) | BIT(9), defines);
	assert_non_null(pp);
	assert_string_equal(joined(pp), "gcc -DOTHER -UX -O2 -E -dD a.c");
	strv_free(pp);
	/* Joined forms. */
	char *joined_argv[] = {"cc", "-Wp,-MD,d/a.d", "-od/a.o", "-c", "a.c", NULL};
	pp = define_words_preprocess_argv(joined_argv, BIT(1) | BIT(2), NULL);
	assert_string_equal(joined(pp), "cc -E -dD a.c");
	strv_free(pp);
	/* An output the mask leaves: the command would write it. */
	assert_null(define_words_preprocess_argv(argv, BIT(5) | BIT(7), defines));
	assert_null(define_words_preprocess_argv(joined_argv, BIT(1), NULL));
}

static void the_text_digest_leaves_out_the_command_line(void **state)
{
	(void)state;
	const char *with = "# 0 \"a.c\"\n# 0 \"<built-in>\"\n#define __GNUC__ 12\n"
	                   "# 0 \"<command-line>\"\n#define lib_EXPORTS 1\n"
	                   "# 0 \"<command-line>\"\n#undef NDEBUG\n"
	                   "# 0 \"<command-line>\"\n# 1 \"/usr/include/stdc-predef.h\" 1 3 4\n"
	                   "#define _STDC_PREDEF_H 1\n# 0 \"<command-line>\" 2\n"
	                   "# 1 \"a.c\"\nint f(void) { return 1; }\n";
	const char *without = "# 0 \"a.c\"\n# 0 \"<built-in>\"\n#define __GNUC__ 12\n"
	                      "# 0 \"<command-line>\"\n# 1 \"/usr/include/stdc-predef.h\" 1 3 4\n"
	                      "#define _STDC_PREDEF_H 1\n# 0 \"<command-line>\" 2\n"
	                      "# 1 \"a.c\"\nint f(void) { return 1; }\n";
	struct digest a, b;
	define_words_text_digest(with, strlen(with), &a);
	define_words_text_digest(without, strlen(without), &b);
	assert_true(digest_equal(&a, &b));
	/* clang's name for it. */
	const char *clang =
	    "# 1 \"<command line>\" 1\n#define lib_EXPORTS 1\n# 1 \"<built-in>\" 2\n"
	    "# 1 \"a.c\" 2\nint f(void) { return 1; }\n";
	const char *clang_without = "# 1 \"<command line>\" 1\n# 1 \"<built-in>\" 2\n# 1 \"a.c\" "
	                            "2\nint f(void) { return 1; }\n";
	define_words_text_digest(clang, strlen(clang), &a);
	define_words_text_digest(clang_without, strlen(clang_without), &b);
	assert_true(digest_equal(&a, &b));
	/* A definition in a header, or other text: kept. */
	const char *header = "# 0 \"<command-line>\" 2\n# 1 \"a.c\"\n#define lib_EXPORTS 1\n"
	                     "int f(void) { return 1; }\n";
	const char *plain = "# 0 \"<command-line>\" 2\n# 1 \"a.c\"\nint f(void) { return 1; }\n";
	define_words_text_digest(header, strlen(header), &a);
	define_words_text_digest(plain, strlen(plain), &b);
	assert_false(digest_equal(&a, &b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(compiles_of_c_drivers_are_eligible),
	    cmocka_unit_test(options_that_write_macros_out_are_refused),
	    cmocka_unit_test(define_words_are_removed_and_joined),
	    cmocka_unit_test(the_preprocess_command_writes_only_stdout),
	    cmocka_unit_test(the_text_digest_leaves_out_the_command_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
