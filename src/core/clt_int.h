/* SPDX-License-Identifier: MIT */
/*
 * clt_int.h - client objects shared by clt.c (sessions, their tick),
 * clt_tags.c (geometry, tags), clt_events.c (the event log), clt_req.c
 * (requests, clt_req.h), clt_path.c (paths: connect, failure, failover,
 * reconnect, heartbeats, statistics), clt_fault.c (fault injection, for
 * testing) and clt_ctl.c (the control socket). Calls run one way: clt.c
 * and clt_fault.c call into clt_path.c, which calls into clt_tags.c, which
 * calls into clt_req.c; all of them report to clt_events.c.
 *
 * Threads: the caller's threads submit; the session's loop thread (its
 * own, or one of the process's shared client loops: loop_threads) receives,
 * completes and runs every callback; the session's connector thread,
 * started by its first reconnect, reconnects failed paths. A submitter holds
 * its path's lock for reading while it posts, and a path changes state only
 * under the same lock held for writing, so no request slips onto a path going
 * down.
 */
#ifndef IBTRS_CLT_INT_H
#define IBTRS_CLT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <ibtrs_fault.h>

#include "addr.h"
#include "core.h"
#include "clt_req.h"
#include "ctl.h"
#include "hb.h"
#include "loop.h"
#include "path.h"
#include "sec.h"
#include "seqcount.h"
#include "tags.h"
#include "xprt.h"

#define CLT_EXTRA_RECVS 16
#define CLT_MAX_SEGMENTS 255
#define CLT_DEFAULT_CONNECT_TIMEOUT_MS 2000
#define CLT_DEFAULT_HB_TIMEOUT_MS 1000
#define CLT_MIN_HB_TIMEOUT_MS 100
#define CLT_DEFAULT_FAILOVER_TIMEOUT_MS 30000
#define CLT_RECONNECT_JITTER_MS 250
#define CLT_DRAIN_TIMEOUT_MS 5000
#define CLT_CLOSE_WAIT_MS 300 /* for the server to close after CLOSE */
#define CLT_MAX_FAULTS 8

#define WR_ID_IMM 0
#define WR_ID_HB 1
#define WR_ID_INFO UINT64_MAX
#define WR_ID_AUTH (UINT64_MAX - 1)

struct ibtrs_tag {
	struct ibtrs_clt *sess;
	uint32_t mem_id;
	enum ibtrs_clt_con_type con_type;
	_Atomic bool held;
} __attribute__((aligned(16)));

#define TAG_HDR_SIZE sizeof(struct ibtrs_tag)

struct clt_path;
struct clt_con;

struct clt_req {
	struct ibtrs_clt *sess;
	struct clt_path *path; /* where it is (or was last) posted */
	struct clt_con *con;
	ibtrs_conf_fn *conf;
	void *priv;
	int dir;
	enum ibtrs_clt_con_type con_type;
	uint32_t mem_id;
	uint32_t data_len;
	uint32_t usr_len;
	uint32_t gen; /* same for every replay of one request */
	/* the server session @gen belongs to: the epoch of the path it was
	 * last posted on (see clt_path.epoch) */
	uint32_t epoch;
	/* posted at least once since submission: only such a request can
	 * have run on a server session that was since lost */
	bool posted;
	int rsp_err;
	_Atomic int state; /* enum clt_req_state: clt_req_change() only */
	uint64_t start_ns;
	uint64_t deadline_ns;	  /* failover deadline, once orphaned */
	struct ibtrs_xprt_mr *mr; /* READ destination */
	bool mr_mapped;		  /* @mr holds this READ's destination */
	struct iovec *sg;	  /* copy of the caller's data iovecs */
	unsigned int sg_cnt;
	struct ibtrs_work done_work;
	/* loop thread: parked for failover */
	struct clt_req *next_pending;
	/* loop thread: a response held back by an injected delay */
	struct {
		struct clt_req *next; /* on sess->delayed */
		uint64_t until;
		uint32_t gen;	     /* of the request it answers */
		struct clt_con *con; /* where it arrived */
		bool queued;	     /* on sess->delayed */
	} delay;
	char hdr[IBTRS_MAX_USR_MSG + sizeof(struct ibtrs_trailer)];
};

