/*
 * The DWARF plugin (libcachet-dwarf.so): libdw from elfutils, to name the
 * compile units of two objects with debug information (DW_AT_name,
 * DW_AT_comp_dir, DW_AT_producer) when they differ. Loaded only by a
 * comparison of two such objects: no other cachet process maps libdw.
 *
 * The plugin links nothing of cachet's (libdw brings its own shared
 * libelf, apart from the one cachet links statically): it opens the image
 * itself; errors come back as text in why.
 */
#ifndef CACHET_ELF_DWARF_PLUGIN_H
#define CACHET_ELF_DWARF_PLUGIN_H

#include <stddef.h>

#define DWARF_PLUGIN        "libcachet-dwarf.so"
#define DWARF_PLUGIN_SYMBOL "cachet_dwarf_ops"

struct dwarf_unit {
	char *name;     /* DW_AT_name of the compile unit; may be NULL */
	char *comp_dir; /* DW_AT_comp_dir; may be NULL */
	char *producer; /* DW_AT_producer; may be NULL */
};

struct dwarf_ops {
	/* The compile units of an ELF image in memory, in order. 0, or -1
	 * with why set (no DWARF, or not readable). */
	int (*units)(const void *image, size_t len, struct dwarf_unit **out, size_t *n, char *why,
	             size_t cap);
	void (*free)(struct dwarf_unit *units, size_t n);
};

typedef const struct dwarf_ops *(*dwarf_plugin_fn)(void);

#endif
