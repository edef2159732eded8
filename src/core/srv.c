// SPDX-License-Identifier: MIT
/*
 * srv.c - the server context: its options, open and close, its loop
 * threads and listener, the public getters and statistics, and its views
 * for the control socket (srv.h). The server's objects and its other
 * files are in srv_int.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "srv.h"
#include "srv_int.h"

#define SRV_DEFAULT_MAX_SESSIONS 512
#define SRV_DEFAULT_MAX_MEMORY (8ull << 30)
#define SRV_DEFAULT_HB_TIMEOUT_MS 1000
#define SRV_MIN_HB_TIMEOUT_MS 100
#define SRV_DEFAULT_GRACE_MS 10000
#define SRV_MAX_IO_SIZE (16u << 20)
#define SRV_DEFAULT_MAX_SESS_PER_CLIENT 64
#define SRV_DEFAULT_MAX_CONS_PER_CLIENT 1024
#define SRV_DEFAULT_MAX_HS_PER_CLIENT 16
#define SRV_DEFAULT_HS_TIMEOUT_MS 5000
#define SRV_LOOP_NAME "ibtrs-srv"

void ibtrs_srv_opts_init(struct ibtrs_srv_opts *opts, size_t size)
{
	struct ibtrs_srv_opts d = {
		.size = sizeof(d),
		.port = IBTRS_DEFAULT_PORT,
		.queue_depth = IBTRS_DEFAULT_QUEUE_DEPTH,
		.max_io_size = IBTRS_DEFAULT_MAX_IO_SIZE,
		.max_sessions = SRV_DEFAULT_MAX_SESSIONS,
		.max_memory = SRV_DEFAULT_MAX_MEMORY,
		.hb_timeout_ms = SRV_DEFAULT_HB_TIMEOUT_MS,
		.sess_grace_ms = SRV_DEFAULT_GRACE_MS,
		.max_sessions_per_client = SRV_DEFAULT_MAX_SESS_PER_CLIENT,
		.max_cons_per_client = SRV_DEFAULT_MAX_CONS_PER_CLIENT,
		.max_handshakes_per_client = SRV_DEFAULT_MAX_HS_PER_CLIENT,
		.handshake_timeout_ms = SRV_DEFAULT_HS_TIMEOUT_MS,
	};

	ibtrs_opts_fill(opts, size, &d, sizeof(d));
}

static int srv_listen(struct ibtrs_srv_ctx *ctx, const struct ibtrs_srv_opts *o)
{
	struct sockaddr_in6 any6 = { .sin6_family = AF_INET6,
				     .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in any4 = { .sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(INADDR_ANY) };
	struct ibtrs_xprt_tls tls = { .mode = ctx->sec.tls,
				      .keys = ctx->sec.keys };
	struct sockaddr_storage bound;
	int ret;

	if (o->listen_addr) {
		struct sockaddr_storage a;

		memset(&a, 0, sizeof(a));
		memcpy(&a, o->listen_addr, ibtrs_sockaddr_len(o->listen_addr));
		if (a.ss_family == AF_INET &&
		    !((struct sockaddr_in *)&a)->sin_port)
			((struct sockaddr_in *)&a)->sin_port = htons(o->port);
		else if (a.ss_family == AF_INET6 &&
			 !((struct sockaddr_in6 *)&a)->sin6_port)
			((struct sockaddr_in6 *)&a)->sin6_port = htons(o->port);
		ret = ctx->ops->listen(ctx->loop, (struct sockaddr *)&a, &tls,
				       srv_connreq, ctx, &ctx->listener);
	} else {
		any6.sin6_port = htons(o->port);
		ret = ctx->ops->listen(ctx->loop, (struct sockaddr *)&any6,
				       &tls, srv_connreq, ctx, &ctx->listener);
		if (ret == -EAFNOSUPPORT) {
			any4.sin_port = htons(o->port);
			ret = ctx->ops->listen(ctx->loop,
					       (struct sockaddr *)&any4, &tls,
					       srv_connreq, ctx,
					       &ctx->listener);
		}
	}
	if (ret)
		return ret;
	ret = ctx->ops->listener_addr(ctx->listener, &bound);
	if (ret)
		return ret;
	ctx->port = ntohs(bound.ss_family == AF_INET
				  ? ((struct sockaddr_in *)&bound)->sin_port
				  : ((struct sockaddr_in6 *)&bound)->sin6_port);
	return 0;
}

static void srv_loops_destroy(struct ibtrs_srv_ctx *ctx)
{
	unsigned int i = ctx->nr_loops;

	/* The context's loop last: the others' work may hop onto it. */
	while (i--) {
		ibtrs_loop_destroy(ctx->loops[i].loop);
		ctx->loops[i].loop = NULL;
	}
	ctx->loop = NULL;
}

