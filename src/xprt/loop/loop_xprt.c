// SPDX-License-Identifier: MIT
/*
 * loop_xprt.c - the "loop" backend: connections between two endpoints of
 * the same process, without sockets, for tests.
 *
 * A process-global registry maps listen addresses to listeners. connect()
 * finds the listener, hands its connreq callback a request on the
 * listener's loop thread and waits for the answer, which accept() keeps
 * until start(), as tcp does.
 *
 * Both ends of a connection form a link with one lock. A posted work
 * request becomes a frame, with a copy of its payload, appended to the
 * poster's send queue; the peer's loop thread takes the frames of that
 * queue in order and places them by the verbs rules (key lookup in the
 * peer's pd, bounds, one posted receive per SEND or immediate, -EPROTO
 * for a violation), as an RDMA adapter would. A signalled frame then goes
 * back to the poster, whose loop thread reports its completion. Each
 * endpoint has an eventfd that wakes its loop and a timerfd that polls
 * frames held by a delay.
 *
 * A failed or disconnected endpoint flushes its queued signalled work
 * requests with -ECANCELED, reports err() once on a failure, and the peer
 * sees a reset, unless the link drops everything (a pulled cable).
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "log.h"
#include "loop.h"
#include "loop_xprt.h"
#include "swmr.h"
#include "xprt.h"

#define LOOP_MAX_SGE SWMR_MAX_SGE      /* iovecs of one region or request */
#define LOOP_MAX_FRAME_LEN (64u << 20) /* as tcp */
#define LOOP_FIRST_PORT 40000	       /* port 0 picks from here */
#define LOOP_FIRST_PEER_PORT 50000     /* fake client ports */
#define LOOP_BATCH 256		       /* frames per wakeup */
#define LOOP_HOLD_POLL_NS 2000000ull   /* re-check held frames this often */
#define LOOP_HOLD_MIN_NS 50000ull      /* shortest timer */
#define LOOP_MAX_KNOBS 64

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))

/* ------------------------------------------------------------------ */
/* objects                                                              */

enum loop_op {
	LOOP_OP_SEND,
	LOOP_OP_WRITE,
	LOOP_OP_WRITE_IMM,
};

enum frame_state {
	FR_QUEUED, /* waiting for the peer */
	FR_BUSY,   /* the peer's loop thread is placing it */
	FR_DONE,   /* placed; its completion is due to the poster */
	FR_LOST,   /* dropped or refused; only a flush completes it */
};

/**
 * struct loop_frame - one posted work request on its way
 * @prev: previous frame of the poster's send queue
 * @next: next frame of the poster's send queue
 * @op: what it does at the peer
 * @state: where it is, under the link lock
 * @orphan: the poster was flushed while the peer was placing it: the peer
 *          frees it
 * @wr_id: the poster's id
 * @flags: IBTRS_XPRT_* flags of the post
 * @imm: immediate of LOOP_OP_WRITE_IMM
 * @rkey: key of a WRITE's destination
 * @raddr: address of a WRITE's destination
 * @post_ns: ibtrs_now_ns() at post, for the delay knob
 * @len: payload bytes
 * @data: the payload, copied at post
 */
struct loop_frame {
	struct loop_frame *prev, *next;
	enum loop_op op;
	enum frame_state state;
	bool orphan;
	uint64_t wr_id;
	unsigned int flags;
	uint32_t imm;
	uint32_t rkey;
	uint64_t raddr;
	uint64_t post_ns;
	uint32_t len;
	char data[];
};

struct loop_link;

/**
 * struct loop_ep - one end of a connection
 * @base: what the core sees
 * @link: the connection
 * @side: 0 for the client end, 1 for the server end
 * @pd: where the peer's WRITEs land
 * @attr: resources
 * @loop: the loop it runs on, once started (move() changes it)
 * @src: eventfd: frames, completions or a reset to handle
 * @timer: timerfd: frames held by a delay
 * @rq: posted receives, loop thread or before start
 * @answer: server end: the accept answer, sent by start()
 * @has_answer: @answer is set
 * @local: this end's address
 * @peer: the other end's address
 * @move_work: move(): runs on the new loop
 * @move_done: move(): the owner's callback
 *
 * Under the link lock: @alive (not yet destroyed), @accepted (server end:
 * accept() ran), @started, @failed (stopped: no completions, posts fail),
 * @reset (fail with -ECONNRESET when the loop next runs), the send queue
 * @sq_head..@sq_tail with @sq_next its first frame the peer has not taken,
 * @sq_cnt and @done_cnt (frames whose completion is due).
 */
struct loop_ep {
	struct ibtrs_xprt_con base;
	struct loop_link *link;
	unsigned int side;
	struct ibtrs_xprt_pd *pd;
	struct ibtrs_xprt_con_attr attr;
	struct ibtrs_loop *loop;
	struct ibtrs_loop_src src;
	struct ibtrs_loop_src timer;
	struct swrq rq;
	uint8_t answer[IBTRS_XPRT_PRIV_LEN];
	bool has_answer;
	struct sockaddr_storage local, peer;
	struct ibtrs_work move_work;
	void (*move_done)(struct ibtrs_xprt_con *con, int err);

	bool alive;
	bool accepted;
	bool started;
	bool failed;
	bool reset;
	struct loop_frame *sq_head, *sq_tail, *sq_next;
	unsigned int sq_cnt;
	unsigned int done_cnt;
};

enum req_state {
	REQ_WAIT,
	REQ_ACCEPTED,
	REQ_REJECTED,
	REQ_ABANDONED, /* the client timed out */
};

struct loop_listener {
	struct loop_listener *next;
	struct sockaddr_storage addr;
	struct ibtrs_loop *loop;
	void (*connreq)(void *arg, struct ibtrs_xprt_connreq *req,
			const struct ibtrs_connreq_info *info);
	void *arg;
	unsigned int refs; /* under reg_lock */
	bool closed;	   /* under reg_lock */
};

