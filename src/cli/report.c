/*
 * cachet report: one self-contained HTML page (inline CSS and SVG, no
 * script to run, nothing fetched) about what the cache has done.
 *
 * Sources: the counters for the totals (through totals.h, so the page says
 * exactly what `cachet stats` says), the step log for anything over time or
 * per command, and the index for the largest entries and the steps found
 * nondeterministic. The totals also go into the page as the JSON of
 * `cachet stats --json` (<script type="application/json" id="cachet-stats">)
 * and as elements with ids (hits, misses, ...) for tools and tests.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cachet/array.h"
#include "cachet/buf.h"
#include "cachet/fdio.h"
#include "cachet/html.h"
#include "cachet/step.h"
#include "cachet/strmap.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "cli/report.h"
#include "cli/totals.h"

#define TOP_ROWS 20
/* Enough bars to see a trend, few enough to read each one. */
#define MAX_BUCKETS 48

/* One reason a command missed, and how often. */
struct reason_count {
	const char *reason; /* points into the log */
	int uncacheable;
	int64_t count;
};

/* Everything the log says about one command. */
struct command_runs {
	const char *command; /* points into the log */
	const char *cwd;     /* of its latest run */
	int64_t runs, hits, misses, uncacheable;
	int64_t last_ms;
	struct reason_count *reasons;
	size_t nreasons, alloc;
};

struct report {
	struct store *store;
	struct totals totals;
	struct store_counter *counters;
	size_t ncounters;
	struct store_log_entry *log;
	size_t nlog;
	int64_t log_first_ms, log_last_ms;
	int64_t log_saved_ms; /* sum of the per-bucket estimates */
	struct report_timeline timeline;
	struct command_runs *commands; /* sorted: most misses first */
	size_t ncommands;
	struct store_sized_result *largest;
	size_t nlargest;
	struct store_nondet_step *nondet;
	size_t nnondet;
};

/* ---- gathering ---- */

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	if (a % b && (a < 0) != (b < 0))
		q--;
	return q;
}

/* Cuts the log's span into at most MAX_BUCKETS buckets of a round width,
 * aligned to local clock boundaries (an hourly bucket starts at :00). */
static void choose_buckets(struct report *r)
{
	static const int64_t widths[] = {
	    1000,     5000,     15000,    60000,    300000,    900000,       3600000,
	    10800000, 21600000, 43200000, 86400000, 604800000, 2592000000LL,
	};
	int64_t first = r->log_first_ms, last = r->log_last_ms;
	time_t t0 = (time_t)(first / 1000);
	struct tm tm;
	localtime_r(&t0, &tm);
	int64_t off = (int64_t)tm.tm_gmtoff * 1000;
	int64_t width = 0, start = first;
	for (size_t i = 0; i < sizeof widths / sizeof *widths && !width; i++) {
		int64_t s = floor_div(first + off, widths[i]) * widths[i] - off;
		if ((last - s) / widths[i] + 1 <= MAX_BUCKETS) {
			width = widths[i];
			start = s;
		}
	}
	if (!width) /* a log spanning years: plain equal parts */
		width = (last - first) / (MAX_BUCKETS - 1) + 1;
	size_t n = (size_t)((last - start) / width + 1);
	r->timeline.buckets = xcalloc(n, sizeof *r->timeline.buckets);
	r->timeline.n = n;
	r->timeline.width_ms = width;
	for (size_t i = 0; i < n; i++)
		r->timeline.buckets[i].start_ms = start + (int64_t)i * width;
}

/* What a hit saved cannot be read from the log line itself: it is the run
 * time of the entry it replayed minus its own. The entry's run is the latest
 * stored miss of the same command in the same directory, when the log still
 * holds it; hits without one count nothing. The page shows the counters'
 * total as the figure and this only as its distribution over time. */