/*
 * One loop thread each, "ibtrs-srv" alone or "ibtrs-srv/<i>", each with
 * its tick; the first is the context's.
 */
static int srv_loops_create(struct ibtrs_srv_ctx *ctx,
			    const struct ibtrs_srv_opts *o)
{
	char name[24]; /* "ibtrs-srv/63" at most */
	unsigned int i;
	int ret;

	for (i = 0; i < ctx->nr_loops; i++) {
		struct srv_loop *sl = &ctx->loops[i];

		sl->ctx = ctx;
		sl->idx = i;
		if (ctx->nr_loops == 1)
			snprintf(name, sizeof(name), "%s", SRV_LOOP_NAME);
		else
			snprintf(name, sizeof(name), "%s/%u", SRV_LOOP_NAME, i);
		ret = ibtrs_loop_create(
			&sl->loop, name, srv_tick, sl,
			(unsigned int)(ctx->hb.tick_ns / 1000000));
		if (ret) {
			srv_loops_destroy(ctx);
			return ret;
		}
		ibtrs_loop_set_busy_poll(sl->loop, o->busy_poll_us,
					 o->busy_poll_adaptive);
	}
	ctx->loop = ctx->loops[0].loop;
	return 0;
}

static void srv_close_listener(void *arg)
{
	struct ibtrs_srv_ctx *ctx = arg;

	ctx->ops->listener_close(ctx->listener);
	ctx->listener = NULL;
}

struct ibtrs_srv_ctx *ibtrs_srv_open_opts(const struct ibtrs_srv_opts *o)
{
	struct ibtrs_srv_opts opts;
	struct ibtrs_srv_ctx *ctx;
	int ret, off_bits;

