// SPDX-License-Identifier: MIT
/*
 * status.c - "ibtrs status": ask the control sockets of the processes that
 * use the library (ctlclient.c) and print a table, the answers as one JSON
 * array, or the Prometheus text exposition format (prom.c), once or every
 * few seconds.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctlclient.h"
#include "hist.h"
#include "status.h"
#include "table.h"
#include "tool.h"

/* Width the table keeps to without --wide. */
#define ST_NARROW 100
/* Events shown per session in the table. */
#define ST_EVENTS 5
/* Default --watch interval, seconds. */
#define ST_WATCH_DEFAULT 1.0

enum st_format {
	ST_TABLE,
	ST_JSON,
	ST_PROM,
};

/* A single table call samples twice this far apart for its rates. */
#define ST_RATE_MS 500

/**
 * struct st_view - how the table is drawn
 * @wide: every column (--wide); else those that fit 100 columns
 * @prev: the processes as read the interval before, for the rates; NULL
 *        for none
 * @dt: seconds between @prev and the set drawn
 */
struct st_view {
	bool wide;
	const struct st_set *prev;
	double dt;
};

/**
 * st_prev_path() - a path as it was the interval before
 * @v: the view
 * @pid: the process
 * @sess: the session name
 * @idx: the path index
 *
 * Return: the path object of the previous read, or NULL.
 */
static const struct jval *st_prev_path(const struct st_view *v, pid_t pid,
				       const char *sess, uint64_t idx)
{
	const struct jval *clients, *paths;
	size_t i, k, n;

	for (i = 0; v->prev && i < v->prev->n; i++) {
		if (v->prev->procs[i].pid != pid)
			continue;
		clients = jget(v->prev->procs[i].doc, "clients");
		n = clients && clients->type == JT_ARR ? clients->n : 0;
		for (k = 0; k < n; k++) {
			const struct jval *c = &clients->items[k];
			size_t j;

			if (strcmp(jget_str(c, "sessname", ""), sess))
				continue;
			paths = jget(c, "paths");
			for (j = 0;
			     paths && paths->type == JT_ARR && j < paths->n;
			     j++)
				if (jget_u64(&paths->items[j], "idx", j) == idx)
					return &paths->items[j];
		}
	}
	return NULL;
}

/**
 * st_rates() - IOPS and MB/s of a path over the last interval
 * @v: the view
 * @pid: the process
 * @sess: the session name
 * @p: the path now
 * @iops: filled with the text of the IOPS, "-" without a previous read
 * @mbps: filled with the text of the MB/s, "-" likewise
 */
static void st_rates(const struct st_view *v, pid_t pid, const char *sess,
		     const struct jval *p, char *iops, char *mbps)
{
	const struct jval *q =
		st_prev_path(v, pid, sess, jget_u64(p, "idx", 0));
	uint64_t ops, bytes, pops, pbytes;

	strcpy(iops, "-");
	strcpy(mbps, "-");
	if (!q || v->dt <= 0)
		return;
	ops = jget_u64(p, "rd_ops", 0) + jget_u64(p, "wr_ops", 0);
	bytes = jget_u64(p, "rd_bytes", 0) + jget_u64(p, "wr_bytes", 0);
	pops = jget_u64(q, "rd_ops", 0) + jget_u64(q, "wr_ops", 0);
	pbytes = jget_u64(q, "rd_bytes", 0) + jget_u64(q, "wr_bytes", 0);
	/* A stats reset in between: no rate rather than a wrong one. */
	if (ops < pops || bytes < pbytes)
		return;
	st_human_count(iops, ST_CELL,
		       (uint64_t)((double)(ops - pops) / v->dt + 0.5));
	snprintf(mbps, ST_CELL, "%.1f", (double)(bytes - pbytes) / v->dt / 1e6);
}

/**
 * st_interval_lat() - latency percentiles of a path over the last interval
 * @v: the view
 * @pid: the process
 * @sess: the session name
 * @p: the path now
 * @lat: filled with p50, p99 and the maximum in microseconds (0 for each
 *       when nothing completed in the interval)
 *
 * The library's percentiles are since the start: one slow interval after
 * a million fast requests does not move them. The difference of the two
 * reads' histograms is what completed in between.
 *
 * Return: the requests that completed in the interval, 0 without a
 * previous read (or across a stats reset, where the counts dropped).
 */
