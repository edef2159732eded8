// SPDX-License-Identifier: MIT
/*
 * tcp.c - the tcp backend: RDMA semantics over a framed TCP stream.
 *
 * Send side: work requests queue on the connection; whoever finds nobody
 * flushing gathers every queued frame (headers and the callers' buffers)
 * into one sendmsg. While the loop thread is processing received frames it
 * holds the flush back, so that the answers it posts leave together, up to
 * TCP_EARLY_FRAMES or TCP_EARLY_BYTES, or until the batch has read
 * TCP_EARLY_RX: then they leave early and the peer works on them while
 * the rest of the batch is parsed.
 *
 * Receive side: reads land in a staging buffer that holds many small frames
 * per system call; a payload that did not arrive with its header is read
 * straight into its destination (registered region or posted receive),
 * together with the next bytes into the staging buffer. An event reads
 * until the socket is empty, TCP_RX_BUDGET bytes or TCP_RX_TIME_NS after
 * the loop woke up, so that one busy peer does not hold up the loop's
 * other connections, work and timers. A flush of two or
 * more frames sends their headers first (TCP_OP_HDRS, tcp_proto.h), so
 * that the receiver reads the large payloads among them straight into
 * their destinations, several per system call.
 *
 * With TLS (tls.c), the gathered batch is encrypted into full records
 * that leave in one send, and reads decrypt into the same destinations
 * as plaintext reads would; what the record layer holds in user space is
 * read on before the loop waits on the socket again.
 *
 * The verbs rules are enforced: keys issued here and checked on every
 * access, bounds checked against the region, one posted receive consumed
 * per immediate, a SEND larger than its receive or without one is fatal.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "addr.h"
#include "log.h"
#include "loop.h"
#include "swmr.h"
#include "tcp_proto.h"
#include "tls.h"
#include "util.h"
#include "xprt.h"

#define TCP_MAX_SGE SWMR_MAX_SGE /* iovecs of one region or work request */
#define TCP_STAGING (256u << 10) /* receive staging buffer */
#define TCP_DIRECT_MIN 8192	 /* read payloads this large directly */
#define TCP_LARGE_STAGE 4096	 /* staging read size while frames are large */
#define TCP_RUN_DIRECT_MIN 1024	 /* described payloads read directly */
#define TCP_READ_IOVS 64	 /* iovecs of one read, staging included */
#define TCP_RX_BUDGET (4u << 20) /* bytes per event before yielding */
#define TCP_FLUSH_WRS 64	 /* work requests per sendmsg */
/*
 * A receive event also yields this long after the loop woke up, short of
 * TCP_RX_BUDGET: a peer that answers as fast as it is asked (completions
 * of large WRITEs, each resubmitted at once) never leaves the socket
 * empty, and the loop's other connections, work and timers wait while its
 * event runs.
 */
#define TCP_RX_TIME_NS 100000ull
/*
 * While the loop thread processes received frames, what it posts waits for
 * the end of the batch, to go out in one sendmsg. A batch as long as this
 * goes out early, so that the peer works on it while the rest is parsed:
 * the two ends then run in parallel instead of taking turns.
 */
#define TCP_EARLY_FRAMES 24
#define TCP_EARLY_BYTES (512u << 10)
/*
 * And what waits goes out each time the batch has read this much more: a
 * stream of large payloads parses slowly, and the answers to its first
 * frames (completions, new requests) are what keeps the peer busy while
 * the rest is read.
 */
#define TCP_EARLY_RX (256u << 10)
#define TCP_FLUSH_IOVS 1024
#define TCP_MAX_PENDING 128	  /* accepted sockets waiting for their hello */
#define TCP_HELLO_TIMEOUT_MS 5000 /* a peer silent this long is dropped */
/* accept() out of descriptors or memory: pause this long, doubling */
#define TCP_ACCEPT_PAUSE_MS 100
#define TCP_ACCEPT_PAUSE_MAX_MS 1000
#define TCP_SLAB_WRS 64	  /* work requests allocated at a time */
#define TCP_MAX_SLABS 128 /* so at most 8192 per connection */

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))

struct tcp_wr {
	struct tcp_wr *next;
	uint64_t wr_id;
	unsigned int flags;
	unsigned int cnt;   /* iovecs, header included */
	unsigned int first; /* first iovec sent: 1 once described */
	size_t len;	    /* bytes it puts on the stream */
	enum ibtrs_wc_opcode opcode;
	struct tcp_frame hdr;
	struct iovec iov[]; /* [0] is the header */
};

enum rx_state {
	RX_HDR,
	RX_PAYLOAD,
};

struct tcp_con {
	struct ibtrs_xprt_con base;
	int fd;
	struct tcp_tls *tls;	   /* NULL: plaintext */
	struct ibtrs_work rx_work; /* TLS: read on what is held in memory */
	struct ibtrs_xprt_pd *pd;
	struct ibtrs_loop *loop; /* changed by move() under sq_lock */
	struct ibtrs_loop_src src;
	struct ibtrs_xprt_con_attr attr;
	/* move(): runs on the new loop, then tells the owner */
	struct ibtrs_work move_work;
	void (*move_done)(struct ibtrs_xprt_con *con, int err);
	struct tcp_hello answer; /* server: sent by start() */
	bool has_answer;
	bool started;

	/* send side, under sq_lock */
	pthread_mutex_t sq_lock;
	pthread_cond_t sq_cond; /* signalled when flushing ends */
	struct tcp_wr *sq_head, *sq_tail;
	size_t head_off; /* bytes of sq_head already sent */
	struct tcp_wr *wr_free;
	void *wr_slabs[TCP_MAX_SLABS]; /* work requests, TCP_SLAB_WRS each */
	unsigned int nr_slabs;
	size_t wr_stride;
	bool flushing;
	bool blocked; /* waiting for EPOLLOUT */
	bool in_rx;   /* loop thread is processing received frames */
	struct ibtrs_work flush_work; /* a lazy post asks the loop to flush */
	bool flush_asked;	      /* flush_work queued, not yet run */
	unsigned int sq_frames; /* frames queued since the last flush began */
	size_t sq_bytes;	/* and their payload bytes */
	bool dead;
	int send_err;
	/* payload of the queued TCP_OP_HDRS frame: at most one is queued */
	struct tcp_frame tx_hdrs[TCP_MAX_HDRS];

	/* receive side, loop thread only */
	struct swrq rq;
	char *stage;
	size_t st_head, st_tail;
	enum rx_state state;
	bool rx_large;	      /* the last frame was large: stage little */
	struct tcp_frame cur; /* host order */
	struct iovec dst[TCP_MAX_SGE];
	unsigned int dst_cnt, dst_idx;
	size_t remaining;
	bool failed; /* err() delivered or disconnected */
	/* a TCP_OP_HDRS run: headers run[run_i, run_n) still to come, and
	 * how much of each payload a read put straight into place */
	struct tcp_frame run[TCP_MAX_HDRS]; /* the payload, then host order */
	size_t run_pre[TCP_MAX_HDRS];
	unsigned int run_i, run_n;
};

struct tcp_pending;

struct tcp_listener {
	int fd;
	struct ibtrs_loop *loop;
	struct ibtrs_loop_src src;
	void (*connreq)(void *arg, struct ibtrs_xprt_connreq *req,
			const struct ibtrs_connreq_info *info);
	void *arg;
	struct tcp_pending *pending; /* loop thread only */
	unsigned int nr_pending;
	struct ibtrs_loop_src timer;  /* expires silent peers */
	int tls_mode;		      /* enum ibtrs_tls_mode */
	struct tcp_tls_srv *tls_srv;  /* NULL without TLS */
	struct ibtrs_loop_src resume; /* one-shot: accept again */
	unsigned int pause_ms;	      /* last pause of accept, 0: none */
	bool paused;
};

enum pending_stage {
	PEND_FIRST, /* nothing read: TLS or plaintext? */
	PEND_TLS,   /* TLS handshake */
	PEND_HELLO, /* the hello, in plaintext or in TLS */
};

