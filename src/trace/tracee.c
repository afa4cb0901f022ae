#include "trace/tracee.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cachet/buf.h"

#define PAGE 4096u

static size_t slot_of(pid_t tid, size_t cap)
{
	return ((size_t)(unsigned)tid * 0x9E3779B1u) & (cap - 1);
}

void tracee_table_init(struct tracee_table *t)
{
	t->cap = 64;
	t->n = 0;
	t->slots = xcalloc(t->cap, sizeof *t->slots);
}

static void tracee_free(struct tracee *r)
{
	if (r && r->schedstat_fd >= 0)
		close(r->schedstat_fd);
	free(r);
}

void tracee_table_free(struct tracee_table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		tracee_free(t->slots[i]);
	free(t->slots);
	memset(t, 0, sizeof *t);
}

struct tracee *tracee_find(const struct tracee_table *t, pid_t tid)
{
	for (size_t i = slot_of(tid, t->cap);; i = (i + 1) & (t->cap - 1)) {
		struct tracee *r = t->slots[i];
		if (!r)
			return NULL;
		if (r->tid == tid)
			return r;
	}
}

static void insert(struct tracee_table *t, struct tracee *r)
{
	size_t i = slot_of(r->tid, t->cap);
	while (t->slots[i])
		i = (i + 1) & (t->cap - 1);
	t->slots[i] = r;
	t->n++;
}

static void grow(struct tracee_table *t)
{
	struct tracee **old = t->slots;
	size_t oldcap = t->cap;
	t->cap *= 2;
	t->n = 0;
	t->slots = xcalloc(t->cap, sizeof *t->slots);
	for (size_t i = 0; i < oldcap; i++)
		if (old[i])
			insert(t, old[i]);
	free(old);
}

struct tracee *tracee_add(struct tracee_table *t, pid_t tid)
{
	if ((t->n + 1) * 2 > t->cap)
		grow(t);
	struct tracee *r = xmalloc(sizeof *r);
	tracee_init(r, tid);
	insert(t, r);
	return r;
}

void tracee_init(struct tracee *r, pid_t tid)
{
	r->tid = tid;
	r->started = 0;
	r->cwd_gen = 0;
	r->cwd[0] = '\0';
	r->p.what = PEND_NONE;
	r->p.has_path = 0;
	r->rec_str = NULL;
	r->rec_res = NULL;
	r->entry_ip = 0;
	r->loader_searched = 0;
	r->run_delay_ns = 0;
	r->has_run_delay = 0;
	r->schedstat_fd = -1;
	r->own_affinity = 0;
}

/* Removes slot i and re-inserts the rest of its probe run (linear probing
 * has no tombstones this way). Returns the removed record. */
static struct tracee *take_slot(struct tracee_table *t, size_t i)
{
	struct tracee *r = t->slots[i];
	t->slots[i] = NULL;
	t->n--;
	for (size_t j = (i + 1) & (t->cap - 1); t->slots[j]; j = (j + 1) & (t->cap - 1)) {
		struct tracee *m = t->slots[j];
		t->slots[j] = NULL;
		t->n--;
		insert(t, m);
	}
	return r;
}

static struct tracee *detach(struct tracee_table *t, pid_t tid)
{
	for (size_t i = slot_of(tid, t->cap);; i = (i + 1) & (t->cap - 1)) {
		struct tracee *r = t->slots[i];
		if (!r)
			return NULL;
		if (r->tid == tid)
			return take_slot(t, i);
	}
}

void tracee_remove(struct tracee_table *t, pid_t tid)
{
	tracee_free(detach(t, tid));
}

struct tracee *tracee_rekey(struct tracee_table *t, pid_t old_tid, pid_t new_tid)
{
	struct tracee *r = detach(t, old_tid);
	if (!r)
		return NULL;
	tracee_free(detach(t, new_tid));
	r->tid = new_tid;
	/* It named the thread that was: the next check opens the new one. */
	if (r->schedstat_fd >= 0)
		close(r->schedstat_fd);
	r->schedstat_fd = -1;
	r->has_run_delay = 0;
	insert(t, r);
	return r;
}

/* process_vm_readv needs the same permission as ptrace attach, which the
 * tracer has; /proc/<tid>/mem is the fallback for kernels or sandboxes where
 * it fails (ENOSYS, EPERM under some LSMs). */
static int read_proc_mem(pid_t tid, uint64_t addr, void *out, size_t len)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/mem", (int)tid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t r = pread(fd, out, len, (off_t)addr);
	close(fd);
	return r == (ssize_t)len ? 0 : -1;
}

