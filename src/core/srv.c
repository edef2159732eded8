// SPDX-License-Identifier: MIT
/*
 * srv.c - the server side: listener, sessions with their chunk pools,
 * paths and connections, request dispatch and responses.
 *
 * Threading: a context has one loop or several (loop_threads). The first,
 * the context's loop, runs the listener, every handshake and the list of
 * sessions (the lookup of a joining connection's session). Each session
 * runs on one loop, placed when it is made (the one with the fewest
 * sessions): its paths, connections, requests, heartbeats and grace are
 * that loop's, so they need no lock. ibtrs_srv_resp_rdma() runs on any
 * thread. A request holds a reference on the connection it came on until
 * its response has left; a connection holds a reference on its session.
 * The session is freed, and IBTRS_SRV_LINK_EV_DISCONNECTED sent, on its
 * loop when its last path is closed and the last of those references is
 * gone; its end first hops to the context's loop to take it off the list.
 *
 * A connection belongs to no session until its handshake is over
 * (docs/protocol.md, "Authentication"): from its request to AUTH_REQ it
 * is a struct srv_hs on the context's list, in the context's empty pd,
 * counted against the half-open limits of its source address. Once
 * AUTH_REQ proved it, the connection leaves the list and is handed over
 * to its session's loop (the backend's move()), where it joins its path
 * and AUTH_RSP leaves (srv_join()). The per-client counts (struct
 * srv_ident) are atomic, their list under ident_lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "addr.h"
#include "auth.h"
#include "core.h"
#include "hb.h"
#include "log.h"
#include "loop.h"
#include "sec.h"
#include "srv.h"
#include "xprt.h"

#define SRV_DEFAULT_MAX_SESSIONS 512
#define SRV_DEFAULT_MAX_MEMORY (8ull << 30)
/*
 * What the memory limit counts (ibtrs.7, "Server limits"): a session
 * SRV_SESS_MEM plus its whole chunk pool and its operations, a
 * connection SRV_CON_MEM plus SRV_CON_MEM_CHUNK a chunk (its state here
 * and the backend's buffers: the tcp backend's receive staging buffer
 * and its work requests, three a chunk), and SRV_CON_MEM_TLS more where
 * TLS may run under it (the TLS layer's send and receive buffers and
 * GnuTLS's records). Worst cases: the pool is
 * reserved address space whose pages cost memory only once a request has
 * used them.
 */
#define SRV_SESS_MEM (64u << 10)
#define SRV_CON_MEM (384u << 10)
#define SRV_CON_MEM_CHUNK 1024u
#define SRV_CON_MEM_TLS (640u << 10)
#define SRV_DEFAULT_HB_TIMEOUT_MS 1000
#define SRV_MIN_HB_TIMEOUT_MS 100
#define SRV_DEFAULT_GRACE_MS 10000
#define SRV_MAX_IO_SIZE (16u << 20)
#define SRV_EXTRA_RECVS 16 /* heartbeats and control beside the requests */
#define SRV_DEFAULT_MAX_SESS_PER_CLIENT 64
#define SRV_DEFAULT_MAX_CONS_PER_CLIENT 1024
#define SRV_DEFAULT_MAX_HS_PER_CLIENT 16
#define SRV_DEFAULT_HS_TIMEOUT_MS 5000
#define SRV_MAX_HANDSHAKES 1024 /* half-open handshakes of every address */
#define SRV_LOOP_NAME "ibtrs-srv"

#define WR_ID_INFO 1 /* con 0's receive for INFO_REQ */
#define WR_ID_AUTH 2 /* the receive for AUTH_REQ, before the con joins */
#define WR_ID_IMM 0

/*
 * Each chunk's operation remembers the generation of the last request it
 * ran and that request's result, so that a request replayed on another
 * path (the client's failover) runs at most once: a replay of a running
 * request is answered when it finishes, a replay of a finished one is
 * answered at once with the same result, and rdma_ev is not called again.
 *
 * Generations are checked against a window around the last one
 * (ibtrs_gen_classify(), IBTRS_GEN_WINDOW): ahead within it is a new
 * request, behind within it a stale copy, answered -ESTALE and not run;
 * outside it the request is refused with -EPROTO and the operation's
 * state is left as it was, so no value a peer sends can make the tag
 * drop the client's later generations. A never used operation stands at
 * generation 0: the client starts every tag of a new session at 1.
 */
enum op_state {
	OP_IDLE,    /* never used; @gen is 0 */
	OP_RUNNING, /* given to the application */
	OP_DONE,    /* answered; @gen and @result are kept */
};

struct srv_con;

/*
 * A client as the limits count it (ibtrs.h, ibtrs_srv_opts): its key's
 * identity, or "addr:IP" for handshakes and for clients without keys.
 * The counts are checked and raised on the context's loop and lowered on
 * any; the list, @holds and the free are under the context's ident_lock:
 * freed when nothing is counted or held.
 */
struct srv_ident {
	struct srv_ident *next;
	_Atomic unsigned int sessions, cons, handshakes;
	unsigned int holds; /* under ident_lock: srv_ident_get() */
	char name[IBTRS_IDENTITY_MAX + 1];
};

/*
 * A connection between its connection request and AUTH_RSP: in the
 * context's empty pd, one receive posted (for AUTH_REQ), part of no
 * session. On the context's list (@listed) and loop until AUTH_REQ
 * proved it; then on its way to its session's loop, which ends it.
 */
struct srv_hs {
	struct srv_hs *next;
	struct srv_con *con;
	struct srv_ident *addr; /* counts this handshake */
	struct ibtrs_conn_req cr;
	uint8_t ns[IBTRS_NONCE_LEN];
	uint64_t deadline_ns;	      /* closed by the tick after it */
	bool refused;		      /* AUTH_RSP with an error sent */
	bool listed;		      /* on the context's list, its loop */
	bool created;		      /* its AUTH_REQ made the session */
	uint32_t req_len;	      /* of AUTH_REQ, for a second look */
	struct ibtrs_work close_work; /* closes it once that left */
	char peer[IBTRS_SOCKADDR_STR_LEN];
	char tls_identity[IBTRS_IDENTITY_MAX + 1]; /* "" without TLS */
	struct ibtrs_msg_auth_req req;		   /* the receive buffer */
};

struct ibtrs_srv_op {
	struct ibtrs_srv *sess;
	uint32_t chunk;
	pthread_spinlock_t lock;
	/* under @lock */
	enum op_state state;
	struct srv_con *con; /* referenced while running */
	int dir;
	uint32_t data_len;
	uint32_t gen;
	int result;
	struct ibtrs_desc desc;
};

struct srv_con {
	struct ibtrs_srv_ctx *ctx;
	struct ibtrs_xprt_con *xcon;
	/* the loop @xcon is on: the context's, then its session's */
	struct ibtrs_loop *loop;
	bool joining;		     /* proved, on its way to its session */
	struct ibtrs_work join_work; /* the move, off the event batch */
	struct ibtrs_srv *sess;	     /* NULL until it joined one */
	struct srv_path *path;	     /* NULL once the path is closed */
	struct srv_hs *hs;	     /* its handshake, NULL once joined */
	struct srv_ident *ident;     /* counts it once joined */
	unsigned int cid;
	_Atomic int refs;
	struct ibtrs_work free_work;
	char info_buf[sizeof(struct ibtrs_msg_info_req)];
	char rsp_buf[IBTRS_INFO_RSP_MAX_LEN];
	struct ibtrs_msg_auth_rsp auth_rsp; /* what AUTH_RSP sends from */
};

struct srv_path {
	struct ibtrs_srv *sess;
	struct srv_path *next;
	uint8_t uuid[IBTRS_UUID_LEN];
	uint16_t cid_num;
	unsigned int nr_cons;
	struct srv_con *cons[IBTRS_MAX_CONS_PER_PATH];
	bool connected;
	uint64_t rd_ops, rd_bytes, wr_ops, wr_bytes; /* loop thread */
	/* protocol errors seen on this path: transport-level (framing the
	 * backend refused), message-level (the path was closed for it), and
	 * requests refused for a generation outside the window */
	_Atomic uint64_t proto_xprt, proto_msg, gen_rejected;
	uint64_t last_rx_ns;
	uint64_t last_hb_tx_ns;
	char peer[IBTRS_SOCKADDR_STR_LEN];
};

