// SPDX-License-Identifier: MIT
/*
 * ofi.c - the ofi backend: the transport contract over libfabric FI_EP_MSG
 * endpoints with FI_RMA and remote CQ data (verbs on InfiniBand, RoCE and
 * iWARP; tcp where there is no RDMA hardware).
 *
 * It is written to the strictest provider contract whichever provider runs:
 * - every local buffer handed to the provider is registered and passed with
 *   its descriptor (FI_MR_LOCAL): headers and user data are copied into
 *   per work request bounce buffers unless they lie in a region mapped
 *   directly (the server's chunk pool), receives land in registered bounce
 *   buffers;
 * - keys and addresses come from the provider when mr_mode asks for it
 *   (FI_MR_PROV_KEY, FI_MR_VIRT_ADDR), else keys are chosen here and remote
 *   addresses are offsets; every mr_map() registers anew, so the key
 *   changes, and mr_unmap() closes the registration, so the key dies;
 * - immediates are 32 bits, whatever cq_data_size says;
 * - every immediate consumes a posted receive: with FI_RX_CQ_DATA (verbs)
 *   the core's receives are real fi_recv()s, without it (tcp) they are
 *   counted here exactly like the tcp backend does, and an immediate that
 *   finds none posted fails the connection;
 * - progress is manual in practice even where AUTO is reported: the CQ and
 *   EQ wait fds (FI_WAIT_FD) are registered with the loop, and the posting
 *   thread polls the transmit CQ after its post, except a handler of the
 *   connection's own progress round, which the round reaps after its
 *   receives, a batch at a time (see ofi_con_progress()).
 *
 * Memory: a region slot of more than one iovec (the client's READ
 * destination) is served by a bounce buffer of the slot: the peer writes
 * into it and mr_sync() copies it out into the caller's iovecs. A slot of
 * one iovec (the server's chunk pool) is registered directly, zero copy.
 * A WRITE or SEND whose buffers are not all inside a directly registered
 * region, or that has more iovecs than the provider's iov_limit, is copied
 * into the bounce buffer of its work request at post time. These copies
 * are the price of running on unregistered user memory.
 *
 * Each connection has its own EQ, a transmit CQ (read by any thread that
 * posts, and by the loop) and a receive CQ (read by the loop thread only),
 * so that receive completions always run on the loop thread and send
 * completions on the posting thread or the loop, as the contract allows.
 * Work requests beyond what the provider queue takes wait in a backlog
 * that transmit completions drain, in order.
 *
 * Connection setup: the private data travels without its trailing zeros
 * behind a length byte (verbs' CM data limit is below 64 bytes), followed,
 * when there is room, by a "sink" (address and key of a small registered
 * region) that the peer's zero-length writes with an immediate aim at: tcp
 * checks the key of empty writes too, verbs does not.
 *
 * Limits: one pd is one libfabric domain (the first the provider lists),
 * so on hosts with several RDMA devices connections must use that one;
 * receives take at most OFI_RX_BUF_SIZE bytes; the byte_len of a
 * RECV_IMM completion is what the provider reports (0 on tcp 1.17);
 * ibtrs_xprt_con_attr.timeout_ms is not used (libfabric has no keepalive
 * or user timeout knob: the core's heartbeats detect dead links).
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "addr.h"
#include "keyring.h"
#include "log.h"
#include "loop.h"
#include "ofi.h"
#include "xprt.h"

#define OFI_API_VERSION FI_VERSION(1, 17)
#define OFI_MAX_SGE 256	     /* iovecs of one region or work request */
#define OFI_WR_IOV 4	     /* iovecs of one provider operation */
#define OFI_RX_BUFS 16	     /* bounce receive buffers per connection */
#define OFI_RX_BUF_SIZE 8192 /* largest receive the backend takes */
#define OFI_BOUNCE_MIN 4096  /* smallest bounce buffer */
#define OFI_CQ_BATCH 32	     /* completions per fi_cq_read() */
#define OFI_DEFER_MAX 32     /* unreaped sends a round lets posts leave */
#define OFI_DEFER_LEN 16384  /* largest send a round leaves to its end */
#define OFI_RX_BUDGET 1024   /* receive completions per round */
#define OFI_ROUNDS 8	     /* progress rounds before yielding */
#define OFI_EQ_BUF 512	     /* CM event with its private data */
#define OFI_MR_ACCESS                                              \
	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | \
	 FI_REMOTE_WRITE)

#ifndef container_of /* rdma/fabric.h has one */
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))
#endif

/* ------------------------------------------------------------------ */
/* counters                                                             */

static struct {
	_Atomic uint64_t writes;
	_Atomic uint64_t writes_imm;
	_Atomic uint64_t sends;
	_Atomic uint64_t recv_imm;
	_Atomic uint64_t recv_send;
	_Atomic uint64_t tx_direct;
	_Atomic uint64_t tx_bounce;
	_Atomic uint64_t mr_direct;
	_Atomic uint64_t mr_bounce;
	_Atomic uint64_t mr_sync_copies;
	_Atomic uint64_t backlog;
	_Atomic uint64_t conn_failures;
} ofi_cnt;

#define OFI_INC(f) \
	atomic_fetch_add_explicit(&ofi_cnt.f, 1, memory_order_relaxed)
#define OFI_GET(f) atomic_load_explicit(&ofi_cnt.f, memory_order_relaxed)

void ofi_stats_get(struct ofi_stats *s)
{
	s->writes = OFI_GET(writes);
	s->writes_imm = OFI_GET(writes_imm);
	s->sends = OFI_GET(sends);
	s->recv_imm = OFI_GET(recv_imm);
	s->recv_send = OFI_GET(recv_send);
	s->tx_direct = OFI_GET(tx_direct);
	s->tx_bounce = OFI_GET(tx_bounce);
	s->mr_direct = OFI_GET(mr_direct);
	s->mr_bounce = OFI_GET(mr_bounce);
	s->mr_sync_copies = OFI_GET(mr_sync_copies);
	s->backlog = OFI_GET(backlog);
	s->conn_failures = OFI_GET(conn_failures);
}

/* ------------------------------------------------------------------ */
/* objects                                                              */

struct ofi_mr;

/**
 * struct ofi_cm_sink - where the peer's zero-length writes may point
 *
 * Providers that check the key of every write, even one of zero bytes
 * (tcp), need a valid target for the immediate-only writes of the core;
 * verbs does not check it and may not have room for it.
 */
struct ofi_cm_sink {
	uint64_t addr;
	uint32_t key;
} __attribute__((packed));

/**
 * struct ofi_pd - a protection domain: one libfabric fabric and domain
 * @info: the provider chosen for the pd; connections must use the same
 * @fabric: fabric of @domain
 * @domain: where every region and endpoint of the pd lives
 * @mr_mode: what the provider asks of registrations
 * @lock: protects @nr_mrs and @direct
 * @max_mrs: region slots allowed
 * @nr_mrs: region slots allocated
 * @direct: mapped regions registered on the caller's memory
 * @nr_direct: entries of @direct
 * @next_key: next key chosen here when the provider does not issue keys
 * @serial: every call into the provider is made under ofi_call_lock
 *	(OFI_CALL, see ofi_quirks)
 * @trywait: the provider's fi_trywait() reports pending work, so that a
 *	round may leave its handlers' sends to its end (ofi_post())
 */
/*
 * A fabric and a domain of a provider, shared by every pd of the process
 * on it. A provider keeps its progress state, sockets and wait objects per
 * domain: with a domain per session a server of a few hundred sessions on
 * tcp fell behind, dropped sessions by heartbeat timeout, and the client's
 * next connection found no session (ENXIO). Registration keys are issued
 * here, so they are unique across the pds that share the domain.
 */
struct ofi_dom {
	struct ofi_dom *next;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	unsigned int refs;
	_Atomic uint32_t next_key;
	/* OFI_Q_FLAT_WAIT (see ofi_flat_open()) */
	bool flat;
	struct fid_wait *pws; /* wait set of @pcq */
	struct fid_cq *pcq;   /* no endpoint: a read is a progress pass */
	int pfd;	      /* readable while a socket of the domain is */
};

/*
 * OFI_Q_FLAT_WAIT: the domain's progress fd in one loop, for all the
 * connections of the domain that loop runs. Entries are kept (at most one
 * per loop and domain that ever ran one) so that an event of a source
 * deleted in the same epoll batch never finds freed memory; all under
 * ofi_dom_lock.
 */
struct ofi_dom_src {
	struct ofi_dom_src *next;
	struct ibtrs_loop *loop;
	struct ofi_dom *dom; /* NULL while unused */
	unsigned int refs;   /* started connections of @dom on @loop */
	struct ibtrs_loop_src src;
};

static struct ofi_dom_src *ofi_dom_srcs;

/* The shared domains, under ofi_dom_lock. */
static struct ofi_dom *ofi_doms;
static pthread_mutex_t ofi_dom_lock = PTHREAD_MUTEX_INITIALIZER;

struct ofi_pd {
	struct ofi_dom *dom;
	/* of dom, copied: the hot paths read them */
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	uint64_t mr_mode;
	pthread_rwlock_t lock;
	unsigned int max_mrs;
	unsigned int nr_mrs;
	struct ofi_mr **direct;
	unsigned int nr_direct;
	bool serial;
	bool trywait; /* fi_trywait() reports what is pending */
	bool flat;    /* OFI_Q_FLAT_WAIT: connections wait as ofi_flat_open()
		       * says */
	bool no_shutdown; /* OFI_Q_NO_SHUTDOWN */
};

/*
 * Held around each call into a provider that needs it (OFI_Q_SERIAL): one
 * lock for the process, as a lock per domain was not enough for net (when
 * the client and the server of one process had a domain each). A plain
 * mutex: a ticket lock, which hands it over in the order asked, cost net
 * a fifth or more of its rate and doubled func/threads, and the mutex
 * missed no heartbeat once the loops stopped spinning (OFI_Q_FLAT_WAIT).
 */
static pthread_mutex_t ofi_call_lock = PTHREAD_MUTEX_INITIALIZER;

static void ofi_call_enter(void)
{
	pthread_mutex_lock(&ofi_call_lock);
}

static void ofi_call_leave(void)
{
	pthread_mutex_unlock(&ofi_call_lock);
}

/*
 * A call into the provider of pd @pd, under ofi_call_lock where the
 * provider needs it. The lock is the innermost: nothing is taken and no
 * handler runs under it, and nothing under it sleeps.
 */
#define OFI_CALL(pd, expr)                 \
	({                                 \
		struct ofi_pd *pd_ = (pd); \
		__typeof__(expr) r_;       \
		if (pd_->serial)           \
			ofi_call_enter();  \
		r_ = (expr);               \
		if (pd_->serial)           \
			ofi_call_leave();  \
		r_;                        \
	})

/**
 * struct ofi_mr - a region slot
 * @base: key and address the peer uses
 * @pd: owner
 * @max_sge: iovecs the slot maps at most
 * @fmr: current registration, NULL when unmapped
 * @direct: @fmr covers the caller's memory, not @bounce
 * @dbase: direct: registered start
 * @len: bytes mapped
 * @bounce: bounce buffer of the slot (allocated on first use)
 * @bounce_cap: its size
 * @cnt: iovecs mapped
 * @iov: the mapped iovecs
 */
struct ofi_mr {
	struct ibtrs_xprt_mr base;
	struct ofi_pd *pd;
	unsigned int max_sge;
	struct fid_mr *fmr;
	bool direct;
	char *dbase;
	size_t len;
	char *bounce;
	size_t bounce_cap;
	unsigned int cnt;
	struct iovec iov[];
};

/**
 * struct ofi_wr - a work request
 * @ctx: the provider's per operation context; completions carry its address
 * @next: free list or backlog
 * @wr_id: the caller's id
 * @flags: IBTRS_XPRT_*
 * @write: an RMA write (else a send)
 * @imm: immediate of a write with IBTRS_XPRT_IMM
 * @raddr: remote address of a write
 * @rkey: remote key of a write
 * @len: bytes
 * @cnt: entries of @iov
 * @bounce: registered bounce buffer of the work request
 * @bounce_cap: its size
 * @bounce_mr: its registration
 * @iov: what the provider reads
 * @desc: local descriptors of @iov
 */
struct ofi_wr {
	struct fi_context2 ctx;
	struct ofi_wr *next;
	uint64_t wr_id;
	unsigned int flags;
	bool write;
	uint32_t imm;
	uint64_t raddr;
	uint32_t rkey;
	size_t len;
	unsigned int cnt;
	char *bounce;
	size_t bounce_cap;
	struct fid_mr *bounce_mr;
	bool busy; /* held back or with the provider; under sq_lock */
	struct iovec iov[OFI_WR_IOV];
	void *desc[OFI_WR_IOV];
};

/**
 * struct ofi_recv - a receive posted by the core
 * @ctx: provider context when it is a real fi_recv() (FI_RX_CQ_DATA)
 * @buf: the core's buffer
 * @len: its size
 * @wr_id: the core's id
 * @rxb: bounce receive buffer behind it (FI_RX_CQ_DATA, @len > 0), or -1
 */
struct ofi_recv {
	struct fi_context2 ctx;
	void *buf;
	uint32_t len;
	uint64_t wr_id;
	int rxb;
};

/**
 * struct ofi_rxb - a registered bounce receive buffer
 * @ctx: provider context of its fi_recv()
 * @busy: taken by a posted receive
 */
struct ofi_rxb {
	struct fi_context2 ctx;
	bool busy;
};

/**
 * struct ofi_con - a connection
 *
 * The send side is under @sq_lock; the receive side belongs to the loop
 * thread (or to the caller before start()).
 */
