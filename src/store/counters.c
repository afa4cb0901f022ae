/*
 * Named counters in the file `stats`: a fixed array of COUNTER_SLOTS slots
 * {char name[48]; int64_t value}, mapped MAP_SHARED by every cachet process
 * and updated with atomic adds, so that counting never takes the index's
 * write lock and parallel hits never queue.
 *
 * A slot is free while name[0] is 0. Claiming one is serialised between
 * processes with flock on the file (only claims: a handful per store's
 * lifetime); the claimer writes name[1..] first and publishes name[0] last
 * with a release store, so a reader that sees name[0] set sees the whole
 * name. Slots are never released; counters_zero only zeroes values.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "store/store_internal.h"

#define COUNTER_SLOTS  128
#define COUNTERS_BYTES (COUNTER_SLOTS * sizeof(struct counter_slot))

_Static_assert(sizeof(struct counter_slot) == 56, "slot layout is the file format");
_Static_assert(offsetof(struct counter_slot, value) % 8 == 0, "values must be 8-byte aligned");

static int counters_map(struct store *s)
{
	if (s->counters_state)
		return s->counters_state > 0 ? 0 : -1;
	s->counters_state = -1;
	char *path = xasprintf("%s/stats", s->dir);
	int writable = !s->readonly;
	int fd = -1;
	if (writable)
		fd = store_create_mode(s, store_openat(s, path, O_RDWR | O_CREAT, s->file_mode));
	if (fd < 0) {
		writable = 0;
		fd = store_openat(s, path, O_RDONLY, 0);
	}
	free(path);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    ((uint64_t)st.st_size < COUNTERS_BYTES &&
	     (!writable || ftruncate(fd, (off_t)COUNTERS_BYTES) < 0))) {
		/* Growing is safe against a concurrent grow: both extend with
		 * zeros to the same size. The file is never shrunk, so the
		 * mapping never points past its end. */
		close(fd);
		return -1;
	}
	void *p =
	    mmap(NULL, COUNTERS_BYTES, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return -1;
	}
	s->counters = p;
	s->counters_fd = fd; /* kept for flock while claiming */
	s->counters_writable = writable;
	s->counters_state = 1;
	return 0;
}

void counters_close(struct store *s)
{
	if (s->counters)
		munmap(s->counters, COUNTERS_BYTES);
	if (s->counters_fd >= 0)
		close(s->counters_fd);
	s->counters = NULL;
	s->counters_fd = -1;
	s->counters_state = 0;
}

static int slot_is(struct counter_slot *c, const char *name, size_t len)
{
	char first = __atomic_load_n(&c->name[0], __ATOMIC_ACQUIRE);
	return first != 0 && first == name[0] && memcmp(c->name + 1, name + 1, len) == 0;
}

static struct counter_slot *find_slot(struct store *s, const char *name, size_t len)
{
	for (int i = 0; i < COUNTER_SLOTS; i++)
		if (slot_is(&s->counters[i], name, len))
			return &s->counters[i];
	return NULL;
}

static struct counter_slot *claim_slot(struct store *s, const char *name, size_t len)
{
	while (flock(s->counters_fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return NULL;
	/* Another process may have claimed it while we waited. */
	struct counter_slot *c = find_slot(s, name, len);
	for (int i = 0; !c && i < COUNTER_SLOTS; i++) {
		struct counter_slot *f = &s->counters[i];
		if (__atomic_load_n(&f->name[0], __ATOMIC_ACQUIRE) != 0)
			continue;
		memset(f->name + 1, 0, sizeof f->name - 1);
		memcpy(f->name + 1, name + 1, len); /* len counts name[1..] and the NUL */
		__atomic_store_n(&f->name[0], name[0], __ATOMIC_RELEASE);
		c = f;
	}
	flock(s->counters_fd, LOCK_UN);
	return c;
}

int counter_add(struct store *s, const char *name, int64_t delta, int64_t *before)
{
	size_t n = strlen(name);
	if (n == 0 || n >= sizeof(((struct counter_slot *)0)->name))
		return -1;
	if (counters_map(s) < 0 || !s->counters_writable)
		return -1;
	/* Compare name[1..] including the terminating NUL. */
	struct counter_slot *c = find_slot(s, name, n);
	if (!c)
		c = claim_slot(s, name, n);
	if (!c)
		return -1;
	*before = __atomic_fetch_add(&c->value, delta, __ATOMIC_RELAXED);
	return 0;
}

void store_count(struct store *s, const char *name, int64_t delta)
{
	int64_t before;
	counter_add(s, name, delta, &before);
}

int store_counters(struct store *s, struct store_counter **out, size_t *n, struct error *e)
{
	*out = NULL;
	*n = 0;
	if (counters_map(s) < 0)
		return 0; /* no counter file yet (read-only store): nothing counted */
	struct store_counter *list = xcalloc(COUNTER_SLOTS, sizeof *list);
	size_t count = 0;
	for (int i = 0; i < COUNTER_SLOTS; i++) {
		struct counter_slot *c = &s->counters[i];
		char first = __atomic_load_n(&c->name[0], __ATOMIC_ACQUIRE);
		if (!first)
			continue;
		memcpy(list[count].name, c->name, sizeof list[count].name);
		list[count].name[0] = first;
		list[count].name[sizeof list[count].name - 1] = '\0';
		list[count].value = __atomic_load_n(&c->value, __ATOMIC_RELAXED);
		count++;
	}
	*out = list;
	*n = count;
	return 0;
}

void store_counters_zero(struct store *s)
{
	if (counters_map(s) < 0 || !s->counters_writable)
		return;
	for (int i = 0; i < COUNTER_SLOTS; i++)
		__atomic_store_n(&s->counters[i].value, 0, __ATOMIC_RELAXED);
}