struct clt_con {
	struct clt_path *path;
	unsigned int cid;
	struct ibtrs_xprt_con *xcon;
	/* AUTH_RSP hand-over to the connecting thread, under the path's
	 * info_lock: 0 waiting, 1 received (@auth_len bytes) */
	int auth_status;
	uint32_t auth_len;
	struct ibtrs_msg_auth_rsp auth_buf; /* the receive */
	struct ibtrs_msg_auth_req auth_req; /* what AUTH_REQ sends from */
};

struct clt_path {
	struct ibtrs_clt *sess;
	unsigned int idx;
	struct sockaddr_storage src, dst;
	bool has_src;
	char src_str[IBTRS_SOCKADDR_STR_LEN];
	char dst_str[IBTRS_SOCKADDR_STR_LEN];
	/* "SRC->DST" with a source, else DST: names the path in events,
	 * where two paths to one server would otherwise read the same. */
	char name[2 * IBTRS_SOCKADDR_STR_LEN + 2];
	uint8_t uuid[IBTRS_UUID_LEN];
	uint16_t recon_cnt;
	pthread_rwlock_t lock; /* read: posting off the loop thread;
				* write: state changes */
	_Atomic int state;
	pthread_mutex_t connect_lock; /* one connect at a time */
	unsigned int con_num;
	struct clt_con cons[IBTRS_MAX_CONS_PER_PATH];
	struct ibtrs_desc *rbufs; /* per chunk: address and key */
	/*
	 * The server session this path joined, from its conn_rsp (written
	 * by the connecting thread before the path is up), and the
	 * session's epoch it belongs to (written on the loop thread before
	 * the path turns CONNECTED, read by submitters under @lock).
	 */
	uint64_t incarnation;
	uint32_t rsp_flags; /* IBTRS_RSP_* */
	uint32_t epoch;

	/* INFO_RSP hand-over from the loop thread to the connecting one */
	pthread_mutex_t info_lock;
	pthread_cond_t info_cond;
	int info_status; /* 0 waiting, 1 received, <0 failed */
	int info_cnt;
	struct ibtrs_desc info_desc[IBTRS_MAX_INFO_DESCS];
	char info_buf[IBTRS_INFO_RSP_MAX_LEN];
	struct ibtrs_msg_info_req info_req;

	/* loop thread */
	uint64_t last_rx_ns;
	uint64_t last_hb_tx_ns;
	uint64_t hb_sent_ns;
	bool up;		   /* counted in sess->paths_up */
	_Atomic bool no_reconnect; /* disconnected on purpose */

	/* connector: under sess->conn_lock */
	uint64_t next_try_ns;
	_Atomic int attempts; /* failed connects since the last success */

	_Atomic int fault;
	_Atomic unsigned int fault_arg;

	_Atomic uint64_t inflight, rd_ops, rd_bytes, wr_ops, wr_bytes;
	_Atomic uint64_t errors, proto_errors, failovers;
	_Atomic uint64_t proto_xprt; /* of proto_errors: transport-level */
	_Atomic uint64_t reconnect_attempts, reconnects, hb_rtt_ns;
	struct ibtrs_hist hist;

	/* gray failure (clt_path.c): written on the loop thread */
	_Atomic bool demoted;	 /* no new requests but probes */
	_Atomic bool lat_band;	 /* min-latency: among the fastest */
	_Atomic int gray_reason; /* enum clt_gray_reason of the demotion */
	_Atomic uint64_t demotions, readmissions;
	unsigned int gray_bad;	     /* bad windows in a row */
	unsigned int gray_good;	     /* good windows in a row, demoted */
	unsigned int gray_probation; /* good windows to be re-admitted */
	uint64_t gray_since_ns;	     /* demoted or re-admitted at */
	uint64_t gray_p50_ns;	     /* cost, last window (gray_measure) */
	uint64_t gray_inflight_sum, gray_ticks; /* inflight, this window */
	uint64_t gray_n;		  /* requests of the last window */
	uint64_t gray_segs, gray_retrans; /* backend counters, last window */
	uint64_t gray_snap[IBTRS_HIST_BUCKETS];
	/* min-latency: cost per request in flight, last window; 0: unknown */
	_Atomic uint64_t lat_cost_ns;
};

/* Why a path was demoted. */
enum clt_gray_reason {
	CLT_GRAY_NONE,
	CLT_GRAY_SLOW,	/* latency far above the other paths' */
	CLT_GRAY_LOSSY, /* the backend retransmits */
};

const char *clt_gray_reason_str(int reason);

/* A region registered with ibtrs_clt_mem_reg(). */
struct ibtrs_mem {
	struct ibtrs_xprt_mr *mr;
};

