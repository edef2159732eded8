// SPDX-License-Identifier: MIT
/*
 * srv_sess.c - the session's lifecycle: its creation with its chunk pool
 * and its placement on the loop with the fewest sessions, its list on
 * that loop, its grace once its last path is gone, its end (off the
 * context's list, on the context's loop) and its free (on its loop, once
 * the last reference went); its paths from creation to close, a
 * connection's references and free, and the protocol error counts. The
 * session's grace, its end (sess_set_*()), its CONNECTED and DISCONNECTED
 * events and its paths are changed here only. Calls only srv_limits.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "log.h"
#include "srv_int.h"

/* Its loop's thread, or before it was placed on one. */
static void sess_free(struct ibtrs_srv *sess)
{
	struct ibtrs_srv_ctx *ctx = sess->ctx;
	struct srv_loop *sl = sess->sl;
	uint64_t mem = sess->mem;
	struct ibtrs_srv **pp;
	uint32_t i;

	if (sess->on_loop) {
		for (pp = &sl->sessions; *pp; pp = &(*pp)->loop_next) {
			if (*pp == sess) {
				*pp = sess->loop_next;
				break;
			}
		}
	}

	if (sess->mr)
		ctx->ops->mr_free(sess->mr);
	if (sess->pd)
		ctx->ops->pd_free(sess->pd);
	if (sess->chunks)
		munmap(sess->chunks, sess->pool_len);
	if (sess->ops)
		for (i = 0; i < ctx->queue_depth; i++)
			pthread_spin_destroy(&sess->ops[i].lock);
	free(sess->ops);
	if (sess->ident)
		srv_ident_drop(ctx, sess->ident, &sess->ident->sessions);
	ibtrs_wipe(sess->secret, sizeof(sess->secret));
	free(sess);
	pthread_mutex_lock(&ctx->lock);
	if (sl)
		sl->nr_sessions--;
	ctx->nr_sessions--;
	ctx->mem_used -= mem;
	pthread_cond_broadcast(&ctx->cond);
	pthread_mutex_unlock(&ctx->lock);
}

/* Its loop's thread: the session is over. */
static void sess_final(struct ibtrs_srv *sess)
{
	if (sess->connected_ev) {
		ibtrs_log(IBTRS_LOG_INFO, "session %s: disconnected",
			  sess->sessname);
		if (sess->ctx->link_ev)
			sess->ctx->link_ev(sess, IBTRS_SRV_LINK_EV_DISCONNECTED,
					   sess->priv);
	}
	sess_free(sess);
}

static void sess_free_work(struct ibtrs_work *w)
{
	sess_final(container_of(w, struct ibtrs_srv, free_work));
}

/* Any thread. The last reference ends the session, on its loop. */
void srv_sess_put(struct ibtrs_srv *sess)
{
	if (atomic_fetch_sub(&sess->refs, 1) != 1)
		return;
	if (ibtrs_loop_on_thread(sess->sl->loop))
		sess_final(sess);
	else
		ibtrs_loop_queue(sess->sl->loop, &sess->free_work);
}

/*
 * The context's loop: off the list, which held the session's "alive"
 * reference; once only.
 */
void srv_sess_unlink_put(struct ibtrs_srv *sess)
{
	struct ibtrs_srv **pp;

	if (sess->closing)
		return;
	for (pp = &sess->ctx->sessions; *pp; pp = &(*pp)->next) {
		if (*pp == sess) {
			*pp = sess->next;
			break;
		}
	}
	sess->closing = true;
	srv_sess_put(sess);
}

static void sess_unlink_work(struct ibtrs_work *w)
{
	struct ibtrs_srv *sess = container_of(w, struct ibtrs_srv, unlink_work);

	srv_sess_unlink_put(sess);
	srv_sess_put(sess); /* of srv_sess_end() */
}

/*
 * Its loop: the one writer of the session's grace. Kept until @until
 * (ns) for its client to come back, or, with 0, not (a path joined, or
 * the session ends); @graced shows it to the other threads.
 */
static void sess_set_grace(struct ibtrs_srv *sess, uint64_t until)
{
	sess->grace_until = until;
	atomic_store(&sess->graced, until != 0);
}

/*
 * Its loop: the session begins to end, and no connection joins it from
 * now on; false if it already had.
 */
static bool sess_set_dying(struct ibtrs_srv *sess)
{
	if (sess->dying)
		return false;
	sess->dying = true;
	sess_set_grace(sess, 0);
	return true;
}

