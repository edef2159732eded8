// SPDX-License-Identifier: MIT
/*
 * clt.c - the client session: open and close, its tick, registered
 * memory and the public queries. Its paths are clt_path.c's, its requests
 * clt_req.c's, its tags and geometry clt_tags.c's, its event log
 * clt_events.c's.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clt_int.h"
#include "log.h"

/* Fill entry @to of the table; write side open. */
static void mem_ent_set(struct clt_mem_ent *to, uintptr_t addr, size_t len,
			uint64_t raddr, uint32_t key)
{
	atomic_store_explicit(&to->addr, addr, memory_order_relaxed);
	atomic_store_explicit(&to->len, len, memory_order_relaxed);
	atomic_store_explicit(&to->raddr, raddr, memory_order_relaxed);
	atomic_store_explicit(&to->key, key, memory_order_relaxed);
}

/* ------------------------------------------------------------------ */
/* sessions                                                             */

void ibtrs_clt_opts_init(struct ibtrs_clt_opts *opts, size_t size)
{
	struct ibtrs_clt_opts d = {
		.size = sizeof(d),
		.port = IBTRS_DEFAULT_PORT,
		.reconnect_delay_sec = 1,
		.max_reconnect_attempts = -1,
		.connect_timeout_ms = CLT_DEFAULT_CONNECT_TIMEOUT_MS,
		.io_cons = 1,
		.policy = IBTRS_MP_MIN_INFLIGHT,
		.hb_timeout_ms = CLT_DEFAULT_HB_TIMEOUT_MS,
		.failover_timeout_ms = CLT_DEFAULT_FAILOVER_TIMEOUT_MS,
	};

	ibtrs_opts_fill(opts, size, &d, sizeof(d));
}

static void sess_free(struct ibtrs_clt *sess)
{
	unsigned int i, n = atomic_load(&sess->path_cnt);

	for (i = 0; i < n; i++)
		clt_path_free(sess->paths[i]);
	if (sess->reqs)
		for (i = 0; i < sess->queue_depth; i++)
			sess->ops->mr_free(sess->reqs[i].mr);
	if (sess->reqs_mr)
		sess->ops->mr_free(sess->reqs_mr);
	for (i = 0; i < atomic_load(&sess->nr_mems); i++) {
		sess->ops->mr_free(sess->mems[i]->mr);
		free(sess->mems[i]);
	}
	if (sess->pd)
		sess->ops->pd_free(sess->pd);
	pthread_mutex_destroy(&sess->mem_lock);
	ibtrs_tags_destroy(&sess->tag_ids);
	pthread_mutex_destroy(&sess->paths_lock);
	pthread_mutex_destroy(&sess->conn_lock);
	pthread_cond_destroy(&sess->conn_cond);
	pthread_cond_destroy(&sess->closed_cond);
	pthread_mutex_destroy(&sess->ev_lock);
	ibtrs_wipe(sess->secret, sizeof(sess->secret));
	pthread_mutex_destroy(&sess->auth_lock);
	free(sess->reqs);
	free(sess->sg_mem);
	free(sess->tags);
	ibtrs_sec_fini(&sess->sec);
	free(sess);
}

static int check_opts(const struct ibtrs_clt_opts *o)
{
	size_t n, i;

	if (!o->sessname || !o->paths || !o->path_cnt ||
	    o->path_cnt > IBTRS_MAX_PATHS ||
	    o->max_segments > CLT_MAX_SEGMENTS ||
	    o->io_cons > IBTRS_MAX_IO_CONS || !o->connect_timeout_ms ||
	    o->busy_poll_us > IBTRS_MAX_BUSY_POLL_US ||
	    o->loop_threads > IBTRS_MAX_LOOP_THREADS ||
	    o->max_reconnect_attempts < -1 ||
	    o->hb_timeout_ms < CLT_MIN_HB_TIMEOUT_MS ||
	    (o->policy != IBTRS_MP_ROUND_ROBIN &&
	     o->policy != IBTRS_MP_MIN_INFLIGHT &&
	     o->policy != IBTRS_MP_MIN_LATENCY))
		return -EINVAL;
	n = strnlen(o->sessname, NAME_MAX);
	if (!n || n >= NAME_MAX || strchr(o->sessname, '/'))
		return -EINVAL;
	for (i = 0; i < o->path_cnt; i++) {
		const struct sockaddr_storage *d = o->paths[i].dst;

		if (!d || (d->ss_family != AF_INET && d->ss_family != AF_INET6))
			return -EINVAL;
	}
	return 0;
}