/* An accepted socket waiting for its hello, then a connection request. */
struct tcp_pending {
	struct tcp_pending *next, **pprev;
	struct tcp_listener *listener;
	struct ibtrs_loop_src src;
	struct tcp_hello hello;
	size_t got;
	enum pending_stage stage;
	struct tcp_tls *tls;
	bool evicted;
	uint64_t accepted_ns;
	struct ibtrs_connreq_info info;
};

static inline struct tcp_con *to_tcp_con(struct ibtrs_xprt_con *con)
{
	return container_of(con, struct tcp_con, base);
}

/* ------------------------------------------------------------------ */
/* connections: common setup                                            */

static void tcp_sockopts(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/*
 * Let the kernel give up on a peer about as fast as the heartbeats would:
 * unacknowledged data for @timeout_ms, or an idle connection whose
 * keepalive probes go unanswered.
 */
static void tcp_set_timeout(int fd, unsigned int timeout_ms)
{
	int one = 1, idle, intvl, cnt = 3;
	unsigned int ut = timeout_ms;

	if (!timeout_ms)
		return;
	idle = (int)(timeout_ms / 2000);
	if (idle < 1)
		idle = 1;
	intvl = idle;
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

static int tcp_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/*
 * Work requests come in slabs, allocated as the queue first grows and kept
 * for reuse: a connection that has warmed up allocates nothing. Under
 * sq_lock once the connection is shared.
 */
static int tcp_wr_grow(struct tcp_con *c)
{
	/* The caller's work requests, and one TCP_OP_HDRS frame. */
	unsigned int i, max = c->attr.max_send_wr + 1;
	char *slab;

	if (c->nr_slabs == TCP_MAX_SLABS ||
	    (size_t)c->nr_slabs * TCP_SLAB_WRS >= max)
		return -ENOMEM;
	slab = calloc(TCP_SLAB_WRS, c->wr_stride);
	if (!slab)
		return -ENOMEM;
	c->wr_slabs[c->nr_slabs++] = slab;
	for (i = 0; i < TCP_SLAB_WRS; i++) {
		struct tcp_wr *wr = (struct tcp_wr *)(slab + i * c->wr_stride);

		wr->next = c->wr_free;
		c->wr_free = wr;
	}
	return 0;
}

static struct tcp_con *tcp_con_alloc(int fd, struct ibtrs_xprt_pd *pd,
				     const struct ibtrs_xprt_con_attr *attr)
{
	struct tcp_con *c;

	if (!attr->max_send_wr || !attr->max_recv_wr || !attr->max_send_sge ||
	    attr->max_send_sge > TCP_MAX_SGE)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = fd;
	c->pd = pd;
	c->attr = *attr;
	tcp_set_timeout(fd, attr->timeout_ms);
	c->wr_stride = sizeof(struct tcp_wr) +
		       (attr->max_send_sge + 1) * sizeof(struct iovec);
	c->stage = malloc(TCP_STAGING);
	if (swrq_init(&c->rq, attr->max_recv_wr) || !c->stage ||
	    tcp_wr_grow(c)) {
		free(c->rq.ent);
		free(c->stage);
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->sq_lock, NULL);
	pthread_cond_init(&c->sq_cond, NULL);
	c->state = RX_HDR;
	return c;
}

static void tcp_destroy(struct ibtrs_xprt_con *xcon)
{
	struct tcp_con *c;

	if (!xcon)
		return;
	c = to_tcp_con(xcon);
	/* Destroyed on the loop thread once started: the flush work is
	 * queued or done, not running. */
	if (c->loop) {
		ibtrs_loop_cancel(c->loop, &c->flush_work);
		ibtrs_loop_cancel(c->loop, &c->rx_work);
		ibtrs_loop_cancel(c->loop, &c->move_work);
	}
	tcp_tls_free(c->tls);
	if (c->fd >= 0)
		close(c->fd);
	pthread_mutex_destroy(&c->sq_lock);
	pthread_cond_destroy(&c->sq_cond);
	while (c->nr_slabs)
		free(c->wr_slabs[--c->nr_slabs]);
	free(c->rq.ent);
	free(c->stage);
	free(c);
}

/* Full blocking I/O with a deadline, for the hello only. */
static int tcp_io_deadline(int fd, void *buf, size_t len, bool out,
			   uint64_t deadline_ns)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n;
		int r = ibtrs_wait_fd(fd, out ? POLLOUT : POLLIN, deadline_ns);

		if (r)
			return r;
		if (out)
			n = send(fd, (char *)buf + done, len - done,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		else
			n = recv(fd, (char *)buf + done, len - done,
				 MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -ECONNRESET;
		done += (size_t)n;
	}
	return 0;
}

static int tcp_connect(struct ibtrs_xprt_pd *xpd, const struct sockaddr *src,
		       const struct sockaddr *dst,
		       const struct ibtrs_xprt_con_attr *attr, const void *priv,
		       void *rsp, unsigned int timeout_ms,
		       struct ibtrs_xprt_con **conp)
{
	uint64_t deadline = ibtrs_now_ns() + (uint64_t)timeout_ms * 1000000;
	struct tcp_hello hello = { .magic = TCP_HELLO_MAGIC };
	socklen_t alen = ibtrs_sockaddr_len(dst);
	char peer[IBTRS_SOCKADDR_STR_LEN];
	struct tcp_tls *tls = NULL;
	struct tcp_con *c;
	int fd, ret, err;
	socklen_t elen = sizeof(err);
	struct pollfd p;

	if (!alen)
		return -EAFNOSUPPORT;
	fd = socket(dst->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0)
		return -errno;
	if (src && bind(fd, src, ibtrs_sockaddr_len(src))) {
		ret = -errno;
		goto close_fd;
	}
	if (connect(fd, dst, alen) && errno != EINPROGRESS) {
		ret = -errno;
		goto close_fd;
	}
	p.fd = fd;
	p.events = POLLOUT;
	do {
		ret = poll(&p, 1, (int)timeout_ms);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0) {
		ret = -errno;
		goto close_fd;
	}
	if (!ret) {
		ret = -ETIMEDOUT;
		goto close_fd;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) || err) {
		ret = err ? -err : -errno;
		goto close_fd;
	}
	tcp_sockopts(fd);
	if (ibtrs_sockaddr_to_str(dst, peer, sizeof(peer)))
		snprintf(peer, sizeof(peer), "?");
	/* TLS only, never a fallback to plaintext. */
	if (ibtrs_xprt_tls_on(attr->tls)) {
		ret = tcp_tls_client(fd, attr->tls, deadline, peer, &tls);
		if (ret)
			goto close_fd;
	}
	memcpy(hello.priv, priv, sizeof(hello.priv));
	ret = tls ? tcp_tls_io_deadline(tls, &hello, sizeof(hello), true,
					deadline)
		  : tcp_io_deadline(fd, &hello, sizeof(hello), true, deadline);
	if (ret)
		goto close_fd;
	ret = tls ? tcp_tls_io_deadline(tls, &hello, sizeof(hello), false,
					deadline)
		  : tcp_io_deadline(fd, &hello, sizeof(hello), false, deadline);
	if (ret)
		goto close_fd;
	if (memcmp(hello.magic, TCP_HELLO_MAGIC, 4)) {
		ret = -EPROTO;
		goto close_fd;
	}
	if (le32toh(hello.status) == TCP_HELLO_TLS_REQUIRED) {
		ibtrs_log(
			IBTRS_LOG_ERR,
			"tcp: server %s requires TLS (this client has TLS off)",
			peer);
		ret = -EPROTONOSUPPORT;
		goto close_fd;
	}
	memcpy(rsp, hello.priv, sizeof(hello.priv));
	if (le32toh(hello.status) != TCP_HELLO_ACCEPT) {
		ret = -ECONNREFUSED;
		goto close_fd;
	}
	c = tcp_con_alloc(fd, xpd, attr);
	if (!c) {
		ret = -ENOMEM;
		goto close_fd;
	}
	c->tls = tls;
	*conp = &c->base;
	return 0;

close_fd:
	tcp_tls_free(tls);
	close(fd);
	return ret;
}

/* ------------------------------------------------------------------ */
/* send side                                                            */

/*
 * Complete every queued work request of a dead connection with
 * -ECANCELED, as verbs flushes a QP in error. Nobody is flushing.
 */
static void tcp_flush_errors(struct tcp_con *c)
{
	struct ibtrs_wc wc = { .status = -ECANCELED };
	struct tcp_wr *list, *wr, *last = NULL;

	pthread_mutex_lock(&c->sq_lock);
	list = c->sq_head;
	c->sq_head = c->sq_tail = NULL;
	c->head_off = 0;
	pthread_mutex_unlock(&c->sq_lock);
	for (wr = list; wr; wr = wr->next) {
		last = wr;
		if (!(wr->flags & IBTRS_XPRT_SIGNALED))
			continue;
		wc.wr_id = wr->wr_id;
		wc.opcode = wr->opcode;
		c->base.handler->wc(&c->base, &wc);
	}
	if (!last)
		return;
	pthread_mutex_lock(&c->sq_lock);
	last->next = c->wr_free;
	c->wr_free = list;
	pthread_mutex_unlock(&c->sq_lock);
}

/*
 * Put a TCP_OP_HDRS frame in front of the frames the next sendmsg will
 * gather, from sq_head on, and take their headers off them: the peer
 * then knows where their payloads go before they arrive. sq_lock held,
 * sq_head a whole frame not yet described, nothing of it sent.
 */
static void tcp_describe(struct tcp_con *c)
{
	unsigned int n = 0, i, niov = 2;
	struct tcp_wr *wr, *h;

	/* As many as the gather takes: it counts the TCP_OP_HDRS frame too. */
	for (wr = c->sq_head; wr && n < TCP_MAX_HDRS && n + 1 < TCP_FLUSH_WRS;
	     wr = wr->next) {
		if (niov + wr->cnt - 1 > TCP_FLUSH_IOVS)
			break;
		niov += wr->cnt - 1;
		n++;
	}
	if (n < 2 || (!c->wr_free && tcp_wr_grow(c)))
		return;
	h = c->wr_free;
	c->wr_free = h->next;
	for (wr = c->sq_head, i = 0; i < n; wr = wr->next, i++) {
		c->tx_hdrs[i] = wr->hdr;
		wr->first = 1;
		wr->len -= sizeof(wr->hdr);
	}
	memset(&h->hdr, 0, sizeof(h->hdr));
	h->hdr.op = TCP_OP_HDRS;
	h->hdr.len = htole32((uint32_t)(n * sizeof(struct tcp_frame)));
	h->iov[0].iov_base = &h->hdr;
	h->iov[0].iov_len = sizeof(h->hdr);
	h->iov[1].iov_base = c->tx_hdrs;
	h->iov[1].iov_len = n * sizeof(struct tcp_frame);
	h->cnt = 2;
	h->first = 0;
	h->len = sizeof(h->hdr) + h->iov[1].iov_len;
	h->flags = 0;
	h->wr_id = 0;
	h->opcode = IBTRS_WC_SEND;
	h->next = c->sq_head;
	c->sq_head = h;
}

/* One gather: sendmsg(), or encrypted into records with TLS. */
static ssize_t tcp_sendv(struct tcp_con *c, struct iovec *iov,
			 unsigned int niov)
{
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = niov };

	if (c->tls)
		return tcp_tls_writev(c->tls, iov, niov);
	return sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* TLS records encrypted but still waiting for the socket. */
static bool tcp_tx_pending(struct tcp_con *c)
{
	return c->tls && tcp_tls_tx_pending(c->tls);
}

/*
 * Send everything queued, many frames per sendmsg. Runs on whichever
 * thread finds nobody else flushing; returns with the queue empty, or
 * with EPOLLOUT armed, or with the connection failed. Whether frames wait
 * instead (a receive batch in progress, a lazy post) tcp_post() decides.
 */
static void tcp_flush(struct tcp_con *c)
{
	struct iovec iov[TCP_FLUSH_IOVS];
	struct ibtrs_wc wcs[TCP_FLUSH_WRS];

	pthread_mutex_lock(&c->sq_lock);
	if (c->flushing || c->blocked || c->dead) {
		pthread_mutex_unlock(&c->sq_lock);
		return;
	}
	c->flushing = true;
	c->sq_frames = 0;
	c->sq_bytes = 0;
	while ((c->sq_head || tcp_tx_pending(c)) && !c->dead) {
		size_t skip = c->head_off, sent;
		unsigned int niov = 0, nwr = 0, nwc = 0, i;
		struct tcp_wr *wr;
		ssize_t n;

		/* Gather: headers and payloads of up to TCP_FLUSH_WRS frames,
		 * the rest of a partly sent first one, then whole ones; the
		 * headers of two or more first, if none are described yet. */
		wr = c->sq_head;
		if (wr && !skip && !wr->first && wr->hdr.op != TCP_OP_HDRS &&
		    wr->next)
			tcp_describe(c);
		wr = c->sq_head;
		if (wr && skip) {
			for (i = wr->first; i < wr->cnt; i++) {
				if (skip >= wr->iov[i].iov_len) {
					skip -= wr->iov[i].iov_len;
					continue;
				}
				iov[niov].iov_base =
					(char *)wr->iov[i].iov_base + skip;
				iov[niov].iov_len = wr->iov[i].iov_len - skip;
				skip = 0;
				niov++;
			}
			nwr++;
			wr = wr->next;
		}
		for (; wr && nwr < TCP_FLUSH_WRS; wr = wr->next) {
			unsigned int cnt = wr->cnt - wr->first;

			if (niov + cnt > TCP_FLUSH_IOVS)
				break;
			memcpy(&iov[niov], wr->iov + wr->first,
			       cnt * sizeof(*iov));
			niov += cnt;
			nwr++;
		}
		pthread_mutex_unlock(&c->sq_lock);

		/* With nothing queued, TLS only pushes out its records. */
		n = tcp_sendv(c, iov, niov);

		pthread_mutex_lock(&c->sq_lock);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				c->blocked = true;
				ibtrs_loop_mod(c->loop, &c->src,
					       EPOLLIN | EPOLLOUT | EPOLLRDHUP);
			} else {
				/* The loop thread sees the shutdown and fails
				 * the connection with this error. */
				c->send_err = -errno;
				shutdown(c->fd, SHUT_RDWR);
			}
			break;
		}
		/*
		 * Retire the frames that left completely. Their work requests
		 * go back before their completions are reported: a completion
		 * may let a request complete, and its caller post again at
		 * once, on this thread or another.
		 */
		sent = (size_t)n + c->head_off;
		nwr = 0;
		while ((wr = c->sq_head) && nwr < TCP_FLUSH_WRS) {
			if (sent < wr->len)
				break;
			sent -= wr->len;
			c->sq_head = wr->next;
			if (!c->sq_head)
				c->sq_tail = NULL;
			if (wr->flags & IBTRS_XPRT_SIGNALED)
				wcs[nwc++] = (struct ibtrs_wc){
					.wr_id = wr->wr_id,
					.opcode = wr->opcode,
				};
			wr->next = c->wr_free;
			c->wr_free = wr;
			nwr++;
		}
		c->head_off = sent;
		if (nwc) {
			pthread_mutex_unlock(&c->sq_lock);
			for (i = 0; i < nwc; i++)
				c->base.handler->wc(&c->base, &wcs[i]);
			pthread_mutex_lock(&c->sq_lock);
		}
	}
	c->flushing = false;
	pthread_cond_broadcast(&c->sq_cond);
	pthread_mutex_unlock(&c->sq_lock);
}

