/* The programs of a C toolchain by name (toolchain.h): the drivers, what
 * gcc runs and the loader, as distributions name them (target prefixes,
 * version suffixes), and the names that only look like them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cachet/toolchain.h"

static void distributions_names_have_their_roles(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		enum toolchain_role role;
	} cases[] = {
	    {"gcc", TOOLCHAIN_GCC},
	    {"gcc-12", TOOLCHAIN_GCC},
	    {"x86_64-linux-gnu-gcc-12", TOOLCHAIN_GCC},
	    {"x86_64-linux-gnu-g++", TOOLCHAIN_GCC},
	    {"clang++-14.0", TOOLCHAIN_CLANG},
	    {"clang", TOOLCHAIN_CLANG},
	    {"cc", TOOLCHAIN_SYSTEM_CC},
	    {"c++", TOOLCHAIN_SYSTEM_CC},
	    {"cc1plus", TOOLCHAIN_GNU_PROGRAM},
	    {"arm-none-eabi-as", TOOLCHAIN_GNU_PROGRAM},
	    {"arm-none-eabi-ld.bfd", TOOLCHAIN_GNU_PROGRAM},
	    {"x86_64-linux-gnu-cpp-12", TOOLCHAIN_GNU_PROGRAM},
	    {"lto-wrapper", TOOLCHAIN_GNU_PROGRAM},
	    {"ld.lld", TOOLCHAIN_LLD},
	    {"ld-linux-x86-64.so.2", TOOLCHAIN_LOADER},
	    {"ld-2.31.so", TOOLCHAIN_LOADER},
	    {"ld-musl-x86_64.so.1", TOOLCHAIN_LOADER},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		assert_int_equal(toolchain_role(cases[i].name), cases[i].role);
}

static void lookalikes_are_no_toolchain(void **state)
{
	(void)state;
	static const char *const names[] = {
	    "gcc-ar", /* an archiver wrapper */
	    "my-as",  /* a one-dash prefix: a wrapper, not a target */
	    "gcc-x",  /* not a version */
	    "python3", "sh", "tar", "ld-config",         "ccache",     "gccgo",
	    "ldd",     "",   "-",   "x86_64-linux-gnu-", "clang-tidy",
	};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		assert_int_equal(toolchain_role(names[i]), TOOLCHAIN_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(distributions_names_have_their_roles),
	    cmocka_unit_test(lookalikes_are_no_toolchain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
