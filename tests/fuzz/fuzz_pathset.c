/*
 * libFuzzer target: pathset_decode, which reads path sets from the index
 * (and, through a remote, from other machines). Whatever the bytes, decoding
 * either fails cleanly or yields a path set whose every index is in range:
 * re-encoding it must decode again to the same encoding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/observe.h"
#include "cachet/pathset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pathset ps;
	struct error e = {0};
	if (pathset_decode(data, size, &ps, &e) < 0)
		return 0;
	for (size_t i = 0; i < ps.nobs; i++) {
		const char **excluded = pathset_excluded(&ps, i);
		/* A fact's "path" is its name; everything else is looked up. */
		const char *path = ps.paths[ps.obs[i].path];
		if (ps.obs[i].kind == OBS_FACT ? !observe_fact_known(path) : path[0] != '/')
			abort();
		free(excluded);
	}
	struct buf once, twice;
	buf_init(&once);
	buf_init(&twice);
	pathset_encode(&ps, &once);
	pathset_free(&ps);
	if (pathset_decode(once.data, once.len, &ps, &e) < 0)
		abort(); /* what we encode, we must be able to read back */
	pathset_encode(&ps, &twice);
	if (once.len != twice.len || memcmp(once.data, twice.data, once.len) != 0)
		abort();
	pathset_free(&ps);
	buf_free(&once);
	buf_free(&twice);
	return 0;
}