static void fill_timeline(struct report *r)
{
	struct strmap last_run; /* cwd "\n" command -> index + 1 into runs */
	int64_t *runs = xcalloc(r->nlog + 1, sizeof *runs);
	size_t nruns = 0;
	strmap_init(&last_run);
	struct buf key;
	buf_init(&key);
	for (size_t i = 0; i < r->nlog; i++) {
		const struct store_log_entry *en = &r->log[i];
		if (en->time_ms <= 0)
			continue;
		size_t k = (size_t)((en->time_ms - r->timeline.buckets[0].start_ms) /
		                    r->timeline.width_ms);
		if (k >= r->timeline.n)
			k = r->timeline.n - 1;
		struct report_bucket *bk = &r->timeline.buckets[k];
		buf_reset(&key);
		buf_addf(&key, "%s\n%s", en->cwd, en->command);
		uintptr_t slot = (uintptr_t)strmap_get(&last_run, key.data);
		if (!strcmp(en->result, "hit")) {
			bk->hits++;
			if (slot && runs[slot - 1] > en->duration_ms) {
				bk->saved_ms += runs[slot - 1] - en->duration_ms;
				r->log_saved_ms += runs[slot - 1] - en->duration_ms;
			}
		} else if (!strcmp(en->result, "miss")) {
			bk->misses++;
			if (strstr(en->reason, "not stored"))
				continue;
			if (!slot) {
				slot = ++nruns;
				strmap_put(&last_run, key.data, (void *)slot);
			}
			runs[slot - 1] = en->duration_ms;
		} else if (!strcmp(en->result, "uncacheable")) {
			bk->uncacheable++;
		}
	}
	buf_free(&key);
	strmap_free(&last_run);
	free(runs);
}

static void build_timeline(struct report *r)
{
	r->log_first_ms = INT64_MAX;
	r->log_last_ms = INT64_MIN;
	for (size_t i = 0; i < r->nlog; i++) {
		int64_t t = r->log[i].time_ms;
		if (t <= 0) /* a damaged line */
			continue;
		if (t < r->log_first_ms)
			r->log_first_ms = t;
		if (t > r->log_last_ms)
			r->log_last_ms = t;
	}
	if (r->log_first_ms > r->log_last_ms)
		return;
	choose_buckets(r);
	fill_timeline(r);
}

static void count_reason(struct command_runs *c, const char *reason, int uncacheable)
{
	for (size_t i = 0; i < c->nreasons; i++) {
		if (c->reasons[i].uncacheable == uncacheable &&
		    !strcmp(c->reasons[i].reason, reason)) {
			c->reasons[i].count++;
			return;
		}
	}
	ARRAY_RESERVE(c->reasons, c->alloc, c->nreasons + 1, 4);
	c->reasons[c->nreasons++] = (struct reason_count){reason, uncacheable, 1};
}

static int by_count_desc(const void *a, const void *b)
{
	const struct reason_count *x = a, *y = b;
	return (x->count < y->count) - (x->count > y->count);
}

static int by_misses_desc(const void *a, const void *b)
{
	const struct command_runs *x = a, *y = b;
	int64_t mx = x->misses + x->uncacheable, my = y->misses + y->uncacheable;
	if (mx != my)
		return (mx < my) - (mx > my);
	return (x->last_ms < y->last_ms) - (x->last_ms > y->last_ms);
}

/* Groups the log by command; keeps the commands that missed at least once. */
static void group_commands(struct report *r)
{
	struct strmap index; /* command -> index + 1 into r->commands */
	strmap_init(&index);
	size_t alloc = 0;
	for (size_t i = 0; i < r->nlog; i++) {
		const struct store_log_entry *en = &r->log[i];
		uintptr_t slot = (uintptr_t)strmap_get(&index, en->command);
		if (!slot) {
			ARRAY_RESERVE(r->commands, alloc, r->ncommands + 1, 64);
			memset(&r->commands[r->ncommands], 0, sizeof *r->commands);
			r->commands[r->ncommands].command = en->command;
			slot = ++r->ncommands;
			strmap_put(&index, en->command, (void *)slot);
		}
		struct command_runs *c = &r->commands[slot - 1];
		c->runs++;
		c->cwd = en->cwd;
		if (en->time_ms > c->last_ms)
			c->last_ms = en->time_ms;
		if (!strcmp(en->result, "hit")) {
			c->hits++;
		} else if (!strcmp(en->result, "miss")) {
			c->misses++;
			count_reason(c, en->reason, 0);
		} else if (!strcmp(en->result, "uncacheable")) {
			c->uncacheable++;
			count_reason(c, en->reason, 1);
		}
	}
	strmap_free(&index);
	size_t kept = 0;
	for (size_t i = 0; i < r->ncommands; i++) {
		struct command_runs *c = &r->commands[i];
		if (c->misses + c->uncacheable == 0) {
			free(c->reasons);
			continue;
		}
		qsort(c->reasons, c->nreasons, sizeof *c->reasons, by_count_desc);
		r->commands[kept++] = *c;
	}
	r->ncommands = kept;
	if (kept)
		qsort(r->commands, kept, sizeof *r->commands, by_misses_desc);
}

