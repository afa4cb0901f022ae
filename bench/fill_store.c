/*
 * Fills a cache with synthetic entries through the store API, for the
 * "hit with 1,000,000 entries in the local store" figure of bench/run:
 *
 *   fill_store DIR COUNT
 *
 * Entry i has its own weak key, path set and strong key (SHA-256 of "weak
 * i" and so on, so rows land all over the B-trees as real keys do), a path
 * set body of about 1 KB, a result body of about 300 bytes, and references
 * one blob shared by all (a million blob files would measure the file
 * system, not the index). Every tenth entry also adds a fingerprint, as
 * the source files of a real cache do. Adds to what DIR holds already.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cachet/buf.h"
#include "cachet/digest.h"
#include "cachet/store.h"
#include "store/store_internal.h"

static struct digest key(const char *what, unsigned long i)
{
	char text[64];
	int n = snprintf(text, sizeof text, "fill %s %lu", what, i);
	struct digest d;
	digest_bytes(text, (size_t)n, &d);
	return d;
}

static void fill_text(struct buf *b, const char *what, unsigned long i, size_t size)
{
	buf_reset(b);
	while (b->len < size)
		buf_addf(b, "/usr/include/%s/%lu/header-%zu.h;", what, i, b->len);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fill_store DIR COUNT\n");
		return 2;
	}
	unsigned long count = strtoul(argv[2], NULL, 10);
	struct store *s;
	struct error e;
	if (store_open(argv[1], 0, &s, &e) < 0) {
		fprintf(stderr, "fill_store: %s\n", e.msg);
		return 1;
	}
	/* A benchmark fixture: durability does not matter, speed does. Without
	 * a journal each commit writes its pages once, not to the WAL and again
	 * at the checkpoint; the next store_open puts WAL mode back. */
	sqlite3_exec(s->db,
	             "PRAGMA synchronous=OFF; PRAGMA journal_mode=DELETE; PRAGMA journal_mode=OFF;"
	             " PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-262144",
	             NULL, NULL, NULL);
	static const char content[] = "one blob shared by every synthetic entry\n";
	struct blob_ref blob;
	if (store_put_blob_mem(s, content, sizeof content - 1, &blob, &e) < 0) {
		fprintf(stderr, "fill_store: %s\n", e.msg);
		return 1;
	}
	/* Bodies of a batch live until its one transaction commits. */
	enum { BATCH = 5000 };
	struct batch {
		struct digest weak, ps, strong;
		struct buf step, pathset, result;
	} *b = xcalloc(BATCH, sizeof *b);
	struct store_entry *en = xcalloc(BATCH, sizeof *en);
	for (size_t k = 0; k < BATCH; k++) {
		buf_init(&b[k].step);
		buf_init(&b[k].pathset);
		buf_init(&b[k].result);
	}
	time_t start = time(NULL);
	for (unsigned long first = 0; first < count; first += BATCH) {
		size_t n = count - first < BATCH ? count - first : BATCH;
		for (size_t k = 0; k < n; k++) {
			unsigned long i = first + k;
			b[k].weak = key("weak", i);
			b[k].ps = key("pathset", i);
			b[k].strong = key("strong", i);
			fill_text(&b[k].step, "step", i, 300);
			fill_text(&b[k].pathset, "pathset", i, 1000);
			fill_text(&b[k].result, "result", i, 300);
			if (i % 10 == 0) {
				char path[96];
				snprintf(path, sizeof path, "/src/dir%lu/file%lu.c", i % 1000, i);
				struct file_id id = {1,          i,          1000 + i,
				                     (int64_t)i, (int64_t)i, 0100644};
				store_fp_put(s, path, &id, &b[k].strong);
			}
			en[k] = (struct store_entry){
			    .weak = &b[k].weak,
			    .step_body = b[k].step.data,
			    .step_len = b[k].step.len,
			    .pathset = &b[k].ps,
			    .pathset_body = b[k].pathset.data,
			    .pathset_len = b[k].pathset.len,
			    .strong = &b[k].strong,
			    .result_body = b[k].result.data,
			    .result_len = b[k].result.len,
			    .blobs = &blob,
			    .nblobs = 1,
			    .duration_ms = 100,
			};
		}
		if (store_put_entries(s, en, n, 16, &e) < 0) {
			fprintf(stderr, "fill_store: entries from %lu: %s\n", first, e.msg);
			return 1;
		}
		if ((first + n) % 100000 == 0)
			fprintf(stderr, "fill_store: %lu entries (%lds)\n", first + n,
			        (long)(time(NULL) - start));
	}
	for (size_t k = 0; k < BATCH; k++) {
		buf_free(&b[k].step);
		buf_free(&b[k].pathset);
		buf_free(&b[k].result);
	}
	free(b);
	free(en);
	store_close(s);
	return 0;
}