/*
 * One loop of the context; the first is the context's own. @sessions are
 * those placed on it that reached it (its thread's), @nr_sessions those
 * placed on it (under the context's lock: the placement counts them).
 */
struct srv_loop {
	struct ibtrs_srv_ctx *ctx;
	struct ibtrs_loop *loop;
	struct ibtrs_srv *sessions;
	unsigned int nr_sessions;
	unsigned int idx;
	bool hb_held; /* its thread: every path silent, held one tick */
};

struct ibtrs_srv {
	struct ibtrs_srv_ctx *ctx;
	struct srv_loop *sl;	       /* its loop, for its whole life */
	struct ibtrs_srv *next;	       /* context's loop: the sessions list */
	struct ibtrs_srv *loop_next;   /* its loop: sl->sessions */
	struct ibtrs_srv *close_next;  /* ibtrs_srv_close() */
	bool on_loop;		       /* its loop: on sl->sessions */
	bool dying;		       /* its loop: its end has begun */
	_Atomic bool graced;	       /* no path, kept for a rejoin */
	struct ibtrs_work unlink_work; /* its end, on the context's loop */
	struct ibtrs_work free_work;   /* its free, on its loop */
	struct ibtrs_work check_work;  /* ends it if no path came */
	uint8_t uuid[IBTRS_UUID_LEN];
	char sessname[IBTRS_SESSNAME_LEN];
	char identity[IBTRS_IDENTITY_MAX + 1]; /* ibtrs_srv_get_identity() */
	struct srv_ident *ident;	       /* its owner, counting it */
	bool keyed;			       /* @identity is a key's */
	uint8_t secret[IBTRS_AUTH_KEY_LEN];    /* S: every join proves it */
	void *priv;
	struct srv_path *paths;
	unsigned int nr_paths;
	_Atomic int refs;     /* alive + connections (+ transient) */
	bool closing;	      /* context's loop: off the context's list */
	bool connected_ev;    /* CONNECTED delivered, DISCONNECTED owed */
	bool client_closed;   /* the client said goodbye: no grace */
	uint64_t grace_until; /* no path: kept until then for a rejoin */
	uint64_t incarnation; /* random, never 0: told at every join */
	bool gen_from_1;      /* its client has IBTRS_CAP_GEN_FROM_1 */
	/* protocol errors of the session's paths, closed ones included */
	_Atomic uint64_t proto_xprt, proto_msg, gen_rejected;
	char *chunks;
	size_t pool_len;
	uint64_t mem; /* counted against the memory limit */
	struct ibtrs_xprt_pd *pd;
	struct ibtrs_xprt_mr *mr;
	struct ibtrs_srv_op *ops;
};

struct ibtrs_srv_ctx {
	const struct ibtrs_xprt_ops *ops;
	struct ibtrs_sec sec; /* set at open, read-only after */
	rdma_ev_fn *rdma_ev;
	link_ev_fn *link_ev;
	struct ibtrs_loop *loop; /* the context's: loops[0].loop */
	struct srv_loop *loops;
	unsigned int nr_loops;
	bool closing; /* context's loop: ibtrs_srv_close() began */
	struct ibtrs_srv *closing_list; /* ibtrs_srv_close() */
	struct ibtrs_xprt_listener *listener;
	uint16_t port;
	uint32_t queue_depth;
	uint32_t max_io_size;
	uint32_t chunk_size;
	unsigned int off_bits;
	uint32_t max_sessions;
	uint64_t max_memory;	    /* 0: none */
	struct ibtrs_srv *sessions; /* context's loop */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int nr_sessions; /* under @lock */
	struct ibtrs_hb hb;
	uint64_t mem_used; /* under @lock: what the limit counts */
	uint64_t grace_ns;
	_Atomic uint64_t requests, replays, busy, proto_errors, stale;
	/* kinds of proto_errors (which also counts bad connection requests,
	 * before any session) */
	_Atomic uint64_t proto_xprt, proto_msg, gen_rejected;
	_Atomic uint64_t refused_full; /* new sessions refused: server full */
	_Atomic uint64_t auth_failed, refused_limit;
	_Atomic unsigned int nr_paths;
	struct ibtrs_xprt_pd *auth_pd; /* empty: handshakes reach nothing */
	struct srv_hs *handshakes;     /* context's loop: listed ones */
	_Atomic unsigned int nr_handshakes; /* every struct srv_hs */
	pthread_mutex_t ident_lock;
	struct srv_ident *idents; /* under ident_lock */
	unsigned int nr_cons;	  /* under @lock: not yet freed */
	uint32_t max_sess_per_client, max_cons_per_client, max_hs_per_client;
	uint64_t hs_timeout_ns;
	struct ctl_node ctl;
};

static void srv_auth(struct srv_con *con, uint32_t len);
static void srv_join(struct srv_con *con);

/* What one session counts against the memory limit. */
static uint64_t srv_sess_mem(const struct ibtrs_srv_ctx *ctx)
{
	return SRV_SESS_MEM +
	       (uint64_t)ctx->queue_depth *
		       (ctx->chunk_size + sizeof(struct ibtrs_srv_op));
}

/* What one connection counts against the memory limit. */
static uint64_t srv_con_mem(const struct ibtrs_srv_ctx *ctx)
{
	return SRV_CON_MEM + (uint64_t)ctx->queue_depth * SRV_CON_MEM_CHUNK +
	       (ctx->sec.tls != IBTRS_TLS_OFF ? SRV_CON_MEM_TLS : 0);
}

/* Whether @more fits under the memory limit. Context: ctx->lock held. */
static bool srv_mem_fits(const struct ibtrs_srv_ctx *ctx, uint64_t more)
{
	return !ctx->max_memory || ctx->mem_used + more <= ctx->max_memory;
}

/* ------------------------------------------------------------------ */
/* clients, as the limits count them                                    */

/*
 * The record of @name, made if missing, held until srv_ident_put(); NULL
 * without memory. A count is raised only under a hold.
 */
static struct srv_ident *srv_ident_get(struct ibtrs_srv_ctx *ctx,
				       const char *name)
{
	struct srv_ident *id;

	pthread_mutex_lock(&ctx->ident_lock);
	for (id = ctx->idents; id; id = id->next)
		if (!strcmp(id->name, name))
			break;
	if (!id) {
		id = calloc(1, sizeof(*id));
		if (id) {
			snprintf(id->name, sizeof(id->name), "%s", name);
			id->next = ctx->idents;
			ctx->idents = id;
		}
	}
	if (id)
		id->holds++;
	pthread_mutex_unlock(&ctx->ident_lock);
	return id;
}

/* Under ident_lock: free @id if it counts and holds nothing any more. */
static void ident_gc(struct ibtrs_srv_ctx *ctx, struct srv_ident *id)
{
	struct srv_ident **pp;

	if (id->holds || atomic_load(&id->sessions) || atomic_load(&id->cons) ||
	    atomic_load(&id->handshakes))
		return;
	for (pp = &ctx->idents; *pp; pp = &(*pp)->next) {
		if (*pp == id) {
			*pp = id->next;
			break;
		}
	}
	free(id);
}

/* Drop the hold of srv_ident_get(). */
static void srv_ident_put(struct ibtrs_srv_ctx *ctx, struct srv_ident *id)
{
	if (!id)
		return;
	pthread_mutex_lock(&ctx->ident_lock);
	id->holds--;
	ident_gc(ctx, id);
	pthread_mutex_unlock(&ctx->ident_lock);
}

/* Lower one of @id's counts; any thread. */
static void srv_ident_drop(struct ibtrs_srv_ctx *ctx, struct srv_ident *id,
			   _Atomic unsigned int *count)
{
	atomic_fetch_sub(count, 1);
	pthread_mutex_lock(&ctx->ident_lock);
	ident_gc(ctx, id);
	pthread_mutex_unlock(&ctx->ident_lock);
}

/* ------------------------------------------------------------------ */
/* sessions                                                             */

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
static void srv_sess_put(struct ibtrs_srv *sess)
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
static void srv_sess_unlink_put(struct ibtrs_srv *sess)
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
 * Its loop: the session ends (no path and no grace, grace over, refused
 * by the application, the context closing). No connection joins it from
 * now on; the context's loop takes it off the list.
 */