static void tcp_flush_work(struct ibtrs_work *w)
{
	struct tcp_con *c = container_of(w, struct tcp_con, flush_work);

	pthread_mutex_lock(&c->sq_lock);
	c->flush_asked = false;
	pthread_mutex_unlock(&c->sq_lock);
	tcp_flush(c);
}

static int tcp_post(struct tcp_con *c, const struct iovec *iov,
		    unsigned int cnt, const struct tcp_frame *hdr,
		    uint64_t wr_id, unsigned int flags,
		    enum ibtrs_wc_opcode opcode)
{
	struct tcp_wr *wr;
	size_t len = 0;
	unsigned int i;
	bool started, early, lazy, ask = false;

	if (cnt > c->attr.max_send_sge)
		return -EINVAL;
	for (i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	if (len > TCP_MAX_FRAME_LEN)
		return -EMSGSIZE;

	pthread_mutex_lock(&c->sq_lock);
	if (c->dead) {
		pthread_mutex_unlock(&c->sq_lock);
		return -ENOTCONN;
	}
	if (!c->wr_free && tcp_wr_grow(c)) {
		pthread_mutex_unlock(&c->sq_lock);
		return -ENOMEM;
	}
	wr = c->wr_free;
	c->wr_free = wr->next;
	wr->next = NULL;
	wr->wr_id = wr_id;
	wr->flags = flags;
	wr->opcode = opcode;
	wr->hdr = *hdr;
	wr->hdr.len = htole32((uint32_t)len);
	wr->iov[0].iov_base = &wr->hdr;
	wr->iov[0].iov_len = sizeof(wr->hdr);
	if (cnt)
		memcpy(&wr->iov[1], iov, cnt * sizeof(*iov));
	wr->cnt = cnt + 1;
	wr->first = 0;
	wr->len = sizeof(wr->hdr) + len;
	if (c->sq_tail)
		c->sq_tail->next = wr;
	else
		c->sq_head = wr;
	c->sq_tail = wr;
	started = c->started;
	c->sq_frames++;
	c->sq_bytes += len;
	early = c->sq_frames >= TCP_EARLY_FRAMES ||
		c->sq_bytes >= TCP_EARLY_BYTES;
	/*
	 * Frames wait while the loop thread parses a batch: it flushes at
	 * the end. A lazy post from another thread leaves the sending to the
	 * loop thread too: the frames posted until it runs go out in one
	 * sendmsg, the poster makes no system call, and only the first of
	 * them queues the flush.
	 */
	lazy = started && !early &&
	       (c->in_rx ||
		((flags & IBTRS_XPRT_LAZY) && !ibtrs_loop_on_thread(c->loop)));
	if (lazy && !c->in_rx && !c->flush_asked)
		ask = c->flush_asked = true;
	/* Queued under the lock: a move() of the connection to another
	 * loop takes the work item along, and none is left behind. */
	if (ask)
		ibtrs_loop_queue(c->loop, &c->flush_work);
	pthread_mutex_unlock(&c->sq_lock);

	if (!ask && started && !lazy)
		tcp_flush(c);
	return 0;
}

static int tcp_post_send(struct ibtrs_xprt_con *xcon, const struct iovec *iov,
			 unsigned int cnt, uint64_t wr_id, unsigned int flags)
{
	struct tcp_frame hdr = { .op = TCP_OP_SEND };

	return tcp_post(to_tcp_con(xcon), iov, cnt, &hdr, wr_id, flags,
			IBTRS_WC_SEND);
}

static int tcp_post_write(struct ibtrs_xprt_con *xcon, const struct iovec *iov,
			  unsigned int cnt, uint64_t raddr, uint32_t rkey,
			  uint32_t imm, uint64_t wr_id, unsigned int flags)
{
	struct tcp_frame hdr = {
		.op = (flags & IBTRS_XPRT_IMM) ? TCP_OP_WRITE_IMM
					       : TCP_OP_WRITE,
		.imm = htole32(imm),
		.rkey = htole32(rkey),
		.raddr = htole64(raddr),
	};

	return tcp_post(to_tcp_con(xcon), iov, cnt, &hdr, wr_id, flags,
			IBTRS_WC_WRITE);
}

static int tcp_post_recv(struct ibtrs_xprt_con *xcon, void *buf, uint32_t len,
			 uint64_t wr_id)
{
	return swrq_post(&to_tcp_con(xcon)->rq, buf, len, wr_id);
}

/* ------------------------------------------------------------------ */
/* receive side                                                         */

/* Stop the connection; with @err, report it once. Loop thread. */
static void tcp_fail(struct tcp_con *c, int err)
{
	bool started;

	if (c->failed)
		return;
	c->failed = true;
	pthread_mutex_lock(&c->sq_lock);
	c->dead = true;
	/* Another thread may be inside sendmsg with queued buffers. */
	while (c->flushing)
		pthread_cond_wait(&c->sq_cond, &c->sq_lock);
	started = c->started;
	pthread_mutex_unlock(&c->sq_lock);
	if (started)
		ibtrs_loop_del(c->loop, &c->src);
	shutdown(c->fd, SHUT_RDWR);
	tcp_flush_errors(c);
	if (err)
		c->base.handler->err(&c->base, err);
}

static void tcp_disconnect(struct ibtrs_xprt_con *xcon)
{
	tcp_fail(to_tcp_con(xcon), 0);
}

/* The destination of a WRITE: the cursor over the target region. */
static int tcp_mr_resolve(struct tcp_con *c, uint32_t rkey, uint64_t raddr,
			  size_t len)
{
	int n = swmr_resolve(c->pd, rkey, raddr, len, c->dst, TCP_MAX_SGE);

	if (n < 0)
		return n;
	c->dst_cnt = (unsigned int)n;
	c->dst_idx = 0;
	return 0;
}

/* The destination of a SEND or of a header list: one buffer. */
static void tcp_dst_one(struct tcp_con *c, void *buf, size_t len)
{
	c->dst[0].iov_base = buf;
	c->dst[0].iov_len = len;
	c->dst_cnt = 1;
	c->dst_idx = 0;
}

/* Fields every frame header must have right, whatever its op. */
static bool tcp_frame_fields_ok(const struct tcp_frame *f)
{
	return !f->flags && !f->reserved && f->len <= TCP_MAX_FRAME_LEN;
}

/* Header complete in c->cur: check it and set up the destination. */
static int tcp_rx_header(struct tcp_con *c)
{
	struct tcp_frame *f = &c->cur;
	struct swrq_ent *r;

	if (!tcp_frame_fields_ok(f))
		return -EPROTO;
	switch (f->op) {
	case TCP_OP_SEND:
		r = swrq_next(&c->rq, true, f->len, "tcp");
		if (!r)
			return -EPROTO;
		tcp_dst_one(c, r->buf, f->len);
		break;
	case TCP_OP_WRITE_IMM:
		if (!swrq_next(&c->rq, false, 0, "tcp"))
			return -EPROTO;
		/* fall through */
	case TCP_OP_WRITE:
		c->dst_cnt = 0;
		c->dst_idx = 0;
		if (f->len &&
		    tcp_mr_resolve(c, f->rkey, f->raddr, f->len) < 0) {
			ibtrs_log_rl(
				IBTRS_LOG_ERR,
				"tcp: remote access error: key %#x offset %llu len %u",
				f->rkey, (unsigned long long)f->raddr, f->len);
			return -EPROTO;
		}
		break;
	case TCP_OP_HDRS:
		/* Only between runs (a described header is never one). */
		if (f->imm || f->rkey || f->raddr ||
		    f->len % sizeof(struct tcp_frame) ||
		    f->len < 2 * sizeof(struct tcp_frame) ||
		    f->len > sizeof(c->run)) {
			ibtrs_log_rl(IBTRS_LOG_ERR,
				     "tcp: bad header list of %u bytes",
				     f->len);
			return -EPROTO;
		}
		tcp_dst_one(c, c->run, f->len);
		break;
	default:
		ibtrs_log_rl(IBTRS_LOG_ERR, "tcp: unknown frame op %u", f->op);
		return -EPROTO;
	}
	c->remaining = f->len;
	return 0;
}

/*
 * A TCP_OP_HDRS payload arrived: the headers of the next frames, checked
 * here as far as a header alone can be, so that a read may place their
 * payloads before each one's turn comes (tcp_rx_read()).
 */
static int tcp_run_start(struct tcp_con *c)
{
	unsigned int i, n = c->cur.len / sizeof(struct tcp_frame);

	for (i = 0; i < n; i++) {
		struct tcp_frame *f = &c->run[i];

		tcp_frame_decode(f, f); /* in place */
		if ((f->op != TCP_OP_SEND && f->op != TCP_OP_WRITE &&
		     f->op != TCP_OP_WRITE_IMM) ||
		    !tcp_frame_fields_ok(f)) {
			ibtrs_log_rl(IBTRS_LOG_ERR,
				     "tcp: bad described frame: op %u len %u",
				     f->op, f->len);
			return -EPROTO;
		}
		c->run_pre[i] = 0;
	}
	c->run_i = 0;
	c->run_n = n;
	return 0;
}

/* Payload complete: deliver the completion. */
static void tcp_rx_complete(struct tcp_con *c)
{
	struct ibtrs_wc wc = { .byte_len = c->cur.len };

	if (c->cur.op == TCP_OP_WRITE)
		return;
	wc.wr_id = c->rq.ent[c->rq.head].wr_id;
	swrq_pop(&c->rq);
	if (c->cur.op == TCP_OP_SEND) {
		wc.opcode = IBTRS_WC_RECV;
	} else {
		wc.opcode = IBTRS_WC_RECV_IMM;
		wc.imm = c->cur.imm;
	}
	c->base.handler->wc(&c->base, &wc);
}

/* Move up to @n staged bytes into the destination cursor. */
static size_t tcp_copy_out(struct tcp_con *c, const char *src, size_t n)
{
	size_t done = 0;

	while (done < n && c->dst_idx < c->dst_cnt) {
		struct iovec *d = &c->dst[c->dst_idx];
		size_t l = d->iov_len < n - done ? d->iov_len : n - done;

		memcpy(d->iov_base, src + done, l);
		d->iov_base = (char *)d->iov_base + l;
		d->iov_len -= l;
		done += l;
		if (!d->iov_len)
			c->dst_idx++;
	}
	return done;
}

/* Account @n payload bytes that reached the destination. */
static void tcp_advance_dst(struct tcp_con *c, size_t n)
{
	while (n && c->dst_idx < c->dst_cnt) {
		struct iovec *d = &c->dst[c->dst_idx];
		size_t l = d->iov_len < n ? d->iov_len : n;

		d->iov_base = (char *)d->iov_base + l;
		d->iov_len -= l;
		n -= l;
		if (!d->iov_len)
			c->dst_idx++;
	}
}

/* Parse every complete frame in the staging buffer and the run. */
static int tcp_rx_parse(struct tcp_con *c)
{
	int ret;

	while (!c->failed) {
		size_t avail = c->st_tail - c->st_head;

		if (c->state == RX_HDR) {
			size_t pre = 0;
			bool run = c->run_i < c->run_n;

			if (run) {
				c->cur = c->run[c->run_i];
				pre = c->run_pre[c->run_i++];
			} else {
				if (avail < sizeof(struct tcp_frame))
					break;
				tcp_frame_decode(&c->cur,
						 c->stage + c->st_head);
				c->st_head += sizeof(struct tcp_frame);
				avail -= sizeof(struct tcp_frame);
			}
			ret = tcp_rx_header(c);
			if (ret)
				return ret;
			/* Read ahead straight into place (tcp_rx_read()). */
			if (pre) {
				tcp_advance_dst(c, pre);
				c->remaining -= pre;
			}
			if (run)
				c->rx_large = c->cur.len >= TCP_RUN_DIRECT_MIN;
			else if (c->cur.op != TCP_OP_HDRS)
				c->rx_large = c->cur.len >= TCP_DIRECT_MIN;
			c->state = RX_PAYLOAD;
		}
		if (c->remaining) {
			size_t n = avail < c->remaining ? avail : c->remaining;

			tcp_copy_out(c, c->stage + c->st_head, n);
			c->st_head += n;
			c->remaining -= n;
			if (c->remaining)
				break;
		}
		c->state = RX_HDR;
		if (c->cur.op == TCP_OP_HDRS) {
			ret = tcp_run_start(c);
			if (ret)
				return ret;
		} else {
			tcp_rx_complete(c);
		}
	}
	if (c->st_head == c->st_tail)
		c->st_head = c->st_tail = 0;
	return 0;
}

/*
 * The destinations of the described payloads after the current one, in
 * @iov (at most @max entries): the large ones, up to the first one that
 * is small, goes to a posted receive or does not resolve (its turn will
 * tell). Marks them in @ahead (run indices); returns the entries used.
 */
static unsigned int tcp_run_ahead(struct tcp_con *c, struct iovec *iov,
				  unsigned int max, unsigned int *ahead,
				  unsigned int *nahead)
{
	unsigned int k, n = 0;

	*nahead = 0;
	for (k = c->run_i; k < c->run_n && n < max; k++) {
		const struct tcp_frame *f = &c->run[k];
		int m;

		if (!f->len) {
			ahead[(*nahead)++] = k;
			continue;
		}
		if (f->len < TCP_RUN_DIRECT_MIN || f->op == TCP_OP_SEND)
			break;
		m = swmr_resolve(c->pd, f->rkey, f->raddr, f->len, iov + n,
				 max - n);
		if (m < 0)
			break;
		n += (unsigned int)m;
		ahead[(*nahead)++] = k;
	}
	return n;
}

/*
 * One read: straight into the destination when a large payload is due,
 * and into those of the large described payloads after it.
 */
static ssize_t tcp_rx_read(struct tcp_con *c)
{
	struct iovec iov[TCP_READ_IOVS];
	unsigned int ahead[TCP_MAX_HDRS];
	unsigned int n = 0, i, nahead = 0;
	size_t want = 0, left;
	ssize_t r;

	if (c->st_tail == TCP_STAGING && c->st_head) {
		memmove(c->stage, c->stage + c->st_head,
			c->st_tail - c->st_head);
		c->st_tail -= c->st_head;
		c->st_head = 0;
	}
	if (c->st_head == c->st_tail) {
		/* rx_large: the current payload is large (described ones
		 * from TCP_RUN_DIRECT_MIN on). */
		if (c->state == RX_PAYLOAD && c->remaining && c->rx_large) {
			for (i = c->dst_idx;
			     i < c->dst_cnt && n < TCP_READ_IOVS - 1; i++) {
				iov[n++] = c->dst[i];
				want += c->dst[i].iov_len;
			}
		}
		/* The rest of the run, if nothing of the stream comes
		 * before it. */
		if ((c->state == RX_HDR || want == c->remaining) &&
		    c->run_i < c->run_n)
			n += tcp_run_ahead(c, iov + n, TCP_READ_IOVS - 1 - n,
					   ahead, &nahead);
	}
	/*
	 * Many small frames: read as much as there is. Large frames: stage
	 * only a little, so that the next payload is mostly read straight
	 * into its destination rather than copied out of the staging buffer.
	 */
	iov[n].iov_base = c->stage + c->st_tail;
	iov[n].iov_len = TCP_STAGING - c->st_tail;
	if ((c->rx_large || n) && iov[n].iov_len > TCP_LARGE_STAGE)
		iov[n].iov_len = TCP_LARGE_STAGE;
	n++;
	r = c->tls ? tcp_tls_readv(c->tls, iov, n) : readv(c->fd, iov, (int)n);
	if (r <= 0)
		return r;
	left = (size_t)r;
	if (want) {
		size_t direct = left < want ? left : want;

		tcp_advance_dst(c, direct);
		c->remaining -= direct;
		left -= direct;
	}
	for (i = 0; i < nahead && left; i++) {
		size_t len = c->run[ahead[i]].len;

		c->run_pre[ahead[i]] = left < len ? left : len;
		left -= c->run_pre[ahead[i]];
	}
	c->st_tail += left;
	return r;
}

static void tcp_con_event(struct ibtrs_loop_src *src, uint32_t events)
{
	struct tcp_con *c = container_of(src, struct tcp_con, src);
	uint64_t end_ns = ibtrs_loop_now_ns(c->loop) + TCP_RX_TIME_NS;
	size_t budget = 0, flushed_at = 0;
	int ret = 0;

	if (events & EPOLLOUT) {
		pthread_mutex_lock(&c->sq_lock);
		c->blocked = false;
		pthread_mutex_unlock(&c->sq_lock);
		ibtrs_loop_mod(c->loop, &c->src, EPOLLIN | EPOLLRDHUP);
	}
	pthread_mutex_lock(&c->sq_lock);
	c->in_rx = true;
	pthread_mutex_unlock(&c->sq_lock);

	while (!c->failed && budget < TCP_RX_BUDGET) {
		ssize_t r = tcp_rx_read(c);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				ret = -errno;
			break;
		}
		if (!r) {
			ret = -ECONNRESET;
			break;
		}
		budget += (size_t)r;
		ret = tcp_rx_parse(c);
		if (ret)
			break;
		if (budget - flushed_at >= TCP_EARLY_RX) {
			tcp_flush(c);
			flushed_at = budget;
		}
		/* Time is up: a socket still readable comes back in the
		 * loop's next epoll_wait, after its queued work. */
		if (ibtrs_now_ns() >= end_ns)
			break;
	}

