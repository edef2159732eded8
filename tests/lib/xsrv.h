/* SPDX-License-Identifier: MIT */
/*
 * xsrv.h - a server of the tcp backend, driven through its ops table, for
 * tests that talk to it from a raw socket (tests/lib/rawtcp.h): a loop, a
 * PD and a listener on 127.0.0.1 that accepts one connection, posts its
 * receives and starts it; connection errors are counted.
 *
 * A test embeds a struct xsrv in its own server state, passes the wc()
 * of the connection's handler to xsrv_init(), and waits on the xsrv's lock
 * and cond with XSRV_WAIT().
 */
#ifndef IBTRS_XSRV_H
#define IBTRS_XSRV_H

#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "loop.h"
#include "rawtcp.h"
#include "tcp/tcp_proto.h"
#include "test.h"
#include "xprt.h"

struct xsrv {
	const struct ibtrs_xprt_ops *ops;
	const struct ibtrs_xprt_con_attr *attr;
	struct ibtrs_xprt_handler handler; /* the test's wc(), xsrv_err() */
	struct ibtrs_loop *loop;
	struct ibtrs_xprt_pd *pd;
	struct ibtrs_xprt_listener *listener;
	uint8_t answer[IBTRS_XPRT_PRIV_LEN]; /* private data of accept */
	/* receive buffers, posted at accept with wr_id i */
	unsigned int nr_recvs;
	size_t rbuf_len;
	unsigned char **rbuf;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock */
	struct ibtrs_xprt_con *con;
	bool accepted;
	int accept_ret;
	unsigned int errs;
	int err;
	int bad_line; /* the first test line that found a wrong completion */
};

/* Wait on (x)->cond, (x)->lock held, until @pred or @ms passed. */
#define XSRV_WAIT(x, pred, ms)                                             \
	do {                                                               \
		struct timespec ts_ = t_deadline(ms);                      \
		while (!(pred))                                            \
			if (pthread_cond_timedwait(&(x)->cond, &(x)->lock, \
						   &ts_))                  \
				break;                                     \
	} while (0)