static void srv_sess_end(struct ibtrs_srv *sess)
{
	if (sess->dying)
		return;
	sess->dying = true;
	atomic_store(&sess->graced, false);
	if (ibtrs_loop_on_thread(sess->ctx->loop)) {
		srv_sess_unlink_put(sess);
		return;
	}
	/* Held until it ran: ibtrs_srv_close() may unlink it first. */
	atomic_fetch_add(&sess->refs, 1);
	ibtrs_loop_queue(sess->ctx->loop, &sess->unlink_work);
}

/* Its loop: a session that no path joined and none waits for ends. */
static void srv_sess_end_if_empty(struct ibtrs_srv *sess)
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
static void srv_sess_drop_empty(struct ibtrs_srv *sess)
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

static struct ibtrs_srv *srv_sess_create(struct ibtrs_srv_ctx *ctx,
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

/* ------------------------------------------------------------------ */
/* connections and paths                                                */

/* A connection's share of the memory limit goes. */
static void srv_con_mem_put(struct ibtrs_srv_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->mem_used -= srv_con_mem(ctx);
	pthread_cond_broadcast(&ctx->cond);
	pthread_mutex_unlock(&ctx->lock);
}

static void srv_con_free_work(struct ibtrs_work *w)
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
static void srv_con_put(struct srv_con *con)
{
	if (atomic_fetch_sub(&con->refs, 1) == 1)
		ibtrs_loop_queue(con->loop, &con->free_work);
}

/* The context's loop: @hs off the context's list (its counts stay). */
static void hs_unlist(struct srv_hs *hs)
{
	struct ibtrs_srv_ctx *ctx = hs->con->ctx;
	struct srv_hs **pp;

	if (!hs->listed)
		return;
	for (pp = &ctx->handshakes; *pp; pp = &(*pp)->next) {
		if (*pp == hs) {
			*pp = hs->next;
			break;
		}
	}
	hs->next = NULL;
	hs->listed = false;
}

/* The connection's loop: its handshake is over, and its counts go. */
static void hs_free(struct srv_con *con)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct srv_hs *hs = con->hs;

	hs_unlist(hs);
	atomic_fetch_sub(&ctx->nr_handshakes, 1);
	srv_ident_drop(ctx, hs->addr, &hs->addr->handshakes);
	con->hs = NULL;
	ibtrs_wipe(hs, sizeof(*hs));
	free(hs);
}

/*
 * The connection's loop: end a connection that has not joined a session.
 * Its half-open count goes with it, and a session it made for itself.
 */
static void srv_hs_close(struct srv_con *con, const char *why)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct srv_hs *hs = con->hs;

	if (!hs)
		return;
	ibtrs_log(IBTRS_LOG_DEBUG, "client %s: handshake closed: %s", hs->peer,
		  why);
	ctx->ops->disconnect(con->xcon);
	/* After the disconnect: the refusal's send it flushed completes
	 * in it and queues close_work again, which must not outlive hs. */
	ibtrs_loop_cancel(con->loop, &hs->close_work);
	ibtrs_loop_cancel(con->loop, &con->join_work);
	con->joining = false;
	if (con->sess && hs->created)
		srv_sess_drop_empty(con->sess);
	hs_free(con);
	srv_con_put(con);
}

static void srv_path_close(struct srv_path *path, const char *why)
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
		sess->grace_until = ibtrs_now_ns() + sess->ctx->grace_ns;
		atomic_store(&sess->graced, true);
		return;
	}
	srv_sess_end(sess);
}

/* A protocol error of one of the kinds counted per path and session. */
enum srv_proto_kind { PROTO_XPRT, PROTO_MSG, PROTO_GEN };

static void srv_count_proto_error(struct srv_path *path, enum srv_proto_kind k)
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

static void srv_path_proto_error(struct srv_path *path, const char *what)
{
	srv_count_proto_error(path, PROTO_MSG);
	ibtrs_log(IBTRS_LOG_ERR, "session %s: path %s: protocol error: %s",
		  path->sess->sessname[0] ? path->sess->sessname : "(unnamed)",
		  path->peer, what);
	srv_path_close(path, "-EPROTO");
}

static void srv_con_err(struct ibtrs_xprt_con *xcon, int err)
{
	struct srv_con *con = xcon->ctx;
	char why[64];

	if (!con->path)
		return;
	/* The backend refused what the peer sent (a bad frame, a remote
	 * access out of bounds): a protocol error below the messages. */
	if (err == -EPROTO) {
		srv_count_proto_error(con->path, PROTO_XPRT);
		ibtrs_log(
			IBTRS_LOG_ERR,
			"session %s: path %s: connection %u: transport protocol error",
			con->sess->sessname[0] ? con->sess->sessname
					       : "(unnamed)",
			con->path->peer, con->cid);
	}
	snprintf(why, sizeof(why), "connection %u: %s", con->cid,
		 strerror(-err));
	srv_path_close(con->path, why);
}

/* ------------------------------------------------------------------ */
/* requests                                                             */

/*
 * Send the answer for @chunk on @con, which the caller holds a reference
 * on; the reference goes with the answer. A READ answer carries the chunk's
 * data, so the chunk stays referenced until it has left.
 *
 * Lazy: an answer from a thread other than the loop's (an application's
 * completion thread) is sent by the loop thread, gathered with the others
 * into one system call; the thread that answers makes none. The chunk is
 * then read by the thread that writes the client's next request into it,
 * which is also what TSan can follow (it records sendmsg's reads after
 * the call, when the peer may already have answered).
 */
static void send_rsp(struct srv_con *con, uint32_t chunk, int dir,
		     uint32_t data_len, const struct ibtrs_desc *desc, int err)
{
	struct ibtrs_srv *sess = con->sess;
	const struct ibtrs_xprt_ops *ops = sess->ctx->ops;
	uint32_t imm = ibtrs_imm_rsp(chunk, err);
	struct iovec iov;

	if (dir == IBTRS_READ && !err && data_len) {
		iov.iov_base =
			sess->chunks + (size_t)chunk * sess->ctx->chunk_size;
		iov.iov_len = data_len;
		if (ops->post_write(con->xcon, &iov, 1, desc->addr, desc->key,
				    imm, 0,
				    IBTRS_XPRT_IMM | IBTRS_XPRT_SIGNALED |
					    IBTRS_XPRT_LAZY))
			srv_con_put(con);
		return;
	}
	ops->post_write(con->xcon, NULL, 0, 0, 0, imm, 0,
			IBTRS_XPRT_IMM | IBTRS_XPRT_LAZY);
	srv_con_put(con);
}

void ibtrs_srv_resp_rdma(struct ibtrs_srv_op *op, int err)
{
	struct ibtrs_desc desc;
	struct srv_con *con;
	uint32_t data_len;
	int dir;

	if (!op)
		return;
	if (err > 0)
		err = -err;
	pthread_spin_lock(&op->lock);
	if (op->state != OP_RUNNING) {
		pthread_spin_unlock(&op->lock);
		ibtrs_log_rl(IBTRS_LOG_ERR,
			     "ibtrs_srv_resp_rdma: operation %u is not running",
			     op->chunk);
		return;
	}
	op->state = OP_DONE;
	op->result = err;
	con = op->con;
	op->con = NULL;
	dir = op->dir;
	data_len = op->data_len;
	desc = op->desc;
	pthread_spin_unlock(&op->lock);
	send_rsp(con, op->chunk, dir, data_len, &desc, err);
}