struct ofi_con {
	struct ibtrs_xprt_con base;
	struct ofi_pd *pd;
	struct fi_info *info;
	struct fid_ep *ep;
	struct fid_eq *eq;
	struct fid_cq *txcq;
	struct fid_cq *rxcq;
	struct fid_wait *ws; /* OFI_Q_FLAT_WAIT: of both CQs */
	int ws_fd;	     /* its signal */
	struct ibtrs_loop *loop;
	struct ibtrs_loop_src eq_src;
	struct ibtrs_loop_src tx_src;
	struct ibtrs_loop_src rx_src;
	struct ibtrs_loop_src kick_src;
	bool in_round; /* ofi_con_progress() runs its rounds; loop thread */
	bool eq_src_added;
	bool tx_src_added;
	bool rx_src_added;
	bool dom_src_added; /* OFI_Q_FLAT_WAIT: ofi_dom_src_get() */
	struct ibtrs_xprt_con_attr attr;
	size_t iov_limit;
	size_t tx_max;
	size_t max_msg;
	size_t cm_data_size;
	bool rx_cq_data;
	struct ofi_cm_sink sink;      /* ours, for the peer */
	struct ofi_cm_sink peer_sink; /* the peer's */
	bool has_peer_sink;
	uint8_t answer[IBTRS_XPRT_PRIV_LEN];
	bool has_answer;
	/* ofi_move(): runs on the new loop, then tells the owner */
	struct ibtrs_work move_work;
	void (*move_done)(struct ibtrs_xprt_con *con, int err);

	/* send side, under sq_lock */
	pthread_mutex_t sq_lock;
	pthread_cond_t sq_cond; /* tx polling ended */
	struct ofi_wr *wrs;
	struct ofi_wr *wr_free;
	struct ofi_wr *bl_head, *bl_tail; /* not yet handed to the provider */
	unsigned int tx_inflight;
	bool connected;
	bool started;
	bool dead;
	bool tx_polling;
	pthread_t tx_poller;
	int tx_err;

	/* receive side */
	struct ofi_recv *rq;
	unsigned int rq_head, rq_cnt;
	char *rxbuf;
	struct fid_mr *rxmr;
	void *rxdesc;
	struct ofi_rxb rxb[OFI_RX_BUFS];
	bool failed;	  /* err() delivered or disconnected */
	int deferred_err; /* the peer went away: report it next round */
};

struct ofi_listener {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_wait *ws; /* OFI_Q_FLAT_WAIT: of @eq, to reset its signal */
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct ibtrs_loop *loop;
	struct ibtrs_loop_src src;
	void (*connreq)(void *arg, struct ibtrs_xprt_connreq *req,
			const struct ibtrs_connreq_info *info);
	void *arg;
};

struct ofi_connreq {
	struct ofi_listener *listener;
	struct fi_info *info;
	struct ibtrs_connreq_info ci;
	struct ofi_cm_sink sink;
	bool has_sink;
};

static inline struct ofi_con *to_ofi_con(struct ibtrs_xprt_con *con)
{
	return container_of(con, struct ofi_con, base);
}

static inline struct ofi_mr *to_ofi_mr(struct ibtrs_xprt_mr *mr)
{
	return container_of(mr, struct ofi_mr, base);
}

/* ------------------------------------------------------------------ */
/* helpers                                                              */

/* A libfabric return code (negative FI_E*) as a negative errno. */
static int ofi_errno(ssize_t ret)
{
	long e = (long)-ret;

	if (!ret)
		return 0;
	if (e < 0)
		return -EIO;
	if (e < FI_ERRNO_OFFSET)
		return (int)-e;
	switch (e) {
	case FI_ETRUNC:
		return -EMSGSIZE;
	case FI_ENOKEY:
	case FI_EKEYREJECTED:
		return -EACCES;
	case FI_EOPBADSTATE:
		return -ENOTCONN;
	default:
		return -EIO;
	}
}

/* The error of a failed completion; FI_ECANCELED means the link is gone. */
static int ofi_cq_error(struct ofi_pd *pd, struct fid_cq *cq, const char *what)
{
	struct fi_cq_err_entry e;
	ssize_t r;

	memset(&e, 0, sizeof(e));
	r = OFI_CALL(pd, fi_cq_readerr(cq, &e, 0));
	if (r < 0)
		return r == -FI_EAGAIN ? 0 : ofi_errno(r);
	ibtrs_log_rl(IBTRS_LOG_DEBUG, "ofi: %s completion error: %s (%d)", what,
		     fi_strerror(e.err), e.prov_errno);
	if (e.err == FI_ECANCELED || !e.err)
		return -ECONNRESET;
	return ofi_errno(-(ssize_t)e.err);
}

/*
 * The CM data: one byte of length, the private data without its trailing
 * zeros (the CM limit of verbs is smaller than IBTRS_XPRT_PRIV_LEN), then,
 * when it fits, the sender's struct ofi_cm_sink. Returns the bytes used in
 * @buf, or 0 when the private data does not fit in @max.
 */
static size_t ofi_cm_pack(const void *priv, const struct ofi_cm_sink *sink,
			  uint8_t *buf, size_t max)
{
	const uint8_t *p = priv;
	size_t n = IBTRS_XPRT_PRIV_LEN, len;

	while (n && !p[n - 1])
		n--;
	if (1 + n > max)
		return 0;
	buf[0] = (uint8_t)n;
	memcpy(buf + 1, p, n);
	len = 1 + n;
	if (sink && len + sizeof(*sink) <= max) {
		memcpy(buf + len, sink, sizeof(*sink));
		len += sizeof(*sink);
	}
	return len;
}

/* Take CM data apart; returns true when it carried a sink. */
static bool ofi_cm_unpack(const void *data, size_t len, void *priv,
			  struct ofi_cm_sink *sink)
{
	const uint8_t *d = data;
	size_t n;

	memset(priv, 0, IBTRS_XPRT_PRIV_LEN);
	if (!len)
		return false;
	n = d[0];
	if (n > IBTRS_XPRT_PRIV_LEN || 1 + n > len)
		return false;
	memcpy(priv, d + 1, n);
	if (len < 1 + n + sizeof(*sink))
		return false;
	memcpy(sink, d + 1 + n, sizeof(*sink));
	return true;
}

static size_t ofi_cm_data_size(struct fid *fid)
{
	size_t size = 0, len = sizeof(size);

	if (fi_getopt(fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size, &len))
		return IBTRS_XPRT_PRIV_LEN;
	return size;
}

/*
 * No field a provider hands over is trusted to be set: entries of
 * fi_getinfo() and of connection requests are read through these.
 */

/* The name of @info's provider, "" when the provider left it unset. */
static const char *ofi_prov(const struct fi_info *info)
{
	if (!info || !info->fabric_attr || !info->fabric_attr->prov_name)
		return "";
	return info->fabric_attr->prov_name;
}

/* The name of @info's domain, "" when unset. */
static const char *ofi_domain_name(const struct fi_info *info)
{
	if (!info || !info->domain_attr || !info->domain_attr->name)
		return "";
	return info->domain_attr->name;
}

/*
 * What a provider needs beyond its attributes, found by running it: the
 * fit test cannot see these.
 */
enum {
	OFI_Q_SERIAL = 1 << 0, /* calls on one domain from one thread at a time
				*/
	OFI_Q_NO_TRYWAIT = 1 << 1,  /* fi_trywait() tells nothing: every post
				     * and every read is followed through */
	OFI_Q_FLAT_WAIT = 1 << 2,   /* wait objects nest the domain's progress
				     * epoll and keep their signal set: see
				     * ofi_flat_open() */
	OFI_Q_NO_SHUTDOWN = 1 << 3, /* fi_shutdown() closes a socket that
				     * the endpoint's close closes again:
				     * a failed connection closes its
				     * endpoint instead (ofi_fail()) */
	OFI_Q_PE_SPIN = 1 << 4,	    /* its progress thread spins after each
				     * wake-up: asked not to, unless the
				     * user says otherwise (ofi_fabric()) */
	OFI_Q_POLLS = 1 << 5,	    /* its progress polls while a request is
				     * in flight, which keeps neither
				     * heartbeats nor latency on a loaded
				     * host: refused (ofi_unfit_quirk()) */
};

static const struct {
	const char *name;
	unsigned int quirks;
} ofi_quirk_tab[] = {
	/* 1.17: FI_THREAD_SAFE, yet concurrent fi_cq_read()s and posts on
	 * endpoints of one domain crash it; its fi_trywait() returns 0
	 * without looking at anything (xnet_trywait()), so nothing resets
	 * the signal of a CQ's or EQ's wait object; and each of these
	 * objects nests the domain's progress epoll. */
	{ "net", OFI_Q_SERIAL | OFI_Q_FLAT_WAIT },
	/* 1.17: fi_shutdown() closes the endpoint's CM socket and leaves its
	 * number in the connection handle, which the endpoint's fi_close()
	 * (its CM thread) closes again; a peer's shutdown closes the handle's
	 * socket first and leaves the number in the endpoint, which
	 * fi_shutdown() closes again (sock_ep_cm_shutdown()). Either way
	 * the number, reused meanwhile, is another object's: a loop's epoll
	 * fd closed so stopped every session of that loop. */
	/* Its progress thread (one per domain) polls every endpoint for as
	 * long as a write awaits its acknowledgement, which every RMA write
	 * does (sock_pe_wait_ok()): on a loaded host its sessions miss
	 * heartbeats, connects time out and a demoted path's probes never
	 * look healthy (docs/design.md, section 10). It also spins for
	 * FI_SOCKETS_PE_WAITTIME ms (10) after each wake-up, a heartbeat's
	 * included, which for a run allowed anyway is turned off: with a
	 * few hundred idle connections it never slept. */
	{ "sockets", OFI_Q_NO_SHUTDOWN | OFI_Q_PE_SPIN | OFI_Q_POLLS },
};

static unsigned int ofi_quirks(const char *prov)
{
	size_t i;

	for (i = 0; i < sizeof(ofi_quirk_tab) / sizeof(ofi_quirk_tab[0]); i++)
		if (!strcmp(prov, ofi_quirk_tab[i].name))
			return ofi_quirk_tab[i].quirks;
	return 0;
}

/*
 * fi_fabric() for @info. A provider with OFI_Q_PE_SPIN (sockets) reads
 * its spin time from the environment as its first fabric opens, once for
 * the process: FI_SOCKETS_PE_WAITTIME is set to 0 before, unless the user
 * set it. The only setenv() of the library, at most once a process and
 * before the first such fabric (libfabric has no call to set a provider's
 * parameter); a getenv() of another thread at that very moment is the
 * risk setenv() always has.
 */
static int ofi_fabric(struct fi_info *info, struct fid_fabric **fabric)
{
	static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
	static bool env_done;

	if (ofi_quirks(ofi_prov(info)) & OFI_Q_PE_SPIN) {
		pthread_mutex_lock(&env_lock);
		if (!env_done && setenv("FI_SOCKETS_PE_WAITTIME", "0", 0))
			ibtrs_log(IBTRS_LOG_WARN,
				  "ofi: cannot set FI_SOCKETS_PE_WAITTIME: %s",
				  strerror(errno));
		env_done = true;
		pthread_mutex_unlock(&env_lock);
	}
	return fi_fabric(info->fabric_attr, fabric, NULL);
}

/*
 * The backend's fit test: NULL when @p offers everything the backend
 * needs, else what it lacks.
 */
static const char *ofi_unfit(const struct fi_info *p)
{
	if (!p->fabric_attr || !p->domain_attr || !p->ep_attr || !p->tx_attr ||
	    !p->rx_attr)
		return "fabric, domain, endpoint, transmit and receive attributes";
	if (p->ep_attr->type != FI_EP_MSG)
		return "connected endpoints (FI_EP_MSG)";
	if ((p->caps & (FI_MSG | FI_RMA)) != (FI_MSG | FI_RMA))
		return "messages and RMA (FI_MSG | FI_RMA)";
	if (p->domain_attr->cq_data_size < 4)
		return "32 bits of remote CQ data (cq_data_size >= 4)";
	if (p->domain_attr->mr_mode & FI_MR_ENDPOINT)
		return "registrations per domain (it asks for FI_MR_ENDPOINT)";
	if (!(p->domain_attr->mr_mode & FI_MR_PROV_KEY) &&
	    p->domain_attr->mr_key_size && p->domain_attr->mr_key_size < 4)
		return "keys of 32 bits (mr_key_size >= 4)";
	return NULL;
}

/*
 * What a provider that passes ofi_unfit() lacks all the same, found by
 * running it (ofi_quirk_tab), or NULL. IBTRS_OFI_ALLOW_UNFIT=1 lets such
 * a provider run, for experiments.
 */
static const char *ofi_unfit_quirk(const struct fi_info *p)
{
	const char *allow = getenv("IBTRS_OFI_ALLOW_UNFIT");

	if (!(ofi_quirks(ofi_prov(p)) & OFI_Q_POLLS) ||
	    (allow && !strcmp(allow, "1")))
		return NULL;
	return "a progress engine that sleeps while requests are in flight "
	       "(it polls until each RMA write is acknowledged: heartbeats "
	       "and latency do not hold on a loaded host; use tcp or net, "
	       "or IBTRS_OFI_ALLOW_UNFIT=1 to run it anyway)";
}

static void *ofi_dup_addr(const struct sockaddr *sa, size_t *len)
{
	void *p;

	*len = ibtrs_sockaddr_len(sa);
	if (!*len)
		return NULL;
	p = malloc(*len);
	if (p)
		memcpy(p, sa, *len);
	return p;
}

