#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cachet/buf.h"
#include "cachet/diag_colour.h"
#include "cachet/path.h"
#include "cachet/portable.h"
#include "cachet/portable_record.h"
#include "cachet/redact.h"
#include "cachet/result.h"
#include "cachet/step.h"
#include "cli/hermetic_env.h"
#include "cli/settings.h"
#include <sys/stat.h>

int env_flag(const char *name)
{
	const char *v = getenv(name);
	return v && *v && strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0 &&
	       strcasecmp(v, "no") != 0;
}

static struct settings loaded_settings;
static int settings_state; /* 0 not loaded, 1 loaded, -1 failed */
static struct error settings_error;

const struct settings *cli_settings(void)
{
	if (!settings_state)
		settings_state = settings_load(&loaded_settings, &settings_error) == 0 ? 1 : -1;
	return settings_state == 1 ? &loaded_settings : NULL;
}

const char *cli_settings_error(void)
{
	return settings_state == -1 ? settings_error.msg : NULL;
}

static struct {
	int state; /* 0 not computed, 1 ready, -1 failed */
	struct step_bases bases;
	char *base_dir; /* canonical; owned here for the process's life */
	char *cwd;      /* the cwd base, when under base_dir; owned likewise */
	struct error error;
} process_bases;

const struct step_bases *cli_bases(struct error *e)
{
	if (!process_bases.state) {
		const struct settings *st = cli_settings();
		/* The hermetic mode's HOME is a base: prepare it first. */
		hermetic_env_prepare(st);
		const char *dir = st ? settings_str(st, "base_dir") : NULL;
		struct error *why = &process_bases.error;
		process_bases.state = 1;
		if (dir && !(process_bases.base_dir = portable_base(dir, "base_dir", why)))
			process_bases.state = -1;
		process_bases.bases.dir[STEP_BASE_DIR] = process_bases.base_dir;
		process_bases.bases.dir[STEP_BASE_HOME] = hermetic_env_home();
		/* ccache's base_dir, a parent of checkouts: paths under it are
		 * keyed relative to the cwd (portable.h). */
		if (process_bases.base_dir && (process_bases.cwd = getcwd(NULL, 0)) &&
		    !portable_cwd_base(&process_bases.bases, process_bases.cwd)) {
			free(process_bases.cwd);
			process_bases.cwd = NULL;
		}
		process_bases.bases.dir[STEP_BASE_CWD] = process_bases.cwd;
	}
	if (process_bases.state < 0) {
		if (e)
			*e = process_bases.error;
		return NULL;
	}
	return &process_bases.bases;
}

int cli_step_init(struct step *step, char *const *argv, const char *program,
                  struct digest_cache *dc, struct error *e)
{
	extern char **environ;
	const struct settings *st = cli_settings();
	/* hermetic_env: the step runs with, and is keyed by, only those
	 * variables; explain and repro must see the same environment. */
	hermetic_env_prepare(st);
	const struct step_bases *b = cli_bases(e);
	if (!b)
		return -1;
	char **ignore = st ? settings_list(st, "env_ignore") : NULL;
	char **per_run = st ? settings_list(st, "env_per_run") : NULL;
	/* A compiler cachet colours for does not key the terminal. */
	struct step_show show = {.colour = diag_colour_family(argv, program)};
	if (show.colour == DIAG_COLOUR_NONE) {
		show.terminal = cli_step_terminal();
		show.term = getenv("TERM");
	}
	int rc = step_init_shown(step, argv, program, environ, (const char *const *)ignore,
	                         (const char *const *)per_run,
	                         st ? settings_str(st, "namespace") : NULL, b, dc, &show, e);
	settings_list_free(ignore);
	settings_list_free(per_run);
	return rc;
}

unsigned cli_step_terminal(void)
{
	const struct settings *st = cli_settings();
	const char *color = st ? settings_str(st, "color") : NULL;
	if (color && !strcmp(color, "never"))
		return 0;
	if (color && !strcmp(color, "always"))
		return STEP_TTY_STDOUT | STEP_TTY_STDERR;
	unsigned t = 0;
	if (isatty(1))
		t |= STEP_TTY_STDOUT;
	if (isatty(2))
		t |= STEP_TTY_STDERR;
	return t;
}

char *cli_cache_dir(void)
{
	const struct settings *st = cli_settings();
	if (st && settings_str(st, "dir"))
		return xstrdup(settings_str(st, "dir"));
	/* A bad configuration still names the cache through CACHET_DIR. */
	const char *dir = getenv("CACHET_DIR");
	return dir && *dir ? xstrdup(dir) : settings_default_dir();
}

