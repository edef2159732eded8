// SPDX-License-Identifier: MIT
/*
 * tcp_yield.c - a receive event of the tcp backend gives way to the rest
 * of its loop while its socket is still readable.
 *
 * A server connection of the backend on 127.0.0.1 takes SEND frames from a
 * raw client socket, and an eventfd is watched by the same loop. The
 * handler spends SLOW_US on each frame and keeps the socket from running
 * dry: for each frame it takes, it sends the client's next one itself
 * (PREFILL are in flight from the start, NR_FRAMES in all), so a loopback
 * delivery puts it in the server's socket before the handler returns. On
 * the first frame it also makes the eventfd readable.
 *
 * An event that read until the socket is empty would run all NR_FRAMES
 * handlers (some 13 ms) before the eventfd's callback. The backend ends an
 * event once TCP_RX_TIME_NS (100 us) have passed since the loop woke up;
 * each read here brings PREFILL frames, 800 us of handlers, so an event
 * ends after its first read and the callback runs after two of them, 8
 * frames. MAX_BEFORE allows twice that. Every frame must still arrive
 * once, in order.
 */
#include <endian.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loop.h"
#include "rawtcp.h"
#include "tcp/tcp_proto.h"
#include "test.h"
#include "xprt.h"
#include "xsrv.h"

#define NR_FRAMES 64
#define PREFILL 4
#define SLOW_US 200
/* Frames that may be handled before the eventfd's turn. */
#define MAX_BEFORE (4 * PREFILL)
#define NR_RECVS 8
#define REQ_LEN 16
#define FRAME_LEN (sizeof(struct tcp_frame) + REQ_LEN)
#define WAIT_MS 10000
#define WATCHDOG_S 60

static const struct ibtrs_xprt_con_attr con_attr = {
	.max_send_wr = 16,
	.max_recv_wr = NR_RECVS,
	.max_send_sge = 1,
};

static struct {
	struct xsrv x;
	struct ibtrs_loop_src efd;

	/* under x.lock */
	int cli_fd;
	unsigned int handled;
	unsigned int efd_at; /* frames handled when the eventfd's turn came */
	bool efd_ran;
} srv;

#define SRV_WAIT(pred) XSRV_WAIT(&srv.x, pred, WAIT_MS)

/* Frame @i as the client sends it: a SEND of its index, then 0x5as. */
static void frame_encode(unsigned char *p, unsigned int i)
{
	struct tcp_frame w = { .op = TCP_OP_SEND, .len = REQ_LEN };
	uint64_t v = htole64(i);

	rt_frame_encode(p, &w);
	memcpy(p + sizeof(w), &v, sizeof(v));
	memset(p + sizeof(w) + sizeof(v), 0x5a, REQ_LEN - sizeof(v));
}

/* The client sends frames [@from, @to) at once; false if it could not. */
static bool client_send(int fd, unsigned int from, unsigned int to)
{
	unsigned char buf[PREFILL * FRAME_LEN];
	unsigned int i;

	for (i = from; i < to; i++)
		frame_encode(buf + (i - from) * FRAME_LEN, i);
	return send(fd, buf, (to - from) * FRAME_LEN,
		    MSG_DONTWAIT | MSG_NOSIGNAL) ==
	       (ssize_t)((to - from) * FRAME_LEN);
}

static void srv_recv(struct ibtrs_xprt_con *con, const struct ibtrs_wc *wc)
{
	unsigned int n, slot;
	uint64_t idx;
	int fd;

	pthread_mutex_lock(&srv.x.lock);
	n = srv.handled;
	fd = srv.cli_fd;
	pthread_mutex_unlock(&srv.x.lock);
	slot = n % NR_RECVS;
	if (wc->status || wc->wr_id != slot || wc->byte_len != REQ_LEN) {
		xsrv_bad(&srv.x, __LINE__);
		return;
	}
	memcpy(&idx, srv.x.rbuf[slot], sizeof(idx));
	if (le64toh(idx) != n) {
		xsrv_bad(&srv.x, __LINE__);
		return;
	}
	/* Frame n + PREFILL goes out as frame n is taken. */
	if (n + PREFILL < NR_FRAMES &&
	    !client_send(fd, n + PREFILL, n + PREFILL + 1)) {
		xsrv_bad(&srv.x, __LINE__);
		return;
	}
	if (!n && eventfd_write(srv.efd.fd, 1)) {
		xsrv_bad(&srv.x, __LINE__);
		return;
	}
	usleep(SLOW_US);
	if (srv.x.ops->post_recv(con, srv.x.rbuf[slot], REQ_LEN, slot)) {
		xsrv_bad(&srv.x, __LINE__);
		return;
	}
	pthread_mutex_lock(&srv.x.lock);
	srv.handled = n + 1;
	pthread_cond_broadcast(&srv.x.cond);
	pthread_mutex_unlock(&srv.x.lock);
}

