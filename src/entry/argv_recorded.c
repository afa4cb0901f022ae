/*
 * The argv group of a recorded run (argv_inputs.h): which words of its
 * command line name files it read, and the key of their contents.
 */
#include "cachet/record.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/argv_inputs.h"
#include "cachet/buf.h"
#include "cachet/observe.h"
#include "cachet/path.h"
#include "cachet/pathset.h"
#include "cachet/portable.h"
#include "cachet/result.h"
#include "cachet/step.h"
#include "cachet/strmap.h"

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
	size_t nwords = argv_inputs_words(s);
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
	argv_inputs_key_begin(&h);
	for (size_t i = 1; i < nwords; i++)
		if (words & ((uint64_t)1 << i))
			argv_inputs_key_add(&h, i, &content[i]);
	hasher_final(&h, key);
	return words;
}
