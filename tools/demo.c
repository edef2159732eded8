// SPDX-License-Identifier: MIT
/*
 * demo.c - "ibtrs demo": a server and a verifying benchmark in one process,
 * over two loopback paths, with a path cut and restored on the way.
 *
 * The run is the one of "ibtrs bench --verify" against the target of
 * "ibtrs server" (bench_run() and tool_srv_start()); the demo only adds
 * what a newcomer watches: one line per second with each path's share of
 * the requests, the faults it injects into path 1 at a third and at two
 * thirds of the time, the session's events as they happen, and a verdict
 * computed from the measurements.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "ibtrs_fault.h"
#include "tool.h"

#define DEMO_DEFAULT_TIME 30.0
#define DEMO_BS 4096
#define DEMO_QD 32
#define DEMO_THREADS 2
/* Heartbeat timeout of the demo's server, milliseconds. */
#define DEMO_SRV_HB_TIMEOUT_MS 3000
/* The path the demo cuts. */
#define DEMO_CUT_PATH 1
/* A tick may come this early and still count as the moment of a fault. */
#define DEMO_SLACK_S 0.05

/*
 * The server listens on 127.0.0.1 only; the second path reaches it from
 * the source address 127.0.0.2, so that the two paths are two distinct TCP
 * connections over distinct addresses.
 */
static const char *const demo_paths[] = {
	"ip:127.0.0.1",
	"ip:127.0.0.2,ip:127.0.0.1",
};

#define DEMO_NPATHS (sizeof(demo_paths) / sizeof(demo_paths[0]))

/**
 * struct demo - state of a demo run, shared by the progress callback
 * @time_s: run time
 * @start_ns: CLOCK_REALTIME at the start, nanoseconds
 * @cut: path DEMO_CUT_PATH was cut
 * @restored: path DEMO_CUT_PATH was restored
 * @have_last: @last holds the last event printed
 * @last: the last event printed
 * @evs: scratch space for the event log
 * @series: the ticks kept for --plot, or NULL
 */
struct demo {
	double time_s;
	uint64_t start_ns;
	bool cut;
	bool restored;
	bool have_last;
	struct ibtrs_event last;
	struct ibtrs_event evs[IBTRS_EVENT_LOG_LEN];
	struct bench_series *series;
};

/**
 * usage_demo() - print the help of "ibtrs demo"
 * @f: output stream
 */
void usage_demo(FILE *f)
{
	fprintf(f,
		"Usage: %s demo [--time SEC] [--plot FILE.svg] [--tls MODE] [--tls-psk FILE]\n"
		"\n"
		"Start a server with a memory target on 127.0.0.1 in this process and\n"
		"run a verifying benchmark against it over two loopback paths\n"
		"(randrw, %u bytes, queue depth %u, %u threads), printing one line per\n"
		"second. At a third of the time path 1 is cut (it loses everything,\n"
		"like a pulled cable) and its requests fail over to path 0; at two\n"
		"thirds it is restored and reconnects. The session's events are\n"
		"printed as they happen, and a summary with a verdict at the end.\n"
		"\n"
		"Options:\n"
		"  --time SEC    run time in seconds (default %g; 6 or more to see\n"
		"                the path come back)\n"
		"  --plot FILE   draw IOPS per path, p99 latency and the events\n"
		"                (the cut, the failover, the return) as SVG\n"
		"  --tls MODE    TLS 1.3 with pre-shared keys on both sides: off, on\n"
		"                or require (default: IBTRS_TLS, else off)\n"
		"  --tls-psk FILE\n"
		"                key file of psktool (mode 0600; default:\n"
		"                IBTRS_TLS_PSK), the server's and the client's\n"
		"  --identity NAME\n"
		"                the client's key of FILE (default: the first)\n"
		"  -h, --help    show this help\n"
		"\n"
		"Exit status: 0 when no request was lost, failed or ran twice and all\n"
		"data verified, 1 otherwise, 2 for usage errors.\n",
		TOOL_NAME, DEMO_BS, DEMO_QD, DEMO_THREADS, DEMO_DEFAULT_TIME);
}

/**
 * demo_realtime_ns() - CLOCK_REALTIME in nanoseconds
 *
 * Return: the time.
 */
static uint64_t demo_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/**
 * demo_same_event() - whether two events are the same entry of the log
 * @a: an event
 * @b: another
 *
 * Return: true when time, path and message agree.
 */
static bool demo_same_event(const struct ibtrs_event *a,
			    const struct ibtrs_event *b)
{
	return a->ts_ns == b->ts_ns && a->path == b->path &&
	       !strncmp(a->msg, b->msg, sizeof(a->msg));
}

/**
 * demo_print_events() - print the events not printed yet
 * @d: the demo
 * @evs: the session's event log, oldest first
 * @n: number of @evs
 */