static uint64_t st_interval_lat(const struct st_view *v, pid_t pid,
				const char *sess, const struct jval *p,
				uint64_t lat[3])
{
	static const double qs[3] = { 0.50, 0.99, 1.0 };
	const struct jval *q =
		st_prev_path(v, pid, sess, jget_u64(p, "idx", 0));
	uint64_t now[IBTRS_HIST_BUCKETS], before[IBTRS_HIST_BUCKETS];
	uint64_t total = 0;
	unsigned int i;

	memset(lat, 0, 3 * sizeof(*lat));
	if (!q || !st_hist_counts(p, now) || !st_hist_counts(q, before))
		return 0;
	for (i = 0; i < IBTRS_HIST_BUCKETS; i++) {
		if (now[i] < before[i])
			return 0;
		now[i] -= before[i];
		total += now[i];
	}
	for (i = 0; total && i < ARRAY_SIZE(qs); i++)
		lat[i] = hist_quantile(now, IBTRS_HIST_BUCKETS, IBTRS_HIST_BITS,
				       qs[i]) /
			 1000;
	return total;
}

/* ------------------------------------------------------------------ */
/* table output                                                         */

/**
 * st_src_dst() - "SRC->DST" of a path, DST alone without a source
 * @buf: output
 * @size: size of @buf
 * @path: the path object
 *
 * A source address without a port (":0") is shown without it.
 */
static void st_src_dst(char *buf, size_t size, const struct jval *path)
{
	const char *src = jget_str(path, "src", "");
	const char *dst = jget_str(path, "dst", "?");
	size_t n = strlen(src);

	if (n > 2 && !strcmp(src + n - 2, ":0"))
		n -= 2;
	if (n)
		snprintf(buf, size, "%.*s->%s", (int)n, src, dst);
	else
		snprintf(buf, size, "%s", dst);
}

/**
 * st_print_events() - the last ST_EVENTS events of a session
 * @f: output stream
 * @wide: whole lines; else each cut to ST_NARROW columns
 * @events: the array of events, oldest first
 */
static void st_print_events(FILE *f, bool wide, const struct jval *events)
{
	size_t i, first;

	if (!events || events->type != JT_ARR || !events->n)
		return;
	first = events->n > ST_EVENTS ? events->n - ST_EVENTS : 0;
	fprintf(f, "    last events:\n");
	for (i = first; i < events->n; i++) {
		const struct jval *ev = &events->items[i];
		double ts = jget_num(ev, "ts", 0);
		const struct jval *path = jget(ev, "path");
		time_t sec = (time_t)ts;
		char when[16] = "??:??:??";
		struct tm tm;

		if (ts > 0 && localtime_r(&sec, &tm))
			strftime(when, sizeof(when), "%H:%M:%S", &tm);
		char line[ST_CELL * 2];
		int n;

		n = snprintf(line, sizeof(line), "      %s.%03u  ", when,
			     (unsigned int)((ts - floor(ts)) * 1000) % 1000);
		if (path && path->type == JT_NUM && path->num >= 0)
			n += snprintf(line + n, sizeof(line) - (size_t)n,
				      "path %.0f: ", path->num);
		else
			n += snprintf(line + n, sizeof(line) - (size_t)n,
				      "session: ");
		snprintf(line + n, sizeof(line) - (size_t)n, "%s",
			 jget_str(ev, "msg", ""));
		if (!wide && strlen(line) > ST_NARROW)
			strcpy(line + ST_NARROW - 3, "...");
		fprintf(f, "%s\n", line);
	}
}

/*
 * The path columns. The narrow set fits 100 columns with the usual
 * addresses; --wide adds the cumulative counters and percentiles. The
 * rates and P50, P99 and MAX are of the last interval (the difference of
 * two reads), the ALL- percentiles since the start or the last reset.
 */
enum {
	COL_IDX,
	COL_STATE,
	COL_ADDR,
	COL_INFLT,
	COL_IOPS,
	COL_MBPS,
	COL_RD_OPS,
	COL_RD_BYTES,
	COL_WR_OPS,
	COL_WR_BYTES,
	COL_ERR,
	COL_FAILOV,
	COL_RECON,
	COL_HB_RTT,
	COL_P50,
	COL_P99,
	COL_MAX,
	COL_ALL_P50,
	COL_ALL_P99,
	COL_ALL_P999,
	COL_ALL_MAX,
	NR_COLS,
};

