// SPDX-License-Identifier: MIT
/*
 * tcp_batch.c - the tcp backend's early flush, against its ops table.
 *
 * While the loop thread parses a batch of received frames, what the
 * completion handler posts is held back, to leave in one sendmsg when the
 * batch ends; once TCP_EARLY_FRAMES (24) frames are queued they go out
 * early, so that the peer works on them while the rest is parsed.
 *
 * A server connection of the backend on 127.0.0.1 answers every receive
 * with one SEND. The client is a raw socket, so that it can put 96 SEND
 * frames into the server's socket before the server reads any of them:
 * the server loop is parked in a work item while they are written and
 * until the client's send queue is acknowledged, then it reads all 96 in
 * one batch. From inside the handler, the server looks at the client's
 * socket: after 16 receives (fewer than 24 answers queued) nothing may be
 * readable yet, after 64 the answers flushed early must be: whole answer
 * frames, the first ones in order, whether they came with their own
 * headers or in TCP_OP_HDRS runs (parsed from a peek at the queue). Since
 * nothing else sends on the connection while the handler runs, a backend
 * without the early flush never makes them readable there. Then the
 * client reads the 96 answers, in order.
 *
 * Then two sends posted from the main thread while the loop is idle: a
 * plain one goes out from the posting thread, a lazy one
 * (IBTRS_XPRT_LAZY) from the loop thread, as their completions show.
 *
 * Last, a stream of large frames: 16 SENDs of 32 KiB, each answered as
 * before, fewer than 24 answers and only a few bytes of them. What waits
 * goes out each time the batch has read another TCP_EARLY_RX (256 KiB).
 * The client writes each frame only once the server has begun the
 * one before it, and the handler waits until that next frame is in the
 * server's socket: the loop reads all 16 in one batch and never finds
 * the socket empty between them. After 4 frames (128 KiB) no answer may
 * be readable yet; after 12 (384 KiB) the first ones must be, in order.
 * Without the rule they would leave only at the end of the batch.
 *
 * The backend's clock stands still here (ibtrs_set_test_clock()): an
 * event then never ends for time (TCP_RX_TIME_NS, unit/tcp_yield), and
 * each batch runs until the socket is empty, however slow the machine.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "loop.h"
#include "rawtcp.h"
#include "tcp/tcp_proto.h"
#include "test.h"
#include "xprt.h"
#include "xsrv.h"

#define NR_FRAMES 96
#define PROBE_LOW 16 /* receives handled when nothing may have left */
#define PROBE_AT 64  /* receives handled when early answers must be there */
#define NR_RECVS 128
#define BIG_FRAMES 16
#define BIG_LEN (32u << 10)
#define BIG_LOW 4 /* large frames handled when nothing may have left */
#define BIG_AT 12 /* large frames handled when early answers must be there */
#define RBUF_LEN BIG_LEN
#define REQ_LEN 16
#define RSP_LEN 8
#define RSP_FRAME (sizeof(struct tcp_frame) + RSP_LEN)
/* Most bytes the answers take on the wire: a TCP_OP_HDRS frame per two. */
#define RSP_STREAM_MAX (NR_FRAMES * RSP_FRAME + NR_FRAMES / 2 * RSP_FRAME)
#define WAIT_MS 10000
#define PROBE_WAIT_MS 5000
#define WATCHDOG_S 60

static const struct ibtrs_xprt_ops *ops;

/* wr_id of the two sends posted from the main thread, plain then lazy */
#define LAZY_WR 1000u

static const struct ibtrs_xprt_con_attr con_attr = {
	.max_send_wr = 256,
	.max_recv_wr = 256,
	.max_send_sge = 2,
};

/* The server; "loop thread" fields are touched by the server loop only. */
static struct {
	struct xsrv x; /* loop, listener, connection, errors, receive buffers */
	struct ibtrs_work park;

	/* under x.lock */
	int cli_fd; /* the raw client socket, probed by the handler */
	bool parked, go;
	unsigned int recvs, sends;
	unsigned int big_sent; /* large frames the client has written */
	bool big_low_readable, big_readable;
	unsigned int big_answers; /* whole answers queued at the probe */
	bool big_in_order;
	bool low_readable;
	bool probed, now_readable, readable;
	int probe_bytes;
	/* whole answers queued at the probe; the first ones in order */
	unsigned int probe_answers;
	bool probe_in_order;
	unsigned long probe_runs; /* TCP_OP_HDRS frames among them */
	double probe_wait;
	/* sends with wr_id LAZY_WR + i: completed, and on the loop thread */
	bool lazy_done[2], lazy_on_loop[2];

