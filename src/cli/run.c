/*
 * cachet run: look the step up; on a hit restore its outputs and replay its
 * output; on a miss run it under the tracer, record what it relied on and
 * store what it left behind.
 */
#include "cli/cli.h"
#include "cli/options.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cachet/fdio.h"
#include "cachet/buf.h"
#include "cachet/elfsyms.h"
#include "cachet/lookup.h"
#include "cachet/output_words.h"
#include "cachet/path.h"
#include "cachet/pathset.h"
#include "cachet/portable.h"
#include "cachet/portable_record.h"
#include "cachet/prefetch.h"
#include "cachet/record.h"
#include "cachet/result.h"
#include "cachet/spawn.h"
#include "cachet/step.h"
#include "cachet/step_name.h"
#include "cachet/thread.h"
#include "cachet/trace.h"
#include "cachet/strv.h"
#include "cli/run_checks.h"
#include "cli/remote_tier.h"
#include "cli/gc.h"
#include "cli/settings.h"
#include "cli/shared_cache.h"
#include "cli/statslog.h"
#include "cli/step_colour.h"
#include "cli/step_env.h"
#include "cli/step_reason.h"
#include "cli/inherited.h"
#include "cli/tee.h"

extern char **environ;

struct run {
	const struct settings *settings; /* NULL when the configuration is bad */
	int64_t stdin_advance;           /* how far the miss moved a regular file's stdin */
	char **ignore_roots;             /* private TMPDIR, the cache, ignore_paths */
	char **argv;                     /* the command */
	char *program;                   /* resolved path */
	struct stat program_st;          /* program's, as the PATH search found it */
	int verbose;
	int recache;
	struct store *store;
	struct step_lookup lookup; /* the lookup of the step (lookup.h) */
	int exit_code;             /* of the hit served */
	struct step step;
	int64_t start_ms;
	struct step_tmpdir tmp;
	char *cache_dir;
	int stderr_at_line_start;
	/* checks (run_checks.h) */
	int verify_forced;           /* --verify */
	const char *check_cmd;       /* --check CMD */
	const char *require_symbols; /* --require-symbols FILE */
	int verifying;               /* this run re-runs a hit to compare */
	struct result verify_cached; /* the cached result being verified */
	/* A new step's difference from the last one of its identity, found
	 * before its entry names the identity (store_result), for report. */
	int new_step_detail_known;
	char *new_step_detail;
	unsigned entry_rows; /* STORE_ENTRY_*: what a miss's entry will write */
	/* What tracing the step cost, for the status line: seccomp and
	 * syscall-exit stops, and calls the preload library reported instead,
	 * over its traced runs (a preprocessor run's included). */
	int traced;
	size_t stops, exit_stops, preload_calls;
};

/* ---- reporting ---- */

/* "cachet: hit gcc -c lvm.c", "cachet: miss gcc -c lvm.c (new step: ...)". */
static void report_verbose(struct run *r, const char *result, const char *name, const char *reason)
{
	struct buf b;
	buf_init(&b);
	if (!r->stderr_at_line_start)
		buf_addch(&b, '\n');
	if (reason)
		buf_addf(&b, "cachet: %s %s (%s)\n", strcmp(result, "hit") ? "miss" : "hit", name,
		         reason);
	else
		buf_addf(&b, "cachet: %s %s\n", result, name);
	write_all(2, b.data, b.len);
	buf_free(&b);
}

/* One JSON line; reason stays the short word that statistics count by,
 * detail (may be NULL) says what changed. */
/* 1 when the regular file at path (open as fd for appending) ends in a
 * line without its newline: a cachet killed while it wrote (the kernel
 * stops a write at a page boundary for SIGKILL) leaves part of a line,
 * which the next line must not extend. */
static int ends_cut(int fd, const char *path)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
		return 0;
	int rd = open(path, O_RDONLY | O_CLOEXEC);
	char last = '\n';
	if (rd >= 0) {
		if (pread(rd, &last, 1, st.st_size - 1) != 1)
			last = '\n';
		close(rd);
	}
	return last != '\n';
}

static void report_status_line(const struct run *r, const char *status_file, const char *result,
                               const char *reason, const char *detail, const char *name,
                               int64_t duration)
{
	struct buf b;
	buf_init(&b);
	buf_addstr(&b, "{\"result\": ");
	buf_add_json_string(&b, result, strlen(result));
	buf_addstr(&b, ", \"reason\": ");
	if (reason)
		buf_add_json_string(&b, reason, strlen(reason));
	else
		buf_addstr(&b, "null");
	buf_addf(&b, ", \"duration_ms\": %lld, \"step\": ", (long long)duration);
	buf_add_json_string(&b, name, strlen(name));
	if (detail) {
		buf_addstr(&b, ", \"detail\": ");
		buf_add_json_string(&b, detail, strlen(detail));
	}
	if (r->traced)
		buf_addf(&b, ", \"stops\": %zu, \"exit_stops\": %zu, \"preload_calls\": %zu",
		         r->stops, r->exit_stops, r->preload_calls);
	buf_addstr(&b, "}\n");
	/* O_APPEND and one write: lines of parallel steps stay whole. */
	int fd = open(status_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		/* After a cut line, a line of its own (a newline first). */
		if (ends_cut(fd, status_file))
			write_all(fd, "\n", 1);
		write_all(fd, b.data, b.len);
		close(fd);
	}
	buf_free(&b);
}

