#include "cachet/argv_inputs.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/observe.h"
#include "cachet/path.h"
#include "cachet/pathset.h"
#include "cachet/portable.h"
#include "cachet/record.h"
#include "cachet/result.h"
#include "cachet/step.h"
#include "cachet/strmap.h"

static size_t considered_words(const struct step *s)
{
	size_t n = 0;
	while (s->argv[n] && n < ARGV_INPUTS_MAX_WORDS)
		n++;
	return n;
}

static void key_begin(struct hasher *h)
{
	if (hasher_init(h, NULL) < 0)
		abort();
	hasher_update_str(h, "cachet argv inputs");
}

static void key_add(struct hasher *h, size_t word, const struct digest *content)
{
	hasher_update_u64(h, word);
	hasher_update(h, content->b, DIGEST_LEN);
}

/* The path a word names as the recorded run's paths spell it: absolute,
 * tidied like the tracer's, and portable under the step's bases. NULL when
 * the word cannot name a file. */
static char *recorded_path(const struct step *s, const char *word)
{
	if (!*word)
		return NULL;
	char *abs = path_join(s->cwd, word);
	if (!portable_has_bases(&s->bases))
		return abs;
	char *p = portable_path(abs, &s->bases);
	free(abs);
	return p;
}

uint64_t argv_inputs_recorded(const struct step *s, const struct record *rec, struct digest *key)
{
	size_t nwords = considered_words(s);
	/* word position + 1 by the path it names (a path named twice keeps
	 * its first position: the same content either way). */
	struct strmap named;
	strmap_init(&named);
	for (size_t i = 1; i < nwords; i++) {
		char *p = recorded_path(s, s->argv[i]);
		if (p && !strmap_get(&named, p))
			strmap_put(&named, p, (void *)(uintptr_t)(i + 1));
		free(p);
	}
	if (!named.count) {
		strmap_free(&named);
		return 0;
	}
	/* A file the step wrote is an output, whatever it read of it first. */
	for (size_t k = 0; k < rec->result.noutputs; k++)
		if (strmap_get(&named, rec->result.outputs[k].path))
			strmap_put(&named, rec->result.outputs[k].path, NULL);

	struct digest content[ARGV_INPUTS_MAX_WORDS];
	uint64_t words = 0;
	struct reader r;
	reader_init(&r, rec->values.data, rec->values.len);
	for (size_t i = 0; i < rec->ps.nobs; i++) {
		size_t len;
		const unsigned char *v = reader_bytes(&r, &len);
		if (!v)
			break;
		const struct observation *o = &rec->ps.obs[i];
		if (o->kind != OBS_READ || len != 1 + DIGEST_LEN || v[0] != 'F')
			continue;
		uintptr_t pos = (uintptr_t)strmap_get(&named, rec->ps.paths[o->path]);
		if (!pos)
			continue;
		memcpy(content[pos - 1].b, v + 1, DIGEST_LEN);
		words |= (uint64_t)1 << (pos - 1);
	}
	strmap_free(&named);
	if (!words)
		return 0;
	struct hasher h;
	key_begin(&h);
	for (size_t i = 1; i < nwords; i++)
		if (words & ((uint64_t)1 << i))
			key_add(&h, i, &content[i]);
	hasher_final(&h, key);
	return words;
}

int argv_inputs_key(const struct step *s, uint64_t words, struct digest_cache *dc,
                    struct digest *key)
{
	size_t nwords = considered_words(s);
	/* Recorded for a longer command line. */
	if (nwords < ARGV_INPUTS_MAX_WORDS && (words >> nwords))
		return -1;
	struct hasher h;
	key_begin(&h);
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
		key_add(&h, i, &content);
	}
	hasher_final(&h, key);
	return 0;
}