_Static_assert(NR_COLS <= ST_COLS, "the path table has too many columns");

static const char *const st_col_head[NR_COLS] = {
	"IDX",	   "STATE",	"SRC->DST", "INFLT",	"IOPS", "MB/S",
	"RD-OPS",  "RD-BYTES",	"WR-OPS",   "WR-BYTES", "ERR",	"FAILOV",
	"RECON",   "HB-RTT",	"P50",	    "P99",	"MAX",	"ALL-P50",
	"ALL-P99", "ALL-P99.9", "ALL-MAX",
};

static const bool st_col_narrow[NR_COLS] = {
	[COL_IDX] = true,   [COL_STATE] = true,	 [COL_ADDR] = true,
	[COL_INFLT] = true, [COL_IOPS] = true,	 [COL_MBPS] = true,
	[COL_ERR] = true,   [COL_FAILOV] = true, [COL_HB_RTT] = true,
	[COL_P99] = true,
};

/**
 * st_path_mark() - the state of a path as the table shows it
 * @buf: output, ST_CELL bytes
 * @p: the path
 *
 * A path that is not carrying I/O is marked with a '!' so that it stands
 * out in a column of "connected": one in another state, and a connected
 * one the library demoted as sick (it gets probes only), "demoted!".
 */
static void st_path_mark(char *buf, const struct jval *p)
{
	const char *state = jget_str(p, "state", "?");
	const struct jval *demoted = jget(p, "demoted");

	if (!strcmp(state, "connected") && demoted &&
	    demoted->type == JT_BOOL && demoted->b)
		state = "demoted";
	snprintf(buf, ST_CELL, "%s%s", state,
		 strcmp(state, "connected") ? "!" : "");
}

/*
 * Why the paths marked "demoted!" are: the reason the library gave
 * ("slow", "lossy") and how often it demoted them.
 */
static void st_print_demoted(FILE *f, const struct jval *paths)
{
	size_t i;

	for (i = 0; i < paths->n; i++) {
		const struct jval *p = &paths->items[i];
		const struct jval *d = jget(p, "demoted");
		const char *why = jget_str(p, "demote_reason", "");

		if (!d || d->type != JT_BOOL || !d->b)
			continue;
		fprintf(f,
			"    path %llu demoted%s%s: probes only until it recovers (demotions %llu)\n",
			(unsigned long long)jget_u64(p, "idx", i),
			why[0] ? " as " : "", why,
			(unsigned long long)jget_u64(p, "demotions", 0));
	}
}

/*
 * A client session's at-most-once state: the server session it is on,
 * the session losses (a rejoin that found another incarnation) and what
 * became of the requests then in flight; protocol errors of its paths.
 */
static void st_print_amo(FILE *f, const struct jval *c)
{
	if (!jget_has(c, "session_losses"))
		return;
	fprintf(f,
		"    incarnation %s  losses %llu  unknown outcome %llu  replayed %llu  proto errors %llu\n",
		jget_str(c, "incarnation", "")[0]
			? jget_str(c, "incarnation", "")
			: "-",
		(unsigned long long)jget_u64(c, "session_losses", 0),
		(unsigned long long)jget_u64(c, "unknown_outcome", 0),
		(unsigned long long)jget_u64(c, "replayed_after_loss", 0),
		(unsigned long long)jget_u64(c, "proto_errors", 0));
	if (jget_str(c, "last_session_loss", "")[0])
		fprintf(f, "    last loss: %s\n",
			jget_str(c, "last_session_loss", ""));
}

/*
 * The session's TLS as its first connected path reports it (one session
 * has one TLS setting), e.g. "tls1.3 aes-128-gcm user-space"; "" for
 * none (plaintext, or no path connected). The session line says
 * "tls1.3" only, to stay within 100 columns; --wide has a line per path.
 */
static const char *st_tls(const struct jval *c)
{
	const struct jval *paths = jget(c, "paths");
	size_t i;

	for (i = 0; paths && paths->type == JT_ARR && i < paths->n; i++) {
		const char *tls = jget_str(&paths->items[i], "tls", "");

		if (tls[0])
			return strcmp(tls, "off") ? tls : "";
	}
	return "";
}