static void sess_mark_open(void *arg)
{
	struct ibtrs_clt *sess = arg;

	sess->opened = true;
}

/*
 * The client loops that sessions opened with loop_threads share, process
 * wide (ibtrs_clt_opts).
 */
static struct ibtrs_loop_pool clt_loops = IBTRS_LOOP_POOL_INIT("ibtrs-clt");
static struct ibtrs_loop *clt_held_loop; /* clt_test_hold_loop() */

int clt_test_hold_loop(bool hold, struct ibtrs_loop **loopp)
{
	int ret = 0;

	if (hold && !clt_held_loop)
		ret = ibtrs_loop_pool_get(&clt_loops, 1, &clt_held_loop);
	else if (!hold && clt_held_loop) {
		ibtrs_loop_pool_put(&clt_loops, clt_held_loop);
		clt_held_loop = NULL;
	}
	if (loopp)
		*loopp = clt_held_loop;
	return ret;
}

/*
 * Give the loop up once nothing of the session is on it (its connections
 * destroyed): the tick removed, and what the session queued before has run
 * (the removal waits behind it on the loop's queue). Its own loop ends here,
 * a shared one with its last session.
 */
static void sess_loop_put(struct ibtrs_clt *sess)
{
	if (!sess->loop)
		return;
	ibtrs_loop_tick_del(sess->tick);
	sess->tick = NULL;
	if (sess->shared_loop)
		ibtrs_loop_pool_put(&clt_loops, sess->loop);
	else
		/* Runs the completions still queued. */
		ibtrs_loop_destroy(sess->loop);
	sess->loop = NULL;
}

/*
 * The session's tick, on its loop: the faults that are due, then its
 * paths (heartbeats, gray failure), then its requests (deadlines, delayed
 * responses), in that order.
 */
void clt_tick(void *arg)
{
	struct ibtrs_clt *sess = arg;
	uint64_t now = ibtrs_now_ns();

	clt_fault_tick(sess, now);
	clt_paths_tick(sess, now, ibtrs_loop_tick_late_ns());
	clt_req_tick(sess, now);
}

/* The session's loop: its own, or one of the shared ones; and its tick. */
static int sess_loop_get(struct ibtrs_clt *sess, const struct ibtrs_clt_opts *o)
{
	unsigned int tick_ms = (unsigned int)(sess->hb.tick_ns / 1000000);
	int ret;

	sess->shared_loop = o->loop_threads > 0;
	if (sess->shared_loop)
		ret = ibtrs_loop_pool_get(&clt_loops, o->loop_threads,
					  &sess->loop);
	else
		ret = ibtrs_loop_create(&sess->loop, "ibtrs-clt", NULL, NULL,
					0);
	if (ret) {
		if (ret == -EDEADLK)
			ibtrs_log(
				IBTRS_LOG_ERR,
				"session %s: opened from a callback on a shared loop, where it could wait for itself: refused",
				sess->sessname);
		sess->loop = NULL;
		return ret;
	}
	ret = ibtrs_loop_tick_add(sess->loop, clt_tick, sess, tick_ms,
				  &sess->tick);
	if (ret) {
		sess_loop_put(sess);
		return ret;
	}
	/* A shared loop polls as its last session that asked for it. */
	if (!sess->shared_loop || o->busy_poll_us)
		ibtrs_loop_set_busy_poll(sess->loop, o->busy_poll_us,
					 o->busy_poll_adaptive);
	return 0;
}

static struct ibtrs_clt *sess_alloc(const struct ibtrs_clt_opts *o)
{
	struct ibtrs_clt *sess;