static int gather(struct report *r, size_t log_limit, struct error *e)
{
	struct store_usage u = {0};
	if (store_counters(r->store, &r->counters, &r->ncounters, e) < 0 ||
	    store_usage(r->store, &u, e) < 0)
		return -1;
	totals_from(&r->totals, r->counters, r->ncounters, &u);
	if (store_log_read(r->store, log_limit, &r->log, &r->nlog, e) < 0)
		return -1;
	if (store_largest_results(r->store, TOP_ROWS, &r->largest, &r->nlargest, e) < 0 ||
	    store_nondet_steps(r->store, 100, &r->nondet, &r->nnondet, e) < 0)
		return -1;
	build_timeline(r);
	group_commands(r);
	return 0;
}

static void report_free(struct report *r)
{
	free(r->counters);
	store_log_free(r->log, r->nlog);
	free(r->timeline.buckets);
	for (size_t i = 0; i < r->ncommands; i++)
		free(r->commands[i].reasons);
	free(r->commands);
	store_sized_results_free(r->largest, r->nlargest);
	store_nondet_steps_free(r->nondet, r->nnondet);
}

/* ---- the page ---- */

static const char page_style[] =
    ":root{--hit:#2f9e5a;--miss:#e8833a;--unc:#9aa3ad;--rate:#2f5fd0;--saved:#3a8fb7;"
    "--fg:#1d232b;--muted:#5f6b78;--bg:#f4f6f9;--card:#fff;--line:#e2e6eb}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0;background:var(--bg);color:var(--fg);"
    "font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif}\n"
    "main{max-width:1120px;margin:0 auto;padding:28px 20px 48px}\n"
    "header h1{margin:0;font-size:26px;letter-spacing:-.01em}\n"
    "header p{margin:4px 0 0;color:var(--muted)}\n"
    "section{background:var(--card);border:1px solid var(--line);border-radius:10px;"
    "padding:18px 20px;margin-top:18px}\n"
    "h2{margin:0 0 2px;font-size:18px}\n"
    "h3{margin:8px 0 6px;font-size:14px}\n"
    "p.note{margin:0 0 12px;color:var(--muted);font-size:13px}\n"
    ".cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(145px,1fr));gap:12px;"
    "margin-top:20px}\n"
    ".card{background:var(--card);border:1px solid var(--line);border-radius:10px;"
    "padding:12px 14px}\n"
    ".card .label{color:var(--muted);font-size:12px;text-transform:uppercase;"
    "letter-spacing:.05em}\n"
    ".card .value{font-size:26px;font-weight:650;margin-top:2px;"
    "font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    ".card .sub{color:var(--muted);font-size:12px}\n"
    ".card.rate .value{color:var(--rate)}.card.hit .value{color:var(--hit)}"
    ".card.miss .value{color:var(--miss)}.card.saved .value{color:var(--saved)}\n"
    ".legend{display:flex;gap:18px;flex-wrap:wrap;font-size:13px;color:var(--muted);"
    "margin:0 0 6px}\n"
    ".legend .swatch{display:inline-block;width:11px;height:11px;border-radius:2px;"
    "margin-right:6px;vertical-align:-1px}\n"
    ".legend .swatch.line{height:3px;vertical-align:3px;width:16px}\n"
    ".chart{display:block;width:100%;height:auto}\n"
    ".chart .grid{stroke:var(--line);stroke-width:1}.chart .axis{stroke:#a7b0ba}\n"
    ".chart text{font-size:12px;fill:var(--muted)}\n"
    ".chart .axis-title{font-size:12px}.chart .tick.rate{fill:var(--rate)}\n"
    ".chart rect.hit,.legend .hit{fill:var(--hit);background:var(--hit)}\n"
    ".chart rect.miss,.legend .miss{fill:var(--miss);background:var(--miss)}\n"
    ".chart rect.uncacheable,.legend .uncacheable{fill:var(--unc);background:var(--unc)}\n"
    ".chart rect.saved{fill:var(--saved)}.legend .rate{background:var(--rate)}\n"
    ".chart g:hover rect{opacity:.8}\n"
    ".chart path.rate{fill:none;stroke:var(--rate);stroke-width:2.5;stroke-linejoin:round}\n"
    ".chart circle.rate{fill:#fff;stroke:var(--rate);stroke-width:2}\n"
    "table{width:100%;border-collapse:collapse}\n"
    "th,td{text-align:left;padding:7px 8px;border-top:1px solid var(--line);"
    "vertical-align:top}\n"
    "th{font-size:12px;font-weight:600;color:var(--muted);text-transform:uppercase;"
    "letter-spacing:.04em;border-top:0}\n"
    "td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    "code{font:12.5px/1.4 ui-monospace,'DejaVu Sans Mono',Menlo,monospace;"
    "overflow-wrap:anywhere}\n"
    ".cwd{color:var(--muted);font-size:12px;overflow-wrap:anywhere}\n"
    ".chip{display:inline-block;padding:1px 8px;border-radius:10px;background:#fdebdc;"
    "color:#854210;font-size:12px;margin:2px 4px 2px 0;white-space:nowrap}\n"
    ".chip.unc{background:#eceff2;color:#46515d}\n"
    ".meter{height:8px;background:var(--line);border-radius:4px;overflow:hidden;"
    "min-width:60px;margin-top:5px}\n"
    ".meter div{height:100%;background:var(--miss)}.meter.size div{background:var(--saved)}"
    ".meter.unc div{background:var(--unc)}\n"
    ".two{display:grid;grid-template-columns:1fr 1fr;gap:28px}\n"
    "@media (max-width:760px){.two{grid-template-columns:1fr}}\n"
    ".empty{color:var(--muted);font-style:italic;margin:6px 0}\n"
    "footer{color:var(--muted);font-size:12px;margin-top:22px;text-align:center}\n";

static void add_time(struct buf *b, int64_t ms)
{
	char when[32];
	cli_format_time(ms / 1000, when, sizeof when);
	buf_addstr(b, when);
}

static double hit_rate(int64_t hits, int64_t misses)
{
	return (hits + misses) ? 100.0 * (double)hits / (double)(hits + misses) : 0.0;
}

static void page_head(struct buf *b, const struct report *r)
{
	buf_addstr(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	              "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	              "<title>cachet report</title>\n<style>\n");
	buf_addstr(b, page_style);
	buf_addstr(b, "</style>\n</head>\n<body>\n<main>\n<header>\n<h1>cachet report</h1>\n<p>");
	buf_addstr(b, "Cache <code>");
	buf_add_html_str(b, store_dir(r->store));
	buf_addstr(b, "</code> &middot; generated ");
	add_time(b, (int64_t)time(NULL) * 1000);
	buf_addstr(b, "</p>\n</header>\n");
}

static void card(struct buf *b, const char *cls, const char *label, const char *id,
                 const char *value, const char *sub)
{
	buf_addf(b,
	         "<div class=\"card %s\"><div class=\"label\">%s</div>"
	         "<div class=\"value\"><span id=\"%s\">%s</span></div>",
	         cls, label, id, value);
	if (sub)
		buf_addf(b, "<div class=\"sub\">%s</div>", sub);
	buf_addstr(b, "</div>\n");
}

static void section_summary(struct buf *b, const struct report *r)
{
	const struct totals *t = &r->totals;
	struct buf v, sub;
	buf_init(&v);
	buf_init(&sub);
	buf_addstr(b, "<div class=\"cards\" id=\"summary\">\n");
	buf_addf(&v, "%.1f%%", hit_rate(t->hits, t->misses));
	card(b, "rate", "Hit rate", "hit-rate", v.data, "hits / (hits + misses)");
#define COUNT_CARD(cls, label, id, field)                                                          \
	do {                                                                                       \
		buf_reset(&v);                                                                     \
		buf_addf(&v, "%lld", (long long)(field));                                          \
		card(b, cls, label, id, v.data, NULL);                                             \
	} while (0)
	COUNT_CARD("hit", "Hits", "hits", t->hits);
	COUNT_CARD("miss", "Misses", "misses", t->misses);
	COUNT_CARD("", "Uncacheable", "uncacheable", t->uncacheable);
	COUNT_CARD("", "Errors", "errors", t->errors);
#undef COUNT_CARD
	buf_reset(&v);
	report_add_duration(&v, t->time_saved_ms);
	buf_addf(&sub, "<span id=\"time-saved-ms\">%lld</span> ms", (long long)t->time_saved_ms);
	card(b, "saved", "Time saved", "time-saved", v.data, sub.data);
	buf_reset(&v);
	buf_addf(&v, "%llu", (unsigned long long)t->usage.entries);
	card(b, "", "Entries", "entries", v.data, NULL);
	buf_reset(&v);
	report_add_size(&v, t->usage.blob_bytes);
	buf_reset(&sub);
	buf_addf(&sub, "<span id=\"bytes\">%llu</span> bytes in %llu blobs",
	         (unsigned long long)t->usage.blob_bytes, (unsigned long long)t->usage.blobs);
	card(b, "", "Size on disk", "size", v.data, sub.data);
	buf_addstr(b, "</div>\n");
	buf_free(&v);
	buf_free(&sub);
}

static void section_activity(struct buf *b, const struct report *r)
{
	buf_addstr(b, "<section id=\"activity\">\n<h2>Hit rate over time</h2>\n<p class=\"note\">");
	if (!r->timeline.n) {
		buf_addstr(b,
		           "</p><p class=\"empty\">The step log is empty: no step has run through "
		           "this cache yet (or the log was removed).</p>\n</section>\n");
		return;
	}
	buf_addf(b, "From the step log: %zu steps from ", r->nlog);
	add_time(b, r->log_first_ms);
	buf_addstr(b, " to ");
	add_time(b, r->log_last_ms);
	buf_addstr(b, ", one bar per ");
	report_add_duration(b, r->timeline.width_ms);
	buf_addstr(b, ". The log keeps the latest steps only; the totals above are the counters "
	              "that <code>cachet stats</code> shows.</p>\n"
	              "<div class=\"legend\"><span><span class=\"swatch hit\"></span>hits</span>"
	              "<span><span class=\"swatch miss\"></span>misses</span>"
	              "<span><span class=\"swatch uncacheable\"></span>uncacheable</span>"
	              "<span><span class=\"swatch line rate\"></span>hit rate (right axis)</span>"
	              "</div>\n");
	report_chart_activity(b, &r->timeline);
	buf_addstr(b, "\n</section>\n");
}

static void section_saved(struct buf *b, const struct report *r)
{
	buf_addstr(b, "<section id=\"saved\">\n<h2>Time saved: ");
	report_add_duration(b, r->totals.time_saved_ms);
	buf_addstr(b, "</h2>\n<p class=\"note\">The total is the counter: for each hit, the run "
	              "time recorded with the entry minus the time the hit took.");
	if (!r->timeline.n) {
		buf_addstr(b, "</p>\n</section>\n");
		return;
	}
	buf_addstr(b, " Over time, estimated from the step log (a hit saves the latest stored run "
	              "of the same command minus its own time): about ");
	report_add_duration(b, r->log_saved_ms);
	buf_addstr(b, " in the logged steps.</p>\n");
	report_chart_saved(b, &r->timeline);
	buf_addstr(b, "\n</section>\n");
}

static int counter_desc(const void *a, const void *b)
{
	const struct store_counter *x = a, *y = b;
	return (x->value < y->value) - (x->value > y->value);
}

/* The counters named prefix + REASON, as a table with a bar per reason. */
static void reason_table(struct buf *b, const struct report *r, const char *prefix,
                         const char *meter_class, const char *empty)
{
	size_t plen = strlen(prefix), n = 0;
	struct store_counter *rows = xcalloc(r->ncounters + 1, sizeof *rows);
	int64_t max = 1;
	for (size_t i = 0; i < r->ncounters; i++) {
		if (strncmp(r->counters[i].name, prefix, plen) || r->counters[i].value <= 0)
			continue;
		rows[n++] = r->counters[i];
		if (r->counters[i].value > max)
			max = r->counters[i].value;
	}
	if (!n) {
		buf_addf(b, "<p class=\"empty\">%s</p>\n", empty);
		free(rows);
		return;
	}
	qsort(rows, n, sizeof *rows, counter_desc);
	buf_addstr(b, "<table><tr><th>Reason</th><th class=\"num\">Steps</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		buf_addstr(b, "<tr><td>");
		buf_add_html_str(b, rows[i].name + plen);
		buf_addf(b,
		         "<div class=\"meter %s\"><div style=\"width:%.1f%%\"></div></div></td>"
		         "<td class=\"num\">%lld</td></tr>\n",
		         meter_class, 100.0 * (double)rows[i].value / (double)max,
		         (long long)rows[i].value);
	}
	buf_addstr(b, "</table>\n");
	free(rows);
}

static void section_reasons(struct buf *b, const struct report *r)
{
	buf_addstr(b,
	           "<section id=\"reasons\">\n<h2>Why steps missed</h2>\n<p class=\"note\">"
	           "Counted since the counters were last zeroed, as in "
	           "<code>cachet stats</code>.</p>\n<div class=\"two\"><div>\n<h3>Misses</h3>\n");
	reason_table(b, r, "miss: ", "", "No misses counted.");
	buf_addstr(b, "</div><div>\n<h3>Uncacheable steps</h3>\n");
	reason_table(b, r, "uncacheable: ", "unc", "No uncacheable steps counted.");
	buf_addstr(b, "</div></div>\n</section>\n");
}

static void section_misses(struct buf *b, const struct report *r)
{
	buf_addstr(b,
	           "<section id=\"miss-most\">\n<h2>Steps that miss most</h2>\n<p class=\"note\">"
	           "Commands in the step log that ran without a hit, with why; secret-looking "
	           "values are hidden.</p>\n");
	if (!r->ncommands) {
		buf_addstr(b, "<p class=\"empty\">No step in the log missed.</p>\n</section>\n");
		return;
	}
	buf_addstr(b, "<table><tr><th>Command</th><th>Reasons</th><th class=\"num\">Runs</th>"
	              "<th class=\"num\">Hits</th><th class=\"num\">Misses</th></tr>\n");
	for (size_t i = 0; i < r->ncommands && i < TOP_ROWS; i++) {
		const struct command_runs *c = &r->commands[i];
		buf_addstr(b, "<tr><td><code>");
		buf_add_html_str(b, c->command);
		buf_addstr(b, "</code><div class=\"cwd\">in ");
		buf_add_html_str(b, c->cwd);
		buf_addstr(b, " &middot; last ");
		add_time(b, c->last_ms);
		buf_addstr(b, "</div></td><td>");
		for (size_t k = 0; k < c->nreasons; k++) {
			const struct reason_count *rc = &c->reasons[k];
			buf_addf(b, "<span class=\"chip%s\">", rc->uncacheable ? " unc" : "");
			if (rc->uncacheable)
				buf_addstr(b, "uncacheable: ");
			buf_add_html_str(b, *rc->reason ? rc->reason : "no reason given");
			buf_addf(b, " &times;%lld</span>", (long long)rc->count);
		}
		buf_addf(b,
		         "</td><td class=\"num\">%lld</td><td class=\"num\">%lld</td>"
		         "<td class=\"num\">%lld</td></tr>\n",
		         (long long)c->runs, (long long)c->hits,
		         (long long)(c->misses + c->uncacheable));
	}
	buf_addstr(b, "</table>\n");
	if (r->ncommands > TOP_ROWS)
		buf_addf(b, "<p class=\"note\">%zu more commands missed.</p>\n",
		         r->ncommands - TOP_ROWS);
	buf_addstr(b, "</section>\n");
}

/* The command and directory of a recorded step, or a placeholder. */
static void add_step(struct buf *b, const void *body, size_t len)
{
	struct step step;
	struct error e = {0};
	if (!body || step_decode(body, len, &step, &e) < 0) {
		buf_addstr(b, "<span class=\"empty\">(step description missing)</span>");
		return;
	}
	char *command = cli_command_line(step.argv);
	buf_addstr(b, "<code>");
	buf_add_html_str(b, command);
	buf_addstr(b, "</code><div class=\"cwd\">in ");
	buf_add_html_str(b, step.cwd);
	buf_addstr(b, "</div>");
	free(command);
	step_free(&step);
}

static void section_largest(struct buf *b, const struct report *r)
{
	buf_addstr(b, "<section id=\"largest\">\n<h2>Largest entries</h2>\n<p class=\"note\">"
	              "By the uncompressed size of the outputs, stdout and stderr an entry "
	              "restores.</p>\n");
	if (!r->nlargest) {
		buf_addstr(b, "<p class=\"empty\">The cache holds no entries.</p>\n</section>\n");
		return;
	}
	uint64_t max = r->largest[0].size ? r->largest[0].size : 1;
	buf_addstr(b, "<table><tr><th>Command</th><th class=\"num\">Size</th>"
	              "<th class=\"num\">Hits</th><th class=\"num\">Run time</th>"
	              "<th class=\"num\">Last used</th></tr>\n");
	for (size_t i = 0; i < r->nlargest; i++) {
		const struct store_sized_result *row = &r->largest[i];
		buf_addstr(b, "<tr><td>");
		add_step(b, row->step_body, row->step_len);
		buf_addstr(b, "</td><td class=\"num\">");
		report_add_size(b, row->size);
		buf_addf(b, "<div class=\"meter size\"><div style=\"width:%.1f%%\"></div></div>",
		         100.0 * (double)row->size / (double)max);
		buf_addf(b, "</td><td class=\"num\">%lld</td><td class=\"num\">",
		         (long long)row->hits);
		report_add_duration(b, row->duration_ms);
		buf_addstr(b, "</td><td class=\"num\">");
		add_time(b, row->last_used_ns / 1000000);
		buf_addstr(b, "</td></tr>\n");
	}
	buf_addstr(b, "</table>\n</section>\n");
}

static void section_nondet(struct buf *b, const struct report *r)
{
	buf_addstr(b,
	           "<section id=\"nondeterministic\">\n<h2>Nondeterministic steps</h2>\n"
	           "<p class=\"note\">Steps whose outputs differed between identical runs, found "
	           "by <code>cachet run --verify</code> or <code>verify_rate</code>.</p>\n");
	if (!r->nnondet) {
		buf_addstr(b, "<p class=\"empty\">None found.</p>\n</section>\n");
		return;
	}
	buf_addstr(b, "<table><tr><th>Command</th><th>What differed</th>"
	              "<th class=\"num\">Times</th><th class=\"num\">Last seen</th></tr>\n");
	for (size_t i = 0; i < r->nnondet; i++) {
		const struct store_nondet_step *row = &r->nondet[i];
		buf_addstr(b, "<tr><td>");
		add_step(b, row->step_body, row->step_len);
		buf_addstr(b, "</td><td>");
		buf_add_html_str(b, row->summary);
		buf_addf(b, "</td><td class=\"num\">%lld</td><td class=\"num\">",
		         (long long)row->count);
		add_time(b, row->last_seen_ns / 1000000);
		buf_addstr(b, "</td></tr>\n");
	}
	buf_addstr(b, "</table>\n</section>\n");
}

static void page_end(struct buf *b, const struct report *r)
{
	struct buf json;
	buf_init(&json);
	totals_json(&json, &r->totals, r->counters, r->ncounters);
	buf_addstr(b, "<footer>cachet " CACHET_VERSION "</footer>\n</main>\n"
	              "<script type=\"application/json\" id=\"cachet-stats\">");
	/* A reason holding "</script>" must not end the block: '<' only occurs
	 * inside JSON strings, where \u003c means the same. */
	for (size_t i = 0; i < json.len; i++) {
		if (json.data[i] == '<')
			buf_addstr(b, "\\u003c");
		else
			buf_addch(b, json.data[i]);
	}
	buf_addstr(b, "</script>\n</body>\n</html>\n");
	buf_free(&json);
}

static void write_page(struct buf *b, const struct report *r)
{
	page_head(b, r);
	section_summary(b, r);
	section_activity(b, r);
	section_saved(b, r);
	section_reasons(b, r);
	section_misses(b, r);
	section_largest(b, r);
	section_nondet(b, r);
	page_end(b, r);
}

/* ---- output ---- */

/* Writes the page to path through a temporary file and a rename, so that a
 * browser never sees half a report. */
static int save(const char *path, const struct buf *page)
{
	char *tmp = xasprintf("%s.tmp.XXXXXX", path);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		cli_error("report: cannot write %s: %s", path, strerror(errno));
		free(tmp);
		return -1;
	}
	/* 0600, whatever the umask: the page holds command lines, and their
	 * redaction (util/redact.c) is a heuristic. Shared on purpose, it is
	 * one chmod away. */
	int ok = write_all(fd, page->data, page->len) == 0 && fchmod(fd, 0600) == 0;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) < 0) {
		cli_error("report: cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
		free(tmp);
		return -1;
	}
	free(tmp);
	return 0;
}

