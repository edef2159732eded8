// SPDX-License-Identifier: MIT
/*
 * bench_report.c - what "ibtrs bench" prints: the progress once a second
 * (a line for humans, or JSON with --interval-json), the result as a table
 * or one JSON object (written with the library's JSON writer), and the
 * events of the session.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "json.h"
#include "tool.h"

/**
 * bench_print_event() - print one event of a session's log, one line
 * @f: output stream
 * @ev: the event
 */
void bench_print_event(FILE *f, const struct ibtrs_event *ev)
{
	time_t sec = (time_t)(ev->ts_ns / 1000000000ull);
	char when[16] = "??:??:??";
	struct tm tm;

	if (localtime_r(&sec, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	if (ev->path < 0)
		fprintf(f, "  %s.%03u  session: %.*s\n", when,
			(unsigned int)(ev->ts_ns % 1000000000ull / 1000000),
			(int)sizeof(ev->msg), ev->msg);
	else
		fprintf(f, "  %s.%03u  path %d: %.*s\n", when,
			(unsigned int)(ev->ts_ns % 1000000000ull / 1000000),
			ev->path, (int)sizeof(ev->msg), ev->msg);
}

/**
 * bench_progress() - progress of "ibtrs bench" on stderr
 * @arg: the struct bench_prog
 * @tick: the progress
 */
void bench_progress(void *arg, const struct bench_tick *tick)
{
	const struct bench_prog *prog = arg;
	size_t i;

	if (prog->series)
		bench_series_add(prog->series, tick);
	if (prog->json) {
		struct json j;

		json_init(&j);
		json_obj_begin(&j, NULL);
		json_fixed(&j, "t", tick->elapsed, 3);
		json_fixed(&j, "iops", tick->iops, 1);
		json_fixed(&j, "p99_us", tick->p99_us, 1);
		json_fixed(&j, "max_us", tick->max_us, 1);
		json_arr_begin(&j, "paths");
		for (i = 0; i < tick->path_cnt; i++)
			json_u64(&j, NULL, tick->path_ops[i]);
		json_arr_end(&j);
		json_obj_end(&j);
		/* One write per line, not to interleave with warnings. */
		if (!j.oom)
			fprintf(stderr, "%s\n", j.buf);
		json_free(&j);
		fflush(stderr);
	}
	if (prog->tty)
		fprintf(stderr,
			"[%6.1fs] %10.0f IOPS %10.2f MB/s  ops %llu  errors %llu  verify failures %llu\n",
			tick->elapsed, tick->iops, tick->mbps,
			(unsigned long long)tick->ops,
			(unsigned long long)tick->errors,
			(unsigned long long)tick->verify_failures);
}

/* CPU time per request in microseconds, or -1 without requests. */
static double bench_us_per_req(const struct bench_res *res, double user_s,
			       double sys_s)
{
	return res->ops ? (user_s + sys_s) * 1e6 / (double)res->ops : -1.0;
}

/**
 * bench_cpu_json() - the CPU time of one side
 * @j: the writer
 * @key: "client" or "server"
 * @res: the result
 * @user_s: user CPU seconds
 * @sys_s: system CPU seconds
 */
static void bench_cpu_json(struct json *j, const char *key,
			   const struct bench_res *res, double user_s,
			   double sys_s)
{
	json_obj_begin(j, key);
	json_fixed(j, "user_s", user_s, 3);
	json_fixed(j, "sys_s", sys_s, 3);
	/* No request completed: there is no time per request. */
	if (res->ops)
		json_fixed(j, "us_per_req",
			   bench_us_per_req(res, user_s, sys_s), 3);
	else
		json_null(j, "us_per_req");
	json_obj_end(j);
}

/* CPU time per request for the table, "n/a" without requests. */
static const char *bench_us_per_req_str(char *buf, size_t size,
					const struct bench_res *res,
					double user_s, double sys_s)
{
	if (!res->ops)
		return "n/a";
	snprintf(buf, size, "%.2f us", bench_us_per_req(res, user_s, sys_s));
	return buf;
}

/**
 * bench_print_cpu_json() - the "cpu" member of the JSON result
 * @j: the writer
 * @res: the result
 *
 * Per request: (user + sys) / requests; "server" is null when the server
 * did not report its CPU time.
 */
static void bench_print_cpu_json(struct json *j, const struct bench_res *res)
{
	json_obj_begin(j, "cpu");
	bench_cpu_json(j, "client", res, res->clt_user_s, res->clt_sys_s);
	if (res->srv_cpu)
		bench_cpu_json(j, "server", res, res->srv_user_s,
			       res->srv_sys_s);
	else
		json_null(j, "server");
	json_obj_end(j);
}

/**
 * bench_amo_json() - the at-most-once members of the JSON result
 * @j: the writer
 * @res: the result
 *
 * "unknown_outcome": requests completed -ECONNRESET after a session loss,
 * neither in "errors" nor verified; "signal": what ended the run early.
 */
static void bench_amo_json(struct json *j, const struct bench_res *res)
{
	json_u64(j, "unknown_outcome", res->unknown_outcome);
	json_u64(j, "session_losses", res->session_losses);
	json_u64(j, "replayed_after_loss", res->replayed_after_loss);
	if (res->signal)
		json_str(j, "signal",
			 res->signal == SIGINT ? "SIGINT" : "SIGTERM");
	else
		json_null(j, "signal");
}

/**
 * bench_amo_table() - the at-most-once lines of the human result
 * @res: the result
 */
static void bench_amo_table(const struct bench_res *res)
{
	if (res->session_losses || res->unknown_outcome ||
	    res->replayed_after_loss)
		printf("session lost %llu times: %llu requests of unknown outcome (may or may not have run), %llu replayed after a loss\n",
		       (unsigned long long)res->session_losses,
		       (unsigned long long)res->unknown_outcome,
		       (unsigned long long)res->replayed_after_loss);
	if (res->signal)
		printf("stopped early by %s\n",
		       res->signal == SIGINT ? "SIGINT" : "SIGTERM");
}

/**
 * bench_target_json() - the "target" member of the JSON result
 * @j: the writer
 * @cfg: the configuration
 * @res: the result
 */
static void bench_target_json(struct json *j, const struct bench_cfg *cfg,
			      const struct bench_res *res)
{
	json_obj_begin(j, "target");
	if (cfg->export_name) {
		json_str(j, "export", cfg->export_name);
		json_u64(j, "size", res->export_size);
		json_u64(j, "logical_block_size", res->export_lbs);
		if (cfg->verify)
			json_u64(j, "final_verified", res->final_verified);
	} else {
		json_bool(j, "memory", true);
		json_u64(j, "size", TOOL_TARGET_SIZE);
	}
	json_obj_end(j);
}

/**
 * bench_paths_json() - the "paths" member of the JSON result
 * @j: the writer
 * @res: the result
 */
static void bench_paths_json(struct json *j, const struct bench_res *res)
{
	const struct bench_path_res *p;
	size_t i;

	json_arr_begin(j, "paths");
	for (i = 0; i < res->path_cnt; i++) {
		p = &res->paths[i];
		json_obj_begin(j, NULL);
		json_str(j, "addr", p->addr);
		json_str(j, "state", ibtrs_path_state_str(p->st.state));
		json_u64(j, "ops", p->st.rd_ops + p->st.wr_ops);
		json_u64(j, "rd_ops", p->st.rd_ops);
		json_u64(j, "wr_ops", p->st.wr_ops);
		json_u64(j, "errors", p->st.errors);
		json_u64(j, "failovers", p->st.failovers);
		json_u64(j, "reconnect_attempts", p->st.reconnect_attempts);
		json_u64(j, "reconnects", p->st.reconnects);
		json_u64(j, "hb_rtt_us", p->st.hb_rtt_us);
		json_bool(j, "demoted", p->st.demoted);
		json_u64(j, "demotions", p->st.demotions);
		json_obj_begin(j, "lat_us");
		json_u64(j, "p50", p->st.lat_p50_us);
		json_u64(j, "p99", p->st.lat_p99_us);
		json_u64(j, "p999", p->st.lat_p999_us);
		json_u64(j, "max", p->st.lat_max_us);
		json_obj_end(j);
		json_obj_end(j);
	}
	json_arr_end(j);
}

/**
 * bench_events_json() - the "events" member of the JSON result
 * @j: the writer
 * @res: the result
 *
 * Timestamps in seconds with microseconds, as the event log keeps them.
 */
static void bench_events_json(struct json *j, const struct bench_res *res)
{
	size_t i;

	json_arr_begin(j, "events");
	for (i = 0; i < res->event_cnt; i++) {
		const struct ibtrs_event *ev = &res->events[i];
		char msg[sizeof(ev->msg) + 1];

		snprintf(msg, sizeof(msg), "%.*s", (int)sizeof(ev->msg),
			 ev->msg);
		json_obj_begin(j, NULL);
		/* Whole seconds plus whole microseconds: exact in a double
		 * to well under half a microsecond. */
		json_fixed(j, "ts",
			   (double)(ev->ts_ns / 1000000000ull) +
				   (double)(ev->ts_ns % 1000000000ull / 1000) /
					   1e6,
			   6);
		json_i64(j, "path", ev->path);
		json_str(j, "msg", msg);
		json_obj_end(j);
	}
	json_arr_end(j);
}

/**
 * bench_print_json() - print a result as one JSON object on stdout
 * @cfg: the configuration
 * @res: the result
 *
 * Return: 0, or -1 (with a message) when out of memory.
 */
/* --sessions: how many, on how many loops, and each one's p99. */
static void bench_sessions_json(struct json *j, const struct bench_res *res)
{
	double med, worst;
	uint32_t i;

	bench_sess_p99(res, &med, &worst);
	json_u64(j, "sessions", res->sessions);
	json_u64(j, "loops", res->loops);
	json_fixed(j, "sess_p99_median_us", med, 1);
	json_fixed(j, "sess_p99_worst_us", worst, 1);
	json_arr_begin(j, "sess_p99_us");
	for (i = 0; i < res->sessions; i++)
		json_fixed(j, NULL, res->sess_p99_us[i], 1);
	json_arr_end(j);
}

int bench_print_json(const struct bench_cfg *cfg, const struct bench_res *res)
{
	struct json j;

	json_init(&j);
	json_obj_begin(&j, NULL);
	json_fixed(&j, "iops", res->iops, 1);
	json_fixed(&j, "mbps", res->mbps, 3);
	/* As fio's clat: the extremes, the mean and the percentiles; null
	 * when no request completed. */
	json_obj_begin(&j, "lat_us");
	if (res->lat_cnt) {
		json_fixed(&j, "min", res->min_us, 1);
		json_fixed(&j, "mean", res->mean_us, 1);
		json_fixed(&j, "max", res->max_us, 1);
		json_fixed(&j, "p50", res->p50_us, 1);
		json_fixed(&j, "p90", res->p90_us, 1);
		json_fixed(&j, "p99", res->p99_us, 1);
		json_fixed(&j, "p999", res->p999_us, 1);
		json_fixed(&j, "p9999", res->p9999_us, 1);
	} else {
		static const char *const keys[] = { "min",  "mean", "max",
						    "p50",  "p90",  "p99",
						    "p999", "p9999" };
		size_t k;

		for (k = 0; k < ARRAY_SIZE(keys); k++)
			json_null(&j, keys[k]);
	}
	json_obj_end(&j);
	json_u64(&j, "ops", res->ops);
	json_u64(&j, "read_ops", res->read_ops);
	json_u64(&j, "write_ops", res->write_ops);
	json_u64(&j, "bytes", res->bytes);
	json_u64(&j, "errors", res->errors);
	json_u64(&j, "aborted", res->aborted);
	json_u64(&j, "verify_failures", res->verify_failures);
	json_u64(&j, "lost", res->lost);
	json_fixed(&j, "max_gap_ms", res->max_gap_ms, 1);
	json_fixed(&j, "time_s", res->time_s, 3);
	json_u64(&j, "bs", cfg->bs);
	/* What was in flight at most; what was asked when that is more. */
	json_u64(&j, "qd", res->qd);
	json_u64(&j, "qd_requested", cfg->qd);
	json_u64(&j, "threads", cfg->threads);
	json_str(&j, "rw", bench_rw_str(cfg->rw));
	if (cfg->rw == BENCH_RW || cfg->rw == BENCH_RANDRW)
		json_u64(&j, "rwmixread", cfg->rwmixread);
	json_str(&j, "submit", bench_submit_str(cfg->submit));
	json_u64(&j, "callback_submits", res->cb_submits);
	json_u64(&j, "busy_poll_us", cfg->busy_poll_us);
	json_bool(&j, "busy_poll_adaptive", cfg->busy_poll_adaptive);
	json_str(&j, "policy", res->policy);
	if (cfg->sessions > 1)
		bench_sessions_json(&j, res);
	bench_target_json(&j, cfg, res);
	bench_paths_json(&j, res);
	bench_amo_json(&j, res);
	bench_print_cpu_json(&j, res);
	if (cfg->events)
		bench_events_json(&j, res);
	json_obj_end(&j);
	if (j.oom) {
		json_free(&j);
		fprintf(stderr, "%s bench: out of memory\n", TOOL_NAME);
		return -1;
	}
	printf("%s\n", j.buf);
	json_free(&j);
	return 0;
}

/**
 * bench_print_counters() - the request counters line of the table
 * @cfg: the configuration
 * @res: the result
 *
 * The one place for counters of the outcome of requests: one more goes
 * here, in the same "name N" form.
 */
static void bench_print_counters(const struct bench_cfg *cfg,
				 const struct bench_res *res)
{
	printf("requests: reads %llu, writes %llu, %llu bytes, errors %llu, lost %llu",
	       (unsigned long long)res->read_ops,
	       (unsigned long long)res->write_ops,
	       (unsigned long long)res->bytes, (unsigned long long)res->errors,
	       (unsigned long long)res->lost);
	printf(", longest gap %.1f ms", res->max_gap_ms);
	if (cfg->verify)
		printf(", %llu reads verified, verify failures: %llu",
		       (unsigned long long)res->verified,
		       (unsigned long long)res->verify_failures);
	if (cfg->verify && cfg->export_name)
		printf(", %llu written blocks read back at the end",
		       (unsigned long long)res->final_verified);
	printf("\n");
}

/**
 * bench_print_table() - print a result for humans on stdout
 * @cfg: the configuration
 * @res: the result
 *
 * The latency block is fio's clat block: min, max, mean, then the
 * percentiles up to p99.99, so that a few requests stuck in a failover
 * show in the max even when the percentiles hide them.
 */
void bench_print_table(const struct bench_cfg *cfg, const struct bench_res *res)
{
	const struct bench_path_res *p;
	char cu[32], su[32];
	size_t i;

	printf("%s bench: rw=%s", TOOL_NAME, bench_rw_str(cfg->rw));
	if (cfg->rw == BENCH_RW || cfg->rw == BENCH_RANDRW)
		printf(" rwmixread=%u", cfg->rwmixread);
	printf(" bs=%u iodepth=%u", cfg->bs, res->qd);
	if (res->qd != cfg->qd)
		printf(" (%u asked)", cfg->qd);
	printf(" numjobs=%u submit=%s policy=%s runtime=%.2fs%s\n",
	       cfg->threads, bench_submit_str(cfg->submit), res->policy,
	       res->time_s, cfg->verify ? " verify" : "");
	if (cfg->sessions > 1) {
		double med, worst;

		bench_sess_p99(res, &med, &worst);
		printf("sessions: %u on %u loop thread%s%s; p99 (us) of a "
		       "session: median %.1f, worst %.1f\n",
		       res->sessions, res->loops, res->loops == 1 ? "" : "s",
		       res->loops ? " shared" : " (one each)", med, worst);
	}
	if (cfg->export_name)
		printf("target: export '%s', %llu bytes, logical block %u\n",
		       cfg->export_name, (unsigned long long)res->export_size,
		       res->export_lbs);
	else
		printf("target: memory, %llu MiB\n", TOOL_TARGET_SIZE >> 20);
	printf("  IOPS %.0f, %.2f MB/s, %llu ops, errors %llu, vfail %llu\n",
	       res->iops, res->mbps, (unsigned long long)res->ops,
	       (unsigned long long)res->errors,
	       (unsigned long long)res->verify_failures);
	if (res->lat_cnt) {
		printf("  clat (us): min=%.1f, max=%.1f, avg=%.1f\n",
		       res->min_us, res->max_us, res->mean_us);
		printf("  clat percentiles (us): p50=%.1f, p90=%.1f, p99=%.1f, p99.9=%.1f, p99.99=%.1f\n",
		       res->p50_us, res->p90_us, res->p99_us, res->p999_us,
		       res->p9999_us);
	} else {
		printf("  clat (us): n/a, no request completed\n");
	}
	bench_print_counters(cfg, res);
	printf("CPU per request: client %s (user %.2f s, sys %.2f s)",
	       bench_us_per_req_str(cu, sizeof(cu), res, res->clt_user_s,
				    res->clt_sys_s),
	       res->clt_user_s, res->clt_sys_s);
	if (res->srv_cpu)
		printf(", server %s (user %.2f s, sys %.2f s)",
		       bench_us_per_req_str(su, sizeof(su), res,
					    res->srv_user_s, res->srv_sys_s),
		       res->srv_user_s, res->srv_sys_s);
	else
		printf(", server n/a");
	printf("\n");
	bench_amo_table(res);
	printf("\n%-40s %-14s %12s %9s %10s %10s %10s\n", "path", "state",
	       "ops", "failovers", "reconnects", "p99 us", "max us");
	for (i = 0; i < res->path_cnt; i++) {
		p = &res->paths[i];
		/* Connected but sick: the status table's "demoted!". */
		printf("%-40s %-14s %12llu %9llu %10llu %10llu %10llu\n",
		       p->addr,
		       p->st.demoted && p->st.state == IBTRS_PATH_CONNECTED
			       ? "demoted"
			       : ibtrs_path_state_str(p->st.state),
		       (unsigned long long)(p->st.rd_ops + p->st.wr_ops),
		       (unsigned long long)p->st.failovers,
		       (unsigned long long)p->st.reconnects,
		       (unsigned long long)p->st.lat_p99_us,
		       (unsigned long long)p->st.lat_max_us);
	}
	if (cfg->events) {
		printf("\nevents:\n");
		for (i = 0; i < res->event_cnt; i++)
			bench_print_event(stdout, &res->events[i]);
	}
}
