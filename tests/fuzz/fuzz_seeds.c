/*
 * Writes valid encodings of a path set, a result and a step, made by
 * cachet's own encoders, as seeds for the fuzz targets: libFuzzer mutates
 * from there instead of rediscovering the formats' magic numbers.
 *
 *   fuzz_seeds OUTDIR    (OUTDIR/pathset/, result/, step/, remote/, memo/ must exist)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/dirfp.h"
#include "cachet/pathset.h"
#include "cachet/remote.h"
#include "cachet/result.h"
#include "cachet/step.h"
#include "cachet/store.h"

static void save(const char *dir, const char *sub, const char *name, const struct buf *b)
{
	char *path = xasprintf("%s/%s/%s", dir, sub, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(b->data, 1, b->len, f) != b->len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	free(path);
}

static void pathsets(const char *dir)
{
	struct pathset ps;
	pathset_init(&ps);
	const char *const excluded[] = {"__pycache__", "x.o", NULL};
	pathset_add(&ps, OBS_READ, 0, "/usr/include/stdio.h", NULL);
	pathset_add(&ps, OBS_EXEC, 0, "/usr/bin/gcc", NULL);
	pathset_add(&ps, OBS_STAT, OBS_F_NOFOLLOW, "/w/missing.h", NULL);
	pathset_add(&ps, OBS_LIST, 0, "/w", excluded);
	pathset_add(&ps, OBS_READLINK, 0, "/usr/bin/cc", NULL);
	pathset_canonicalise(&ps, NULL);
	struct buf b;
	buf_init(&b);
	pathset_encode(&ps, &b);
	save(dir, "pathset", "five", &b);
	pathset_free(&ps);
	buf_free(&b);
}

static void results(const char *dir)
{
	struct result r;
	result_init(&r);
	struct output *o = result_add_output(&r, OUT_FILE, "/w/a.o");
	o->mode = 0644;
	memset(o->blob.digest.b, 0xab, sizeof o->blob.digest.b);
	o->blob.size = 1234;
	o->blob.form = BLOB_ZSTD;
	o = result_add_output(&r, OUT_FILE, "/w/tool");
	o->mode = 0755;
	o->has_mtime = 1;
	o->mtime_ns = 1700000000123456789;
	o = result_add_output(&r, OUT_SYMLINK, "/w/libfoo.so");
	o->mode = 0777;
	o->target = xstrdup("libfoo.so.1");
	result_add_output(&r, OUT_DIR, "/w/out")->mode = 0755;
	result_add_output(&r, OUT_DELETE, "/w/old.o");
	r.exit_code = 0;
	r.duration_ms = 250;
	r.created = 1700000000;
	r.host = xstrdup("builder");
	r.cachet_version = xstrdup("0.1.0");
	r.values = xmalloc(8);
	memcpy(r.values, "\x04\0\0\0abcd", 8);
	r.values_len = 8;
	r.listings = xstrdup("");
	struct buf b;
	buf_init(&b);
	result_encode(&r, &b);
	b.len -= DIGEST_LEN; /* fuzz_result appends the checksum itself */
	save(dir, "result", "five", &b);
	/* with stdout and stderr interleaved: err 3, out 5, err 4 */
	r.out.size = 5;
	r.err.size = 7;
	r.stdin_advance = 6;
	r.stream_runs = xmalloc(3 * sizeof *r.stream_runs);
	r.stream_runs[0] = 3 << 1 | 1;
	r.stream_runs[1] = 5 << 1;
	r.stream_runs[2] = 4 << 1 | 1;
	r.nstream_runs = 3;
	buf_reset(&b);
	result_encode(&r, &b);
	b.len -= DIGEST_LEN;
	save(dir, "result", "ordered", &b);
	result_free(&r);
	buf_free(&b);
}

static void steps(const char *dir)
{
	char *argv[] = {"/usr/bin/gcc", "-O2", "-c", "a.c", "-o", "a.o", NULL};
	char *env[] = {"PATH=/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8", NULL};
	struct step st;
	struct error e = {0};
	if (step_init(&st, argv, "/bin/sh", env, NULL, NULL, NULL, NULL, NULL, &e) < 0) {
		fprintf(stderr, "fuzz_seeds: %s\n", e.msg);
		exit(1);
	}
	struct buf b;
	buf_init(&b);
	step_encode(&st, &b);
	save(dir, "step", "gcc", &b);
	step_free(&st);
	buf_free(&b);
}

