#include "trace/exec_image.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int spacetab(char c)
{
	return c == ' ' || c == '\t';
}

int shebang_interpreter(const char *buf, size_t len, char *interp, size_t cap)
{
	if (len > EXEC_HEAD_LEN)
		len = EXEC_HEAD_LEN;
	if (len < 2 || buf[0] != '#' || buf[1] != '!')
		return 0;
	/* The line ends at a newline or NUL (strnchr stops at NUL). */
	size_t end = 2;
	while (end < len && buf[end] != '\n' && buf[end] != '\0')
		end++;
	/* The kernel's buffer is zero-filled past the end of a short file. */
	int terminated = end < len || len < EXEC_HEAD_LEN;
	size_t p = 2;
	while (p < end && spacetab(buf[p]))
		p++;
	if (p == end)
		return 0;
	size_t q = p;
	while (q < end && !spacetab(buf[q]))
		q++;
	/* Without a line end within the buffer the kernel accepts the line only
	 * if the interpreter name itself ends inside it. */
	if (!terminated && q == end)
		return 0;
	if (q - p >= cap)
		return 0;
	memcpy(interp, buf + p, q - p);
	interp[q - p] = '\0';
	return 1;
}

long exec_image_read_head(const char *path, char *buf)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	ssize_t n = pread(fd, buf, EXEC_HEAD_LEN, 0);
	close(fd);
	return n;
}

/* A file and its first bytes, read once: an executable's headers are at
 * its start, and a read for each of them was a syscall apiece. */
struct image {
	int fd;
	unsigned char head[1024];
	size_t got;
};

static int read_exact(const struct image *im, void *buf, size_t len, unsigned long long off)
{
	if (off <= im->got && len <= im->got - off) {
		memcpy(buf, im->head + off, len);
		return 0;
	}
	ssize_t n = pread(im->fd, buf, len, (off_t)off);
	return n == (ssize_t)len ? 0 : -1;
}

static int read_interp(const struct image *im, unsigned long long off, unsigned long long size,
                       char *out, size_t cap)
{
	if (size == 0 || size > cap)
		return -1;
	if (read_exact(im, out, (size_t)size, off) < 0)
		return -1;
	out[size - 1] = '\0'; /* the segment includes its NUL */
	return 1;
}

int elf_interpreter(int fd, char *out, size_t cap)
{
	struct image image, *im = &image;
	im->fd = fd;
	ssize_t got = pread(fd, im->head, sizeof im->head, 0);
	im->got = got > 0 ? (size_t)got : 0;
	unsigned char ident[EI_NIDENT];
	if (read_exact(im, ident, sizeof ident, 0) < 0)
		return 0;
	if (memcmp(ident, ELFMAG, SELFMAG) != 0 || ident[EI_DATA] != ELFDATA2LSB)
		return 0;
	if (ident[EI_CLASS] == ELFCLASS64) {
		Elf64_Ehdr eh;
		if (read_exact(im, &eh, sizeof eh, 0) < 0)
			return -1;
		if (eh.e_phentsize != sizeof(Elf64_Phdr))
			return 0;
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			if (read_exact(im, &ph, sizeof ph,
			               eh.e_phoff + (unsigned long long)i * sizeof ph) < 0)
				return -1;
			if (ph.p_type == PT_INTERP)
				return read_interp(im, ph.p_offset, ph.p_filesz, out, cap);
		}
		return 0;
	}
	if (ident[EI_CLASS] == ELFCLASS32) {
		Elf32_Ehdr eh;
		if (read_exact(im, &eh, sizeof eh, 0) < 0)
			return -1;
		if (eh.e_phentsize != sizeof(Elf32_Phdr))
			return 0;
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf32_Phdr ph;
			if (read_exact(im, &ph, sizeof ph,
			               eh.e_phoff + (unsigned long long)i * sizeof ph) < 0)
				return -1;
			if (ph.p_type == PT_INTERP)
				return read_interp(im, ph.p_offset, ph.p_filesz, out, cap);
		}
	}
	return 0;
}

static int same_file_state(const struct exec_interp_entry *e, const struct stat *st)
{
	return e->used && e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
	       e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       e->ctime.tv_sec == st->st_ctim.tv_sec && e->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

int elf_interpreter_cached(struct exec_interp_cache *c, const char *path, const struct stat *st,
                           char *out, size_t cap)
{
	for (unsigned i = 0; i < EXEC_INTERP_CACHE; i++) {
		const struct exec_interp_entry *e = &c->e[i];
		if (same_file_state(e, st) && (e->rc != 1 || strlen(e->interp) < cap)) {
			if (e->rc == 1)
				strcpy(out, e->interp);
			return e->rc;
		}
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	/* Keyed by the file as it was before the read: a write during it
	 * leaves it with later times than the entry's. */
	struct stat before;
	int keyable = fstat(fd, &before) == 0;
	int rc = elf_interpreter(fd, out, cap);
	close(fd);
	if (keyable && rc >= 0 && (rc == 0 || strlen(out) < sizeof c->e[0].interp)) {
		struct exec_interp_entry *e = &c->e[c->next++ % EXEC_INTERP_CACHE];
		e->dev = before.st_dev;
		e->ino = before.st_ino;
		e->size = before.st_size;
		e->mtime = before.st_mtim;
		e->ctime = before.st_ctim;
		e->rc = rc;
		e->used = 1;
		snprintf(e->interp, sizeof e->interp, "%s", rc == 1 ? out : "");
	}
	return rc;
}