	pthread_mutex_lock(&c->sq_lock);
	c->in_rx = false;
	if (!ret && c->send_err)
		ret = c->send_err;
	pthread_mutex_unlock(&c->sq_lock);
	if (ret) {
		tcp_fail(c, ret);
		return;
	}
	if (c->failed)
		return;
	tcp_flush(c);
	/* Records read but not yet decrypted and delivered: the socket will
	 * not wake the loop for them. */
	if (c->tls && tcp_tls_rx_pending(c->tls))
		ibtrs_loop_queue(c->loop, &c->rx_work);
}

static void tcp_rx_work(struct ibtrs_work *w)
{
	struct tcp_con *c = container_of(w, struct tcp_con, rx_work);

	if (!c->failed)
		tcp_con_event(&c->src, EPOLLIN);
}

/* The receive side now, as an EPOLLIN would run it. */
static int tcp_drain(struct ibtrs_xprt_con *xcon)
{
	struct tcp_con *c = to_tcp_con(xcon);
	bool ready;

	pthread_mutex_lock(&c->sq_lock);
	ready = c->started && !c->in_rx;
	pthread_mutex_unlock(&c->sq_lock);
	if (ready && !c->failed)
		tcp_con_event(&c->src, EPOLLIN);
	return 0;
}

/*
 * The kernel's struct tcp_info past the part the C library declares, up
 * to the segment counters (Linux 4.2 on; older kernels return less).
 */