static int srv_process_req(struct srv_con *con, uint32_t imm)
{
	struct ibtrs_srv *sess = con->sess;
	struct ibtrs_srv_ctx *ctx = sess->ctx;
	struct ibtrs_req_trailer t;
	struct ibtrs_srv_op *op;
	struct srv_con *old;
	enum ibtrs_gen_pos pos;
	uint32_t chunk, off, data_len;
	int ret, result;
	char *base;

	ibtrs_imm_req_unpack(imm, ctx->off_bits, &chunk, &off);
	if (chunk >= ctx->queue_depth ||
	    off > ctx->chunk_size - sizeof(struct ibtrs_trailer))
		return -EPROTO;
	base = sess->chunks + (size_t)chunk * ctx->chunk_size;
	if (ibtrs_trailer_decode(base + off, &t))
		return -EPROTO;
	if (t.usr_len > off)
		return -EPROTO;
	data_len = off - t.usr_len;
	if (data_len > ctx->max_io_size)
		return -EPROTO;
	if (t.dir == IBTRS_READ && t.desc.len != data_len)
		return -EPROTO;
	op = &sess->ops[chunk];
	pthread_spin_lock(&op->lock);
	pos = ibtrs_gen_classify(op->gen, t.gen);
	if (op->state == OP_IDLE && !sess->gen_from_1)
		/* A client of before goes on with its generations in a new
		 * session: the first one sets the tag's. */
		pos = IBTRS_GEN_NEXT;
	else if (pos == IBTRS_GEN_SAME && op->state == OP_IDLE)
		pos = IBTRS_GEN_OUTSIDE; /* the first request carries >= 1 */
	if (pos == IBTRS_GEN_OUTSIDE) {
		/*
		 * No request of this client: refused alone, and the tag
		 * keeps its state, so that the client's next generation is
		 * still the next one.
		 */
		pthread_spin_unlock(&op->lock);
		srv_count_proto_error(con->path, PROTO_GEN);
		ibtrs_log_rl(
			IBTRS_LOG_WARN,
			"session %s: path %s: chunk %u: generation %u outside the window of %u: refused",
			sess->sessname, con->path->peer, chunk, t.gen, op->gen);
		atomic_fetch_add(&con->refs, 1);
		send_rsp(con, chunk, IBTRS_WRITE, 0, NULL, -EPROTO);
		return 0;
	}
	if (pos == IBTRS_GEN_STALE) {
		/*
		 * Older than the request this chunk ran last: a copy that a
		 * dead path delivered after its replay ran and the client
		 * went on with the tag. Running it again would undo the
		 * requests after it. It is answered -ESTALE where it came
		 * from, which a client that went on never reads, and which
		 * ends a request that an impostor's generation overtook
		 * rather than leaving it unanswered.
		 */
		pthread_spin_unlock(&op->lock);
		atomic_fetch_add(&ctx->stale, 1);
		atomic_fetch_add(&con->refs, 1);
		send_rsp(con, chunk, IBTRS_WRITE, 0, NULL, -ESTALE);
		return 0;
	}
	atomic_fetch_add(&con->refs, 1); /* for the answer, whichever */
	if (pos == IBTRS_GEN_SAME && op->dir == t.dir &&
	    op->data_len == data_len) {
		/* A replay: the client's path died while this ran. */
		atomic_fetch_add(&ctx->replays, 1);
		op->desc = t.desc; /* a READ destination has a new key */
		if (op->state == OP_RUNNING) {
			old = op->con;
			op->con = con; /* answer where the client now waits */
			pthread_spin_unlock(&op->lock);
			srv_con_put(old);
			return 0;
		}
		result = op->result;
		pthread_spin_unlock(&op->lock);
		send_rsp(con, chunk, t.dir, data_len, &t.desc, result);
		return 0;
	}
	if (op->state == OP_RUNNING) {
		/* An earlier request on this tag is still running. */
		pthread_spin_unlock(&op->lock);
		atomic_fetch_add(&ctx->busy, 1);
		send_rsp(con, chunk, IBTRS_WRITE, 0, NULL, -EBUSY);
		return 0;
	}
	if (t.dir == IBTRS_READ) {
		con->path->rd_ops++;
		con->path->rd_bytes += data_len;
	} else {
		con->path->wr_ops++;
		con->path->wr_bytes += data_len;
	}
	op->state = OP_RUNNING;
	op->con = con;
	op->gen = t.gen;
	op->dir = t.dir;
	op->data_len = data_len;
	op->desc = t.desc;
	pthread_spin_unlock(&op->lock);
	atomic_fetch_add(&ctx->requests, 1);
	ret = ctx->rdma_ev(sess, sess->priv, op, t.dir, base, data_len,
			   base + data_len, t.usr_len);
	if (ret)
		ibtrs_srv_resp_rdma(op, ret);
	return 0;
}

static void srv_send_info_rsp(struct srv_con *con)
{
	struct ibtrs_srv *sess = con->sess;
	struct ibtrs_desc desc = {
		.addr = sess->mr->addr,
		.key = sess->mr->key,
		.len = (uint32_t)sess->pool_len,
	};
	struct iovec iov = { .iov_base = con->rsp_buf };

	iov.iov_len = ibtrs_info_rsp_encode(con->rsp_buf, &desc, 1);
	sess->ctx->ops->post_send(con->xcon, &iov, 1, 0, 0);
}

static void srv_process_info(struct srv_con *con, uint32_t len)
{
	struct srv_path *path = con->path;
	struct ibtrs_srv *sess = con->sess;
	char name[IBTRS_SESSNAME_LEN];
	int ret;

	if (con->cid || path->connected ||
	    ibtrs_info_req_decode(con->info_buf, len, name)) {
		srv_path_proto_error(path, "bad INFO_REQ");
		return;
	}
	if (path->nr_cons != path->cid_num) {
		srv_path_proto_error(path, "INFO_REQ before all connections");
		return;
	}
	if (!sess->sessname[0]) {
		memcpy(sess->sessname, name, sizeof(sess->sessname));
	} else if (strcmp(sess->sessname, name)) {
		srv_path_proto_error(path,
				     "session name differs between paths");
		return;
	}
	path->connected = true;
	ibtrs_log(IBTRS_LOG_INFO, "session %s: path %s connected (%u cons)",
		  sess->sessname, path->peer, path->cid_num);
	if (!sess->connected_ev) {
		ret = sess->ctx->link_ev
			      ? sess->ctx->link_ev(sess,
						   IBTRS_SRV_LINK_EV_CONNECTED,
						   sess->priv)
			      : 0;
		if (ret) {
			ibtrs_log(IBTRS_LOG_INFO,
				  "session %s: refused by the application (%d)",
				  sess->sessname, ret);
			srv_sess_end(sess);
			while (sess->paths)
				srv_path_close(sess->paths, "session refused");
			return;
		}
		sess->connected_ev = true;
	}
	srv_send_info_rsp(con);
}

static void srv_hb_ack(struct srv_con *con)
{
	con->sess->ctx->ops->post_write(con->xcon, NULL, 0, 0, 0,
					ibtrs_imm_hb(IBTRS_IMM_HB_ACK), 0,
					IBTRS_XPRT_IMM);
}

static void srv_con_wc(struct ibtrs_xprt_con *xcon, const struct ibtrs_wc *wc)
{
	struct srv_con *con = xcon->ctx;
	struct srv_path *path = con->path;
	int ret;

	switch (wc->opcode) {
	case IBTRS_WC_WRITE:
		/* A READ answer left, or was flushed: the chunk is free. */
		srv_con_put(con);
		return;
	case IBTRS_WC_SEND:
		return;
	case IBTRS_WC_RECV:
		if (!path)
			return;
		if (wc->wr_id != WR_ID_INFO) {
			srv_path_proto_error(path, "unexpected message");
			return;
		}
		path->last_rx_ns = ibtrs_now_ns();
		srv_process_info(con, wc->byte_len);
		return;
	case IBTRS_WC_RECV_IMM:
		break;
	}
	if (!path)
		return;
	path->last_rx_ns = ibtrs_loop_batch_ns(con->loop);
	switch (ibtrs_imm_type(wc->imm)) {
	case IBTRS_IMM_IO_REQ:
		if (!path->connected) {
			srv_path_proto_error(path, "request before INFO_REQ");
			return;
		}
		ret = srv_process_req(con, wc->imm);
		if (ret) {
			srv_path_proto_error(path, "malformed request");
			return;
		}
		break;
	case IBTRS_IMM_HB:
		srv_hb_ack(con);
		break;
	case IBTRS_IMM_HB_ACK:
		break;
	case IBTRS_IMM_CLOSE:
		if (con->cid) {
			srv_path_proto_error(path,
					     "CLOSE on an I/O connection");
			return;
		}
		con->sess->client_closed = true;
		srv_path_close(path, "closed by the client");
		return;
	default:
		srv_path_proto_error(path, "unknown immediate type");
		return;
	}
	/* rdma_ev may have closed the path through a failed response. */
	if (con->path)
		con->sess->ctx->ops->post_recv(xcon, NULL, 0, WR_ID_IMM);
}

/* A joined connection's completions (srv_join() installs it). */
static const struct ibtrs_xprt_handler srv_io_handler = {
	.wc = srv_con_wc,
	.err = srv_con_err,
};

/* ------------------------------------------------------------------ */
/* connection requests                                                  */

