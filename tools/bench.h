/* SPDX-License-Identifier: MIT */
/*
 * bench.h - the load engine of "ibtrs bench" and "ibtrs demo"
 * (bench_engine.c) and the printing of its progress and results
 * (bench_report.c).
 */
#ifndef IBTRS_TOOL_BENCH_H
#define IBTRS_TOOL_BENCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ibtrs.h"

struct tool_sec;
struct hist;

#define BENCH_DEFAULT_BS 4096
#define BENCH_DEFAULT_QD 64
#define BENCH_DEFAULT_THREADS 1
#define BENCH_DEFAULT_TIME 10.0
#define BENCH_MAX_QD 65536
#define BENCH_MAX_THREADS 256
/* Most sessions of one "ibtrs bench --sessions". */
#define BENCH_MAX_SESSIONS 1024
/* Limits of --hb-timeout and --failover-timeout, milliseconds. */
#define BENCH_MIN_HB_TIMEOUT_MS 100
#define BENCH_MAX_TIMEOUT_MS 3600000

/**
 * enum bench_rw - request mix, as fio's --rw
 * @BENCH_READ: READs, each slot walking its blocks in order
 * @BENCH_WRITE: WRITEs, in order
 * @BENCH_RANDREAD: READs of random blocks
 * @BENCH_RANDWRITE: WRITEs of random blocks
 * @BENCH_RW: READs and WRITEs (cfg->rwmixread percent READs), in order
 * @BENCH_RANDRW: READs and WRITEs of random blocks
 *
 * In order: slot i of a thread owns blocks i, i + qd, i + 2 qd, ..., so
 * the slots together sweep the target from its start, qd blocks at a time.
 */
enum bench_rw {
	BENCH_READ,
	BENCH_WRITE,
	BENCH_RANDREAD,
	BENCH_RANDWRITE,
	BENCH_RW,
	BENCH_RANDRW,
};

#define BENCH_DEFAULT_RWMIXREAD 50

/**
 * struct bench_tick - progress of a running benchmark, once per second
 * @elapsed: seconds since the start
 * @dt: seconds since the last tick (the interval the rates are over)
 * @real_ns: CLOCK_REALTIME of the tick, nanoseconds (the clock of the
 *           session's events)
 * @iops: requests completed per second during the last interval
 * @mbps: data rate of the last interval, 1e6 bytes per second
 * @ops: requests completed since the start
 * @p99_us: 99th percentile latency of the last interval, microseconds
 * @max_us: longest latency of the last interval (its histogram bucket),
 *          microseconds
 * @errors: failed requests since the start
 * @verify_failures: reads that returned wrong data since the start
 * @sess: the session (for ibtrs_clt_inject_fault() and the like)
 * @path_cnt: number of valid @path_ops and @path_state entries
 * @path_ops: per path, requests completed during the last interval
 * @path_state: per path, its state now
 */
struct bench_tick {
	double elapsed;
	double dt;
	uint64_t real_ns;
	double iops;
	double mbps;
	double p99_us;
	double max_us;
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
 * @rwmixread: with BENCH_RW and BENCH_RANDRW, percent of READs (0..100)
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
 * @sec: TLS and the key, resolved (tool_sec_resolve()); NULL for none
 * @progress: called once per second from the calling thread, or NULL
 * @progress_arg: passed to @progress
 * @sessions: sessions of the run (bench_run_sessions(); 0 or 1: one)
 * @loop_threads: the session's ibtrs_clt_opts.loop_threads (0: a loop of
 *                its own)
 * @part, @parts: with @parts > 1 the run uses part @part of @parts of the
 *                target, so that sessions of one process never share a
 *                block
 * @group: the sessions of one bench_run_sessions(), which start together
 *         and stop on its signal; NULL for a run of its own
 * @hist_out: if not NULL, the run's latencies are merged into it
 */
struct bench_cfg {
	const char *const *paths;
	size_t path_cnt;
	uint16_t port;
	enum bench_rw rw;
	unsigned int rwmixread;
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
	const struct tool_sec *sec;
	bench_progress_fn *progress;
	void *progress_arg;
	uint32_t sessions;
	uint32_t loop_threads;
	uint32_t part, parts;
	struct bench_group *group;
	struct hist *hist_out;
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
 * @qd: requests that could be in flight: cfg->qd, or less when the
 *      session's queue depth (or the target) bounds it
 * @lat_cnt: requests whose latency was recorded; 0 leaves the latency
 *           figures 0
 * @min_us: smallest latency in microseconds
 * @mean_us: mean latency in microseconds
 * @max_us: largest latency in microseconds
 * @p50_us: median latency in microseconds
 * @p90_us: 90th percentile latency in microseconds
 * @p99_us: 99th percentile latency in microseconds
 * @p999_us: 99.9th percentile latency in microseconds
 * @p9999_us: 99.99th percentile latency in microseconds
 * @ops: successful requests (@read_ops + @write_ops)
 * @read_ops: successful READs
 * @write_ops: successful WRITEs
 * @bytes: data bytes of the successful requests
 * @errors: failed requests
 * @aborted: of @errors, those still in flight when the run ended, failed
 *           by the session's close
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
	uint32_t qd;
	uint64_t lat_cnt;
	double min_us;
	double mean_us;
	double max_us;
	double p50_us;
	double p90_us;
	double p99_us;
	double p999_us;
	double p9999_us;
	uint64_t ops;
	uint64_t read_ops;
	uint64_t write_ops;
	uint64_t bytes;
	uint64_t errors;
	uint64_t aborted;
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
	/* at-most-once: requests completed -ECONNRESET after a session loss
	 * (may or may not have run; neither errors nor verified), and the
	 * session's counters (ibtrs_clt_get_stats()) */
	uint64_t unknown_outcome;
	uint64_t session_losses;
	uint64_t replayed_after_loss;
	/* the signal that ended the run early, 0 for none */
	int signal;
	/* bench_run_sessions(): the sessions that ran, the loops they shared
	 * (0: a loop each) and each session's p99 latency, microseconds */
	uint32_t sessions;
	uint32_t loops;
	double sess_p99_us[BENCH_MAX_SESSIONS];
};