/**
 * struct loop_link - a connection: both ends and the connect exchange
 * @lock: protects everything of both ends that both threads touch
 * @cond: the client waits here for the answer
 * @ep: the ends, [0] client, [1] server
 * @refs: ends not yet released, under @lock
 * @req: the connect exchange, under @lock
 * @rsp: the answer's private data, under @lock
 * @info: what the listener's connreq callback gets
 * @work: delivers the request on the listener's loop
 * @listener: the listener, referenced until @work ran
 * @dst: the address the client dialled
 * @laddr: the listener's bound address
 * @delay_ns: delay knob
 * @drop: drop knob
 * @gnext: next link of the registry, under reg_lock
 */
struct loop_link {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct loop_ep ep[2];
	unsigned int refs;
	enum req_state req;
	uint8_t rsp[IBTRS_XPRT_PRIV_LEN];
	struct ibtrs_connreq_info info;
	struct ibtrs_work work;
	struct loop_listener *listener;
	struct sockaddr_storage dst, laddr;
	_Atomic uint64_t delay_ns;
	_Atomic bool drop;
	struct loop_link *gnext;
};

struct loop_knob {
	struct sockaddr_storage addr;
	uint64_t delay_ns;
	bool drop;
};

/* The registry: listeners, links and knobs. Taken before a link lock. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct loop_listener *listeners;
static struct loop_link *links;
static struct loop_knob knobs[LOOP_MAX_KNOBS];
static unsigned int nr_knobs;
static unsigned int next_port = LOOP_FIRST_PORT;
static _Atomic unsigned int next_peer_port = LOOP_FIRST_PEER_PORT;

static inline struct loop_ep *to_ep(struct ibtrs_xprt_con *con)
{
	return container_of(con, struct loop_ep, base);
}

static inline struct loop_ep *ep_peer(struct loop_ep *e)
{
	return &e->link->ep[!e->side];
}

/* ------------------------------------------------------------------ */
/* addresses                                                            */

static socklen_t sa_len(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	case AF_UNIX:
		return sizeof(struct sockaddr_un);
	default:
		return sizeof(struct sockaddr);
	}
}

static void sa_copy(struct sockaddr_storage *ss, const struct sockaddr *sa)
{
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, sa, sa_len(sa));
}

static bool sa_inet(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET || ss->ss_family == AF_INET6;
}

static uint16_t sa_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

static void sa_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static bool sa_any(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return false;
}

/* Same family and host address; the port is not compared. */
static bool sa_host_eq(const struct sockaddr_storage *a,
		       const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       sizeof(struct in6_addr));
	return !memcmp(a, b, sa_len((const struct sockaddr *)a));
}

/* Family, address and port. */
static bool sa_eq(const struct sockaddr_storage *a,
		  const struct sockaddr_storage *b)
{
	return sa_host_eq(a, b) && sa_port(a) == sa_port(b);
}

/* Would a listener on @la take a connection to @dst? */
static bool sa_accepts(const struct sockaddr_storage *la,
		       const struct sockaddr_storage *dst)
{
	if (!sa_inet(la) || !sa_inet(dst))
		return sa_eq(la, dst);
	if (sa_port(la) != sa_port(dst))
		return false;
	if (la->ss_family == dst->ss_family)
		return sa_any(la) || sa_host_eq(la, dst);
	/* Dual stack: the IPv6 wildcard takes IPv4 too. */
	return la->ss_family == AF_INET6 && sa_any(la);
}

/* Would two listeners on @a and @b clash? */
static bool sa_overlap(const struct sockaddr_storage *a,
		       const struct sockaddr_storage *b)
{
	if (!sa_inet(a) || !sa_inet(b))
		return sa_eq(a, b);
	if (sa_port(a) != sa_port(b))
		return false;
	if (a->ss_family == b->ss_family)
		return sa_any(a) || sa_any(b) || sa_host_eq(a, b);
	return (a->ss_family == AF_INET6 && sa_any(a)) ||
	       (b->ss_family == AF_INET6 && sa_any(b));
}

static bool port_used(uint16_t port)
{
	struct loop_listener *l;

	for (l = listeners; l; l = l->next)
		if (sa_inet(&l->addr) && sa_port(&l->addr) == port)
			return true;
	return false;
}

/* Under reg_lock: does a knob set on @addr reach @link? */
static bool knob_matches(const struct sockaddr_storage *addr,
			 const struct loop_link *link)
{
	return sa_eq(addr, &link->dst) || sa_eq(addr, &link->laddr);
}

/* ------------------------------------------------------------------ */
/* memory regions                                                       */

/*
 * Place @len bytes of @data at (@rkey, @raddr) of @pd, as an adapter
 * executing a WRITE would. Returns -EPROTO for a bad key or range.
 */
static int loop_mr_place(struct ibtrs_xprt_pd *pd, uint32_t rkey,
			 uint64_t raddr, const char *data, size_t len)
{
	struct iovec dst[LOOP_MAX_SGE];
	int i, n;

	n = swmr_resolve(pd, rkey, raddr, len, dst, LOOP_MAX_SGE);
	for (i = 0; i < n; i++) {
		memcpy(dst[i].iov_base, data, dst[i].iov_len);
		data += dst[i].iov_len;
	}
	return n < 0 ? n : 0;
}

/* ------------------------------------------------------------------ */
/* links                                                                */

/* Under the link lock: wake @e's loop if it runs. */
static void ep_kick(struct loop_ep *e)
{
	uint64_t one = 1;

	if (!e->alive || !e->started || e->src.fd < 0)
		return;
	/* A full counter still wakes the loop. */
	if (write(e->src.fd, &one, sizeof(one)) < 0)
		return;
}