	sess = calloc(1, sizeof(*sess));
	if (!sess)
		return NULL;
	snprintf(sess->sessname, sizeof(sess->sessname), "%s", o->sessname);
	ibtrs_uuid_gen(sess->uuid);
	sess->priv = o->priv;
	sess->link_ev = o->link_ev;
	sess->pdu_sz = o->pdu_sz;
	sess->port = o->port;
	sess->max_segments = o->max_segments ? o->max_segments
					     : IBTRS_DEFAULT_MAX_SEGMENTS;
	sess->connect_timeout_ms = o->connect_timeout_ms;
	sess->io_cons = o->io_cons;
	sess->reconnect_delay_sec = o->reconnect_delay_sec;
	sess->max_reconnect_attempts = o->max_reconnect_attempts;
	ibtrs_hb_init(&sess->hb, o->hb_timeout_ms);
	sess->failover_timeout_ns = (uint64_t)o->failover_timeout_ms * 1000000;
	sess->no_path_timeout_ns = (uint64_t)o->no_path_timeout_ms * 1000000;
	sess->replay_on_loss = o->replay_on_session_loss;
	atomic_init(&sess->policy, o->policy);
	sess->pending_tail = &sess->pending;
	pthread_mutex_init(&sess->paths_lock, NULL);
	pthread_mutex_init(&sess->conn_lock, NULL);
	pthread_cond_init(&sess->conn_cond, NULL);
	pthread_cond_init(&sess->closed_cond, NULL);
	pthread_mutex_init(&sess->ev_lock, NULL);
	pthread_mutex_init(&sess->mem_lock, NULL);
	pthread_mutex_init(&sess->auth_lock, NULL);
	return sess;
}

struct ibtrs_clt *ibtrs_clt_open_opts(const struct ibtrs_clt_opts *o)
{
	struct ibtrs_clt_opts opts;
	struct ibtrs_clt *sess;
	unsigned int i, up = 0;
	int ret, first_err = 0;

	if (!o ||
	    o->size < offsetof(struct ibtrs_clt_opts, connect_timeout_ms) ||
	    o->size > sizeof(opts)) {
		errno = EINVAL;
		return NULL;
	}
	ibtrs_clt_opts_init(&opts, sizeof(opts));
	memcpy(&opts, o, o->size);
	ret = check_opts(&opts);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	sess = sess_alloc(&opts);
	if (!sess) {
		errno = ENOMEM;
		return NULL;
	}
	sess->ops = ibtrs_xprt_find(opts.backend);
	if (!sess->ops) {
		ibtrs_log(IBTRS_LOG_ERR, "session %s: unknown backend %s",
			  sess->sessname, opts.backend ? opts.backend : "");
		ret = -EINVAL;
		goto free_sess;
	}
	{
		char who[NAME_MAX + 16];

		snprintf(who, sizeof(who), "session %s", sess->sessname);
		ret = ibtrs_sec_init(&sess->sec, opts.tls, opts.tls_psk_file,
				     opts.identity, true, who);
		if (ret)
			goto free_sess;
	}
	ret = clt_parse_faults(sess, getenv("IBTRS_FAULT"));
	if (ret) {
		ibtrs_log(IBTRS_LOG_ERR, "session %s: bad IBTRS_FAULT",
			  sess->sessname);
		goto free_sess;
	}
	ret = sess->ops->pd_alloc(&sess->pd, IBTRS_MAX_QUEUE_DEPTH +
						     IBTRS_MAX_MEM_REGS + 1);
	if (ret)
		goto free_sess;
	for (i = 0; i < opts.path_cnt; i++) {
		sess->paths[i] = clt_path_alloc(sess, &opts.paths[i], i);
		if (!sess->paths[i]) {
			ret = -ENOMEM;
			goto free_sess;
		}
		atomic_store(&sess->path_cnt, i + 1);
	}
	ret = sess_loop_get(sess, &opts);
	if (ret)
		goto free_sess;
	/* The connector thread starts with the first reconnect. */

	for (i = 0; i < opts.path_cnt; i++) {
		ret = clt_path_open(sess->paths[i]);
		if (!ret) {
			up++;
			continue;
		}
		if (!first_err)
			first_err = ret;
	}
	if (!up) {
		ret = first_err;
		goto stop_connector;
	}
	ibtrs_loop_call(sess->loop, sess_mark_open, sess);
	clt_event(sess, -1, "open: %u of %zu paths connected, queue depth %u",
		  up, opts.path_cnt, sess->queue_depth);
	if (!opts.no_control)
		ibtrs_ctl_register(&sess->ctl, &clt_ctl_ops, sess);
	return sess;

stop_connector:
	clt_connector_stop(sess);
	for (i = 0; i < opts.path_cnt; i++)
		clt_path_destroy_cons(sess->paths[i]);
	sess_loop_put(sess);
free_sess:
	sess_free(sess);
	errno = -ret;
	return NULL;
}

