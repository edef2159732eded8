// SPDX-License-Identifier: MIT
/*
 * bench_cli.c - the command line of "ibtrs bench": its help, its options,
 * and the run (bench_engine.c) with its report (bench_report.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "tool.h"

/**
 * usage_bench() - print the help of "ibtrs bench"
 * @f: output stream
 */
void usage_bench(FILE *f)
{
	fprintf(f,
		"Usage: %s bench --path ADDR [--path ADDR ...] [OPTIONS]\n"
		"\n"
		"Load an \"%s server\" with requests over one session of one or more\n"
		"paths and report throughput and latency: its memory target, or\n"
		"with --export one of its ibnbd block devices.\n"
		"\n"
		"Options:\n"
		"  --path ADDR        a path: ip:DST or ip:SRC,ip:DST (up to %d)\n"
		"  --export NAME      run against the ibnbd export NAME of the server\n"
		"                     (\"server --export NAME=PATH\"): block requests,\n"
		"                     offsets within its size; opened read-only\n"
		"                     with --rw read or randread. --verify then\n"
		"                     checks only blocks this run wrote, and reads\n"
		"                     every one of them back at the end\n"
		"  --port N           server port where a path names none (default %u)\n"
		"  --rw MODE          as fio: read, write (in order), randread,\n"
		"                     randwrite, rw (in order) or randrw (default)\n"
		"  --rwmixread PCT    with rw and randrw, percent READs (default %u)\n"
		"  --bs BYTES         request size: 4096, 4k, 4K, 4KiB, 1m ... (default %u)\n"
		"  --iodepth N, --qd N\n"
		"                     requests in flight (default %u); at most the\n"
		"                     session's queue depth (the server's, 128 by\n"
		"                     default), said when it is less\n"
		"  --numjobs N, --threads N\n"
		"                     submitter threads (default %u)\n"
		"  --submit MODE      who submits the next request when one\n"
		"                     completes: callback (the completion callback,\n"
		"                     on the library's thread; default) or thread\n"
		"                     (the submitter threads, woken per batch)\n"
		"  --runtime T, --time T\n"
		"                     run time: seconds, or 500ms, 10s, 1m, 1h (default %g)\n"
		"  --io-cons N        I/O connections per path, 1..8 (default 1)\n"
		"  --sessions N       N sessions in this process, 1..%d (default 1):\n"
		"                     the iodepth and the threads split over them,\n"
		"                     each its own part of the target; one report\n"
		"                     of all, with each session's p99\n"
		"  --loops M          with --sessions, the shared loop threads they\n"
		"                     run on, 0..%d (default: the online CPUs, at\n"
		"                     most N; 0: a loop thread each)\n"
		"  --busy-poll US     the session's thread polls US microseconds\n"
		"                     after an event before it sleeps (default 0)\n"
		"  --busy-poll-adaptive\n"
		"                     poll for a window of at most US that\n"
		"                     adapts: open while events come closer\n"
		"                     together than US, closed while further apart\n"
		"  --verify           write patterns and check every read\n"
		"  --transport NAME   backend: tcp (default) or ofi (libfabric)\n"
		"  --policy P         multipath policy: rr, min-inflight or min-latency\n"
		"                     (default min-inflight)\n"
		"  --hb-timeout MS    declare a silent path dead after MS ms, %u..%u\n"
		"                     (default 1000)\n"
		"  --reconnect-delay SEC\n"
		"                     seconds between reconnect tries, 0..255 (default 1)\n"
		"  --max-reconnects N reconnect tries of a failed path, -1 forever\n"
		"                     (default -1)\n"
		"  --failover-timeout MS\n"
		"                     how long a request of a failed path may wait for a\n"
		"                     path, 0..%u (default 30000); with --export also\n"
		"                     how long a request waits for a path at all\n"
		"  --json, --output-format=json\n"
		"                     print the result as one JSON object\n"
		"                     (--output-format=normal: the table, default)\n"
		"  --events           add the session's event log to the result\n"
		"  --interval-json    print one JSON line per second on stderr\n"
		"  --plot FILE.svg    draw IOPS per path and p99 latency per second,\n"
		"                     with the session's events, as an SVG image\n"
		"  --quiet            no progress and no warnings\n"
		"  --sessname NAME    session name (default %s-bench-PID)\n"
		"  --tls MODE         TLS 1.3 with a pre-shared key (tcp): off, on or\n"
		"                     require (on and require: TLS only, never\n"
		"                     plaintext; default: IBTRS_TLS, else off)\n"
		"  --tls-psk FILE     key file of psktool (identity:hexkey a line, mode\n"
		"                     0600; default: IBTRS_TLS_PSK): the client proves\n"
		"                     its key, the server must prove it back\n"
		"  --identity NAME    the key of FILE to use (default: IBTRS_IDENTITY,\n"
		"                     else the file's first)\n"
		"  -h, --help         show this help\n"
		"\n"
		"The environment variable IBTRS_FAULT injects faults, e.g.\n"
		"IBTRS_FAULT=1:drop@2000 cuts path 1 two seconds after the start.\n"
		"\n"
		"SIGINT or SIGTERM ends the run within 2 s: requests still in flight\n"
		"then fail as the session closes. A request completed with ECONNRESET\n"
		"was in flight when the server session was lost (a server restart): it\n"
		"may or may not have run, and is counted as unknown_outcome.\n"
		"\n"
		"Exit status: 0 when every request succeeded and verified and none was\n"
		"lost, 1 when one failed, was lost or has an unknown outcome, 2 for\n"
		"usage errors.\n",
		TOOL_NAME, TOOL_NAME, IBTRS_MAX_PATHS, IBTRS_DEFAULT_PORT,
		BENCH_DEFAULT_RWMIXREAD, BENCH_DEFAULT_BS, BENCH_DEFAULT_QD,
		BENCH_DEFAULT_THREADS, BENCH_DEFAULT_TIME, BENCH_MAX_SESSIONS,
		IBTRS_MAX_LOOP_THREADS, BENCH_MIN_HB_TIMEOUT_MS,
		BENCH_MAX_TIMEOUT_MS, BENCH_MAX_TIMEOUT_MS, TOOL_NAME);
}