static void st_print_client(FILE *f, const struct st_view *v, pid_t pid,
			    const struct jval *c)
{
	static const bool right_all[NR_COLS] = {
		[COL_IDX] = true,     [COL_INFLT] = true,
		[COL_IOPS] = true,    [COL_MBPS] = true,
		[COL_RD_OPS] = true,  [COL_RD_BYTES] = true,
		[COL_WR_OPS] = true,  [COL_WR_BYTES] = true,
		[COL_ERR] = true,     [COL_FAILOV] = true,
		[COL_RECON] = true,   [COL_HB_RTT] = true,
		[COL_P50] = true,     [COL_P99] = true,
		[COL_MAX] = true,     [COL_ALL_P50] = true,
		[COL_ALL_P99] = true, [COL_ALL_P999] = true,
		[COL_ALL_MAX] = true,
	};
	const char *head[NR_COLS];
	bool right[NR_COLS];
	unsigned int map[NR_COLS], ncols = 0, col;
	struct st_table t = { .head = head, .right = right };
	const struct jval *paths = jget(c, "paths");
	const char *sess = jget_str(c, "sessname", "?");
	char qd[32], mio[32];
	size_t i;

	for (col = 0; col < NR_COLS; col++) {
		if (!v->wide && !st_col_narrow[col])
			continue;
		head[ncols] = st_col_head[col];
		right[ncols] = right_all[col];
		map[col] = ncols++;
	}
	t.ncols = ncols;
	snprintf(qd, sizeof(qd), "%llu",
		 (unsigned long long)jget_u64(c, "queue_depth", 0));
	st_human_bytes(mio, sizeof(mio), jget_u64(c, "max_io_size", 0));
	fprintf(f,
		"  session %s  policy %s  qd %s  max io %s  backend %s%s%s\n",
		sess, jget_str(c, "policy", "?"), qd, mio,
		jget_str(c, "backend", "?"), st_tls(c)[0] ? "  " : "",
		st_tls(c)[0] ? "tls1.3" : "");
	st_print_amo(f, c);
	if (!paths || paths->type != JT_ARR || !paths->n) {
		fprintf(f, "    no paths\n");
		st_print_events(f, v->wide, jget(c, "events"));
		return;
	}
	for (i = 0; i < paths->n; i++) {
		const struct jval *p = &paths->items[i];
		const struct jval *lat = jget(p, "lat_us");
		char cell[NR_COLS][ST_CELL];
		char(*r)[ST_CELL] = st_row(&t);
		uint64_t ilat[3];
		size_t k;

		if (!r)
			break;
		snprintf(cell[COL_IDX], ST_CELL, "%llu",
			 (unsigned long long)jget_u64(p, "idx", i));
		st_path_mark(cell[COL_STATE], p);
		st_src_dst(cell[COL_ADDR], ST_CELL, p);
		snprintf(cell[COL_INFLT], ST_CELL, "%llu",
			 (unsigned long long)jget_u64(p, "inflight", 0));
		st_rates(v, pid, sess, p, cell[COL_IOPS], cell[COL_MBPS]);
		st_human_count(cell[COL_RD_OPS], ST_CELL,
			       jget_u64(p, "rd_ops", 0));
		st_human_bytes(cell[COL_RD_BYTES], ST_CELL,
			       jget_u64(p, "rd_bytes", 0));
		st_human_count(cell[COL_WR_OPS], ST_CELL,
			       jget_u64(p, "wr_ops", 0));
		st_human_bytes(cell[COL_WR_BYTES], ST_CELL,
			       jget_u64(p, "wr_bytes", 0));
		st_human_count(cell[COL_ERR], ST_CELL,
			       jget_u64(p, "errors", 0));
		st_human_count(cell[COL_FAILOV], ST_CELL,
			       jget_u64(p, "failovers", 0));
		snprintf(cell[COL_RECON], ST_CELL, "%llu/%llu",
			 (unsigned long long)jget_u64(p, "reconnects", 0),
			 (unsigned long long)jget_u64(p, "reconnect_attempts",
						      0));
		st_human_us(cell[COL_HB_RTT], ST_CELL,
			    jget_u64(p, "hb_rtt_us", 0));
		/* Something completed under 1 us is not "nothing". */
		if (st_interval_lat(v, pid, sess, p, ilat))
			for (k = 0; k < ARRAY_SIZE(ilat); k++)
				ilat[k] = ilat[k] ? ilat[k] : 1;
		st_human_us(cell[COL_P50], ST_CELL, ilat[0]);
		st_human_us(cell[COL_P99], ST_CELL, ilat[1]);
		st_human_us(cell[COL_MAX], ST_CELL, ilat[2]);
		st_human_us(cell[COL_ALL_P50], ST_CELL,
			    jget_u64(lat, "p50", 0));
		st_human_us(cell[COL_ALL_P99], ST_CELL,
			    jget_u64(lat, "p99", 0));
		st_human_us(cell[COL_ALL_P999], ST_CELL,
			    jget_u64(lat, "p999", 0));
		st_human_us(cell[COL_ALL_MAX], ST_CELL,
			    jget_u64(lat, "max", 0));
		for (col = 0; col < NR_COLS; col++)
			if (v->wide || st_col_narrow[col])
				memcpy(r[map[col]], cell[col], ST_CELL);
	}
	st_table_print(f, &t, "    ");
	st_print_demoted(f, paths);
	/* --wide: what protects each path, where something does. */
	for (i = 0; v->wide && i < paths->n; i++) {
		const char *tls = jget_str(&paths->items[i], "tls", "");

		if (tls[0] && strcmp(tls, "off"))
			fprintf(f, "    path %llu: %s\n",
				(unsigned long long)jget_u64(&paths->items[i],
							     "idx", i),
				tls);
	}
	st_print_events(f, v->wide, jget(c, "events"));
}