struct tcp_info_ext {
	struct tcp_info base;
	uint64_t pacing_rate, max_pacing_rate, bytes_acked, bytes_received;
	uint32_t segs_out, segs_in;
};

/* Retransmits as the kernel counts them: lost segments and timeouts. */
static int tcp_health(struct ibtrs_xprt_con *xcon, struct ibtrs_xprt_health *h)
{
	struct tcp_con *c = to_tcp_con(xcon);
	struct tcp_info_ext ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len))
		return -errno;
	if (len < sizeof(ti))
		return -EOPNOTSUPP;
	h->retrans = ti.base.tcpi_total_retrans;
	h->segs_out = ti.segs_out;
	h->rtt_us = ti.base.tcpi_rtt;
	return 0;
}

static int tcp_start(struct ibtrs_xprt_con *xcon, struct ibtrs_loop *loop)
{
	struct tcp_con *c = to_tcp_con(xcon);
	int ret;

	ret = tcp_set_nonblock(c->fd);
	if (ret)
		return ret;
	if (c->has_answer) {
		struct iovec v = { .iov_base = &c->answer,
				   .iov_len = sizeof(c->answer) };
		/* With TLS, records that cannot leave yet leave first at
		 * the next flush. */
		ssize_t n = tcp_sendv(c, &v, 1);

		if (n != (ssize_t)sizeof(c->answer))
			return n < 0 ? -errno : -EIO;
	}
	c->loop = loop;
	c->src.fd = c->fd;
	c->src.cb = tcp_con_event;
	c->flush_work.fn = tcp_flush_work;
	c->rx_work.fn = tcp_rx_work;
	/* Started before the loop can see it, so that a failure reported
	 * by the loop thread at once also removes it from the loop. */
	pthread_mutex_lock(&c->sq_lock);
	c->started = true;
	pthread_mutex_unlock(&c->sq_lock);
	ret = ibtrs_loop_add(loop, &c->src, EPOLLIN | EPOLLRDHUP);
	if (ret) {
		pthread_mutex_lock(&c->sq_lock);
		c->started = false;
		pthread_mutex_unlock(&c->sq_lock);
		return ret;
	}
	pthread_mutex_lock(&c->sq_lock);
	if (c->blocked)
		ibtrs_loop_mod(loop, &c->src, EPOLLIN | EPOLLOUT | EPOLLRDHUP);
	pthread_mutex_unlock(&c->sq_lock);
	tcp_flush(c);
	/* The peer's first frames may have come with the handshake. */
	if (c->tls && tcp_tls_rx_pending(c->tls))
		ibtrs_loop_queue(loop, &c->rx_work);
	return 0;
}