	if (!o || o->size < offsetof(struct ibtrs_srv_opts, rdma_ev) ||
	    o->size > sizeof(opts)) {
		errno = EINVAL;
		return NULL;
	}
	ibtrs_srv_opts_init(&opts, sizeof(opts));
	memcpy(&opts, o, o->size);
	if (!opts.rdma_ev || !opts.queue_depth ||
	    opts.queue_depth > IBTRS_MAX_QUEUE_DEPTH || !opts.max_io_size ||
	    opts.max_io_size > SRV_MAX_IO_SIZE || !opts.max_sessions ||
	    opts.hb_timeout_ms < SRV_MIN_HB_TIMEOUT_MS ||
	    opts.busy_poll_us > IBTRS_MAX_BUSY_POLL_US ||
	    opts.loop_threads > IBTRS_SRV_MAX_LOOPS) {
		errno = EINVAL;
		return NULL;
	}
	off_bits = ibtrs_imm_off_bits(opts.queue_depth,
				      ibtrs_chunk_size(opts.max_io_size));
	if (off_bits < 0) {
		ibtrs_log(
			IBTRS_LOG_ERR,
			"server: queue depth %u with max I/O size %u does not fit the immediate",
			opts.queue_depth, opts.max_io_size);
		errno = EINVAL;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->ops = ibtrs_xprt_find(opts.backend);
	if (!ctx->ops) {
		ibtrs_log(IBTRS_LOG_ERR, "server: unknown backend %s",
			  opts.backend);
		ret = -EINVAL;
		goto free_ctx;
	}
	ret = ibtrs_sec_init(&ctx->sec, opts.tls, opts.tls_psk_file, NULL,
			     false, "server");
	if (ret)
		goto free_ctx;
	ctx->rdma_ev = opts.rdma_ev;
	ctx->link_ev = opts.link_ev;
	ctx->queue_depth = opts.queue_depth;
	ctx->max_io_size = opts.max_io_size;
	ctx->chunk_size = ibtrs_chunk_size(opts.max_io_size);
	ctx->off_bits = (unsigned int)off_bits;
	ctx->max_sessions = opts.max_sessions;
	ctx->max_sess_per_client = opts.max_sessions_per_client
					   ? opts.max_sessions_per_client
					   : SRV_DEFAULT_MAX_SESS_PER_CLIENT;
	ctx->max_cons_per_client = opts.max_cons_per_client
					   ? opts.max_cons_per_client
					   : SRV_DEFAULT_MAX_CONS_PER_CLIENT;
	ctx->max_hs_per_client = opts.max_handshakes_per_client
					 ? opts.max_handshakes_per_client
					 : SRV_DEFAULT_MAX_HS_PER_CLIENT;
	ctx->hs_timeout_ns = (uint64_t)(opts.handshake_timeout_ms
						? opts.handshake_timeout_ms
						: SRV_DEFAULT_HS_TIMEOUT_MS) *
			     1000000;
	ibtrs_hb_init(&ctx->hb, opts.hb_timeout_ms);
	ctx->max_memory = opts.max_memory;
	if (ctx->max_memory &&
	    srv_sess_mem(ctx) + srv_con_mem(ctx) > ctx->max_memory) {
		ibtrs_log(
			IBTRS_LOG_ERR,
			"server: a session of %u chunks of %u bytes does not fit the memory limit of %llu bytes",
			ctx->queue_depth, ctx->chunk_size,
			(unsigned long long)ctx->max_memory);
		ret = -EINVAL;
		goto free_ctx;
	}
	ctx->grace_ns = (uint64_t)opts.sess_grace_ms * 1000000;
	/* No region: a connection in it reaches no memory at all. */
	ret = ctx->ops->pd_alloc(&ctx->auth_pd, 1);
	if (ret)
		goto free_ctx;
	ctx->nr_loops = opts.loop_threads ? opts.loop_threads : 1;
	if (ctx->nr_loops > 1 &&
	    ctx->ops->move(NULL, NULL, NULL) == -EOPNOTSUPP) {
		ibtrs_log(
			IBTRS_LOG_WARN,
			"server: backend %s cannot hand a connection over to another loop: %u loop threads refused, one used",
			ctx->ops->name, ctx->nr_loops);
		ctx->nr_loops = 1;
	}
	ctx->loops = calloc(ctx->nr_loops, sizeof(*ctx->loops));
	if (!ctx->loops) {
		ret = -ENOMEM;
		goto free_ctx;
	}
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->ident_lock, NULL);
	pthread_cond_init(&ctx->cond, NULL);
	ret = srv_loops_create(ctx, &opts);
	if (ret)
		goto destroy_sync;
	ret = srv_listen(ctx, &opts);
	if (ret) {
		ibtrs_log(IBTRS_LOG_ERR, "server: cannot listen on port %u: %s",
			  opts.port, strerror(-ret));
		goto destroy_loop;
	}
	ibtrs_log(IBTRS_LOG_INFO, "server: listening on port %u", ctx->port);
	if (!opts.no_control)
		ibtrs_ctl_register(&ctx->ctl, &srv_ctl_ops, ctx);
	return ctx;

destroy_loop:
	if (ctx->listener)
		ibtrs_loop_call(ctx->loop, srv_close_listener, ctx);
	srv_loops_destroy(ctx);
destroy_sync:
	pthread_cond_destroy(&ctx->cond);
	pthread_mutex_destroy(&ctx->ident_lock);
	pthread_mutex_destroy(&ctx->lock);
free_ctx:
	free(ctx->loops);
	if (ctx->auth_pd)
		ctx->ops->pd_free(ctx->auth_pd);
	ibtrs_sec_fini(&ctx->sec);
	free(ctx);
	errno = -ret;
	return NULL;
}

