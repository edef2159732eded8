/* SPDX-License-Identifier: MIT */
/*
 * bench.h - the load engine of "ibtrs bench" and "ibtrs demo"
 * (bench_engine.c) and the printing of its progress and results
 * (bench_report.c).
 */
#ifndef IBTRS_TOOL_BENCH_H
#define IBTRS_TOOL_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ibtrs.h"

#define BENCH_DEFAULT_BS 4096
#define BENCH_DEFAULT_QD 64
#define BENCH_DEFAULT_THREADS 1
#define BENCH_DEFAULT_TIME 10.0
#define BENCH_MAX_QD 65536
#define BENCH_MAX_THREADS 256
/* Limits of --hb-timeout and --failover-timeout, milliseconds. */
#define BENCH_MIN_HB_TIMEOUT_MS 100
#define BENCH_MAX_TIMEOUT_MS 3600000

enum bench_rw {
	BENCH_READ,
	BENCH_WRITE,
	BENCH_RANDRW,
};

/**
 * struct bench_tick - progress of a running benchmark, once per second
 * @elapsed: seconds since the start
 * @iops: requests completed per second during the last interval
 * @mbps: data rate of the last interval, 1e6 bytes per second
 * @ops: requests completed since the start
 * @p99_us: 99th percentile latency of the last interval, microseconds
 * @errors: failed requests since the start
 * @verify_failures: reads that returned wrong data since the start
 * @sess: the session (for ibtrs_clt_inject_fault() and the like)
 * @path_cnt: number of valid @path_ops and @path_state entries
 * @path_ops: per path, requests completed during the last interval
 * @path_state: per path, its state now
 */
struct bench_tick {
	double elapsed;
	double iops;
	double mbps;
	double p99_us;
	uint64_t ops;
	uint64_t errors;
	uint64_t verify_failures;
	struct ibtrs_clt *sess;
	size_t path_cnt;
	uint64_t path_ops[IBTRS_MAX_PATHS];
	enum ibtrs_path_state path_state[IBTRS_MAX_PATHS];
};

typedef void(bench_progress_fn)(void *arg, const struct bench_tick *tick);

/**
 * enum bench_submit - who keeps the queue depth of a benchmark full
 * @BENCH_SUBMIT_CALLBACK: the completion callback submits the next request
 *                         (on the library's thread, as an event-driven
 *                         application does)
 * @BENCH_SUBMIT_THREAD: the submitter threads, woken by completions
 */
enum bench_submit {
	BENCH_SUBMIT_CALLBACK,
	BENCH_SUBMIT_THREAD,
};

/**
 * struct bench_cfg - what to run
 * @paths: path strings as accepted by ibtrs_addr_to_sockaddr()
 * @path_cnt: number of @paths
 * @port: server port used where a path names none
 * @rw: request mix
 * @bs: data bytes of every request
 * @qd: requests in flight over all threads
 * @threads: submitter threads
 * @submit: who submits the next request when one completes
 * @time_s: run time in seconds
 * @verify: write patterns and check what is read back
 * @quiet: do not report individual failures on stderr
 * @sessname: session name, NULL for a generated one
 * @policy: multipath policy (enum ibtrs_mp_policy)
 * @hb_timeout_ms: heartbeat timeout, 0 for the library default
 * @reconnect_delay_s: seconds between reconnect tries
 * @max_reconnects: reconnect tries of a failed path, -1 forever
 * @failover_timeout_ms: failover timeout, 0 for the library default
 * @io_cons: I/O connections per path, 0 for the library default
 * @busy_poll_us: busy polling of the session's thread, microseconds
 * @busy_poll_adaptive: the window of @busy_poll_us adapts (see
 *                      struct ibtrs_clt_opts)
 * @events: fill the result's event log
 * @export_name: run against this ibnbd export of the server (a block
 *               device, ibnbd_submit()) instead of the memory target;
 *               NULL for the memory target
 * @progress: called once per second from the calling thread, or NULL
 * @progress_arg: passed to @progress
 */
