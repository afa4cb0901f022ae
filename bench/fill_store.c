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
	struct buf step, pathset, result;
	buf_init(&step);
	buf_init(&pathset);
	buf_init(&result);
	time_t start = time(NULL);
	for (unsigned long i = 0; i < count; i++) {
		struct digest weak = key("weak", i), ps = key("pathset", i), strong = key("strong", i);
		fill_text(&step, "step", i, 300);
		fill_text(&pathset, "pathset", i, 1000);
		fill_text(&result, "result", i, 300);
		if (i % 10 == 0) {
			char path[96];
			snprintf(path, sizeof path, "/src/dir%lu/file%lu.c", i % 1000, i);
			struct file_id id = {1, i, 1000 + i, (int64_t)i, (int64_t)i, 0100644};
			store_fp_put(s, path, &id, &strong);
		}
		struct store_entry en = {
			.weak = &weak,
			.step_body = step.data,
			.step_len = step.len,
			.pathset = &ps,
			.pathset_body = pathset.data,
			.pathset_len = pathset.len,
			.strong = &strong,
			.result_body = result.data,
			.result_len = result.len,
			.blobs = &blob,
			.nblobs = 1,
			.duration_ms = 100,
		};
		if (store_put_entry(s, &en, 16, &e) < 0) {
			fprintf(stderr, "fill_store: entry %lu: %s\n", i, e.msg);
			return 1;
		}
		if ((i + 1) % 100000 == 0) {
			fprintf(stderr, "fill_store: %lu entries (%lds)\n", i + 1,
				(long)(time(NULL) - start));
		}
	}
	buf_free(&step);
	buf_free(&pathset);
	buf_free(&result);
	store_close(s);
	return 0;
}