/* fuzz_remote: a first byte picks the decoder (even: path-set list, odd: entry). */
static void remotes(const char *dir)
{
	/* Built by hand, one signed and one not: remote_pathsets_add has its
	 * own policy about which sets it keeps. */
	static const char *const bodies[] = {"CTPS first body", "CTPS second body, longer"};
	struct remote_pathset sets[2];
	memset(sets, 0, sizeof sets);
	for (int i = 0; i < 2; i++) {
		sets[i].body = (void *)bodies[i];
		sets[i].len = strlen(bodies[i]);
		digest_bytes(bodies[i], sets[i].len, &sets[i].digest);
	}
	sets[1].is_signed = 1;
	memset(sets[1].pubkey, 6, sizeof sets[1].pubkey);
	memset(sets[1].sig, 7, sizeof sets[1].sig);
	struct remote_pathsets p = {sets, 2};
	struct buf b;
	buf_init(&b);
	buf_put_u8(&b, 0);
	remote_pathsets_encode(&p, &b);
	save(dir, "remote", "pathsets", &b);

	struct remote_entry en;
	memset(&en, 0, sizeof en);
	memset(en.weak.b, 1, DIGEST_LEN);
	memset(en.pathset.b, 2, DIGEST_LEN);
	memset(en.strong.b, 3, DIGEST_LEN);
	en.result = xstrdup("CTRS a portable result body");
	en.result_len = strlen(en.result);
	buf_reset(&b);
	buf_put_u8(&b, 1);
	remote_entry_encode(&en, &b);
	save(dir, "remote", "entry", &b);
	en.is_signed = 1;
	memset(en.pubkey, 4, sizeof en.pubkey);
	memset(en.sig, 5, sizeof en.sig);
	buf_reset(&b);
	buf_put_u8(&b, 1);
	remote_entry_encode(&en, &b);
	save(dir, "remote", "signed-entry", &b);
	remote_entry_free(&en);
	buf_free(&b);
}

/* A memo of a path set whose every lookup its directory decides, with a
 * fingerprint (made up: decoding does not stat). */
static void memos(const char *dir)
{
	struct pathset ps;
	pathset_init(&ps);
	pathset_add(&ps, OBS_STAT, 0, "/usr/include/missing.h", NULL);
	pathset_add(&ps, OBS_READLINK, 0, "/usr/bin/cc", NULL);
	pathset_add(&ps, OBS_READ, 0, "/usr/include/stdio.h", NULL);
	pathset_canonicalise(&ps, NULL);
	struct buf body, dirs, b;
	buf_init(&body);
	buf_init(&dirs);
	buf_init(&b);
	pathset_encode(&ps, &body);
	struct dirfp fp = {.dir = "/usr/include", .id = {1, 2, 4096, 5, 6, 040755}};
	uint32_t obs_dir[3] = {1, 0, 0};
	struct dirfp_set set = {.dirs = &fp, .ndirs = 1, .obs_dir = obs_dir, .nobs = 3};
	dirfp_encode(&set, &dirs);
	struct store_memo_fp f = {.path = "/usr/include/stdio.h", .id = {1, 3, 100, 7, 8, 0100644}};
	struct store_memo m = {
	    .weak = {{1}},
	    .pathset = {{2}},
	    .strong = {{3}},
	    .pathset_body = body.data,
	    .pathset_len = body.len,
	    .result_body = "result",
	    .result_len = 6,
	    .dirs = dirs.data,
	    .dirs_len = dirs.len,
	    .fps = &f,
	    .nfps = 1,
	};
	store_memo_encode(&m, &b);
	save(dir, "memo", "one", &b);
	pathset_free(&ps);
	buf_free(&body);
	buf_free(&dirs);
	buf_free(&b);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_seeds OUTDIR\n");
		return 2;
	}
	pathsets(argv[1]);
	results(argv[1]);
	steps(argv[1]);
	remotes(argv[1]);
	memos(argv[1]);
	return 0;
}