static void reject(struct ibtrs_srv_ctx *ctx, struct ibtrs_xprt_connreq *req,
		   int err)
{
	struct ibtrs_conn_rsp r = { .version = IBTRS_PROTO_VER,
				    .err = (uint16_t)-err };
	struct ibtrs_msg_conn_rsp m;

	ibtrs_conn_rsp_encode(&m, &r);
	ctx->ops->reject(req, &m);
}

static struct srv_path *find_path(struct ibtrs_srv *sess, const uint8_t *uuid)
{
	struct srv_path *p;

	for (p = sess->paths; p; p = p->next)
		if (!memcmp(p->uuid, uuid, IBTRS_UUID_LEN))
			return p;
	return NULL;
}

static struct ibtrs_srv *find_sess(struct ibtrs_srv_ctx *ctx,
				   const uint8_t *uuid)
{
	struct ibtrs_srv *s;

	for (s = ctx->sessions; s; s = s->next)
		if (!memcmp(s->uuid, uuid, IBTRS_UUID_LEN))
			return s;
	return NULL;
}

/* The peer's address as text; IPv4 clients of the dual-stack listener
 * are shown as IPv4. */
static void peer_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	struct sockaddr_in s4 = { .sin_family = AF_INET };

	if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
		s4.sin_port = s6->sin6_port;
		ibtrs_sockaddr_to_str((struct sockaddr *)&s4, buf, len);
		return;
	}
	ibtrs_sockaddr_to_str((const struct sockaddr *)ss, buf, len);
}

/* "addr:" and the peer's address without its port: the identity of a
 * client without keys. IPv4 clients of the dual-stack listener read as
 * IPv4. */
static void peer_identity(const struct sockaddr_storage *ss, char *buf,
			  size_t len)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], host,
			  sizeof(host));
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
	else if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
	snprintf(buf, len, "addr:%s", host);
}

/* The attributes of every connection: it becomes an I/O one. */
static void con_attr(const struct ibtrs_srv_ctx *ctx,
		     struct ibtrs_xprt_con_attr *attr)
{
	attr->max_send_wr = 2 * ctx->queue_depth + SRV_EXTRA_RECVS;
	attr->max_recv_wr = ctx->queue_depth + SRV_EXTRA_RECVS + 2;
	attr->max_send_sge = 2;
	attr->timeout_ms = (unsigned int)(ctx->hb.timeout_ns / 1000000);
}

static void hs_close_work(struct ibtrs_work *w)
{
	struct srv_hs *hs = container_of(w, struct srv_hs, close_work);

	srv_hs_close(hs->con, "refused");
}

/*
 * Refuse the handshake of @con with @err (negative): AUTH_RSP tells the
 * client why, and the connection is closed once it left (or by the tick,
 * or by the client), so that the answer is not cut off by a reset.
 */
static void hs_refuse(struct srv_con *con, int err)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct ibtrs_auth_rsp r = { .err = (uint16_t)-err };
	struct iovec iov = { .iov_base = &con->auth_rsp,
			     .iov_len = sizeof(con->auth_rsp) };

	ibtrs_auth_rsp_encode(&con->auth_rsp, &r);
	con->hs->refused = true;
	con->hs->deadline_ns = ibtrs_now_ns();
	if (ctx->ops->post_send(con->xcon, &iov, 1, 0, IBTRS_XPRT_SIGNALED))
		srv_hs_close(con, "refused");
}

