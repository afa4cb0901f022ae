#include "cachet/array.h"

#include "cachet/buf.h"

void *array_grow(void *p, size_t *alloc, size_t need, size_t size, size_t first)
{
	if (need <= *alloc)
		return p;
	size_t next = array_next_alloc(*alloc, need, first, size);
	if (!next)
		xalloc_failed();
	p = xrealloc(p, next * size);
	*alloc = next;
	return p;
}