/*
 * Its loop: the session ends (no path and no grace, grace over, refused
 * by the application). The context's loop takes it off the list.
 */
void srv_sess_end(struct ibtrs_srv *sess)
{
	if (!sess_set_dying(sess))
		return;
	if (ibtrs_loop_on_thread(sess->ctx->loop)) {
		srv_sess_unlink_put(sess);
		return;
	}
	/* Held until it ran: ibtrs_srv_close() may unlink it first. */
	atomic_fetch_add(&sess->refs, 1);
	ibtrs_loop_queue(sess->ctx->loop, &sess->unlink_work);
}

/* Its loop: a session that no path joined and none waits for ends. */
void srv_sess_end_if_empty(struct ibtrs_srv *sess)
{
	if (!sess->nr_paths && !sess->grace_until)
		srv_sess_end(sess);
}

static void sess_check_work(struct ibtrs_work *w)
{
	struct ibtrs_srv *sess = container_of(w, struct ibtrs_srv, check_work);

	srv_sess_end_if_empty(sess);
	srv_sess_put(sess); /* of srv_sess_drop_empty() */
}

/*
 * A session made for a connection that is gone before it joined: ended
 * if no other path came. From its loop or the context's.
 */
void srv_sess_drop_empty(struct ibtrs_srv *sess)
{
	if (ibtrs_loop_on_thread(sess->sl->loop)) {
		srv_sess_end_if_empty(sess);
		return;
	}
	/* The context's loop: alive while on the list. */
	if (sess->closing)
		return;
	atomic_fetch_add(&sess->refs, 1);
	ibtrs_loop_queue(sess->sl->loop, &sess->check_work);
}

/*
 * A random incarnation for a new session, never 0 (which a client takes
 * for "not told"). Without entropy the clock and the address stand in:
 * what matters is that a restarted server does not repeat the last one.
 */
static uint64_t sess_new_incarnation(const struct ibtrs_srv *sess)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = ibtrs_real_now_ns() ^ ((uint64_t)(uintptr_t)sess << 16);
	return v ? v : 1;
}

/* Sessions whose client is gone and that wait out their grace. */
static unsigned int sess_nr_graced(const struct ibtrs_srv_ctx *ctx)
{
	const struct ibtrs_srv *s;
	unsigned int n = 0;

	for (s = ctx->sessions; s; s = s->next)
		if (atomic_load(&s->graced))
			n++;
	return n;
}

/* Under the context's lock: the loop with the fewest sessions. */
static struct srv_loop *loop_least_loaded(struct ibtrs_srv_ctx *ctx)
{
	struct srv_loop *best = &ctx->loops[0];
	unsigned int i;

	for (i = 1; i < ctx->nr_loops; i++)
		if (ctx->loops[i].nr_sessions < best->nr_sessions)
			best = &ctx->loops[i];
	return best;
}