	/* loop thread */
	uint64_t rsp[NR_FRAMES + BIG_FRAMES];
	unsigned int handled;
} srv;

/* Wait on srv.x.cond, srv.x.lock held, until @pred or WAIT_MS passed. */
#define SRV_WAIT(pred) XSRV_WAIT(&srv.x, pred, WAIT_MS)

static int inq_bytes(int fd)
{
	int n = 0;

	if (ioctl(fd, FIONREAD, &n))
		return -1;
	return n;
}

/*
 * The answers queued in @fd, peeked at without taking them: whole answer
 * frames into *@answers, whether they are answers @base, @base + 1, ...
 * in *@in_order, the TCP_OP_HDRS frames before them into *@runs. The
 * queue starts at a frame boundary: the client has read every answer
 * before @base.
 */
static void peek_answers(int fd, unsigned int base, unsigned int *answers,
			 bool *in_order, unsigned long *runs)
{
	static unsigned char buf[RSP_STREAM_MAX];
	static struct tcp_frame f[NR_FRAMES];
	static size_t off[NR_FRAMES];
	size_t used, plain = 0;
	unsigned int n, i;
	uint64_t v;
	ssize_t got;

	got = recv(fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (got < 0)
		got = 0;
	n = rt_parse_frames(buf, (size_t)got, f, off, NR_FRAMES, &used);
	*in_order = true;
	for (i = 0; i < n; i++) {
		memcpy(&v, buf + off[i], sizeof(v));
		if (f[i].op != TCP_OP_SEND || f[i].len != RSP_LEN ||
		    le64toh(v) != base + i)
			*in_order = false;
		plain += sizeof(struct tcp_frame) + f[i].len;
	}
	/* A run of k frames takes a header more than k plain frames. */
	*runs = (used - plain) / sizeof(struct tcp_frame);
	*answers = n;
}

/* The fill byte of large frame @k. */
static unsigned char big_fill(unsigned int k)
{
	return (unsigned char)(0x40 + k);
}

/*
 * Wait until the server acknowledged everything @fd sent: true, or false
 * after @ms.
 */
static bool client_acked(int fd, int ms)
{
	double end = t_now() + ms / 1000.0;
	int outq;

	for (;;) {
		if (ioctl(fd, SIOCOUTQ, &outq))
			return false;
		if (!outq)
			return true;
		if (t_now() > end)
			return false;
		usleep(100);
	}
}

/*
 * Receive @n, in @slot, checked: answer it with its index, post the
 * receive again. False if either post failed.
 */
static bool srv_answer(struct ibtrs_xprt_con *con, unsigned int n,
		       unsigned int slot)
{
	struct iovec iov;

	srv.rsp[n] = htole64(n);
	iov.iov_base = &srv.rsp[n];
	iov.iov_len = RSP_LEN;
	/* Not under srv.x.lock: the send may complete from inside the post. */
	if (ops->post_send(con, &iov, 1, n, IBTRS_XPRT_SIGNALED) ||
	    ops->post_recv(con, srv.x.rbuf[slot], RBUF_LEN, slot)) {
		xsrv_bad(&srv.x, __LINE__);
		return false;
	}
	srv.handled = n + 1;
	return true;
}

/*
 * Large frame @k of the stream, receive @n in @slot: answer it, probe the
 * client after BIG_LOW and BIG_AT of them, then let the client write the
 * next one and wait until it is all in the server's socket.
 */
static void srv_big_recv(struct ibtrs_xprt_con *con, const struct ibtrs_wc *wc,
			 unsigned int n, unsigned int slot)
{
	unsigned int k = n - NR_FRAMES, answers = 0;
	bool low = false, readable = false, in_order = false, next;
	unsigned long runs = 0;
	uint64_t idx;
	int fd;

	memcpy(&idx, srv.x.rbuf[slot], sizeof(idx));
	if (k >= BIG_FRAMES || wc->byte_len != BIG_LEN || le64toh(idx) != n ||
	    srv.x.rbuf[slot][BIG_LEN - 1] != big_fill(k)) {
		xsrv_bad(&srv.x, __LINE__);
		return;
	}
	if (!srv_answer(con, n, slot))
		return;

	pthread_mutex_lock(&srv.x.lock);
	fd = srv.cli_fd;
	pthread_mutex_unlock(&srv.x.lock);
	if (k + 1 == BIG_LOW)
		low = xsrv_readable(fd, 0);
	if (k + 1 == BIG_AT) {
		readable = xsrv_readable(fd, PROBE_WAIT_MS);
		peek_answers(fd, NR_FRAMES, &answers, &in_order, &runs);
	}

	pthread_mutex_lock(&srv.x.lock);
	srv.recvs = n + 1;
	if (k + 1 == BIG_LOW)
		srv.big_low_readable = low;
	if (k + 1 == BIG_AT) {
		srv.big_readable = readable;
		srv.big_answers = answers;
		srv.big_in_order = in_order;
	}
	pthread_cond_broadcast(&srv.x.cond);
	if (k + 1 == BIG_FRAMES) {
		pthread_mutex_unlock(&srv.x.lock);
		return;
	}
	SRV_WAIT(srv.big_sent > k + 1);
	next = srv.big_sent > k + 1;
	pthread_mutex_unlock(&srv.x.lock);
	if (!next || !client_acked(fd, WAIT_MS))
		xsrv_bad(&srv.x, __LINE__);
}

/* One receive: answer it, post the receive again, probe the client. */
static void srv_recv(struct ibtrs_xprt_con *con, const struct ibtrs_wc *wc)
{
	unsigned int n = srv.handled, slot = n % NR_RECVS;
	uint64_t idx;
	bool low = false, now = false, later = false, in_order = false;
	unsigned int answers = 0;
	unsigned long runs = 0;
	double t0 = 0, waited = 0;
	int fd, bytes = 0;

	if (wc->status || wc->wr_id != slot) {
		xsrv_bad(&srv.x, __LINE__);
		return;
	}
	if (n >= NR_FRAMES) {
		srv_big_recv(con, wc, n, slot);
		return;
	}
	memcpy(&idx, srv.x.rbuf[slot], sizeof(idx));
	if (wc->byte_len != REQ_LEN || le64toh(idx) != n) {
		xsrv_bad(&srv.x, __LINE__);
		return;
	}
	if (!srv_answer(con, n, slot))
		return;
	n++;

	pthread_mutex_lock(&srv.x.lock);
	fd = srv.cli_fd;
	pthread_mutex_unlock(&srv.x.lock);
	if (n == PROBE_LOW)
		low = xsrv_readable(fd, 0);
	if (n == PROBE_AT) {
		/*
		 * A loopback sendmsg usually delivers before it returns; the
		 * bounded wait covers a delivery deferred to softirq. Without
		 * an early flush nothing can arrive while this handler runs.
		 */
		now = xsrv_readable(fd, 0);
		t0 = t_now();
		later = now || xsrv_readable(fd, PROBE_WAIT_MS);
		waited = t_now() - t0;
		bytes = inq_bytes(fd);
		peek_answers(fd, 0, &answers, &in_order, &runs);
	}

	pthread_mutex_lock(&srv.x.lock);
	srv.recvs = n;
	if (n == PROBE_LOW)
		srv.low_readable = low;
	if (n == PROBE_AT) {
		srv.probed = true;
		srv.now_readable = now;
		srv.readable = later;
		srv.probe_wait = waited;
		srv.probe_bytes = bytes;
		srv.probe_answers = answers;
		srv.probe_in_order = in_order;
		srv.probe_runs = runs;
	}
	pthread_cond_broadcast(&srv.x.cond);
	pthread_mutex_unlock(&srv.x.lock);
}

static void srv_wc(struct ibtrs_xprt_con *con, const struct ibtrs_wc *wc)
{
	if (wc->opcode == IBTRS_WC_RECV) {
		srv_recv(con, wc);
		return;
	}
	if (wc->opcode != IBTRS_WC_SEND || wc->status) {
		xsrv_bad(&srv.x, __LINE__);
		return;
	}
	pthread_mutex_lock(&srv.x.lock);
	if (wc->wr_id == LAZY_WR || wc->wr_id == LAZY_WR + 1) {
		srv.lazy_done[wc->wr_id - LAZY_WR] = true;
		srv.lazy_on_loop[wc->wr_id - LAZY_WR] =
			ibtrs_loop_on_thread(srv.x.loop);
		pthread_cond_broadcast(&srv.x.cond);
		pthread_mutex_unlock(&srv.x.lock);
		return;
	}
	srv.sends++;
	pthread_cond_broadcast(&srv.x.cond);
	pthread_mutex_unlock(&srv.x.lock);
}

/* Hold the loop thread until the client's frames are all in. */
static void srv_park(struct ibtrs_work *w)
{
	(void)w;
	pthread_mutex_lock(&srv.x.lock);
	srv.parked = true;
	pthread_cond_broadcast(&srv.x.cond);
	SRV_WAIT(srv.go);
	pthread_mutex_unlock(&srv.x.lock);
}

/* The backend's clock: always the same time. */
static uint64_t still_clock(void)
{
	return 1000000000ull;
}

/* Nothing: ibtrs_loop_call() of it waits until the loop thread is idle. */
static void loop_sync(void *arg)
{
	(void)arg;
}

/* ------------------------------------------------------------------ */
/* the raw client (tests/lib/rawtcp.h)                                  */

/* Wait until the server acknowledged everything @fd sent. */
static void wait_acked(int fd)
{
	int outq = -1;

	if (client_acked(fd, WAIT_MS))
		return;
	ioctl(fd, SIOCOUTQ, &outq);
	fprintf(stderr, "client: %d bytes never acked\n", outq);
	exit(1);
}

/* Read answers @base to @base + @n - 1, in order, and no more. */
static void recv_answers(int fd, unsigned int base, unsigned int n)
{
	struct tcp_frame f;
	char payload[RSP_LEN];
	unsigned int i;
	uint64_t v;

	for (i = 0; i < n; i++) {
		rt_recv_frame(fd, &f, payload, sizeof(payload), WAIT_MS);
		CHECK_EQ(f.op, TCP_OP_SEND);
		CHECK_EQ(f.len, RSP_LEN);
		memcpy(&v, payload, sizeof(v));
		CHECK_EQ(le64toh(v), base + i);
	}
	CHECK(!xsrv_readable(fd, 0));
}

/*
 * The stream of large frames: frame i once the server has begun frame
 * i - 1; then the answers, in order.
 */
static void big_stream(int fd)
{
	static char big[sizeof(struct tcp_frame) + BIG_LEN];
	unsigned int i;
	uint64_t v;

	for (i = 0; i < BIG_FRAMES; i++) {
		struct tcp_frame w = { .op = TCP_OP_SEND, .len = BIG_LEN };

		/* The handler of frame i - 1 has begun. */
		pthread_mutex_lock(&srv.x.lock);
		SRV_WAIT(srv.recvs >= NR_FRAMES + i || srv.x.bad_line ||
			 srv.x.errs);
		CHECK(srv.recvs >= NR_FRAMES + i);
		pthread_mutex_unlock(&srv.x.lock);
		rt_frame_encode(big, &w);
		v = htole64(NR_FRAMES + i);
		memcpy(big + sizeof(w), &v, sizeof(v));
		memset(big + sizeof(w) + sizeof(v), big_fill(i),
		       BIG_LEN - sizeof(v));
		CHECK_EQ(rt_send_all(fd, big, sizeof(big), WAIT_MS, NULL), 0);
		pthread_mutex_lock(&srv.x.lock);
		srv.big_sent = i + 1;
		pthread_cond_broadcast(&srv.x.cond);
		pthread_mutex_unlock(&srv.x.lock);
	}

	pthread_mutex_lock(&srv.x.lock);
	SRV_WAIT((srv.recvs == NR_FRAMES + BIG_FRAMES &&
		  srv.sends == NR_FRAMES + BIG_FRAMES) ||
		 srv.x.errs || srv.x.bad_line);
	if (srv.x.bad_line || srv.x.errs) {
		fprintf(stderr,
			"stream: %u errors (%d), unexpected completion at "
			"line %d\n",
			srv.x.errs, srv.x.err, srv.x.bad_line);
		exit(1);
	}
	CHECK_EQ(srv.recvs, NR_FRAMES + BIG_FRAMES);
	CHECK_EQ(srv.sends, NR_FRAMES + BIG_FRAMES);
	printf("stream of %u frames of %u bytes: after %d, %s; after %d, "
	       "%s, %u whole answers%s\n",
	       BIG_FRAMES, BIG_LEN, BIG_LOW,
	       srv.big_low_readable ? "answers readable" : "nothing readable",
	       BIG_AT, srv.big_readable ? "readable" : "not readable",
	       srv.big_answers,
	       srv.big_in_order ? " in order" : " OUT OF ORDER");
	/* 128 KiB read: the answers still held for the batch. */
	CHECK(!srv.big_low_readable);
	/* 384 KiB read: the first ones left during the batch. */
	CHECK(srv.big_readable);
	CHECK(srv.big_answers >= 1);
	CHECK(srv.big_answers <= BIG_AT);
	CHECK(srv.big_in_order);
	pthread_mutex_unlock(&srv.x.lock);

	recv_answers(fd, NR_FRAMES, BIG_FRAMES);
}

int main(void)
{
	static char batch[NR_FRAMES * (sizeof(struct tcp_frame) + REQ_LEN)];
	struct tcp_hello hello;
	struct sockaddr_storage bound;
	struct tcp_frame f;
	struct ibtrs_xprt_con *con;
	char payload[RBUF_LEN];
	unsigned int i;
	uint64_t v;
	char *p;
	int fd, calls;

	signal(SIGPIPE, SIG_IGN);
	t_watchdog(WATCHDOG_S);
	ibtrs_set_test_clock(still_clock);

	if (xsrv_init(&srv.x, &con_attr, srv_wc, NR_RECVS, RBUF_LEN))
		return T_SKIP;
	ops = srv.x.ops;
	srv.cli_fd = -1;
	srv.park.fn = srv_park;
	for (i = 0; i < IBTRS_XPRT_PRIV_LEN; i++)
		srv.x.answer[i] = (uint8_t)(0xa0 + i);

	if (xsrv_listen(&srv.x, &bound)) {
		xsrv_fini(&srv.x);
		return T_SKIP;
	}
	CHECK(((struct sockaddr_in *)&bound)->sin_port != 0);

	/* Connect: hello out, the server's accept answer back. */
	fd = rt_connect((struct sockaddr *)&bound, sizeof(struct sockaddr_in),
			WAIT_MS);
	xsrv_hello(fd, &hello, WAIT_MS);
	CHECK(!memcmp(hello.priv, srv.x.answer, sizeof(hello.priv)));
	con = xsrv_accepted(&srv.x, WAIT_MS);
	pthread_mutex_lock(&srv.x.lock);
	srv.cli_fd = fd;
	pthread_mutex_unlock(&srv.x.lock);

	/* The 96 requests, each a SEND of 16 bytes: its index, then 0x77s. */
	p = batch;
	for (i = 0; i < NR_FRAMES; i++) {
		struct tcp_frame w = {
			.op = TCP_OP_SEND,
			.len = htole32(REQ_LEN),
		};

		memcpy(p, &w, sizeof(w));
		p += sizeof(w);
		v = htole64(i);
		memcpy(p, &v, sizeof(v));
		memset(p + sizeof(v), 0x77, REQ_LEN - sizeof(v));
		p += REQ_LEN;
	}

	/*
	 * Park the server loop, write the batch, wait until the server's
	 * kernel has it all, let the loop go: it reads the batch at once.
	 */
	ibtrs_loop_queue(srv.x.loop, &srv.park);
	pthread_mutex_lock(&srv.x.lock);
	SRV_WAIT(srv.parked);
	CHECK(srv.parked);
	pthread_mutex_unlock(&srv.x.lock);
	CHECK_EQ(rt_send_all(fd, batch, sizeof(batch), WAIT_MS, &calls), 0);
	wait_acked(fd);
	pthread_mutex_lock(&srv.x.lock);
	srv.go = true;
	pthread_cond_broadcast(&srv.x.cond);
	SRV_WAIT((srv.recvs == NR_FRAMES && srv.sends == NR_FRAMES) ||
		 srv.x.errs || srv.x.bad_line);
	if (srv.x.bad_line || srv.x.errs || srv.recvs != NR_FRAMES ||
	    srv.sends != NR_FRAMES) {
		fprintf(stderr,
			"server: %u receives, %u sends completed, %u errors "
			"(%d), unexpected completion at line %d\n",
			srv.recvs, srv.sends, srv.x.errs, srv.x.err,
			srv.x.bad_line);
		exit(1);
	}
	CHECK(srv.probed);
	fprintf(stderr,
		"batch of %u frames written in %d send(); after %d "
		"receives: %s\n",
		NR_FRAMES, calls, PROBE_LOW,
		srv.low_readable ? "answers readable" : "nothing readable");
	fprintf(stderr,
		"after %d receives: %s at once, %s after %.3f s, %d bytes "
		"queued: %u whole answers%s, %lu TCP_OP_HDRS runs\n",
		PROBE_AT, srv.now_readable ? "readable" : "not readable",
		srv.readable ? "readable" : "not readable", srv.probe_wait,
		srv.probe_bytes, srv.probe_answers,
		srv.probe_in_order ? " in order" : " OUT OF ORDER",
		srv.probe_runs);
	/* Fewer than TCP_EARLY_FRAMES queued: still held for the batch. */
	CHECK(!srv.low_readable);
	/* Past it: answers left while the batch was being parsed, the
	 * first ones, whole, before the handler returned. */
	CHECK(srv.readable);
	CHECK(srv.probe_answers >= 1);
	CHECK(srv.probe_answers <= PROBE_AT);
	CHECK(srv.probe_in_order);
	printf("early flush: responses readable after %d of %d frames\n",
	       PROBE_AT, NR_FRAMES);
	pthread_mutex_unlock(&srv.x.lock);

	/* Every answer, in order. */
	recv_answers(fd, 0, NR_FRAMES);
	CHECK_EQ(rt_frames_pending(fd), 0);
	printf("answers: %lu in %lu TCP_OP_HDRS runs, %lu with their own "
	       "header\n",
	       rt_hdrs_described(fd), rt_hdrs_runs(fd),
	       NR_FRAMES - rt_hdrs_described(fd));

	/*
	 * From another thread, with the loop idle: a plain send is sent by
	 * the posting thread, which delivers its completion; a lazy one
	 * (IBTRS_XPRT_LAZY) is left to the loop thread to send.
	 */
	for (i = 0; i < 2; i++) {
		struct iovec iov;

		/*
		 * The loop thread may still be in the flush that completed
		 * the last answer (a busy machine preempts it there): the
		 * frame would then wait for that flush to send it.
		 */
		ibtrs_loop_call(srv.x.loop, loop_sync, NULL);
		v = htole64(LAZY_WR + i);
		iov.iov_base = &v;
		iov.iov_len = sizeof(v);
		CHECK_EQ(ops->post_send(con, &iov, 1, LAZY_WR + i,
					IBTRS_XPRT_SIGNALED |
						(i ? IBTRS_XPRT_LAZY : 0)),
			 0);
		pthread_mutex_lock(&srv.x.lock);
		SRV_WAIT(srv.lazy_done[i]);
		CHECK(srv.lazy_done[i]);
		pthread_mutex_unlock(&srv.x.lock);
		rt_recv_frame(fd, &f, payload, sizeof(payload), WAIT_MS);
		CHECK_EQ(f.op, TCP_OP_SEND);
		CHECK_EQ(f.len, sizeof(v));
		memcpy(&v, payload, sizeof(v));
		CHECK_EQ(le64toh(v), LAZY_WR + i);
	}
	pthread_mutex_lock(&srv.x.lock);
	printf("plain send sent by %s, lazy send by %s\n",
	       srv.lazy_on_loop[0] ? "the loop thread" : "the posting thread",
	       srv.lazy_on_loop[1] ? "the loop thread" : "the posting thread");
	CHECK(!srv.lazy_on_loop[0]);
	CHECK(srv.lazy_on_loop[1]);
	pthread_mutex_unlock(&srv.x.lock);

	big_stream(fd);

	xsrv_close(&srv.x);
	pthread_mutex_lock(&srv.x.lock);
	CHECK_EQ(srv.x.errs, 0);
	CHECK_EQ(srv.x.bad_line, 0);
	pthread_mutex_unlock(&srv.x.lock);
	close(fd);
	xsrv_fini(&srv.x);
	printf("tcp_batch: ok\n");
	return 0;
}
