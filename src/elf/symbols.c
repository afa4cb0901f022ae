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
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
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
