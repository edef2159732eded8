// SPDX-License-Identifier: MIT
/*
 * tcp_move.c - the tcp backend's move(): a started connection handed over
 * from one loop to another, against its ops table.
 *
 * A server connection starts on loop A; its first receive completes on
 * A's thread. Then both loops are parked in a work item, and with them
 * parked: a work item queued on A calls move() to B; a lazy send
 * (IBTRS_XPRT_LAZY) posted from the main thread queues its flush on A,
 * behind that item; the raw client writes a SEND frame, which arrives
 * while the connection is on neither loop once A moved it. A is let go
 * (the move runs), then B: the owner's done() must run on B with 0, the
 * lazy send must leave and complete on B (the flush went over with the
 * connection: left on A it would run there, after the move), and the
 * frame must be received on B (the socket was on no epoll when it came).
 * Later traffic completes on B too, and the connection is disconnected
 * and destroyed from B. move() of a NULL connection answers -EINVAL (the
 * probe: the backend can move), and to its own loop -EINVAL.
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "loop.h"
#include "rawtcp.h"
#include "tcp/tcp_proto.h"
#include "test.h"
#include "xprt.h"
#include "xsrv.h"

#define NR_RECVS 16
#define RBUF_LEN 64
#define WAIT_MS 10000
#define WATCHDOG_S 60
#define LAZY_WR 77u

static const struct ibtrs_xprt_con_attr con_attr = {
	.max_send_wr = 16,
	.max_recv_wr = NR_RECVS,
	.max_send_sge = 1,
};

static struct {
	struct xsrv x; /* loop A, listener, connection */
	struct ibtrs_loop *b;
	struct ibtrs_work park_a, park_b, move_item;

	/* under x.lock */
	bool parked_a, parked_b, go_a, go_b;
	unsigned int recvs, recvs_on_a, recvs_on_b;
	bool moved;
	int move_err, move_ret;
	bool done_on_b;
	bool lazy_done, lazy_on_b;
} srv;

#define SRV_WAIT(pred) XSRV_WAIT(&srv.x, pred, WAIT_MS)

static void srv_wc(struct ibtrs_xprt_con *con, const struct ibtrs_wc *wc)
{
	pthread_mutex_lock(&srv.x.lock);
	if (wc->opcode == IBTRS_WC_RECV && !wc->status) {
		srv.recvs++;
		srv.recvs_on_a += ibtrs_loop_on_thread(srv.x.loop);
		srv.recvs_on_b += ibtrs_loop_on_thread(srv.b);
		pthread_mutex_unlock(&srv.x.lock);
		/* The receive goes back: loop thread, as the contract says. */
		CHECK_EQ(srv.x.ops->post_recv(con, srv.x.rbuf[wc->wr_id],
					      RBUF_LEN, wc->wr_id),
			 0);
		pthread_mutex_lock(&srv.x.lock);
	} else if (wc->opcode == IBTRS_WC_SEND && wc->wr_id == LAZY_WR &&
		   !wc->status) {
		srv.lazy_done = true;
		srv.lazy_on_b = ibtrs_loop_on_thread(srv.b);
	} else {
		if (!srv.x.bad_line)
			srv.x.bad_line = __LINE__;
	}
	pthread_cond_broadcast(&srv.x.cond);
	pthread_mutex_unlock(&srv.x.lock);
}

/* A work item that holds its loop until the main thread lets it go. */
static void park(bool *parked, bool *go)
{
	pthread_mutex_lock(&srv.x.lock);
	*parked = true;
	pthread_cond_broadcast(&srv.x.cond);
	SRV_WAIT(*go);
	CHECK(*go);
	pthread_mutex_unlock(&srv.x.lock);
}

static void park_a_fn(struct ibtrs_work *w)
{
	(void)w;
	park(&srv.parked_a, &srv.go_a);
}

static void park_b_fn(struct ibtrs_work *w)
{
	(void)w;
	park(&srv.parked_b, &srv.go_b);
}

static void moved(struct ibtrs_xprt_con *con, int err)
{
	(void)con;
	pthread_mutex_lock(&srv.x.lock);
	srv.moved = true;
	srv.move_err = err;
	srv.done_on_b = ibtrs_loop_on_thread(srv.b);
	pthread_cond_broadcast(&srv.x.cond);
	pthread_mutex_unlock(&srv.x.lock);
}

/* On A, off the event batch, as move() wants. */
static void move_fn(struct ibtrs_work *w)
{
	int ret;

	(void)w;
	CHECK_EQ(srv.x.ops->move(srv.x.con, srv.x.loop, moved), -EINVAL);
	ret = srv.x.ops->move(srv.x.con, srv.b, moved);
	pthread_mutex_lock(&srv.x.lock);
	srv.move_ret = ret;
	pthread_mutex_unlock(&srv.x.lock);
}

/* One SEND frame of the client, 8 bytes. */
static void client_send(int fd, uint64_t v)
{
	struct tcp_frame f = { .op = TCP_OP_SEND, .len = sizeof(v) };
	unsigned char buf[sizeof(struct tcp_frame) + sizeof(v)];

	rt_frame_encode(buf, &f);
	v = htole64(v);
	memcpy(buf + sizeof(struct tcp_frame), &v, sizeof(v));
	CHECK_EQ(rt_send_all(fd, buf, sizeof(buf), WAIT_MS, NULL), 0);
}

static void noop(void *arg)
{
	(void)arg;
}

static void do_disconnect(void *arg)
{
	(void)arg;
	srv.x.ops->disconnect(srv.x.con);
}

