/*
 * libFuzzer target: the records a remote cache returns, which anyone with
 * write access to that server controls: the path-set list of a weak key and
 * an entry (keys, result, signature). The first byte picks the decoder.
 * Whatever decodes must encode and decode again to the same bytes; a path
 * set in the list must be the content its digest names.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/remote.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void pathsets(const uint8_t *data, size_t size)
{
	struct remote_pathsets p;
	struct error e = {0};
	if (remote_pathsets_decode(data, size, &p, &e) < 0)
		return;
	for (size_t i = 0; i < p.n; i++) {
		struct digest d;
		digest_bytes(p.sets[i].body, p.sets[i].len, &d);
		if (!digest_equal(&d, &p.sets[i].digest))
			abort();
	}
	struct buf once, twice;
	buf_init(&once);
	buf_init(&twice);
	remote_pathsets_encode(&p, &once);
	remote_pathsets_free(&p);
	if (remote_pathsets_decode(once.data, once.len, &p, &e) < 0)
		abort();
	remote_pathsets_encode(&p, &twice);
	remote_pathsets_free(&p);
	if (once.len != twice.len || memcmp(once.data, twice.data, once.len) != 0)
		abort();
	buf_free(&once);
	buf_free(&twice);
}

static void entry(const uint8_t *data, size_t size)
{
	struct remote_entry en;
	struct error e = {0};
	if (remote_entry_decode(data, size, &en, &e) < 0)
		return;
	struct digest msg;
	remote_entry_message(&en, &msg);
	struct buf once, twice;
	buf_init(&once);
	buf_init(&twice);
	remote_entry_encode(&en, &once);
	remote_entry_free(&en);
	if (remote_entry_decode(once.data, once.len, &en, &e) < 0)
		abort();
	remote_entry_encode(&en, &twice);
	remote_entry_free(&en);
	if (once.len != twice.len || memcmp(once.data, twice.data, once.len) != 0)
		abort();
	buf_free(&once);
	buf_free(&twice);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		entry(data + 1, size - 1);
	else
		pathsets(data + 1, size - 1);
	return 0;
}