struct ibtrs_srv_ctx *ibtrs_srv_open(rdma_ev_fn *rdma_ev, link_ev_fn *link_ev,
				     unsigned int port)
{
	struct ibtrs_srv_opts opts;

	if (port > 65535) {
		errno = EINVAL;
		return NULL;
	}
	ibtrs_srv_opts_init(&opts, sizeof(opts));
	opts.rdma_ev = rdma_ev;
	opts.link_ev = link_ev;
	opts.port = (uint16_t)port;
	return ibtrs_srv_open_opts(&opts);
}

uint16_t ibtrs_srv_get_port(struct ibtrs_srv_ctx *ctx)
{
	return ctx ? ctx->port : 0;
}

/*
 * The context's loop: no new connection or session from now on; the
 * sessions leave the list, each held for srv_close_sess().
 */
static void srv_close_front(void *arg)
{
	struct ibtrs_srv_ctx *ctx = arg;
	struct ibtrs_srv *sess;

	ctx->closing = true;
	srv_close_listener(ctx);
	while (ctx->handshakes)
		srv_hs_close(ctx->handshakes->con, "server closing");
	for (sess = ctx->sessions; sess; sess = sess->next) {
		atomic_fetch_add(&sess->refs, 1);
		sess->close_next = ctx->closing_list;
		ctx->closing_list = sess;
	}
	while (ctx->sessions)
		srv_sess_unlink_put(ctx->sessions);
}

/* Its loop: the session's paths go, and the hold of srv_close_front(). */
static void srv_close_sess(void *arg)
{
	struct ibtrs_srv *sess = arg;

	srv_sess_close(sess, "server closing");
	srv_sess_put(sess);
}

void ibtrs_srv_close(struct ibtrs_srv_ctx *ctx)
{
	struct ibtrs_srv *sess, *next;

	if (!ctx)
		return;
	ibtrs_ctl_unregister(&ctx->ctl);
	ibtrs_loop_call(ctx->loop, srv_close_front, ctx);
	for (sess = ctx->closing_list; sess; sess = next) {
		next = sess->close_next;
		ibtrs_loop_call(sess->sl->loop, srv_close_sess, sess);
	}
	ctx->closing_list = NULL;
	/* Sessions end once the application answered their requests. */
	pthread_mutex_lock(&ctx->lock);
	while (ctx->nr_sessions || ctx->nr_cons)
		pthread_cond_wait(&ctx->cond, &ctx->lock);
	pthread_mutex_unlock(&ctx->lock);
	srv_loops_destroy(ctx);
	free(ctx->loops);
	ctx->ops->pd_free(ctx->auth_pd);
	pthread_cond_destroy(&ctx->cond);
	pthread_mutex_destroy(&ctx->ident_lock);
	pthread_mutex_destroy(&ctx->lock);
	ibtrs_sec_fini(&ctx->sec);
	free(ctx);
}

void ibtrs_srv_set_sess_priv(struct ibtrs_srv *sess, void *priv)
{
	if (sess)
		sess->priv = priv;
}

int ibtrs_srv_get_queue_depth(struct ibtrs_srv *sess)
{
	return sess ? (int)sess->ctx->queue_depth : -EINVAL;
}

/* @src into @dst of @len bytes; -ENOBUFS if it was truncated. */
static int copy_str(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len) {
		memcpy(dst, src, len - 1);
		dst[len - 1] = '\0';
		return -ENOBUFS;
	}
	memcpy(dst, src, n + 1);
	return 0;
}

int ibtrs_srv_get_sess_name(struct ibtrs_srv *sess, char *sessname, size_t len)
{
	if (!sess || !sessname || !len)
		return -EINVAL;
	return copy_str(sessname, len, sess->sessname);
}

int ibtrs_srv_get_identity(struct ibtrs_srv *sess, char *identity, size_t len)
{
	if (!sess || !identity || !len)
		return -EINVAL;
	return copy_str(identity, len, sess->identity);
}

