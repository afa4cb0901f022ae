/*
 * cachet show FILE: which recorded step produced exactly this content, and
 * with which programs (by digest), so that two artifacts built by two
 * builds of one tool are told apart at a glance; and whether the file is
 * still what its step would make now: current, stale (an input changed
 * since) or modified since cachet wrote it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/explain.h"
#include "cachet/lookup.h"
#include "cachet/path.h"
#include "cachet/portable.h"
#include "cachet/portable_record.h"
#include "cli/cli.h"
#include "cli/options.h"

/* How many results naming FILE's base name are searched for one that wrote
 * FILE, when no result holds its content. */
#define WRITER_SEARCH_LIMIT 2000

enum state { STATE_CURRENT, STATE_STALE, STATE_MODIFIED, STATE_UNKNOWN };

static const char *state_name(enum state s)
{
	switch (s) {
	case STATE_CURRENT:
		return "current";
	case STATE_STALE:
		return "stale";
	case STATE_MODIFIED:
		return "modified";
	default:
		return "unknown";
	}
}

/* One recorded run that holds the content (or, for a modified file, that
 * last wrote its path), decoded, with its verdict. */
struct shown {
	const struct store_result_row *row;
	struct result res;
	struct step step;
	int have_step;
	struct pathset ps;
	int have_ps;
	int writes_file; /* an output of this run is FILE's path */
	enum state state;
	struct explain_list why; /* for STATE_STALE: the first input that changed */
};

static int is_shared_library(const char *path)
{
	const char *base = path_basename(path);
	const char *so = strstr(base, ".so");
	return so && (so[3] == '\0' || so[3] == '.');
}

static const char *kind_name(int kind)
{
	switch (kind) {
	case OBS_READ:
		return "read";
	case OBS_EXEC:
		return "exec";
	case OBS_STAT:
		return "stat";
	case OBS_LIST:
		return "list";
	case OBS_READLINK:
		return "readlink";
	case OBS_BASE:
		return "base";
	case OBS_XATTR:
		return "xattr";
	case OBS_FACT:
		return "fact";
	case OBS_CREATED:
		return "before";
	default:
		return "?";
	}
}

/* The output of res at path, or NULL. */
static const struct output *output_at(const struct result *res, const char *path)
{
	for (size_t i = 0; path && i < res->noutputs; i++)
		if (res->outputs[i].kind == OUT_FILE && !strcmp(res->outputs[i].path, path))
			return &res->outputs[i];
	return NULL;
}

/* The state before each path the step created, as it is right after the
 * step: where the path holds exactly the entry's output (a directory that
 * `mkdir -p` made included), that observation is 'A', as recorded. Whether
 * a rerun would find the state the step found is the question of run and
 * explain; show's is whether the artifact is what its step made from the
 * inputs there now. */
struct in_place {
	const struct pathset *ps;
	struct digest_cache *dc;
};

static int created_in_place(void *ctx, size_t i, const void **value, size_t *len)
{
	const struct in_place *ip = ctx;
	const struct observation *o = &ip->ps->obs[i];
	if (o->kind != OBS_CREATED)
		return 0;
	const char **desc = pathset_excluded(ip->ps, i);
	int in_place =
	    desc && desc[0] && observe_created_in_place(ip->ps->paths[o->path], desc[0], ip->dc);
	free(desc);
	if (!in_place)
		return 0;
	*value = "A";
	*len = 1;
	return 1;
}

/* Decodes a row and evaluates its path set against the file system now, as
 * explain does for a known step: the strong key of the values found now is
 * the row's own when every input holds as recorded. Returns -1 when the row
 * is unreadable. */