struct ibtrs_clt *
ibtrs_clt_open(void *priv, link_clt_ev_fn *link_ev, const char *sessname,
	       const struct ibtrs_addr *paths, size_t path_cnt, uint16_t port,
	       size_t pdu_sz, uint8_t reconnect_delay_sec,
	       uint16_t max_segments, int16_t max_reconnect_attempts)
{
	struct ibtrs_clt_opts opts;

	ibtrs_clt_opts_init(&opts, sizeof(opts));
	opts.priv = priv;
	opts.link_ev = link_ev;
	opts.sessname = sessname;
	opts.paths = paths;
	opts.path_cnt = path_cnt;
	opts.port = port;
	opts.pdu_sz = pdu_sz;
	opts.reconnect_delay_sec = reconnect_delay_sec;
	opts.max_segments = max_segments;
	opts.max_reconnect_attempts = max_reconnect_attempts;
	return ibtrs_clt_open_opts(&opts);
}

static void sess_say_close(void *arg)
{
	struct ibtrs_clt *sess = arg;
	unsigned int i, n = atomic_load(&sess->path_cnt);

	sess->opened = false; /* no link events for a close on request */
	for (i = 0; i < n; i++)
		clt_path_say_close(sess->paths[i]);
}

/* Whether a path of @sess is connected. */
static bool sess_any_up(struct ibtrs_clt *sess)
{
	unsigned int i, n = atomic_load(&sess->path_cnt);

	for (i = 0; i < n; i++)
		if (atomic_load(&sess->paths[i]->state) == IBTRS_PATH_CONNECTED)
			return true;
	return false;
}

/*
 * Wait (bounded) for the server to close the paths after CLOSE: woken by
 * each path that leaves CONNECTED (path_change()), not polled, so that a
 * close ends as soon as the server answered.
 */
static void sess_wait_closed(struct ibtrs_clt *sess)
{
	struct timespec ts;
	int ret = 0;

	ibtrs_deadline_in(&ts, CLT_CLOSE_WAIT_MS);
	pthread_mutex_lock(&sess->conn_lock);
	while (!ret && sess_any_up(sess))
		ret = pthread_cond_timedwait(&sess->closed_cond,
					     &sess->conn_lock, &ts);
	pthread_mutex_unlock(&sess->conn_lock);
}

static void sess_close_paths(void *arg)
{
	struct ibtrs_clt *sess = arg;
	unsigned int i, n = atomic_load(&sess->path_cnt);

	sess->opened = false;
	for (i = 0; i < n; i++)
		clt_path_close(sess->paths[i]);
	clt_fail_pending(sess, -ECONNABORTED);
}

void ibtrs_clt_close(struct ibtrs_clt *sess)
{
	unsigned int i, n;

	if (!sess)
		return;
	ibtrs_ctl_unregister(&sess->ctl);
	atomic_store(&sess->closing, true);
	/* Callers still inside ibtrs_clt_get_tag() must leave first. */
	if (sess->have_geometry)
		ibtrs_tags_shutdown(&sess->tag_ids);

	clt_connector_stop(sess);
	ibtrs_loop_call(sess->loop, sess_say_close, sess);
	sess_wait_closed(sess);
	ibtrs_loop_call(sess->loop, sess_close_paths, sess);
	n = atomic_load(&sess->path_cnt);
	for (i = 0; i < n; i++)
		clt_path_destroy_cons(sess->paths[i]);
	/* The completions still queued run, then no callback is left. */
	sess_loop_put(sess);
	sess_free(sess);
}

int ibtrs_clt_query(struct ibtrs_clt *sess, struct ibtrs_attrs *attr)
{
	unsigned int i, up = 0, n;

	if (!sess || !attr)
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	n = atomic_load(&sess->path_cnt);
	attr->queue_depth = sess->queue_depth;
	attr->max_io_size = sess->max_io_size;
	attr->max_segments = sess->max_segments;
	attr->path_cnt = n;
	snprintf((char *)attr->sessname, sizeof(attr->sessname), "%s",
		 sess->sessname);
	for (i = 0; i < n; i++)
		if (atomic_load(&sess->paths[i]->state) == IBTRS_PATH_CONNECTED)
			up++;
	attr->connected_paths = up;
	return up ? 0 : -ECOMM;
}

