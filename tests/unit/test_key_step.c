/* The weak key of a step as it is shown: a compiler cachet colours for is
 * keyed without its terminal, any other step with it; keyed once, the same
 * key as the fields set and keyed again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cachet/step.h"

static char *const argv[] = {"/bin/sh", "-c", "true", NULL};
static char *const envp[] = {"PATH=/usr/bin:/bin", "LANG=C", NULL};

static void shown(const struct step_show *show, struct step *out)
{
	struct error e = {0};
	assert_int_equal(
	    step_init_shown(out, argv, "/bin/sh", envp, NULL, NULL, NULL, NULL, NULL, show, &e), 0);
}

static void the_weak_key_keyed_once_is_the_key_of_the_fields(void **state)
{
	(void)state;
	struct step_show colour = {.colour = 1, .terminal = STEP_TTY_STDERR, .term = "xterm"};
	struct step_show tty = {.terminal = STEP_TTY_STDOUT | STEP_TTY_STDERR, .term = "xterm"};
	const struct step_show *shows[] = {NULL, &colour, &tty};
	for (size_t i = 0; i < sizeof shows / sizeof *shows; i++) {
		struct step s;
		struct digest again;
		shown(shows[i], &s);
		assert_int_equal(step_weak_key(&s, &s.bases, &again), 0);
		assert_true(digest_equal(&again, &s.weak));
		step_free(&s);
	}
}

static void a_coloured_compiler_is_keyed_without_its_terminal(void **state)
{
	(void)state;
	struct step_show on_tty = {.colour = 1, .terminal = STEP_TTY_STDERR, .term = "xterm"};
	struct step_show off_tty = {.colour = 1};
	struct step a, b, plain;
	shown(&on_tty, &a);
	shown(&off_tty, &b);
	shown(NULL, &plain);
	assert_int_equal(a.terminal, 0);
	assert_null(a.term);
	assert_true(digest_equal(&a.weak, &b.weak));
	assert_false(digest_equal(&a.weak, &plain.weak));
	step_free(&a);
	step_free(&b);
	step_free(&plain);
}

static void a_step_that_sees_a_terminal_is_keyed_by_it(void **state)
{
	(void)state;
	struct step_show xterm = {.terminal = STEP_TTY_STDERR, .term = "xterm"};
	struct step_show vt100 = {.terminal = STEP_TTY_STDERR, .term = "vt100"};
	struct step_show none = {.term = "xterm"};
	struct step a, b, c, plain;
	shown(&xterm, &a);
	shown(&vt100, &b);
	shown(&none, &c);
	shown(NULL, &plain);
	assert_string_equal(a.term, "xterm");
	assert_false(digest_equal(&a.weak, &b.weak));
	assert_false(digest_equal(&a.weak, &plain.weak));
	/* No terminal: TERM is not the step's business. */
	assert_null(c.term);
	assert_true(digest_equal(&c.weak, &plain.weak));
	step_free(&a);
	step_free(&b);
	step_free(&c);
	step_free(&plain);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(the_weak_key_keyed_once_is_the_key_of_the_fields),
	    cmocka_unit_test(a_coloured_compiler_is_keyed_without_its_terminal),
	    cmocka_unit_test(a_step_that_sees_a_terminal_is_keyed_by_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