/* An authentication failure: counted, logged (rate-limited), refused. */
static void hs_auth_fail(struct srv_con *con, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void hs_auth_fail(struct srv_con *con, int err, const char *fmt, ...)
{
	char why[192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	atomic_fetch_add(&con->ctx->auth_failed, 1);
	ibtrs_log_rl(IBTRS_LOG_WARN,
		     "client %s refused: authentication failed: %s",
		     con->hs->peer, why);
	hs_refuse(con, err);
}

/* A limit reached: counted, logged (rate-limited), refused. */
static void hs_limit(struct srv_con *con, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void hs_limit(struct srv_con *con, int err, const char *fmt, ...)
{
	char why[192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	atomic_fetch_add(&con->ctx->refused_limit, 1);
	ibtrs_log_rl(IBTRS_LOG_WARN, "client %s refused: %s", con->hs->peer,
		     why);
	hs_refuse(con, err);
}

/* Sessions of @id, and whether one more is allowed. */
static bool srv_ident_may_open(const struct ibtrs_srv_ctx *ctx,
			       const struct srv_ident *id)
{
	return !id || atomic_load(&id->sessions) < ctx->max_sess_per_client;
}

/*
 * The session for a connection that proved itself (or NULL and *@err):
 * the one it joins, or a new one when there is none and the connection
 * may create it (FIRST, cid 0). A new session gets its secret from an
 * X25519 exchange with @ar's key; the server's public key goes to @pub_s.
 */
static struct ibtrs_srv *
hs_new_sess(struct srv_con *con, const struct ibtrs_auth_req *ar,
	    const struct ibtrs_auth_hs *ah, const struct ibtrs_psk *psk,
	    const char *identity, struct srv_ident *id,
	    uint8_t pub_s[IBTRS_AUTH_KEY_LEN], int *err)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct srv_hs *hs = con->hs;
	uint8_t priv[IBTRS_AUTH_KEY_LEN], shared[IBTRS_AUTH_KEY_LEN];
	struct ibtrs_srv *sess;
	int ret;

	if (!srv_ident_may_open(ctx, id)) {
		*err = -EUSERS;
		hs_limit(con, -EUSERS,
			 "identity %s holds %u sessions, its limit", identity,
			 atomic_load(&id->sessions));
		return NULL;
	}
	ret = ibtrs_auth_keypair(priv, pub_s);
	if (!ret)
		ret = ibtrs_auth_x25519(shared, priv, ar->pub);
	ibtrs_wipe(priv, sizeof(priv));
	if (ret) {
		ibtrs_wipe(shared, sizeof(shared));
		*err = -EACCES;
		hs_auth_fail(con, -EACCES, "bad public key");
		return NULL;
	}
	sess = srv_sess_create(ctx, hs->cr.sess_uuid, &ret);
	if (!sess) {
		ibtrs_wipe(shared, sizeof(shared));
		ibtrs_log(IBTRS_LOG_WARN,
			  "client %s refused: cannot create a session: %s",
			  hs->peer, strerror(-ret));
		*err = ret;
		hs_refuse(con, ret);
		return NULL;
	}
	ibtrs_auth_secret(sess->secret, psk ? psk->key : NULL,
			  psk ? psk->len : 0, shared, ah, pub_s);
	ibtrs_wipe(shared, sizeof(shared));
	snprintf(sess->identity, sizeof(sess->identity), "%s", identity);
	sess->keyed = psk != NULL;
	sess->gen_from_1 = hs->cr.caps & IBTRS_CAP_GEN_FROM_1;
	sess->ident = id;
	atomic_fetch_add(&id->sessions, 1);
	return sess;
}

/*
 * Loop thread: AUTH_REQ arrived on @con. Only a connection that proved
 * what it claims is attached to a session (docs/protocol.md,
 * "Authentication"): then, and only then, what a connection request did
 * before is done. Here, on the context's loop, the session it joins is
 * found or made and AUTH_RSP is written; the rest (its path, its pd, its
 * receives, the answer) is its session's loop's: srv_join().
 */
static void srv_auth(struct srv_con *con, uint32_t len)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct srv_hs *hs = con->hs;
	const struct ibtrs_conn_req *cr = &hs->cr;
	const struct ibtrs_psk *psk = NULL;
	struct ibtrs_auth_req ar;
	struct ibtrs_auth_hs ah = {
		.version = cr->version,
		.cid = cr->cid,
		.cid_num = cr->cid_num,
		.flags = cr->first_conn ? IBTRS_CONN_FIRST : 0,
	};
	struct ibtrs_auth_rsp rsp = { .flags = IBTRS_RSP_INCARNATION };
	uint8_t proof[IBTRS_AUTH_KEY_LEN], pub_s[IBTRS_AUTH_KEY_LEN] = { 0 };
	char identity[IBTRS_IDENTITY_MAX + 1];
	struct ibtrs_srv *sess;
	struct srv_ident *id;
	bool created = false;
	int ret;

	if (ibtrs_auth_req_decode(&hs->req, len, &ar)) {
		atomic_fetch_add(&ctx->proto_errors, 1);
		hs_auth_fail(con, -EPROTO, "malformed AUTH_REQ");
		return;
	}
	memcpy(ah.nc, cr->nonce, IBTRS_NONCE_LEN);
	memcpy(ah.ns, hs->ns, IBTRS_NONCE_LEN);
	memcpy(ah.sess_uuid, cr->sess_uuid, IBTRS_UUID_LEN);
	memcpy(ah.path_uuid, cr->path_uuid, IBTRS_UUID_LEN);
	memcpy(ah.pub_c, ar.pub, IBTRS_AUTH_KEY_LEN);
	ah.identity = ar.identity;

	/* Who: a key's identity where the server has keys. */
	if (ctx->sec.keys) {
		if (!(ar.flags & IBTRS_AUTH_PSK)) {
			hs_auth_fail(con, -EACCES,
				     "no key (this server requires one)");
			return;
		}
		psk = ibtrs_keyring_find(ctx->sec.keys, ar.identity);
		if (!psk) {
			hs_auth_fail(con, -EACCES, "unknown identity %s",
				     ar.identity);
			return;
		}
		ibtrs_auth_proof_psk(proof, psk->key, psk->len, &ah);
		if (!ibtrs_auth_equal(proof, ar.proof_psk)) {
			hs_auth_fail(con, -EACCES, "identity %s: wrong key",
				     ar.identity);
			return;
		}
		/* TLS proved a key too: it must be the same identity's. */
		if (hs->tls_identity[0] &&
		    strcmp(hs->tls_identity, psk->identity)) {
			hs_auth_fail(con, -EACCES,
				     "identity %s, but TLS proved identity %s",
				     psk->identity, hs->tls_identity);
			return;
		}
		snprintf(identity, sizeof(identity), "%s", psk->identity);
	} else {
		snprintf(identity, sizeof(identity), "%s", hs->addr->name);
	}
	id = srv_ident_get(ctx, identity);
	if (!id) {
		hs_refuse(con, -ENOMEM);
		return;
	}
	if (atomic_load(&id->cons) >= ctx->max_cons_per_client) {
		hs_limit(con, -EUSERS,
			 "identity %s holds %u connections, its limit",
			 identity, atomic_load(&id->cons));
		srv_ident_put(ctx, id);
		return;
	}

	/* Which session: joining one takes the proof of its secret. */
	sess = find_sess(ctx, cr->sess_uuid);
	if (sess) {
		if (!(ar.flags & IBTRS_AUTH_JOIN)) {
			hs_auth_fail(
				con, -EACCES,
				"session exists, and no proof of its secret");
			goto put_id;
		}
		ibtrs_auth_proof_sess(proof, sess->secret, &ah);
		if (!ibtrs_auth_equal(proof, ar.proof_sess)) {
			hs_auth_fail(con, -EACCES,
				     "wrong proof of the session's secret");
			goto put_id;
		}
		if (sess->keyed != (psk != NULL) ||
		    (psk && strcmp(sess->identity, identity))) {
			hs_auth_fail(con, -EACCES,
				     "identity %s does not own the session",
				     identity);
			goto put_id;
		}
	}
	if (!sess) {
		if (!cr->first_conn || cr->cid) {
			hs_refuse(con, -ENXIO);
			goto put_id;
		}
		sess = hs_new_sess(con, &ar, &ah, psk, identity, id, pub_s,
				   &ret);
		if (!sess)
			goto put_id;
		created = true;
	}
	rsp.flags |= created ? IBTRS_RSP_NEW_SESS : 0;
	rsp.incarnation = sess->incarnation;
	memcpy(rsp.pub, pub_s, sizeof(pub_s));
	if (psk)
		ibtrs_auth_proof_srv(rsp.proof, psk->key, psk->len, &ah,
				     created ? pub_s : NULL, rsp.flags,
				     rsp.incarnation);
	else
		ibtrs_auth_proof_srv(rsp.proof, sess->secret,
				     IBTRS_AUTH_KEY_LEN, &ah,
				     created ? pub_s : NULL, rsp.flags,
				     rsp.incarnation);
	ibtrs_auth_rsp_encode(&con->auth_rsp, &rsp);
	ibtrs_wipe(&rsp, sizeof(rsp));
	ibtrs_wipe(proof, sizeof(proof));

	/*
	 * Proved: the connection leaves the half-open list (the tick no
	 * longer times it out; its counts stay until it joined), counts as
	 * its client's (first: without keys that is the record of its
	 * address) and holds its session. Its path is the session's loop's
	 * business: the connection goes there to join it (srv_join()).
	 */
	hs_unlist(hs);
	hs->created = created;
	hs->req_len = len;
	con->ident = id;
	atomic_fetch_add(&id->cons, 1);
	srv_ident_put(ctx, id);
	atomic_fetch_add(&sess->refs, 1);
	con->sess = sess;
	if (!cr->cid)
		ibtrs_log(IBTRS_LOG_DEBUG, "client %s: identity %s, session %s",
			  hs->peer, identity, created ? "new" : "joined");
	if (sess->sl->loop == con->loop) {
		srv_join(con);
		return;
	}
	/* Not from within this receive: its event is still running. */
	con->joining = true;
	ibtrs_loop_queue(con->loop, &con->join_work);
	return;

put_id:
	srv_ident_put(ctx, id);
}

/* The context's loop: a connection back from a session that ended. */
static void srv_auth_again(struct srv_con *con)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct srv_hs *hs = con->hs;

	if (ctx->closing) {
		srv_hs_close(con, "server closing");
		return;
	}
	hs->listed = true;
	hs->next = ctx->handshakes;
	ctx->handshakes = hs;
	srv_auth(con, hs->req_len);
}

static void srv_con_back(struct ibtrs_xprt_con *xcon, int err)
{
	struct srv_con *con = xcon->ctx;

	if (err) {
		srv_hs_close(con, "hand-over failed");
		return;
	}
	srv_auth_again(con);
}

/*
 * The session's loop: the session of a proved connection ended before it
 * joined (its last path was the one it replaces, or it ended meanwhile).
 * The context's loop looks again: a new session, as the connection would
 * have found without the old one.
 */
static void srv_rejoin(struct srv_con *con)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct ibtrs_srv *sess = con->sess;
	struct ibtrs_loop *from = con->loop;
	int ret;

	con->sess = NULL;
	con->hs->created = false;
	srv_ident_drop(ctx, con->ident, &con->ident->cons);
	con->ident = NULL;
	srv_sess_put(sess);
	if (from == ctx->loop) {
		srv_auth_again(con);
		return;
	}
	con->loop = ctx->loop;
	ret = ctx->ops->move(con->xcon, ctx->loop, srv_con_back);
	if (ret) {
		con->loop = from;
		srv_hs_close(con, "hand-over failed");
	}
}

/*
 * The session's loop, the connection on it: what a connection request
 * did before is done now (a reconnecting path replaces its old self, a
 * new path is made), the connection moves to the session's pd, gets its
 * receives, and AUTH_RSP (made by srv_auth()) tells the client the
 * session and proves the server.
 */
