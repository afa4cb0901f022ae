/*
 * libFuzzer target: the ELF, ar and text comparison behind `cachet diff`,
 * `repro` and `run --verify`, over two contents the build produced (and so
 * anything at all). The input is split in two halves, A and B; the report
 * must render as text and as JSON whatever they hold.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/compare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t half = size / 2;
	/* Copies, so that reads past either half are caught by ASan. */
	uint8_t *a = malloc(half ? half : 1), *b = malloc(size - half ? size - half : 1);
	memcpy(a, data, half);
	memcpy(b, data + half, size - half);
	struct compare_options opt = {.max_diff_lines = 50, .list_limit = 5};
	struct compare_report rep;
	compare_buffers(a, half, b, size - half, "fuzz", &opt, &rep);
	if (rep.differ != (rep.nentries > 0))
		abort();
	struct buf text;
	buf_init(&text);
	compare_report_render(&rep, &text);
	compare_report_json(&rep, &text);
	buf_free(&text);
	compare_report_free(&rep);
	free(a);
	free(b);
	return 0;
}
