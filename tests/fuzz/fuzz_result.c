/*
 * libFuzzer target: result_decode, which reads results from the index and
 * from remote entries. A decoded result has only absolute output paths and
 * known kinds (a link or an attribute with its target or name), an order of
 * stdout and stderr that divides their blobs exactly, and survives an
 * encode/decode round trip unchanged.
 *
 * An encoding ends with a SHA-256 of the rest, which random bytes never
 * match: the input is decoded as it is (the checksum must reject it), and
 * then with its correct checksum appended, so that the fuzzer explores the
 * decoder behind the check.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/result.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct result r;
	struct error e = {0};
	if (result_decode(data, size, &r, &e) == 0)
		result_free(&r);
	uint8_t *body = malloc(size + DIGEST_LEN);
	memcpy(body, data, size);
	struct digest sum;
	digest_bytes(data, size, &sum);
	memcpy(body + size, sum.b, DIGEST_LEN);
	int rc = result_decode(body, size + DIGEST_LEN, &r, &e);
	free(body);
	if (rc < 0)
		return 0;
	for (size_t i = 0; i < r.noutputs; i++) {
		const struct output *o = &r.outputs[i];
		if (!o->path || o->path[0] != '/' || o->kind < OUT_FILE || o->kind > OUT_OWNER ||
		    ((o->kind == OUT_SYMLINK || o->kind == OUT_HARDLINK || o->kind == OUT_XATTR) &&
		     !o->target) ||
		    (o->mode & ~07777u))
			abort();
	}
	/* The order of stdout and stderr, as replay_streams trusts it: runs
	 * that alternate and divide each blob exactly. */
	uint64_t run_sum[2] = {0, 0};
	for (size_t i = 0; i < r.nstream_runs; i++) {
		uint64_t run = r.stream_runs[i];
		if (!(run >> 1) || (i && (r.stream_runs[i - 1] & 1) == (run & 1)))
			abort();
		run_sum[run & 1] += run >> 1;
	}
	if (r.nstream_runs &&
	    (r.nstream_runs < 2 || run_sum[0] != r.out.size || run_sum[1] != r.err.size))
		abort();
	size_t nblobs;
	free(result_blobs(&r, &nblobs));
	struct buf once, twice;
	buf_init(&once);
	buf_init(&twice);
	result_encode(&r, &once);
	result_free(&r);
	if (result_decode(once.data, once.len, &r, &e) < 0)
		abort();
	result_encode(&r, &twice);
	if (once.len != twice.len || memcmp(once.data, twice.data, once.len) != 0)
		abort();
	result_free(&r);
	buf_free(&once);
	buf_free(&twice);
	return 0;
}
