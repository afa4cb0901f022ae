/*
 * The charts of cachet report: plain inline SVG, styled by the page's CSS
 * (classes below), with a <title> per bar so that hovering shows the numbers
 * without any script.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/report.h"

#define MS_SECOND 1000LL
#define MS_MINUTE (60 * MS_SECOND)
#define MS_HOUR   (60 * MS_MINUTE)
#define MS_DAY    (24 * MS_HOUR)

/* Geometry of both charts, in viewBox units (the SVG scales to the page). */
#define CHART_W      960.0
#define CHART_H      260.0
#define PAD_LEFT     64.0
#define PAD_RIGHT    52.0
#define PAD_TOP      14.0
#define PAD_BOTTOM   34.0
#define PLOT_W       (CHART_W - PAD_LEFT - PAD_RIGHT)
#define PLOT_H       (CHART_H - PAD_TOP - PAD_BOTTOM)
#define Y_TICKS      4
#define MAX_X_LABELS 8

/* ---- quantities ---- */

void report_add_duration(struct buf *b, int64_t ms)
{
	if (ms < 0)
		ms = 0;
	if (ms < MS_SECOND)
		buf_addf(b, "%lld ms", (long long)ms);
	else if (ms < MS_MINUTE)
		buf_addf(b, "%.1f s", (double)ms / 1e3);
	else if (ms < MS_HOUR && ms % MS_MINUTE < MS_SECOND)
		buf_addf(b, "%lld min", (long long)(ms / MS_MINUTE));
	else if (ms < MS_HOUR)
		buf_addf(b, "%lld min %02lld s", (long long)(ms / MS_MINUTE),
		         (long long)(ms % MS_MINUTE / MS_SECOND));
	else if (ms < 2 * MS_DAY && ms % MS_HOUR < MS_MINUTE)
		buf_addf(b, "%lld h", (long long)(ms / MS_HOUR));
	else if (ms < 2 * MS_DAY)
		buf_addf(b, "%lld h %02lld min", (long long)(ms / MS_HOUR),
		         (long long)(ms % MS_HOUR / MS_MINUTE));
	else
		buf_addf(b, "%.1f days", (double)ms / (double)MS_DAY);
}

void report_add_size(struct buf *b, uint64_t bytes)
{
	static const char *const units[] = {"kB", "MB", "GB", "TB"};
	if (bytes < 1000) {
		buf_addf(b, "%llu B", (unsigned long long)bytes);
		return;
	}
	double v = (double)bytes / 1e3;
	size_t u = 0;
	while (v >= 1000 && u + 1 < sizeof units / sizeof *units) {
		v /= 1e3;
		u++;
	}
	buf_addf(b, "%.1f %s", v, units[u]);
}

void report_add_bucket_label(struct buf *b, int64_t start_ms, int64_t width_ms, int with_date)
{
	time_t t = (time_t)(start_ms / 1000);
	struct tm tm;
	char out[64];
	localtime_r(&t, &tm);
	const char *fmt;
	if (width_ms >= MS_DAY)
		fmt = "%b %d";
	else if (width_ms >= MS_MINUTE)
		fmt = with_date ? "%b %d %H:%M" : "%H:%M";
	else
		fmt = with_date ? "%b %d %H:%M:%S" : "%H:%M:%S";
	strftime(out, sizeof out, fmt, &tm);
	buf_addstr(b, out);
}

/* ---- axes ---- */

/* A duration on an axis, short: "500 ms", "1.5 min", "2 h". */
static void add_axis_duration(struct buf *b, int64_t ms)
{
	if (ms == 0)
		buf_addstr(b, "0");
	else if (ms < MS_SECOND)
		buf_addf(b, "%lld ms", (long long)ms);
	else if (ms < MS_MINUTE)
		buf_addf(b, "%g s", (double)ms / 1e3);
	else if (ms < MS_HOUR)
		buf_addf(b, "%g min", (double)ms / (double)MS_MINUTE);
	else if (ms < MS_DAY)
		buf_addf(b, "%g h", (double)ms / (double)MS_HOUR);
	else
		buf_addf(b, "%g d", (double)ms / (double)MS_DAY);
}

/* The smallest 1-2-5 step that covers max in Y_TICKS ticks. */
static int64_t count_step(int64_t max)
{
	for (int64_t base = 1;; base *= 10) {
		static const int64_t m[] = {1, 2, 5};
		for (size_t i = 0; i < 3; i++)
			if (base * m[i] * Y_TICKS >= max)
				return base * m[i];
	}
}

