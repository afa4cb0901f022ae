#include "cachet/elfsyms.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

static void add_symbols(Elf *elf, struct strmap *defined)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data || sh.sh_entsize == 0)
			continue;
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(data, (int)i, &sym))
				break;
			int bind = GELF_ST_BIND(sym.st_info);
			if ((bind != STB_GLOBAL && bind != STB_WEAK) || sym.st_shndx == SHN_UNDEF)
				continue;
			const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (name && *name)
				strmap_put(defined, name, (void *)1);
		}
	}
}

int elf_defined_symbols(const char *path, struct strmap *defined, struct error *e)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return error_set(e, "libelf: %s", elf_errmsg(-1));
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return error_errno(e, "%s", path);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	int rc = 0;
	if (!elf) {
		rc = 0;
	} else if (elf_kind(elf) == ELF_K_ELF) {
		add_symbols(elf, defined);
		rc = 1;
	} else if (elf_kind(elf) == ELF_K_AR) {
		Elf *member;
		Elf_Cmd cmd = ELF_C_READ;
		while ((member = elf_begin(fd, cmd, elf))) {
			if (elf_kind(member) == ELF_K_ELF)
				add_symbols(member, defined);
			cmd = elf_next(member);
			elf_end(member);
		}
		rc = 1;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

static int sanitizer_name(const char *name)
{
	return name && (!strncmp(name, "__asan_init", 11) || !strcmp(name, "__lsan_do_leak_check"));
}

static int sanitizer_library(const char *name)
{
	return name && (!strncmp(name, "libasan.so", 10) || !strncmp(name, "liblsan.so", 10) ||
	                !strncmp(name, "libclang_rt.asan", 16));
}

/* The DT_NEEDED entries and .dynsym of one ELF file. */
static int scan_dynamic(Elf *elf)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_entsize == 0 ||
		    (sh.sh_type != SHT_DYNAMIC && sh.sh_type != SHT_DYNSYM))
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			if (sh.sh_type == SHT_DYNAMIC) {
				GElf_Dyn dyn;
				if (!gelf_getdyn(data, (int)i, &dyn))
					break;
				if (dyn.d_tag == DT_NEEDED &&
				    sanitizer_library(elf_strptr(elf, sh.sh_link, dyn.d_un.d_val)))
					return 1;
			} else {
				GElf_Sym sym;
				if (!gelf_getsym(data, (int)i, &sym))
					break;
				if (sanitizer_name(elf_strptr(elf, sh.sh_link, sym.st_name)))
					return 1;
			}
		}
	}
	return 0;
}

int elf_uses_leak_sanitizer(const char *path)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	int found = elf && elf_kind(elf) == ELF_K_ELF && scan_dynamic(elf);
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}