/*
 * A registered region as a READ looks it up: values, not a pointer to the
 * struct ibtrs_mem, so that a lookup racing with the deregistration reads
 * a stale entry at worst and retries, never freed memory.
 */
struct clt_mem_ent {
	_Atomic uintptr_t addr;
	_Atomic size_t len;
	_Atomic uint64_t raddr; /* the backend's address of @addr */
	_Atomic uint32_t key;
};

struct clt_fault {
	unsigned int idx;
	enum ibtrs_fault_type type;
	unsigned int arg;
	uint64_t due_ns;
	bool done;
};

struct ibtrs_clt {
	char sessname[NAME_MAX];
	struct ibtrs_sec sec; /* set at open, read-only after */
	uint8_t uuid[IBTRS_UUID_LEN];
	/* The server session's secret S, from the connection that created
	 * it; every other connection proves it (auth.h). */
	pthread_mutex_t auth_lock;
	bool has_secret;		    /* under auth_lock */
	uint8_t secret[IBTRS_AUTH_KEY_LEN]; /* under auth_lock */
	void *priv;
	link_clt_ev_fn *link_ev;
	const struct ibtrs_xprt_ops *ops;
	struct ibtrs_xprt_pd *pd;
	struct ibtrs_loop *loop;
	struct ibtrs_loop_tick *tick; /* clt_tick() on @loop */
	bool shared_loop;	      /* @loop is of the process's pool */
	unsigned int connect_timeout_ms;
	unsigned int io_cons;
	uint16_t port;
	uint8_t reconnect_delay_sec;
	int16_t max_reconnect_attempts;
	struct ibtrs_hb hb;
	uint64_t failover_timeout_ns;
	uint64_t no_path_timeout_ns; /* a new request waits for a path */
	_Atomic int policy;

	struct clt_path *paths[IBTRS_MAX_PATHS];
	_Atomic unsigned int path_cnt;
	pthread_mutex_t paths_lock; /* adding paths */
	_Atomic unsigned int rr;

	/* loop thread */
	unsigned int paths_up;
	bool hb_held;	      /* every path silent: held one tick */
	uint64_t gray_win_ns; /* the gray failure window began */
	bool opened;
	struct clt_req *pending; /* orphaned requests, oldest first */
	struct clt_req **pending_tail;
	struct clt_req *delayed;
	struct clt_fault faults[CLT_MAX_FAULTS];
	unsigned int nr_faults;

	/* connector thread */
	pthread_t connector;
	bool connector_started; /* under conn_lock: from the first reconnect */
	pthread_mutex_t conn_lock;
	pthread_cond_t conn_cond;
	bool conn_stop; /* under conn_lock */
	/* Under conn_lock: a path left CONNECTED (ibtrs_clt_close() waits). */
	pthread_cond_t closed_cond;

	/* geometry, fixed by the first path that connects */
	bool have_geometry;
	uint32_t queue_depth;
	uint32_t max_io_size;
	uint32_t chunk_size;
	uint32_t max_usr_msg;
	unsigned int off_bits;
	uint16_t max_segments;

	size_t pdu_sz;
	size_t tag_stride;
	char *tags;
	struct clt_req *reqs;
	struct ibtrs_xprt_mr *reqs_mr; /* the request headers, registered */
	struct iovec *sg_mem;
	struct ibtrs_tags tag_ids;
	_Atomic bool closing;

	/*
	 * The server session: its incarnation as the first join told it,
	 * and the epoch, one more at every session loss (a join that found
	 * another incarnation). Loop thread, but for the counters.
	 */
	bool replay_on_loss; /* opts.replay_on_session_loss */
	bool inc_known;
	bool inc_unsupported_logged;
	uint64_t incarnation;
	_Atomic uint64_t inc_shown; /* @incarnation for the stats, 0: none */
	uint32_t epoch;
	_Atomic uint64_t session_losses, unknown_outcome, replayed_after_loss;
	char loss_reason[96]; /* under ev_lock */

