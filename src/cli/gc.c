/* cachet gc: evicts on demand and says what it freed; and the eviction that
 * a miss triggers when the cache has grown past max_size. */
#include "cli/gc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/settings.h"
#include "cli/step_env.h"

/* The periodic sweep (abandoned files, max_age) runs at most this often. */
#define SWEEP_INTERVAL_S 86400
/* Automatic eviction goes a tenth below max_size, so that it runs about
 * once per tenth of the cache stored rather than on every miss. */
#define EVICT_HEADROOM_DIVISOR 10

/* "78.9 MiB": powers of 1024, as max_size counts. */
static void human_size(uint64_t bytes, char *out, size_t cap)
{
	static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(out, cap, "%llu bytes", (unsigned long long)bytes);
	else
		snprintf(out, cap, "%.1f %s", v, units[u]);
}

static int64_t sweep_interval(int64_t max_age_s)
{
	int64_t interval = SWEEP_INTERVAL_S;
	if (max_age_s > 0 && max_age_s / 2 < interval)
		interval = max_age_s / 2 > 60 ? max_age_s / 2 : 60;
	return interval;
}

void cli_evict_after_store(struct store *s, const struct result *res)
{
	const struct settings *st = cli_settings();
	if (!st)
		return;
	uint64_t max_bytes = settings_size(st, "max_size");
	int64_t max_age_s = settings_duration(st, "max_age");
	size_t n;
	struct blob_ref *blobs = result_blobs(res, &n);
	uint64_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += blobs[i].size;
	free(blobs);
	unsigned due = store_evict_due(s, bytes, max_bytes, sweep_interval(max_age_s));
	if (!due)
		return;
	uint64_t target = max_bytes;
	if (due & STORE_EVICT_DUE_SIZE)
		target = max_bytes - max_bytes / EVICT_HEADROOM_DIVISOR;
	unsigned flags = STORE_EVICT_NOWAIT | (due & STORE_EVICT_DUE_SWEEP ? STORE_EVICT_SWEEP : 0);
	if (due & STORE_EVICT_DUE_SWEEP)
		step_tmpdir_sweep(0);
	struct store_evict_report rep;
	struct error e = {0};
	if (store_evict(s, target, max_age_s, flags, &rep, &e) < 0) {
		/* The step itself succeeded: the next miss tries again. */
		store_count(s, "errors", 1);
		store_count(s, "eviction_failed", 1);
		if (settings_bool(st, "verbose"))
			cli_warn("eviction: %s", e.msg);
	}
}

enum { OPT_MAX_SIZE = 1, OPT_MAX_AGE, OPT_DRY_RUN };

static const struct cli_option gc_options[] = {
    {OPT_MAX_SIZE, 0, "max-size", "SIZE",
     "bound for this run instead of max_size (e.g. 500M; 0: none)"},
    {OPT_MAX_AGE, 0, "max-age", "DURATION",
     "evict entries unused this long (e.g. 3600, 90m, 12h, 30d)"},
    {OPT_DRY_RUN, 'n', "dry-run", NULL, "say what would be removed; remove nothing"},
    {0},
};

const struct cli_command cli_cmd_gc = {
    .name = "gc",
    .options = gc_options,
    .description = "Evicts now what the cache would evict on its own: blobs no entry references,\n"
                   "then least recently used entries (with the blobs only they reference) until\n"
                   "the cache is under max_size, and entries not used for max_age; also removes\n"
                   "files abandoned by crashed processes (in tmp/, or blobs no entry names) older\n"
                   "than an hour, and the private TMPDIRs (cachet-step-*) in $TMPDIR that no step\n"
                   "holds and nothing changed for an hour (pooled ones, and those runs killed on\n"
                   "the way left; a pooled one is made again when a step needs it).\n"
                   "Prints the entries and blobs removed and the bytes freed.\n"
                   "Concurrent steps keep running: work is done in short transactions.\n",
    .epilogue = "Without gc, a miss that takes the cache past max_size evicts down to 90% of it,\n"
                "and max_age and the removals above are applied at least daily.\n",
};

/* An option's value overrides the setting, as CACHET_<KEY> would: checked
 * here so that a bad value is named as the option's. */
static int override(const char *option, const char *key, const char *value)
{
	struct error e = {0};
	if (setting_validate(key, value, &e) < 0) {
		cli_error("gc: %s: %s", option, e.msg);
		return -1;
	}
	char var[64];
	snprintf(var, sizeof var, "CACHET_%s", key);
	for (char *p = var; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	setenv(var, value, 1);
	return 0;
}

int cmd_gc(int argc, char **argv)
{
	int dry = 0;
	struct cli_args args;
	cli_args_init(&args, &cli_cmd_gc, argc, argv);
	for (int id; (id = cli_args_next(&args)) != CLI_ARG_END;) {
		if (id == CLI_ARG_EXIT)
			return args.exit;
		if (id == OPT_DRY_RUN)
			dry = 1;
		else if (id == OPT_MAX_SIZE && override("--max-size", "max_size", args.value) < 0)
			return EXIT_USAGE;
		else if (id == OPT_MAX_AGE && override("--max-age", "max_age", args.value) < 0)
			return EXIT_USAGE;
	}
	const struct settings *st = cli_settings();
	if (!st) {
		cli_error("gc: %s", cli_settings_error());
		return 1;
	}
	uint64_t max_bytes = settings_size(st, "max_size");
	int64_t max_age_s = settings_duration(st, "max_age");
	struct store *s = cli_open_store(0, NULL);
	if (!s)
		return 1;
	struct store_evict_report rep;
	struct error e = {0};
	unsigned flags = STORE_EVICT_SWEEP | (dry ? STORE_EVICT_DRY_RUN : 0);
	struct progress shown;
	progress_start(&shown, 1);
	store_set_progress(s, progress_callback, &shown);
	int rc = store_evict(s, max_bytes, max_age_s, flags, &rep, &e);
	store_set_progress(s, NULL, NULL);
	progress_end(&shown);
	store_close(s);
	if (rc < 0) {
		cli_error("gc: %s", e.msg);
		return 1;
	}
	size_t step_dirs = step_tmpdir_sweep(dry);
	char freed[32], now[32], max[32];
	human_size(rep.bytes_freed, freed, sizeof freed);
	human_size(rep.bytes_left, now, sizeof now);
	human_size(max_bytes, max, sizeof max);
	printf("%s %llu %s and %llu %s, %s %s; cache %s %s", dry ? "would remove" : "removed",
	       (unsigned long long)rep.entries, rep.entries == 1 ? "entry" : "entries",
	       (unsigned long long)rep.blobs, rep.blobs == 1 ? "blob" : "blobs",
	       dry ? "freeing" : "freed", freed, dry ? "would be" : "now", now);
	if (max_bytes)
		printf(" of %s", max);
	printf(" (%llu %s)\n", (unsigned long long)rep.entries_left,
	       rep.entries_left == 1 ? "entry" : "entries");
	if (rep.tmp_files)
		printf("%s %llu abandoned temporary %s\n", dry ? "would remove" : "removed",
		       (unsigned long long)rep.tmp_files, rep.tmp_files == 1 ? "file" : "files");
	if (step_dirs)
		printf("%s %zu private TMPDIR%s of killed runs\n", dry ? "would remove" : "removed",
		       step_dirs, step_dirs == 1 ? "" : "s");
	return 0;
}