/**
 * bench_bad_value() - report an option value that is not accepted
 * @opt: the option name, without dashes
 * @val: the value given
 * @want: what is expected
 *
 * Return: TOOL_EXIT_USAGE.
 */
static int bench_bad_value(const char *opt, const char *val, const char *want)
{
	tool_err("invalid --%s '%s': expected %s", opt, val, want);
	return TOOL_EXIT_USAGE;
}

enum {
	OPT_PATH = 256,
	OPT_PORT,
	OPT_RW,
	OPT_BS,
	OPT_QD,
	OPT_THREADS,
	OPT_TIME,
	OPT_VERIFY,
	OPT_JSON,
	OPT_QUIET,
	OPT_SESSNAME,
	OPT_POLICY,
	OPT_HB_TIMEOUT,
	OPT_RECONNECT_DELAY,
	OPT_MAX_RECONNECTS,
	OPT_FAILOVER_TIMEOUT,
	OPT_EVENTS,
	OPT_INTERVAL_JSON,
	OPT_TRANSPORT,
	OPT_SUBMIT,
	OPT_IO_CONS,
	OPT_BUSY_POLL,
	OPT_BUSY_POLL_ADAPTIVE,
	OPT_EXPORT,
	OPT_RWMIXREAD,
	OPT_OUTPUT_FORMAT,
	OPT_PLOT,
	OPT_SESSIONS,
	OPT_LOOPS,
};

/**
 * cmd_bench() - "ibtrs bench"
 * @argc: argument count, argv[0] is "bench"
 * @argv: arguments
 *
 * Return: exit status.
 */
