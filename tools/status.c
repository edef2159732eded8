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
#include <time.h>
#include <unistd.h>

#include "ctlclient.h"
#include "status.h"
#include "table.h"
#include "tool.h"

/* Events shown per session in the table. */
#define ST_EVENTS 5
/* Default --watch interval, seconds. */
#define ST_WATCH_DEFAULT 1.0

enum st_format {
	ST_TABLE,
	ST_JSON,
	ST_PROM,
};

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
 * @events: the array of events, oldest first
 */
static void st_print_events(FILE *f, const struct jval *events)
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
		fprintf(f, "      %s.%03u  ", when,
			(unsigned int)((ts - floor(ts)) * 1000) % 1000);
		if (path && path->type == JT_NUM && path->num >= 0)
			fprintf(f, "path %.0f: ", path->num);
		else
			fputs("session: ", f);
		fprintf(f, "%s\n", jget_str(ev, "msg", ""));
	}
}

static void st_print_client(FILE *f, const struct jval *c)
{
	static const char *const head[] = {
		"IDX",	    "STATE",  "SRC->DST", "INFLT", "RD-OPS",
		"RD-BYTES", "WR-OPS", "WR-BYTES", "ERR",   "FAILOV",
		"RECON",    "HB-RTT", "P50",	  "P99",   "P99.9",
	};
	static const bool right[] = { true, false, false, true, true,
				      true, true,  true,  true, true,
				      true, true,  true,  true, true };
	struct st_table t = { .ncols = ARRAY_SIZE(head),
			      .head = head,
			      .right = right };
	const struct jval *paths = jget(c, "paths");
	char qd[32], mio[32];
	size_t i;

	snprintf(qd, sizeof(qd), "%llu",
		 (unsigned long long)jget_u64(c, "queue_depth", 0));
	st_human_bytes(mio, sizeof(mio), jget_u64(c, "max_io_size", 0));
	fprintf(f,
		"  session %s  policy %s  queue depth %s  max io %s  backend %s\n",
		jget_str(c, "sessname", "?"), jget_str(c, "policy", "?"), qd,
		mio, jget_str(c, "backend", "?"));
	if (!paths || paths->type != JT_ARR || !paths->n) {
		fprintf(f, "    no paths\n");
	} else {
		for (i = 0; i < paths->n; i++) {
			const struct jval *p = &paths->items[i];
			const struct jval *lat = jget(p, "lat_us");
			char(*r)[ST_CELL] = st_row(&t);

			if (!r)
				break;
			snprintf(r[0], ST_CELL, "%llu",
				 (unsigned long long)jget_u64(p, "idx", i));
			snprintf(r[1], ST_CELL, "%s",
				 jget_str(p, "state", "?"));
			st_src_dst(r[2], ST_CELL, p);
			snprintf(r[3], ST_CELL, "%llu",
				 (unsigned long long)jget_u64(p, "inflight",
							      0));
			st_human_count(r[4], ST_CELL, jget_u64(p, "rd_ops", 0));
			st_human_bytes(r[5], ST_CELL,
				       jget_u64(p, "rd_bytes", 0));
			st_human_count(r[6], ST_CELL, jget_u64(p, "wr_ops", 0));
			st_human_bytes(r[7], ST_CELL,
				       jget_u64(p, "wr_bytes", 0));
			st_human_count(r[8], ST_CELL, jget_u64(p, "errors", 0));
			st_human_count(r[9], ST_CELL,
				       jget_u64(p, "failovers", 0));
			snprintf(r[10], ST_CELL, "%llu/%llu",
				 (unsigned long long)jget_u64(p, "reconnects",
							      0),
				 (unsigned long long)jget_u64(
					 p, "reconnect_attempts", 0));
			st_human_us(r[11], ST_CELL,
				    jget_u64(p, "hb_rtt_us", 0));
			st_human_us(r[12], ST_CELL, jget_u64(lat, "p50", 0));
			st_human_us(r[13], ST_CELL, jget_u64(lat, "p99", 0));
			st_human_us(r[14], ST_CELL, jget_u64(lat, "p999", 0));
		}
		st_table_print(f, &t, "    ");
	}
	st_print_events(f, jget(c, "events"));
}

static void st_print_server(FILE *f, const struct jval *s)
{
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
	fprintf(f,
		"  server port %llu  queue depth %llu  max io %s  backend %s\n"
		"    requests %llu  replays %llu  stale %llu  busy %llu  "
		"proto errors %llu\n",
		(unsigned long long)jget_u64(s, "port", 0),
		(unsigned long long)jget_u64(s, "queue_depth", 0), mio,
		jget_str(s, "backend", "?"),
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

		fprintf(f, "    session %s", jget_str(se, "sessname", "?"));
		if (jget_has(se, "grace_ms_left"))
			fprintf(f, "  no paths, kept %.1f s more",
				(double)jget_u64(se, "grace_ms_left", 0) /
					1000);
		fputc('\n', f);
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
}

static void st_print_table(FILE *f, const struct st_set *set)
{
	size_t i, k;

	if (!set->n) {
		fprintf(f, "no ibtrs processes\n");
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
			st_print_client(f, &clients->items[k]);
		for (k = 0;
		     servers && servers->type == JT_ARR && k < servers->n;
		     k++, any = true)
			st_print_server(f, &servers->items[k]);
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
		"                    [--watch [SEC]] [--pid PID] [--verbose]\n"
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
 * @set: the processes
 */
static void st_render(FILE *f, enum st_format fmt, const struct st_set *set)
{
	switch (fmt) {
	case ST_TABLE:
		st_print_table(f, set);
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
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

		if (st_collect(&set, only, verbose, false))
			return TOOL_EXIT_FAIL;
		failed = set.failed;
		if (only && failed && !watch) {
			/* The one process asked for is not there. */
			st_set_free(&set);
			return TOOL_EXIT_FAIL;
		}
		/* Render first, then write at once: no flicker. */
		mem = open_memstream(&doc, &len);
		if (!mem) {
			st_set_free(&set);
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
		st_render(mem, fmt, &set);
		st_set_free(&set);
		if (fclose(mem)) {
			free(doc);
			tool_err("out of memory");
			return TOOL_EXIT_FAIL;
		}
		ret = st_output(doc, len, watch && tty && fmt == ST_TABLE);
		free(doc);
		if (ret)
			return ret;
		if (!watch)
			return failed ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
		/* The next redraw is due SEC after the last one was. */
		next += (uint64_t)(interval * 1e9);
		wait_ms = st_ms_left(next);
		if (!wait_ms)
			next = tool_now_ns();
		if (tool_signal_wait(wait_ms, NULL))
			return TOOL_EXIT_OK;
		/* Documents of a table or metrics: a blank line between. */
		if (!tty && fmt != ST_JSON && st_output("\n", 1, false))
			return TOOL_EXIT_FAIL;
	}
}