struct ibtrs_srv *srv_sess_create(struct ibtrs_srv_ctx *ctx,
				  const uint8_t *uuid, int *err)
{
	struct ibtrs_srv *sess;
	struct srv_loop *sl;
	struct iovec iov;
	uint32_t i;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	if (ctx->nr_sessions >= ctx->max_sessions ||
	    !srv_mem_fits(ctx, srv_sess_mem(ctx))) {
		unsigned int nr = ctx->nr_sessions;

		pthread_mutex_unlock(&ctx->lock);
		/*
		 * Full. A session in its grace period is not ended to make
		 * room: its client may come back and replay what it had in
		 * flight, and only this session can tell a replay from a new
		 * request. The newcomer is refused and may retry.
		 */
		atomic_fetch_add(&ctx->refused_full, 1);
		ibtrs_log_rl(
			IBTRS_LOG_WARN,
			"server: full (%u of %u sessions, %u of them waiting for their client to return; or the memory limit): new session refused",
			nr, ctx->max_sessions, sess_nr_graced(ctx));
		*err = -ENOSPC;
		return NULL;
	}
	ctx->nr_sessions++;
	ctx->mem_used += srv_sess_mem(ctx);
	/* Placed for good: everything of it runs on this loop. */
	sl = loop_least_loaded(ctx);
	sl->nr_sessions++;
	pthread_mutex_unlock(&ctx->lock);

	sess = calloc(1, sizeof(*sess));
	if (!sess) {
		ret = -ENOMEM;
		goto unaccount;
	}
	sess->ctx = ctx;
	sess->sl = sl;
	sess->unlink_work.fn = sess_unlink_work;
	sess->free_work.fn = sess_free_work;
	sess->check_work.fn = sess_check_work;
	sess->mem = srv_sess_mem(ctx);
	memcpy(sess->uuid, uuid, IBTRS_UUID_LEN);
	sess->incarnation = sess_new_incarnation(sess);
	sess->pool_len = (size_t)ctx->queue_depth * ctx->chunk_size;
	/*
	 * Reserved, registered whole (the client is told every chunk), but
	 * a page costs memory only once a request has written it: a session
	 * that sends 4 KiB requests at a few in flight uses a few pages of
	 * a few chunks (the client's tags are the lowest free ones). No
	 * swap is reserved for it: the memory limit bounds it instead.
	 */
	sess->chunks = mmap(NULL, sess->pool_len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (sess->chunks == MAP_FAILED) {
		sess->chunks = NULL;
		ret = -ENOMEM;
		goto free_sess;
	}
	sess->ops = calloc(ctx->queue_depth, sizeof(*sess->ops));
	if (!sess->ops) {
		ret = -ENOMEM;
		goto free_sess;
	}
	for (i = 0; i < ctx->queue_depth; i++) {
		sess->ops[i].sess = sess;
		sess->ops[i].chunk = i;
		pthread_spin_init(&sess->ops[i].lock, PTHREAD_PROCESS_PRIVATE);
	}
	ret = ctx->ops->pd_alloc(&sess->pd, 1);
	if (ret)
		goto free_sess;
	ret = ctx->ops->mr_alloc(sess->pd, 1, &sess->mr);
	if (ret)
		goto free_sess;
	iov.iov_base = sess->chunks;
	iov.iov_len = sess->pool_len;
	ret = ctx->ops->mr_map(sess->mr, &iov, 1);
	if (ret)
		goto free_sess;
	atomic_init(&sess->refs, 1); /* alive: dropped off the list */
	sess->next = ctx->sessions;
	ctx->sessions = sess;
	return sess;

free_sess:
	/* sess_free() undoes the accounting too. */
	sess_free(sess);
	*err = ret;
	return NULL;
unaccount:
	pthread_mutex_lock(&ctx->lock);
	sl->nr_sessions--;
	ctx->nr_sessions--;
	ctx->mem_used -= srv_sess_mem(ctx);
	pthread_mutex_unlock(&ctx->lock);
	*err = ret;
	return NULL;
}

/*
 * Its loop: the session goes on its loop's list, which the tick and the
 * control socket walk, at its first connection's join; once.
 */
void srv_sess_on_loop(struct ibtrs_srv *sess)
{
	struct srv_loop *sl = sess->sl;

	if (sess->on_loop)
		return;
	sess->loop_next = sl->sessions;
	sl->sessions = sess;
	sess->on_loop = true;
}

void srv_con_free_work(struct ibtrs_work *w)
{
	struct srv_con *con = container_of(w, struct srv_con, free_work);
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct ibtrs_srv *sess = con->sess;

	ctx->ops->destroy(con->xcon);
	if (con->ident)
		srv_ident_drop(ctx, con->ident, &con->ident->cons);
	free(con);
	pthread_mutex_lock(&ctx->lock);
	ctx->nr_cons--;
	pthread_mutex_unlock(&ctx->lock);
	srv_con_mem_put(ctx);
	if (sess)
		srv_sess_put(sess);
}

/*
 * Any thread; the connection is freed on its loop's thread. Only a
 * connection being handed over changes loops, and nobody else holds it.
 */
void srv_con_put(struct srv_con *con)
{
	if (atomic_fetch_sub(&con->refs, 1) == 1)
		ibtrs_loop_queue(con->loop, &con->free_work);
}

/*
 * Its loop: a new path of @sess, of @cid_num connections, from @peer; the
 * session's grace is over. NULL without memory.
 */
struct srv_path *srv_path_add(struct ibtrs_srv *sess, const uint8_t *uuid,
			      uint16_t cid_num, const char *peer)
{
	struct srv_path *path = calloc(1, sizeof(*path));

	if (!path)
		return NULL;
	path->sess = sess;
	memcpy(path->uuid, uuid, IBTRS_UUID_LEN);
	path->cid_num = cid_num;
	path->last_rx_ns = ibtrs_now_ns();
	snprintf(path->peer, sizeof(path->peer), "%s", peer);
	path->next = sess->paths;
	sess->paths = path;
	sess->nr_paths++;
	sess_set_grace(sess, 0);
	atomic_fetch_add(&sess->ctx->nr_paths, 1);
	return path;
}

void srv_path_close(struct srv_path *path, const char *why)
{
	struct ibtrs_srv *sess = path->sess;
	struct srv_path **pp;
	unsigned int i;

	ibtrs_log(IBTRS_LOG_INFO, "session %s: path %s closed: %s",
		  sess->sessname[0] ? sess->sessname : "(unnamed)", path->peer,
		  why);
	for (i = 0; i < path->cid_num; i++) {
		struct srv_con *con = path->cons[i];

		if (!con)
			continue;
		sess->ctx->ops->disconnect(con->xcon);
		con->path = NULL;
		srv_con_put(con);
	}
	for (pp = &sess->paths; *pp; pp = &(*pp)->next) {
		if (*pp == path) {
			*pp = path->next;
			break;
		}
	}
	sess->nr_paths--;
	atomic_fetch_sub(&sess->ctx->nr_paths, 1);
	free(path);
	if (sess->nr_paths || sess->dying)
		return;
	if (sess->connected_ev && !sess->client_closed && sess->ctx->grace_ns) {
		/* The client may come back and replay: keep the session. */
		sess_set_grace(sess, ibtrs_now_ns() + sess->ctx->grace_ns);
		return;
	}
	srv_sess_end(sess);
}

/* Its loop: the client said goodbye on @path: no grace for its session. */
void srv_path_close_by_client(struct srv_path *path)
{
	path->sess->client_closed = true;
	srv_path_close(path, "closed by the client");
}

/*
 * Its loop: a path of @sess is connected (INFO_REQ). The first one tells
 * the application (IBTRS_SRV_LINK_EV_CONNECTED, after which sess_final()
 * owes it DISCONNECTED); a refusal ends the session with all its paths.
 * Return: 0, or the application's refusal.
 */
int srv_sess_connected(struct ibtrs_srv *sess)
{
	int ret;

	if (sess->connected_ev)
		return 0;
	ret = sess->ctx->link_ev
		      ? sess->ctx->link_ev(sess, IBTRS_SRV_LINK_EV_CONNECTED,
					   sess->priv)
		      : 0;
	if (ret) {
		ibtrs_log(IBTRS_LOG_INFO,
			  "session %s: refused by the application (%d)",
			  sess->sessname, ret);
		srv_sess_end(sess);
		while (sess->paths)
			srv_path_close(sess->paths, "session refused");
		return ret;
	}
	sess->connected_ev = true;
	return 0;
}

/*
 * Its loop: the session ends with all its paths, when it is off the
 * context's list already (ibtrs_srv_close()) or its caller takes it off.
 */
void srv_sess_close(struct ibtrs_srv *sess, const char *why)
{
	sess_set_dying(sess);
	while (sess->paths)
		srv_path_close(sess->paths, why);
}

void srv_count_proto_error(struct srv_path *path, enum srv_proto_kind k)
{
	struct ibtrs_srv *sess = path->sess;
	struct ibtrs_srv_ctx *ctx = sess->ctx;

	atomic_fetch_add(&ctx->proto_errors, 1);
	switch (k) {
	case PROTO_XPRT:
		atomic_fetch_add(&path->proto_xprt, 1);
		atomic_fetch_add(&sess->proto_xprt, 1);
		atomic_fetch_add(&ctx->proto_xprt, 1);
		break;
	case PROTO_MSG:
		atomic_fetch_add(&path->proto_msg, 1);
		atomic_fetch_add(&sess->proto_msg, 1);
		atomic_fetch_add(&ctx->proto_msg, 1);
		break;
	case PROTO_GEN:
		atomic_fetch_add(&path->gen_rejected, 1);
		atomic_fetch_add(&sess->gen_rejected, 1);
		atomic_fetch_add(&ctx->gen_rejected, 1);
		break;
	}
}

void srv_path_proto_error(struct srv_path *path, const char *what)
{
	srv_count_proto_error(path, PROTO_MSG);
	ibtrs_log(IBTRS_LOG_ERR, "session %s: path %s: protocol error: %s",
		  path->sess->sessname[0] ? path->sess->sessname : "(unnamed)",
		  path->peer, what);
	srv_path_close(path, "-EPROTO");
}