int cmd_bench(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "path", required_argument, NULL, OPT_PATH },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "rw", required_argument, NULL, OPT_RW },
		{ "bs", required_argument, NULL, OPT_BS },
		{ "rwmixread", required_argument, NULL, OPT_RWMIXREAD },
		{ "qd", required_argument, NULL, OPT_QD },
		{ "iodepth", required_argument, NULL, OPT_QD },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "numjobs", required_argument, NULL, OPT_THREADS },
		{ "time", required_argument, NULL, OPT_TIME },
		{ "runtime", required_argument, NULL, OPT_TIME },
		{ "output-format", required_argument, NULL, OPT_OUTPUT_FORMAT },
		{ "plot", required_argument, NULL, OPT_PLOT },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "sessname", required_argument, NULL, OPT_SESSNAME },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "hb-timeout", required_argument, NULL, OPT_HB_TIMEOUT },
		{ "transport", required_argument, NULL, OPT_TRANSPORT },
		{ "submit", required_argument, NULL, OPT_SUBMIT },
		{ "io-cons", required_argument, NULL, OPT_IO_CONS },
		{ "sessions", required_argument, NULL, OPT_SESSIONS },
		{ "loops", required_argument, NULL, OPT_LOOPS },
		{ "busy-poll", required_argument, NULL, OPT_BUSY_POLL },
		{ "busy-poll-adaptive", no_argument, NULL,
		  OPT_BUSY_POLL_ADAPTIVE },
		{ "reconnect-delay", required_argument, NULL,
		  OPT_RECONNECT_DELAY },
		{ "max-reconnects", required_argument, NULL,
		  OPT_MAX_RECONNECTS },
		{ "failover-timeout", required_argument, NULL,
		  OPT_FAILOVER_TIMEOUT },
		{ "events", no_argument, NULL, OPT_EVENTS },
		{ "export", required_argument, NULL, OPT_EXPORT },
		{ "interval-json", no_argument, NULL, OPT_INTERVAL_JSON },
		TOOL_SEC_LONGOPTS,
		TOOL_SEC_ID_LONGOPT,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *paths[IBTRS_MAX_PATHS];
	struct bench_prog prog = { .tty = false };
	struct tool_sec sec = { .tls = IBTRS_TLS_DEFAULT };
	struct bench_cfg cfg;
	struct bench_res *res;
	const char *plot_file = NULL;
	bool json = false, loops_set = false;
	int c, ret, plot_ret = 0;
	uint64_t v;

	bench_cfg_init(&cfg);
	cfg.paths = paths;
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_PATH:
			if (cfg.path_cnt == IBTRS_MAX_PATHS) {
				tool_err("too many --path options (at most %d)",
					 IBTRS_MAX_PATHS);
				return TOOL_EXIT_USAGE;
			}
			paths[cfg.path_cnt++] = optarg;
			break;
		case OPT_PORT:
			if (tool_parse_uint(optarg, 1, 65535, &v))
				return bench_bad_value("port", optarg,
						       "1..65535");
			cfg.port = (uint16_t)v;
			break;
		case OPT_RW:
			if (bench_rw_parse(optarg, &cfg.rw))
				return bench_bad_value(
					"rw", optarg,
					"read, write, randread, randwrite, rw or randrw");
			break;
		case OPT_RWMIXREAD:
			if (tool_parse_uint(optarg, 0, 100, &v))
				return bench_bad_value("rwmixread", optarg,
						       "0..100 percent");
			cfg.rwmixread = (unsigned int)v;
			break;
		case OPT_OUTPUT_FORMAT:
			if (!strcmp(optarg, "json"))
				json = true;
			else if (!strcmp(optarg, "normal"))
				json = false;
			else
				return bench_bad_value("output-format", optarg,
						       "normal or json");
			break;
		case OPT_PLOT:
			if (!optarg[0])
				return bench_bad_value("plot", optarg,
						       "a file name");
			plot_file = optarg;
			break;
		case OPT_BS:
			if (tool_parse_size(optarg, 1, TOOL_TARGET_SIZE, &v))
				return bench_bad_value(
					"bs", optarg,
					"a size of 1..64m bytes, e.g. 4k or 4KiB");
			cfg.bs = (uint32_t)v;
			break;
		case OPT_QD:
			if (tool_parse_uint(optarg, 1, BENCH_MAX_QD, &v))
				return bench_bad_value("iodepth", optarg,
						       "1..65536");
			cfg.qd = (uint32_t)v;
			break;
		case OPT_THREADS:
			if (tool_parse_uint(optarg, 1, BENCH_MAX_THREADS, &v))
				return bench_bad_value("numjobs", optarg,
						       "1..256");
			cfg.threads = (uint32_t)v;
			break;
		case OPT_SUBMIT:
			if (!strcmp(optarg, "callback"))
				cfg.submit = BENCH_SUBMIT_CALLBACK;
			else if (!strcmp(optarg, "thread"))
				cfg.submit = BENCH_SUBMIT_THREAD;
			else
				return bench_bad_value("submit", optarg,
						       "callback or thread");
			break;
		case OPT_TIME:
			if (tool_parse_seconds(optarg, &cfg.time_s))
				return bench_bad_value(
					"runtime", optarg,
					"a positive duration: seconds, or with ms, s, m or h");
			break;
		case OPT_VERIFY:
			cfg.verify = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_QUIET:
			cfg.quiet = true;
			break;
		case OPT_SESSNAME:
			if (!optarg[0] || strlen(optarg) >= NAME_MAX ||
			    strchr(optarg, '/'))
				return bench_bad_value(
					"sessname", optarg,
					"1..254 bytes without '/'");
			cfg.sessname = optarg;
			break;
		case OPT_POLICY:
			if (!strcmp(optarg, "rr") ||
			    !strcmp(optarg, "round-robin"))
				cfg.policy = IBTRS_MP_ROUND_ROBIN;
			else if (!strcmp(optarg, "min-inflight"))
				cfg.policy = IBTRS_MP_MIN_INFLIGHT;
			else if (!strcmp(optarg, "min-latency"))
				cfg.policy = IBTRS_MP_MIN_LATENCY;
			else
				return bench_bad_value(
					"policy", optarg,
					"rr, min-inflight or min-latency");
			break;
		case OPT_IO_CONS:
			if (tool_parse_uint(optarg, 1, IBTRS_MAX_IO_CONS, &v))
				return bench_bad_value("io-cons", optarg,
						       "1..8");
			cfg.io_cons = (uint32_t)v;
			break;
		case OPT_SESSIONS:
			if (tool_parse_uint(optarg, 1, BENCH_MAX_SESSIONS, &v))
				return bench_bad_value("sessions", optarg,
						       "1..1024");
			cfg.sessions = (uint32_t)v;
			break;
		case OPT_LOOPS:
			if (tool_parse_uint(optarg, 0, IBTRS_MAX_LOOP_THREADS,
					    &v))
				return bench_bad_value("loops", optarg,
						       "0..64");
			cfg.loop_threads = (uint32_t)v;
			loops_set = true;
			break;
		case OPT_BUSY_POLL:
			if (tool_parse_uint(optarg, 0, IBTRS_MAX_BUSY_POLL_US,
					    &v))
				return bench_bad_value(
					"busy-poll", optarg,
					"0..1000000 microseconds");
			cfg.busy_poll_us = (uint32_t)v;
			break;
		case OPT_BUSY_POLL_ADAPTIVE:
			cfg.busy_poll_adaptive = true;
			break;
		case OPT_HB_TIMEOUT:
			if (tool_parse_uint(optarg, BENCH_MIN_HB_TIMEOUT_MS,
					    BENCH_MAX_TIMEOUT_MS, &v))
				return bench_bad_value(
					"hb-timeout", optarg,
					"100..3600000 milliseconds");
			cfg.hb_timeout_ms = (uint32_t)v;
			break;
		case OPT_RECONNECT_DELAY:
			if (tool_parse_uint(optarg, 0, UINT8_MAX, &v))
				return bench_bad_value("reconnect-delay",
						       optarg,
						       "0..255 seconds");
			cfg.reconnect_delay_s = (uint8_t)v;
			break;
		case OPT_MAX_RECONNECTS:
			if (!strcmp(optarg, "-1"))
				v = UINT64_MAX;
			else if (tool_parse_uint(optarg, 0, INT16_MAX, &v))
				return bench_bad_value("max-reconnects", optarg,
						       "-1 or 0..32767");
			cfg.max_reconnects = v == UINT64_MAX ? -1 : (int16_t)v;
			break;
		case OPT_FAILOVER_TIMEOUT:
			if (tool_parse_uint(optarg, 0, BENCH_MAX_TIMEOUT_MS,
					    &v))
				return bench_bad_value(
					"failover-timeout", optarg,
					"0..3600000 milliseconds");
			cfg.failover_timeout_ms = (uint32_t)v;
			break;
		case OPT_EVENTS:
			cfg.events = true;
			break;
		case OPT_EXPORT:
			if (!optarg[0] || strlen(optarg) > IBNBD_NAME_MAX ||
			    strchr(optarg, '/'))
				return bench_bad_value(
					"export", optarg,
					"an export name of 1..255 bytes without '/'");
			cfg.export_name = optarg;
			break;
		case OPT_INTERVAL_JSON:
			prog.json = true;
			break;
		case OPT_TRANSPORT:
			cfg.backend = optarg;
			break;
		case TOOL_OPT_TLS:
		case TOOL_OPT_TLS_PSK:
		case TOOL_OPT_IDENTITY:
			ret = tool_sec_opt(&sec, c, optarg);
			if (ret)
				return ret;
			break;
		case 'h':
			usage_bench(stdout);
			return TOOL_EXIT_OK;
		default:
			return tool_opt_error("bench", c, argv, longopts);
		}
	}
	if (optind < argc) {
		tool_err("unexpected argument '%s' (try '%s bench --help')",
			 argv[optind], TOOL_NAME);
		return TOOL_EXIT_USAGE;
	}
	if (!cfg.path_cnt) {
		tool_err("missing --path (try '%s bench --help')", TOOL_NAME);
		return TOOL_EXIT_USAGE;
	}
	if (!tool_busy_poll_ok(cfg.busy_poll_us, cfg.busy_poll_adaptive))
		return TOOL_EXIT_USAGE;
	ret = tool_sec_resolve(&sec, true);
	if (ret)
		return ret;
	cfg.sec = &sec;
	if (cfg.qd < cfg.threads)
		cfg.qd = cfg.threads;
	if (cfg.sessions > 1 &&
	    (cfg.export_name || plot_file || prog.json || cfg.events)) {
		tool_err(
			"--sessions takes no --export, --plot, --interval-json or --events");
		return TOOL_EXIT_USAGE;
	}
	if (loops_set && cfg.sessions <= 1) {
		tool_err("--loops needs --sessions of 2 or more");
		return TOOL_EXIT_USAGE;
	}
	if (cfg.sessions > 1 && !loops_set)
		cfg.loop_threads =
			tool_online_cpus(cfg.sessions < IBTRS_MAX_LOOP_THREADS
						 ? cfg.sessions
						 : IBTRS_MAX_LOOP_THREADS);
	prog.tty = !cfg.quiet && !json && isatty(STDERR_FILENO) &&
		   cfg.sessions <= 1;
	if (plot_file) {
		/* Large: not on the stack. The events are marked on it. */
		prog.series = calloc(1, sizeof(*prog.series));
		if (!prog.series) {
			tool_err("cannot allocate the plot: %s",
				 strerror(ENOMEM));
			return TOOL_EXIT_FAIL;
		}
		cfg.events = true;
	}
	if (prog.tty || prog.json || prog.series) {
		cfg.progress = bench_progress;
		cfg.progress_arg = &prog;
	}

	/* Large (it holds the event log): not on the stack. */
	res = malloc(sizeof(*res));
	if (!res) {
		tool_err("cannot allocate the benchmark: %s", strerror(ENOMEM));
		return TOOL_EXIT_FAIL;
	}
	ret = cfg.sessions > 1 ? bench_run_sessions(&cfg, res)
			       : bench_run(&cfg, res);
	if (ret) {
		free(prog.series);
		free(res);
		return ret;
	}
	if (plot_file) {
		char title[160];

		snprintf(
			title, sizeof(title),
			"%s bench: rw=%s bs=%u iodepth=%u numjobs=%u, %zu path%s, %.1f s",
			TOOL_NAME, bench_rw_str(cfg.rw), cfg.bs, res->qd,
			cfg.threads, res->path_cnt,
			res->path_cnt == 1 ? "" : "s", res->time_s);
		plot_ret = bench_plot_svg(plot_file, title, prog.series, res);
		free(prog.series);
	}
	if (json && bench_print_json(&cfg, res) < 0) {
		free(res);
		return TOOL_EXIT_FAIL;
	}
	if (!json)
		bench_print_table(&cfg, res);
	fflush(stdout);
	ret = res->errors || res->verify_failures || res->lost ||
			      res->unknown_outcome || plot_ret
		      ? TOOL_EXIT_FAIL
		      : TOOL_EXIT_OK;
	free(res);
	return ret;
}
