/*
 * The programs of a C toolchain, known by the name of their executable:
 * the rules that depend on what a program is (colours forced on a
 * compiler, a compile served under another output name, make's variables
 * no compile reads) each pick the roles they trust from one list.
 */
#ifndef CACHET_TOOLCHAIN_H
#define CACHET_TOOLCHAIN_H

enum toolchain_role {
	TOOLCHAIN_NONE = 0,
	TOOLCHAIN_GCC,         /* the gcc drivers: gcc, g++ */
	TOOLCHAIN_CLANG,       /* the clang drivers: clang, clang++ */
	TOOLCHAIN_SYSTEM_CC,   /* cc, c++: whichever compiler the system chose */
	TOOLCHAIN_GNU_PROGRAM, /* what gcc runs: cpp, cc1*, lto1, lto-wrapper, collect2, as, ld */
	TOOLCHAIN_LLD,         /* ld.lld */
	TOOLCHAIN_LOADER,      /* the dynamic loader: ld-*.so* */
};

/* The role of the program whose executable is called base (a basename),
 * as distributions install them: with a version suffix (gcc-12,
 * clang++-14.0) and a target prefix of two dashes or more
 * (x86_64-linux-gnu-gcc-12, arm-none-eabi-as). A name with a shorter
 * prefix (my-as, gcc-ar) is no toolchain program: a wrapper or another
 * tool. */
enum toolchain_role toolchain_role(const char *base);

#endif