static void demo_print_events(struct demo *d, const struct ibtrs_event *evs,
			      size_t n)
{
	size_t i, first = 0;
	double t;

	if (d->have_last) {
		/* After the last one printed; if it left the log, after
		 * its time. */
		for (i = n; i > 0; i--)
			if (demo_same_event(&evs[i - 1], &d->last))
				break;
		first = i;
		if (!i)
			while (first < n && evs[first].ts_ns <= d->last.ts_ns)
				first++;
	}
	for (i = first; i < n; i++) {
		t = evs[i].ts_ns >= d->start_ns
			    ? (double)(evs[i].ts_ns - d->start_ns) / 1e9
			    : 0;
		if (evs[i].path < 0)
			printf("          event %6.3fs  session: %.*s\n", t,
			       (int)sizeof(evs[i].msg), evs[i].msg);
		else
			printf("          event %6.3fs  path %d: %.*s\n", t,
			       evs[i].path, (int)sizeof(evs[i].msg),
			       evs[i].msg);
	}
	if (n) {
		d->last = evs[n - 1];
		d->have_last = true;
	}
}

/**
 * demo_progress() - once per second: a progress line, the events, and the
 * faults when their time has come
 * @arg: the struct demo
 * @tick: the progress
 */
static void demo_progress(void *arg, const struct bench_tick *tick)
{
	struct demo *d = arg;
	uint64_t sum = 0;
	size_t i, n;
	int ret;

	if (d->series)
		bench_series_add(d->series, tick);
	for (i = 0; i < tick->path_cnt; i++)
		sum += tick->path_ops[i];
	printf("[%5.1fs] %9.0f %9.2f %9.0f", tick->elapsed, tick->iops,
	       tick->mbps, tick->p99_us);
	for (i = 0; i < tick->path_cnt; i++)
		printf("   %3.0f%% %-*s",
		       sum ? 100.0 * (double)tick->path_ops[i] / (double)sum
			   : 0.0,
		       i + 1 < tick->path_cnt ? 14 : 0,
		       ibtrs_path_state_str(tick->path_state[i]));
	printf("\n");

	n = ibtrs_clt_get_events(tick->sess, d->evs, IBTRS_EVENT_LOG_LEN);
	demo_print_events(d, d->evs, n);

	if (!d->cut && tick->elapsed >= d->time_s / 3 - DEMO_SLACK_S) {
		d->cut = true;
		ret = ibtrs_clt_inject_fault(tick->sess, DEMO_CUT_PATH,
					     IBTRS_FAULT_DROP, 0);
		if (ret)
			printf(">>> cannot cut path %d: %s\n", DEMO_CUT_PATH,
			       strerror(-ret));
		else
			printf(">>> cutting path %d: from now on it loses everything it sends and\n"
			       ">>> receives, heartbeats included. Its requests wait until the\n"
			       ">>> heartbeat timeout (about 1 s) declares it dead, then fail over.\n",
			       DEMO_CUT_PATH);
	} else if (d->cut && !d->restored &&
		   tick->elapsed >= d->time_s * 2 / 3 - DEMO_SLACK_S) {
		d->restored = true;
		ret = ibtrs_clt_inject_fault(tick->sess, DEMO_CUT_PATH,
					     IBTRS_FAULT_NONE, 0);
		if (ret)
			printf(">>> cannot restore path %d: %s\n",
			       DEMO_CUT_PATH, strerror(-ret));
		else
			printf(">>> restoring path %d: its next reconnect attempt (every second)\n"
			       ">>> succeeds and it carries requests again.\n",
			       DEMO_CUT_PATH);
	}
	fflush(stdout);
}

/**
 * demo_header() - explain what is going to happen
 * @cfg: the benchmark configuration
 * @port: the server's port
 */
static void demo_header(const struct bench_cfg *cfg, uint16_t port)
{
	size_t i;

	printf("ibtrs demo: a block storage client and server talking IBTRS over two paths\n"
	       "\n"
	       "  server   in this process, listening on 127.0.0.1 port %u; every\n"
	       "           session gets a %llu MiB memory disk\n"
	       "  client   one session over %zu TCP paths:\n",
	       port, TOOL_TARGET_SIZE >> 20, cfg->path_cnt);
	for (i = 0; i < cfg->path_cnt; i++)
		printf("             path %zu  %s\n", i, cfg->paths[i]);
	if (cfg->sec) {
		char buf[512];

		printf("  security %s\n",
		       tool_sec_describe(cfg->sec, buf, sizeof(buf)));
	}
	printf("  load     %u threads keep %u random %u-byte READs and WRITEs in flight;\n"
	       "           every READ is checked against the data last written there\n"
	       "  %5.1fs   path %d is cut: the library notices within about a second\n"
	       "           and moves its requests to the other path\n"
	       "  %5.1fs   path %d is restored: it reconnects and carries load again\n"
	       "  %5.1fs   end: no request may be lost or run twice, every READ must\n"
	       "           return the right data\n"
	       "\n"
	       "   time      IOPS      MB/s   p99 us",
	       cfg->threads, cfg->qd, cfg->bs, cfg->time_s / 3, DEMO_CUT_PATH,
	       cfg->time_s * 2 / 3, DEMO_CUT_PATH, cfg->time_s);
	for (i = 0; i < cfg->path_cnt; i++)
		printf("   path %zu share/state", i);
	printf("\n");
	fflush(stdout);
}

