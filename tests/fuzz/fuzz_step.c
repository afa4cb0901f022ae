/*
 * libFuzzer target: step_decode, which reads the step descriptions that
 * explain and show print from the index. Decoding fails cleanly or yields
 * NUL-free strings that re-encode to bytes that decode again identically.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/step.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct step st;
	struct error e = {0};
	if (step_decode(data, size, &st, &e) < 0)
		return 0;
	struct buf once, twice;
	buf_init(&once);
	buf_init(&twice);
	step_encode(&st, &once);
	step_free(&st);
	if (step_decode(once.data, once.len, &st, &e) < 0)
		abort();
	step_encode(&st, &twice);
	if (once.len != twice.len || memcmp(once.data, twice.data, once.len) != 0)
		abort();
	step_free(&st);
	buf_free(&once);
	buf_free(&twice);
	return 0;
}
