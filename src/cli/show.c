/*
 * cachet show FILE: which recorded step produced exactly this content, and
 * with which programs (by digest), so that two artifacts built by two
 * builds of one tool are told apart at a glance.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/explain.h"
#include "cachet/path.h"
#include "cachet/portable.h"
#include "cli/cli.h"

static int is_shared_library(const char *path)
{
	const char *base = path_basename(path);
	const char *so = strstr(base, ".so");
	return so && (so[3] == '\0' || so[3] == '.');
}

static const char *kind_name(int kind)
{
	switch (kind) {
	case OBS_READ: return "read";
	case OBS_EXEC: return "exec";
	case OBS_STAT: return "stat";
	case OBS_LIST: return "list";
	case OBS_READLINK: return "readlink";
	case OBS_BASE: return "base";
	case OBS_FACT: return "fact";
	case OBS_CREATED: return "before";
	default: return "?";
	}
}

/* Programs and shared libraries the step ran, with their digests, and one
 * digest over all of them: the toolchain's fingerprint. */
static void print_tools(const struct pathset *ps, const struct result *res)
{
	struct reader r;
	struct hasher h;
	struct buf tools, libs;
	buf_init(&tools);
	buf_init(&libs);
	if (hasher_init(&h, NULL) < 0)
		return;
	reader_init(&r, res->values, res->values_len);
	for (size_t i = 0; i < ps->nobs; i++) {
		size_t len;
		const unsigned char *v = reader_bytes(&r, &len);
		if (!v)
			break;
		const struct observation *o = &ps->obs[i];
		const char *path = ps->paths[o->path];
		int exec = o->kind == OBS_EXEC;
		int lib = o->kind == OBS_READ && is_shared_library(path);
		if (!exec && !lib)
			continue;
		if (len < 1 + DIGEST_LEN || (v[0] != 'F' && v[0] != 'X'))
			continue;
		struct buf *out = exec ? &tools : &libs;
		buf_addf(out, "    %-60s sha256 ", path);
		explain_short_digest(v + 1, out);
		buf_addch(out, '\n');
		hasher_update_str(&h, path);
		hasher_update(&h, v + 1, DIGEST_LEN);
	}
	struct digest all;
	hasher_final(&h, &all);
	struct buf fp;
	buf_init(&fp);
	explain_short_digest(all.b, &fp);
	printf("  toolchain:  %s  (one digest over every program and library below)\n", fp.data);
	printf("  programs run:\n%s", tools.len ? tools.data : "    (none recorded)\n");
	if (libs.len)
		printf("  shared libraries loaded:\n%s", libs.data);
	buf_free(&fp);
	buf_free(&tools);
	buf_free(&libs);
}

static void print_inputs(const struct pathset *ps, const struct result *res)
{
	struct reader r;
	reader_init(&r, res->values, res->values_len);
	printf("  observations (%zu):\n", ps->nobs);
	struct buf line;
	buf_init(&line);
	for (size_t i = 0; i < ps->nobs; i++) {
		size_t len;
		const void *v = reader_bytes(&r, &len);
		if (!v)
			break;
		const struct observation *o = &ps->obs[i];
		buf_reset(&line);
		buf_addf(&line, "    %-8s %s%s  ", kind_name(o->kind), ps->paths[o->path],
			 (o->flags & OBS_F_NOFOLLOW) ? " (nofollow)" : "");
		observe_describe_value(v, len, &line);
		puts(line.data);
	}
	buf_free(&line);
}

