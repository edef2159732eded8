// SPDX-License-Identifier: MIT
/*
 * bench_sessions.c - "ibtrs bench --sessions N": N sessions in one process,
 * each a run of bench_engine.c on its own thread with its share of the
 * queue depth and its own part of the target, on shared client loops
 * (ibtrs_clt_opts.loop_threads). They open one after the other and
 * start together once every one is open; the calling thread takes SIGINT
 * and SIGTERM for all of them; their results make one: sums of the counts
 * and rates, the latencies of all their requests, and each session's p99.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "hist.h"
#include "tool.h"

/* How often the calling thread looks whether every session is done. */
#define GROUP_POLL_MS 100

/**
 * struct bench_sess - one session's run
 * @cfg: its configuration
 * @res: its result
 * @hist: its latencies
 * @ret: what bench_run() returned
 * @done: set once bench_run() returned (atomic)
 * @thread: the thread running it
 */
struct bench_sess {
	struct bench_cfg cfg;
	struct bench_res res;
	struct hist hist;
	char name[NAME_MAX];
	int ret;
	int done;
	pthread_t thread;
};

static void *sess_thread(void *arg)
{
	struct bench_sess *s = arg;

	s->ret = bench_run(&s->cfg, &s->res);
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Add session @s's result to @res. */
static void sum_res(struct bench_res *res, const struct bench_res *s)
{
	size_t i;

	res->iops += s->iops;
	res->mbps += s->mbps;
	res->qd += s->qd;
	res->ops += s->ops;
	res->read_ops += s->read_ops;
	res->write_ops += s->write_ops;
	res->bytes += s->bytes;
	res->errors += s->errors;
	res->aborted += s->aborted;
	res->verify_failures += s->verify_failures;
	res->verified += s->verified;
	res->submitted += s->submitted;
	res->cb_submits += s->cb_submits;
	res->lost += s->lost;
	res->unknown_outcome += s->unknown_outcome;
	res->session_losses += s->session_losses;
	res->replayed_after_loss += s->replayed_after_loss;
	if (s->time_s > res->time_s)
		res->time_s = s->time_s;
	if (s->max_gap_ms > res->max_gap_ms)
		res->max_gap_ms = s->max_gap_ms;
	/* The process's and the server's CPU time over each session's run:
	 * the same time seen from every session, not to be added. */
	if (s->clt_user_s + s->clt_sys_s > res->clt_user_s + res->clt_sys_s) {
		res->clt_user_s = s->clt_user_s;
		res->clt_sys_s = s->clt_sys_s;
	}
	if (s->srv_cpu &&
	    s->srv_user_s + s->srv_sys_s >= res->srv_user_s + res->srv_sys_s) {
		res->srv_cpu = true;
		res->srv_user_s = s->srv_user_s;
		res->srv_sys_s = s->srv_sys_s;
	}
	if (!res->policy[0])
		memcpy(res->policy, s->policy, sizeof(res->policy));
	if (s->signal)
		res->signal = s->signal;
	/* Path i of every session as one row: the first one's address. */
	for (i = 0; i < s->path_cnt; i++) {
		struct ibtrs_path_stats *d = &res->paths[i].st;
		const struct ibtrs_path_stats *p = &s->paths[i].st;

		if (i >= res->path_cnt) {
			res->paths[i] = s->paths[i];
			continue;
		}
		d->rd_ops += p->rd_ops;
		d->wr_ops += p->wr_ops;
		d->failovers += p->failovers;
		d->reconnects += p->reconnects;
		if (p->lat_p99_us > d->lat_p99_us)
			d->lat_p99_us = p->lat_p99_us;
		if (p->lat_max_us > d->lat_max_us)
			d->lat_max_us = p->lat_max_us;
	}
	if (s->path_cnt > res->path_cnt)
		res->path_cnt = s->path_cnt;
}

/**
 * bench_run_sessions() - run @cfg->sessions sessions in this process
 * @cfg: what to run: @cfg->qd and @cfg->threads are split over the
 *       sessions (at least one each), @cfg->loop_threads are the shared
 *       loops they run on
 * @res: filled with the result of all
 *
 * Return: 0 when every session ran, else the first failure's status
 * (after the others ran; the result then holds those that did).
 */
int bench_run_sessions(const struct bench_cfg *cfg, struct bench_res *res)
{
	struct bench_group g;
	unsigned int i, n = cfg->sessions, started = 0, ran = 0;
	struct bench_sess *sess;
	struct hist *all;
	int ret = 0, err;

	memset(res, 0, sizeof(*res));
	sess = calloc(n, sizeof(*sess));
	all = malloc(sizeof(*all));
	if (!sess || !all) {
		free(sess);
		free(all);
		tool_err("cannot allocate the benchmark: %s", strerror(ENOMEM));
		return TOOL_EXIT_FAIL;
	}
	hist_init(all);
	bench_group_init(&g, n);
	for (i = 0; i < n; i++) {
		struct bench_sess *s = &sess[i];

		s->cfg = *cfg;
		s->cfg.sessions = 1;
		/* The queue depth and the threads split, the first sessions
		 * taking what does not divide. */
		s->cfg.qd = cfg->qd / n + (i < cfg->qd % n);
		if (!s->cfg.qd)
			s->cfg.qd = 1;
		s->cfg.threads = cfg->threads / n + (i < cfg->threads % n);
		if (!s->cfg.threads)
			s->cfg.threads = 1;
		if (s->cfg.qd < s->cfg.threads)
			s->cfg.qd = s->cfg.threads;
		s->cfg.part = i;
		s->cfg.parts = n;
		s->cfg.group = &g;
		s->cfg.progress = NULL;
		s->cfg.events = false;
		hist_init(&s->hist);
		s->cfg.hist_out = &s->hist;
		if (cfg->sessname)
			snprintf(s->name, sizeof(s->name), "%.200s-%u",
				 cfg->sessname, i);
		else
			snprintf(s->name, sizeof(s->name), "%s-bench-%d-%u",
				 TOOL_NAME, (int)getpid(), i);
		s->cfg.sessname = s->name;
	}
	for (i = 0; i < n; i++) {
		err = pthread_create(&sess[i].thread, NULL, sess_thread,
				     &sess[i]);
		if (err) {
			tool_err("cannot start a thread: %s", strerror(err));
			break;
		}
		started++;
		/* One open at a time: a server takes only so many unfinished
		 * handshakes of one client (EAGAIN beyond). */
		bench_group_wait_ready(&g, started);
	}
	if (started < n) {
		/* Those started must not wait for the others. */
		bench_group_signal(&g, SIGTERM);
		ret = TOOL_EXIT_FAIL;
	}
	/* This thread takes the signals: one ends every session. */
	for (;;) {
		int sig;

		for (i = 0; i < started; i++)
			if (!__atomic_load_n(&sess[i].done, __ATOMIC_ACQUIRE))
				break;
		if (i == started)
			break;
		sig = tool_signal_wait(GROUP_POLL_MS, NULL);
		if (sig)
			bench_group_signal(&g, sig);
	}
	for (i = 0; i < started; i++) {
		struct bench_sess *s = &sess[i];

		pthread_join(s->thread, NULL);
		if (s->ret) {
			if (!ret)
				ret = s->ret;
			continue;
		}
		sum_res(res, &s->res);
		hist_merge(all, &s->hist);
		res->sess_p99_us[ran++] = s->res.p99_us;
	}
	bench_res_lat(res, all);
	res->sessions = ran;
	res->loops = cfg->loop_threads;
	if (!res->signal)
		res->signal = bench_group_signalled(&g);
	bench_group_destroy(&g);
	free(all);
	free(sess);
	return ret;
}

/**
 * bench_sess_p99() - the median and the worst of the sessions' p99
 * @res: a result of bench_run_sessions()
 * @median: filled with the median, microseconds
 * @worst: filled with the worst, microseconds
 */
void bench_sess_p99(const struct bench_res *res, double *median, double *worst)
{
	double v[BENCH_MAX_SESSIONS];
	size_t n = res->sessions;

	*median = *worst = 0;
	if (!n)
		return;
	memcpy(v, res->sess_p99_us, n * sizeof(v[0]));
	qsort(v, n, sizeof(v[0]), cmp_double);
	*median = v[(n - 1) / 2];
	*worst = v[n - 1];
}