static int shown_load(struct store *s, const struct store_result_row *row, const char *abs,
                      struct digest_cache *dc, struct shown *out, struct error *e)
{
	memset(out, 0, sizeof *out);
	out->row = row;
	out->state = STATE_UNKNOWN;
	if (result_decode(row->body, row->len, &out->res, e) < 0)
		return -1;
	const struct step_bases *bases = cli_bases(NULL);
	/* Paths as this checkout has them; what names a base unset here is
	 * shown in its portable form. */
	portable_localise_result(&out->res, bases);
	out->writes_file = output_at(&out->res, abs) != NULL;
	void *body;
	size_t len;
	if (store_get_step(s, &row->weak, &body, &len, e) == 1) {
		out->have_step = step_decode(body, len, &out->step, e) == 0;
		free(body);
	}
	if (store_get_pathset(s, &row->weak, &row->pathset, &body, &len, e) != 1)
		return 0;
	/* As run evaluates it (lookup.h): a damaged path set gives no verdict,
	 * nor does one recorded under a base that is not set here. */
	struct buf values;
	buf_init(&values);
	/* A path the step creates that holds its own output now is in place
	 * (created_in_place), not a change. */
	struct pathset_evaluation ev = {
	    .digest = &row->pathset,
	    .body = body,
	    .len = len,
	    .values = &values,
	    .keep_pathset = 1,
	    .known = created_in_place,
	};
	struct in_place ip = {&ev.ps, dc};
	ev.known_ctx = &ip;
	int rc = lookup_evaluate_pathset(bases, &row->weak, dc, &ev, e);
	free(body);
	out->have_ps = rc != LOOKUP_PATHSET_DAMAGED;
	if (out->have_ps)
		out->ps = ev.ps;
	if (rc != LOOKUP_PATHSET_KEYED) {
		buf_free(&values);
		return 0;
	}
	struct digest strong = ev.strong;
	if (digest_equal(&strong, &row->strong)) {
		out->state = STATE_CURRENT;
	} else {
		size_t d =
		    explain_pathset(&out->ps, &out->res, values.data, values.len,
		                    out->have_step ? out->step.cwd : NULL, bases, 0, &out->why);
		out->state = d == SIZE_MAX || d == 0 ? STATE_UNKNOWN : STATE_STALE;
	}
	buf_free(&values);
	return 0;
}

static void shown_free(struct shown *sh)
{
	if (sh->have_ps)
		pathset_free(&sh->ps);
	if (sh->have_step)
		step_free(&sh->step);
	explain_list_free(&sh->why);
	result_free(&sh->res);
}

/* The step that wrote FILE first, then the freshest verdict, then the
 * newest (the rows come newest first). */