	struct ctl_node ctl;
	/*
	 * Registered memory, [0, nr_mems): the handles (mems, under
	 * mem_lock) and the lookup table of the same regions (mem_tab,
	 * which the requests read under the sequence count mem_seq, see
	 * seqcount.h), entry i of one for entry i of the other.
	 */
	pthread_mutex_t mem_lock;
	struct ibtrs_mem *mems[IBTRS_MAX_MEM_REGS];
	_Atomic unsigned int nr_mems;
	ibtrs_seqcount_t mem_seq;
	struct clt_mem_ent mem_tab[IBTRS_MAX_MEM_REGS];
	pthread_mutex_t ev_lock;
	struct ibtrs_event events[IBTRS_EVENT_LOG_LEN];
	unsigned int ev_head, ev_cnt;
};

/* clt_req.c: which path a request takes, and whether any can. */
int clt_select_path(struct ibtrs_clt *sess, const struct clt_path *exclude);
bool clt_sess_has_hope(struct ibtrs_clt *sess);

/* clt.c: the session's tick, on its loop. */
void clt_tick(void *arg);

/* clt_events.c: an entry of the session's event log, logged too. */
void clt_event(struct ibtrs_clt *sess, int path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* clt_tags.c: the geometry of the first path's handshake (-EPROTO for a
 * later path's that differs), and the tags and request slots it sizes. */
int clt_set_geometry(struct ibtrs_clt *sess, const struct ibtrs_conn_rsp *r);

/* clt_path.c */
extern const struct ibtrs_xprt_handler clt_handler;
struct clt_path *clt_path_alloc(struct ibtrs_clt *sess,
				const struct ibtrs_addr *addr,
				unsigned int idx);
void clt_path_free(struct clt_path *path);
/* Connect a path that is CLOSED: blocks; schedules retries on failure. */
int clt_path_open(struct clt_path *path);
void clt_path_close(struct clt_path *path);	/* loop thread */
void clt_path_say_close(struct clt_path *path); /* loop thread */
void clt_path_destroy_cons(struct clt_path *path);
/* The paths' part of the session's tick: heartbeats, gray failure. */
void clt_paths_tick(struct ibtrs_clt *sess, uint64_t now, uint64_t late_ns);
/*
 * Tests only: take (@hold) or give back a user of the first loop of the
 * sessions' shared loops (ibtrs_clt_opts.loop_threads 1), so that sessions
 * opened and closed one after another keep that loop and its thread
 * instead of making and ending one each. @loopp, if not NULL, is set to
 * the loop held. Return: 0 or a negative errno of ibtrs_loop_pool_get().
 */
int clt_test_hold_loop(bool hold, struct ibtrs_loop **loopp);
void clt_connector_stop(struct ibtrs_clt *sess);
/* Loop thread: fail a connected path (its requests move on). */
void clt_path_fail(struct clt_path *path, const char *why);

/* clt_fault.c */
int clt_parse_faults(struct ibtrs_clt *sess, const char *spec);
void clt_fault_tick(struct ibtrs_clt *sess, uint64_t now);

/* Where the I/O path asks whether a fault acts on it. */
enum clt_fault_point {
	CLT_FAULT_POST,	   /* a request is posted: swallowed? */
	CLT_FAULT_CTL_TX,  /* a heartbeat or CLOSE is sent: swallowed? */
	CLT_FAULT_RX,	   /* a message arrived: ignored? */
	CLT_FAULT_ERR,	   /* a connection error: unnoticed? */
	CLT_FAULT_CONNECT, /* a connect: unreachable? */
	CLT_FAULT_RSP,	   /* a response arrived: held back *@arg ms? */
};

/*
 * The one fault hook: true if the fault of @path acts at @point (DROP at
 * every point but RSP, DELAY at RSP, where *@arg is set to its
 * milliseconds). One atomic load when no fault is set.
 */
static inline bool clt_fault_hit(const struct clt_path *path,
				 enum clt_fault_point point, unsigned int *arg)
{
	int f = atomic_load(&path->fault);

	if (f == IBTRS_FAULT_NONE)
		return false;
	if (point != CLT_FAULT_RSP)
		return f == IBTRS_FAULT_DROP;
	if (f != IBTRS_FAULT_DELAY)
		return false;
	*arg = atomic_load(&path->fault_arg);
	return true;
}

/* clt_ctl.c: the session on the control socket */
extern const struct ctl_ops clt_ctl_ops;

static inline struct clt_path *clt_path_get(struct ibtrs_clt *sess,
					    unsigned int idx)
{
	if (idx >= atomic_load(&sess->path_cnt))
		return NULL;
	return sess->paths[idx];
}

static inline const char *path_name(const struct clt_path *path)
{
	return path->name;
}

#endif /* IBTRS_CLT_INT_H */
