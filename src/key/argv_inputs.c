#include "cachet/argv_inputs.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/observe.h"
#include "cachet/path.h"
#include "cachet/pathset.h"
#include "cachet/portable.h"
#include "cachet/step.h"
#include "cachet/strmap.h"

size_t argv_inputs_words(const struct step *s)
{
	size_t n = 0;
	while (s->argv[n] && n < ARGV_INPUTS_MAX_WORDS)
		n++;
	return n;
}

void argv_inputs_key_begin(struct hasher *h)
{
	if (hasher_init(h, NULL) < 0)
		abort();
	hasher_update_str(h, "cachet argv inputs");
}

void argv_inputs_key_add(struct hasher *h, size_t word, const struct digest *content)
{
	hasher_update_u64(h, word);
	hasher_update(h, content->b, DIGEST_LEN);
}

int argv_inputs_key(const struct step *s, uint64_t words, struct digest_cache *dc,
                    struct digest *key)
{
	size_t nwords = argv_inputs_words(s);
	/* Recorded for a longer command line. */
	if (nwords < ARGV_INPUTS_MAX_WORDS && (words >> nwords))
		return -1;
	struct hasher h;
	argv_inputs_key_begin(&h);
	for (size_t i = 1; i < nwords; i++) {
		if (!(words & ((uint64_t)1 << i)))
			continue;
		struct digest content;
		char *p = path_join(s->cwd, s->argv[i]);
		int rc = digest_cached(p, 0, dc, &content, NULL);
		free(p);
		if (rc < 0) {
			hasher_abort(&h);
			return -1;
		}
		argv_inputs_key_add(&h, i, &content);
	}
	hasher_final(&h, key);
	return 0;
}