/* The new loop's side of tcp_move(). */
static void tcp_move_work(struct ibtrs_work *w)
{
	struct tcp_con *c = container_of(w, struct tcp_con, move_work);
	uint32_t ev = EPOLLIN | EPOLLRDHUP;
	int ret;

	pthread_mutex_lock(&c->sq_lock);
	/* A flush that ran meanwhile and found the socket full armed
	 * nothing: the socket was on no loop. */
	if (c->blocked)
		ev |= EPOLLOUT;
	ret = ibtrs_loop_add(c->loop, &c->src, ev);
	pthread_mutex_unlock(&c->sq_lock);
	if (ret) {
		tcp_fail(c, 0);
		c->move_done(&c->base, ret);
		return;
	}
	c->move_done(&c->base, 0);
	/* What the old loop had read into the staging buffer or the record
	 * layer and not yet delivered: the socket does not signal it. */
	if (!c->failed)
		ibtrs_loop_queue(c->loop, &c->rx_work);
}

/*
 * The old loop's thread: off its epoll now, so that no event of the
 * connection runs there again; the work items queued there follow it.
 * Under sq_lock, so that a post on another thread queues its flush on
 * one loop or the other, never on one the connection left.
 */
static int tcp_move(struct ibtrs_xprt_con *xcon, struct ibtrs_loop *loop,
		    void (*done)(struct ibtrs_xprt_con *con, int err))
{
	struct tcp_con *c;
	bool flush;

	if (!xcon || !loop || !done)
		return -EINVAL;
	c = to_tcp_con(xcon);
	if (c->failed || !c->started)
		return -ENOTCONN;
	if (loop == c->loop)
		return -EINVAL;
	c->move_done = done;
	c->move_work.fn = tcp_move_work;
	pthread_mutex_lock(&c->sq_lock);
	ibtrs_loop_del(c->loop, &c->src);
	flush = c->flush_asked; /* queued: it cannot be running */
	ibtrs_loop_cancel(c->loop, &c->flush_work);
	ibtrs_loop_cancel(c->loop, &c->rx_work);
	c->loop = loop;
	ibtrs_loop_queue(loop, &c->move_work);
	if (flush)
		ibtrs_loop_queue(loop, &c->flush_work);
	pthread_mutex_unlock(&c->sq_lock);
	return 0;
}

/* ------------------------------------------------------------------ */
/* listener                                                             */

static void pending_free(struct tcp_pending *p, bool close_fd)
{
	struct tcp_listener *l = p->listener;

	*p->pprev = p->next;
	if (p->next)
		p->next->pprev = p->pprev;
	l->nr_pending--;
	ibtrs_loop_del(l->loop, &p->src);
	tcp_tls_free(p->tls);
	if (close_fd)
		close(p->src.fd);
	free(p);
}

static const char *pending_peer(struct tcp_pending *p, char *buf, size_t len)
{
	if (ibtrs_sockaddr_to_str((struct sockaddr *)&p->info.peer, buf, len))
		snprintf(buf, len, "?");
	return buf;
}

/*
 * Refuse in plaintext with @status, which the client reads as the cause,
 * after reading what it sent: closing on unread bytes would reset the
 * connection and lose the answer.
 */