static void do_listener_close(void *arg)
{
	(void)arg;
	srv.x.ops->listener_close(srv.x.listener);
}

int main(void)
{
	struct sockaddr_storage bound;
	struct tcp_hello hello;
	struct ibtrs_xprt_con *con;
	struct tcp_frame f;
	char payload[RBUF_LEN];
	struct iovec iov;
	uint64_t v;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	t_watchdog(WATCHDOG_S);
	if (xsrv_init(&srv.x, &con_attr, srv_wc, NR_RECVS, RBUF_LEN))
		return T_SKIP;
	CHECK_EQ(srv.x.ops->move(NULL, NULL, NULL), -EINVAL);
	CHECK_EQ(ibtrs_loop_create(&srv.b, "srv-b", NULL, NULL, 0), 0);
	srv.park_a.fn = park_a_fn;
	srv.park_b.fn = park_b_fn;
	srv.move_item.fn = move_fn;
	if (xsrv_listen(&srv.x, &bound)) {
		ibtrs_loop_destroy(srv.b);
		xsrv_fini(&srv.x);
		return T_SKIP;
	}
	fd = rt_connect((struct sockaddr *)&bound, sizeof(struct sockaddr_in),
			WAIT_MS);
	xsrv_hello(fd, &hello, WAIT_MS);
	con = xsrv_accepted(&srv.x, WAIT_MS);

	/* Before: on A. */
	client_send(fd, 1);
	pthread_mutex_lock(&srv.x.lock);
	SRV_WAIT(srv.recvs == 1);
	CHECK_EQ(srv.recvs, 1);
	CHECK_EQ(srv.recvs_on_a, 1);
	pthread_mutex_unlock(&srv.x.lock);

	/* Both loops parked; the move queued on A, then a lazy send. */
	ibtrs_loop_queue(srv.x.loop, &srv.park_a);
	ibtrs_loop_queue(srv.b, &srv.park_b);
	pthread_mutex_lock(&srv.x.lock);
	SRV_WAIT(srv.parked_a && srv.parked_b);
	CHECK(srv.parked_a && srv.parked_b);
	pthread_mutex_unlock(&srv.x.lock);
	ibtrs_loop_queue(srv.x.loop, &srv.move_item);
	v = htole64(LAZY_WR);
	iov.iov_base = &v;
	iov.iov_len = sizeof(v);
	CHECK_EQ(srv.x.ops->post_send(con, &iov, 1, LAZY_WR,
				      IBTRS_XPRT_SIGNALED | IBTRS_XPRT_LAZY),
		 0);
	/* Nothing left: the flush waits behind the parked loop. */
	CHECK(!xsrv_readable(fd, 100));

	/* A moves it: off A, nothing on B yet; the frame comes now. */
	pthread_mutex_lock(&srv.x.lock);
	srv.go_a = true;
	pthread_cond_broadcast(&srv.x.cond);
	pthread_mutex_unlock(&srv.x.lock);
	ibtrs_loop_call(srv.x.loop, noop, NULL); /* the move ran */
	pthread_mutex_lock(&srv.x.lock);
	CHECK_EQ(srv.move_ret, 0);
	CHECK(!srv.moved);
	pthread_mutex_unlock(&srv.x.lock);
	client_send(fd, 2);
	CHECK(!xsrv_readable(fd, 100)); /* and the flush did not run on A */

	/* B takes it over. */
	pthread_mutex_lock(&srv.x.lock);
	srv.go_b = true;
	pthread_cond_broadcast(&srv.x.cond);
	SRV_WAIT(srv.moved && srv.lazy_done && srv.recvs == 2);
	printf("moved: done %s (%d), lazy send %s on B, receives %u on A, %u on B\n",
	       srv.moved ? (srv.done_on_b ? "on B" : "NOT on B") : "never",
	       srv.move_err,
	       srv.lazy_done ? (srv.lazy_on_b ? "done" : "NOT") : "not done",
	       srv.recvs_on_a, srv.recvs_on_b);
	CHECK(srv.moved);
	CHECK(srv.done_on_b);
	CHECK_EQ(srv.move_err, 0);
	CHECK(srv.lazy_done);
	CHECK(srv.lazy_on_b);
	CHECK_EQ(srv.recvs, 2);
	CHECK_EQ(srv.recvs_on_b, 1);
	pthread_mutex_unlock(&srv.x.lock);
	rt_recv_frame(fd, &f, payload, sizeof(payload), WAIT_MS);
	CHECK_EQ(f.op, TCP_OP_SEND);
	CHECK_EQ(f.len, sizeof(v));
	memcpy(&v, payload, sizeof(v));
	CHECK_EQ(le64toh(v), LAZY_WR);

	/* Later traffic: on B. */
	client_send(fd, 3);
	pthread_mutex_lock(&srv.x.lock);
	SRV_WAIT(srv.recvs == 3);
	CHECK_EQ(srv.recvs_on_b, 2);
	CHECK_EQ(srv.recvs_on_a, 1);
	CHECK_EQ(srv.x.errs, 0);
	CHECK_EQ(srv.x.bad_line, 0);
	pthread_mutex_unlock(&srv.x.lock);

	ibtrs_loop_call(srv.b, do_disconnect, NULL);
	srv.x.ops->destroy(con);
	ibtrs_loop_call(srv.x.loop, do_listener_close, NULL);
	close(fd);
	ibtrs_loop_destroy(srv.b);
	xsrv_fini(&srv.x);
	printf("tcp_move: ok\n");
	return 0;
}