/* The same for durations, on steps a clock reader expects. */
static int64_t duration_step(int64_t max)
{
	static const int64_t steps[] = {
	    10,
	    20,
	    50,
	    100,
	    200,
	    500,
	    MS_SECOND,
	    2 * MS_SECOND,
	    5 * MS_SECOND,
	    10 * MS_SECOND,
	    15 * MS_SECOND,
	    30 * MS_SECOND,
	    MS_MINUTE,
	    2 * MS_MINUTE,
	    5 * MS_MINUTE,
	    10 * MS_MINUTE,
	    15 * MS_MINUTE,
	    30 * MS_MINUTE,
	    MS_HOUR,
	    2 * MS_HOUR,
	    6 * MS_HOUR,
	    12 * MS_HOUR,
	    MS_DAY,
	};
	for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
		if (steps[i] * Y_TICKS >= max)
			return steps[i];
	return (max / Y_TICKS / MS_DAY + 1) * MS_DAY;
}

static double y_of(int64_t v, int64_t top)
{
	return PAD_TOP + PLOT_H - PLOT_H * (double)v / (double)top;
}

static double slot_width(const struct report_timeline *t)
{
	return PLOT_W / (double)t->n;
}

/* Horizontal grid lines with labels on the left, from 0 to top. */
static void y_axis(struct buf *b, int64_t step, int64_t top, int durations)
{
	for (int64_t v = 0; v <= top; v += step) {
		double y = y_of(v, top);
		buf_addf(b,
		         "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
		         PAD_LEFT, PAD_LEFT + PLOT_W, y, y);
		buf_addf(b, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">",
		         PAD_LEFT - 6, y + 4);
		if (durations)
			add_axis_duration(b, v);
		else
			buf_addf(b, "%lld", (long long)v);
		buf_addstr(b, "</text>");
	}
}

/* Labels under at most MAX_X_LABELS buckets, the date shown on the first
 * and where it changes; a label that would run into the previous one (the
 * first, with its date, is wider) is left out. */
static void x_axis(struct buf *b, const struct report_timeline *t)
{
	size_t every = (t->n + MAX_X_LABELS - 1) / MAX_X_LABELS;
	double slot = slot_width(t);
	double last_right = -1e9;
	int last_yday = -1, last_year = -1;
	struct buf label;
	buf_init(&label);
	buf_addf(b, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
	         PAD_LEFT, PAD_LEFT + PLOT_W, PAD_TOP + PLOT_H, PAD_TOP + PLOT_H);
	for (size_t i = 0; i < t->n; i += every) {
		time_t secs = (time_t)(t->buckets[i].start_ms / 1000);
		struct tm tm;
		localtime_r(&secs, &tm);
		int new_day = tm.tm_yday != last_yday || tm.tm_year != last_year;
		buf_reset(&label);
		report_add_bucket_label(&label, t->buckets[i].start_ms, t->width_ms, new_day);
		/* Bars are labelled at their left edge: the label names when the
		 * bucket starts. 12px text is about 6.6 units a character. */
		double x = PAD_LEFT + slot * (double)i;
		double w = 6.6 * (double)label.len;
		double left = i == 0 ? x : x - w / 2;
		if (left < last_right + 10)
			continue;
		last_right = left + w;
		last_yday = tm.tm_yday;
		last_year = tm.tm_year;
		buf_addf(b,
		         "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
		         x, x, PAD_TOP + PLOT_H, PAD_TOP + PLOT_H + 4);
		buf_addf(b,
		         "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">%s</text>",
		         x, PAD_TOP + PLOT_H + 18, i == 0 ? "start" : "middle", label.data);
	}
	buf_free(&label);
}

static void svg_open(struct buf *b, const char *label)
{
	buf_addf(b,
	         "<svg class=\"chart\" viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" "
	         "preserveAspectRatio=\"xMidYMid meet\" role=\"img\" aria-label=\"%s\" "
	         "xmlns=\"http://www.w3.org/2000/svg\">",
	         CHART_W, CHART_H, label);
}

static void bucket_title(struct buf *b, const struct report_timeline *t, size_t i)
{
	buf_addstr(b, "<title>");
	report_add_bucket_label(b, t->buckets[i].start_ms, t->width_ms, 1);
	buf_addstr(b, " (");
	report_add_duration(b, t->width_ms);
	buf_addstr(b, ")");
}

static void bar(struct buf *b, const char *cls, double x, double w, double y0, double y1)
{
	if (y1 - y0 < 0.05)
		return;
	buf_addf(b, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>",
	         cls, x, y0, w, y1 - y0);
}