static void log_step(struct run *r, const char *result, const char *reason, int64_t duration)
{
	if (!r->store)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char *command = cli_command_line(r->argv);
	/* The step's, where it was keyed: this process's, not changed since. */
	char *cwd = r->step.cwd ? xstrdup(r->step.cwd) : getcwd(NULL, 0);
	struct store_log_entry en = {
	    .time_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
	    .result = (char *)result,
	    .reason = (char *)(reason ? reason : ""),
	    .duration_ms = duration,
	    .cwd = cwd ? cwd : (char *)"",
	    .command = command,
	};
	store_log_append(r->store, &en, cli_log_max_bytes());
	free(command);
	free(cwd);
}

static void report(struct run *r, const char *result, const char *reason)
{
	int64_t duration = now_ms() - r->start_ms;
	/* A new step says what set it apart from the last one of its
	 * identity, where one is known. */
	char *detail = NULL;
	if (r->new_step_detail_known) {
		detail = r->new_step_detail;
		r->new_step_detail = NULL;
	} else if (reason && !strcmp(reason, "new step") && r->store && r->step.argv) {
		detail = step_reason_detail(r->store, &r->step);
	}
	char *why = detail ? xasprintf("%s: %s", reason, detail) : NULL;
	log_step(r, result, why ? why : reason, duration);
	cli_stats_log_step(r->settings, result, reason, duration);
	const char *status_file = r->settings ? settings_str(r->settings, "status_file") : NULL;
	int status = status_file && *status_file;
	/* Named only for whoever reads the name (a tenth of a hit's report). */
	char *name =
	    r->verbose || status ? step_short_name(r->step.argv ? r->step.argv : r->argv) : NULL;
	if (r->verbose)
		report_verbose(r, result, name, why ? why : reason);
	if (status)
		report_status_line(r, status_file, result, reason, detail, name, duration);
	free(name);
	free(why);
	free(detail);
}

static void count(struct run *r, const char *name, int64_t delta)
{
	if (r->store)
		store_count(r->store, name, delta);
	cli_stats_log_note(name, delta);
}

static void count_error(struct run *r, const char *what, const struct error *e)
{
	/* A full disk or quota is for the user to fix, so it is said even
	 * without -v; once per run, whatever else fails after it. */
	static int told_full;
	count(r, "errors", 1);
	if (e->code == ENOSPC || e->code == EDQUOT) {
		count(r, "cache_full", 1);
		if (!told_full++)
			cli_warn("warning: %s: %s (the command ran; its result is not cached)",
			         what, e->msg);
	} else if (r->verbose) {
		cli_warn("%s: %s", what, e->msg);
	}
}

/* What tracing a run of the step cost, for its status line. */
static void count_trace_cost(struct run *r, const struct trace_result *tr)
{
	r->traced = 1;
	r->stops += tr->nstops;
	r->exit_stops += tr->nexit_stops;
	r->preload_calls += tr->nrecords;
}

/* ---- exit ---- */

static void finish(struct run *r)
{
	if (r->store) {
		store_close(r->store);
		r->store = NULL;
	}
}