const char *bench_rw_str(enum bench_rw rw);
int bench_rw_parse(const char *s, enum bench_rw *rw);
bool bench_rw_reads_only(enum bench_rw rw);
const char *bench_submit_str(enum bench_submit submit);
void bench_cfg_init(struct bench_cfg *cfg);
void bench_print_event(FILE *f, const struct ibtrs_event *ev);
int bench_run(const struct bench_cfg *cfg, struct bench_res *res);
struct hist;
void bench_res_lat(struct bench_res *res, const struct hist *all);

/**
 * struct bench_group - the sessions of one bench_run_sessions()
 * @lock: protects what follows
 * @cond: signalled when a session is ready or the signal came
 * @n: sessions
 * @ready: sessions open (or failed to open)
 * @signal: the signal that ends every run, 0 for none yet
 */
struct bench_group {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int n;
	unsigned int ready;
	int signal;
};

/* bench_group.c: the sessions' start and stop together */
void bench_group_init(struct bench_group *g, unsigned int n);
void bench_group_destroy(struct bench_group *g);
/* For bench_run(): the session is ready (or failed); wait for all. */
void bench_group_ready(struct bench_group *g);
/* Wait until at least @n sessions said they are ready. */
void bench_group_wait_ready(struct bench_group *g, unsigned int n);
/* Wait at most @ns for the group's signal: the signal, 0 for none. */
int bench_group_wait(struct bench_group *g, uint64_t ns);
/* End every session's run with @sig. */
void bench_group_signal(struct bench_group *g, int sig);
/* The signal that ended the runs, 0 for none. */
int bench_group_signalled(struct bench_group *g);

/* bench_sessions.c */
int bench_run_sessions(const struct bench_cfg *cfg, struct bench_res *res);
void bench_sess_p99(const struct bench_res *res, double *median, double *worst);

/* Ticks kept for a plot: an hour of seconds. */
#define BENCH_SERIES_MAX 3600

/**
 * struct bench_sample - the figures of one progress tick, for a plot
 * @t: seconds since the start
 * @iops: requests per second over all paths
 * @p99_us: p99 latency of the interval over all paths, 0 for none
 * @max_us: longest latency of the interval over all paths, 0 for none
 * @path_cnt: valid entries of @path_iops and @path_state
 * @path_iops: per path, requests per second
 * @path_state: per path, its state at the tick
 */
struct bench_sample {
	double t;
	double iops;
	double p99_us;
	double max_us;
	size_t path_cnt;
	double path_iops[IBTRS_MAX_PATHS];
	enum ibtrs_path_state path_state[IBTRS_MAX_PATHS];
};

/**
 * struct bench_series - the ticks of a run, for a plot
 * @start_real_ns: CLOCK_REALTIME of the start, to place the events
 * @n: valid @samples
 * @path_cnt: most paths any sample has
 * @samples: the ticks, oldest first
 */
struct bench_series {
	uint64_t start_real_ns;
	size_t n;
	size_t path_cnt;
	struct bench_sample samples[BENCH_SERIES_MAX];
};

/* bench_plot.c */
void bench_series_add(struct bench_series *s, const struct bench_tick *tick);
int bench_plot_svg(const char *file, const char *title,
		   const struct bench_series *s, const struct bench_res *res);

/**
 * struct bench_prog - what "ibtrs bench" does once per second
 * @tty: a progress line for humans on stderr
 * @json: a JSON line on stderr (--interval-json)
 * @series: keep the tick for --plot, or NULL
 */
struct bench_prog {
	bool tty;
	bool json;
	struct bench_series *series;
};

/* bench_report.c */
void bench_progress(void *arg, const struct bench_tick *tick);
int bench_print_json(const struct bench_cfg *cfg, const struct bench_res *res);
void bench_print_table(const struct bench_cfg *cfg,
		       const struct bench_res *res);

#endif /* IBTRS_TOOL_BENCH_H */