static void st_print_server(FILE *f, bool wide, const struct jval *s)
{
	uint64_t kept_ms = 0, nloops;
	size_t kept = 0;
	static const char *const head[] = { "PEER",    "STATE",	   "CONS",
					    "RD-OPS",  "RD-BYTES", "WR-OPS",
					    "WR-BYTES" };
	static const bool right[] = {
		false, false, true, true, true, true, true
	};
	struct st_table t = { .ncols = ARRAY_SIZE(head),
			      .head = head,
			      .right = right };
	const struct jval *sessions = jget(s, "sessions");
	char mio[32];
	size_t i, k;

	st_human_bytes(mio, sizeof(mio), jget_u64(s, "max_io_size", 0));
	nloops = jget_u64(s, "loops", 1);
	fprintf(f,
		"  server port %llu  queue depth %llu  max io %s  backend %s",
		(unsigned long long)jget_u64(s, "port", 0),
		(unsigned long long)jget_u64(s, "queue_depth", 0), mio,
		jget_str(s, "backend", "?"));
	if (nloops > 1)
		fprintf(f, "  loops %llu", (unsigned long long)nloops);
	fprintf(f,
		"\n"
		"    requests %llu  replays %llu  stale %llu  busy %llu  "
		"proto errors %llu\n",
		(unsigned long long)jget_u64(s, "requests", 0),
		(unsigned long long)jget_u64(s, "replays", 0),
		(unsigned long long)jget_u64(s, "stale", 0),
		(unsigned long long)jget_u64(s, "busy", 0),
		(unsigned long long)jget_u64(s, "proto_errors", 0));
	if (!sessions || sessions->type != JT_ARR || !sessions->n) {
		fprintf(f, "    no sessions\n");
		return;
	}
	for (i = 0; i < sessions->n; i++) {
		const struct jval *se = &sessions->items[i];
		const struct jval *paths = jget(se, "paths");

		/* Many kept sessions of one name (a client that comes and
		 * goes) are one line unless --wide lists them. */
		if (!wide && jget_has(se, "grace_ms_left")) {
			kept++;
			if (jget_u64(se, "grace_ms_left", 0) > kept_ms)
				kept_ms = jget_u64(se, "grace_ms_left", 0);
			continue;
		}
		/* The UUID's start tells sessions of one name apart. */
		fprintf(f, "    session %s (%.8s)",
			jget_str(se, "sessname", "?"),
			jget_str(se, "uuid", "?"));
		if (nloops > 1)
			fprintf(f, "  loop %llu",
				(unsigned long long)jget_u64(se, "loop", 0));
		if (jget_has(se, "grace_ms_left"))
			fprintf(f, "  no paths, kept %.1f s more",
				(double)jget_u64(se, "grace_ms_left", 0) /
					1000);
		fputc('\n', f);
		if (jget_has(se, "incarnation"))
			fprintf(f, "      incarnation %s  proto errors %llu\n",
				jget_str(se, "incarnation", "?"),
				(unsigned long long)jget_u64(se, "proto_errors",
							     0));
		if (!paths || paths->type != JT_ARR || !paths->n) {
			if (!jget_has(se, "grace_ms_left"))
				fprintf(f, "      no paths\n");
			continue;
		}
		for (k = 0; k < paths->n; k++) {
			const struct jval *p = &paths->items[k];
			char(*r)[ST_CELL] = st_row(&t);

			if (!r)
				break;
			snprintf(r[0], ST_CELL, "%s", jget_str(p, "peer", "?"));
			snprintf(r[1], ST_CELL, "%s",
				 jget_str(p, "state", "?"));
			snprintf(r[2], ST_CELL, "%llu",
				 (unsigned long long)jget_u64(p, "cons", 0));
			st_human_count(r[3], ST_CELL, jget_u64(p, "rd_ops", 0));
			st_human_bytes(r[4], ST_CELL,
				       jget_u64(p, "rd_bytes", 0));
			st_human_count(r[5], ST_CELL, jget_u64(p, "wr_ops", 0));
			st_human_bytes(r[6], ST_CELL,
				       jget_u64(p, "wr_bytes", 0));
		}
		st_table_print(f, &t, "      ");
	}
	if (kept)
		fprintf(f,
			"    %zu session%s without paths, kept for their clients up to %.1f s more (--wide lists them)\n",
			kept, kept == 1 ? "" : "s", (double)kept_ms / 1000);
}

