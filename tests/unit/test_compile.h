/*
 * Compiling a small C program that a test runs traced. Included (not
 * linked) by the tests that need one.
 */
#ifndef CACHET_TEST_COMPILE_H
#define CACHET_TEST_COMPILE_H

#include <stdio.h>

/* src compiled with gcc -O1 and options as dir/name (the source beside it,
 * as name.c); the program's path goes to out. 0, or -1. */
static __attribute__((unused)) int compile_program(const char *dir, const char *name,
                                                   const char *src, const char *options, char *out,
                                                   size_t cap)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "cd '%s' && cat > '%s.c' && gcc -O1 %s -o '%s' '%s.c'", dir, name,
	         options, name, name);
	FILE *f = popen(cmd, "w");
	if (!f)
		return -1;
	fputs(src, f);
	if (pclose(f) != 0)
		return -1;
	snprintf(out, cap, "%s/%s", dir, name);
	return 0;
}

#endif