int ibtrs_srv_get_stats(struct ibtrs_srv_ctx *ctx, struct ibtrs_srv_stats *st)
{
	struct ibtrs_srv_stats v;

	if (!ctx || !st || st->size < offsetof(struct ibtrs_srv_stats, paths))
		return -EINVAL;
	memset(&v, 0, sizeof(v));
	v.size = st->size < sizeof(v) ? st->size : sizeof(v);
	pthread_mutex_lock(&ctx->lock);
	v.sessions = ctx->nr_sessions;
	pthread_mutex_unlock(&ctx->lock);
	v.paths = atomic_load(&ctx->nr_paths);
	v.requests = atomic_load(&ctx->requests);
	v.replays = atomic_load(&ctx->replays);
	v.busy = atomic_load(&ctx->busy);
	v.proto_errors = atomic_load(&ctx->proto_errors);
	v.stale = atomic_load(&ctx->stale);
	v.proto_xprt = atomic_load(&ctx->proto_xprt);
	v.proto_msg = atomic_load(&ctx->proto_msg);
	v.gen_rejected = atomic_load(&ctx->gen_rejected);
	v.refused_full = atomic_load(&ctx->refused_full);
	v.auth_failed = atomic_load(&ctx->auth_failed);
	v.refused_limit = atomic_load(&ctx->refused_limit);
	memcpy(st, &v, v.size);
	return 0;
}

void srv_ctl_info(struct ibtrs_srv_ctx *ctx, struct srv_ctl_info *info)
{
	info->port = ctx->port;
	info->backend = ctx->ops->name;
	info->queue_depth = ctx->queue_depth;
	info->max_io_size = ctx->max_io_size;
	info->loop = ctx->loop;
	info->nr_loops = ctx->nr_loops;
	info->max_sessions = ctx->max_sessions;
	info->max_memory = ctx->max_memory;
	pthread_mutex_lock(&ctx->lock);
	info->mem_used = ctx->mem_used;
	pthread_mutex_unlock(&ctx->lock);
}

struct walk_call {
	struct srv_loop *sl;
	const struct srv_ctl_walker *w;
};

/* A loop's thread: its sessions and their paths are the loop's. */
static void walk_sessions(void *arg)
{
	struct walk_call *wc = arg;
	const struct srv_ctl_walker *w = wc->w;
	struct ibtrs_srv *sess;
	uint64_t now = ibtrs_now_ns();

	for (sess = wc->sl->sessions; sess; sess = sess->loop_next) {
		struct srv_ctl_sess vs = {
			.sessname = sess->sessname,
			.uuid = sess->uuid,
			.loop = wc->sl->idx,
			.graced = !sess->nr_paths && sess->grace_until > now,
			.incarnation = sess->incarnation,
			.proto_xprt = atomic_load(&sess->proto_xprt),
			.proto_msg = atomic_load(&sess->proto_msg),
			.gen_rejected = atomic_load(&sess->gen_rejected),
		};
		struct srv_path *path;

		if (sess->dying)
			continue;
		if (vs.graced)
			vs.grace_ms_left = (sess->grace_until - now) / 1000000;
		w->sess(w->arg, &vs);
		for (path = sess->paths; path; path = path->next) {
			struct srv_ctl_path vp = {
				.peer = path->peer,
				.connected = path->connected,
				.nr_cons = path->nr_cons,
				.rd_ops = path->rd_ops,
				.rd_bytes = path->rd_bytes,
				.wr_ops = path->wr_ops,
				.wr_bytes = path->wr_bytes,
				.proto_xprt = atomic_load(&path->proto_xprt),
				.proto_msg = atomic_load(&path->proto_msg),
				.gen_rejected =
					atomic_load(&path->gen_rejected),
			};

			w->path(w->arg, &vp);
		}
		w->sess_end(w->arg);
	}
}

void srv_ctl_walk(struct ibtrs_srv_ctx *ctx, const struct srv_ctl_walker *w)
{
	struct walk_call wc = { .w = w };
	unsigned int i;

	for (i = 0; i < ctx->nr_loops; i++) {
		wc.sl = &ctx->loops[i];
		ibtrs_loop_call(wc.sl->loop, walk_sessions, &wc);
	}
}