/**
 * demo_amo_summary() - what "run twice" can see
 * @res: the benchmark result
 *
 * The server counts a request run twice only within its own process (one
 * server session incarnation). A request could only have run twice across
 * a restart by being replayed into the new session, which the client does
 * not do (it reports a session loss and an unknown outcome instead): so
 * with no session loss, or no request replayed after one, "0 run twice"
 * covers the whole run.
 */
static void demo_amo_summary(const struct bench_res *res)
{
	if (!res->session_losses)
		return;
	printf("  session lost %llu times (the server's session changed): %llu requests\n"
	       "          of unknown outcome (not replayed), %llu replayed after a loss\n",
	       (unsigned long long)res->session_losses,
	       (unsigned long long)res->unknown_outcome,
	       (unsigned long long)res->replayed_after_loss);
}

/**
 * demo_summary() - print the summary and the verdict
 * @res: the benchmark result
 * @st: the server's counters
 *
 * Return: exit status: TOOL_EXIT_OK when nothing was lost, failed, ran
 * twice or read wrong data, and some requests completed.
 */
static int demo_summary(const struct bench_res *res,
			const struct tool_srv_stats *st)
{
	uint64_t failovers = 0, reconnects = 0;
	bool ok;
	size_t i;

	for (i = 0; i < res->path_cnt; i++) {
		failovers += res->paths[i].st.failovers;
		reconnects += res->paths[i].st.reconnects;
	}
	printf("\nsummary:\n"
	       "  %llu requests (%llu reads, %llu writes), %llu bytes in %.2f s\n"
	       "  %.0f IOPS, %.2f MB/s\n"
	       "  latency p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us\n"
	       "  longest time without a completion: %.0f ms\n",
	       (unsigned long long)res->ops, (unsigned long long)res->read_ops,
	       (unsigned long long)res->write_ops,
	       (unsigned long long)res->bytes, res->time_s, res->iops,
	       res->mbps, res->p50_us, res->p99_us, res->p999_us, res->max_us,
	       res->max_gap_ms);
	for (i = 0; i < res->path_cnt; i++)
		printf("  path %zu %s: %llu requests, %llu failovers, %llu reconnects, now %s\n",
		       i, res->paths[i].addr,
		       (unsigned long long)(res->paths[i].st.rd_ops +
					    res->paths[i].st.wr_ops),
		       (unsigned long long)res->paths[i].st.failovers,
		       (unsigned long long)res->paths[i].st.reconnects,
		       ibtrs_path_state_str(res->paths[i].st.state));
	printf("  failovers: %llu, reconnects: %llu\n"
	       "  server: %llu requests run, %llu run twice, %llu replays (answered\n"
	       "          from the first run after a failover)\n"
	       "  verified %llu reads against the data written\n",
	       (unsigned long long)failovers, (unsigned long long)reconnects,
	       (unsigned long long)st->requests,
	       (unsigned long long)st->duplicates,
	       (unsigned long long)st->lib.replays,
	       (unsigned long long)res->verified);

	demo_amo_summary(res);
	ok = !res->lost && !st->duplicates && !res->verify_failures &&
	     !res->errors && !res->unknown_outcome &&
	     !res->replayed_after_loss && res->ops;
	printf("\nverdict: %llu lost, %llu run twice, ",
	       (unsigned long long)res->lost,
	       (unsigned long long)st->duplicates);
	if (res->replayed_after_loss)
		printf("%llu may have run twice (replayed after a session loss), ",
		       (unsigned long long)res->replayed_after_loss);
	if (res->unknown_outcome)
		printf("%llu of unknown outcome, ",
		       (unsigned long long)res->unknown_outcome);
	if (res->errors)
		printf("%llu failed, ", (unsigned long long)res->errors);
	if (res->verify_failures)
		printf("%llu reads returned wrong data",
		       (unsigned long long)res->verify_failures);
	else if (res->verified)
		printf("all data verified");
	else
		printf("nothing verified");
	printf(" -- %s\n", ok ? "OK" : "FAILED");
	fflush(stdout);
	return ok ? TOOL_EXIT_OK : TOOL_EXIT_FAIL;
}