/* The handler's err(): count the error, keep the last one. */
static inline void xsrv_err(struct ibtrs_xprt_con *con, int err)
{
	struct xsrv *x = con->ctx;

	pthread_mutex_lock(&x->lock);
	x->errs++;
	x->err = err;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

/* Record @line of the test as finding a wrong completion; wake waiters. */
static inline void xsrv_bad(struct xsrv *x, int line)
{
	pthread_mutex_lock(&x->lock);
	if (!x->bad_line)
		x->bad_line = line;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

/*
 * Find the tcp backend and set up @x: a loop, a PD, @nr_recvs zeroed
 * receive buffers of @rbuf_len bytes. Its connection will have @attr, and
 * @wc for completions. -ENOENT when there is no tcp backend (skip the test).
 */
static inline int
xsrv_init(struct xsrv *x, const struct ibtrs_xprt_con_attr *attr,
	  void (*wc)(struct ibtrs_xprt_con *, const struct ibtrs_wc *),
	  unsigned int nr_recvs, size_t rbuf_len)
{
	unsigned int i;

	x->ops = ibtrs_xprt_find("tcp");
	if (!x->ops) {
		fprintf(stderr, "tcp backend not found: skip\n");
		return -ENOENT;
	}
	x->attr = attr;
	x->handler.wc = wc;
	x->handler.err = xsrv_err;
	pthread_mutex_init(&x->lock, NULL);
	t_cond_init(&x->cond);
	x->nr_recvs = nr_recvs;
	x->rbuf_len = rbuf_len;
	x->rbuf = calloc(nr_recvs, sizeof(*x->rbuf));
	CHECK(x->rbuf);
	for (i = 0; i < nr_recvs; i++) {
		x->rbuf[i] = calloc(1, rbuf_len);
		CHECK(x->rbuf[i]);
	}
	CHECK_EQ(ibtrs_loop_create(&x->loop, "srv", NULL, NULL, 0), 0);
	CHECK_EQ(x->ops->pd_alloc(&x->pd, 4), 0);
	return 0;
}

/* Undo xsrv_init(), once the connection and the listener are gone. */
static inline void xsrv_fini(struct xsrv *x)
{
	unsigned int i;

	x->ops->pd_free(x->pd);
	ibtrs_loop_destroy(x->loop);
	for (i = 0; i < x->nr_recvs; i++)
		free(x->rbuf[i]);
	free(x->rbuf);
	pthread_cond_destroy(&x->cond);
	pthread_mutex_destroy(&x->lock);
}

static inline void xsrv_connreq(void *arg, struct ibtrs_xprt_connreq *req,
				const struct ibtrs_connreq_info *info)
{
	struct xsrv *x = arg;
	const struct ibtrs_xprt_ops *ops = x->ops;
	struct ibtrs_xprt_con *con = NULL;
	unsigned int i;
	int ret;

	(void)info;
	pthread_mutex_lock(&x->lock);
	ret = x->accepted ? -EBUSY : 0; /* one connection only */
	pthread_mutex_unlock(&x->lock);
	if (ret) {
		ops->reject(req, x->answer);
		return;
	}
	ret = ops->accept(req, x->pd, x->attr, x->answer, &con);
	if (!ret) {
		con->handler = &x->handler;
		con->ctx = x;
		for (i = 0; !ret && i < x->nr_recvs; i++)
			ret = ops->post_recv(con, x->rbuf[i], x->rbuf_len, i);
	}
	if (!ret)
		ret = ops->start(con, x->loop);
	if (ret && con) {
		ops->disconnect(con);
		ops->destroy(con);
		con = NULL;
	}
	pthread_mutex_lock(&x->lock);
	x->con = con;
	x->accept_ret = ret;
	x->accepted = true;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

/*
 * Listen on 127.0.0.1, on a port of the kernel's choice, into @bound.
 * The error of listen() when it fails (skip the test, after xsrv_fini()).
 */
static inline int xsrv_listen(struct xsrv *x, struct sockaddr_storage *bound)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int ret;

	ret = x->ops->listen(x->loop, (struct sockaddr *)&sin, NULL,
			     xsrv_connreq, x, &x->listener);
	if (ret) {
		fprintf(stderr, "cannot listen on 127.0.0.1: %s: skip\n",
			strerror(-ret));
		return ret;
	}
	CHECK_EQ(x->ops->listener_addr(x->listener, bound), 0);
	return 0;
}

/* Client side: the hello out on @fd, the server's accept answer back. */
static inline void xsrv_hello(int fd, struct tcp_hello *hello, int ms)
{
	memset(hello, 0, sizeof(*hello));
	memcpy(hello->magic, TCP_HELLO_MAGIC, sizeof(hello->magic));
	memset(hello->priv, 0x5c, sizeof(hello->priv));
	CHECK_EQ(rt_send_all(fd, hello, sizeof(*hello), ms, NULL), 0);
	CHECK_EQ(rt_recv_all(fd, hello, sizeof(*hello), ms), 0);
	CHECK(!memcmp(hello->magic, TCP_HELLO_MAGIC, 4));
	CHECK_EQ(le32toh(hello->status), TCP_HELLO_ACCEPT);
}

/* Wait up to @ms for the server's side of the connection, started. */
static inline struct ibtrs_xprt_con *xsrv_accepted(struct xsrv *x, int ms)
{
	struct ibtrs_xprt_con *con;

	pthread_mutex_lock(&x->lock);
	XSRV_WAIT(x, x->accepted, ms);
	CHECK(x->accepted);
	CHECK_EQ(x->accept_ret, 0);
	con = x->con;
	pthread_mutex_unlock(&x->lock);
	return con;
}

static inline void xsrv_do_disconnect(void *arg)
{
	struct xsrv *x = arg;
	struct ibtrs_xprt_con *con;

	pthread_mutex_lock(&x->lock);
	con = x->con;
	pthread_mutex_unlock(&x->lock);
	x->ops->disconnect(con);
}

static inline void xsrv_do_listener_close(void *arg)
{
	struct xsrv *x = arg;

	x->ops->listener_close(x->listener);
}

/* Disconnect and destroy the connection, close the listener. */
static inline void xsrv_close(struct xsrv *x)
{
	ibtrs_loop_call(x->loop, xsrv_do_disconnect, x);
	x->ops->destroy(x->con);
	ibtrs_loop_call(x->loop, xsrv_do_listener_close, x);
}

/* Whether @fd has bytes to read (or an end of stream) within @ms. */
static inline bool xsrv_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;

	do {
		n = poll(&p, 1, ms);
	} while (n < 0 && errno == EINTR);
	return n == 1 && (p.revents & POLLIN);
}

#endif /* IBTRS_XSRV_H */