/**
 * ofi_getinfo() - the provider for a pd, a connect or a listen
 * @prov: provider name to insist on, or NULL for IBTRS_OFI_PROVIDER or the
 *	default choice
 * @src: local address or NULL
 * @dst: remote address or NULL
 * @flags: FI_SOURCE for a listener
 * @out: a copy of the chosen entry, to fi_freeinfo()
 *
 * Return: 0 or a negative errno (-ENODEV when no provider fits).
 */
static int ofi_getinfo(const char *prov, const struct sockaddr *src,
		       const struct sockaddr *dst, uint64_t flags,
		       struct fi_info **out)
{
	struct fi_info *hints, *list = NULL, *p;
	const struct sockaddr *any = dst ? dst : src;
	const char *why = NULL;
	bool named = false;
	int ret;

	hints = fi_allocinfo();
	if (!hints)
		return -ENOMEM;
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA;
	hints->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	if (!prov || !*prov)
		prov = getenv("IBTRS_OFI_PROVIDER");
	if (prov && *prov) {
		named = true;
		hints->fabric_attr->prov_name = strdup(prov);
		if (!hints->fabric_attr->prov_name) {
			ret = -ENOMEM;
			goto free_hints;
		}
	}
	if (any) {
		hints->addr_format = any->sa_family == AF_INET6
					     ? FI_SOCKADDR_IN6
					     : FI_SOCKADDR_IN;
	}
	if (src) {
		hints->src_addr = ofi_dup_addr(src, &hints->src_addrlen);
		if (!hints->src_addr) {
			ret = -EAFNOSUPPORT;
			goto free_hints;
		}
	}
	if (dst) {
		hints->dest_addr = ofi_dup_addr(dst, &hints->dest_addrlen);
		if (!hints->dest_addr) {
			ret = -EAFNOSUPPORT;
			goto free_hints;
		}
	}
	ret = fi_getinfo(OFI_API_VERSION, NULL, NULL, flags, hints, &list);
	if (ret) {
		if (named)
			ibtrs_log(
				IBTRS_LOG_ERR,
				"ofi: provider %s offers no connected endpoint (FI_EP_MSG) with FI_MSG and FI_RMA here: %s",
				prov, fi_strerror(-ret));
		ret = ret == -FI_ENODATA ? -ENODEV : ofi_errno(ret);
		goto free_hints;
	}
	for (p = list; p; p = p->next) {
		const char *lacks = ofi_unfit(p);

		if (!lacks)
			lacks = ofi_unfit_quirk(p);
		if (!lacks)
			break;
		if (!why)
			why = lacks;
	}
	if (!p) {
		if (named)
			ibtrs_log(IBTRS_LOG_ERR,
				  "ofi: provider %s does not fit: it lacks %s",
				  prov, why ? why : "a usable entry");
		ret = -ENODEV;
		goto free_list;
	}
	*out = fi_dupinfo(p);
	ret = *out ? 0 : -ENOMEM;
	/* tcp drops the port of a wildcard source: insist on ours. */
	if (!ret && src) {
		size_t alen;
		void *a = ofi_dup_addr(src, &alen);

		if (!a) {
			fi_freeinfo(*out);
			ret = -ENOMEM;
			goto free_list;
		}
		free((*out)->src_addr);
		(*out)->src_addr = a;
		(*out)->src_addrlen = alen;
		(*out)->addr_format = hints->addr_format;
	}
free_list:
	fi_freeinfo(list);
free_hints:
	fi_freeinfo(hints);
	return ret;
}

int ofi_provider_probe(char *name, size_t len)
{
	struct fi_info *info;
	int ret;

	ret = ofi_getinfo(NULL, NULL, NULL, 0, &info);
	if (ret)
		return ret;
	if (len)
		snprintf(name, len, "%s", ofi_prov(info));
	fi_freeinfo(info);
	return 0;
}

/* A key for a registration when the provider does not issue them. */
static uint64_t ofi_next_key(struct ofi_pd *pd)
{
	uint32_t k;

	do {
		k = atomic_fetch_add(&pd->dom->next_key, 1);
	} while (!k);
	return k;
}

static void ofi_unreg(struct ofi_pd *pd, struct fid_mr *mr);

/**
 * ofi_reg() - register @len bytes at @buf in the pd's domain
 * @pd: the domain
 * @buf: start
 * @len: bytes, at least 1
 * @mr: the registration
 *
 * Return: 0 or a negative errno.
 */
static int ofi_reg(struct ofi_pd *pd, void *buf, size_t len, struct fid_mr **mr)
{
	unsigned int tries = 0;
	int ret;

	do {
		uint64_t key =
			(pd->mr_mode & FI_MR_PROV_KEY) ? 0 : ofi_next_key(pd);

		ret = OFI_CALL(pd,
			       fi_mr_reg(pd->domain, buf, len, OFI_MR_ACCESS, 0,
					 key, 0, mr, NULL));
		/* a key still held by an old registration: take the next */
	} while (ret == -FI_ENOKEY && ++tries < 8);
	if (ret)
		return ofi_errno(ret);
	/* The wire carries 32-bit keys: a provider key must fit. */
	if (fi_mr_key(*mr) > UINT32_MAX) {
		ibtrs_log_rl(
			IBTRS_LOG_ERR,
			"ofi: provider %s issued a key of more than 32 bits",
			ofi_prov(pd->info));
		ofi_unreg(pd, *mr);
		*mr = NULL;
		return -EOVERFLOW;
	}
	return 0;
}

/* Close registration @mr of @pd. */
static void ofi_unreg(struct ofi_pd *pd, struct fid_mr *mr)
{
	OFI_CALL(pd, fi_close(&mr->fid));
}

/* Memory the provider may register (FI_MR_ALLOCATED: backed pages). */
static char *ofi_bounce_alloc(size_t len)
{
	char *p = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);

	if (p)
		memset(p, 0, len);
	return p;
}

static size_t ofi_roundup(size_t len)
{
	size_t n = OFI_BOUNCE_MIN;

	while (n < len && n < (SIZE_MAX >> 1))
		n <<= 1;
	return n < len ? len : n;
}

/* ------------------------------------------------------------------ */
/* protection domains and memory regions                               */

static bool ofi_same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/*
 * OFI_Q_FLAT_WAIT. net (1.17) gives every CQ and EQ with a wait object an
 * epoll of its own holding the object's signal and the domain's progress
 * epoll, where every socket of the domain is. Three of them per
 * connection in the loops made every socket event wake every connection
 * of the process, and the kernel refuses more than 100 epolls nested that
 * way above one file (EINVAL from epoll_ctl() for the 34th connection).
 * Nothing resets the signals either: its fi_trywait() looks at nothing,
 * so once a completion came the fds stayed readable and the loops spun.
 *
 * So on such a provider the fds go into the loops flat: a connection's
 * two CQs share a wait set of kind FI_WAIT_POLLFD, whose fds libfabric
 * hands out one by one; its own signal is the connection's source, reset
 * by fi_wait() with no timeout before the loop sleeps (that also tells
 * whether a CQ holds completions). The domain's progress epoll goes into
 * each loop once (struct ofi_dom_src): when a socket needs progress, a
 * read of a CQ with no endpoint (ofi_dom.pcq) makes one pass, and the
 * completions it finds signal their connections' sets. A connection's EQ
 * has no wait object: after the connect every event of it (a shutdown,
 * an error) comes with the flush of its posted receives, and so with a
 * receive completion.
 */

/* The fds of wait set @ws (FI_WAIT_POLLFD). Return: how many, or a
 * negative errno. */
static int ofi_ws_fds(struct fid_wait *ws, struct pollfd *fds, size_t max)
{
	struct fi_wait_pollfd p = { .nfds = max, .fd = fds };
	int ret = fi_control(&ws->fid, FI_GETWAIT, &p);

	if (ret)
		return ret == -FI_ETOOSMALL || ret == FI_ETOOSMALL
			       ? -ENOBUFS
			       : ofi_errno(ret);
	return p.nfds > max ? -ENOBUFS : (int)p.nfds;
}

/*
 * Open a wait set of kind FI_WAIT_POLLFD on @fabric; *@sig is its own
 * signal fd. libfabric's pollfds apply an fd added (the signal here) at
 * their next wait, and their first entry is an fd of their own: the set
 * waits once, briefly, before its fds are asked for. Nothing is bound to
 * it yet, so the wait calls into no provider.
 */
static int ofi_flat_ws(struct fid_fabric *fabric, struct fid_wait **wsp,
		       int *sig)
{
	struct fi_wait_attr a = { .wait_obj = FI_WAIT_POLLFD };
	struct pollfd fds[4];
	int n, ret;

	ret = fi_wait_open(fabric, &a, wsp);
	if (ret)
		return ofi_errno(ret);
	(void)fi_wait(*wsp, 2);
	n = ofi_ws_fds(*wsp, fds, 4);
	if (n != 2) {
		fi_close(&(*wsp)->fid);
		*wsp = NULL;
		return n < 0 ? n : -ENODATA;
	}
	*sig = fds[1].fd;
	return 0;
}

/*
 * The domain's part of OFI_Q_FLAT_WAIT: a CQ with no endpoint, bound to a
 * wait set of its own, through which libfabric hands out the domain's
 * progress epoll (the fd of the set that is not its signal). The domain is
 * new: nothing else runs in it, no lock is needed.
 */
static int ofi_flat_open(struct ofi_dom *d)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_DATA,
				   .wait_obj = FI_WAIT_SET,
				   .size = 1 };
	struct pollfd fds[4];
	int sig, n, i, ret;

	d->pfd = -1;
	ret = ofi_flat_ws(d->fabric, &d->pws, &sig);
	if (ret)
		return ret;
	attr.wait_set = d->pws;
	ret = fi_cq_open(d->domain, &attr, &d->pcq, NULL);
	if (ret) {
		ret = ofi_errno(ret);
		goto close_ws;
	}
	(void)fi_wait(d->pws, 2);
	n = ofi_ws_fds(d->pws, fds, 4);
	for (i = 1; i < n; i++)
		if (fds[i].fd != sig)
			d->pfd = fds[i].fd;
	if (d->pfd >= 0)
		return 0;
	ret = n < 0 ? n : -ENODATA;
	fi_close(&d->pcq->fid);
	d->pcq = NULL;
close_ws:
	fi_close(&d->pws->fid);
	d->pws = NULL;
	return ret;
}

static void ofi_flat_close(struct ofi_dom *d)
{
	if (d->pcq)
		fi_close(&d->pcq->fid);
	if (d->pws)
		fi_close(&d->pws->fid);
}

/* The domain's progress fd fired in a loop: one progress pass. */
static void ofi_dom_src_event(struct ibtrs_loop_src *src, uint32_t events)
{
	struct ofi_dom_src *s = container_of(src, struct ofi_dom_src, src);
	struct fi_cq_data_entry e;
	struct ofi_dom *d;

	(void)events;
	pthread_mutex_lock(&ofi_dom_lock);
	d = s->refs ? s->dom : NULL;
	pthread_mutex_unlock(&ofi_dom_lock);
	if (!d)
		return; /* deleted in this batch of events */
	ofi_call_enter();
	(void)fi_cq_read(d->pcq, &e, 1);
	ofi_call_leave();
}

/* A connection of @d starts on @loop: the domain's fd is in it. */
static int ofi_dom_src_get(struct ofi_dom *d, struct ibtrs_loop *loop)
{
	struct ofi_dom_src *s, *unused = NULL;
	int ret = 0;

	pthread_mutex_lock(&ofi_dom_lock);
	for (s = ofi_dom_srcs; s; s = s->next) {
		if (s->refs && s->loop == loop && s->dom == d)
			break;
		if (!s->refs && !unused)
			unused = s;
	}
	if (!s) {
		s = unused;
		if (!s) {
			s = calloc(1, sizeof(*s));
			if (!s) {
				ret = -ENOMEM;
				goto unlock;
			}
			s->next = ofi_dom_srcs;
			ofi_dom_srcs = s;
		}
		s->loop = loop;
		s->dom = d;
		s->src.fd = d->pfd;
		s->src.cb = ofi_dom_src_event;
		ret = ibtrs_loop_add(loop, &s->src, EPOLLIN);
		if (ret) {
			s->dom = NULL;
			goto unlock;
		}
	}
	s->refs++;
unlock:
	pthread_mutex_unlock(&ofi_dom_lock);
	return ret;
}

/* A connection of @d on @loop stopped: the last one takes the fd out. */
static void ofi_dom_src_put(struct ofi_dom *d, struct ibtrs_loop *loop)
{
	struct ofi_dom_src *s;

	pthread_mutex_lock(&ofi_dom_lock);
	for (s = ofi_dom_srcs; s; s = s->next)
		if (s->refs && s->loop == loop && s->dom == d)
			break;
	if (s && !--s->refs) {
		ibtrs_loop_del(loop, &s->src);
		s->dom = NULL;
	}
	pthread_mutex_unlock(&ofi_dom_lock);
}

/*
 * The shared domain of the provider and domain @info names, opened on its
 * first pd. Takes @info (kept or freed). Return: 0 or a negative errno.
 */