/**
 * st_check_dir() - warn about a control directory processes refuse
 * @dir: the control directory
 *
 * A process opens its control socket only in a directory of its user
 * closed to others (see ibtrs(7)); in another it runs without one, and
 * "status" cannot see it. Said on stderr, so the table stays as it is.
 */
static void st_check_dir(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st))
		return;
	if (!S_ISDIR(st.st_mode))
		tool_err(
			"%s is not a directory: processes open no control socket",
			dir);
	else if (st.st_uid != geteuid() || (st.st_mode & 077))
		tool_err(
			"%s has uid %u, mode %04o: processes of uid %u refuse it (mode 0700 needed) and open no control socket",
			dir, (unsigned int)st.st_uid,
			(unsigned int)(st.st_mode & 07777),
			(unsigned int)geteuid());
}

static void st_print_table(FILE *f, const struct st_view *v,
			   const struct st_set *set)
{
	size_t i, k;

	if (!set->n) {
		char dir[PATH_MAX] = "?";

		ibtrs_control_dir(dir, sizeof(dir));
		st_check_dir(dir);
		/* Where it looked: the sockets of other users are elsewhere
		 * (root's in /run/ibtrs) and closed to this one. */
		fprintf(f, "no ibtrs processes in %s%s\n", dir,
			geteuid() ? " (those of other users are not visible)"
				  : "");
		return;
	}
	for (i = 0; i < set->n; i++) {
		const struct jval *doc = set->procs[i].doc;
		const struct jval *clients = jget(doc, "clients");
		const struct jval *servers = jget(doc, "servers");
		bool any = false;

		if (i)
			fputc('\n', f);
		fprintf(f, "process %d (%s)\n", (int)set->procs[i].pid,
			jget_str(doc, "comm", "?"));
		for (k = 0;
		     clients && clients->type == JT_ARR && k < clients->n;
		     k++, any = true)
			st_print_client(f, v, set->procs[i].pid,
					&clients->items[k]);
		for (k = 0;
		     servers && servers->type == JT_ARR && k < servers->n;
		     k++, any = true)
			st_print_server(f, v->wide, &servers->items[k]);
		if (!any)
			fprintf(f, "  no sessions\n");
	}
}

/* ------------------------------------------------------------------ */
/* JSON output                                                          */

static void st_print_json(FILE *f, const struct st_set *set)
{
	size_t i;

	fputc('[', f);
	for (i = 0; i < set->n; i++)
		fprintf(f, "%s%s", i ? "," : "", set->procs[i].raw);
	fputs("]\n", f);
}