static void srv_join(struct srv_con *con)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct srv_hs *hs = con->hs;
	const struct ibtrs_conn_req *cr = &hs->cr;
	struct ibtrs_srv *sess = con->sess;
	struct srv_loop *sl = sess->sl;
	struct iovec iov = { .iov_base = &con->auth_rsp,
			     .iov_len = sizeof(con->auth_rsp) };
	struct srv_path *path;
	unsigned int i;
	int ret;

	con->joining = false;
	if (!sess->on_loop) {
		sess->loop_next = sl->sessions;
		sl->sessions = sess;
		sess->on_loop = true;
	}
	path = sess->dying ? NULL : find_path(sess, cr->path_uuid);
	if (path && !cr->cid) {
		/* The client reconnects this path: the old one is stale. */
		srv_path_close(path, "replaced by a reconnect");
		path = NULL;
	}
	if (sess->dying) {
		srv_rejoin(con);
		return;
	}
	if (!path) {
		if (cr->cid) {
			hs_refuse(con, -ENXIO);
			goto drop_empty;
		}
		if (sess->nr_paths >= IBTRS_MAX_PATHS) {
			hs_limit(con, -ENOSPC,
				 "session holds %u paths, the limit",
				 sess->nr_paths);
			goto drop_empty;
		}
		path = calloc(1, sizeof(*path));
		if (!path) {
			hs_refuse(con, -ENOMEM);
			goto drop_empty;
		}
		path->sess = sess;
		memcpy(path->uuid, cr->path_uuid, IBTRS_UUID_LEN);
		path->cid_num = cr->cid_num;
		path->last_rx_ns = ibtrs_now_ns();
		snprintf(path->peer, sizeof(path->peer), "%s", hs->peer);
		path->next = sess->paths;
		sess->paths = path;
		sess->nr_paths++;
		sess->grace_until = 0;
		atomic_store(&sess->graced, false);
		atomic_fetch_add(&ctx->nr_paths, 1);
	} else if (path->cid_num != cr->cid_num || path->cons[cr->cid] ||
		   path->connected) {
		hs_refuse(con, -EBUSY);
		return;
	}

	/* Into the session: its memory becomes reachable now. */
	ret = ctx->ops->bind_pd(con->xcon, sess->pd);
	if (ret) {
		ibtrs_log(IBTRS_LOG_WARN, "client %s: connection %u failed: %s",
			  hs->peer, cr->cid, strerror(-ret));
		hs_refuse(con, ret);
		srv_path_close(path, "connection setup failed");
		return;
	}
	con->path = path;
	con->cid = cr->cid;
	path->cons[cr->cid] = con;
	path->nr_cons++;
	hs_free(con);
	/* Its completions are its session's from now on. */
	con->xcon->handler = &srv_io_handler;

	/* Receives first: con 0's first one takes INFO_REQ. */
	ret = 0;
	if (!con->cid)
		ret = ctx->ops->post_recv(con->xcon, con->info_buf,
					  sizeof(con->info_buf), WR_ID_INFO);
	for (i = 0; !ret && i < ctx->queue_depth + SRV_EXTRA_RECVS; i++)
		ret = ctx->ops->post_recv(con->xcon, NULL, 0, WR_ID_IMM);
	if (!ret)
		ret = ctx->ops->post_send(con->xcon, &iov, 1, 0, 0);
	if (ret) {
		ibtrs_log(IBTRS_LOG_WARN,
			  "session %s: connection %u failed: %s",
			  sess->sessname, con->cid, strerror(-ret));
		srv_path_close(path, "connection setup failed");
	}
	return;

drop_empty:
	/* A session made for this request goes with it; one waiting for its
	 * client to return stays. */
	if (hs->created)
		srv_sess_end_if_empty(sess);
}

static void srv_con_arrived(struct ibtrs_xprt_con *xcon, int err)
{
	struct srv_con *con = xcon->ctx;

	if (err) {
		srv_hs_close(con, "hand-over failed");
		return;
	}
	srv_join(con);
}

/* The context's loop, off the event batch: hand it to its session's. */
static void con_join_work(struct ibtrs_work *w)
{
	struct srv_con *con = container_of(w, struct srv_con, join_work);
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct ibtrs_loop *to = con->sess->sl->loop;
	int ret;

	if (!con->joining)
		return;
	if (ctx->closing) {
		srv_hs_close(con, "server closing");
		return;
	}
	/* Its frees go there from now on; nobody else holds it yet. */
	con->loop = to;
	ret = ctx->ops->move(con->xcon, to, srv_con_arrived);
	if (ret) {
		con->loop = ctx->loop;
		ibtrs_log(IBTRS_LOG_WARN,
			  "client %s: hand-over to the session's loop: %s",
			  con->hs->peer, strerror(-ret));
		srv_hs_close(con, "hand-over failed");
	}
}

/*
 * A connection's completions until it joined its session (then
 * srv_io_handler's): before AUTH_REQ, and after a refusal, nothing is
 * taken.
 */
static void srv_hs_wc(struct ibtrs_xprt_con *xcon, const struct ibtrs_wc *wc)
{
	struct srv_con *con = xcon->ctx;

	if (!con->hs)
		return; /* closed: what its disconnect flushed */
	if (wc->opcode == IBTRS_WC_SEND) {
		/* The refusal left (or was flushed): close, but not from
		 * within the send that completed it. */
		if (con->hs->refused)
			ibtrs_loop_queue(con->loop, &con->hs->close_work);
		return;
	}
	/* One AUTH_REQ: nothing may follow it before AUTH_RSP. */
	if (wc->opcode == IBTRS_WC_RECV && wc->wr_id == WR_ID_AUTH &&
	    !con->hs->refused && !con->joining && con->hs->listed) {
		srv_auth(con, wc->byte_len);
		return;
	}
	if (!con->hs->refused) {
		atomic_fetch_add(&con->ctx->proto_errors, 1);
		atomic_fetch_add(&con->ctx->auth_failed, 1);
		ibtrs_log_rl(IBTRS_LOG_WARN,
			     "client %s refused: no AUTH_REQ first",
			     con->hs->peer);
	}
	srv_hs_close(con, "unexpected message before AUTH_REQ");
}

static void srv_hs_err(struct ibtrs_xprt_con *xcon, int err)
{
	srv_hs_close(xcon->ctx, strerror(-err));
}

static const struct ibtrs_xprt_handler srv_hs_handler = {
	.wc = srv_hs_wc,
	.err = srv_hs_err,
};

/*
 * A connection request. Cheap checks only, and no session is touched: a
 * connection joins one only once AUTH_REQ proved it may (srv_auth()).
 * Until then it sits in the context's empty pd with one receive posted,
 * counted against the half-open limits, and the tick closes it if
 * AUTH_REQ does not come in time.
 */