static int ofi_dom_get(struct fi_info *info, struct ofi_dom **domp)
{
	struct ofi_dom *d;
	uint32_t key0 = 0;
	int ret;

	pthread_mutex_lock(&ofi_dom_lock);
	for (d = ofi_doms; d; d = d->next)
		if (!strcmp(ofi_prov(d->info), ofi_prov(info)) &&
		    ofi_same_str(d->info->fabric_attr->name,
				 info->fabric_attr->name) &&
		    ofi_same_str(d->info->domain_attr->name,
				 info->domain_attr->name))
			break;
	if (d) {
		d->refs++;
		pthread_mutex_unlock(&ofi_dom_lock);
		fi_freeinfo(info);
		*domp = d;
		return 0;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		ret = -ENOMEM;
		goto unlock;
	}
	d->info = info;
	ret = ofi_fabric(info, &d->fabric);
	if (ret) {
		ret = ofi_errno(ret);
		ibtrs_log(IBTRS_LOG_ERR,
			  "ofi: provider %s: cannot open a fabric: %s",
			  ofi_prov(info), strerror(-ret));
		goto free_dom;
	}
	ret = fi_domain(d->fabric, info, &d->domain, NULL);
	if (ret) {
		ret = ofi_errno(ret);
		ibtrs_log(IBTRS_LOG_ERR,
			  "ofi: provider %s: cannot open a domain: %s",
			  ofi_prov(info), strerror(-ret));
		goto close_fabric;
	}
	d->flat = ofi_quirks(ofi_prov(info)) & OFI_Q_FLAT_WAIT;
	if (d->flat) {
		ret = ofi_flat_open(d);
		if (ret) {
			ibtrs_log(
				IBTRS_LOG_ERR,
				"ofi: provider %s: cannot find the domain's progress fd: %s",
				ofi_prov(info), strerror(-ret));
			fi_close(&d->domain->fid);
			goto close_fabric;
		}
	}
	/* Keys start at random, so that no two processes issue the same. */
	ibtrs_random(&key0, sizeof(key0));
	atomic_init(&d->next_key, key0 | 1);
	d->refs = 1;
	d->next = ofi_doms;
	ofi_doms = d;
	pthread_mutex_unlock(&ofi_dom_lock);
	*domp = d;
	return 0;

close_fabric:
	fi_close(&d->fabric->fid);
free_dom:
	free(d);
unlock:
	pthread_mutex_unlock(&ofi_dom_lock);
	fi_freeinfo(info);
	return ret;
}

/* Drop a reference to @d; the last closes it. */
static void ofi_dom_put(struct ofi_dom *d)
{
	struct ofi_dom **pp;

	pthread_mutex_lock(&ofi_dom_lock);
	if (--d->refs) {
		pthread_mutex_unlock(&ofi_dom_lock);
		return;
	}
	for (pp = &ofi_doms; *pp != d; pp = &(*pp)->next)
		;
	*pp = d->next;
	pthread_mutex_unlock(&ofi_dom_lock);
	ofi_flat_close(d);
	fi_close(&d->domain->fid);
	fi_close(&d->fabric->fid);
	fi_freeinfo(d->info);
	free(d);
}

static int ofi_pd_alloc(struct ibtrs_xprt_pd **pdp, unsigned int max_mrs)
{
	struct fi_info *info;
	struct ofi_pd *pd;
	void *p, *table;
	int ret;

	ret = ibtrs_xprt_pd_new(sizeof(*pd), max_mrs, sizeof(*pd->direct), &p,
				&table);
	if (ret)
		return ret;
	pd = p;
	pd->direct = table;
	ret = ofi_getinfo(NULL, NULL, NULL, 0, &info);
	if (ret)
		goto free_direct;
	ret = ofi_dom_get(info, &pd->dom);
	if (ret)
		goto free_direct;
	pd->info = pd->dom->info;
	pd->fabric = pd->dom->fabric;
	pd->domain = pd->dom->domain;
	pd->mr_mode = pd->info->domain_attr->mr_mode;
	pd->max_mrs = max_mrs;
	pthread_rwlock_init(&pd->lock, NULL);
	pd->serial = ofi_quirks(ofi_prov(pd->info)) & OFI_Q_SERIAL;
	pd->trywait = !(ofi_quirks(ofi_prov(pd->info)) & OFI_Q_NO_TRYWAIT);
	pd->flat = pd->dom->flat;
	pd->no_shutdown = ofi_quirks(ofi_prov(pd->info)) & OFI_Q_NO_SHUTDOWN;
	ibtrs_log(IBTRS_LOG_DEBUG, "ofi: pd on %s/%s, mr_mode %#llx",
		  ofi_prov(pd->info), ofi_domain_name(pd->info),
		  (unsigned long long)pd->mr_mode);
	*pdp = (struct ibtrs_xprt_pd *)pd;
	return 0;

free_direct:
	free(pd->direct);
	free(pd);
	return ret;
}

static void ofi_pd_free(struct ibtrs_xprt_pd *xpd)
{
	struct ofi_pd *pd = (struct ofi_pd *)xpd;

	if (!pd)
		return;
	ofi_dom_put(pd->dom);
	pthread_rwlock_destroy(&pd->lock);
	free(pd->direct);
	free(pd);
}

static int ofi_mr_alloc(struct ibtrs_xprt_pd *xpd, unsigned int max_sge,
			struct ibtrs_xprt_mr **mrp)
{
	struct ofi_pd *pd = (struct ofi_pd *)xpd;
	struct ofi_mr *mr;

	if (!max_sge || max_sge > OFI_MAX_SGE)
		return -EINVAL;
	mr = calloc(1, sizeof(*mr) + max_sge * sizeof(struct iovec));
	if (!mr)
		return -ENOMEM;
	mr->pd = pd;
	mr->max_sge = max_sge;
	pthread_rwlock_wrlock(&pd->lock);
	if (pd->nr_mrs == pd->max_mrs) {
		pthread_rwlock_unlock(&pd->lock);
		free(mr);
		return -ENOSPC;
	}
	pd->nr_mrs++;
	pthread_rwlock_unlock(&pd->lock);
	*mrp = &mr->base;
	return 0;
}

static void ofi_direct_del(struct ofi_mr *mr)
{
	struct ofi_pd *pd = mr->pd;
	unsigned int i;

	pthread_rwlock_wrlock(&pd->lock);
	for (i = 0; i < pd->nr_direct; i++) {
		if (pd->direct[i] == mr) {
			pd->direct[i] = pd->direct[--pd->nr_direct];
			break;
		}
	}
	pthread_rwlock_unlock(&pd->lock);
}

static void ofi_mr_unmap(struct ibtrs_xprt_mr *xmr)
{
	struct ofi_mr *mr = to_ofi_mr(xmr);

	if (!mr->fmr)
		return;
	if (mr->direct)
		ofi_direct_del(mr);
	/* Closing the registration kills the key: later writes fail. */
	ofi_unreg(mr->pd, mr->fmr);
	mr->fmr = NULL;
}

/**
 * ofi_mr_map() - map @iov into the slot under a new key
 * @xmr: the slot
 * @iov: the caller's memory
 * @cnt: iovecs
 *
 * A slot of one iovec registers the caller's memory (zero copy: the
 * server's chunk pool); otherwise the slot's bounce buffer is registered
 * and mr_sync() copies what the peer wrote into @iov.
 *
 * Return: 0 or a negative errno.
 */
static int ofi_mr_map(struct ibtrs_xprt_mr *xmr, const struct iovec *iov,
		      unsigned int cnt)
{
	struct ofi_mr *mr = to_ofi_mr(xmr);
	struct ofi_pd *pd = mr->pd;
	struct fid_mr *fmr;
	size_t len = 0;
	uint64_t key;
	unsigned int i;
	bool direct;
	char *buf;
	int ret;

	if (cnt > mr->max_sge)
		return -EINVAL;
	for (i = 0; i < cnt; i++) {
		if (iov[i].iov_len > SIZE_MAX - len)
			return -EINVAL;
		len += iov[i].iov_len;
	}
	ofi_mr_unmap(xmr);
	direct = mr->max_sge == 1 && cnt == 1 && len;
	if (direct) {
		buf = iov[0].iov_base;
	} else {
		if (len > mr->bounce_cap || !mr->bounce) {
			size_t cap = ofi_roundup(len);
			char *b = ofi_bounce_alloc(cap);

			if (!b)
				return -ENOMEM;
			free(mr->bounce);
			mr->bounce = b;
			mr->bounce_cap = cap;
		}
		buf = mr->bounce;
	}
	ret = ofi_reg(pd, buf, len ? len : 1, &fmr);
	if (ret)
		return ret;
	key = fi_mr_key(fmr);
	if (key == FI_KEY_NOTAVAIL || key > UINT32_MAX) {
		ibtrs_log_rl(IBTRS_LOG_ERR,
			     "ofi: provider key %#llx does not fit 32 bits",
			     (unsigned long long)key);
		ofi_unreg(pd, fmr);
		return -EOVERFLOW;
	}
	mr->fmr = fmr;
	mr->direct = direct;
	mr->dbase = buf;
	mr->len = len;
	mr->cnt = cnt;
	memcpy(mr->iov, iov, cnt * sizeof(*iov));
	mr->base.key = (uint32_t)key;
	mr->base.addr = (pd->mr_mode & FI_MR_VIRT_ADDR) ? (uintptr_t)buf : 0;
	if (direct) {
		pthread_rwlock_wrlock(&pd->lock);
		pd->direct[pd->nr_direct++] = mr;
		pthread_rwlock_unlock(&pd->lock);
		OFI_INC(mr_direct);
	} else {
		OFI_INC(mr_bounce);
	}
	return 0;
}

/* Copy what the peer wrote into the bounce buffer out to the iovecs. */
static void ofi_mr_sync(struct ibtrs_xprt_mr *xmr)
{
	struct ofi_mr *mr = to_ofi_mr(xmr);
	size_t off = 0;
	unsigned int i;

	if (!mr->fmr || mr->direct)
		return;
	for (i = 0; i < mr->cnt; i++) {
		memcpy(mr->iov[i].iov_base, mr->bounce + off,
		       mr->iov[i].iov_len);
		off += mr->iov[i].iov_len;
	}
	OFI_INC(mr_sync_copies);
}

static void ofi_mr_free(struct ibtrs_xprt_mr *xmr)
{
	struct ofi_mr *mr;

	if (!xmr)
		return;
	mr = to_ofi_mr(xmr);
	ofi_mr_unmap(xmr);
	pthread_rwlock_wrlock(&mr->pd->lock);
	mr->pd->nr_mrs--;
	pthread_rwlock_unlock(&mr->pd->lock);
	free(mr->bounce);
	free(mr);
}

/* The descriptor of a directly registered region holding @iov; under the
 * pd lock for reading. */