/* ------------------------------------------------------------------ */
/* ibtrs status                                                         */

/**
 * usage_status() - print the help of "ibtrs status"
 * @f: output stream
 */
void usage_status(FILE *f)
{
	fprintf(f,
		"Usage: %s status [--json | --format table|json|prometheus]\n"
		"                    [--watch [SEC]] [--wide] [--pid PID] [--verbose]\n"
		"\n"
		"Show every process using libibtrs (found by its control socket in\n"
		"$IBTRS_RUNTIME_DIR, /run/ibtrs for root, $XDG_RUNTIME_DIR/ibtrs or\n"
		"/tmp/ibtrs-UID): its client sessions with their paths, counters,\n"
		"latencies and last events, and its server contexts with their\n"
		"sessions. Sockets of processes that are gone are removed.\n"
		"\n"
		"Options:\n"
		"  -j, --json             same as --format json\n"
		"  -f, --format FMT       table (default), json (one array of the\n"
		"                         processes' answers, one line) or prometheus\n"
		"                         (text exposition format)\n"
		"  -w, --watch [SEC]      print again every SEC seconds (default %g)\n"
		"                         until interrupted\n"
		"      --pid PID          only the process PID\n"
		"      --wide             every column of the table (default: those\n"
		"                         that fit 100 columns)\n"
		"  -v, --verbose          say which sockets are skipped and why\n"
		"  -h, --help             show this help\n"
		"\n"
		"Every process has %u s to answer. Exit status: 0, or 1 when a\n"
		"process did not answer (the others are shown) or --pid names no\n"
		"process; 2 for usage errors.\n",
		TOOL_NAME, ST_WATCH_DEFAULT, ST_QUERY_TIMEOUT_MS / 1000);
}

/**
 * st_render() - one document of "ibtrs status"
 * @f: output stream
 * @fmt: the format
 * @v: how the table is drawn
 * @set: the processes
 */
static void st_render(FILE *f, enum st_format fmt, const struct st_view *v,
		      const struct st_set *set)
{
	switch (fmt) {
	case ST_TABLE:
		st_print_table(f, v, set);
		break;
	case ST_JSON:
		st_print_json(f, set);
		break;
	case ST_PROM:
		st_print_prom(f, set);
		break;
	}
}

/**
 * st_output() - write a rendered document to stdout
 * @doc: the text
 * @len: its length
 * @clear: clear the terminal first
 *
 * Return: 0, or TOOL_EXIT_FAIL when stdout cannot be written (an error was
 * printed, unless the reader went away).
 */
static int st_output(const char *doc, size_t len, bool clear)
{
	if (clear)
		fputs("\033[H\033[2J", stdout);
	if (len)
		fwrite(doc, 1, len, stdout);
	if (fflush(stdout) || ferror(stdout)) {
		if (errno != EPIPE)
			tool_err("cannot write the output: %s",
				 strerror(errno));
		return TOOL_EXIT_FAIL;
	}
	return 0;
}

/**
 * st_parse_format() - the value of --format
 * @s: the text
 * @fmt: filled on success
 *
 * Return: 0, or -EINVAL.
 */
static int st_parse_format(const char *s, enum st_format *fmt)
{
	if (!strcmp(s, "table"))
		*fmt = ST_TABLE;
	else if (!strcmp(s, "json"))
		*fmt = ST_JSON;
	else if (!strcmp(s, "prometheus") || !strcmp(s, "prom"))
		*fmt = ST_PROM;
	else
		return -EINVAL;
	return 0;
}

/**
 * cmd_status() - "ibtrs status"
 * @argc: argument count, argv[0] is "status"
 * @argv: arguments
 *
 * Return: exit status.
 */