static void show_row(struct store *s, const struct store_result_row *row, const struct digest *d,
		     int inputs)
{
	struct error e = { 0 };
	struct result res;
	if (result_decode(row->body, row->len, &res, &e) < 0) {
		printf("  (corrupt entry: %s)\n", e.msg);
		return;
	}
	/* Paths as this checkout has them; what names a base unset here is
	 * shown in its portable form. */
	const struct step_bases *bases = cli_bases(NULL);
	portable_localise_result(&res, bases);
	void *body;
	size_t len;
	struct step step;
	int have_step = store_get_step(s, &row->weak, &body, &len, &e) == 1;
	if (have_step) {
		have_step = step_decode(body, len, &step, &e) == 0;
		free(body);
	}
	if (have_step) {
		char *cmd = cli_command_line(step.argv);
		printf("  command:    %s\n", cmd);
		printf("  cwd:        %s\n", step.cwd);
		printf("  program:    %s sha256 ", step.exe);
		struct buf b;
		buf_init(&b);
		explain_short_digest(step.exe_digest.b, &b);
		printf("%s\n", b.data);
		buf_free(&b);
		free(cmd);
	}
	for (size_t i = 0; i < res.noutputs; i++)
		if (res.outputs[i].kind == OUT_FILE && digest_equal(&res.outputs[i].blob.digest, d))
			printf("  output:     %s\n", res.outputs[i].path);
	if (digest_equal(&res.out.digest, d) && res.out.size)
		printf("  output:     (its stdout)\n");
	char when[32];
	cli_format_time(res.created, when, sizeof when);
	printf("  recorded:   %s on %s, ran %lld ms, cachet %s\n", when, res.host,
	       (long long)res.duration_ms, res.cachet_version);
	printf("  hits since: %lld\n", (long long)row->hits);
	if (res.pinned)
		printf("  keyed on the real path: %s\n", res.pinned);
	char *nondet = NULL;
	int64_t times = 0;
	if (store_nondeterministic(s, &row->weak, &nondet, &times, &e) == 1)
		printf("  NONDETERMINISTIC: re-runs differed %lld time%s; last: %s\n", (long long)times,
		       times == 1 ? "" : "s", nondet);
	free(nondet);
	struct pathset ps;
	if (store_get_pathset(s, &row->weak, &row->pathset, &body, &len, &e) == 1) {
		if (pathset_decode(body, len, &ps, &e) == 0) {
			portable_localise_pathset(&ps, bases);
			print_tools(&ps, &res);
			if (inputs)
				print_inputs(&ps, &res);
			pathset_free(&ps);
		}
		free(body);
	}
	if (have_step)
		step_free(&step);
	result_free(&res);
}

int cmd_show(int argc, char **argv)
{
	int inputs = 0;
	const char *file = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--inputs"))
			inputs = 1;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(cli_help_text("show"), stdout);
			return 0;
		} else if (argv[i][0] == '-' && strcmp(argv[i], "-")) {
			cli_error("show: unknown option '%s'", argv[i]);
			return EXIT_USAGE;
		} else if (!file) {
			file = argv[i];
		} else {
			cli_error("show: one FILE at a time");
			return EXIT_USAGE;
		}
	}
	if (!file) {
		cli_error("usage: cachet show [--inputs] FILE");
		return EXIT_USAGE;
	}
	struct digest d;
	struct error e = { 0 };
	if (digest_cached(file, 0, NULL, &d, NULL) < 0) {
		cli_error("show: %s: %s", file, errno == EINVAL ? "not a regular file" : strerror(errno));
		return EXIT_USAGE;
	}
	struct store *s = cli_open_store(0, NULL);
	if (!s)
		return EXIT_USAGE;
	struct store_result_row *rows;
	size_t n;
	if (store_results_with_blob(s, &d, &rows, &n, &e) < 0) {
		cli_error("show: %s", e.msg);
		store_close(s);
		return EXIT_USAGE;
	}
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(&d, hex);
	if (n == 0) {
		printf("%s: no step in this cache produced this content (sha256 %s)\n", file, hex);
		store_close(s);
		return 1;
	}
	printf("%s  sha256 %s\n", file, hex);
	for (size_t i = 0; i < n; i++) {
		if (n > 1)
			printf("step %zu of %zu:\n", i + 1, n);
		show_row(s, &rows[i], &d, inputs);
	}
	store_result_rows_free(rows, n);
	store_close(s);
	return 0;
}
