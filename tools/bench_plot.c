// SPDX-License-Identifier: MIT
/*
 * bench_plot.c - the per-second figures of a run (struct bench_series) and
 * their picture for "ibtrs bench --plot" and "ibtrs demo --plot": IOPS per
 * path and the p99 latency over time, the session's events marked (a path
 * going down, coming back, a fault injected). Written as SVG text
 * directly: any browser shows it, nothing is rasterised here.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tool.h"

/* Geometry of the picture, in SVG user units (pixels). */
#define PL_W 960
#define PL_H 600
#define PL_LEFT 80
#define PL_RIGHT 250 /* room for the legend, at the least */
#define PL_CHAR_W 7  /* a generous width of one legend character */
#define PL_IOPS_TOP 60
#define PL_IOPS_H 250
#define PL_LAT_TOP 360
#define PL_LAT_H 170

static const char *const pl_colors[] = {
	"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
	"#8c564b", "#e377c2", "#7f7f7f", "#17becf",
};

/**
 * bench_series_add() - keep the figures of one progress tick
 * @s: the series
 * @tick: the tick
 *
 * Once full (BENCH_SERIES_MAX ticks) later ticks are not kept.
 */
void bench_series_add(struct bench_series *s, const struct bench_tick *tick)
{
	struct bench_sample *p;
	size_t i;

	if (s->n == BENCH_SERIES_MAX)
		return;
	if (!s->n)
		s->start_real_ns =
			tick->real_ns - (uint64_t)(tick->elapsed * 1e9);
	p = &s->samples[s->n++];
	p->t = tick->elapsed;
	p->iops = tick->iops;
	p->p99_us = tick->p99_us;
	p->max_us = tick->max_us;
	p->path_cnt = tick->path_cnt;
	for (i = 0; i < tick->path_cnt && i < IBTRS_MAX_PATHS; i++) {
		p->path_iops[i] =
			tick->dt > 0 ? (double)tick->path_ops[i] / tick->dt : 0;
		p->path_state[i] = tick->path_state[i];
	}
	if (tick->path_cnt > s->path_cnt)
		s->path_cnt = tick->path_cnt;
}

/* Write @s with the XML special characters escaped. */
static void pl_text(FILE *f, const char *s, size_t max)
{
	size_t i;

	for (i = 0; i < max && s[i]; i++) {
		switch (s[i]) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			/* Control bytes are not allowed in XML 1.0. */
			fputc((unsigned char)s[i] < 0x20 ? ' ' : s[i], f);
		}
	}
}

/* A round step of about @span / 4 for the axis labels. */
static double pl_step(double span)
{
	double mag, r;

	if (span <= 0)
		return 1;
	mag = pow(10, floor(log10(span / 4)));
	r = span / 4 / mag;
	return mag * (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10);
}

/**
 * pl_event_kind() - what an event means on the picture
 * @ev: the event
 *
 * Return: "down" (a path left the connected state, or no path is left),
 * "back" (a path or the session connected again), "fault" (a fault was
 * injected), or NULL for an event not marked (connect attempts and the
 * like).
 */
static const char *pl_event_kind(const struct ibtrs_event *ev)
{
	char msg[sizeof(ev->msg) + 1];
	const char *arrow;

	snprintf(msg, sizeof(msg), "%.*s", (int)sizeof(ev->msg), ev->msg);
	if (strstr(msg, "fault injected"))
		return "fault";
	if (ev->path < 0)
		return !strcmp(msg, "no path connected") ? "down"
		       : !strcmp(msg, "reconnected")	 ? "back"
							 : NULL;
	arrow = strstr(msg, ": connected -> ");
	if (arrow)
		return "down";
	if (strstr(msg, " -> connected:"))
		return "back";
	return NULL;
}

/*
 * The picture's width: the plot keeps its size and the legend on its right
 * gets as much room as its longest label ("path N SRC->DST:PORT") needs.
 */
static int pl_width(const struct bench_series *s, const struct bench_res *res)
{
	int need = PL_RIGHT;
	size_t k;

	for (k = 0; k < s->path_cnt && k < res->path_cnt; k++) {
		size_t len =
			strlen("path 00 ") +
			strnlen(res->paths[k].addr, sizeof(res->paths[k].addr));
		int w = 16 + 26 + (int)len * PL_CHAR_W + 16;

		need = w > need ? w : need;
	}
	return PL_W - PL_RIGHT + need;
}

/**
 * bench_plot_svg() - draw a run as an SVG image
 * @file: where to write it
 * @title: first line of the picture
 * @s: the per-second figures
 * @res: the result, for the path names and the events (res->event_cnt 0:
 *       none are marked)
 *
 * Top: IOPS of every path per interval, one line per path (class
 * "series", data-path the index), and the total. Bottom: the p99 and the
 * longest latency of every interval over all paths (classes "p99" and
 * "max"), on a logarithmic scale
 * so that a failover's stall and the steady state both show. Events are
 * vertical lines across both (class "event", data-kind down, back or
 * fault) with the event's text as their tooltip.
 *
 * Return: 0, or TOOL_EXIT_FAIL after printing why the file could not be
 * written.
 */