enum { OPT_OUTPUT = 1, OPT_COUNT };

static const struct cli_option report_options[] = {
    {OPT_OUTPUT, 'o', "output", "FILE", "write the page to FILE (default: standard output)"},
    {OPT_COUNT, 'n', NULL, "N", "use only the last N steps of the step log (default: all of it)"},
    {0},
};

const struct cli_command cli_cmd_report = {
    .name = "report",
    .options = report_options,
    .description =
        "Writes one self-contained HTML page (inline CSS and SVG, nothing fetched) with\n"
        "the totals of cachet stats, the hit rate and the time saved over time, why\n"
        "steps missed, the commands that miss most with their reasons, the largest\n"
        "entries and the steps found nondeterministic. The totals are also in the page\n"
        "as the JSON of cachet stats --json (script id \"cachet-stats\").\n",
};

int cmd_report(int argc, char **argv)
{
	const char *out = NULL;
	size_t log_limit = SIZE_MAX;
	struct cli_args args;
	cli_args_init(&args, &cli_cmd_report, argc, argv);
	for (int id; (id = cli_args_next(&args)) != CLI_ARG_END;) {
		if (id == CLI_ARG_EXIT)
			return args.exit;
		if (id == OPT_OUTPUT) {
			out = args.value;
			continue;
		}
		if (cli_args_count(&args, &log_limit) < 0)
			return EXIT_USAGE;
	}
	if (out && !*out) {
		cli_error("report: -o needs a file name");
		return EXIT_USAGE;
	}
	struct report r = {0};
	r.store = cli_open_store(0, NULL);
	if (!r.store)
		return 1;
	struct error e = {0};
	if (gather(&r, log_limit, &e) < 0) {
		cli_error("report: %s", e.msg);
		report_free(&r);
		store_close(r.store);
		return 1;
	}
	struct buf page;
	buf_init(&page);
	write_page(&page, &r);
	report_free(&r);
	store_close(r.store);
	int rc = 0;
	if (out)
		rc = save(out, &page) < 0 ? 1 : 0;
	else if (write_all(1, page.data, page.len) < 0)
		rc = 1;
	buf_free(&page);
	return rc;
}