static void link_free(struct loop_link *l)
{
	struct loop_link **pp;

	pthread_mutex_lock(&reg_lock);
	for (pp = &links; *pp; pp = &(*pp)->gnext) {
		if (*pp == l) {
			*pp = l->gnext;
			break;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
	free(l);
}

/* Drop one end's reference; frees the link with the last. */
static void link_put_locked(struct loop_link *l, struct loop_ep *e, bool *last)
{
	e->alive = false;
	*last = !--l->refs;
}

static void listener_put(struct loop_listener *lst)
{
	bool last;

	pthread_mutex_lock(&reg_lock);
	last = !--lst->refs;
	pthread_mutex_unlock(&reg_lock);
	if (last)
		free(lst);
}

static bool ep_attr_ok(const struct ibtrs_xprt_con_attr *attr)
{
	return attr->max_send_wr && attr->max_recv_wr && attr->max_send_sge &&
	       attr->max_send_sge <= LOOP_MAX_SGE;
}

static int ep_init(struct loop_ep *e, struct ibtrs_xprt_pd *pd,
		   const struct ibtrs_xprt_con_attr *attr)
{
	e->pd = pd;
	e->attr = *attr;
	return swrq_init(&e->rq, attr->max_recv_wr);
}

/* ------------------------------------------------------------------ */
/* failure and completion delivery                                      */

/*
 * Stop @e; with @err, report it once. @e's loop thread, or before start.
 * Every signalled work request still queued completes here: those the
 * peer already placed with success, the others with -ECANCELED.
 */
static void ep_fail(struct loop_ep *e, int err)
{
	struct loop_link *l = e->link;
	struct loop_ep *p = ep_peer(e);
	struct loop_frame *list, *f, *next;
	struct ibtrs_wc busy_wc = { .status = -ECANCELED };
	bool started, have_busy = false;

	pthread_mutex_lock(&l->lock);
	if (e->failed) {
		pthread_mutex_unlock(&l->lock);
		return;
	}
	e->failed = true;
	started = e->started;
	list = e->sq_head;
	e->sq_head = e->sq_tail = e->sq_next = NULL;
	e->sq_cnt = 0;
	e->done_cnt = 0;
	/* The peer may be placing one of them: it frees that one. */
	for (f = list; f; f = f->next) {
		if (f->state != FR_BUSY)
			continue;
		f->orphan = true;
		if (f->prev)
			f->prev->next = f->next;
		else
			list = f->next;
		if (f->next)
			f->next->prev = f->prev;
		if (f->flags & IBTRS_XPRT_SIGNALED) {
			busy_wc.wr_id = f->wr_id;
			busy_wc.opcode = f->op == LOOP_OP_SEND ? IBTRS_WC_SEND
							       : IBTRS_WC_WRITE;
			have_busy = true;
		}
		break;
	}
	/* The peer sees a reset, unless the cable is pulled. */
	ep_kick(p);
	pthread_mutex_unlock(&l->lock);

	if (started) {
		ibtrs_loop_del(e->loop, &e->src);
		ibtrs_loop_del(e->loop, &e->timer);
	}
	if (have_busy)
		e->base.handler->wc(&e->base, &busy_wc);
	for (f = list; f; f = next) {
		struct ibtrs_wc wc = { .wr_id = f->wr_id };

		next = f->next;
		if (f->flags & IBTRS_XPRT_SIGNALED) {
			wc.status = f->state == FR_DONE ? 0 : -ECANCELED;
			wc.opcode = f->op == LOOP_OP_SEND ? IBTRS_WC_SEND
							  : IBTRS_WC_WRITE;
			e->base.handler->wc(&e->base, &wc);
		}
		free(f);
	}
	if (err)
		e->base.handler->err(&e->base, err);
}

/* Under the link lock: take @f out of @e's send queue. */
static void sq_unlink(struct loop_ep *e, struct loop_frame *f)
{
	if (f->prev)
		f->prev->next = f->next;
	else
		e->sq_head = f->next;
	if (f->next)
		f->next->prev = f->prev;
	else
		e->sq_tail = f->prev;
	if (e->sq_next == f)
		e->sq_next = f->next;
	e->sq_cnt--;
}

/*
 * Under the link lock, on @e's loop thread: report one completed work
 * request of @e, dropping and retaking the lock. False if none was due.
 */
static bool ep_report_one(struct loop_ep *e)
{
	struct loop_link *l = e->link;
	struct ibtrs_wc wc = { 0 };
	struct loop_frame *f;

	for (f = e->sq_head; f && f != e->sq_next; f = f->next)
		if (f->state == FR_DONE)
			break;
	if (!f || f == e->sq_next || f->state != FR_DONE)
		return false;
	sq_unlink(e, f);
	e->done_cnt--;
	wc.wr_id = f->wr_id;
	wc.opcode = f->op == LOOP_OP_SEND ? IBTRS_WC_SEND : IBTRS_WC_WRITE;
	pthread_mutex_unlock(&l->lock);
	free(f);
	e->base.handler->wc(&e->base, &wc);
	pthread_mutex_lock(&l->lock);
	return true;
}

/* ------------------------------------------------------------------ */
/* receive side                                                         */

/*
 * @e's loop thread: execute the peer's frame @f on @e by the verbs rules
 * and report the receive completion, if any.
 */
static int ep_place(struct loop_ep *e, const struct loop_frame *f)
{
	struct ibtrs_wc wc = { .byte_len = f->len };
	struct swrq_ent *r = NULL;

	switch (f->op) {
	case LOOP_OP_SEND:
		r = swrq_next(&e->rq, true, f->len, "loop");
		if (!r)
			return -EPROTO;
		if (f->len)
			memcpy(r->buf, f->data, f->len);
		wc.opcode = IBTRS_WC_RECV;
		break;
	case LOOP_OP_WRITE_IMM:
		r = swrq_next(&e->rq, false, 0, "loop");
		if (!r)
			return -EPROTO;
		/* fall through */
	case LOOP_OP_WRITE:
		if (f->len &&
		    loop_mr_place(e->pd, f->rkey, f->raddr, f->data, f->len)) {
			ibtrs_log_rl(
				IBTRS_LOG_ERR,
				"loop: remote access error: key %#x offset %llu len %u",
				f->rkey, (unsigned long long)f->raddr, f->len);
			return -EPROTO;
		}
		if (f->op == LOOP_OP_WRITE)
			return 0;
		wc.opcode = IBTRS_WC_RECV_IMM;
		wc.imm = f->imm;
		break;
	default:
		return -EPROTO;
	}
	wc.wr_id = r->wr_id;
	swrq_pop(&e->rq);
	e->base.handler->wc(&e->base, &wc);
	return 0;
}

/* Arm @e's timer to look at a held frame again in about @ns. */
static void ep_arm_timer(struct loop_ep *e, uint64_t ns)
{
	struct itimerspec its = { 0 };

	if (ns > LOOP_HOLD_POLL_NS)
		ns = LOOP_HOLD_POLL_NS;
	if (ns < LOOP_HOLD_MIN_NS)
		ns = LOOP_HOLD_MIN_NS;
	its.it_value.tv_sec = (time_t)(ns / 1000000000ull);
	its.it_value.tv_nsec = (long)(ns % 1000000000ull);
	timerfd_settime(e->timer.fd, 0, &its, NULL);
}

/* Under the link lock: is the other end gone for good? */
static bool ep_peer_gone(struct loop_ep *e)
{
	struct loop_ep *p = ep_peer(e);

	if (e->reset)
		return true;
	if (atomic_load(&e->link->drop))
		return false;
	return !p->alive || p->failed;
}

/*
 * @e's loop thread: report @e's completions, take a reset, and place the
 * peer's frames that are due.
 */
static void ep_run(struct loop_ep *e)
{
	struct loop_link *l = e->link;
	struct loop_ep *p = ep_peer(e);
	unsigned int budget = LOOP_BATCH;
	uint64_t hold_ns = 0;

	pthread_mutex_lock(&l->lock);
	while (!e->failed) {
		struct loop_frame *f;
		uint64_t delay, now;
		int ret;

		if (e->done_cnt && ep_report_one(e))
			continue;
		if (ep_peer_gone(e)) {
			pthread_mutex_unlock(&l->lock);
			ep_fail(e, -ECONNRESET);
			return;
		}
		f = p->sq_next;
		if (!f || !budget)
			break;
		if (atomic_load(&l->drop)) {
			/* Pulled cable: gone without a trace. */
			p->sq_next = f->next;
			if (f->flags & IBTRS_XPRT_SIGNALED) {
				f->state = FR_LOST;
			} else {
				sq_unlink(p, f);
				free(f);
			}
			continue;
		}
		delay = atomic_load(&l->delay_ns);
		if (delay) {
			now = ibtrs_now_ns();
			if (now < f->post_ns + delay) {
				hold_ns = f->post_ns + delay - now;
				break;
			}
		}
		p->sq_next = f->next;
		f->state = FR_BUSY;
		budget--;
		pthread_mutex_unlock(&l->lock);
		ret = ep_place(e, f);
		pthread_mutex_lock(&l->lock);
		if (f->orphan) {
			free(f);
		} else if (ret) {
			f->state = FR_LOST;
		} else if (f->flags & IBTRS_XPRT_SIGNALED) {
			f->state = FR_DONE;
			p->done_cnt++;
			ep_kick(p);
		} else {
			sq_unlink(p, f);
			free(f);
		}
		if (ret) {
			pthread_mutex_unlock(&l->lock);
			ep_fail(e, ret);
			return;
		}
	}
	if (!e->failed && !budget && p->sq_next)
		ep_kick(e);
	pthread_mutex_unlock(&l->lock);
	if (hold_ns)
		ep_arm_timer(e, hold_ns);
}

static void ep_event(struct ibtrs_loop_src *src, uint32_t events)
{
	struct loop_ep *e = container_of(src, struct loop_ep, src);
	uint64_t v;

	(void)events;
	if (read(src->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		ibtrs_log_rl(IBTRS_LOG_ERR, "loop: eventfd read: %s",
			     strerror(errno));
	ep_run(e);
}

static void ep_timer(struct ibtrs_loop_src *src, uint32_t events)
{
	struct loop_ep *e = container_of(src, struct loop_ep, timer);
	uint64_t v;

	(void)events;
	if (read(src->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	ep_run(e);
}

/* ------------------------------------------------------------------ */
/* send side                                                            */

static int loop_post(struct loop_ep *e, const struct iovec *iov,
		     unsigned int cnt, enum loop_op op, uint32_t imm,
		     uint32_t rkey, uint64_t raddr, uint64_t wr_id,
		     unsigned int flags)
{
	struct loop_link *l = e->link;
	struct loop_frame *f;
	size_t len = 0, off = 0;
	unsigned int i;

	if (cnt > e->attr.max_send_sge)
		return -EINVAL;
	for (i = 0; i < cnt; i++) {
		if (iov[i].iov_len > LOOP_MAX_FRAME_LEN - len)
			return -EMSGSIZE;
		len += iov[i].iov_len;
	}
	f = malloc(sizeof(*f) + len);
	if (!f)
		return -ENOMEM;
	for (i = 0; i < cnt; i++) {
		if (iov[i].iov_len)
			memcpy(f->data + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	f->next = NULL;
	f->op = op;
	f->state = FR_QUEUED;
	f->orphan = false;
	f->wr_id = wr_id;
	f->flags = flags;
	f->imm = imm;
	f->rkey = rkey;
	f->raddr = raddr;
	f->len = (uint32_t)len;
	f->post_ns = ibtrs_now_ns();

	pthread_mutex_lock(&l->lock);
	if (e->failed) {
		pthread_mutex_unlock(&l->lock);
		free(f);
		return -ENOTCONN;
	}
	if (e->sq_cnt >= e->attr.max_send_wr) {
		pthread_mutex_unlock(&l->lock);
		free(f);
		return -ENOMEM;
	}
	f->prev = e->sq_tail;
	if (e->sq_tail)
		e->sq_tail->next = f;
	else
		e->sq_head = f;
	e->sq_tail = f;
	if (!e->sq_next)
		e->sq_next = f;
	e->sq_cnt++;
	ep_kick(ep_peer(e));
	pthread_mutex_unlock(&l->lock);
	return 0;
}

static int loop_post_send(struct ibtrs_xprt_con *con, const struct iovec *iov,
			  unsigned int cnt, uint64_t wr_id, unsigned int flags)
{
	return loop_post(to_ep(con), iov, cnt, LOOP_OP_SEND, 0, 0, 0, wr_id,
			 flags);
}

static int loop_post_write(struct ibtrs_xprt_con *con, const struct iovec *iov,
			   unsigned int cnt, uint64_t raddr, uint32_t rkey,
			   uint32_t imm, uint64_t wr_id, unsigned int flags)
{
	return loop_post(to_ep(con), iov, cnt,
			 (flags & IBTRS_XPRT_IMM) ? LOOP_OP_WRITE_IMM
						  : LOOP_OP_WRITE,
			 imm, rkey, raddr, wr_id, flags);
}

static int loop_post_recv(struct ibtrs_xprt_con *con, void *buf, uint32_t len,
			  uint64_t wr_id)
{
	return swrq_post(&to_ep(con)->rq, buf, len, wr_id);
}

/* ------------------------------------------------------------------ */
/* connection setup                                                     */

/* A connect to a dropped address goes nowhere until its deadline. */
static bool dst_dropped(const struct sockaddr_storage *dst)
{
	bool drop = false;
	unsigned int i;

	pthread_mutex_lock(&reg_lock);
	for (i = 0; i < nr_knobs; i++)
		if (knobs[i].drop && sa_eq(&knobs[i].addr, dst))
			drop = true;
	pthread_mutex_unlock(&reg_lock);
	return drop;
}

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Under reg_lock: the listener for @dst, an exact match first. */
static struct loop_listener *listener_find(const struct sockaddr_storage *dst)
{
	struct loop_listener *lst, *wild = NULL;

	for (lst = listeners; lst; lst = lst->next) {
		if (lst->closed || !sa_accepts(&lst->addr, dst))
			continue;
		if (sa_eq(&lst->addr, dst))
			return lst;
		if (!wild)
			wild = lst;
	}
	return wild;
}

/* The listener's loop thread: hand the request to the server. */
static void connreq_work(struct ibtrs_work *w)
{
	struct loop_link *l = container_of(w, struct loop_link, work);
	struct loop_listener *lst = l->listener;
	bool closed, last = false;

	pthread_mutex_lock(&reg_lock);
	closed = lst->closed;
	pthread_mutex_unlock(&reg_lock);
	pthread_mutex_lock(&l->lock);
	if (closed || l->req != REQ_WAIT) {
		/* No listener any more (refused), or nobody waits. */
		if (l->req == REQ_WAIT) {
			memset(l->rsp, 0, sizeof(l->rsp));
			l->req = REQ_REJECTED;
			pthread_cond_broadcast(&l->cond);
		}
		link_put_locked(l, &l->ep[1], &last);
		pthread_mutex_unlock(&l->lock);
		if (last)
			link_free(l);
	} else {
		pthread_mutex_unlock(&l->lock);
		lst->connreq(lst->arg, (struct ibtrs_xprt_connreq *)l,
			     &l->info);
	}
	listener_put(lst);
}

static int loop_connect(struct ibtrs_xprt_pd *pd, const struct sockaddr *src,
			const struct sockaddr *dst,
			const struct ibtrs_xprt_con_attr *attr,
			const void *priv, void *rsp, unsigned int timeout_ms,
			struct ibtrs_xprt_con **conp)
{
	uint64_t deadline = real_ns() + (uint64_t)timeout_ms * 1000000;
	struct loop_listener *lst;
	pthread_condattr_t ca;
	struct swrq_ent *rq;
	struct loop_link *l;
	struct timespec ts;
	struct loop_ep *e;
	unsigned int i;
	bool last;
	int ret;

	if (!ep_attr_ok(attr))
		return -EINVAL;
	if (ibtrs_xprt_tls_on(attr->tls)) {
		ibtrs_log(IBTRS_LOG_ERR, "loop: TLS is for the tcp backend; "
					 "authentication still applies");
		return -EOPNOTSUPP;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	sa_copy(&l->dst, dst);
	while (dst_dropped(&l->dst)) {
		struct timespec ms = { .tv_nsec = 1000000 };

		if (real_ns() >= deadline) {
			free(l);
			return -ETIMEDOUT;
		}
		nanosleep(&ms, NULL);
	}
	e = &l->ep[0];
	ret = ep_init(e, pd, attr);
	if (ret) {
		free(l);
		return ret;
	}
	l->ep[1].side = 1;
	l->ep[0].link = l->ep[1].link = l;
	l->ep[0].src.fd = l->ep[1].src.fd = -1;
	l->ep[0].timer.fd = l->ep[1].timer.fd = -1;
	l->ep[0].alive = l->ep[1].alive = true;
	l->refs = 2;
	l->req = REQ_WAIT;
	pthread_mutex_init(&l->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cond, &ca);
	pthread_condattr_destroy(&ca);

	/* The client's fake address: its source, else the destination's
	 * host with an ephemeral port. */
	if (src) {
		sa_copy(&e->local, src);
		if (sa_inet(&e->local) && !sa_port(&e->local))
			sa_set_port(&e->local, (uint16_t)atomic_fetch_add(
						       &next_peer_port, 1));
	} else {
		e->local = l->dst;
		sa_set_port(&e->local,
			    (uint16_t)atomic_fetch_add(&next_peer_port, 1));
	}
	e->peer = l->dst;
	l->ep[1].local = l->dst;
	l->ep[1].peer = e->local;
	memcpy(l->info.priv, priv, sizeof(l->info.priv));
	l->info.peer = e->local;
	l->info.local = l->dst;
	l->work.fn = connreq_work;

	pthread_mutex_lock(&reg_lock);
	lst = listener_find(&l->dst);
	if (!lst) {
		pthread_mutex_unlock(&reg_lock);
		ret = -ECONNREFUSED;
		goto free_link;
	}
	lst->refs++;
	l->listener = lst;
	l->laddr = lst->addr;
	for (i = 0; i < nr_knobs; i++) {
		if (!knob_matches(&knobs[i].addr, l))
			continue;
		if (knobs[i].delay_ns)
			atomic_store(&l->delay_ns, knobs[i].delay_ns);
		if (knobs[i].drop)
			atomic_store(&l->drop, true);
	}
	l->gnext = links;
	links = l;
	ibtrs_loop_queue(lst->loop, &l->work);
	pthread_mutex_unlock(&reg_lock);

	ts.tv_sec = (time_t)(deadline / 1000000000ull);
	ts.tv_nsec = (long)(deadline % 1000000000ull);
	pthread_mutex_lock(&l->lock);
	while (l->req == REQ_WAIT &&
	       pthread_cond_timedwait(&l->cond, &l->lock, &ts) != ETIMEDOUT)
		;
	switch (l->req) {
	case REQ_ACCEPTED:
		memcpy(rsp, l->rsp, IBTRS_XPRT_PRIV_LEN);
		pthread_mutex_unlock(&l->lock);
		*conp = &e->base;
		return 0;
	case REQ_REJECTED:
		memcpy(rsp, l->rsp, IBTRS_XPRT_PRIV_LEN);
		ret = -ECONNREFUSED;
		break;
	default:
		l->req = REQ_ABANDONED;
		ret = -ETIMEDOUT;
		break;
	}
	rq = e->rq.ent;
	e->rq.ent = NULL;
	link_put_locked(l, e, &last);
	/* Once unlocked, the server end may free the link. */
	pthread_mutex_unlock(&l->lock);
	free(rq);
	if (last)
		link_free(l);
	return ret;

free_link:
	free(e->rq.ent);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
	free(l);
	return ret;
}

static int loop_listen(struct ibtrs_loop *loop, const struct sockaddr *addr,
		       const struct ibtrs_xprt_tls *tls,
		       void (*connreq)(void *arg,
				       struct ibtrs_xprt_connreq *req,
				       const struct ibtrs_connreq_info *info),
		       void *arg, struct ibtrs_xprt_listener **lp)
{
	struct loop_listener *lst, *o;
	unsigned int tries;

	if (ibtrs_xprt_tls_on(tls)) {
		ibtrs_log(IBTRS_LOG_ERR, "loop: TLS is for the tcp backend; "
					 "authentication still applies");
		return -EOPNOTSUPP;
	}
	lst = calloc(1, sizeof(*lst));
	if (!lst)
		return -ENOMEM;
	sa_copy(&lst->addr, addr);
	lst->loop = loop;
	lst->connreq = connreq;
	lst->arg = arg;
	lst->refs = 1;
	pthread_mutex_lock(&reg_lock);
	if (sa_inet(&lst->addr) && !sa_port(&lst->addr)) {
		for (tries = 0; tries < 65536 - LOOP_FIRST_PORT; tries++) {
			uint16_t port = (uint16_t)next_port;

			if (++next_port > 65535)
				next_port = LOOP_FIRST_PORT;
			if (!port_used(port)) {
				sa_set_port(&lst->addr, port);
				break;
			}
		}
		if (!sa_port(&lst->addr)) {
			pthread_mutex_unlock(&reg_lock);
			free(lst);
			return -EADDRINUSE;
		}
	}
	for (o = listeners; o; o = o->next) {
		if (sa_overlap(&o->addr, &lst->addr)) {
			pthread_mutex_unlock(&reg_lock);
			free(lst);
			return -EADDRINUSE;
		}
	}
	lst->next = listeners;
	listeners = lst;
	pthread_mutex_unlock(&reg_lock);
	*lp = (struct ibtrs_xprt_listener *)lst;
	return 0;
}

static int loop_listener_addr(struct ibtrs_xprt_listener *xl,
			      struct sockaddr_storage *addr)
{
	struct loop_listener *lst = (struct loop_listener *)xl;

	*addr = lst->addr;
	return 0;
}

static void loop_listener_close(struct ibtrs_xprt_listener *xl)
{
	struct loop_listener *lst = (struct loop_listener *)xl, **pp;

	if (!lst)
		return;
	pthread_mutex_lock(&reg_lock);
	for (pp = &listeners; *pp; pp = &(*pp)->next) {
		if (*pp == lst) {
			*pp = lst->next;
			break;
		}
	}
	lst->closed = true;
	pthread_mutex_unlock(&reg_lock);
	/* Requests still queued on the loop hold references. */
	listener_put(lst);
}

static int loop_accept(struct ibtrs_xprt_connreq *req, struct ibtrs_xprt_pd *pd,
		       const struct ibtrs_xprt_con_attr *attr, const void *priv,
		       struct ibtrs_xprt_con **conp)
{
	struct loop_link *l = (struct loop_link *)req;
	struct loop_ep *e = &l->ep[1];
	bool last = false;
	int ret;

	ret = ep_attr_ok(attr) ? ep_init(e, pd, attr) : -EINVAL;
	pthread_mutex_lock(&l->lock);
	if (ret) {
		/* As tcp: the client sees the connection go away. */
		if (l->req == REQ_WAIT) {
			memset(l->rsp, 0, sizeof(l->rsp));
			l->req = REQ_REJECTED;
			pthread_cond_broadcast(&l->cond);
		}
		link_put_locked(l, e, &last);
		pthread_mutex_unlock(&l->lock);
		if (last)
			link_free(l);
		return ret;
	}
	memcpy(e->answer, priv, sizeof(e->answer));
	e->has_answer = true;
	e->accepted = true;
	pthread_mutex_unlock(&l->lock);
	*conp = &e->base;
	return 0;
}

static void loop_reject(struct ibtrs_xprt_connreq *req, const void *priv)
{
	struct loop_link *l = (struct loop_link *)req;
	bool last;

	pthread_mutex_lock(&l->lock);
	if (l->req == REQ_WAIT) {
		memcpy(l->rsp, priv, sizeof(l->rsp));
		l->req = REQ_REJECTED;
		pthread_cond_broadcast(&l->cond);
	}
	link_put_locked(l, &l->ep[1], &last);
	pthread_mutex_unlock(&l->lock);
	if (last)
		link_free(l);
}

static int loop_start(struct ibtrs_xprt_con *con, struct ibtrs_loop *loop)
{
	struct loop_ep *e = to_ep(con);
	struct loop_link *l = e->link;
	int ret;

	e->src.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->src.fd < 0)
		return -errno;
	e->timer.fd =
		timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (e->timer.fd < 0) {
		ret = -errno;
		goto close_src;
	}
	e->loop = loop;
	e->src.cb = ep_event;
	e->timer.cb = ep_timer;
	/* Started before the loop can see it, as in tcp. */
	pthread_mutex_lock(&l->lock);
	e->started = true;
	pthread_mutex_unlock(&l->lock);
	ret = ibtrs_loop_add(loop, &e->timer, EPOLLIN);
	if (ret)
		goto unstart;
	ret = ibtrs_loop_add(loop, &e->src, EPOLLIN);
	if (ret) {
		ibtrs_loop_del(loop, &e->timer);
		goto unstart;
	}
	pthread_mutex_lock(&l->lock);
	if (e->has_answer) {
		if (l->req == REQ_WAIT) {
			memcpy(l->rsp, e->answer, sizeof(l->rsp));
			l->req = REQ_ACCEPTED;
			pthread_cond_broadcast(&l->cond);
		} else {
			e->reset = true; /* the client gave up */
		}
		e->has_answer = false;
	}
	/* Whatever came before the start. */
	ep_kick(e);
	pthread_mutex_unlock(&l->lock);
	return 0;

unstart:
	pthread_mutex_lock(&l->lock);
	e->started = false;
	close(e->timer.fd);
	e->timer.fd = -1;
	close(e->src.fd);
	e->src.fd = -1;
	pthread_mutex_unlock(&l->lock);
	return ret;

close_src:
	close(e->src.fd);
	e->src.fd = -1;
	return ret;
}

/* The new loop's side of loop_move(). */
static void loop_move_work(struct ibtrs_work *w)
{
	struct loop_ep *e = container_of(w, struct loop_ep, move_work);
	struct loop_link *l = e->link;
	int ret;

	ret = ibtrs_loop_add(e->loop, &e->timer, EPOLLIN);
	if (!ret) {
		ret = ibtrs_loop_add(e->loop, &e->src, EPOLLIN);
		if (ret)
			ibtrs_loop_del(e->loop, &e->timer);
	}
	if (ret) {
		/* Off every loop: nothing for ep_fail() to delete. */
		pthread_mutex_lock(&l->lock);
		e->started = false;
		pthread_mutex_unlock(&l->lock);
		ep_fail(e, 0);
		e->move_done(&e->base, ret);
		return;
	}
	e->move_done(&e->base, 0);
	/* Frames and completions that came meanwhile: the eventfd kept
	 * their count, but a kick costs nothing and makes sure. */
	pthread_mutex_lock(&l->lock);
	ep_kick(e);
	pthread_mutex_unlock(&l->lock);
}

/*
 * The old loop's thread: both descriptors leave its epoll; the eventfd
 * and the timer keep what they counted, and the new loop sees it.
 */
static int loop_move(struct ibtrs_xprt_con *con, struct ibtrs_loop *loop,
		     void (*done)(struct ibtrs_xprt_con *con, int err))
{
	struct loop_ep *e;
	bool ok;

	if (!con || !loop || !done)
		return -EINVAL;
	e = to_ep(con);
	pthread_mutex_lock(&e->link->lock);
	ok = e->started && !e->failed;
	pthread_mutex_unlock(&e->link->lock);
	if (!ok)
		return -ENOTCONN;
	if (loop == e->loop)
		return -EINVAL;
	ibtrs_loop_del(e->loop, &e->src);
	ibtrs_loop_del(e->loop, &e->timer);
	e->loop = loop;
	e->move_done = done;
	e->move_work.fn = loop_move_work;
	ibtrs_loop_queue(loop, &e->move_work);
	return 0;
}

static void loop_disconnect(struct ibtrs_xprt_con *con)
{
	ep_fail(to_ep(con), 0);
}

static void loop_destroy(struct ibtrs_xprt_con *con)
{
	struct swrq_ent *rq;
	struct loop_link *l;
	struct loop_ep *e;
	bool last;

	if (!con)
		return;
	e = to_ep(con);
	l = e->link;
	if (e->loop)
		ibtrs_loop_cancel(e->loop, &e->move_work);
	ep_fail(e, 0); /* nothing if it already stopped */
	pthread_mutex_lock(&l->lock);
	if (e->src.fd >= 0)
		close(e->src.fd);
	if (e->timer.fd >= 0)
		close(e->timer.fd);
	e->src.fd = e->timer.fd = -1;
	rq = e->rq.ent;
	e->rq.ent = NULL;
	link_put_locked(l, e, &last);
	/* The peer resets on its next run. */
	ep_kick(ep_peer(e));
	/* Once unlocked, the peer may free the link, @e with it. */
	pthread_mutex_unlock(&l->lock);
	free(rq);
	if (last)
		link_free(l);
}

static int loop_name(struct ibtrs_xprt_con *con, bool peer,
		     struct sockaddr_storage *ss)
{
	struct loop_ep *e = to_ep(con);

	*ss = peer ? e->peer : e->local;
	return 0;
}

static void loop_addr_str(struct ibtrs_xprt_con *con, char *local, char *peer,
			  size_t len)
{
	ibtrs_xprt_addr_str(con, loop_name, local, peer, len);
}

/* ------------------------------------------------------------------ */
/* fault knobs                                                          */

/* Under reg_lock: the knob of @addr, created if @create. */
static struct loop_knob *knob_get(const struct sockaddr_storage *addr,
				  bool create)
{
	unsigned int i;

	for (i = 0; i < nr_knobs; i++)
		if (sa_eq(&knobs[i].addr, addr))
			return &knobs[i];
	if (!create || nr_knobs == LOOP_MAX_KNOBS)
		return NULL;
	memset(&knobs[nr_knobs], 0, sizeof(knobs[0]));
	knobs[nr_knobs].addr = *addr;
	return &knobs[nr_knobs++];
}

/* Under reg_lock: forget a knob that does nothing. */
static void knob_trim(struct loop_knob *k)
{
	if (k->delay_ns || k->drop)
		return;
	*k = knobs[--nr_knobs];
}

/*
 * Under reg_lock: recompute the knobs of every link @addr reaches from the
 * table, and wake both ends so that held frames move and resets show.
 */
static void knobs_apply(const struct sockaddr_storage *addr)
{
	struct loop_link *l;
	unsigned int i;

	for (l = links; l; l = l->gnext) {
		uint64_t delay = 0;
		bool drop = false;

		if (!knob_matches(addr, l))
			continue;
		for (i = 0; i < nr_knobs; i++) {
			if (!knob_matches(&knobs[i].addr, l))
				continue;
			if (knobs[i].delay_ns > delay)
				delay = knobs[i].delay_ns;
			drop |= knobs[i].drop;
		}
		atomic_store(&l->delay_ns, delay);
		atomic_store(&l->drop, drop);
		pthread_mutex_lock(&l->lock);
		ep_kick(&l->ep[0]);
		ep_kick(&l->ep[1]);
		pthread_mutex_unlock(&l->lock);
	}
}

void loop_xprt_set_delay(const struct sockaddr *dst_listen_addr,
			 unsigned int delay_us)
{
	struct sockaddr_storage a;
	struct loop_knob *k;

	if (!dst_listen_addr)
		return;
	sa_copy(&a, dst_listen_addr);
	pthread_mutex_lock(&reg_lock);
	k = knob_get(&a, delay_us != 0);
	if (k) {
		k->delay_ns = (uint64_t)delay_us * 1000;
		knob_trim(k);
	}
	knobs_apply(&a);
	pthread_mutex_unlock(&reg_lock);
}

void loop_xprt_set_drop(const struct sockaddr *addr, bool drop)
{
	struct sockaddr_storage a;
	struct loop_knob *k;

	if (!addr)
		return;
	sa_copy(&a, addr);
	pthread_mutex_lock(&reg_lock);
	k = knob_get(&a, drop);
	if (k) {
		k->drop = drop;
		knob_trim(k);
	}
	knobs_apply(&a);
	pthread_mutex_unlock(&reg_lock);
}

void loop_xprt_break(const struct sockaddr *addr)
{
	struct sockaddr_storage a;
	struct loop_link *l;
	unsigned int i;

	if (!addr)
		return;
	sa_copy(&a, addr);
	pthread_mutex_lock(&reg_lock);
	for (l = links; l; l = l->gnext) {
		if (!knob_matches(&a, l))
			continue;
		pthread_mutex_lock(&l->lock);
		for (i = 0; i < 2; i++) {
			struct loop_ep *e = &l->ep[i];

			if (!e->alive || e->failed)
				continue;
			e->reset = true;
			ep_kick(e);
		}
		pthread_mutex_unlock(&l->lock);
	}
	pthread_mutex_unlock(&reg_lock);
}

/*
 * Loop thread: what the peer sent and is due, and the completions to
 * report, now, as @con's next wake-up would run them.
 */
static int loop_drain(struct ibtrs_xprt_con *con)
{
	struct loop_ep *e = to_ep(con);
	bool ready;

	pthread_mutex_lock(&e->link->lock);
	ready = e->started && !e->failed;
	pthread_mutex_unlock(&e->link->lock);
	if (ready)
		ep_run(e);
	return 0;
}

/* Loop thread: the receiving end places the peer's WRITEs there. */
static int loop_bind_pd(struct ibtrs_xprt_con *xcon, struct ibtrs_xprt_pd *pd)
{
	to_ep(xcon)->pd = pd;
	return 0;
}

const struct ibtrs_xprt_ops ibtrs_xprt_loop_ops = {
	.name = "loop",
	.pd_alloc = swmr_pd_alloc,
	.pd_free = swmr_pd_free,
	.mr_alloc = swmr_mr_alloc,
	.mr_map = swmr_mr_map,
	.mr_unmap = swmr_mr_unmap,
	.mr_free = swmr_mr_free,
	.connect = loop_connect,
	.listen = loop_listen,
	.listener_addr = loop_listener_addr,
	.listener_close = loop_listener_close,
	.accept = loop_accept,
	.reject = loop_reject,
	.start = loop_start,
	.disconnect = loop_disconnect,
	.destroy = loop_destroy,
	.bind_pd = loop_bind_pd,
	.move = loop_move,
	.post_send = loop_post_send,
	.post_recv = loop_post_recv,
	.post_write = loop_post_write,
	.drain = loop_drain,
	.addr_str = loop_addr_str,
};