struct store *cli_open_store(unsigned flags, const char *consequence)
{
	const struct settings *st = cli_settings();
	if (!st) {
		cli_warn("configuration error%s%s: %s", consequence ? ", " : "",
		         consequence ? consequence : "", cli_settings_error());
		return NULL;
	}
	if (settings_bool(st, "read_only"))
		flags |= STORE_READONLY;
	/* The umask setting is for the cache's files only: the step keeps the
	 * caller's umask (it is keyed, and decides its outputs' modes). */
	int mask = settings_umask(st, "umask");
	if (mask >= 0)
		flags |= STORE_UMASK(mask);
	char *dir = cli_cache_dir();
	struct store *s = NULL;
	struct error e = {0};
	if (store_open(dir, flags, &s, &e) < 0) {
		cli_warn("cache unusable%s%s: %s", consequence ? ", " : "",
		         consequence ? consequence : "", e.msg);
		s = NULL;
	}
	if (s)
		store_set_compression_level(s, (int)settings_int(st, "compression_level"));
	free(dir);
	return s;
}

static int dc_get(void *ctx, const char *path, const struct file_id *id, struct digest *out)
{
	return store_fp_get(ctx, path, id, out) == 1;
}

static void dc_put(void *ctx, const char *path, const struct file_id *id, const struct digest *d)
{
	store_fp_put(ctx, path, id, d);
}

/* How many results that reference a content are searched for one that
 * restores it at a path. */
#define HELD_SEARCH_LIMIT 64

/* digest_cache.held over the index: a result that restores d at path. The
 * question is asked of a present file at a path a step creates, once per
 * path set of the step's weak key: the last answer is kept. */
static int dc_held(void *ctx, const char *path, const struct digest *d)
{
	static struct {
		struct store *s;
		char *path;
		struct digest d;
		int held;
	} last;
	struct store *s = ctx;
	if (last.s == s && last.path && !strcmp(last.path, path) && digest_equal(&last.d, d))
		return last.held;
	struct store_result_row *rows = NULL;
	size_t n = 0;
	struct error e = {0};
	const char *base = path_basename(path);
	int held = 0;
	if (store_results_with_blob_naming(s, d, base, strlen(base), HELD_SEARCH_LIMIT, &rows, &n,
	                                   &e) < 0)
		return 0;
	const struct step_bases *bases = cli_bases(NULL);
	/* Outputs are kept at their physical paths; the probe may have used
	 * another spelling (`..` after a chdir, a symlinked directory). */
	char *dir = path_dirname(path);
	char *real_dir = realpath(dir, NULL);
	char *real = real_dir ? path_join(real_dir, base) : xstrdup(path);
	free(dir);
	free(real_dir);
	for (size_t i = 0; i < n && !held; i++) {
		struct result res;
		if (result_decode(rows[i].body, rows[i].len, &res, &e) < 0)
			continue;
		if (!bases || portable_localise_result(&res, bases) == 0)
			for (size_t k = 0; k < res.noutputs && !held; k++)
				held = res.outputs[k].kind == OUT_FILE &&
				       (!strcmp(res.outputs[k].path, path) ||
				        !strcmp(res.outputs[k].path, real)) &&
				       digest_equal(&res.outputs[k].blob.digest, d);
		result_free(&res);
	}
	store_result_rows_free(rows, n);
	free(real);
	free(last.path);
	last.s = s;
	last.path = xstrdup(path);
	last.d = *d;
	last.held = held;
	return held;
}

void cli_digest_cache(struct store *s, struct digest_cache *dc)
{
	*dc = (struct digest_cache){.get = dc_get, .put = dc_put, .ctx = s, .held = dc_held};
}

char *cli_self_exe(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return xstrdup(buf);
}

int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int run_direct(char **argv, const char *program)
{
	execv(program, argv);
	int err = errno;
	cli_error("%s: %s", argv[0], strerror(err));
	exit(err == ENOENT ? 127 : 126);
}

static int needs_quotes(const char *s)
{
	if (!*s)
		return 1;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		            "-_./=:,+@%",
		            *s))
			return 1;
	return 0;
}

char *cli_command_line(char *const *argv)
{
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; argv[i]; i++) {
		char *shown = redact_argv(argv, i);
		if (i)
			buf_addch(&b, ' ');
		if (!needs_quotes(shown)) {
			buf_addstr(&b, shown);
		} else {
			buf_addch(&b, '\'');
			for (const char *p = shown; *p; p++) {
				if (*p == '\'')
					buf_addstr(&b, "'\\''");
				else
					buf_addch(&b, *p);
			}
			buf_addch(&b, '\'');
		}
		free(shown);
	}
	return buf_detach(&b, NULL);
}

uint64_t cli_log_max_bytes(void)
{
	const struct settings *st = cli_settings();
	uint64_t n = st ? settings_size(st, "log_size") : 0;
	return n ? n : STEP_LOG_DEFAULT_BYTES;
}

void cli_format_time(int64_t unix_seconds, char *out, size_t cap)
{
	time_t t = (time_t)unix_seconds;
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(out, cap, "%Y-%m-%d %H:%M:%S", &tm);
}