int tracee_read(pid_t tid, uint64_t addr, void *out, size_t len)
{
	struct iovec local = {out, len}, remote = {(void *)(uintptr_t)addr, len};
	ssize_t r = process_vm_readv(tid, &local, 1, &remote, 1, 0);
	if (r == (ssize_t)len)
		return 0;
	if (r < 0 && (errno == ENOSYS || errno == EPERM))
		return read_proc_mem(tid, addr, out, len);
	return -1;
}

int tracee_write(pid_t tid, uint64_t addr, const void *data, size_t len)
{
	struct iovec local = {(void *)data, len}, remote = {(void *)(uintptr_t)addr, len};
	ssize_t r = process_vm_writev(tid, &local, 1, &remote, 1, 0);
	if (r == (ssize_t)len)
		return 0;
	if (r < 0 && (errno == ENOSYS || errno == EPERM)) {
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/mem", (int)tid);
		int fd = open(p, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		ssize_t w = pwrite(fd, data, len, (off_t)addr);
		close(fd);
		return w == (ssize_t)len ? 0 : -1;
	}
	return -1;
}

int tracee_read_string(pid_t tid, uint64_t addr, char *out, size_t cap)
{
	size_t got = 0;
	while (got + 1 < cap) {
		uint64_t at = addr + got;
		size_t chunk = PAGE - (size_t)(at % PAGE);
		if (chunk > cap - 1 - got)
			chunk = cap - 1 - got;
		if (tracee_read(tid, at, out + got, chunk) < 0)
			return -1;
		char *nul = memchr(out + got, '\0', chunk);
		if (nul)
			return 0;
		got += chunk;
	}
	return -1;
}

/* The hexadecimal number at *s, *s moved past it; -1 when there is none. */
static int parse_hex(const char **s, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;
	for (;; p++) {
		unsigned d;
		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else
			break;
		x = x << 4 | d;
	}
	if (p == *s)
		return -1;
	*v = x;
	*s = p;
	return 0;
}

static int parse_dec(const char **s, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;
	for (; *p >= '0' && *p <= '9'; p++)
		x = x * 10 + (uint64_t)(*p - '0');
	if (p == *s)
		return -1;
	*v = x;
	*s = p;
	return 0;
}

/* Past one field and the blanks after it. */
static const char *next_field(const char *s)
{
	while (*s && *s != ' ' && *s != '\n')
		s++;
	while (*s == ' ')
		s++;
	return s;
}

/* By hand: sscanf of every line was most of the tracer's time at a
 * stop that reads the maps (cc1 maps hundreds of ranges). */
int maps_line_parse(const char *s, struct maps_line *out)
{
	uint64_t major, minor;
	if (parse_hex(&s, &out->lo) < 0 || *s++ != '-' || parse_hex(&s, &out->hi) < 0 || *s != ' ')
		return -1;
	s = next_field(next_field(s + 1)); /* perms, offset */
	if (parse_hex(&s, &major) < 0 || *s++ != ':' || parse_hex(&s, &minor) < 0 || *s != ' ')
		return -1;
	while (*s == ' ')
		s++;
	if (parse_dec(&s, &out->inode) < 0)
		return -1;
	out->dev_major = (unsigned)major;
	out->dev_minor = (unsigned)minor;
	return 0;
}

/* PROCMAP_QUERY (Linux 6.11): the mapping that holds an address, without
 * the kernel writing out the whole maps file and us parsing it (a third of
 * what the tracer spends on a small program's exec). Declared here for
 * older headers; the layout is the kernel's ABI. */
#ifndef PROCMAP_QUERY
struct procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start;
	uint64_t vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#endif

/* The mapping that holds addr, by PROCMAP_QUERY: 1 with *out filled, 0 when
 * none holds it, -1 when the kernel cannot answer this way. */
static int query_mapping(int fd, uint64_t addr, struct maps_line *out)
{
	struct procmap_query q;
	memset(&q, 0, sizeof q);
	q.size = sizeof q;
	q.query_addr = addr;
	if (ioctl(fd, PROCMAP_QUERY, &q) < 0)
		return errno == ENOENT ? 0 : -1;
	out->lo = q.vma_start;
	out->hi = q.vma_end;
	out->dev_major = q.dev_major;
	out->dev_minor = q.dev_minor;
	out->inode = q.inode;
	return 1;
}

/* One pass over the maps as text, for kernels without PROCMAP_QUERY. */
static int maps_text_find(int fd, uint64_t start, uint64_t addr, struct maps_line *at_start,
                          struct maps_line *holding)
{
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -1;
	}
	/* Only the fields at the start of a line are needed: the rest of a
	 * longer one (a long path) is skipped. */
	char line[512];
	struct maps_line m;
	int have_start = 0, have_holding = 0, at_line_start = 1;
	while ((!have_start || !have_holding) && fgets(line, sizeof line, f)) {
		int starts = at_line_start;
		at_line_start = strchr(line, '\n') != NULL;
		if (!starts || maps_line_parse(line, &m) < 0)
			continue;
		if (!have_start && m.lo == start) {
			*at_start = m;
			have_start = 1;
		}
		if (!have_holding && m.lo <= addr && addr < m.hi) {
			*holding = m;
			have_holding = 1;
		}
	}
	fclose(f);
	return have_start && have_holding;
}