/* ---- charts ---- */

void report_chart_activity(struct buf *b, const struct report_timeline *t)
{
	int64_t max = 1;
	for (size_t i = 0; i < t->n; i++) {
		const struct report_bucket *k = &t->buckets[i];
		int64_t sum = k->hits + k->misses + k->uncacheable;
		if (sum > max)
			max = sum;
	}
	int64_t step = count_step(max);
	int64_t top = (max + step - 1) / step * step;
	double slot = slot_width(t);
	double bw = slot * 0.78;

	svg_open(b, "steps and hit rate over time");
	y_axis(b, step, top, 0);
	/* The hit-rate axis on the right. */
	for (int pct = 0; pct <= 100; pct += 25) {
		double y = PAD_TOP + PLOT_H - PLOT_H * pct / 100.0;
		buf_addf(b, "<text class=\"tick rate\" x=\"%.1f\" y=\"%.1f\">%d%%</text>",
		         PAD_LEFT + PLOT_W + 6, y + 4, pct);
	}
	buf_addf(b,
	         "<text class=\"axis-title\" x=\"14\" y=\"%.1f\" "
	         "transform=\"rotate(-90 14 %.1f)\" text-anchor=\"middle\">steps</text>",
	         PAD_TOP + PLOT_H / 2, PAD_TOP + PLOT_H / 2);
	for (size_t i = 0; i < t->n; i++) {
		const struct report_bucket *k = &t->buckets[i];
		double x = PAD_LEFT + slot * (double)i + (slot - bw) / 2;
		double y = y_of(0, top);
		double y_hit = y_of(k->hits, top);
		double y_miss = y_of(k->hits + k->misses, top);
		double y_unc = y_of(k->hits + k->misses + k->uncacheable, top);
		buf_addstr(b, "<g>");
		bucket_title(b, t, i);
		buf_addf(b, ": %lld hits, %lld misses, %lld uncacheable", (long long)k->hits,
		         (long long)k->misses, (long long)k->uncacheable);
		if (k->hits + k->misses)
			buf_addf(b, "; hit rate %.1f%%",
			         100.0 * (double)k->hits / (double)(k->hits + k->misses));
		buf_addstr(b, "</title>");
		bar(b, "hit", x, bw, y_hit, y);
		bar(b, "miss", x, bw, y_miss, y_hit);
		bar(b, "uncacheable", x, bw, y_unc, y_miss);
		buf_addstr(b, "</g>");
	}
	/* The hit rate, broken where a bucket has no cacheable step. */
	struct buf path;
	buf_init(&path);
	int pen_down = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct report_bucket *k = &t->buckets[i];
		if (!(k->hits + k->misses)) {
			pen_down = 0;
			continue;
		}
		double rate = (double)k->hits / (double)(k->hits + k->misses);
		double x = PAD_LEFT + slot * ((double)i + 0.5);
		double y = PAD_TOP + PLOT_H - PLOT_H * rate;
		buf_addf(&path, "%c%.1f %.1f ", pen_down ? 'L' : 'M', x, y);
		pen_down = 1;
		buf_addf(b, "<circle class=\"rate\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\"/>", x, y);
	}
	if (path.len)
		buf_addf(b, "<path class=\"rate\" d=\"%s\"/>", path.data);
	buf_free(&path);
	x_axis(b, t);
	buf_addstr(b, "</svg>");
}

void report_chart_saved(struct buf *b, const struct report_timeline *t)
{
	int64_t max = 1;
	for (size_t i = 0; i < t->n; i++)
		if (t->buckets[i].saved_ms > max)
			max = t->buckets[i].saved_ms;
	int64_t step = duration_step(max);
	int64_t top = (max + step - 1) / step * step;
	double slot = slot_width(t);
	double bw = slot * 0.78;

	svg_open(b, "time saved over time");
	y_axis(b, step, top, 1);
	for (size_t i = 0; i < t->n; i++) {
		const struct report_bucket *k = &t->buckets[i];
		double x = PAD_LEFT + slot * (double)i + (slot - bw) / 2;
		buf_addstr(b, "<g>");
		bucket_title(b, t, i);
		buf_addstr(b, ": about ");
		report_add_duration(b, k->saved_ms);
		buf_addf(b, " saved by %lld hits</title>", (long long)k->hits);
		bar(b, "saved", x, bw, y_of(k->saved_ms, top), y_of(0, top));
		buf_addstr(b, "</g>");
	}
	x_axis(b, t);
	buf_addstr(b, "</svg>");
}