int ibtrs_clt_path_stats(struct ibtrs_clt *sess, unsigned int idx,
			 struct ibtrs_path_stats *st)
{
	struct ibtrs_path_stats v;
	struct clt_path *path;

	if (!sess || !st || st->size < offsetof(struct ibtrs_path_stats, src))
		return -EINVAL;
	path = clt_path_get(sess, idx);
	if (!path)
		return -ENOENT;
	memset(&v, 0, sizeof(v));
	v.size = st->size < sizeof(v) ? st->size : sizeof(v);
	v.state = (enum ibtrs_path_state)atomic_load(&path->state);
	snprintf(v.src, sizeof(v.src), "%s", path->src_str);
	snprintf(v.dst, sizeof(v.dst), "%s", path->dst_str);
	v.inflight = atomic_load(&path->inflight);
	v.rd_ops = atomic_load(&path->rd_ops);
	v.rd_bytes = atomic_load(&path->rd_bytes);
	v.wr_ops = atomic_load(&path->wr_ops);
	v.wr_bytes = atomic_load(&path->wr_bytes);
	v.errors = atomic_load(&path->errors);
	v.proto_errors = atomic_load(&path->proto_errors);
	v.failovers = atomic_load(&path->failovers);
	v.reconnect_attempts = atomic_load(&path->reconnect_attempts);
	v.reconnects = atomic_load(&path->reconnects);
	v.hb_rtt_us = atomic_load(&path->hb_rtt_ns) / 1000;
	v.lat_p50_us = ibtrs_hist_quantile(&path->hist, 0.50) / 1000;
	v.lat_p99_us = ibtrs_hist_quantile(&path->hist, 0.99) / 1000;
	v.lat_p999_us = ibtrs_hist_quantile(&path->hist, 0.999) / 1000;
	v.lat_max_us = ibtrs_hist_quantile(&path->hist, 1.0) / 1000;
	v.demoted = atomic_load(&path->demoted);
	snprintf(v.demote_reason, sizeof(v.demote_reason), "%s",
		 v.demoted
			 ? clt_gray_reason_str(atomic_load(&path->gray_reason))
			 : "");
	v.demotions = atomic_load(&path->demotions);
	v.readmissions = atomic_load(&path->readmissions);
	v.proto_xprt = atomic_load(&path->proto_xprt);
	memcpy(st, &v, v.size);
	return 0;
}

int ibtrs_clt_get_stats(struct ibtrs_clt *sess, struct ibtrs_clt_stats *st)
{
	struct ibtrs_clt_stats v;
	unsigned int i, n;

	if (!sess || !st ||
	    st->size < offsetof(struct ibtrs_clt_stats, proto_errors))
		return -EINVAL;
	memset(&v, 0, sizeof(v));
	v.size = st->size < sizeof(v) ? st->size : sizeof(v);
	v.incarnation = atomic_load(&sess->inc_shown);
	v.session_losses = atomic_load(&sess->session_losses);
	v.unknown_outcome = atomic_load(&sess->unknown_outcome);
	v.replayed_after_loss = atomic_load(&sess->replayed_after_loss);
	n = atomic_load(&sess->path_cnt);
	for (i = 0; i < n; i++) {
		v.proto_errors += atomic_load(&sess->paths[i]->proto_errors);
		v.proto_xprt += atomic_load(&sess->paths[i]->proto_xprt);
	}
	memcpy(st, &v, v.size);
	return 0;
}

/* Loop thread: it writes the per-request counters and histograms. */
static void reset_stats_fn(void *arg)
{
	struct ibtrs_clt *sess = arg;
	unsigned int i, n;

	n = atomic_load(&sess->path_cnt);
	for (i = 0; i < n; i++) {
		struct clt_path *p = sess->paths[i];

		atomic_store(&p->rd_ops, 0);
		atomic_store(&p->rd_bytes, 0);
		atomic_store(&p->wr_ops, 0);
		atomic_store(&p->wr_bytes, 0);
		atomic_store(&p->errors, 0);
		atomic_store(&p->proto_errors, 0);
		atomic_store(&p->proto_xprt, 0);
		atomic_store(&p->failovers, 0);
		atomic_store(&p->reconnect_attempts, 0);
		atomic_store(&p->reconnects, 0);
		ibtrs_hist_reset(&p->hist);
	}
}

void ibtrs_clt_reset_stats(struct ibtrs_clt *sess)
{
	if (sess)
		ibtrs_loop_call(sess->loop, reset_stats_fn, sess);
}