/**
 * cmd_demo() - "ibtrs demo"
 * @argc: argument count, argv[0] is "demo"
 * @argv: arguments
 *
 * Return: exit status.
 */
int cmd_demo(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "time", required_argument, NULL, 't' },
		{ "plot", required_argument, NULL, 'p' },
		TOOL_SEC_LONGOPTS,
		TOOL_SEC_ID_LONGOPT,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sockaddr_in lo = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	struct tool_srv_cfg scfg = {
		.port = 0,
		.listen_addr = (const struct sockaddr *)&lo,
		.listen_str = "127.0.0.1",
		/* Longer than the client's 1 s: the client's heartbeats are
		 * what detects the cut, as on a real network, not the
		 * server closing the connection. */
		.hb_timeout_ms = DEMO_SRV_HB_TIMEOUT_MS,
		.grace_ms = -1,
		.log = NULL,
	};
	struct tool_sec ssec, csec = { .tls = IBTRS_TLS_DEFAULT };
	struct tool_srv_stats st;
	struct ibtrs_srv_ctx *srv;
	struct bench_cfg bcfg;
	struct bench_res *res;
	const char *plot_file = NULL;
	struct demo *d;
	int c, ret;

	bench_cfg_init(&bcfg);
	bcfg.paths = demo_paths;
	bcfg.path_cnt = DEMO_NPATHS;
	bcfg.rw = BENCH_RANDRW;
	bcfg.bs = DEMO_BS;
	bcfg.qd = DEMO_QD;
	bcfg.threads = DEMO_THREADS;
	bcfg.time_s = DEMO_DEFAULT_TIME;
	bcfg.verify = true;
	bcfg.events = true;
	bcfg.sessname = TOOL_NAME "-demo";
	bcfg.progress = demo_progress;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":t:p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (tool_parse_seconds(optarg, &bcfg.time_s)) {
				tool_err(
					"invalid --time '%s': expected a positive number of seconds",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			break;
		case 'p':
			if (!optarg[0]) {
				tool_err(
					"invalid --plot '': expected a file name");
				return TOOL_EXIT_USAGE;
			}
			plot_file = optarg;
			break;
		case TOOL_OPT_TLS:
		case TOOL_OPT_TLS_PSK:
		case TOOL_OPT_IDENTITY:
			ret = tool_sec_opt(&csec, c, optarg);
			if (ret)
				return ret;
			break;
		case 'h':
			usage_demo(stdout);
			return TOOL_EXIT_OK;
		default:
			return tool_opt_error("demo", c, argv, longopts);
		}
	}
	if (optind < argc) {
		tool_err("unexpected argument '%s' (try '%s demo --help')",
			 argv[optind], TOOL_NAME);
		return TOOL_EXIT_USAGE;
	}
	/* One key file for both ends; the client picks its key of it. */
	ssec = csec;
	ret = tool_sec_resolve(&ssec, false);
	if (!ret)
		ret = tool_sec_resolve(&csec, true);
	if (ret)
		return ret;
	scfg.sec = &ssec;
	bcfg.sec = &csec;

	d = calloc(1, sizeof(*d));
	res = malloc(sizeof(*res));
	if (d && plot_file)
		d->series = calloc(1, sizeof(*d->series));
	if (!d || !res || (plot_file && !d->series)) {
		tool_err("cannot allocate the demo: %s", strerror(ENOMEM));
		if (d)
			free(d->series);
		free(d);
		free(res);
		return TOOL_EXIT_FAIL;
	}
	d->time_s = bcfg.time_s;
	bcfg.progress_arg = d;

	srv = tool_srv_start(&scfg);
	if (!srv) {
		free(d->series);
		free(d);
		free(res);
		return TOOL_EXIT_FAIL;
	}
	bcfg.port = ibtrs_srv_get_port(srv);
	demo_header(&bcfg, bcfg.port);

	d->start_ns = demo_realtime_ns();
	ret = bench_run(&bcfg, res);
	if (!ret) {
		/* What happened in the last second. */
		demo_print_events(d, res->events, res->event_cnt);
		tool_srv_get_stats(srv, &st);
		ret = demo_summary(res, &st);
		if (plot_file &&
		    !bench_plot_svg(
			    plot_file,
			    TOOL_NAME
			    " demo: path 1 cut at a third, restored at two thirds",
			    d->series, res))
			printf("plot: %s\n", plot_file);
		else if (plot_file)
			ret = TOOL_EXIT_FAIL;
	}
	tool_srv_stop(srv);
	free(d->series);
	free(d);
	free(res);
	return ret;
}