int bench_plot_svg(const char *file, const char *title,
		   const struct bench_series *s, const struct bench_res *res)
{
	double tmax = 0, ymax = 0, lmin = 1e30, lmax = 0, step, v, x, y;
	double lo, hi;
	size_t i, k;
	int width = pl_width(s, res);
	FILE *f;

	f = fopen(file, "w");
	if (!f) {
		tool_err("cannot write --plot '%s': %s", file, strerror(errno));
		return TOOL_EXIT_FAIL;
	}
	for (i = 0; i < s->n; i++) {
		const struct bench_sample *p = &s->samples[i];

		tmax = p->t > tmax ? p->t : tmax;
		ymax = p->iops > ymax ? p->iops : ymax;
		if (p->p99_us > 0) {
			lmin = p->p99_us < lmin ? p->p99_us : lmin;
			lmax = p->p99_us > lmax ? p->p99_us : lmax;
		}
		if (p->max_us > 0) {
			lmin = p->max_us < lmin ? p->max_us : lmin;
			lmax = p->max_us > lmax ? p->max_us : lmax;
		}
	}
	tmax = tmax > 0 ? ceil(tmax) : 1;
	ymax = ymax > 0 ? ymax * 1.1 : 1;
	lo = lmax > 0 ? pow(10, floor(log10(lmin))) : 1;
	hi = lmax > 0 ? pow(10, ceil(log10(lmax))) : 10;
	if (hi <= lo)
		hi = lo * 10;

#define PX(t) (PL_LEFT + (t) / tmax * (PL_W - PL_LEFT - PL_RIGHT))
#define PY_IOPS(v) (PL_IOPS_TOP + PL_IOPS_H - (v) / ymax * PL_IOPS_H)
#define PY_LAT(v)                \
	(PL_LAT_TOP + PL_LAT_H - \
	 (log10(v) - log10(lo)) / (log10(hi) - log10(lo)) * PL_LAT_H)

	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"%d\" y=\"24\" font-size=\"15\">",
		width, PL_H, width, PL_H, PL_LEFT);
	pl_text(f, title, 200);
	fprintf(f, "</text>\n");

	/* Axes and grid. */
	fprintf(f,
		"<g stroke=\"#999\" fill=\"none\">\n"
		"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n"
		"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n"
		"</g>\n",
		PL_LEFT, PL_IOPS_TOP, PL_W - PL_LEFT - PL_RIGHT, PL_IOPS_H,
		PL_LEFT, PL_LAT_TOP, PL_W - PL_LEFT - PL_RIGHT, PL_LAT_H);
	fprintf(f, "<text x=\"%d\" y=\"%d\">IOPS per path</text>\n", PL_LEFT,
		PL_IOPS_TOP - 8);
	fprintf(f,
		"<text x=\"%d\" y=\"%d\">p99 and longest latency per interval, all paths (us, log scale)</text>\n",
		PL_LEFT, PL_LAT_TOP - 8);
	step = pl_step(ymax);
	for (v = 0; v <= ymax; v += step)
		fprintf(f,
			"<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
			"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n",
			PL_LEFT, PL_W - PL_RIGHT, PY_IOPS(v), PY_IOPS(v),
			PL_LEFT - 6, PY_IOPS(v) + 4, v);
	for (v = lo; v <= hi * 1.001; v *= 10)
		fprintf(f,
			"<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
			"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n",
			PL_LEFT, PL_W - PL_RIGHT, PY_LAT(v), PY_LAT(v),
			PL_LEFT - 6, PY_LAT(v) + 4, v);
	step = pl_step(tmax);
	for (v = 0; v <= tmax + 1e-9; v += step)
		fprintf(f,
			"<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%gs</text>\n",
			PX(v), PL_LAT_TOP + PL_LAT_H + 16, v);

	/* The events, under the lines; their labels run up from the bottom
	 * of the IOPS panel, left of the marker. */
	for (i = 0; i < res->event_cnt; i++) {
		const struct ibtrs_event *ev = &res->events[i];
		const char *kind = pl_event_kind(ev);
		const char *color;
		double t;

		if (!kind || ev->ts_ns < s->start_real_ns)
			continue;
		t = (double)(ev->ts_ns - s->start_real_ns) / 1e9;
		if (t > tmax)
			continue;
		color = !strcmp(kind, "down")	? "#d62728"
			: !strcmp(kind, "back") ? "#2ca02c"
						: "#ff7f0e";
		x = PX(t);
		fprintf(f,
			"<line class=\"event\" data-kind=\"%s\" data-path=\"%d\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-dasharray=\"4 3\"><title>%.3fs path %d: ",
			kind, ev->path, x, x, PL_IOPS_TOP,
			PL_LAT_TOP + PL_LAT_H, color, t, ev->path);
		pl_text(f, ev->msg, sizeof(ev->msg));
		fprintf(f,
			"</title></line>\n"
			"<text x=\"%.1f\" y=\"%d\" fill=\"%s\" font-size=\"10\" transform=\"rotate(-90 %.1f %d)\">",
			x - 3, PL_IOPS_TOP + PL_IOPS_H - 4, color, x - 3,
			PL_IOPS_TOP + PL_IOPS_H - 4);
		if (ev->path >= 0)
			fprintf(f, "path %d %s", ev->path, kind);
		else
			fprintf(f, "session %s", kind);
		fprintf(f, "</text>\n");
	}

	/* Total IOPS, then one line per path. */
	fprintf(f,
		"<polyline class=\"total\" fill=\"none\" stroke=\"#bbb\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\" points=\"");
	for (i = 0; i < s->n; i++)
		fprintf(f, "%.1f,%.1f ", PX(s->samples[i].t),
			PY_IOPS(s->samples[i].iops));
	fprintf(f, "\"/>\n");
	for (k = 0; k < s->path_cnt; k++) {
		fprintf(f,
			"<polyline class=\"series\" data-path=\"%zu\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
			k, pl_colors[k % ARRAY_SIZE(pl_colors)]);
		for (i = 0; i < s->n; i++) {
			const struct bench_sample *p = &s->samples[i];

			if (k < p->path_cnt)
				fprintf(f, "%.1f,%.1f ", PX(p->t),
					PY_IOPS(p->path_iops[k]));
		}
		fprintf(f, "\"/>\n");
	}
	for (k = 0; k < 2; k++) {
		/* The longest under the p99, which is drawn over it. */
		bool mx = k == 0;

		fprintf(f,
			"<polyline class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"",
			mx ? "max" : "p99", mx ? "#9467bd" : "#333",
			mx ? "1.5" : "2",
			mx ? " stroke-dasharray=\"4 2\"" : "");
		for (i = 0; i < s->n; i++) {
			v = mx ? s->samples[i].max_us : s->samples[i].p99_us;
			if (v <= 0)
				continue;
			x = PX(s->samples[i].t);
			y = PY_LAT(v);
			fprintf(f, "%.1f,%.1f ", x, y);
		}
		fprintf(f, "\"/>\n");
	}

	/* Legend. */
	x = PL_W - PL_RIGHT + 16;
	for (k = 0; k < s->path_cnt; k++) {
		y = PL_IOPS_TOP + 10 + 20.0 * (double)k;
		fprintf(f,
			"<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>"
			"<text x=\"%.1f\" y=\"%.1f\">path %zu ",
			x, x + 20, y, y, pl_colors[k % ARRAY_SIZE(pl_colors)],
			x + 26, y + 4, k);
		if (k < res->path_cnt)
			pl_text(f, res->paths[k].addr,
				sizeof(res->paths[k].addr));
		fprintf(f, "</text>\n");
	}
	y = PL_IOPS_TOP + 10 + 20.0 * (double)s->path_cnt;
	fprintf(f,
		"<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#bbb\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>"
		"<text x=\"%.1f\" y=\"%.1f\">all paths</text>\n"
		"<text x=\"%.1f\" y=\"%.1f\" fill=\"#d62728\">- - path down</text>\n"
		"<text x=\"%.1f\" y=\"%.1f\" fill=\"#2ca02c\">- - path back</text>\n"
		"<text x=\"%.1f\" y=\"%.1f\" fill=\"#ff7f0e\">- - fault injected</text>\n",
		x, x + 20, y, y, x + 26, y + 4, x, y + 30, x, y + 48, x,
		y + 66);
	y = PL_LAT_TOP + 10;
	fprintf(f,
		"<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"2\"/>"
		"<text x=\"%.1f\" y=\"%.1f\">p99</text>\n"
		"<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#9467bd\" stroke-width=\"1.5\" stroke-dasharray=\"4 2\"/>"
		"<text x=\"%.1f\" y=\"%.1f\">longest</text>\n",
		x, x + 20, y, y, x + 26, y + 4, x, x + 20, y + 20, y + 20,
		x + 26, y + 24);
	fprintf(f, "</svg>\n");
#undef PX
#undef PY_IOPS
#undef PY_LAT
	if (fclose(f)) {
		tool_err("cannot write --plot '%s': %s", file, strerror(errno));
		return TOOL_EXIT_FAIL;
	}
	return 0;
}