static void srv_wc(struct ibtrs_xprt_con *con, const struct ibtrs_wc *wc)
{
	if (wc->opcode != IBTRS_WC_RECV) {
		xsrv_bad(&srv.x, __LINE__);
		return;
	}
	srv_recv(con, wc);
}

/* The eventfd's callback, on the same loop thread. */
static void efd_cb(struct ibtrs_loop_src *src, uint32_t events)
{
	eventfd_t v;

	(void)events;
	if (eventfd_read(src->fd, &v))
		return;
	pthread_mutex_lock(&srv.x.lock);
	if (!srv.efd_ran) {
		srv.efd_ran = true;
		srv.efd_at = srv.handled;
	}
	pthread_cond_broadcast(&srv.x.cond);
	pthread_mutex_unlock(&srv.x.lock);
}

static void efd_del(void *arg)
{
	(void)arg;
	ibtrs_loop_del(srv.x.loop, &srv.efd);
}

int main(void)
{
	struct tcp_hello hello;
	struct sockaddr_storage bound;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	t_watchdog(WATCHDOG_S);

	if (xsrv_init(&srv.x, &con_attr, srv_wc, NR_RECVS, REQ_LEN))
		return T_SKIP;
	srv.cli_fd = -1;
	srv.efd.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	CHECK(srv.efd.fd >= 0);
	srv.efd.cb = efd_cb;
	CHECK_EQ(ibtrs_loop_add(srv.x.loop, &srv.efd, EPOLLIN), 0);
	if (xsrv_listen(&srv.x, &bound)) {
		ibtrs_loop_call(srv.x.loop, efd_del, NULL);
		close(srv.efd.fd);
		xsrv_fini(&srv.x);
		return T_SKIP;
	}

	fd = rt_connect((struct sockaddr *)&bound, sizeof(struct sockaddr_in),
			WAIT_MS);
	xsrv_hello(fd, &hello, WAIT_MS);
	xsrv_accepted(&srv.x, WAIT_MS);
	/* The loop thread sends the rest, one per frame it takes. */
	pthread_mutex_lock(&srv.x.lock);
	srv.cli_fd = fd;
	pthread_mutex_unlock(&srv.x.lock);
	CHECK(client_send(fd, 0, PREFILL));

	pthread_mutex_lock(&srv.x.lock);
	SRV_WAIT((srv.handled == NR_FRAMES && srv.efd_ran) || srv.x.errs ||
		 srv.x.bad_line);
	fprintf(stderr,
		"%u of %u frames handled, %u errors (%d), bad completion at "
		"line %d; the eventfd's turn %s after %u frames\n",
		srv.handled, NR_FRAMES, srv.x.errs, srv.x.err, srv.x.bad_line,
		srv.efd_ran ? "came" : "never came", srv.efd_at);
	CHECK_EQ(srv.x.bad_line, 0);
	CHECK_EQ(srv.x.errs, 0);
	CHECK_EQ(srv.handled, NR_FRAMES);
	CHECK(srv.efd_ran);
	/* Written during the first frame's handler, seen after it. */
	CHECK(srv.efd_at >= 1);
	CHECK(srv.efd_at <= MAX_BEFORE);
	pthread_mutex_unlock(&srv.x.lock);
	printf("receive event yielded: the eventfd ran after %u of %u "
	       "frames\n",
	       srv.efd_at, NR_FRAMES);

	ibtrs_loop_call(srv.x.loop, efd_del, NULL);
	close(srv.efd.fd);
	xsrv_close(&srv.x);
	close(fd);
	xsrv_fini(&srv.x);
	printf("tcp_yield: ok\n");
	return 0;
}