static int shown_order(const void *pa, const void *pb)
{
	const struct shown *a = pa, *b = pb;
	if (a->writes_file != b->writes_file)
		return b->writes_file - a->writes_file;
	if ((a->state == STATE_CURRENT) != (b->state == STATE_CURRENT))
		return a->state == STATE_CURRENT ? -1 : 1;
	return a->row < b->row ? -1 : a->row > b->row;
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

static void print_state(const struct shown *sh)
{
	switch (sh->state) {
	case STATE_CURRENT:
		printf(
		    "  state:      current (every input the step relied on holds as recorded)\n");
		break;
	case STATE_STALE:
		printf("  state:      stale: %s\n", sh->why.items[0].text);
		break;
	case STATE_MODIFIED:
		printf("  state:      modified since cachet wrote it\n");
		break;
	default:
		printf("  state:      unknown (the step's inputs cannot be evaluated here)\n");
		break;
	}
}

/* state: each step's own verdict, when more than one is shown. */
static void show_row(struct store *s, const struct shown *sh, const struct digest *d, int inputs,
                     int state)
{
	struct error e = {0};
	const struct result *res = &sh->res;
	if (state)
		print_state(sh);
	if (sh->have_step) {
		char *cmd = cli_command_line(sh->step.argv);
		printf("  command:    %s\n", cmd);
		printf("  cwd:        %s\n", sh->step.cwd);
		printf("  program:    %s sha256 ", sh->step.exe);
		struct buf b;
		buf_init(&b);
		explain_short_digest(sh->step.exe_digest.b, &b);
		printf("%s\n", b.data);
		buf_free(&b);
		free(cmd);
	}
	for (size_t i = 0; i < res->noutputs; i++)
		if (res->outputs[i].kind == OUT_FILE &&
		    digest_equal(&res->outputs[i].blob.digest, d))
			printf("  output:     %s\n", res->outputs[i].path);
	if (digest_equal(&res->out.digest, d) && res->out.size)
		printf("  output:     (its stdout)\n");
	char when[32];
	cli_format_time(res->created, when, sizeof when);
	printf("  recorded:   %s on %s, ran %lld ms, cachet %s\n", when, res->host,
	       (long long)res->duration_ms, res->cachet_version);
	printf("  hits since: %lld\n", (long long)sh->row->hits);
	if (res->pinned)
		printf("  keyed on the real path: %s\n", res->pinned);
	char *nondet = NULL;
	int64_t times = 0;
	if (store_nondeterministic(s, &sh->row->weak, &nondet, &times, &e) == 1)
		printf("  NONDETERMINISTIC: re-runs differed %lld time%s; last: %s\n",
		       (long long)times, times == 1 ? "" : "s", nondet);
	free(nondet);
	if (sh->have_ps) {
		print_tools(&sh->ps, res);
		if (inputs)
			print_inputs(&sh->ps, res);
	}
}

static void json_str(struct buf *b, const char *key, const char *value)
{
	buf_addf(b, "\"%s\": ", key);
	if (value)
		buf_add_json_string(b, value, strlen(value));
	else
		buf_addstr(b, "null");
}

static void json_digest(struct buf *b, const char *key, const struct digest *d)
{
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(d, hex);
	buf_addf(b, "\"%s\": \"%s\"", key, hex);
}

static void json_row(struct buf *b, const struct shown *sh, const struct digest *d)
{
	const struct result *res = &sh->res;
	buf_addch(b, '{');
	json_str(b, "state", state_name(sh->state));
	buf_addstr(b, ", ");
	json_str(b, "reason", sh->state == STATE_STALE ? sh->why.items[0].text : NULL);
	buf_addstr(b, ", \"argv\": ");
	if (sh->have_step) {
		buf_addch(b, '[');
		for (size_t i = 0; sh->step.argv[i]; i++) {
			buf_addstr(b, i ? ", " : "");
			buf_add_json_string(b, sh->step.argv[i], strlen(sh->step.argv[i]));
		}
		buf_addstr(b, "], ");
		json_str(b, "cwd", sh->step.cwd);
		buf_addstr(b, ", ");
		json_str(b, "program", sh->step.exe);
		buf_addstr(b, ", ");
		json_digest(b, "program_sha256", &sh->step.exe_digest);
	} else {
		buf_addstr(b, "null, \"cwd\": null, \"program\": null, \"program_sha256\": null");
	}
	buf_addstr(b, ", \"outputs\": [");
	int first = 1;
	for (size_t i = 0; i < res->noutputs; i++) {
		if (res->outputs[i].kind != OUT_FILE ||
		    !digest_equal(&res->outputs[i].blob.digest, d))
			continue;
		buf_addstr(b, first ? "" : ", ");
		buf_add_json_string(b, res->outputs[i].path, strlen(res->outputs[i].path));
		first = 0;
	}
	buf_addf(b, "], \"stdout\": %s, \"recorded\": %lld, ",
	         digest_equal(&res->out.digest, d) && res->out.size ? "true" : "false",
	         (long long)res->created);
	json_str(b, "host", res->host);
	buf_addf(b, ", \"duration_ms\": %lld, \"hits\": %lld, ", (long long)res->duration_ms,
	         (long long)sh->row->hits);
	json_digest(b, "weak", &sh->row->weak);
	buf_addstr(b, ", ");
	json_digest(b, "strong", &sh->row->strong);
	buf_addstr(b, ", ");
	json_str(b, "pinned", res->pinned);
	buf_addch(b, '}');
}

/* No result holds FILE's content: the newest result that wrote FILE's path,
 * if any (the file was modified since). Candidates are the results whose
 * body names FILE's base name, which every spelling of its path (real or
 * portable) ends with. */
static int find_writer(struct store *s, const char *abs, struct digest_cache *dc,
                       struct store_result_row **rows, size_t *nrows, struct shown *out)
{
	struct error e = {0};
	const char *base = path_basename(abs);
	if (store_results_naming(s, base, strlen(base), WRITER_SEARCH_LIMIT, rows, nrows, &e) < 0)
		return 0;
	for (size_t i = 0; i < *nrows; i++) {
		struct result res;
		if (result_decode((*rows)[i].body, (*rows)[i].len, &res, &e) < 0)
			continue;
		portable_localise_result(&res, cli_bases(NULL));
		int wrote = output_at(&res, abs) != NULL;
		result_free(&res);
		if (wrote && shown_load(s, &(*rows)[i], abs, dc, out, &e) == 0)
			return 1;
	}
	return 0;
}

static int show_modified(struct store *s, const char *file, const char *abs,
                         const struct digest *now, int json, struct digest_cache *dc)
{
	struct store_result_row *rows = NULL;
	size_t n = 0;
	struct shown sh;
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(now, hex);
	if (!find_writer(s, abs, dc, &rows, &n, &sh)) {
		if (json) {
			struct buf b;
			buf_init(&b);
			buf_addch(&b, '{');
			json_str(&b, "file", file);
			buf_addf(&b, ", \"sha256\": \"%s\", \"state\": \"unknown\", ", hex);
			json_str(&b, "reason", "no step in this cache produced this content");
			buf_addstr(&b, ", \"steps\": []}\n");
			fputs(b.data, stdout);
			buf_free(&b);
		} else {
			printf("%s: no step in this cache produced this content (sha256 %s)\n",
			       file, hex);
		}
		store_result_rows_free(rows, n);
		return 1;
	}
	const struct output *o = output_at(&sh.res, abs);
	struct digest wrote = o->blob.digest;
	sh.state = STATE_MODIFIED;
	if (json) {
		struct buf b;
		buf_init(&b);
		buf_addch(&b, '{');
		json_str(&b, "file", file);
		buf_addstr(&b, ", ");
		json_digest(&b, "sha256", now);
		buf_addstr(&b, ", \"state\": \"modified\", ");
		json_str(&b, "reason", "modified since cachet wrote it");
		buf_addstr(&b, ", ");
		json_digest(&b, "written_sha256", &wrote);
		buf_addstr(&b, ", \"steps\": [");
		json_row(&b, &sh, &wrote);
		buf_addstr(&b, "]}\n");
		fputs(b.data, stdout);
		buf_free(&b);
	} else {
		struct buf w;
		buf_init(&w);
		explain_short_digest(wrote.b, &w);
		char when[32];
		cli_format_time(sh.res.created, when, sizeof when);
		printf("%s  sha256 %s\n", file, hex);
		printf("modified since cachet wrote it: cachet wrote sha256 %s here at %s\n",
		       w.data, when);
		printf("the step that wrote it:\n");
		show_row(s, &sh, &wrote, 0, 0);
		buf_free(&w);
	}
	shown_free(&sh);
	store_result_rows_free(rows, n);
	return 1;
}

enum { OPT_INPUTS = 1, OPT_JSON };

static const struct cli_option show_options[] = {
    {OPT_INPUTS, 0, "inputs", NULL, "also list every observation the step relied on"},
    {OPT_JSON, 0, "json", NULL, "one JSON object: file, sha256, state, reason, steps[]"},
    {0},
};

const struct cli_command cli_cmd_show = {
    .name = "show",
    .operands = "FILE",
    .options = show_options,
    .description = "Says whether FILE is still what its step would make now: current, stale\n"
                   "(naming the first input that changed since, as explain does) or modified\n"
                   "since cachet wrote it. Then the recorded steps whose result holds exactly\n"
                   "FILE's content, the one that wrote FILE itself first: command line, cwd,\n"
                   "time, host, duration, hits since, and every program and shared library they\n"
                   "ran, with digests and one toolchain digest over all.\n",
    .epilogue = "Exit status: 0 current, 1 stale, modified or made by no step, 2 usage error.\n",
};

int cmd_show(int argc, char **argv)
{
	int inputs = 0, json = 0;
	const char *file = NULL;
	struct cli_args args;
	cli_args_init(&args, &cli_cmd_show, argc, argv);
	for (int id; (id = cli_args_next(&args)) != CLI_ARG_END;) {
		if (id == CLI_ARG_EXIT)
			return args.exit;
		if (id == OPT_INPUTS) {
			inputs = 1;
		} else if (id == OPT_JSON) {
			json = 1;
		} else if (!file) {
			file = args.value;
		} else {
			cli_error("show: one FILE at a time");
			return EXIT_USAGE;
		}
	}
	if (!file) {
		cli_error("show: no FILE given (see cachet show --help)");
		return EXIT_USAGE;
	}
	struct digest d;
	struct error e = {0};
	if (digest_cached(file, 0, NULL, &d, NULL) < 0) {
		cli_error("show: %s: %s", file,
		          errno == EINVAL ? "not a regular file" : strerror(errno));
		return EXIT_USAGE;
	}
	/* Outputs are recorded at the real path the step wrote. */
	char abs[PATH_MAX];
	const char *abs_path = realpath(file, abs) ? abs : NULL;
	struct store *s = cli_open_store(0, NULL);
	if (!s)
		return EXIT_USAGE;
	struct digest_cache dc;
	cli_digest_cache(s, &dc);
	struct store_result_row *rows;
	size_t n;
	if (store_results_with_blob(s, &d, &rows, &n, &e) < 0) {
		cli_error("show: %s", e.msg);
		store_close(s);
		return EXIT_USAGE;
	}
	if (n == 0) {
		int rc = show_modified(s, file, abs_path, &d, json, &dc);
		store_result_rows_free(rows, n);
		store_close(s);
		return rc;
	}
	struct shown *sh = xcalloc(n, sizeof *sh);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (shown_load(s, &rows[i], abs_path, &dc, &sh[m], &e) == 0)
			m++;
		else if (!json)
			printf("  (corrupt entry: %s)\n", e.msg);
	}
	qsort(sh, m, sizeof *sh, shown_order);
	int rc = m && sh[0].state == STATE_CURRENT ? 0 : 1;
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(&d, hex);
	if (json) {
		struct buf b;
		buf_init(&b);
		buf_addch(&b, '{');
		json_str(&b, "file", file);
		buf_addf(&b, ", \"sha256\": \"%s\", ", hex);
		json_str(&b, "state", m ? state_name(sh[0].state) : "unknown");
		buf_addstr(&b, ", ");
		json_str(&b, "reason",
		         m && sh[0].state == STATE_STALE ? sh[0].why.items[0].text : NULL);
		buf_addstr(&b, ", \"steps\": [");
		for (size_t i = 0; i < m; i++) {
			buf_addstr(&b, i ? ", " : "");
			json_row(&b, &sh[i], &d);
		}
		buf_addstr(&b, "]}\n");
		fputs(b.data, stdout);
		buf_free(&b);
	} else {
		printf("%s  sha256 %s\n", file, hex);
		if (m && sh[0].state == STATE_STALE)
			printf("stale: %s\n", sh[0].why.items[0].text);
		else if (m)
			printf("%s\n", sh[0].state == STATE_CURRENT
			                   ? "current: its step would make it again"
			                   : "unknown: the step's inputs cannot be evaluated here");
		for (size_t i = 0; i < m; i++) {
			if (m > 1)
				printf("step %zu of %zu:\n", i + 1, m);
			show_row(s, &sh[i], &d, inputs, m > 1);
		}
	}
	for (size_t i = 0; i < m; i++)
		shown_free(&sh[i]);
	free(sh);
	store_result_rows_free(rows, n);
	store_close(s);
	return rc;
}