static bool ofi_direct_desc(struct ofi_pd *pd, const struct iovec *iov,
			    void **desc)
{
	const char *p = iov->iov_base;
	unsigned int i;

	for (i = 0; i < pd->nr_direct; i++) {
		struct ofi_mr *mr = pd->direct[i];

		if (p >= mr->dbase && iov->iov_len <= mr->len &&
		    (size_t)(p - mr->dbase) <= mr->len - iov->iov_len) {
			*desc = fi_mr_desc(mr->fmr);
			return true;
		}
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* connections: setup                                                   */

static void ofi_kick(struct ofi_con *c)
{
	uint64_t one = 1;

	if (write(c->kick_src.fd, &one, sizeof(one)) < 0)
		return; /* a full counter still wakes the loop */
}

/* Hand bounce receive @i to the provider. */
static int ofi_rxb_post(struct ofi_con *c, unsigned int i, size_t len,
			void *ctx)
{
	struct iovec iov = { .iov_base = c->rxbuf + (size_t)i * OFI_RX_BUF_SIZE,
			     .iov_len = len };
	struct fi_msg msg = {
		.msg_iov = &iov,
		.desc = &c->rxdesc,
		.iov_count = 1,
		.context = ctx,
	};

	if (!c->ep) /* closed by ofi_fail() */
		return -FI_ENOTCONN;
	return (int)OFI_CALL(c->pd, fi_recvmsg(c->ep, &msg, 0));
}

static void ofi_con_free(struct ofi_con *c)
{
	unsigned int i;

	if (c->ep)
		OFI_CALL(c->pd, fi_close(&c->ep->fid));
	if (c->txcq)
		OFI_CALL(c->pd, fi_close(&c->txcq->fid));
	if (c->rxcq)
		OFI_CALL(c->pd, fi_close(&c->rxcq->fid));
	if (c->eq)
		OFI_CALL(c->pd, fi_close(&c->eq->fid));
	if (c->ws)
		fi_close(&c->ws->fid);
	if (c->kick_src.fd >= 0)
		close(c->kick_src.fd);
	if (c->rxmr)
		ofi_unreg(c->pd, c->rxmr);
	free(c->rxbuf);
	for (i = 0; c->wrs && i < c->attr.max_send_wr; i++) {
		if (c->wrs[i].bounce_mr)
			ofi_unreg(c->pd, c->wrs[i].bounce_mr);
		free(c->wrs[i].bounce);
	}
	free(c->wrs);
	free(c->rq);
	pthread_mutex_destroy(&c->sq_lock);
	pthread_cond_destroy(&c->sq_cond);
	free(c);
}

/* Open the endpoint; sizes first as the core asks, then as the provider
 * offers. */
static int ofi_ep_open(struct ofi_con *c, struct fi_info *info)
{
	size_t tx = info->tx_attr->size, rx = info->rx_attr->size;
	int ret;

	if (info->tx_attr->size < c->attr.max_send_wr)
		info->tx_attr->size = c->attr.max_send_wr;
	if (c->rx_cq_data && info->rx_attr->size < c->attr.max_recv_wr)
		info->rx_attr->size = c->attr.max_recv_wr;
	ret = fi_endpoint(c->pd->domain, info, &c->ep, c);
	if (ret) {
		info->tx_attr->size = tx;
		info->rx_attr->size = rx;
		ret = fi_endpoint(c->pd->domain, info, &c->ep, c);
	}
	return ret;
}

/**
 * ofi_con_open() - a connection's endpoint, queues and buffers
 * @pd: the pd
 * @info: the provider entry (owned by the connection on success)
 * @attr: the core's sizes
 * @cp: the connection
 *
 * Return: 0 or a negative errno.
 */
static int ofi_con_open(struct ofi_pd *pd, struct fi_info *info,
			const struct ibtrs_xprt_con_attr *attr,
			struct ofi_con **cp)
{
	struct fi_eq_attr eq_attr = { .size = 16, .wait_obj = FI_WAIT_FD };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA,
				      .wait_obj = FI_WAIT_FD };
	struct ofi_con *c;
	unsigned int i;
	int ret;

	if (!attr->max_send_wr || !attr->max_recv_wr || !attr->max_send_sge ||
	    attr->max_send_sge > OFI_MAX_SGE)
		return -EINVAL;
	/* A connection request may name no provider: it came from ours. */
	if (*ofi_prov(info) && strcmp(ofi_prov(info), ofi_prov(pd->info)))
		return -EXDEV;
	if (!info->ep_attr || !info->tx_attr || !info->rx_attr) {
		ibtrs_log(
			IBTRS_LOG_ERR,
			"ofi: provider %s: a connection's entry lacks its endpoint, transmit or receive attributes",
			ofi_prov(pd->info));
		return -EPROTO;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->sq_lock, NULL);
	pthread_cond_init(&c->sq_cond, NULL);
	c->kick_src.fd = -1;
	c->pd = pd;
	c->attr = *attr;
	c->rx_cq_data = (info->mode | info->rx_attr->mode) & FI_RX_CQ_DATA;
	c->iov_limit = info->tx_attr->iov_limit;
	if (c->iov_limit > OFI_WR_IOV)
		c->iov_limit = OFI_WR_IOV;
	if (!c->iov_limit)
		c->iov_limit = 1;
	c->max_msg = info->ep_attr->max_msg_size;
	if (!c->max_msg) /* not said: the core's own limits apply */
		c->max_msg = SIZE_MAX;

	ret = -ENOMEM;
	c->wrs = calloc(attr->max_send_wr, sizeof(*c->wrs));
	c->rq = calloc(attr->max_recv_wr, sizeof(*c->rq));
	c->rxbuf = ofi_bounce_alloc((size_t)OFI_RX_BUFS * OFI_RX_BUF_SIZE);
	if (!c->wrs || !c->rq || !c->rxbuf)
		goto fail;
	for (i = attr->max_send_wr; i--;) {
		c->wrs[i].next = c->wr_free;
		c->wr_free = &c->wrs[i];
	}
	ret = ofi_reg(pd, c->rxbuf, (size_t)OFI_RX_BUFS * OFI_RX_BUF_SIZE,
		      &c->rxmr);
	if (ret)
		goto fail;
	c->rxdesc = fi_mr_desc(c->rxmr);
	c->sink.key = (uint32_t)fi_mr_key(c->rxmr);
	c->sink.addr = (pd->mr_mode & FI_MR_VIRT_ADDR) ? (uintptr_t)c->rxbuf
						       : 0;
	c->kick_src.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->kick_src.fd < 0) {
		ret = -errno;
		goto fail;
	}

	if (pd->flat) {
		/* The EQ is read in every round; see ofi_flat_open(). */
		eq_attr.wait_obj = FI_WAIT_NONE;
		ret = ofi_flat_ws(pd->fabric, &c->ws, &c->ws_fd);
		if (ret)
			goto fail;
		cq_attr.wait_obj = FI_WAIT_SET;
		cq_attr.wait_set = c->ws;
	}
	ret = fi_eq_open(pd->fabric, &eq_attr, &c->eq, NULL);
	if (ret)
		goto fail_fi;
	ret = ofi_ep_open(c, info);
	if (ret)
		goto fail_fi;
	c->tx_max = info->tx_attr->size ? info->tx_attr->size : 1;
	/* Testing knob: fewer operations in flight exercise the backlog. */
	if (getenv("IBTRS_OFI_TX_DEPTH")) {
		size_t d = strtoul(getenv("IBTRS_OFI_TX_DEPTH"), NULL, 0);

		if (d && d < c->tx_max)
			c->tx_max = d;
	}
	cq_attr.size = c->tx_max;
	ret = fi_cq_open(pd->domain, &cq_attr, &c->txcq, NULL);
	if (ret)
		goto fail_fi;
	cq_attr.size = (size_t)attr->max_recv_wr + OFI_RX_BUFS;
	ret = fi_cq_open(pd->domain, &cq_attr, &c->rxcq, NULL);
	if (ret)
		goto fail_fi;
	ret = fi_ep_bind(c->ep, &c->eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(c->ep, &c->txcq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(c->ep, &c->rxcq->fid, FI_RECV);
	if (!ret)
		ret = fi_enable(c->ep);
	if (ret)
		goto fail_fi;
	c->cm_data_size = ofi_cm_data_size(&c->ep->fid);

	/* Without FI_RX_CQ_DATA only the peer's SENDs take provider
	 * receives: keep every bounce receive posted for them. */
	if (!c->rx_cq_data) {
		for (i = 0; i < OFI_RX_BUFS; i++) {
			c->rxb[i].busy = true;
			ret = ofi_rxb_post(c, i, OFI_RX_BUF_SIZE,
					   &c->rxb[i].ctx);
			if (ret)
				goto fail_fi;
		}
	}
	c->info = info;
	*cp = c;
	return 0;

fail_fi:
	ret = ofi_errno(ret);
fail:
	ofi_con_free(c);
	return ret;
}

static int ofi_connect(struct ibtrs_xprt_pd *xpd, const struct sockaddr *src,
		       const struct sockaddr *dst,
		       const struct ibtrs_xprt_con_attr *attr, const void *priv,
		       void *rsp, unsigned int timeout_ms,
		       struct ibtrs_xprt_con **conp)
{
	struct ofi_pd *pd = (struct ofi_pd *)xpd;
	uint64_t deadline = ibtrs_now_ns() + (uint64_t)timeout_ms * 1000000;
	uint8_t cm[OFI_EQ_BUF];
	union {
		struct fi_eq_cm_entry cm;
		uint8_t raw[OFI_EQ_BUF];
	} ev;
	struct fi_info *info;
	struct ofi_con *c;
	size_t plen;
	int ret, fd = -1;

	memset(rsp, 0, IBTRS_XPRT_PRIV_LEN);
	if (ibtrs_xprt_tls_on(attr->tls)) {
		ibtrs_log(IBTRS_LOG_ERR, "ofi: TLS is for the tcp backend; "
					 "authentication still applies");
		return -EOPNOTSUPP;
	}
	ret = ofi_getinfo(ofi_prov(pd->info), src, dst, 0, &info);
	if (ret)
		return ret;
	ret = ofi_con_open(pd, info, attr, &c);
	if (ret) {
		fi_freeinfo(info);
		return ret;
	}
	plen = ofi_cm_pack(priv, &c->sink, cm,
			   c->cm_data_size < sizeof(cm) ? c->cm_data_size
							: sizeof(cm));
	if (!plen) {
		ibtrs_log(
			IBTRS_LOG_ERR,
			"ofi: private data does not fit the provider's %zu bytes",
			c->cm_data_size);
		ret = -EMSGSIZE;
		goto fail;
	}
	if (pd->flat)
		fd = pd->dom->pfd; /* the EQ has no wait object */
	else if (fi_control(&c->eq->fid, FI_GETWAIT, &fd))
		fd = -1;
	ret = OFI_CALL(pd, fi_connect(c->ep, info->dest_addr, cm, plen));
	if (ret) {
		ret = ofi_errno(ret);
		goto fail;
	}
	for (;;) {
		uint32_t event;
		ssize_t n = OFI_CALL(pd, fi_eq_read(c->eq, &event, &ev,
						    sizeof(ev), 0));
		uint64_t now;

		if (n >= (ssize_t)sizeof(ev.cm) && event == FI_CONNECTED) {
			c->has_peer_sink = ofi_cm_unpack(
				ev.cm.data, (size_t)n - sizeof(ev.cm), rsp,
				&c->peer_sink);
			break;
		}
		if (n >= 0 && event == FI_SHUTDOWN) {
			ret = -ECONNRESET;
			goto fail;
		}
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry e;
			uint8_t data[OFI_EQ_BUF];

			memset(&e, 0, sizeof(e));
			e.err_data = data;
			e.err_data_size = sizeof(data);
			if (OFI_CALL(pd, fi_eq_readerr(c->eq, &e, 0)) < 0) {
				ret = -EIO;
				goto fail;
			}
			if (e.err == FI_ECONNREFUSED) {
				struct ofi_cm_sink dummy;

				/* The provider may point at data of its own. */
				if (e.err_data && e.err_data_size &&
				    e.err_data_size <= sizeof(data))
					ofi_cm_unpack(e.err_data,
						      e.err_data_size, rsp,
						      &dummy);
				ret = -ECONNREFUSED;
			} else {
				ret = e.err ? ofi_errno(-(ssize_t)e.err) : -EIO;
			}
			goto fail;
		}
		if (n < 0 && n != -FI_EAGAIN) {
			ret = ofi_errno(n);
			goto fail;
		}
		now = ibtrs_now_ns();
		if (now >= deadline) {
			ret = -ETIMEDOUT;
			goto fail;
		}
		if (n == -FI_EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			uint64_t left = (deadline - now) / 1000000 + 1;

			/* Progress is driven by fi_eq_read(): come back
			 * soon even when the fd does not fire. */
			if (fd < 0 || poll(&p, 1, left < 5 ? (int)left : 5) < 0)
				usleep(1000);
		}
	}
	pthread_mutex_lock(&c->sq_lock);
	c->connected = true;
	pthread_mutex_unlock(&c->sq_lock);
	*conp = &c->base;
	return 0;

fail:
	c->info = NULL;
	ofi_con_free(c);
	fi_freeinfo(info);
	return ret;
}

/* ------------------------------------------------------------------ */
/* send side                                                            */

/* Hand @wr to the provider; under sq_lock. */
static ssize_t ofi_wr_issue(struct ofi_con *c, struct ofi_wr *wr)
{
	ssize_t ret;

	if (wr->write) {
		struct fi_rma_iov rma = {
			.addr = wr->raddr,
			.len = wr->len,
			.key = wr->rkey,
		};
		struct fi_msg_rma msg = {
			.msg_iov = wr->iov,
			.desc = wr->desc,
			.iov_count = wr->cnt,
			.rma_iov = &rma,
			.rma_iov_count = 1,
			.context = &wr->ctx,
			.data = wr->imm,
		};
		bool imm = wr->flags & IBTRS_XPRT_IMM;

		/* No bytes: aim at the peer's sink, for providers that check
		 * the key of empty writes too. */
		if (!wr->len && c->has_peer_sink) {
			rma.addr = c->peer_sink.addr;
			rma.key = c->peer_sink.key;
		}

		ret = OFI_CALL(
			c->pd,
			fi_writemsg(c->ep, &msg,
				    FI_COMPLETION |
					    (imm ? FI_REMOTE_CQ_DATA : 0)));
		if (!ret) {
			if (imm)
				OFI_INC(writes_imm);
			else
				OFI_INC(writes);
		}
	} else {
		struct fi_msg msg = {
			.msg_iov = wr->iov,
			.desc = wr->desc,
			.iov_count = wr->cnt,
			.context = &wr->ctx,
		};

		ret = OFI_CALL(c->pd, fi_sendmsg(c->ep, &msg, FI_COMPLETION));
		if (!ret)
			OFI_INC(sends);
	}
	if (!ret)
		c->tx_inflight++;
	return ret;
}

static void ofi_backlog_add(struct ofi_con *c, struct ofi_wr *wr)
{
	wr->busy = true;
	wr->next = NULL;
	if (c->bl_tail)
		c->bl_tail->next = wr;
	else
		c->bl_head = wr;
	c->bl_tail = wr;
	OFI_INC(backlog);
}

/* The work request whose context @ctx is, or NULL if @ctx is none of @c's. */
static struct ofi_wr *ofi_wr_of(struct ofi_con *c, void *ctx)
{
	struct ofi_wr *wr = ctx;

	if (!ctx || (char *)ctx < (char *)c->wrs ||
	    (char *)ctx >= (char *)(c->wrs + c->attr.max_send_wr) ||
	    ((char *)ctx - (char *)c->wrs) % sizeof(*c->wrs) || !wr->busy)
		return NULL;
	return wr;
}

/* Issue held back work requests while the provider takes them; under
 * sq_lock. */
static void ofi_backlog_drain(struct ofi_con *c)
{
	while (c->bl_head && c->connected && !c->dead &&
	       c->tx_inflight < c->tx_max) {
		struct ofi_wr *wr = c->bl_head;
		ssize_t ret = ofi_wr_issue(c, wr);

		if (ret == -FI_EAGAIN)
			break;
		c->bl_head = wr->next;
		if (!c->bl_head)
			c->bl_tail = NULL;
		if (ret) {
			wr->busy = false;
			wr->next = c->wr_free;
			c->wr_free = wr;
			if (!c->tx_err)
				c->tx_err = ofi_errno(ret);
			break;
		}
	}
}

/*
 * Complete every work request of a dead connection that never completed,
 * held back or with the provider, with -ECANCELED, as verbs flushes a QP
 * in error. Nobody posts or reaps any more.
 */
static void ofi_flush_errors(struct ofi_con *c)
{
	struct ibtrs_wc wc = { .status = -ECANCELED };
	unsigned int i;

	pthread_mutex_lock(&c->sq_lock);
	c->bl_head = c->bl_tail = NULL;
	pthread_mutex_unlock(&c->sq_lock);
	for (i = 0; c->wrs && i < c->attr.max_send_wr; i++) {
		struct ofi_wr *wr = &c->wrs[i];
		bool busy;

		pthread_mutex_lock(&c->sq_lock);
		busy = wr->busy;
		wr->busy = false;
		pthread_mutex_unlock(&c->sq_lock);
		if (!busy)
			continue;
		if (wr->flags & IBTRS_XPRT_SIGNALED) {
			wc.wr_id = wr->wr_id;
			wc.opcode = wr->write ? IBTRS_WC_WRITE : IBTRS_WC_SEND;
			c->base.handler->wc(&c->base, &wc);
		}
		pthread_mutex_lock(&c->sq_lock);
		wr->next = c->wr_free;
		c->wr_free = wr;
		pthread_mutex_unlock(&c->sq_lock);
	}
}

/**
 * ofi_tx_progress() - reap transmit completions and refill the provider
 * @c: the connection
 *
 * Any thread. Drives the provider's progress (manual in practice), reports
 * signalled completions, recycles work requests and issues the backlog.
 * A completion error is left in tx_err for the loop thread to report.
 */
static void ofi_tx_progress(struct ofi_con *c)
{
	struct fi_cq_data_entry ent[OFI_CQ_BATCH];
	struct ibtrs_wc wcs[OFI_CQ_BATCH];
	bool kick = false;

	pthread_mutex_lock(&c->sq_lock);
	if (c->dead || c->tx_polling) {
		pthread_mutex_unlock(&c->sq_lock);
		return;
	}
	c->tx_polling = true;
	c->tx_poller = pthread_self();
	pthread_mutex_unlock(&c->sq_lock);

	for (;;) {
		ssize_t n = OFI_CALL(c->pd,
				     fi_cq_read(c->txcq, ent, OFI_CQ_BATCH)),
			i, nwc = 0;
		int err = 0;

		if (n == -FI_EAGAIN) {
			n = 0;
		} else if (n == -FI_EAVAIL) {
			err = ofi_cq_error(c->pd, c->txcq, "send");
			n = 0;
		} else if (n < 0) {
			err = ofi_errno(n);
			n = 0;
		}
		/*
		 * The work requests go back before their completions are
		 * reported: a completion may let a request complete, and its
		 * caller post again at once, on this thread or another.
		 */
		pthread_mutex_lock(&c->sq_lock);
		for (i = 0; i < n; i++) {
			struct ofi_wr *wr = ofi_wr_of(c, ent[i].op_context);

			if (!wr) {
				ibtrs_log_rl(
					IBTRS_LOG_ERR,
					"ofi: provider %s: a send completion names no work request of the connection",
					ofi_prov(c->info));
				if (!err)
					err = -EPROTO;
				continue;
			}
			if (wr->flags & IBTRS_XPRT_SIGNALED)
				wcs[nwc++] = (struct ibtrs_wc){
					.wr_id = wr->wr_id,
					.opcode = wr->write ? IBTRS_WC_WRITE
							    : IBTRS_WC_SEND,
				};
			wr->busy = false;
			wr->next = c->wr_free;
			c->wr_free = wr;
			c->tx_inflight--;
		}
		if (err && !c->tx_err)
			c->tx_err = err;
		ofi_backlog_drain(c);
		if (c->tx_err)
			kick = true;
		pthread_mutex_unlock(&c->sq_lock);
		for (i = 0; i < nwc; i++)
			c->base.handler->wc(&c->base, &wcs[i]);
		if (err || n < OFI_CQ_BATCH)
			break;
	}

	pthread_mutex_lock(&c->sq_lock);
	c->tx_polling = false;
	pthread_cond_broadcast(&c->sq_cond);
	pthread_mutex_unlock(&c->sq_lock);
	if (kick)
		ofi_kick(c);
}

/**
 * ofi_wr_prepare() - point @wr at registered memory holding @iov
 * @c: the connection
 * @wr: the work request, owned by the caller
 * @iov: the data
 * @cnt: iovecs
 *
 * Zero copy when every iovec lies in a directly registered region and the
 * provider takes that many; otherwise a copy into the bounce buffer of the
 * work request (grown and registered on first need only).
 *
 * Return: 0 or a negative errno.
 */
static int ofi_wr_prepare(struct ofi_con *c, struct ofi_wr *wr,
			  const struct iovec *iov, unsigned int cnt)
{
	struct ofi_pd *pd = c->pd;
	unsigned int i;
	size_t off = 0;

	wr->cnt = 0;
	if (!wr->len)
		return 0;
	if (cnt <= c->iov_limit) {
		pthread_rwlock_rdlock(&pd->lock);
		for (i = 0; i < cnt; i++)
			if (!ofi_direct_desc(pd, &iov[i], &wr->desc[i]))
				break;
		pthread_rwlock_unlock(&pd->lock);
		if (i == cnt) {
			memcpy(wr->iov, iov, cnt * sizeof(*iov));
			wr->cnt = cnt;
			OFI_INC(tx_direct);
			return 0;
		}
	}
	if (wr->len > wr->bounce_cap) {
		size_t cap = ofi_roundup(wr->len);
		char *b = ofi_bounce_alloc(cap);
		struct fid_mr *mr;
		int ret;

		if (!b)
			return -ENOMEM;
		ret = ofi_reg(pd, b, cap, &mr);
		if (ret) {
			free(b);
			return ret;
		}
		if (wr->bounce_mr)
			ofi_unreg(pd, wr->bounce_mr);
		free(wr->bounce);
		wr->bounce = b;
		wr->bounce_cap = cap;
		wr->bounce_mr = mr;
	}
	for (i = 0; i < cnt; i++) {
		memcpy(wr->bounce + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	wr->iov[0].iov_base = wr->bounce;
	wr->iov[0].iov_len = wr->len;
	wr->desc[0] = fi_mr_desc(wr->bounce_mr);
	wr->cnt = 1;
	OFI_INC(tx_bounce);
	return 0;
}

static int ofi_post(struct ofi_con *c, const struct iovec *iov,
		    unsigned int cnt, const struct ofi_wr *tmpl)
{
	struct ofi_wr *wr;
	size_t len = 0;
	unsigned int i;
	bool in_round;
	ssize_t r;
	int ret = 0;

	if (cnt > c->attr.max_send_sge)
		return -EINVAL;
	for (i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	if (len > c->max_msg || len > UINT32_MAX)
		return -EMSGSIZE;

	pthread_mutex_lock(&c->sq_lock);
	if (c->dead) {
		pthread_mutex_unlock(&c->sq_lock);
		return -ENOTCONN;
	}
	wr = c->wr_free;
	if (!wr && c->tx_inflight) {
		/* Completions not yet reaped hold the work requests. */
		pthread_mutex_unlock(&c->sq_lock);
		ofi_tx_progress(c);
		pthread_mutex_lock(&c->sq_lock);
		wr = c->dead ? NULL : c->wr_free;
	}
	if (!wr) {
		pthread_mutex_unlock(&c->sq_lock);
		return c->dead ? -ENOTCONN : -ENOMEM;
	}
	c->wr_free = wr->next;
	pthread_mutex_unlock(&c->sq_lock);

	wr->wr_id = tmpl->wr_id;
	wr->flags = tmpl->flags;
	wr->write = tmpl->write;
	wr->imm = tmpl->imm;
	wr->raddr = tmpl->raddr;
	wr->rkey = tmpl->rkey;
	wr->len = len;
	ret = ofi_wr_prepare(c, wr, iov, cnt);

	pthread_mutex_lock(&c->sq_lock);
	if (!ret && c->dead)
		ret = -ENOTCONN;
	if (!ret) {
		if (c->bl_head || !c->connected ||
		    c->tx_inflight >= c->tx_max) {
			ofi_backlog_add(c, wr);
			wr = NULL;
		} else {
			r = ofi_wr_issue(c, wr);
			if (r == -FI_EAGAIN) {
				ofi_backlog_add(c, wr);
				r = 0;
			}
			if (!r) {
				wr->busy = true;
				wr = NULL;
			} else
				ret = ofi_errno(r);
		}
	}
	if (wr) {
		wr->next = c->wr_free;
		c->wr_free = wr;
	}
	in_round = c->started && ibtrs_loop_on_thread(c->loop) && c->in_round &&
		   c->tx_inflight < OFI_DEFER_MAX && c->pd->trywait &&
		   len <= OFI_DEFER_LEN;
	pthread_mutex_unlock(&c->sq_lock);

	/*
	 * Progress is manual: move what was just queued, unless the loop
	 * thread posts from a handler of this connection's round, which
	 * reads the transmit queue next (ofi_con_progress()), and fewer than
	 * OFI_DEFER_MAX completions wait to be reaped: a long receive batch
	 * must not hold every work request. A provider whose fi_trywait()
	 * tells nothing gets every post followed through, and so does a
	 * large send, whose bytes move only as the provider progresses: the
	 * read it costs is small next to them.
	 */
	if (!ret && !in_round)
		ofi_tx_progress(c);
	return ret;
}

static int ofi_post_send(struct ibtrs_xprt_con *xcon, const struct iovec *iov,
			 unsigned int cnt, uint64_t wr_id, unsigned int flags)
{
	struct ofi_wr t = { .wr_id = wr_id,
			    .flags = flags & IBTRS_XPRT_SIGNALED };

	return ofi_post(to_ofi_con(xcon), iov, cnt, &t);
}

static int ofi_post_write(struct ibtrs_xprt_con *xcon, const struct iovec *iov,
			  unsigned int cnt, uint64_t raddr, uint32_t rkey,
			  uint32_t imm, uint64_t wr_id, unsigned int flags)
{
	struct ofi_wr t = {
		.wr_id = wr_id,
		.flags = flags,
		.write = true,
		.imm = imm,
		.raddr = raddr,
		.rkey = rkey,
	};

	return ofi_post(to_ofi_con(xcon), iov, cnt, &t);
}

/* ------------------------------------------------------------------ */
/* receive side                                                         */

static int ofi_post_recv(struct ibtrs_xprt_con *xcon, void *buf, uint32_t len,
			 uint64_t wr_id)
{
	struct ofi_con *c = to_ofi_con(xcon);
	struct ofi_recv *r;
	unsigned int i;

	if (c->failed)
		return -ENOTCONN;
	if (c->rq_cnt == c->attr.max_recv_wr)
		return -ENOMEM;
	if (len > OFI_RX_BUF_SIZE)
		return -EINVAL;
	r = &c->rq[(c->rq_head + c->rq_cnt) % c->attr.max_recv_wr];
	r->buf = buf;
	r->len = len;
	r->wr_id = wr_id;
	r->rxb = -1;
	if (c->rx_cq_data) {
		/* Every immediate consumes a provider receive: post it. */
		struct fi_msg msg = { .context = &r->ctx };
		struct iovec iov;
		ssize_t ret;

		if (len) {
			for (i = 0; i < OFI_RX_BUFS; i++)
				if (!c->rxb[i].busy)
					break;
			if (i == OFI_RX_BUFS)
				return -ENOMEM;
			c->rxb[i].busy = true;
			r->rxb = (int)i;
			iov.iov_base = c->rxbuf + (size_t)i * OFI_RX_BUF_SIZE;
			iov.iov_len = len;
			msg.msg_iov = &iov;
			msg.desc = &c->rxdesc;
			msg.iov_count = 1;
		}
		ret = OFI_CALL(c->pd, fi_recvmsg(c->ep, &msg, 0));
		if (ret) {
			if (r->rxb >= 0)
				c->rxb[r->rxb].busy = false;
			return ofi_errno(ret);
		}
	}
	c->rq_cnt++;
	return 0;
}

/* Take the oldest posted receive. */
static struct ofi_recv *ofi_rq_pop(struct ofi_con *c)
{
	struct ofi_recv *r = &c->rq[c->rq_head];

	c->rq_head = (c->rq_head + 1) % c->attr.max_recv_wr;
	c->rq_cnt--;
	if (r->rxb >= 0)
		c->rxb[r->rxb].busy = false;
	return r;
}

static bool ofi_is_rxb(struct ofi_con *c, void *ctx)
{
	return (char *)ctx >= (char *)c->rxb &&
	       (char *)ctx < (char *)(c->rxb + OFI_RX_BUFS);
}

/* One receive completion: an immediate or the peer's SEND. */
static int ofi_rx_one(struct ofi_con *c, const struct fi_cq_data_entry *e)
{
	struct ibtrs_wc wc = { .byte_len = (uint32_t)e->len };
	struct ofi_recv *r;
	unsigned int rxb = OFI_RX_BUFS;

	if (!c->rq_cnt) {
		ibtrs_log_rl(IBTRS_LOG_ERR, "ofi: %s with no receive posted",
			     (e->flags & FI_REMOTE_CQ_DATA) ? "immediate"
							    : "SEND");
		return -EPROTO;
	}
	r = &c->rq[c->rq_head];
	if (c->rx_cq_data && e->op_context != &r->ctx) {
		ibtrs_log_rl(IBTRS_LOG_ERR,
			     "ofi: receive completed out of order");
		return -EPROTO;
	}
	if (!c->rx_cq_data && ofi_is_rxb(c, e->op_context))
		rxb = (unsigned int)((struct ofi_rxb *)e->op_context - c->rxb);
	else if (r->rxb >= 0)
		rxb = (unsigned int)r->rxb;

	if (e->flags & FI_REMOTE_CQ_DATA) {
		/* Only the low 32 bits: verbs carries no more. */
		wc.opcode = IBTRS_WC_RECV_IMM;
		wc.imm = (uint32_t)e->data;
		OFI_INC(recv_imm);
	} else {
		if (e->len > r->len || (e->len && rxb == OFI_RX_BUFS)) {
			ibtrs_log_rl(
				IBTRS_LOG_ERR,
				"ofi: SEND of %zu bytes into a %u-byte receive",
				e->len, r->len);
			return -EPROTO;
		}
		if (e->len)
			memcpy(r->buf, c->rxbuf + (size_t)rxb * OFI_RX_BUF_SIZE,
			       e->len);
		wc.opcode = IBTRS_WC_RECV;
		OFI_INC(recv_send);
	}
	wc.wr_id = r->wr_id;
	ofi_rq_pop(c);
	/* Without FI_RX_CQ_DATA the bounce receive goes back at once. */
	if (!c->rx_cq_data && rxb < OFI_RX_BUFS) {
		ssize_t ret =
			ofi_rxb_post(c, rxb, OFI_RX_BUF_SIZE, &c->rxb[rxb].ctx);

		if (ret)
			return ofi_errno(ret);
	}
	c->base.handler->wc(&c->base, &wc);
	return 0;
}

/* Receive completions, loop thread; 1 when the budget ran out. */
static int ofi_rx_poll(struct ofi_con *c)
{
	struct fi_cq_data_entry ent[OFI_CQ_BATCH];
	unsigned int done = 0;

	while (!c->failed && done < OFI_RX_BUDGET) {
		ssize_t n = OFI_CALL(c->pd,
				     fi_cq_read(c->rxcq, ent, OFI_CQ_BATCH)),
			i;

		if (n == -FI_EAGAIN)
			return 0;
		if (n == -FI_EAVAIL)
			return ofi_cq_error(c->pd, c->rxcq, "receive");
		if (n < 0)
			return ofi_errno(n);
		for (i = 0; i < n && !c->failed; i++) {
			int ret = ofi_rx_one(c, &ent[i]);

			if (ret)
				return ret;
		}
		done += (unsigned int)n;
	}
	return c->failed ? 0 : 1;
}

/* Connection events, loop thread. */
static int ofi_eq_poll(struct ofi_con *c)
{
	union {
		struct fi_eq_cm_entry cm;
		uint8_t raw[OFI_EQ_BUF];
	} ev;

	for (;;) {
		uint32_t event;
		ssize_t n = OFI_CALL(c->pd, fi_eq_read(c->eq, &event, &ev,
						       sizeof(ev), 0));

		if (n == -FI_EAGAIN)
			return 0;
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry e;

			memset(&e, 0, sizeof(e));
			if (OFI_CALL(c->pd, fi_eq_readerr(c->eq, &e, 0)) < 0 ||
			    !e.err)
				return -ECONNRESET;
			return e.err == FI_ECANCELED
				       ? -ECONNRESET
				       : ofi_errno(-(ssize_t)e.err);
		}
		if (n < 0)
			return ofi_errno(n);
		if (event == FI_SHUTDOWN)
			return -ECONNRESET;
		if (event == FI_CONNECTED) {
			pthread_mutex_lock(&c->sq_lock);
			c->connected = true;
			ofi_backlog_drain(c);
			pthread_mutex_unlock(&c->sq_lock);
		}
	}
}

static void ofi_srcs_del(struct ofi_con *c)
{
	ibtrs_loop_del(c->loop, &c->kick_src);
	if (c->eq_src_added)
		ibtrs_loop_del(c->loop, &c->eq_src);
	if (c->tx_src_added)
		ibtrs_loop_del(c->loop, &c->tx_src);
	if (c->rx_src_added)
		ibtrs_loop_del(c->loop, &c->rx_src);
	if (c->dom_src_added)
		ofi_dom_src_put(c->pd->dom, c->loop);
	c->eq_src_added = c->tx_src_added = c->rx_src_added = false;
	c->dom_src_added = false;
}

/*
 * The connection's wait objects into its loop (c->loop): at its start and
 * on the new loop of a move. On failure none is left there, @step names
 * the one that failed. Return: 0 or a negative errno.
 */
static int ofi_srcs_add(struct ofi_con *c, const char **step)
{
	struct ibtrs_loop *loop = c->loop;
	int ret;

	*step = "the loop: its kick";
	ret = ibtrs_loop_add(loop, &c->kick_src, EPOLLIN);
	if (ret)
		return ret;
	if (c->eq_src.fd >= 0) {
		*step = "the loop: the event queue's wait object";
		ret = ibtrs_loop_add(loop, &c->eq_src, EPOLLIN);
		if (ret)
			goto del;
		c->eq_src_added = true;
	}
	if (c->ws) {
		*step = "the loop: the domain's progress fd";
		ret = ofi_dom_src_get(c->pd->dom, loop);
		if (ret)
			goto del;
		c->dom_src_added = true;
	}
	/* A provider may share one wait fd between objects. */
	if (c->tx_src.fd != c->eq_src.fd) {
		*step = "the loop: the send CQ's wait object";
		ret = ibtrs_loop_add(loop, &c->tx_src, EPOLLIN);
		if (ret)
			goto del;
		c->tx_src_added = true;
	}
	if (c->rx_src.fd >= 0 && c->rx_src.fd != c->eq_src.fd &&
	    c->rx_src.fd != c->tx_src.fd) {
		*step = "the loop: the receive CQ's wait object";
		ret = ibtrs_loop_add(loop, &c->rx_src, EPOLLIN);
		if (ret)
			goto del;
		c->rx_src_added = true;
	}
	return 0;

del:
	/* A delete of the ones not added fails, harmlessly. */
	ofi_srcs_del(c);
	return ret;
}

/**
 * ofi_fail() - stop the connection; with @err, report it once
 * @c: the connection
 * @err: negative errno, or 0 for a disconnect
 *
 * Loop thread, or before start. A thread still reaping transmit
 * completions is waited for, the endpoint is shut down so the peer sees
 * FI_SHUTDOWN (closed instead on a provider with OFI_Q_NO_SHUTDOWN), and
 * the work requests that never completed complete with -ECANCELED.
 */
static void ofi_fail(struct ofi_con *c, int err)
{
	bool started;

	if (c->failed)
		return;
	c->failed = true;
	pthread_mutex_lock(&c->sq_lock);
	c->dead = true;
	while (c->tx_polling && !pthread_equal(c->tx_poller, pthread_self()))
		pthread_cond_wait(&c->sq_cond, &c->sq_lock);
	started = c->started;
	pthread_mutex_unlock(&c->sq_lock);
	if (started)
		ofi_srcs_del(c);
	if (c->pd->no_shutdown) {
		/* The close tells the peer as a shutdown does, and closes
		 * the provider's sockets once. Nothing posts any more (dead)
		 * and nobody else reads ep now. */
		struct fid_ep *ep = c->ep;

		pthread_mutex_lock(&c->sq_lock);
		c->ep = NULL;
		pthread_mutex_unlock(&c->sq_lock);
		if (ep)
			OFI_CALL(c->pd, fi_close(&ep->fid));
	} else {
		OFI_CALL(c->pd, fi_shutdown(c->ep, 0));
	}
	ofi_flush_errors(c);
	if (err) {
		OFI_INC(conn_failures);
		ibtrs_log(IBTRS_LOG_DEBUG, "ofi: connection failed: %s",
			  strerror(-err));
		c->base.handler->err(&c->base, err);
	}
}

static void ofi_disconnect(struct ibtrs_xprt_con *xcon)
{
	ofi_fail(to_ofi_con(xcon), 0);
}

/* Everything the connection has to do, loop thread. */
static void ofi_con_rounds(struct ofi_con *c)
{
	struct fid *fids[3] = { &c->eq->fid, &c->rxcq->fid, &c->txcq->fid };
	unsigned int round;
	int ret;

	if (c->deferred_err) {
		/* A last look at what arrived before the shutdown. */
		ret = ofi_rx_poll(c);
		ofi_tx_progress(c);
		if (!c->failed)
			ofi_fail(c, ret < 0 ? ret : c->deferred_err);
		return;
	}
	for (round = 0; round < OFI_ROUNDS && !c->failed; round++) {
		/*
		 * Receives first: what the peer sent before it shut down
		 * (a goodbye) completes before its FI_SHUTDOWN is acted on.
		 */
		ret = ofi_rx_poll(c);
		if (!ret && !c->failed) {
			ret = ofi_eq_poll(c);
			if (ret < 0 && !c->failed) {
				int more = ofi_rx_poll(c);

				if (more < 0)
					ret = more;
			}
		}
		if (c->failed)
			return;
		if (ret >= 0) {
			bool more = ret > 0;

			ofi_tx_progress(c);
			pthread_mutex_lock(&c->sq_lock);
			ret = c->tx_err;
			pthread_mutex_unlock(&c->sq_lock);
			if (!ret && more)
				continue;
		}
		if (ret == -ECONNRESET) {
			/*
			 * The peer shut down. Progress is per domain: its
			 * other connections' last completions may just have
			 * been signalled; let the loop run them first.
			 */
			c->deferred_err = ret;
			ofi_kick(c);
			return;
		}
		if (ret) {
			ofi_fail(c, ret);
			return;
		}
		/*
		 * Sleep only when the provider says nothing is pending. A
		 * flat wait set (OFI_Q_FLAT_WAIT) is asked itself: its
		 * signal is reset, then its CQs are looked at.
		 */
		if (c->ws) {
			if (OFI_CALL(c->pd, fi_wait(c->ws, 0)))
				return;
			continue;
		}
		ret = OFI_CALL(c->pd, fi_trywait(c->pd->fabric, fids, 3));
		if (ret != -FI_EAGAIN)
			return;
	}
	if (!c->failed)
		ofi_kick(c);
}

/*
 * The connection's rounds, loop thread. A handler that posts on the
 * connection meanwhile leaves the transmit queue to the round, which reads
 * it after the receives and before fi_trywait(): one read then moves a
 * whole batch of posts, where a read per post costs a provider such as tcp
 * a poll of its sockets and a reset of its wait signal each time.
 */
static void ofi_con_progress(struct ofi_con *c)
{
	c->in_round = true;
	ofi_con_rounds(c);
	c->in_round = false;
}

static void ofi_eq_event(struct ibtrs_loop_src *src, uint32_t events)
{
	(void)events;
	ofi_con_progress(container_of(src, struct ofi_con, eq_src));
}

static void ofi_tx_event(struct ibtrs_loop_src *src, uint32_t events)
{
	(void)events;
	ofi_con_progress(container_of(src, struct ofi_con, tx_src));
}

static void ofi_rx_event(struct ibtrs_loop_src *src, uint32_t events)
{
	(void)events;
	ofi_con_progress(container_of(src, struct ofi_con, rx_src));
}

static void ofi_kick_event(struct ibtrs_loop_src *src, uint32_t events)
{
	struct ofi_con *c = container_of(src, struct ofi_con, kick_src);
	uint64_t v;

	(void)events;
	if (read(src->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		ibtrs_log_rl(IBTRS_LOG_WARN, "ofi: eventfd: %s",
			     strerror(errno));
	ofi_con_progress(c);
}

static int ofi_wait_fd(struct fid *fid, int *fd)
{
	int ret = fi_control(fid, FI_GETWAIT, fd);

	return ret ? ofi_errno(ret) : 0;
}

static int ofi_start(struct ibtrs_xprt_con *xcon, struct ibtrs_loop *loop)
{
	struct ofi_con *c = to_ofi_con(xcon);
	const char *step = "the wait objects";
	int ret;

	if (c->failed)
		return -ENOTCONN;
	if (c->ws) {
		/* OFI_Q_FLAT_WAIT: one signal for both CQs, no EQ fd */
		c->eq_src.fd = c->rx_src.fd = -1;
		c->tx_src.fd = c->ws_fd;
	} else {
		ret = ofi_wait_fd(&c->eq->fid, &c->eq_src.fd);
		if (!ret)
			ret = ofi_wait_fd(&c->txcq->fid, &c->tx_src.fd);
		if (!ret)
			ret = ofi_wait_fd(&c->rxcq->fid, &c->rx_src.fd);
		if (ret)
			goto out;
	}
	step = "the loop: its kick";
	c->eq_src.cb = ofi_eq_event;
	c->tx_src.cb = ofi_tx_event;
	c->rx_src.cb = ofi_rx_event;
	c->kick_src.cb = ofi_kick_event;
	c->loop = loop;
	pthread_mutex_lock(&c->sq_lock);
	c->started = true;
	pthread_mutex_unlock(&c->sq_lock);

	ret = ofi_srcs_add(c, &step);
	if (ret)
		goto unstart;
	if (c->has_answer) {
		uint8_t cm[OFI_EQ_BUF];
		size_t plen = ofi_cm_pack(c->answer, &c->sink, cm,
					  c->cm_data_size < sizeof(cm)
						  ? c->cm_data_size
						  : sizeof(cm));

		step = "fi_accept";
		ret = OFI_CALL(c->pd, fi_accept(c->ep, cm, plen));
		if (ret) {
			ret = ofi_errno(ret);
			goto del;
		}
	}
	ofi_kick(c);
	return 0;

del:
	ofi_srcs_del(c);
unstart:
	pthread_mutex_lock(&c->sq_lock);
	c->started = false;
	pthread_mutex_unlock(&c->sq_lock);
out:
	ibtrs_log(IBTRS_LOG_WARN,
		  "ofi: provider %s: starting a connection: %s: %s",
		  ofi_prov(c->pd->info), step, strerror(-ret));
	return ret;
}

/* The new loop's side of ofi_move(): the wait objects there. */
static void ofi_move_work(struct ibtrs_work *w)
{
	struct ofi_con *c = container_of(w, struct ofi_con, move_work);
	const char *step;
	int ret;

	ret = ofi_srcs_add(c, &step);
	if (ret) {
		ibtrs_log(IBTRS_LOG_WARN,
			  "ofi: provider %s: moving a connection: %s: %s",
			  ofi_prov(c->pd->info), step, strerror(-ret));
		ofi_fail(c, 0);
		c->move_done(&c->base, ret);
		return;
	}
	c->move_done(&c->base, 0);
	/* What completed meanwhile: the round reads it. */
	ofi_kick(c);
}

/*
 * The old loop's thread: the connection's wait objects leave its epoll;
 * what they signal meanwhile waits for the new loop, and nothing of the
 * backend is queued on a loop. Under sq_lock, as a post reads c->loop.
 */
static int ofi_move(struct ibtrs_xprt_con *xcon, struct ibtrs_loop *loop,
		    void (*done)(struct ibtrs_xprt_con *con, int err))
{
	struct ofi_con *c;

	if (!xcon || !loop || !done)
		return -EINVAL;
	c = to_ofi_con(xcon);
	if (c->failed || !c->started)
		return -ENOTCONN;
	if (loop == c->loop)
		return -EINVAL;
	c->move_done = done;
	c->move_work.fn = ofi_move_work;
	pthread_mutex_lock(&c->sq_lock);
	ofi_srcs_del(c);
	c->loop = loop;
	pthread_mutex_unlock(&c->sq_lock);
	ibtrs_loop_queue(loop, &c->move_work);
	return 0;
}

static void ofi_destroy(struct ibtrs_xprt_con *xcon)
{
	struct ofi_con *c;

	if (!xcon)
		return;
	c = to_ofi_con(xcon);
	fi_freeinfo(c->info);
	c->info = NULL;
	ofi_con_free(c);
}

/* ------------------------------------------------------------------ */
/* listener                                                             */

static void ofi_listener_event(struct ibtrs_loop_src *src, uint32_t events)
{
	struct ofi_listener *l = container_of(src, struct ofi_listener, src);
	struct fid *fid = &l->eq->fid;
	union {
		struct fi_eq_cm_entry cm;
		uint8_t raw[OFI_EQ_BUF];
	} ev;
	unsigned int round;

	(void)events;
	for (round = 0; round < 64; round++) {
		struct ofi_connreq *req;
		uint32_t event;
		ssize_t n = fi_eq_read(l->eq, &event, &ev, sizeof(ev), 0);

		if (n == -FI_EAGAIN) {
			/* A wait set of our own is asked itself: its
			 * signal is reset, then the EQ is looked at. */
			if (l->ws ? fi_wait(l->ws, 0) != 0
				  : fi_trywait(l->fabric, &fid, 1) !=
					    -FI_EAGAIN)
				return;
			continue;
		}
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry e;

			memset(&e, 0, sizeof(e));
			fi_eq_readerr(l->eq, &e, 0);
			ibtrs_log_rl(IBTRS_LOG_WARN, "ofi: listener: %s",
				     fi_strerror(e.err));
			continue;
		}
		if (n < (ssize_t)sizeof(ev.cm))
			return;
		if (event != FI_CONNREQ) {
			if (ev.cm.info)
				fi_freeinfo(ev.cm.info);
			continue;
		}
		if (!ev.cm.info) {
			/* Nothing to answer with: the peer times out. */
			ibtrs_log_rl(
				IBTRS_LOG_ERR,
				"ofi: provider %s: a connection request without its entry",
				ofi_prov(l->info));
			continue;
		}
		req = calloc(1, sizeof(*req));
		if (!req) {
			fi_reject(l->pep, ev.cm.info->handle, NULL, 0);
			fi_freeinfo(ev.cm.info);
			continue;
		}
		req->listener = l;
		req->info = ev.cm.info;
		req->has_sink = ofi_cm_unpack(ev.cm.data,
					      (size_t)n - sizeof(ev.cm),
					      req->ci.priv, &req->sink);
		if (req->info->dest_addr &&
		    req->info->dest_addrlen <= sizeof(req->ci.peer))
			memcpy(&req->ci.peer, req->info->dest_addr,
			       req->info->dest_addrlen);
		if (req->info->src_addr &&
		    req->info->src_addrlen <= sizeof(req->ci.local)) {
			memcpy(&req->ci.local, req->info->src_addr,
			       req->info->src_addrlen);
		} else {
			size_t alen = sizeof(req->ci.local);

			fi_getname(&l->pep->fid, &req->ci.local, &alen);
		}
		l->connreq(l->arg, (struct ibtrs_xprt_connreq *)req, &req->ci);
	}
}

/*
 * A failed listen's error as the other backends give it: a provider may
 * report an address in use as something else (sockets: -EINVAL), so a
 * failure on a given port is checked with a socket of our own.
 */
static int ofi_listen_errno(const struct sockaddr *addr, int ret)
{
	int one = 1, fd, busy;
	socklen_t len;

	if (ret == -EADDRINUSE || !addr)
		return ret;
	len = ibtrs_sockaddr_len(addr);
	if (!len ||
	    (addr->sa_family == AF_INET &&
	     !((const struct sockaddr_in *)addr)->sin_port) ||
	    (addr->sa_family == AF_INET6 &&
	     !((const struct sockaddr_in6 *)addr)->sin6_port))
		return ret; /* any port: not in use */
	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ret;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	busy = bind(fd, addr, len) && errno == EADDRINUSE;
	close(fd);
	return busy ? -EADDRINUSE : ret;
}

static int ofi_listen(struct ibtrs_loop *loop, const struct sockaddr *addr,
		      const struct ibtrs_xprt_tls *tls,
		      void (*connreq)(void *arg, struct ibtrs_xprt_connreq *req,
				      const struct ibtrs_connreq_info *info),
		      void *arg, struct ibtrs_xprt_listener **lp)
{
	struct fi_eq_attr eq_attr = { .size = 64, .wait_obj = FI_WAIT_FD };
	struct ofi_listener *l;
	int ret;

	if (ibtrs_xprt_tls_on(tls)) {
		ibtrs_log(IBTRS_LOG_ERR, "ofi: TLS is for the tcp backend; "
					 "authentication still applies");
		return -EOPNOTSUPP;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	ret = ofi_getinfo(NULL, addr, NULL, 0, &l->info);
	if (ret)
		goto free_l;
	ret = ofi_errno(ofi_fabric(l->info, &l->fabric));
	if (ret)
		goto free_info;
	if (ofi_quirks(ofi_prov(l->info)) & OFI_Q_FLAT_WAIT) {
		/* Nothing else resets the EQ's signal: see ofi_flat_open(). */
		struct fi_wait_attr wa = { .wait_obj = FI_WAIT_FD };

		ret = ofi_errno(fi_wait_open(l->fabric, &wa, &l->ws));
		if (ret)
			goto close_fabric;
		eq_attr.wait_obj = FI_WAIT_SET;
		eq_attr.wait_set = l->ws;
	}
	ret = ofi_errno(fi_eq_open(l->fabric, &eq_attr, &l->eq, NULL));
	if (ret)
		goto close_fabric;
	ret = ofi_errno(fi_passive_ep(l->fabric, l->info, &l->pep, l));
	if (ret)
		goto close_eq;
	ret = ofi_errno(fi_pep_bind(l->pep, &l->eq->fid, 0));
	if (!ret)
		ret = ofi_errno(fi_listen(l->pep));
	if (!ret)
		ret = l->ws ? ofi_wait_fd(&l->ws->fid, &l->src.fd)
			    : ofi_wait_fd(&l->eq->fid, &l->src.fd);
	if (ret)
		goto close_pep;
	l->loop = loop;
	l->connreq = connreq;
	l->arg = arg;
	l->src.cb = ofi_listener_event;
	ret = ibtrs_loop_add(loop, &l->src, EPOLLIN);
	if (ret)
		goto close_pep;
	*lp = (struct ibtrs_xprt_listener *)l;
	return 0;

close_pep:
	fi_close(&l->pep->fid);
close_eq:
	fi_close(&l->eq->fid);
close_fabric:
	if (l->ws)
		fi_close(&l->ws->fid);
	fi_close(&l->fabric->fid);
free_info:
	fi_freeinfo(l->info);
free_l:
	free(l);
	return ofi_listen_errno(addr, ret);
}

static int ofi_listener_addr(struct ibtrs_xprt_listener *xl,
			     struct sockaddr_storage *addr)
{
	struct ofi_listener *l = (struct ofi_listener *)xl;
	size_t alen = sizeof(*addr);
	int ret;

	ret = fi_getname(&l->pep->fid, addr, &alen);
	return ret ? ofi_errno(ret) : 0;
}

/* Loop thread, or after the loop stopped. */
static void ofi_listener_close(struct ibtrs_xprt_listener *xl)
{
	struct ofi_listener *l = (struct ofi_listener *)xl;

	if (!l)
		return;
	ibtrs_loop_del(l->loop, &l->src);
	fi_close(&l->pep->fid);
	fi_close(&l->eq->fid);
	if (l->ws)
		fi_close(&l->ws->fid);
	fi_close(&l->fabric->fid);
	fi_freeinfo(l->info);
	free(l);
}

static int ofi_accept(struct ibtrs_xprt_connreq *xreq,
		      struct ibtrs_xprt_pd *xpd,
		      const struct ibtrs_xprt_con_attr *attr, const void *priv,
		      struct ibtrs_xprt_con **conp)
{
	struct ofi_connreq *req = (struct ofi_connreq *)xreq;
	struct ofi_pd *pd = (struct ofi_pd *)xpd;
	struct fi_info *info = req->info;
	uint8_t cm[OFI_EQ_BUF];
	struct ofi_con *c;
	int ret;

	ret = ofi_con_open(pd, info, attr, &c);
	if (!ret && !ofi_cm_pack(priv, NULL, cm,
				 c->cm_data_size < sizeof(cm) ? c->cm_data_size
							      : sizeof(cm))) {
		ibtrs_log(
			IBTRS_LOG_ERR,
			"ofi: private data does not fit the provider's %zu bytes",
			c->cm_data_size);
		c->info = NULL;
		ofi_con_free(c);
		ret = -EMSGSIZE;
	}
	if (ret) {
		fi_reject(req->listener->pep, info->handle, NULL, 0);
		fi_freeinfo(info);
		free(req);
		return ret;
	}
	memcpy(c->answer, priv, sizeof(c->answer));
	c->has_answer = true;
	c->peer_sink = req->sink;
	c->has_peer_sink = req->has_sink;
	free(req);
	*conp = &c->base;
	return 0;
}

static void ofi_reject(struct ibtrs_xprt_connreq *xreq, const void *priv)
{
	struct ofi_connreq *req = (struct ofi_connreq *)xreq;
	size_t max = ofi_cm_data_size(&req->listener->pep->fid);
	uint8_t cm[OFI_EQ_BUF];
	size_t plen;
	int ret;

	plen = ofi_cm_pack(priv, NULL, cm, max < sizeof(cm) ? max : sizeof(cm));
	ret = fi_reject(req->listener->pep, req->info->handle, cm, plen);
	if (ret)
		ibtrs_log(IBTRS_LOG_DEBUG, "ofi: reject: %s",
			  fi_strerror(-ret));
	fi_freeinfo(req->info);
	free(req);
}

static int ofi_name(struct ibtrs_xprt_con *xcon, bool peer,
		    struct sockaddr_storage *ss)
{
	struct ofi_con *c = to_ofi_con(xcon);
	size_t alen = sizeof(*ss);

	if (!c->ep) /* closed by ofi_fail() */
		return -ENOTCONN;
	return peer ? fi_getpeer(c->ep, ss, &alen)
		    : fi_getname(&c->ep->fid, ss, &alen);
}

static void ofi_addr_str(struct ibtrs_xprt_con *xcon, char *local, char *peer,
			 size_t len)
{
	ibtrs_xprt_addr_str(xcon, ofi_name, local, peer, len);
}

/*
 * The pds of one provider share its domain, where the regions are: a
 * connection moves only between pds of its own domain. What the peer
 * reaches is then decided by the keys it was told.
 */
static int ofi_bind_pd(struct ibtrs_xprt_con *xcon, struct ibtrs_xprt_pd *xpd)
{
	struct ofi_con *c = to_ofi_con(xcon);
	struct ofi_pd *pd = (struct ofi_pd *)xpd;

	if (pd->dom != c->pd->dom)
		return -EINVAL;
	c->pd = pd;
	return 0;
}

const struct ibtrs_xprt_ops ibtrs_xprt_ofi_ops = {
	.name = "ofi",
	.pd_alloc = ofi_pd_alloc,
	.pd_free = ofi_pd_free,
	.mr_alloc = ofi_mr_alloc,
	.mr_map = ofi_mr_map,
	.mr_unmap = ofi_mr_unmap,
	.mr_free = ofi_mr_free,
	.mr_sync = ofi_mr_sync,
	.connect = ofi_connect,
	.listen = ofi_listen,
	.listener_addr = ofi_listener_addr,
	.listener_close = ofi_listener_close,
	.accept = ofi_accept,
	.reject = ofi_reject,
	.start = ofi_start,
	.disconnect = ofi_disconnect,
	.destroy = ofi_destroy,
	.bind_pd = ofi_bind_pd,
	.move = ofi_move,
	.post_send = ofi_post_send,
	.post_recv = ofi_post_recv,
	.post_write = ofi_post_write,
	.addr_str = ofi_addr_str,
};
