#include "cachet/toolchain.h"

#include <string.h>

static const struct {
	const char *name;
	enum toolchain_role role;
} programs[] = {
    {"gcc", TOOLCHAIN_GCC},
    {"g++", TOOLCHAIN_GCC},
    {"clang", TOOLCHAIN_CLANG},
    {"clang++", TOOLCHAIN_CLANG},
    {"cc", TOOLCHAIN_SYSTEM_CC},
    {"c++", TOOLCHAIN_SYSTEM_CC},
    {"cpp", TOOLCHAIN_GNU_PROGRAM},
    {"cc1", TOOLCHAIN_GNU_PROGRAM},
    {"cc1plus", TOOLCHAIN_GNU_PROGRAM},
    {"cc1obj", TOOLCHAIN_GNU_PROGRAM},
    {"cc1objplus", TOOLCHAIN_GNU_PROGRAM},
    {"lto1", TOOLCHAIN_GNU_PROGRAM},
    {"lto-wrapper", TOOLCHAIN_GNU_PROGRAM},
    {"collect2", TOOLCHAIN_GNU_PROGRAM},
    {"as", TOOLCHAIN_GNU_PROGRAM},
    {"ld", TOOLCHAIN_GNU_PROGRAM},
    {"ld.bfd", TOOLCHAIN_GNU_PROGRAM},
    {"ld.gold", TOOLCHAIN_GNU_PROGRAM},
    {"ld.lld", TOOLCHAIN_LLD},
};

static enum toolchain_role role_of(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof programs / sizeof *programs; i++)
		if (strlen(programs[i].name) == len && !memcmp(programs[i].name, name, len))
			return programs[i].role;
	return TOOLCHAIN_NONE;
}

enum toolchain_role toolchain_role(const char *base)
{
	/* The loader runs every dynamic program as its interpreter
	 * (ld-linux-x86-64.so.2, ld-musl-x86_64.so.1, glibc's older
	 * ld-2.31.so). */
	if (!strncmp(base, "ld-", 3) && strstr(base, ".so"))
		return TOOLCHAIN_LOADER;
	size_t len = strlen(base);
	/* Version suffixes: -12, -12.2 (gcc-12, clang++-14.0). */
	const char *dash = strrchr(base, '-');
	if (dash && dash[1] && strspn(dash + 1, "0123456789.") == strlen(dash + 1))
		len = (size_t)(dash - base);
	enum toolchain_role role = role_of(base, len);
	/* A target prefix: the name after a dash with two dashes or more
	 * before it. */
	size_t dashes = 0;
	for (size_t i = 0; i < len && role == TOOLCHAIN_NONE; i++) {
		if (base[i] != '-')
			continue;
		if (++dashes >= 2)
			role = role_of(base + i + 1, len - i - 1);
	}
	return role;
}