struct bench_cfg {
	const char *const *paths;
	size_t path_cnt;
	uint16_t port;
	enum bench_rw rw;
	uint32_t bs;
	uint32_t qd;
	uint32_t threads;
	enum bench_submit submit;
	double time_s;
	bool verify;
	bool quiet;
	const char *sessname;
	int policy;
	const char *backend; /* NULL: the library's default */
	uint32_t hb_timeout_ms;
	uint8_t reconnect_delay_s;
	int16_t max_reconnects;
	uint32_t failover_timeout_ms;
	uint32_t io_cons;
	uint32_t busy_poll_us;
	bool busy_poll_adaptive;
	bool events;
	const char *export_name;
	bench_progress_fn *progress;
	void *progress_arg;
};

/**
 * struct bench_path_res - one path at the end of a run
 * @addr: its address as text ("SRC->DST" when a source was given)
 * @st: its counters, from ibtrs_clt_path_stats()
 */
struct bench_path_res {
	char addr[128];
	struct ibtrs_path_stats st;
};

/**
 * struct bench_res - result of a run
 * @time_s: measured run time in seconds
 * @iops: completed requests per second
 * @mbps: data rate, 1e6 bytes per second
 * @p50_us: median latency in microseconds
 * @p99_us: 99th percentile latency in microseconds
 * @p999_us: 99.9th percentile latency in microseconds
 * @ops: successful requests (@read_ops + @write_ops)
 * @read_ops: successful READs
 * @write_ops: successful WRITEs
 * @bytes: data bytes of the successful requests
 * @errors: failed requests
 * @verify_failures: READs whose data did not match
 * @verified: READs whose data was checked
 * @submitted: requests submitted (their confirmation was due)
 * @cb_submits: of those, submitted from a completion callback
 * @lost: submitted requests whose confirmation never ran
 * @max_gap_ms: longest time during the run, after the first completion, in
 *              which no request completed successfully
 * @clt_user_s, @clt_sys_s: CPU time of this process during the run
 *                          (getrusage), user and kernel
 * @srv_cpu: the server answered TOOL_BLK_STATS: @srv_user_s and
 *           @srv_sys_s are valid
 * @srv_user_s, @srv_sys_s: CPU time of the server process during the run
 * @policy: the session's multipath policy at the end, as text
 * @export_size: with cfg->export_name, the export's size in bytes
 * @export_lbs: its logical block size
 * @final_verified: with cfg->export_name and cfg->verify, blocks read back
 *                  and checked after the run: every block the run wrote
 *                  whose last WRITE succeeded
 * @path_cnt: number of valid @paths entries
 * @paths: per-path counters
 * @event_cnt: number of valid @events entries (cfg->events only)
 * @events: the session's event log at the end, oldest first
 */
struct bench_res {
	double time_s;
	double iops;
	double mbps;
	double p50_us;
	double p99_us;
	double p999_us;
	uint64_t ops;
	uint64_t read_ops;
	uint64_t write_ops;
	uint64_t bytes;
	uint64_t errors;
	uint64_t verify_failures;
	uint64_t verified;
	uint64_t submitted;
	uint64_t cb_submits;
	uint64_t lost;
	double max_gap_ms;
	double clt_user_s;
	double clt_sys_s;
	bool srv_cpu;
	double srv_user_s;
	double srv_sys_s;
	char policy[32];
	uint64_t export_size;
	uint32_t export_lbs;
	uint64_t final_verified;
	size_t path_cnt;
	struct bench_path_res paths[IBTRS_MAX_PATHS];
	size_t event_cnt;
	struct ibtrs_event events[IBTRS_EVENT_LOG_LEN];
};

const char *bench_rw_str(enum bench_rw rw);
const char *bench_submit_str(enum bench_submit submit);
void bench_cfg_init(struct bench_cfg *cfg);
void bench_print_event(FILE *f, const struct ibtrs_event *ev);
int bench_run(const struct bench_cfg *cfg, struct bench_res *res);

/**
 * struct bench_prog - what "ibtrs bench" prints once per second
 * @tty: a progress line for humans on stderr
 * @json: a JSON line on stderr (--interval-json)
 */
struct bench_prog {
	bool tty;
	bool json;
};

/* bench_report.c */
void bench_progress(void *arg, const struct bench_tick *tick);
int bench_print_json(const struct bench_cfg *cfg, const struct bench_res *res);
void bench_print_table(const struct bench_cfg *cfg,
		       const struct bench_res *res);

#endif /* IBTRS_TOOL_BENCH_H */
