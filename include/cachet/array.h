/*
 * Growth of a dynamic array by doubling: the one copy of "if (n == alloc) {
 * alloc = alloc ? 2 * alloc : 16; p = realloc(p, alloc * sizeof *p); }".
 *
 * The capacity never wraps: a doubling or an alloc * size that would not fit
 * in a size_t is a failure, not a small allocation that the caller then
 * writes past. Header-only, so the dlopen'ed plugins (which do not link the
 * library and report allocation failure as an error) use it too.
 */
#ifndef CACHET_ARRAY_H
#define CACHET_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The capacity that holds at least `need` elements of `size` bytes: alloc
 * doubled (first when alloc is 0) until it does. 0 when that many bytes do
 * not fit in a size_t. */
static inline size_t array_next_alloc(size_t alloc, size_t need, size_t first, size_t size)
{
	size_t next = alloc ? alloc : (first ? first : 1);
	while (next < need) {
		if (next > SIZE_MAX / 2)
			return 0;
		next *= 2;
	}
	if (size && next > SIZE_MAX / size)
		return 0;
	return next;
}

/* Makes room for `need` elements of `size` bytes in p, of capacity *alloc:
 * the (maybe moved) array, with *alloc updated. NULL on overflow or when
 * realloc fails; p and *alloc are then unchanged and p still the caller's. */
static inline void *array_grow_try(void *p, size_t *alloc, size_t need, size_t size, size_t first)
{
	if (need <= *alloc)
		return p;
	size_t next = array_next_alloc(*alloc, need, first, size);
	if (!next)
		return NULL;
	void *grown = realloc(p, next * size);
	if (!grown)
		return NULL;
	*alloc = next;
	return grown;
}

/* As array_grow_try, but out of memory aborts with a message, as xrealloc
 * does (buf.h): for the library and the tool, which cannot go on without. */
void *array_grow(void *p, size_t *alloc, size_t need, size_t size, size_t first);

/* Makes room for `need` elements in the array p (any element type) whose
 * capacity is the size_t lvalue alloc, doubling from `first`; aborts when
 * out of memory. The common case costs one comparison. */
#define ARRAY_RESERVE(p, alloc, need, first)                                                       \
	do {                                                                                       \
		if ((need) > (alloc))                                                              \
			(p) = array_grow((p), &(alloc), (need), sizeof *(p), (first));             \
	} while (0)

#endif