int cmd_status(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "format", required_argument, NULL, 'f' },
		{ "watch", optional_argument, NULL, 'w' },
		{ "pid", required_argument, NULL, 'P' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "wide", no_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct st_set prev = { 0 };
	struct st_view view = { .prev = NULL };
	uint64_t prev_ns = 0, now_ns;
	enum st_format fmt = ST_TABLE;
	double interval = ST_WATCH_DEFAULT;
	bool watch = false, verbose = false, tty;
	uint64_t next;
	pid_t only = 0;
	int c, ret;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":jf:w::vh", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'j':
			fmt = ST_JSON;
			break;
		case 'f':
			if (st_parse_format(optarg, &fmt)) {
				tool_err(
					"invalid --format '%s': expected table, json or prometheus",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			break;
		case 'w':
			watch = true;
			/* "--watch 2" as well as "--watch=2" and "-w2". */
			if (!optarg && optind < argc &&
			    argv[optind][0] != '-') {
				optarg = argv[optind++];
			}
			if (optarg && tool_parse_seconds(optarg, &interval)) {
				tool_err(
					"invalid --watch '%s': expected seconds, e.g. 2 or 0.5",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			break;
		case 'P':
			ret = st_parse_pid(optarg, &only);
			if (ret)
				return ret;
			break;
		case 'v':
			verbose = true;
			break;
		case 'W':
			view.wide = true;
			break;
		case 'h':
			usage_status(stdout);
			return TOOL_EXIT_OK;
		default:
			return tool_opt_error("status", c, argv, longopts);
		}
	}
	if (optind < argc) {
		tool_err("unexpected argument '%s' (try '%s status --help')",
			 argv[optind], TOOL_NAME);
		return TOOL_EXIT_USAGE;
	}

	tty = isatty(STDOUT_FILENO);
	next = tool_now_ns();
	for (;;) {
		struct st_set set;
		unsigned int failed;
		char *doc = NULL;
		size_t len = 0;
		FILE *mem;
		int wait_ms;

		/*
		 * The table's rates are over the last interval: with --watch
		 * the one between two redraws, else a first read ST_RATE_MS
		 * before (interrupted, the rates are "-").
		 */
		/* The first read says what --verbose says (it removes the
		 * stale sockets), the second what fails. */
		if (fmt == ST_TABLE && !watch && !prev_ns) {
			if (st_collect(&prev, only, verbose, true) == 0) {
				prev_ns = tool_now_ns();
				tool_signal_wait(ST_RATE_MS, NULL);
			}
			verbose = false;
		}
		if (st_collect(&set, only, verbose, false)) {
			st_set_free(&prev);
			return TOOL_EXIT_FAIL;
		}
		now_ns = tool_now_ns();
		if (prev_ns) {
			view.prev = &prev;
			view.dt = (double)(now_ns - prev_ns) / 1e9;
		}
		failed = set.failed;
		if (only && failed && !watch) {
			/* The one process asked for is not there. */
			st_set_free(&set);
			st_set_free(&prev);
			return TOOL_EXIT_FAIL;
		}
		/* Render first, then write at once: no flicker. */
		mem = open_memstream(&doc, &len);
		if (!mem) {
			st_set_free(&set);
			st_set_free(&prev);
			tool_err("out of memory");
			return TOOL_EXIT_FAIL;
		}
		if (watch && tty && fmt == ST_TABLE) {
			time_t now = time(NULL);
			char when[32] = "";
			struct tm tm;

			if (localtime_r(&now, &tm))
				strftime(when, sizeof(when), "%H:%M:%S", &tm);
			fprintf(mem, "Every %gs: %s status  %s\n\n", interval,
				TOOL_NAME, when);
		}
		st_render(mem, fmt, &view, &set);
		/* This read is the next interval's start. */
		st_set_free(&prev);
		prev = set;
		prev_ns = now_ns;
		if (fclose(mem)) {
			st_set_free(&prev);
			free(doc);
			tool_err("out of memory");
			return TOOL_EXIT_FAIL;
		}
		ret = st_output(doc, len, watch && tty && fmt == ST_TABLE);
		free(doc);
		if (ret || !watch)
			st_set_free(&prev);
		if (ret)
			return ret;
		if (!watch)
			return failed ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
		/* The next redraw is due SEC after the last one was. */
		next += (uint64_t)(interval * 1e9);
		wait_ms = st_ms_left(next);
		if (!wait_ms)
			next = tool_now_ns();
		if (tool_signal_wait(wait_ms, NULL)) {
			st_set_free(&prev);
			return TOOL_EXIT_OK;
		}
		/* Documents of a table or metrics: a blank line between. */
		if (!tty && fmt != ST_JSON && st_output("\n", 1, false)) {
			st_set_free(&prev);
			return TOOL_EXIT_FAIL;
		}
	}
}