static void srv_connreq(void *arg, struct ibtrs_xprt_connreq *req,
			const struct ibtrs_connreq_info *info)
{
	struct ibtrs_srv_ctx *ctx = arg;
	struct ibtrs_xprt_con_attr attr;
	struct ibtrs_conn_req cr;
	struct ibtrs_conn_rsp r = {
		.version = IBTRS_PROTO_VER,
		.queue_depth = (uint16_t)ctx->queue_depth,
		.max_io_size = ctx->max_io_size,
		.chunk_size = ctx->chunk_size,
		.max_usr_msg = IBTRS_MAX_USR_MSG,
		.flags = IBTRS_RSP_AUTH,
	};
	struct ibtrs_msg_conn_rsp m;
	char peer[IBTRS_SOCKADDR_STR_LEN] = "?";
	char addr_id[IBTRS_IDENTITY_MAX + 1];
	struct srv_ident *addr;
	struct srv_con *con;
	struct srv_hs *hs;
	int ret;

	peer_str(&info->peer, peer, sizeof(peer));
	ret = ibtrs_conn_req_decode(info->priv, sizeof(info->priv), &cr);
	if (ret == -EPROTONOSUPPORT) {
		ibtrs_log(
			IBTRS_LOG_WARN,
			"client %s refused: protocol version %u.%u, this server speaks %u.%u",
			peer, cr.version >> 8, cr.version & 0xff,
			IBTRS_PROTO_VER_MAJOR, IBTRS_PROTO_VER_MINOR);
		reject(ctx, req, ret);
		return;
	}
	if (ret) {
		atomic_fetch_add(&ctx->proto_errors, 1);
		ibtrs_log(IBTRS_LOG_WARN,
			  "client %s refused: bad connection request", peer);
		reject(ctx, req, -EPROTO);
		return;
	}
	if (!(cr.caps & IBTRS_CAP_AUTH)) {
		atomic_fetch_add(&ctx->auth_failed, 1);
		ibtrs_log_rl(
			IBTRS_LOG_WARN,
			"client %s refused: it does not authenticate (protocol %u.%u; this server requires authentication, protocol %u.%u)",
			peer, cr.version >> 8, cr.version & 0xff,
			IBTRS_PROTO_VER_MAJOR, IBTRS_PROTO_VER_MINOR);
		reject(ctx, req, -EACCES);
		return;
	}
	peer_identity(&info->peer, addr_id, sizeof(addr_id));
	addr = srv_ident_get(ctx, addr_id);
	if (!addr) {
		reject(ctx, req, -ENOMEM);
		return;
	}
	if (atomic_load(&addr->handshakes) >= ctx->max_hs_per_client ||
	    atomic_load(&ctx->nr_handshakes) >= SRV_MAX_HANDSHAKES) {
		atomic_fetch_add(&ctx->refused_limit, 1);
		ibtrs_log_rl(
			IBTRS_LOG_WARN,
			"client %s refused: %u handshakes unfinished from %s, %u in all (limits %u, %u)",
			peer, atomic_load(&addr->handshakes), addr_id,
			atomic_load(&ctx->nr_handshakes),
			ctx->max_hs_per_client, SRV_MAX_HANDSHAKES);
		srv_ident_put(ctx, addr);
		reject(ctx, req, -EAGAIN);
		return;
	}
	pthread_mutex_lock(&ctx->lock);
	ret = srv_mem_fits(ctx, srv_con_mem(ctx)) ? 0 : -ENOSPC;
	if (!ret) {
		ctx->mem_used += srv_con_mem(ctx);
		ctx->nr_cons++;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (ret) {
		ibtrs_log_rl(
			IBTRS_LOG_WARN,
			"server: memory limit reached: connection refused");
		srv_ident_put(ctx, addr);
		reject(ctx, req, ret);
		return;
	}
	con = calloc(1, sizeof(*con));
	hs = calloc(1, sizeof(*hs));
	ret = con && hs ? ibtrs_random(hs->ns, sizeof(hs->ns)) : -ENOMEM;
	if (ret) {
		reject(ctx, req, ret);
		goto free_con;
	}
	/* @info goes with @req at accept. */
	snprintf(hs->tls_identity, sizeof(hs->tls_identity), "%s",
		 info->tls_identity);
	memcpy(r.nonce, hs->ns, sizeof(r.nonce));
	ibtrs_conn_rsp_encode(&m, &r);
	con_attr(ctx, &attr);
	ret = ctx->ops->accept(req, ctx->auth_pd, &attr, &m, &con->xcon);
	if (ret)
		goto free_con;
	con->ctx = ctx;
	con->loop = ctx->loop;
	con->hs = hs;
	con->free_work.fn = srv_con_free_work;
	con->join_work.fn = con_join_work;
	atomic_init(&con->refs, 1);
	con->xcon->handler = &srv_hs_handler;
	con->xcon->ctx = con;
	hs->con = con;
	hs->cr = cr;
	hs->addr = addr;
	hs->deadline_ns = ibtrs_now_ns() + ctx->hs_timeout_ns;
	hs->close_work.fn = hs_close_work;
	snprintf(hs->peer, sizeof(hs->peer), "%s", peer);
	atomic_fetch_add(&addr->handshakes, 1);
	atomic_fetch_add(&ctx->nr_handshakes, 1);
	srv_ident_put(ctx, addr); /* the count holds it now */
	hs->listed = true;
	hs->next = ctx->handshakes;
	ctx->handshakes = hs;
	ret = ctx->ops->post_recv(con->xcon, &hs->req, sizeof(hs->req),
				  WR_ID_AUTH);
	if (!ret)
		ret = ctx->ops->start(con->xcon, ctx->loop);
	if (ret) {
		ibtrs_log(IBTRS_LOG_WARN, "client %s: connection failed: %s",
			  peer, strerror(-ret));
		srv_hs_close(con, "start failed");
	}
	return;

free_con:
	if (con && con->xcon)
		ctx->ops->destroy(con->xcon);
	free(con);
	free(hs);
	pthread_mutex_lock(&ctx->lock);
	ctx->nr_cons--;
	pthread_mutex_unlock(&ctx->lock);
	srv_con_mem_put(ctx);
	srv_ident_put(ctx, addr);
}

/* Close the handshakes past their deadline (refused ones included). */
static void srv_tick_handshakes(struct ibtrs_srv_ctx *ctx, uint64_t now)
{
	struct srv_hs *hs, *next;

	for (hs = ctx->handshakes; hs; hs = next) {
		next = hs->next;
		if (now < hs->deadline_ns)
			continue;
		if (!hs->refused) {
			atomic_fetch_add(&ctx->refused_limit, 1);
			ibtrs_log_rl(
				IBTRS_LOG_WARN,
				"client %s: no AUTH_REQ within %llu ms: closed",
				hs->peer,
				(unsigned long long)(ctx->hs_timeout_ns /
						     1000000));
		}
		srv_hs_close(hs->con, hs->refused ? "refused" : "timed out");
	}
}

/* ------------------------------------------------------------------ */
/* tick: heartbeats, silent paths, sessions past their grace            */

/*
 * The heartbeat of one path, the loop @late_ns late; true if it is silent
 * even after its receive side was drained (hb.h). Acts on nothing but the
 * heartbeat to send: srv_tick() decides on silent paths.
 */
static bool srv_tick_path(struct srv_path *path, uint64_t now, uint64_t late_ns)
{
	struct ibtrs_srv_ctx *ctx = path->sess->ctx;
	bool may_send = path->connected && path->cons[0];
	char why[64];
	enum ibtrs_hb_action a;
	unsigned int i;

	ibtrs_hb_credit(now, late_ns, &path->last_rx_ns);
	a = ibtrs_hb_tick(&ctx->hb, now, path->last_rx_ns, &path->last_hb_tx_ns,
			  may_send, why, sizeof(why));
	if (a == IBTRS_HB_DEAD) {
		for (i = 0; i < path->nr_cons; i++)
			if (path->cons[i] && path->cons[i]->xcon)
				ctx->ops->drain(path->cons[i]->xcon);
		a = ibtrs_hb_tick(&ctx->hb, now, path->last_rx_ns,
				  &path->last_hb_tx_ns, may_send, why,
				  sizeof(why));
	}
	switch (a) {
	case IBTRS_HB_DEAD:
		return true;
	case IBTRS_HB_SEND:
		ctx->ops->post_write(path->cons[0]->xcon, NULL, 0, 0, 0,
				     ibtrs_imm_hb(IBTRS_IMM_HB), 0,
				     IBTRS_XPRT_IMM);
		return false;
	case IBTRS_HB_NONE:
		return false;
	}
	return false;
}

/* Close the paths still silent: their verdict stands (srv_tick()). */
static void srv_close_silent(struct srv_loop *sl, uint64_t now)
{
	struct ibtrs_srv_ctx *ctx = sl->ctx;
	struct ibtrs_srv *sess, *next_sess;
	struct srv_path *path, *next_path;
	char why[64];
	uint64_t tx;

	for (sess = sl->sessions; sess; sess = next_sess) {
		next_sess = sess->loop_next;
		for (path = sess->paths; path; path = next_path) {
			next_path = path->next;
			tx = path->last_hb_tx_ns;
			if (ibtrs_hb_tick(&ctx->hb, now, path->last_rx_ns, &tx,
					  false, why,
					  sizeof(why)) == IBTRS_HB_DEAD)
				srv_path_close(path, why);
		}
	}
}

/*
 * The tick of one loop, for the sessions it runs (and on the context's
 * loop for the handshakes): each loop judges its own lateness.
 */
static void srv_tick(void *arg)
{
	struct srv_loop *sl = arg;
	struct ibtrs_srv_ctx *ctx = sl->ctx;
	uint64_t now = ibtrs_now_ns();
	uint64_t late = ibtrs_loop_tick_late_ns();
	struct ibtrs_srv *sess, *next_sess;
	unsigned int alive = 0, silent = 0;

	for (sess = sl->sessions; sess; sess = sess->loop_next) {
		struct srv_path *path;

		for (path = sess->paths; path; path = path->next) {
			alive++;
			silent += srv_tick_path(path, now, late);
		}
	}
	/* Every path silent on the same tick: more likely this host stalled
	 * than every client failed at once; one more tick to tell (hb.h). */
	if (!sl->idx)
		srv_tick_handshakes(ctx, now);
	if (ibtrs_hb_hold(alive, silent, &sl->hb_held))
		ibtrs_log(
			IBTRS_LOG_WARN,
			"all %u paths silent at once: a local stall? checked again next tick",
			silent);
	else if (silent)
		srv_close_silent(sl, now);
	for (sess = sl->sessions; sess; sess = next_sess) {
		next_sess = sess->loop_next;
		/* An end may free the session at once, which takes it off
		 * the list; next_sess is still valid. */
		if (!sess->dying && !sess->nr_paths && sess->grace_until &&
		    now >= sess->grace_until) {
			ibtrs_log(IBTRS_LOG_INFO,
				  "session %s: client did not come back",
				  sess->sessname);
			srv_sess_end(sess);
		}
	}
}

/* ------------------------------------------------------------------ */
/* public API                                                           */

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

	sess->dying = true;
	atomic_store(&sess->graced, false);
	while (sess->paths)
		srv_path_close(sess->paths, "server closing");
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

/* ------------------------------------------------------------------ */
/* control socket views (srv_ctl.c)                                     */

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