/* Exits as the command did: with its code, or by its signal. */
static void exit_like(struct run *r, int status) __attribute__((noreturn));
static void exit_like(struct run *r, int status)
{
	finish(r);
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		signal(sig, SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		/* A signal whose default is not to die (SIGCHLD...) cannot kill
		 * us: fall back to the shell's convention. */
		_exit(128 + sig);
	}
	exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

/* ---- the hit path ---- */

/* The recorded stdout or stderr, read and checked (malloc'd; NULL when
 * empty). */
static int load_output(struct store *s, const struct blob_ref *ref, void **data, size_t *len,
                       struct error *e)
{
	*data = NULL;
	*len = 0;
	return ref->size ? store_blob_read(s, ref, data, len, e) : 0;
}

/* Serves a result the lookup found for the step (localised, every blob
 * present): restores its outputs into this checkout and replays its stdout
 * and stderr. LOOKUP_SERVED on a hit (with r->exit_code),
 * LOOKUP_NOT_SERVED when it cannot be served (counted), LOOKUP_STOP when
 * the hit is chosen for a verifying re-run (r->verify_cached then owns
 * res). */
static int serve(struct run *r, struct result *res, const struct digest *pathset,
                 const struct digest *strong, const char *reason)
{
	struct error e = {0};
	if (verify_chosen(r->verify_forced, settings_rate(r->settings, "verify_rate"))) {
		/* Sampled re-run: run the step for real and compare. */
		r->verify_cached = *res;
		r->verifying = 1;
		return LOOKUP_STOP;
	}
	if (r->lookup.nondeterministic)
		cli_warn("warning: this step was found to give different outputs on identical "
		         "runs (cachet show lists it); serving the cached result");
	/* stdout and stderr are read and checked before any output is
	 * written: found damaged after the restore, they would make a hit
	 * that prints nothing (and `gen > file.h` an empty header). */
	void *out_data = NULL, *err_data = NULL;
	size_t out_len, err_len;
	if (load_output(r->store, &res->out, &out_data, &out_len, &e) < 0 ||
	    load_output(r->store, &res->err, &err_data, &err_len, &e) < 0) {
		count_error(r, "cannot read the recorded output", &e);
		free(out_data);
		return 0;
	}
	/* In a cache others can write, the index and memos are another's word:
	 * outputs only beneath the step's roots, as for a remote entry. */
	const char *roots[3] = {r->step.cwd, r->step.bases.dir[STEP_BASE_DIR], NULL};
	int restored = cache_others_can_write(store_dir(r->store))
	                   ? result_restore_beneath(res, r->store, roots, &e)
	                   : result_restore_seen(res, r->store, &r->lookup.fps.dc, &e);
	if (restored < 0 && e.code == EPERM) {
		count(r, "restore_refused", 1);
		if (r->verbose)
			cli_warn("entry refused: %s", e.msg);
		free(out_data);
		free(err_data);
		return 0;
	}
	if (restored < 0) {
		count_error(r, "cannot restore outputs", &e);
		free(out_data);
		free(err_data);
		return 0;
	}
	report(r, "hit", reason);
	step_colour_replay(&r->step, res, out_data, out_len, err_data, err_len);
	free(out_data);
	free(err_data);
	store_touch_hit(r->store, &r->step.weak, pathset, strong);
	count(r, "hits", 1);
	int64_t saved = res->duration_ms - (now_ms() - r->start_ms);
	if (saved > 0)
		count(r, "time_saved_ms", saved);
	result_replay_stdin_advance(res);
	r->exit_code = res->exit_code;
	return LOOKUP_SERVED;
}

/* ---- the lookup's hands (lookup.h) ---- */

/* serve, for the lookup's tiers. */
static int serve_candidate(void *ctx, struct lookup_candidate *c)
{
	struct run *r = ctx;
	int memo = c->tier == LOOKUP_TIER_MEMO;
	if (memo) {
		/* A hit chosen for verification goes through the index, which
		 * verifies it (the choice is made once). */
		r->verify_forced =
		    r->verify_forced || verify_chosen(0, settings_rate(r->settings, "verify_rate"));
		if (r->verify_forced)
			return LOOKUP_PASS;
	}
	/* A duplicate's hit says so: served from another step's entry. */
	const char *reason = c->tier == LOOKUP_TIER_DUPLICATE ? "duplicate"
	                     : c->tier == LOOKUP_TIER_PREPROCESSED_DUPLICATE
	                         ? "preprocessed duplicate"
	                         : NULL;
	return serve(r, c->result, c->pathset, &c->strong, reason);
}

static void lookup_count(void *ctx, const char *name, int64_t delta)
{
	count(ctx, name, delta);
}

static void lookup_fault(void *ctx, const char *what, const struct error *e)
{
	count_error(ctx, what, e);
}

static void lookup_note(void *ctx, const char *what, const struct error *e)
{
	struct run *r = ctx;
	if (r->verbose)
		cli_warn("%s: %s", what, e->msg);
}

static int lookup_init_step(void *ctx, struct step *step, struct digest_cache *dc, struct error *e)
{
	struct run *r = ctx;
	return cli_step_init(step, r->argv, r->program, dc, e);
}

/* After a local miss: the remote caches (restored inside the output roots
 * only, and stored locally). */
static int lookup_remote(void *ctx)
{
	struct run *r = ctx;
	inherited_snapshot();
	return remote_tier_lookup(r->store, &r->step, &r->lookup.fps.dc, &r->exit_code)
	           ? LOOKUP_SERVED
	           : 0;
}

/* 1 when the run changed a path, or read the stdin it was given: no
 * preprocessor run (preprocessed_duplicate.h) may. */
static int preprocessor_run_acted(const struct trace_result *tr)
{
	for (size_t i = 0; i < tr->nevents; i++) {
		const struct trace_event *ev = &tr->events[i];
		if (ev->kind == TRACE_TOUCH || ev->kind == TRACE_MOVED_IN ||
		    ev->kind == TRACE_SET_MTIME || ev->kind == TRACE_FINAL ||
		    (ev->kind == TRACE_FACT && !strcmp(ev->path, TRACE_FACT_STDIN)))
			return 1;
	}
	return 0;
}

/* Reads what a memory file holds into out. */
static int read_memfd(int fd, struct buf *out)
{
	off_t size = lseek(fd, 0, SEEK_END);
	if (size < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return -1;
	buf_grow(out, (size_t)size);
	if (read_full(fd, out->data + out->len, (size_t)size) != size)
		return -1;
	out->len += (size_t)size;
	return 0;
}

/* The preprocessor runs of preprocessed duplicates (lookup.h), as a miss
 * runs its step: traced, in the step's environment with a private TMPDIR,
 * the same roots ignored; stdin /dev/null, stdout and stderr into memory
 * files, never where the step writes. */
static int lookup_preprocess(void *ctx, char *const *argv, int want_record,
                             struct lookup_preprocessed *out)
{
	struct run *r = ctx;
	inherited_snapshot();
	struct step_tmpdir tmp;
	if (step_tmpdir_create(&tmp) < 0)
		return -1;
	char **env = step_environment(tmp.path);
	char **ignore = step_ignore_roots(r->settings, tmp.path, r->cache_dir);
	int out_fd = memfd_create("cachet-preprocessed", MFD_CLOEXEC);
	int err_fd = memfd_create("cachet-preprocessor-stderr", MFD_CLOEXEC);
	int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct trace_spec spec = {
	    .file = r->program,
	    .argv = argv,
	    .envp = env,
	    .stdin_fd = null_fd,
	    .stdout_fd = out_fd,
	    .stderr_fd = err_fd,
	    .ignore_roots = (const char *const *)ignore,
	    .stdin_is_stream = 1,
	};
	struct trace_result tr;
	memset(&tr, 0, sizeof tr);
	struct error e = {0};
	int rc = -1;
	if (out_fd >= 0 && err_fd >= 0 && null_fd >= 0 && trace_run(&spec, &tr, &e) == 0) {
		rc = 0;
		count_trace_cost(r, &tr);
		out->ok = !tr.exec_errno && !tr.uncacheable && WIFEXITED(tr.status) &&
		          WEXITSTATUS(tr.status) == 0 && !preprocessor_run_acted(&tr) &&
		          read_memfd(out_fd, &out->out) == 0 && read_memfd(err_fd, &out->err) == 0;
		if (out->ok && want_record) {
			struct record *rec = xcalloc(1, sizeof *rec);
			struct record_env renv = {.effect_env = r->step.effect_env,
			                          .cwd = r->step.cwd};
			if (record_run_scanning(tr.events, tr.nevents, (const char *const *)ignore,
			                        &r->step.bases, &renv, NULL, &r->lookup.fps.dc, rec,
			                        &e) < 0) {
				record_free(rec);
				free(rec);
				out->ok = 0;
			} else {
				if (rec->not_storable || portable_record(rec, &r->step.bases) < 0) {
					record_free(rec);
					free(rec);
					out->ok = 0;
				} else {
					out->rec = rec;
				}
			}
		}
		trace_result_free(&tr);
	}
	if (out_fd >= 0)
		close(out_fd);
	if (err_fd >= 0)
		close(err_fd);
	if (null_fd >= 0)
		close(null_fd);
	strv_free(env);
	strv_free(ignore);
	step_tmpdir_remove(&tmp);
	return rc;
}

static void lookup_prepare(struct run *r)
{
	struct step_lookup *sl = &r->lookup;
	sl->store = r->store;
	sl->argv = r->argv;
	sl->program = r->program;
	sl->step = &r->step;
	sl->recache = r->recache;
	sl->rerun_nondeterministic =
	    !strcmp(settings_str(r->settings, "nondeterministic"), "rerun");
	cli_digest_cache(r->store, &sl->index_dc);
	sl->init_step = lookup_init_step;
	sl->serve = serve_candidate;
	sl->count = lookup_count;
	sl->fault = lookup_fault;
	sl->note = lookup_note;
	sl->remote = lookup_remote;
	sl->preprocess = lookup_preprocess;
	sl->ctx = r;
	lookup_step_init(sl);
}

/* ---- the miss path ---- */

/* Stores the recorded run (lookup_store_run): its entry and the step's
 * memo; a new step's (reason) with its identity, which names it from now
 * on, in the entry's transaction. */
static int store_result(struct run *r, struct record *rec, struct tee *t, int exit_code,
                        int64_t duration, const char *reason, struct error *e)
{
	int new_step = reason && !strcmp(reason, "new step");
	if (new_step) {
		/* What report says: against the step named before this one. */
		r->new_step_detail = step_reason_detail(r->store, &r->step);
		r->new_step_detail_known = 1;
	}
	struct lookup_run_end end = {
	    .out = t->out.data,
	    .out_len = t->out.len,
	    .err = t->err.data,
	    .err_len = t->err.len,
	    .exit_code = exit_code,
	    .stdin_advance = r->stdin_advance,
	    .duration_ms = duration,
	    /* A recache may be a step's first run, and is its latest: named
	     * as a new step is, without the detail no one asked for. */
	    .name_step = new_step || r->recache,
	};
	/* The order of the two streams travels in the result (tee.c). */
	tee_take_order(t, &rec->result);
	return lookup_store_run(&r->lookup, rec, &end, e);
}

/* Turns the run into the form it is stored in, locally and on remotes
 * (portable.h): after the checks and the verification, which work on its
 * real paths. A run whose outputs, stdout or stderr hold a base's real path
 * is pinned to it. -1 when it cannot be stored under the bases. */
static int stored_form(struct run *r, struct record *rec, const struct tee *t)
{
	record_scan_stream(rec, "stdout", t->out.data, t->out.len, &r->step.bases);
	record_scan_stream(rec, "stderr", t->err.data, t->err.len, &r->step.bases);
	return portable_record(rec, &r->step.bases);
}

/* Runs the command without the tracer (tracing not permitted here), still
 * streaming its output. Returns its wait status. */
static int run_untraced(struct run *r, char **argv, char **env, struct tee *t, int *exec_errno)
{
	return spawn_wait(r->program, argv, env, t->out_write, t->err_write, exec_errno);
}

/* --check and --require-symbols, with the outputs in place. 0 when the
 * run may be stored; else the wait status cachet exits with. */
static int checks_refuse(struct run *r, const struct record *rec)
{
	if (r->check_cmd) {
		int st = run_check_command(r->check_cmd);
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			cli_error("check failed (%s): %s; the result is not stored",
			          st != -1 && WIFEXITED(st) ? "exit status" : "killed",
			          r->check_cmd);
			return st == -1 ? 1 << 8 : st;
		}
	}
	if (r->require_symbols) {
		char *missing = NULL;
		int rc = check_required_symbols(r->require_symbols, &rec->result, &missing);
		if (rc != 0) {
			if (rc < 0)
				cli_error("--require-symbols: %s", missing);
			else
				cli_error("required symbols missing from the outputs: %s; the "
				          "result is not "
				          "stored",
				          missing);
			free(missing);
			return 1 << 8;
		}
	}
	return 0;
}

/* A sampled re-run of a hit: compare with the cached result; on a
 * mismatch warn, count, and mark the step. The fresh outputs stay. */
static const char *verify(struct run *r, struct record *rec, struct tee *t, int exit_code)
{
	char *summary = NULL;
	struct error e = {0};
	if (verify_compare(r->store, &r->verify_cached, &rec->result, &t->out, exit_code,
	                   &summary)) {
		count(r, "verified", 1);
		return "verified: same outputs";
	}
	cli_warn("warning: nondeterministic step: a re-run differs from the cached result: %s",
	         summary);
	count(r, "nondeterministic", 1);
	if (store_mark_nondeterministic(r->store, &r->step.weak, summary, &e) < 0)
		count_error(r, "cannot mark the step nondeterministic", &e);
	free(summary);
	return "verified: nondeterministic";
}

static char **ignore_roots(const struct run *r)
{
	return step_ignore_roots(r->settings, r->tmp.path, r->cache_dir);
}

/* Counts an uncacheable step, in all and under its reason. */
static void count_uncacheable(struct run *r, const char *reason)
{
	char *name = xasprintf("uncacheable: %s", reason);
	count(r, "uncacheable", 1);
	count(r, name, 1);
	free(name);
}

static void remove_tmpdir(void *tmp)
{
	step_tmpdir_remove(tmp);
}

static void prepare_entry_statements(void *run)
{
	struct run *r = run;
	store_prepare_entry_statements(r->store, r->entry_rows);
}

/* Whether the step about to run is stored if it succeeds: a verifying
 * re-run is compared, a nondeterministic step re-run is not stored, and
 * statements prepared for them would be CPU spent for nothing. */
static int miss_stores(const struct run *r)
{
	return !r->verifying && !(r->lookup.nondeterministic && r->lookup.rerun_nondeterministic);
}

/* What the entry of the step about to run (the miss of reason) will
 * probably write: store_prepare_entry_statements prepares only that. */
static unsigned entry_rows(const struct run *r, const char *reason)
{
	unsigned what = 0;
	/* duplicate_note's first test: the program must be a compiler. */
	if (r->step.exe && output_program_name_blind(r->step.exe))
		what |= STORE_ENTRY_DUPLICATE;
	if (r->recache)
		what |= STORE_ENTRY_AGAIN;
	else if (reason && !strcmp(reason, "new step"))
		what |= STORE_ENTRY_NEW_STEP;
	return what;
}

static void miss(struct run *r, const char *reason) __attribute__((noreturn));
static void miss(struct run *r, const char *reason)
{
	inherited_snapshot();
	struct error e = {0};
	if (step_tmpdir_create(&r->tmp) < 0) {
		cli_warn("cannot create a private TMPDIR, running without the cache: %s",
		         strerror(errno));
		finish(r);
		run_direct(r->argv, r->program);
	}
	char **env = step_environment(r->tmp.path);
	struct tee t;
	if (tee_open(&t) < 0 || tee_use_terminals(&t, r->step.terminal) < 0 || tee_start(&t) < 0) {
		cli_warn("cannot create pipes, running without the cache: %s", strerror(errno));
		step_tmpdir_remove(&r->tmp);
		finish(r);
		run_direct(r->argv, r->program);
	}
	if (r->step.colour)
		tee_filter_stderr(&t, step_colour_keep(&r->step));
	char **exec_argv = step_colour_argv(&r->step, r->argv);

	char **ignore = ignore_roots(r);
	struct trace_spec spec = {
	    .file = r->program,
	    .argv = exec_argv,
	    .envp = env,
	    .stdin_fd = 0,
	    .stdout_fd = t.out_write,
	    .stderr_fd = t.err_write,
	    .ignore_roots = (const char *const *)ignore,
	    .stdin_is_stream = r->step.stdin_kind != STEP_STDIN_FILE,
	    .on_stream_write = tee_sync,
	    .on_stream_write_ctx = &t,
	};
	inherited_for_step(env, &spec);
	/* The step's big inputs are hashed while it runs, on another CPU. */
	struct prefetch *pf = prefetch_new(&r->lookup.fps.dc);
	/* The worker holds the store while the step runs (its digest cache
	 * is the index's): the statements the entry will run are prepared
	 * there, not after the step. */
	if (miss_stores(r)) {
		r->entry_rows = entry_rows(r, reason);
		prefetch_when_idle(pf, prepare_entry_statements, r);
	}
	if (pf) {
		spec.on_input = prefetch_add;
		spec.on_input_ctx = pf;
		spec.on_input_min_size = PREFETCH_MIN_SIZE;
	}
	struct trace_result tr;
	memset(&tr, 0, sizeof tr);
	off_t stdin_start = r->step.stdin_kind == STEP_STDIN_FILE ? lseek(0, 0, SEEK_CUR) : -1;
	int traced = trace_run(&spec, &tr, &e) == 0;
	if (stdin_start >= 0) {
		off_t stdin_end = lseek(0, 0, SEEK_CUR);
		if (stdin_end >= 0)
			r->stdin_advance = (int64_t)(stdin_end - stdin_start);
	}
	int status, exec_errno = 0;
	if (traced) {
		status = tr.status;
		exec_errno = tr.exec_errno;
		count_trace_cost(r, &tr);
	} else {
		cli_warn("cannot trace (%s): running uncached", e.msg);
		count(r, "errors", 1);
		status = run_untraced(r, exec_argv, env, &t, &exec_errno);
	}
	int succeeded = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	/* Only a run that will be recorded needs the rest of the queue. The
	 * prefetcher's worker and the tee's thread end together: woken one
	 * after the other and each waited for, they took ~0.2 ms each. */
	int keep_prefetched = traced && !tr.uncacheable && exec_errno == 0 && succeeded;
	prefetch_close(pf, keep_prefetched);
	step_colour_argv_free(exec_argv, r->argv);
	tee_close_writers(&t);
	tee_finish(&t);
	prefetch_finish(pf, keep_prefetched);
	r->stderr_at_line_start = t.err_ends_in_newline;
	int64_t duration = now_ms() - r->start_ms;

	if (exec_errno) {
		cli_error("%s: %s", r->argv[0], strerror(exec_errno));
		step_tmpdir_remove(&r->tmp);
		finish(r);
		exit(exec_errno == ENOENT ? 127 : 126);
	}
	/* Removing what the step left in its TMPDIR goes on beside the
	 * record, which ignores what is under it; a step that left nothing
	 * (a pooled directory, step_env.h) is not worth a thread. */
	struct side_job tmp_removal = {0};
	if (!step_tmpdir_release_if_empty(&r->tmp))
		side_job_start(&tmp_removal, remove_tmpdir, &r->tmp);

	const char *result = "miss";
	int failed = 0;
	if (!traced) {
		result = "uncacheable";
		reason = "tracing not permitted";
	} else if (tr.uncacheable) {
		result = "uncacheable";
		reason = tr.uncacheable;
	} else if (!succeeded) {
		reason = "command failed (not stored)";
		failed = 1;
	}

	if (failed) {
		count(r, "misses", 1);
		count(r, "miss: command failed", 1);
	} else if (!traced || tr.uncacheable) {
		count_uncacheable(r, reason);
	} else {
		struct record rec;
		int check_status = 0;
		struct record_env renv = {.effect_env = r->step.effect_env,
		                          .cwd = r->step.cwd,
		                          .scan = 1,
		                          .out = t.out.data,
		                          .out_len = t.out.len,
		                          .err = t.err.data,
		                          .err_len = t.err.len,
		                          .memo_dirs = !r->lookup.nondeterministic &&
		                                       !store_is_readonly(r->store)};
		if (record_run_scanning(tr.events, tr.nevents, (const char *const *)ignore,
		                        &r->step.bases, &renv, r->store, &r->lookup.fps.dc, &rec,
		                        &e) < 0) {
			count_error(r, "cannot store the outputs", &e);
		} else if (rec.not_storable) {
			reason = rec.not_storable;
		} else if ((check_status = checks_refuse(r, &rec)) != 0) {
			reason = "check failed (not stored)";
		} else if (r->verifying) {
			result = "hit";
			reason = verify(r, &rec, &t, WEXITSTATUS(status));
		} else if (r->lookup.nondeterministic && r->lookup.rerun_nondeterministic) {
			reason = "nondeterministic step (not stored)";
		} else if (stored_form(r, &rec, &t) < 0) {
			reason = "names " STEP_PORTABLE_PREFIX
			         ", which base_dir keys reserve (not stored)";
		} else if (store_result(r, &rec, &t, WEXITSTATUS(status), duration, reason, &e) <
		           0) {
			count_error(r, "cannot store the result", &e);
		} else {
			/* Queued for the background drainer: never waits. */
			remote_tier_upload(r->store, &r->step, &rec);
			/* Rarely does any work: see gc.h. */
			cli_evict_after_store(r->store, &rec.result);
		}
		record_free(&rec);
		if (check_status) {
			count(r, "misses", 1);
			count(r, "miss: check failed", 1);
			report(r, result, reason);
			trace_result_free(&tr);
			tee_free(&t);
			strv_free(env);
			strv_free(ignore);
			side_job_wait(&tmp_removal);
			exit_like(r, check_status);
		}
		if (!r->verifying) {
			char *name = xasprintf("miss: %s", reason);
			count(r, "misses", 1);
			count(r, name, 1);
			free(name);
		}
	}
	report(r, result, reason);
	trace_result_free(&tr);
	tee_free(&t);
	strv_free(env);
	strv_free(ignore);
	side_job_wait(&tmp_removal);
	exit_like(r, status == -1 ? 1 << 8 : status);
}

/* ---- entry ---- */

/* A command the user listed in uncacheable_commands (shell patterns,
 * matched against the program's name and its full path). */
static int uncacheable_command(const struct run *r)
{
	char **patterns = settings_list(r->settings, "uncacheable_commands");
	int match = 0;
	for (char **p = patterns; *p && !match; p++)
		match = fnmatch(*p, path_basename(r->program), 0) == 0 ||
		        fnmatch(*p, r->program, 0) == 0 || fnmatch(*p, r->argv[0], 0) == 0;
	settings_list_free(patterns);
	return match;
}

/* A command that would trace processes itself cannot run under cachet's
 * tracer: a process has one tracer, and a child cachet does not trace
 * (CLONE_UNTRACED) still carries its seccomp filter, whose traced calls then
 * fail with ENOSYS. Recognised before it starts, such a command runs
 * directly, uncached; deeper in a step's process tree it cannot be
 * (README, "Limitations"). Returns the reason, or NULL. */
static const char *needs_own_tracing(const struct run *r)
{
	static const char *const tracers[] = {"strace", "ltrace", "gdb",         "gdbserver",
	                                      "rr",     "lldb",   "lldb-server", NULL};
	const char *name = path_basename(r->program);
	for (const char *const *t = tracers; *t; t++)
		if (!strcmp(name, *t))
			return "ptrace by the step";
	/* Under ptrace (and no_new_privs) exec does not raise privileges. The
	 * PATH search's stat of the program, moments ago, is as good as a
	 * second one: the exec comes later than either, and a hit's path set
	 * holds the program's mode bits (its EXEC value) as of the lookup. */
	if (r->program_st.st_mode & (S_ISUID | S_ISGID))
		return "setuid executable";
	return NULL;
}

/* LeakSanitizer (on by default with ASan) ptraces its threads at exit. Asked
 * only of a step about to run: it reads the program's ELF, which a hit need
 * not do (the step runs nothing, and one that needs this was never stored;
 * the environment, ASAN_OPTIONS too, is keyed). */
static const char *runs_leak_sanitizer(const struct run *r)
{
	const char *asan = getenv("ASAN_OPTIONS");
	int leaks_off =
	    asan && (strstr(asan, "detect_leaks=0") || strstr(asan, "detect_leaks=false"));
	if (!leaks_off && elf_uses_leak_sanitizer(r->program))
		return "ptrace by the step (LeakSanitizer)";
	return NULL;
}

/* Runs the step directly, counted and logged as uncacheable for reason. */
static void run_uncacheable(struct run *r, const char *reason) __attribute__((noreturn));
static void run_uncacheable(struct run *r, const char *reason)
{
	count_uncacheable(r, reason);
	report(r, "uncacheable", reason);
	finish(r);
	run_direct(r->argv, r->program);
}

enum { OPT_VERBOSE = 1, OPT_VERIFY, OPT_CHECK, OPT_REQUIRE_SYMBOLS };

static const struct cli_option run_options[] = {
    {OPT_VERBOSE, 'v', "verbose", NULL,
     "print 'cachet: hit STEP' or 'cachet: miss STEP (reason)' to stderr"},
    {OPT_VERIFY, 0, "verify", NULL,
     "on a hit, run the step anyway and compare its outputs with the\n"
     "cached ones (verify_rate does this for a fraction of hits); a\n"
     "difference warns, is counted and marks the step nondeterministic"},
    {OPT_CHECK, 0, "check", "CMD",
     "after a miss, with the outputs in place, run CMD with /bin/sh;\n"
     "if it fails nothing is stored and cachet exits with its status"},
    {OPT_REQUIRE_SYMBOLS, 0, "require-symbols", "FILE",
     "every name in FILE (one per line) must be defined (GLOBAL or\n"
     "WEAK) by the ELF outputs; otherwise nothing is stored, the\n"
     "missing names are listed and cachet exits 1"},
    {0},
};

const struct cli_command cli_cmd_run = {
    .name = "run",
    .operands = "[--] COMMAND [ARG...]",
    .options = run_options,
    .flags = CLI_STOP_AT_OPERAND,
    .more_usage = "cachet [OPTIONS] COMMAND [ARG...]",
    .description =
        "Looks the step up by its argv, cwd, keyed environment, platform and the\n"
        "executable's digest, then by every file-system fact a recorded run relied on.\n"
        "On a hit the outputs, stdout, stderr and exit status are replayed. On a miss\n"
        "the command runs traced, streaming its output, and a successful run is stored.\n"
        "\n",
    .epilogue = "\n"
                "Exit status: the command's (a command killed by a signal kills cachet with the\n"
                "same signal); 127 when COMMAND is not found, 126 when it is not executable,\n"
                "2 for usage errors.\n",
};

static int run_main(int argc, char **argv, int masquerade);

/* The remote tier loads plugins: the statically linked cachet runs the
 * step through its dynamic twin (cli.h), with the options given, the
 * step's argv as resolved here (a masquerading name already replaced by
 * the compiler's path), and nothing else changed. Where the twin cannot
 * run, the step runs uncached, as with any unusable cache. */
static void hand_over(struct run *r, int verbose_option)
{
	size_t n = 0;
	while (r->argv[n])
		n++;
	char **v = xmalloc((n + 10) * sizeof *v);
	size_t k = 0;
	v[k++] = "cachet";
	v[k++] = "run";
	if (verbose_option)
		v[k++] = "--verbose";
	if (r->verify_forced)
		v[k++] = "--verify";
	if (r->check_cmd) {
		v[k++] = "--check";
		v[k++] = (char *)r->check_cmd;
	}
	if (r->require_symbols) {
		v[k++] = "--require-symbols";
		v[k++] = (char *)r->require_symbols;
	}
	v[k++] = "--";
	for (size_t i = 0; i <= n; i++)
		v[k++] = r->argv[i];
	struct error e = {0};
	cli_exec_dynamic(v, &e);
	cli_warn("running without the cache: %s", e.msg);
	free(v);
	run_direct(r->argv, r->program);
}

/* The file this process runs, to be skipped on PATH (a masquerading
 * symlink named like the compiler leads to it): by the name it was
 * executed by (AT_EXECFN), which leads to it through the file system as
 * such a symlink does, even after an upgrade replaced it. A readlink of
 * /proc/self/exe costs a process 10 us; it stays for a name that leads
 * nowhere now (a relative one is relative to this cwd, not changed since). */
static char *self_by_exec_name(void)
{
	const char *name = (const char *)getauxval(AT_EXECFN);
	struct stat st;
	/* fexecve's name is /dev/fd/N (or /proc/self/fd/N), a descriptor
	 * closed at the exec or since reused for another file. */
	if (name && *name && strncmp(name, "/dev/fd/", 8) != 0 && strncmp(name, "/proc/", 6) != 0 &&
	    stat(name, &st) == 0 && S_ISREG(st.st_mode))
		return xstrdup(name);
	return cli_self_exe();
}

int cmd_run(int argc, char **argv)
{
	return run_main(argc, argv, 0);
}

int cmd_run_masquerade(int argc, char **argv)
{
	return run_main(argc, argv, 1);
}

static int run_main(int argc, char **argv, int masquerade)
{
	struct run r;
	memset(&r, 0, sizeof r);
	r.start_ms = now_ms();
	r.stderr_at_line_start = 1;
	/* A bad configuration must not break the build: say so, run uncached. */
	r.settings = cli_settings();
	if (!r.settings)
		cli_warn("configuration error, running without the cache: %s",
		         cli_settings_error());
	r.verbose = r.settings && settings_bool(r.settings, "verbose");
	r.recache = r.settings && settings_bool(r.settings, "recache");
	struct cli_args args;
	cli_args_init(&args, &cli_cmd_run, argc, argv);
	int verbose_option = 0; /* for a hand-over to the dynamic twin */
	for (int id; (id = cli_args_next(&args)) != CLI_ARG_END;) {
		if (id == CLI_ARG_EXIT)
			return args.exit;
		if (id == OPT_VERBOSE)
			r.verbose = verbose_option = 1;
		else if (id == OPT_VERIFY)
			r.verify_forced = 1;
		else if (id == OPT_CHECK)
			r.check_cmd = args.value;
		else
			r.require_symbols = args.value;
	}
	int i = args.next;
	if (i >= argc) {
		cli_error("run: no command given (see cachet run --help)");
		return EXIT_USAGE;
	}
	r.argv = argv + i;

	char *self = self_by_exec_name();
	r.program = step_find_program_stat(r.argv[0], self, &r.program_st);
	free(self);
	if (!r.program) {
		int err = errno;
		cli_error("%s: %s", r.argv[0], err == ENOENT ? "command not found" : strerror(err));
		return err == ENOENT ? 127 : 126;
	}
	/* Through a symlink named gcc, the compiler would look for itself on
	 * PATH to find its installation and find cachet: give it its own path,
	 * as ccache does. */
	if (masquerade)
		r.argv[0] = r.program;

	if (!r.settings || settings_bool(r.settings, "disable"))
		run_direct(r.argv, r.program);
	if (cli_static_exe() && remote_tier_configured(r.settings))
		hand_over(&r, verbose_option);
	/* Under an outer cachet (or any tracer): a hit here would hide the
	 * step's reads from the outer trace, and a nested trace cannot work. */
	if (trace_self_is_traced())
		run_direct(r.argv, r.program);

	r.cache_dir = cli_cache_dir();
	/* The index is opened only when the step's memo cannot answer. */
	r.store = cli_open_store(STORE_DEFER_INDEX, "running without it");
	if (!r.store)
		run_direct(r.argv, r.program);

	struct error e = {0};
	if (uncacheable_command(&r))
		run_uncacheable(&r, "uncacheable_commands");
	const char *own = needs_own_tracing(&r);
	if (own)
		run_uncacheable(&r, own);
	lookup_prepare(&r);
	switch (lookup_step(&r.lookup, &e)) {
	case LOOKUP_STEP_HIT:
		if (r.lookup.tier == LOOKUP_TIER_REMOTE)
			report(&r, "hit", "remote");
		finish(&r);
		exit(r.exit_code);
	case LOOKUP_STEP_NO_INDEX:
		cli_warn("cache unusable, running without it: %s", e.msg);
		finish(&r);
		run_direct(r.argv, r.program);
	case LOOKUP_STEP_NO_KEY:
		cli_warn("running without the cache: %s", e.msg);
		count(&r, "errors", 1);
		finish(&r);
		run_direct(r.argv, r.program);
	case LOOKUP_STEP_MISS:
	case LOOKUP_STEP_RERUN: /* serve chose it: r.verifying */
		break;
	}
	own = runs_leak_sanitizer(&r);
	if (own)
		run_uncacheable(&r, own);
	if (store_is_readonly(r.store)) {
		/* read_only = true is a choice; a cache directory that cannot be
		 * written (a read-only mount) deserves a word. */
		if (!settings_bool(r.settings, "read_only"))
			cli_warn("warning: cache directory %s is not writable: its hits are used, "
			         "nothing is stored",
			         store_dir(r.store));
		report(&r, "miss", r.lookup.miss_reason);
		finish(&r);
		run_direct(r.argv, r.program);
	}
	miss(&r, r.lookup.miss_reason);
}
