/* The argv words that name a step's outputs (output_words.h): which words
 * a CMake compile masks, which derived names leave an output unnamed, the
 * placeholder that keeps the extension, the programs that may be served
 * under another output name, and the bytes that may be rewritten. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cachet/output_words.h"

#define BIT(i) ((uint64_t)1 << (i))

static void a_cmake_compile_masks_o_mf_and_mt(void **state)
{
	(void)state;
	char *argv[] = {"gcc",
	                "-O2",
	                "-MD",
	                "-MT",
	                "CMakeFiles/a.dir/x.c.o",
	                "-MF",
	                "CMakeFiles/a.dir/x.c.o.d",
	                "-o",
	                "CMakeFiles/a.dir/x.c.o",
	                "-c",
	                "/src/x.c",
	                NULL};
	char *outputs[] = {"/b/CMakeFiles/a.dir/x.c.o", "/b/CMakeFiles/a.dir/x.c.o.d"};
	int all = 0;
	uint64_t mask = output_words_mask(argv, "/b", outputs, 2, &all);
	assert_int_equal(mask, BIT(4) | BIT(6) | BIT(8));
	assert_int_equal(all, 1);
}

static void joined_forms_are_masked(void **state)
{
	(void)state;
	char *argv[] = {"cc", "-oout/x.o", "-Wp,-MD,out/x.d", "-c", "x.c", NULL};
	char *outputs[] = {"/b/out/x.o", "/b/out/x.d"};
	int all = 0;
	uint64_t mask = output_words_mask(argv, "/b", outputs, 2, &all);
	assert_int_equal(mask, BIT(1) | BIT(2));
	assert_int_equal(all, 1);
}

static void a_derived_name_leaves_an_output_unnamed(void **state)
{
	(void)state;
	/* -MD without -MF writes x.d beside x.o. */
	char *argv[] = {"gcc", "-c", "x.c", "-o", "o/x.o", "-MD", NULL};
	char *outputs[] = {"/b/o/x.o", "/b/o/x.d"};
	int all = 1;
	uint64_t mask = output_words_mask(argv, "/b", outputs, 2, &all);
	assert_int_equal(mask, BIT(4));
	assert_int_equal(all, 0);
}

static void an_option_that_derives_from_the_name_is_not_masked(void **state)
{
	(void)state;
	char *argv[] = {"gcc", "-frandom-seed=o/x.o", "-c", "x.c", "-o", "o/x.o", NULL};
	char *outputs[] = {"/b/o/x.o"};
	int all = 0;
	assert_int_equal(output_words_mask(argv, "/b", outputs, 1, &all), BIT(5));
}

static void the_placeholder_keeps_prefix_and_extension(void **state)
{
	(void)state;
	char *o = output_word_placeholder("CMakeFiles/a.dir/x.c.o");
	char *s = output_word_placeholder("CMakeFiles/a.dir/x.c.s");
	char *j = output_word_placeholder("-oa.dir/x.o");
	char *b = output_word_placeholder("b.dir/x.o");
	assert_string_not_equal(o, s);
	char *o2 = output_word_placeholder("CMakeFiles/b.dir/y.o");
	assert_string_equal(o, o2);
	free(o2);
	assert_string_equal(j, "-o\001output.o");
	assert_string_equal(b, "\001output.o");
	char *none = output_word_placeholder("dir.d/prog");
	assert_string_equal(none, "\001output");
	free(o);
	free(s);
	free(j);
	free(b);
	free(none);
}

static void compilers_and_their_parts_are_name_blind(void **state)
{
	(void)state;
	const char *yes[] = {"/usr/bin/gcc",
	                     "/usr/bin/gcc-12",
	                     "/usr/bin/x86_64-linux-gnu-gcc-12",
	                     "/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus",
	                     "/usr/bin/x86_64-linux-gnu-as",
	                     "/usr/bin/clang++-16",
	                     "/usr/bin/arm-none-eabi-ld.bfd",
	                     "/lib64/ld-linux-x86-64.so.2",
	                     NULL};
	const char *no[] = {"/usr/bin/python3", "/usr/bin/tar", "/bin/sh",      "/usr/bin/my-as",
	                    "/usr/bin/gcc-ar",  "/usr/bin/cp",  "/usr/bin/sed", NULL};
	for (const char **p = yes; *p; p++)
		assert_true(output_program_name_blind(*p));
	for (const char **p = no; *p; p++)
		assert_false(output_program_name_blind(*p));
}

static void a_depfile_target_is_rewritten_at_path_boundaries(void **state)
{
	(void)state;
	const char *dep = "a.dir/x.o: /src/x.c \\\n /src/x.h\n";
	char *from[] = {"a.dir/x.o"}, *to[] = {"b.dir/x.o"};
	struct buf out;
	buf_init(&out);
	assert_int_equal(output_text_rewrite(dep, strlen(dep), from, to, 1, &out), 1);
	buf_addch(&out, '\0');
	assert_string_equal(out.data, "b.dir/x.o: /src/x.c \\\n /src/x.h\n");
	buf_free(&out);
	char *needles[] = {"a.dir/x.o", "a.dir/x"};
	assert_true(output_bytes_rewritable(dep, strlen(dep), from, 1, needles, 2));
}

static void a_name_held_otherwise_is_not_rewritable(void **state)
{
	(void)state;
	char *tokens[] = {"a.dir/x.o"};
	char *needles[] = {"a.dir/x.o", "a.dir/x"};
	/* Inside a longer word, and a derived name. */
	const char *text = "see a.dir/x.o.map\n";
	assert_false(output_bytes_rewritable(text, strlen(text), tokens, 1, needles, 2));
	const char *derived = "a.dir/x.gcda\n";
	assert_false(output_bytes_rewritable(derived, strlen(derived), tokens, 1, needles, 2));
	/* Binary: not rewritten, even at a boundary. */
	const char bin[] = "\0\1 a.dir/x.o \0";
	assert_false(output_bytes_rewritable(bin, sizeof bin, tokens, 1, needles, 2));
	/* Holding none of it. */
	assert_true(output_bytes_rewritable(bin, 3, tokens, 1, needles, 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(a_cmake_compile_masks_o_mf_and_mt),
	    cmocka_unit_test(joined_forms_are_masked),
	    cmocka_unit_test(a_derived_name_leaves_an_output_unnamed),
	    cmocka_unit_test(an_option_that_derives_from_the_name_is_not_masked),
	    cmocka_unit_test(the_placeholder_keeps_prefix_and_extension),
	    cmocka_unit_test(compilers_and_their_parts_are_name_blind),
	    cmocka_unit_test(a_depfile_target_is_rewritten_at_path_boundaries),
	    cmocka_unit_test(a_name_held_otherwise_is_not_rewritable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
