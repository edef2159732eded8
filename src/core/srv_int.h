/* SPDX-License-Identifier: MIT */
/*
 * srv_int.h - the server's objects, shared by its files, and what each
 * file offers the others. The files, each with one job; a file calls only
 * those below it (the backend calls into srv_hs.c and srv_req.c through
 * the listener's callback and the connection handlers):
 *
 *   srv.c         the context: options, open and close, its loop threads
 *                 and listener, public getters and statistics, the views
 *                 for the control socket (srv.h, srv_ctl.c)
 *   srv_tick.c    each loop's tick: heartbeats, silent paths, sessions
 *                 past their grace, handshakes past their deadline
 *   srv_hs.c      a connection from its request to a joined path: the
 *                 half-open list and limits, AUTH_REQ's proofs, the session
 *                 it joins or makes, the hand-over to the session's loop,
 *                 the join, AUTH_RSP or the refusal
 *   srv_req.c     a joined connection's messages: INFO_REQ, requests and
 *                 each chunk's at-most-once ledger, responses, heartbeat
 *                 answers, CLOSE, the connection's errors
 *   srv_sess.c    the session's lifecycle (creation and placement on a
 *                 loop, grace, end, free), its paths' creation and close,
 *                 a connection's references, protocol error counts
 *   srv_limits.c  what the limits count: the memory limit's shares and
 *                 the per-client records (struct srv_ident)
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
#ifndef IBTRS_SRV_INT_H
#define IBTRS_SRV_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "addr.h"
#include "auth.h"
#include "core.h"
#include "ctl.h"
#include "hb.h"
#include "loop.h"
#include "sec.h"
#include "xprt.h"

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
	/* srv_tick(): silent at first look, drained before the verdict
	 * (@suspect); connections from @drain_next on still to drain */
	bool suspect;
	unsigned int drain_next;
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

/* A protocol error of one of the kinds counted per path and session. */
enum srv_proto_kind { PROTO_XPRT, PROTO_MSG, PROTO_GEN };

/*
 * srv_limits.c: the memory limit's shares (srv_mem_fits() under ctx->lock)
 * and the per-client records; a count is raised on the context's loop
 * only, under a hold of srv_ident_get(), and lowered on any thread.
 */
uint64_t srv_sess_mem(const struct ibtrs_srv_ctx *ctx);
uint64_t srv_con_mem(const struct ibtrs_srv_ctx *ctx);
bool srv_mem_fits(const struct ibtrs_srv_ctx *ctx, uint64_t more);
void srv_con_mem_put(struct ibtrs_srv_ctx *ctx);
struct srv_ident *srv_ident_get(struct ibtrs_srv_ctx *ctx, const char *name);
void srv_ident_put(struct ibtrs_srv_ctx *ctx, struct srv_ident *id);
void srv_ident_drop(struct ibtrs_srv_ctx *ctx, struct srv_ident *id,
		    _Atomic unsigned int *count);
bool srv_ident_may_open(const struct ibtrs_srv_ctx *ctx,
			const struct srv_ident *id);

/*
 * srv_sess.c: sessions, their paths, connection references. On the
 * session's loop, but srv_sess_create() and srv_sess_unlink_put() (the
 * context's loop), srv_sess_drop_empty() (either), srv_sess_put() and
 * srv_con_put() (any thread).
 */
struct ibtrs_srv *srv_sess_create(struct ibtrs_srv_ctx *ctx,
				  const uint8_t *uuid, int *err);
void srv_sess_put(struct ibtrs_srv *sess);
void srv_sess_unlink_put(struct ibtrs_srv *sess);
void srv_sess_end(struct ibtrs_srv *sess);
void srv_sess_end_if_empty(struct ibtrs_srv *sess);
void srv_sess_drop_empty(struct ibtrs_srv *sess);
void srv_sess_on_loop(struct ibtrs_srv *sess);
void srv_con_free_work(struct ibtrs_work *w);
void srv_con_put(struct srv_con *con);
struct srv_path *srv_path_add(struct ibtrs_srv *sess, const uint8_t *uuid,
			      uint16_t cid_num, const char *peer);
void srv_path_close(struct srv_path *path, const char *why);
void srv_sess_close(struct ibtrs_srv *sess, const char *why);
void srv_path_close_by_client(struct srv_path *path);
int srv_sess_connected(struct ibtrs_srv *sess);
void srv_count_proto_error(struct srv_path *path, enum srv_proto_kind k);
void srv_path_proto_error(struct srv_path *path, const char *what);

/* srv_req.c: a joined connection's handler (srv_join() installs it). */
extern const struct ibtrs_xprt_handler srv_io_handler;

/* srv_hs.c: the listener's callback, a handshake's close, their tick. */
void srv_connreq(void *arg, struct ibtrs_xprt_connreq *req,
		 const struct ibtrs_connreq_info *info);
void srv_hs_close(struct srv_con *con, const char *why);
void srv_tick_handshakes(struct ibtrs_srv_ctx *ctx, uint64_t now);

/* srv_tick.c: the tick of one loop (its struct srv_loop). */
void srv_tick(void *arg);

#endif /* IBTRS_SRV_INT_H */