const char *ibtrs_mp_policy_str(int policy)
{
	switch (policy) {
	case IBTRS_MP_ROUND_ROBIN:
		return "round-robin";
	case IBTRS_MP_MIN_INFLIGHT:
		return "min-inflight";
	case IBTRS_MP_MIN_LATENCY:
		return "min-latency";
	}
	return "unknown";
}

int ibtrs_clt_set_policy(struct ibtrs_clt *sess, int policy)
{
	if (!sess ||
	    (policy != IBTRS_MP_ROUND_ROBIN &&
	     policy != IBTRS_MP_MIN_INFLIGHT && policy != IBTRS_MP_MIN_LATENCY))
		return -EINVAL;
	if (atomic_exchange(&sess->policy, policy) != policy)
		clt_event(sess, -1, "policy %s", ibtrs_mp_policy_str(policy));
	return 0;
}

int ibtrs_clt_get_policy(struct ibtrs_clt *sess)
{
	return sess ? atomic_load(&sess->policy) : -EINVAL;
}

/* ------------------------------------------------------------------ */
/* registered memory                                                    */

struct ibtrs_mem *ibtrs_clt_mem_reg(struct ibtrs_clt *sess, void *addr,
				    size_t len)
{
	struct iovec iov = { .iov_base = addr, .iov_len = len };
	struct ibtrs_mem *m;
	unsigned int n;
	int ret;

	if (!sess || !addr || !len) {
		errno = EINVAL;
		return NULL;
	}
	if (atomic_load(&sess->nr_mems) >= IBTRS_MAX_MEM_REGS) {
		errno = ENOSPC;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	ret = sess->ops->mr_alloc(sess->pd, 1, &m->mr);
	if (!ret) {
		ret = sess->ops->mr_map(m->mr, &iov, 1);
		if (ret)
			sess->ops->mr_free(m->mr);
	}
	if (ret) {
		free(m);
		errno = -ret;
		return NULL;
	}
	pthread_mutex_lock(&sess->mem_lock);
	n = atomic_load(&sess->nr_mems);
	if (n >= IBTRS_MAX_MEM_REGS) {
		pthread_mutex_unlock(&sess->mem_lock);
		sess->ops->mr_unmap(m->mr);
		sess->ops->mr_free(m->mr);
		free(m);
		errno = ENOSPC;
		return NULL;
	}
	sess->mems[n] = m;
	ibtrs_seq_write_begin(&sess->mem_seq);
	mem_ent_set(&sess->mem_tab[n], (uintptr_t)addr, len, m->mr->addr,
		    m->mr->key);
	atomic_store(&sess->nr_mems, n + 1);
	ibtrs_seq_write_end(&sess->mem_seq);
	pthread_mutex_unlock(&sess->mem_lock);
	return m;
}

void ibtrs_clt_mem_dereg(struct ibtrs_clt *sess, struct ibtrs_mem *mem)
{
	const struct clt_mem_ent *last;
	unsigned int i, n;

	if (!sess || !mem)
		return;
	pthread_mutex_lock(&sess->mem_lock);
	n = atomic_load(&sess->nr_mems);
	for (i = 0; i < n && sess->mems[i] != mem; i++)
		;
	if (i == n) {
		pthread_mutex_unlock(&sess->mem_lock);
		ibtrs_log_rl(IBTRS_LOG_ERR,
			     "session %s: deregistration of unknown memory",
			     sess->sessname);
		return;
	}
	/* The last entry fills its place. */
	last = &sess->mem_tab[n - 1];
	sess->mems[i] = sess->mems[n - 1];
	ibtrs_seq_write_begin(&sess->mem_seq);
	mem_ent_set(&sess->mem_tab[i],
		    atomic_load_explicit(&last->addr, memory_order_relaxed),
		    atomic_load_explicit(&last->len, memory_order_relaxed),
		    atomic_load_explicit(&last->raddr, memory_order_relaxed),
		    atomic_load_explicit(&last->key, memory_order_relaxed));
	atomic_store(&sess->nr_mems, n - 1);
	ibtrs_seq_write_end(&sess->mem_seq);
	pthread_mutex_unlock(&sess->mem_lock);
	sess->ops->mr_unmap(mem->mr);
	sess->ops->mr_free(mem->mr);
	free(mem);
}
