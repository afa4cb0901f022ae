/*
 * A test-only tool that reads and rewrites remote entries with cachet's own
 * encoder, so the system tests can play a hostile or broken server:
 *
 *   cachet-remote-testtool kind FILE               entry | pathsets | other
 *   cachet-remote-testtool paths FILE              the output paths of an entry
 *   cachet-remote-testtool set-path FILE OLD NEW   rename an output (the
 *                                                  signature, if any, stays)
 *   cachet-remote-testtool set-target FILE PATH T  point the symlink output
 *                                                  PATH at T
 *   cachet-remote-testtool unsign FILE             drop the signature
 *   cachet-remote-testtool signed FILE             prints 1 or 0
 *   cachet-remote-testtool pathsets-read FILE PATH every path set of a path-set
 *                                                  record also reads PATH (unsigned)
 *   cachet-remote-testtool pathsets-empty FILE     every path set observes nothing
 *   cachet-remote-testtool pathsets-bloat FILE N   every path set gets N more
 *                                                  observations
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/pathset.h"
#include "cachet/remote.h"
#include "cachet/result.h"

static int slurp(const char *path, struct buf *b)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		buf_add(b, chunk, n);
	fclose(f);
	return 0;
}

static int spit(const char *path, const struct buf *b)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	int ok = fwrite(b->data, 1, b->len, f) == b->len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static int die(const char *msg)
{
	fprintf(stderr, "cachet-remote-testtool: %s\n", msg);
	return 2;
}

/* A hostile writer's path-set record: each path set changed as `how` says,
 * re-digested and unsigned. */
static int rewrite_pathsets(const char *how, const char *file, const struct buf *in,
                            const char *arg)
{
	struct remote_pathsets list;
	struct error e = {0};
	if (remote_pathsets_decode(in->data, in->len, &list, &e) < 0)
		return die("not a path-set record");
	for (size_t i = 0; i < list.n; i++) {
		struct remote_pathset *set = &list.sets[i];
		struct pathset ps;
		if (pathset_decode(set->body, set->len, &ps, &e) < 0)
			return die(e.msg);
		if (!strcmp(how, "read") && arg) {
			pathset_add(&ps, OBS_READ, 0, arg, NULL);
		} else if (!strcmp(how, "empty")) {
			pathset_free(&ps);
			pathset_init(&ps);
		} else if (!strcmp(how, "bloat") && arg) {
			for (unsigned long k = 0, n = strtoul(arg, NULL, 10); k < n; k++) {
				char path[64];
				snprintf(path, sizeof path, "/usr/bloat/%lu", k);
				pathset_add(&ps, OBS_STAT, 0, path, NULL);
			}
		} else {
			return die("unknown command");
		}
		pathset_canonicalise(&ps, NULL);
		struct buf body;
		buf_init(&body);
		pathset_encode(&ps, &body);
		pathset_free(&ps);
		free(set->body);
		set->body = body.data;
		set->len = body.len;
		digest_bytes(set->body, set->len, &set->digest);
		set->is_signed = 0;
	}
	struct buf out;
	buf_init(&out);
	remote_pathsets_encode(&list, &out);
	return spit(file, &out) < 0 ? die("cannot write the file") : 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return die("usage: kind|paths|set-path|set-target|unsign|signed FILE [ARGS]");
	const char *cmd = argv[1], *file = argv[2];
	struct buf in;
	buf_init(&in);
	if (slurp(file, &in) < 0)
		return die("cannot read the file");
	struct error e = {0};
	struct remote_entry en;
	int is_entry = remote_entry_decode(in.data, in.len, &en, &e) == 0;
	if (!strcmp(cmd, "kind")) {
		struct remote_pathsets ps;
		if (is_entry) {
			puts("entry");
		} else if (remote_pathsets_decode(in.data, in.len, &ps, &e) == 0) {
			puts("pathsets");
			remote_pathsets_free(&ps);
		} else {
			puts("other");
		}
		return 0;
	}
	if (!strncmp(cmd, "pathsets-", 9))
		return rewrite_pathsets(cmd + 9, file, &in, argc > 3 ? argv[3] : NULL);
	if (!is_entry)
		return die("not an entry");
	if (!strcmp(cmd, "signed")) {
		printf("%d\n", en.is_signed);
		return 0;
	}
	struct result res;
	if (result_decode(en.result, en.result_len, &res, &e) < 0)
		return die(e.msg);
	if (!strcmp(cmd, "paths")) {
		for (size_t i = 0; i < res.noutputs; i++)
			puts(res.outputs[i].path);
		return 0;
	}
	if (!strcmp(cmd, "set-path") && argc == 5) {
		int found = 0;
		for (size_t i = 0; i < res.noutputs; i++)
			if (!strcmp(res.outputs[i].path, argv[3])) {
				free(res.outputs[i].path);
				res.outputs[i].path = strdup(argv[4]);
				found = 1;
			}
		if (!found)
			return die("no such output");
	} else if (!strcmp(cmd, "set-target") && argc == 5) {
		int found = 0;
		for (size_t i = 0; i < res.noutputs; i++)
			if (res.outputs[i].kind == OUT_SYMLINK &&
			    !strcmp(res.outputs[i].path, argv[3])) {
				free(res.outputs[i].target);
				res.outputs[i].target = strdup(argv[4]);
				found = 1;
			}
		if (!found)
			return die("no such symlink output");
	} else if (!strcmp(cmd, "unsign")) {
		en.is_signed = 0;
	} else {
		return die("unknown command");
	}
	struct buf body, out;
	buf_init(&body);
	buf_init(&out);
	result_encode(&res, &body);
	free(en.result);
	en.result = body.data;
	en.result_len = body.len;
	remote_entry_encode(&en, &out);
	if (spit(file, &out) < 0)
		return die("cannot write the file");
	return 0;
}
