/* cachet gc: evicts on demand and says what it freed; and the eviction that
 * a miss triggers when the cache has grown past max_size. */
#include "cli/gc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
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

#define GC_USAGE "usage: cachet gc [--max-size SIZE] [--max-age DURATION] [--dry-run]"

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

/* --opt VALUE or --opt=VALUE: the value, advancing *i; NULL if not opt. */
static const char *option_value(int argc, char **argv, int *i, const char *opt, int *missing)
{
	size_t len = strlen(opt);
	const char *a = argv[*i];
	if (strncmp(a, opt, len) != 0)
		return NULL;
	if (a[len] == '=')
		return a + len + 1;
	if (a[len] != '\0')
		return NULL;
	if (*i + 1 >= argc) {
		*missing = 1;
		return NULL;
	}
	return argv[++*i];
}

int cmd_gc(int argc, char **argv)
{
	int dry = 0;
	for (int i = 1; i < argc; i++) {
		int missing = 0;
		const char *v;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(cli_help_text("gc"), stdout);
			return 0;
		} else if (!strcmp(argv[i], "-n") || !strcmp(argv[i], "--dry-run")) {
			dry = 1;
		} else if ((v = option_value(argc, argv, &i, "--max-size", &missing))) {
			if (override("--max-size", "max_size", v) < 0)
				return EXIT_USAGE;
		} else if ((v = option_value(argc, argv, &i, "--max-age", &missing))) {
			if (override("--max-age", "max_age", v) < 0)
				return EXIT_USAGE;
		} else {
			if (missing)
				cli_error("gc: %s needs a value (" GC_USAGE ")", argv[i]);
			else
				cli_error("gc: unknown option '%s' (" GC_USAGE ")", argv[i]);
			return EXIT_USAGE;
		}
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
