#include "trace/dirorder.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/trace.h"
#include "trace/dirents.h"

#define OFF_D_OFF  DIRENT_OFF_D_OFF
#define OFF_RECLEN DIRENT_OFF_RECLEN

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

long dirents_reorder(void *buf, size_t len, int mode, uint64_t seed)
{
	unsigned char *b = buf;
	/* Either layout parses as getdents64 records: only the headers and
	 * a NUL-terminated name inside each record are checked. */
	long counted = dirents_walk(buf, len, 1, NULL, NULL);
	if (counted < 0)
		return -1;
	size_t n = (size_t)counted;
	if (n < 2)
		return (long)n;
	size_t *start = xmalloc(n * sizeof *start);
	size_t *order = xmalloc(n * sizeof *order);
	size_t k = 0;
	for (size_t at = 0; at < len; k++) {
		uint16_t reclen;
		memcpy(&reclen, b + at + OFF_RECLEN, sizeof reclen);
		start[k] = at;
		order[k] = k;
		at += reclen;
	}
	if (mode == TRACE_DIRORDER_SHUFFLE) {
		uint64_t state = seed ^ ((uint64_t)n * 0xD1B54A32D192ED03ull);
		for (size_t i = n - 1; i > 0; i--) {
			size_t j = (size_t)(splitmix64(&state) % (i + 1));
			size_t tmp = order[i];
			order[i] = order[j];
			order[j] = tmp;
		}
		/* The identity would hide what the caller asked to see. */
		size_t same = 0;
		while (same < n && order[same] == same)
			same++;
		if (same == n)
			for (size_t i = 0; i < n; i++)
				order[i] = (i + 1) % n;
	} else {
		for (size_t i = 0; i < n; i++)
			order[i] = n - 1 - i;
	}
	uint64_t last_off;
	memcpy(&last_off, b + start[n - 1] + OFF_D_OFF, sizeof last_off);
	unsigned char *out = xmalloc(len);
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *rec = b + start[order[i]];
		uint16_t reclen;
		memcpy(&reclen, rec + OFF_RECLEN, sizeof reclen);
		memcpy(out + at, rec, reclen);
		memcpy(out + at + OFF_D_OFF, &last_off, sizeof last_off);
		at += reclen;
	}
	memcpy(b, out, len);
	free(out);
	free(order);
	free(start);
	return (long)n;
}