int tracee_maps_same_file(pid_t tid, uint64_t start, uint64_t addr)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/maps", (int)tid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct maps_line at_start = {0}, holding = {0};
	int found = query_mapping(fd, start, &at_start);
	if (found > 0)
		found = at_start.lo == start ? query_mapping(fd, addr, &holding) : 0;
	if (found >= 0)
		close(fd);
	else if ((found = maps_text_find(fd, start, addr, &at_start, &holding)) < 0)
		return -1;
	return found > 0 && at_start.inode && at_start.inode == holding.inode &&
	       at_start.dev_major == holding.dev_major && at_start.dev_minor == holding.dev_minor;
}

int tracee_fd_path(pid_t tid, int fd, char *out, size_t cap)
{
	char p[64];
	if (fd == TRACEE_FD_ROOT)
		snprintf(p, sizeof p, "/proc/%d/root", (int)tid);
	else if (fd < 0)
		snprintf(p, sizeof p, "/proc/%d/cwd", (int)tid);
	else
		snprintf(p, sizeof p, "/proc/%d/fd/%d", (int)tid, fd);
	ssize_t n = readlink(p, out, cap - 1);
	if (n < 0 || (size_t)n >= cap - 1)
		return -1;
	out[n] = '\0';
	return 0;
}

int tracee_fd_stat(pid_t tid, int fd, void *statbuf)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/fd/%d", (int)tid, fd);
	return stat(p, statbuf);
}

/* The text of /proc/<tid>/<what> into b (cap bytes, NUL-terminated): its
 * length, or -1 when it cannot be read (gone) or is empty. */
static ssize_t read_proc(pid_t tid, const char *what, char *b, size_t cap)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/%s", (int)tid, what);
	int f = open(p, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -1;
	ssize_t n = read(f, b, cap - 1);
	close(f);
	if (n <= 0)
		return -1;
	b[n] = '\0';
	return n;
}

int tracee_fd_pos(pid_t tid, int fd, uint64_t *pos)
{
	char what[32], b[256];
	snprintf(what, sizeof what, "fdinfo/%d", fd);
	if (read_proc(tid, what, b, sizeof b) < 0)
		return -1;
	/* The first line: "pos:\t<decimal>". */
	if (strncmp(b, "pos:", 4) != 0)
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(b + 4, &end, 10);
	if (errno || end == b + 4 || *end != '\n')
		return -1;
	*pos = v;
	return 0;
}

/* Kept open: the held step is checked every few milliseconds, and a
 * pread of an open /proc file costs a fraction of opening it again. */
int tracee_run_delay(struct tracee *t, uint64_t *ns)
{
	if (t->schedstat_fd < 0) {
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/schedstat", (int)t->tid);
		t->schedstat_fd = open(p, O_RDONLY | O_CLOEXEC);
		if (t->schedstat_fd < 0)
			return -1;
	}
	char b[128];
	ssize_t n = pread(t->schedstat_fd, b, sizeof b - 1, 0);
	unsigned long long run, delay;
	if (n <= 0)
		return -1;
	b[n] = '\0';
	if (sscanf(b, "%llu %llu", &run, &delay) != 2)
		return -1;
	*ns = delay;
	return 0;
}

/* The text of /proc/<tid>/stat after "(comm) ", which may itself hold
 * spaces and parentheses. */
static const char *stat_fields(pid_t tid, char *b, size_t cap)
{
	if (read_proc(tid, "stat", b, cap) < 0)
		return NULL;
	char *rp = strrchr(b, ')');
	if (!rp || rp[1] != ' ')
		return NULL;
	return rp + 2;
}

int tracee_cpu(pid_t tid)
{
	char b[1024];
	const char *s = stat_fields(tid, b, sizeof b);
	if (!s)
		return -1;
	/* s is field 3 (state); "processor" is field 39. */
	for (int field = 3; field < 39; field++) {
		s = strchr(s, ' ');
		if (!s)
			return -1;
		s++;
	}
	return atoi(s);
}

char tracee_state(pid_t tid)
{
	char b[1024];
	const char *s = stat_fields(tid, b, sizeof b);
	return s ? s[0] : 0;
}
