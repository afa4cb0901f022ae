/* The DWARF plugin (src/elf/dwarf_plugin.h) over elfutils' libdw. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cachet/array.h"
#include "elf/dwarf_plugin.h"

static char *attr_string(Dwarf_Die *die, unsigned name)
{
	Dwarf_Attribute attr;
	const char *s = dwarf_attr_integrate(die, name, &attr) ? dwarf_formstring(&attr) : NULL;
	return s ? strdup(s) : NULL;
}

static void units_free(struct dwarf_unit *u, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(u[i].name);
		free(u[i].comp_dir);
		free(u[i].producer);
	}
	free(u);
}

/* The debug information is in the object itself: no search elsewhere. */
static int no_separate_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                                 Dwarf_Addr base, const char *file_name, const char *debuglink_file,
                                 GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	return -1;
}

static const Dwfl_Callbacks offline = {
    .find_debuginfo = no_separate_debuginfo,
    .section_address = dwfl_offline_section_address,
};

static int units_read(const void *image, size_t len, struct dwarf_unit **out, size_t *n, char *why,
                      size_t cap)
{
	*out = NULL;
	*n = 0;
	/* libdwfl, not dwarf_begin_elf: in a relocatable object (.o) the
	 * attributes' string offsets are relocations, which only libdwfl
	 * applies. It reads a file, so the image goes into a memfd. */
	int fd = memfd_create("cachet-dwarf", MFD_CLOEXEC);
	if (fd < 0 || write(fd, image, len) != (ssize_t)len) {
		snprintf(why, cap, "cannot hold the object in memory");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	Dwfl *dwfl = dwfl_begin(&offline);
	/* dwfl_report_offline takes the descriptor (dwfl_end closes it). */
	Dwfl_Module *mod = dwfl ? dwfl_report_offline(dwfl, "object", "object", fd) : NULL;
	Dwarf_Addr bias;
	Dwarf *dw =
	    mod && dwfl_report_end(dwfl, NULL, NULL) == 0 ? dwfl_module_getdwarf(mod, &bias) : NULL;
	if (!dw) {
		snprintf(why, cap, "%s", dwfl_errmsg(-1) ? dwfl_errmsg(-1) : "no DWARF");
		if (dwfl)
			dwfl_end(dwfl);
		if (!mod)
			close(fd);
		return -1;
	}
	size_t alloc = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	int rc = 0;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die die;
		if (dwarf_offdie(dw, off + hsize, &die)) {
			struct dwarf_unit *grown =
			    array_grow_try(*out, &alloc, *n + 1, sizeof *grown, 8);
			if (!grown) {
				rc = -1;
				snprintf(why, cap, "out of memory");
				break;
			}
			*out = grown;
			struct dwarf_unit *u = &(*out)[(*n)++];
			u->name = attr_string(&die, DW_AT_name);
			u->comp_dir = attr_string(&die, DW_AT_comp_dir);
			u->producer = attr_string(&die, DW_AT_producer);
		}
		off = next;
	}
	dwfl_end(dwfl);
	if (rc < 0) {
		units_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

static const struct dwarf_ops ops = {
    .units = units_read,
    .free = units_free,
};

__attribute__((visibility("default"))) const struct dwarf_ops *cachet_dwarf_ops(void);
const struct dwarf_ops *cachet_dwarf_ops(void)
{
	return &ops;
}
