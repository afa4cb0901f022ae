/*
 * The platform a step runs on (src/key/platform.c), as keyed in its weak
 * key.
 */
#ifndef CACHET_PLATFORM_H
#define CACHET_PLATFORM_H

/* The platform line: "x86_64 6.1.0 | <cpu model> | cpu <digest of the CPUID
 * feature registers> | umask 022". */
char *platform_describe(void);

#endif
