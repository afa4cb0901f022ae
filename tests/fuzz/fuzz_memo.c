/*
 * libFuzzer target: store_memo_decode and dirfp_decode, which read memos
 * from the cache directory before a hit. Whatever the bytes, decoding
 * either fails cleanly or yields a memo that encodes back to the same
 * bytes; its directory fingerprints, decoded for its path set, do too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/dirfp.h"
#include "cachet/pathset.h"
#include "cachet/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_or_abort(const struct buf *a, const void *data, size_t size)
{
	if (a->len != size || memcmp(a->data, data, size) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store_memo m;
	if (store_memo_decode(data, size, &m) < 0) {
		store_memo_free(&m);
		return 0;
	}
	struct buf again;
	buf_init(&again);
	store_memo_encode(&m, &again);
	same_or_abort(&again, data, size);
	buf_free(&again);

	struct pathset ps;
	struct error e = {0};
	struct dirfp_set dirs;
	if (pathset_decode(m.pathset_body, m.pathset_len, &ps, &e) == 0) {
		if (dirfp_decode(m.dirs, m.dirs_len, ps.nobs, &dirs) == 0) {
			buf_init(&again);
			dirfp_encode(&dirs, &again);
			same_or_abort(&again, m.dirs, m.dirs_len);
			buf_free(&again);
			dirfp_free(&dirs);
		}
		pathset_free(&ps);
	}
	store_memo_free(&m);
	return 0;
}