static void pending_refuse(struct tcp_pending *p, uint32_t status)
{
	struct tcp_hello h = { .magic = TCP_HELLO_MAGIC,
			       .status = htole32(status) };
	char scratch[4096];
	unsigned int i;

	for (i = 0; i < 16; i++)
		if (recv(p->src.fd, scratch, sizeof(scratch), MSG_DONTWAIT) <=
		    0)
			break;
	if (send(p->src.fd, &h, sizeof(h), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		ibtrs_log(IBTRS_LOG_DEBUG, "tcp: refusal: %s", strerror(errno));
	shutdown(p->src.fd, SHUT_WR);
	pending_free(p, true);
}

/*
 * The first byte tells a TLS ClientHello from a plaintext hello. Return:
 * 0 to go on, nonzero to wait for the byte or when @p is freed.
 */
static int pending_first(struct tcp_pending *p)
{
	struct tcp_listener *l = p->listener;
	char peer[IBTRS_SOCKADDR_STR_LEN];
	unsigned char b;
	ssize_t n;

	n = recv(p->src.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return -EAGAIN;
	if (n <= 0) {
		pending_free(p, true);
		return 1;
	}
	if (b != TCP_TLS_HANDSHAKE_BYTE) {
		p->stage = PEND_HELLO;
		return 0;
	}
	if (!l->tls_srv) {
		ibtrs_log_rl(
			IBTRS_LOG_ERR,
			"tcp: TLS client %s refused: TLS is off on this server",
			pending_peer(p, peer, sizeof(peer)));
		pending_refuse(p, TCP_HELLO_NO_TLS);
		return 1;
	}
	if (tcp_tls_server(l->tls_srv, p->src.fd,
			   pending_peer(p, peer, sizeof(peer)), &p->tls)) {
		pending_free(p, true);
		return 1;
	}
	p->stage = PEND_TLS;
	return 0;
}

static void pending_event(struct ibtrs_loop_src *src, uint32_t events)
{
	struct tcp_pending *p = container_of(src, struct tcp_pending, src);
	struct tcp_listener *l = p->listener;
	char peer[IBTRS_SOCKADDR_STR_LEN];
	bool want_out = false;
	socklen_t alen;
	ssize_t n;
	int r;

	(void)events;
	if (p->evicted) {
		pending_free(p, true);
		return;
	}
	if (p->stage == PEND_FIRST) {
		r = pending_first(p);
		if (r)
			return;
	}
	if (p->stage == PEND_TLS) {
		r = tcp_tls_handshake_step(p->tls, &want_out);
		if (r && r != -EAGAIN) {
			pending_free(p, true);
			return;
		}
		ibtrs_loop_mod(l->loop, &p->src,
			       EPOLLIN | EPOLLRDHUP |
				       (want_out ? EPOLLOUT : 0));
		if (r)
			return;
		p->stage = PEND_HELLO;
	}
	if (p->tls) {
		struct iovec v = { .iov_base = (char *)&p->hello + p->got,
				   .iov_len = sizeof(p->hello) - p->got };

		/* The handshake's last flight leaves first. */
		if (tcp_tls_tx_pending(p->tls)) {
			if (tcp_tls_writev(p->tls, NULL, 0) < 0 &&
			    errno != EAGAIN) {
				pending_free(p, true);
				return;
			}
			if (!tcp_tls_tx_pending(p->tls))
				ibtrs_loop_mod(l->loop, &p->src,
					       EPOLLIN | EPOLLRDHUP);
		}
		n = tcp_tls_readv(p->tls, &v, 1);
	} else {
		n = recv(src->fd, (char *)&p->hello + p->got,
			 sizeof(p->hello) - p->got, MSG_DONTWAIT);
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		pending_free(p, true);
		return;
	}
	p->got += (size_t)n;
	if (p->got < sizeof(p->hello))
		return;
	if (memcmp(p->hello.magic, TCP_HELLO_MAGIC, 4) || p->hello.status) {
		ibtrs_log_rl(IBTRS_LOG_WARN,
			     "tcp: connection without a valid hello dropped");
		pending_free(p, true);
		return;
	}
	if (!p->tls && l->tls_mode == IBTRS_TLS_REQUIRE) {
		ibtrs_log_rl(
			IBTRS_LOG_ERR,
			"tcp: plaintext client %s refused: this server requires TLS",
			pending_peer(p, peer, sizeof(peer)));
		pending_refuse(p, TCP_HELLO_TLS_REQUIRED);
		return;
	}
	memcpy(p->info.priv, p->hello.priv, sizeof(p->info.priv));
	if (p->tls)
		snprintf(p->info.tls_identity, sizeof(p->info.tls_identity),
			 "%s", tcp_tls_identity(p->tls));
	alen = sizeof(p->info.local);
	getsockname(src->fd, (struct sockaddr *)&p->info.local, &alen);
	/* Unlink; the request now belongs to the connreq callback. */
	*p->pprev = p->next;
	if (p->next)
		p->next->pprev = p->pprev;
	l->nr_pending--;
	ibtrs_loop_del(l->loop, &p->src);
	p->next = NULL;
	p->pprev = &p->next;
	l->connreq(l->arg, (struct ibtrs_xprt_connreq *)p, &p->info);
}

/*
 * Drop a waiting peer. It may have an event in the batch the loop is
 * handling, so it is shut down here and freed by its own callback when it
 * reads the end of the stream.
 */
static void pending_evict(struct tcp_pending *p)
{
	if (p->evicted)
		return;
	p->evicted = true;
	shutdown(p->src.fd, SHUT_RDWR);
}

static void listener_timer(struct ibtrs_loop_src *src, uint32_t events)
{
	struct tcp_listener *l = container_of(src, struct tcp_listener, timer);
	uint64_t now = ibtrs_now_ns(), v;
	struct tcp_pending *p;

	(void)events;
	if (read(src->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	for (p = l->pending; p; p = p->next)
		if (now - p->accepted_ns > TCP_HELLO_TIMEOUT_MS * 1000000ull)
			pending_evict(p);
}

/*
 * accept() failed for want of descriptors or memory: the connection stays
 * in the backlog and the socket readable, so the loop would spin on it.
 * Stop watching the socket for a while instead, doubling the pause while
 * it goes on; the connections there are keep being served meanwhile.
 */
static void listener_pause(struct tcp_listener *l, int err)
{
	struct itimerspec once = { 0 };

	l->pause_ms = l->pause_ms ? l->pause_ms * 2 : TCP_ACCEPT_PAUSE_MS;
	if (l->pause_ms > TCP_ACCEPT_PAUSE_MAX_MS)
		l->pause_ms = TCP_ACCEPT_PAUSE_MAX_MS;
	ibtrs_log_rl(IBTRS_LOG_WARN, "tcp: accept: %s; not accepting for %u ms",
		     strerror(err), l->pause_ms);
	once.it_value.tv_sec = l->pause_ms / 1000;
	once.it_value.tv_nsec = (long)(l->pause_ms % 1000) * 1000000;
	if (timerfd_settime(l->resume.fd, 0, &once, NULL))
		return; /* keep polling rather than never accept again */
	ibtrs_loop_del(l->loop, &l->src);
	l->paused = true;
}

static void listener_resume(struct ibtrs_loop_src *src, uint32_t events)
{
	struct tcp_listener *l = container_of(src, struct tcp_listener, resume);
	uint64_t v;

	(void)events;
	if (read(src->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	if (l->paused && !ibtrs_loop_add(l->loop, &l->src, EPOLLIN))
		l->paused = false;
}

static void listener_event(struct ibtrs_loop_src *src, uint32_t events)
{
	struct tcp_listener *l = container_of(src, struct tcp_listener, src);
	int i;

	(void)events;
	for (i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t alen = sizeof(ss);
		struct tcp_pending *p;
		int fd;

		fd = accept4(l->fd, (struct sockaddr *)&ss, &alen,
			     SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			int err = errno;

			if (err == EMFILE || err == ENFILE || err == ENOBUFS ||
			    err == ENOMEM)
				listener_pause(l, err);
			else if (err != EAGAIN && err != EINTR)
				ibtrs_log_rl(IBTRS_LOG_WARN, "tcp: accept: %s",
					     strerror(err));
			return;
		}
		l->pause_ms = 0;
		/* Too many silent peers: the oldest one goes. */
		if (l->nr_pending >= TCP_MAX_PENDING) {
			struct tcp_pending *old = l->pending;

			while (old->next && !old->next->evicted)
				old = old->next;
			pending_evict(old);
		}
		p = calloc(1, sizeof(*p));
		if (!p) {
			close(fd);
			continue;
		}
		tcp_sockopts(fd);
		p->listener = l;
		p->accepted_ns = ibtrs_now_ns();
		p->info.peer = ss;
		p->src.fd = fd;
		p->src.cb = pending_event;
		p->next = l->pending;
		if (p->next)
			p->next->pprev = &p->next;
		p->pprev = &l->pending;
		l->pending = p;
		l->nr_pending++;
		if (ibtrs_loop_add(l->loop, &p->src, EPOLLIN | EPOLLRDHUP))
			pending_free(p, true);
	}
}

static int tcp_listen(struct ibtrs_loop *loop, const struct sockaddr *addr,
		      const struct ibtrs_xprt_tls *tls,
		      void (*connreq)(void *arg, struct ibtrs_xprt_connreq *req,
				      const struct ibtrs_connreq_info *info),
		      void *arg, struct ibtrs_xprt_listener **lp)
{
	struct itimerspec tick = { .it_interval.tv_sec = 1,
				   .it_value.tv_sec = 1 };
	socklen_t alen = ibtrs_sockaddr_len(addr);
	struct tcp_listener *l;
	int one = 1, zero = 0, ret;

	if (!alen)
		return -EAFNOSUPPORT;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->tls_mode = tls ? tls->mode : IBTRS_TLS_OFF;
	if (ibtrs_xprt_tls_on(tls)) {
		ret = tcp_tls_srv_new(tls, &l->tls_srv);
		if (ret)
			goto free_l;
	}
	l->resume.fd = -1;
	l->fd = socket(addr->sa_family,
		       SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (l->fd < 0) {
		ret = -errno;
		goto free_l;
	}
	setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (addr->sa_family == AF_INET6)
		setsockopt(l->fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero,
			   sizeof(zero));
	if (bind(l->fd, addr, alen) || listen(l->fd, 128)) {
		ret = -errno;
		goto close_fd;
	}
	l->loop = loop;
	l->connreq = connreq;
	l->arg = arg;
	l->src.fd = l->fd;
	l->src.cb = listener_event;
	l->timer.fd =
		timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (l->timer.fd < 0) {
		ret = -errno;
		goto close_fd;
	}
	l->timer.cb = listener_timer;
	if (timerfd_settime(l->timer.fd, 0, &tick, NULL)) {
		ret = -errno;
		goto close_timer;
	}
	/* Made now: it is needed when descriptors have run out. */
	l->resume.fd =
		timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (l->resume.fd < 0) {
		ret = -errno;
		goto close_timer;
	}
	l->resume.cb = listener_resume;
	ret = ibtrs_loop_add(loop, &l->resume, EPOLLIN);
	if (ret)
		goto close_timer;
	ret = ibtrs_loop_add(loop, &l->timer, EPOLLIN);
	if (ret)
		goto del_resume;
	ret = ibtrs_loop_add(loop, &l->src, EPOLLIN);
	if (ret)
		goto del_timer;
	*lp = (struct ibtrs_xprt_listener *)l;
	return 0;

del_timer:
	ibtrs_loop_del(loop, &l->timer);
del_resume:
	ibtrs_loop_del(loop, &l->resume);
close_timer:
	if (l->resume.fd >= 0)
		close(l->resume.fd);
	close(l->timer.fd);
close_fd:
	close(l->fd);
free_l:
	tcp_tls_srv_free(l->tls_srv);
	free(l);
	return ret;
}

static int tcp_listener_addr(struct ibtrs_xprt_listener *xl,
			     struct sockaddr_storage *addr)
{
	struct tcp_listener *l = (struct tcp_listener *)xl;
	socklen_t alen = sizeof(*addr);

	return getsockname(l->fd, (struct sockaddr *)addr, &alen) ? -errno : 0;
}

/* Loop thread, or after the loop stopped. */
static void tcp_listener_close(struct ibtrs_xprt_listener *xl)
{
	struct tcp_listener *l = (struct tcp_listener *)xl;

	if (!l)
		return;
	ibtrs_loop_del(l->loop, &l->src);
	ibtrs_loop_del(l->loop, &l->timer);
	ibtrs_loop_del(l->loop, &l->resume);
	while (l->pending)
		pending_free(l->pending, true);
	close(l->resume.fd);
	close(l->timer.fd);
	close(l->fd);
	/* Accepted connections hold their own reference. */
	tcp_tls_srv_free(l->tls_srv);
	free(l);
}

static int tcp_accept(struct ibtrs_xprt_connreq *req, struct ibtrs_xprt_pd *pd,
		      const struct ibtrs_xprt_con_attr *attr, const void *priv,
		      struct ibtrs_xprt_con **conp)
{
	struct tcp_pending *p = (struct tcp_pending *)req;
	struct tcp_con *c;

	c = tcp_con_alloc(p->src.fd, pd, attr);
	if (!c) {
		tcp_tls_free(p->tls);
		close(p->src.fd);
		free(p);
		return -ENOMEM;
	}
	c->tls = p->tls;
	memcpy(c->answer.magic, TCP_HELLO_MAGIC, 4);
	c->answer.status = htole32(TCP_HELLO_ACCEPT);
	memcpy(c->answer.priv, priv, sizeof(c->answer.priv));
	c->has_answer = true;
	free(p);
	*conp = &c->base;
	return 0;
}

static void tcp_reject(struct ibtrs_xprt_connreq *req, const void *priv)
{
	struct tcp_pending *p = (struct tcp_pending *)req;
	struct tcp_hello h = { .magic = TCP_HELLO_MAGIC,
			       .status = htole32(TCP_HELLO_REJECT) };

	memcpy(h.priv, priv, sizeof(h.priv));
	if (p->tls) {
		struct iovec v = { .iov_base = &h, .iov_len = sizeof(h) };

		if (tcp_tls_writev(p->tls, &v, 1) < 0)
			ibtrs_log(IBTRS_LOG_DEBUG, "tcp: reject: %s",
				  strerror(errno));
		tcp_tls_free(p->tls);
	} else if (send(p->src.fd, &h, sizeof(h), MSG_NOSIGNAL | MSG_DONTWAIT) <
		   0) {
		ibtrs_log(IBTRS_LOG_DEBUG, "tcp: reject: %s", strerror(errno));
	}
	close(p->src.fd);
	free(p);
}

/* Loop thread: the receive side, which alone reads c->pd, is there. */
static int tcp_bind_pd(struct ibtrs_xprt_con *xcon, struct ibtrs_xprt_pd *pd)
{
	to_tcp_con(xcon)->pd = pd;
	return 0;
}

static int tcp_name(struct ibtrs_xprt_con *xcon, bool peer,
		    struct sockaddr_storage *ss)
{
	struct tcp_con *c = to_tcp_con(xcon);
	socklen_t alen = sizeof(*ss);

	return peer ? getpeername(c->fd, (struct sockaddr *)ss, &alen)
		    : getsockname(c->fd, (struct sockaddr *)ss, &alen);
}

static void tcp_addr_str(struct ibtrs_xprt_con *xcon, char *local, char *peer,
			 size_t len)
{
	ibtrs_xprt_addr_str(xcon, tcp_name, local, peer, len);
}

static void tcp_sec_str(struct ibtrs_xprt_con *xcon, char *buf, size_t len)
{
	struct tcp_con *c = to_tcp_con(xcon);

	if (!len)
		return;
	if (c->tls)
		tcp_tls_str(c->tls, buf, len);
	else
		snprintf(buf, len, "off");
}

const struct ibtrs_xprt_ops ibtrs_xprt_tcp_ops = {
	.name = "tcp",
	.pd_alloc = swmr_pd_alloc,
	.pd_free = swmr_pd_free,
	.mr_alloc = swmr_mr_alloc,
	.mr_map = swmr_mr_map,
	.mr_unmap = swmr_mr_unmap,
	.mr_free = swmr_mr_free,
	.connect = tcp_connect,
	.listen = tcp_listen,
	.listener_addr = tcp_listener_addr,
	.listener_close = tcp_listener_close,
	.accept = tcp_accept,
	.reject = tcp_reject,
	.start = tcp_start,
	.disconnect = tcp_disconnect,
	.destroy = tcp_destroy,
	.bind_pd = tcp_bind_pd,
	.move = tcp_move,
	.post_send = tcp_post_send,
	.post_recv = tcp_post_recv,
	.post_write = tcp_post_write,
	.drain = tcp_drain,
	.health = tcp_health,
	.addr_str = tcp_addr_str,
	.sec_str = tcp_sec_str,
};
