/*
 * Shared objects loaded on demand: the remote transports, the signature
 * plugin and diff's archive and DWARF readers (each links a library that
 * most runs never need).
 *
 * The cachet executable may be linked statically (CMakeLists.txt,
 * CACHET_STATIC_EXE): a dlopen there would bring a second libc into the
 * process, with its own heap, and a plugin's threads and resolver would
 * run on it. That executable forbids loading and hands every run that may
 * need a plugin to its dynamic twin (src/cli/dynamic_twin.c) instead; a
 * load attempted anyway fails with a message that names the bug.
 */
#ifndef CACHET_PLUGIN_H
#define CACHET_PLUGIN_H

#include "cachet/error.h"

/* From now on plugin_symbol fails: this process cannot load plugins. */
void plugin_forbid(void);
/* The symbol of the shared object at path, loaded once and kept loaded;
 * NULL with e set when it cannot be loaded or lacks the symbol. */
void *plugin_symbol(const char *path, const char *symbol, struct error *e);

#endif
