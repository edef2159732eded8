// SPDX-License-Identifier: MIT
/*
 * hostile.c - a real server and a good client session under attack.
 *
 * A server runs in-process on 127.0.0.1 with a memory target; a good client
 * session does verified WRITE/READ I/O in a background thread during the
 * whole test. Meanwhile raw TCP sockets attack the server: garbage, bad
 * hellos, bad connection requests, malformed frames, malformed
 * TCP_OP_HDRS runs, malformed requests, a held chunk reused, truncated
 * frames, a slow hello and a flood of silent connections. Every attacking
 * connection must be closed by the server in bounded time and the good
 * session must go on without a single error.
 *
 * Then fake servers (raw listening sockets) attack a client: another
 * protocol version, garbage, early closes, bad geometry, bad INFO_RSP and
 * malformed frames (a TCP_OP_HDRS run of one among them) after the session
 * is open. The client must fail the open or take the path down, never
 * crash, and close cleanly.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ibtrs.h"
#include "core.h"
#include "proto.h"
#include "rawtcp.h"
#include "tcp/tcp_proto.h"
#include "test.h"

#define SRV_QD 16
#define SRV_MAX_IO (64u * 1024)
#define STORE_LEN (1u << 20)
#define LANES 8
#define LANE_LEN (STORE_LEN / LANES)
#define IO_MAGIC 0x10C0FFEEu

#define CLOSE_TIMEOUT_MS 5000 /* an attacked connection must close by then */
#define IO_TIMEOUT_MS 5000    /* frames we expect from a live peer */
#define PROGRESS_TIMEOUT_S 10.0
#define SILENT_CONS 200
#define SILENT_WAIT_S 15.0 /* a silent connection must be closed by then */
#define WATCHDOG_S 280

#define FAKE_QD 8
#define FAKE_MAX_IO (64u * 1024)
#define FAKE_KEY 0x4242u

/* ------------------------------------------------------------------ */
/* failures                                                             */

static atomic_int soft_failures;

/* A failed check that does not stop the test; the exit status is 1. */
static void soft_fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void soft_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	atomic_fetch_add(&soft_failures, 1);
}

static pthread_mutex_t rnd_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long rnd_state = 0x9E3779B97F4A7C15ull;

static unsigned long long rnd(void)
{
	unsigned long long v;

	pthread_mutex_lock(&rnd_lock);
	v = t_rand(&rnd_state);
	pthread_mutex_unlock(&rnd_lock);
	return v;
}

static void rnd_bytes(void *buf, size_t len)
{
	t_fill(buf, len, rnd());
}

/* ------------------------------------------------------------------ */
/* the server: a memory target                                          */

/* Session kinds, told apart by name in the CONNECTED event. */
static int kind_good, kind_hold, kind_atk;

struct io_msg {
	uint32_t magic;
	uint32_t len;
	uint64_t off;
};

static struct {
	struct ibtrs_srv_ctx *ctx;
	uint16_t port;
	unsigned char *store;
	atomic_int good_conn, good_disc;
	atomic_int atk_conn, atk_disc;
	atomic_int hold_conn, hold_disc;
	atomic_int atk_reqs;
	atomic_int bad_good_reqs;
	pthread_mutex_t lock;
	struct ibtrs_srv_op *held[8];
	atomic_int nr_held;
} srv;

static int srv_link_ev(struct ibtrs_srv *sess, enum ibtrs_srv_link_ev ev,
		       void *priv)
{
	char name[NAME_MAX];

	if (ev == IBTRS_SRV_LINK_EV_CONNECTED) {
		CHECK_EQ(ibtrs_srv_get_sess_name(sess, name, sizeof(name)), 0);
		if (!strcmp(name, "good")) {
			ibtrs_srv_set_sess_priv(sess, &kind_good);
			atomic_fetch_add(&srv.good_conn, 1);
		} else if (!strncmp(name, "hold", 4)) {
			ibtrs_srv_set_sess_priv(sess, &kind_hold);
			atomic_fetch_add(&srv.hold_conn, 1);
		} else {
			ibtrs_srv_set_sess_priv(sess, &kind_atk);
			atomic_fetch_add(&srv.atk_conn, 1);
		}
		return 0;
	}
	if (priv == &kind_good)
		atomic_fetch_add(&srv.good_disc, 1);
	else if (priv == &kind_hold)
		atomic_fetch_add(&srv.hold_disc, 1);
	else
		atomic_fetch_add(&srv.atk_disc, 1);
	return 0;
}

static int srv_rdma_ev(struct ibtrs_srv *sess, void *priv,
		       struct ibtrs_srv_op *id, int dir, void *data,
		       size_t datalen, const void *usr, size_t usrlen)
{
	struct io_msg m;
	int n;

	(void)sess;
	if (priv == &kind_good) {
		if (usrlen != sizeof(m)) {
			atomic_fetch_add(&srv.bad_good_reqs, 1);
			return -EINVAL;
		}
		memcpy(&m, usr, sizeof(m));
		if (m.magic != IO_MAGIC || m.len != datalen ||
		    m.off > STORE_LEN || datalen > STORE_LEN - m.off) {
			atomic_fetch_add(&srv.bad_good_reqs, 1);
			return -EINVAL;
		}
		if (dir == IBTRS_WRITE)
			memcpy(srv.store + m.off, data, datalen);
		else
			memcpy(data, srv.store + m.off, datalen);
		ibtrs_srv_resp_rdma(id, 0);
		return 0;
	}
	if (priv == &kind_hold) {
		pthread_mutex_lock(&srv.lock);
		n = atomic_load(&srv.nr_held);
		CHECK(n < (int)(sizeof(srv.held) / sizeof(srv.held[0])));
		srv.held[n] = id;
		atomic_store(&srv.nr_held, n + 1);
		pthread_mutex_unlock(&srv.lock);
		return 0;
	}
	/* An attacker's well-formed request: answered, no data kept. */
	if (dir == IBTRS_READ)
		memset(data, 0x5a, datalen);
	atomic_fetch_add(&srv.atk_reqs, 1);
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
}

static void srv_start(void)
{
	struct sockaddr_in lo = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct ibtrs_srv_opts o;

	srv.store = calloc(1, STORE_LEN);
	CHECK(srv.store);
	pthread_mutex_init(&srv.lock, NULL);
	ibtrs_srv_opts_init(&o, sizeof(o));
	o.port = 0;
	o.listen_addr = (const struct sockaddr *)&lo;
	o.queue_depth = SRV_QD;
	o.max_io_size = SRV_MAX_IO;
	o.rdma_ev = srv_rdma_ev;
	o.link_ev = srv_link_ev;
	/*
	 * Attacked connections must be closed for what they sent, not by
	 * the heartbeat timeout; and sessions end with their last path.
	 */
	o.hb_timeout_ms = 120 * 1000;
	o.sess_grace_ms = 0;
	srv.ctx = ibtrs_srv_open_opts(&o);
	CHECK(srv.ctx);
	srv.port = ibtrs_srv_get_port(srv.ctx);
	CHECK(srv.port);
}

/* ------------------------------------------------------------------ */
/* the good client: verified I/O in the background                      */

struct lane {
	unsigned int idx;
	uint64_t off;
	uint32_t len;
	unsigned long long seed;
	unsigned char *wbuf, *rbuf, *expect;
	int err;
	bool done;
};

static struct {
	struct ibtrs_clt *sess;
	pthread_t thr;
	atomic_bool stop;
	atomic_ullong ops;
	atomic_int errors, verify_failures, stalls;
	atomic_int link_disc;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct lane lanes[LANES];
} good;

static void good_link_ev(void *priv, enum ibtrs_clt_link_ev ev)
{
	(void)priv;
	if (ev == IBTRS_CLT_LINK_EV_DISCONNECTED)
		atomic_fetch_add(&good.link_disc, 1);
}

static void good_conf(void *priv, int err)
{
	struct lane *l = priv;

	pthread_mutex_lock(&good.lock);
	l->err = err;
	l->done = true;
	pthread_cond_broadcast(&good.cond);
	pthread_mutex_unlock(&good.lock);
}

/* Submit one request of lane @l; the data is split into up to 3 iovecs. */
static int good_submit(struct lane *l, int dir, struct ibtrs_tag *tag)
{
	unsigned char *buf = dir == IBTRS_WRITE ? l->wbuf : l->rbuf;
	struct io_msg m = { .magic = IO_MAGIC, .len = l->len, .off = l->off };
	struct iovec vec = { .iov_base = &m, .iov_len = sizeof(m) };
	struct iovec sg[3];
	unsigned int cnt = 0;
	size_t a, b;

	a = l->len / 3;
	b = l->len / 2;
	if ((l->seed & 3) == 0 || l->len < 3) {
		sg[cnt].iov_base = buf;
		sg[cnt++].iov_len = l->len;
	} else {
		sg[cnt].iov_base = buf;
		sg[cnt++].iov_len = a;
		sg[cnt].iov_base = buf + a;
		sg[cnt++].iov_len = b - a;
		sg[cnt].iov_base = buf + b;
		sg[cnt++].iov_len = l->len - b;
	}
	l->done = false;
	l->err = 0;
	return ibtrs_clt_request(dir, good_conf, good.sess, tag, l, &vec, 1,
				 l->len, sg, cnt);
}

/* One round: every lane writes, then every lane reads back. */
static void good_round(int dir)
{
	struct ibtrs_tag *tags[LANES];
	struct timespec ts;
	unsigned int i;
	int ret;

	for (i = 0; i < LANES; i++) {
		struct lane *l = &good.lanes[i];

		tags[i] = ibtrs_clt_get_tag(good.sess, IBTRS_IO_CON,
					    IBTRS_TAG_WAIT);
		if (!tags[i]) {
			fprintf(stderr, "good: get_tag: %s\n", strerror(errno));
			atomic_fetch_add(&good.errors, 1);
			l->done = true;
			l->err = -errno;
			continue;
		}
		if (dir == IBTRS_READ)
			memset(l->rbuf, 0, l->len);
		ret = good_submit(l, dir, tags[i]);
		if (ret) {
			fprintf(stderr, "good: request: %s\n", strerror(-ret));
			atomic_fetch_add(&good.errors, 1);
			pthread_mutex_lock(&good.lock);
			l->done = true;
			l->err = ret;
			pthread_mutex_unlock(&good.lock);
		}
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 20;
	pthread_mutex_lock(&good.lock);
	for (i = 0; i < LANES; i++) {
		while (!good.lanes[i].done) {
			if (pthread_cond_timedwait(&good.cond, &good.lock,
						   &ts) == ETIMEDOUT) {
				pthread_mutex_unlock(&good.lock);
				fprintf(stderr,
					"good: request of lane %u never completed\n",
					i);
				atomic_fetch_add(&good.stalls, 1);
				/* Tags stay held: the request may still run. */
				atomic_store(&good.stop, true);
				return;
			}
		}
	}
	pthread_mutex_unlock(&good.lock);
	for (i = 0; i < LANES; i++) {
		struct lane *l = &good.lanes[i];

		if (tags[i])
			ibtrs_clt_put_tag(good.sess, tags[i]);
		if (l->err) {
			fprintf(stderr, "good: lane %u %s failed: %s\n", i,
				dir == IBTRS_WRITE ? "WRITE" : "READ",
				strerror(-l->err));
			atomic_fetch_add(&good.errors, 1);
			continue;
		}
		if (dir == IBTRS_READ && memcmp(l->rbuf, l->expect, l->len)) {
			fprintf(stderr,
				"good: lane %u: data read back at %llu+%u differs\n",
				i, (unsigned long long)l->off, l->len);
			atomic_fetch_add(&good.verify_failures, 1);
		}
		atomic_fetch_add(&good.ops, 1);
	}
}

static void *good_thread(void *arg)
{
	unsigned int i;

	(void)arg;
	while (!atomic_load(&good.stop)) {
		for (i = 0; i < LANES; i++) {
			struct lane *l = &good.lanes[i];

			l->seed = rnd();
			l->len = 1 + (uint32_t)(l->seed % SRV_MAX_IO);
			l->off = (uint64_t)i * LANE_LEN +
				 (l->seed >> 20) % (LANE_LEN - l->len + 1);
			t_fill(l->wbuf, l->len, l->seed);
			memcpy(l->expect, l->wbuf, l->len);
		}
		good_round(IBTRS_WRITE);
		if (atomic_load(&good.stop))
			break;
		good_round(IBTRS_READ);
	}
	return NULL;
}

static void good_start(void)
{
	struct sockaddr_storage dst;
	struct ibtrs_addr addr = { .dst = &dst };
	struct ibtrs_clt_opts o;
	unsigned int i;

	pthread_mutex_init(&good.lock, NULL);
	pthread_cond_init(&good.cond, NULL);
	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, srv.port, &addr),
		 0);
	ibtrs_clt_opts_init(&o, sizeof(o));
	o.link_ev = good_link_ev;
	o.sessname = "good";
	o.paths = &addr;
	o.path_cnt = 1;
	o.port = srv.port;
	o.reconnect_delay_sec = 1;
	o.max_reconnect_attempts = 0;
	/*
	 * An attack must not hurt the good session: it is checked by the
	 * session's errors and link events. The heartbeat timeout is not
	 * what is tested here: 1 s of silence (the default) comes from a
	 * starved machine as well, with sanitizers, while the attacks run.
	 */
	o.hb_timeout_ms = 30 * 1000;
	good.sess = ibtrs_clt_open_opts(&o);
	CHECK(good.sess);
	for (i = 0; i < LANES; i++) {
		good.lanes[i].idx = i;
		good.lanes[i].wbuf = malloc(SRV_MAX_IO);
		good.lanes[i].rbuf = malloc(SRV_MAX_IO);
		good.lanes[i].expect = malloc(SRV_MAX_IO);
		CHECK(good.lanes[i].wbuf && good.lanes[i].rbuf &&
		      good.lanes[i].expect);
	}
	CHECK_EQ(pthread_create(&good.thr, NULL, good_thread, NULL), 0);
}

/* The good session made progress since @what began, with no error. */
static void check_good(const char *what, unsigned long long before)
{
	struct ibtrs_attrs attr;
	double end = t_now() + PROGRESS_TIMEOUT_S;

	while (atomic_load(&good.ops) < before + 2 * LANES && t_now() < end &&
	       !atomic_load(&good.stop))
		usleep(2000);
	if (atomic_load(&good.ops) < before + 2 * LANES) {
		fprintf(stderr, "%s: the good session made no progress\n",
			what);
		exit(1);
	}
	if (atomic_load(&good.errors) || atomic_load(&good.verify_failures) ||
	    atomic_load(&good.stalls) || atomic_load(&good.link_disc) ||
	    atomic_load(&srv.bad_good_reqs) || atomic_load(&srv.good_disc)) {
		fprintf(stderr,
			"%s: the good session was hurt: errors %d, verify failures %d, stalls %d, link down %d, bad requests %d, server disconnects %d\n",
			what, atomic_load(&good.errors),
			atomic_load(&good.verify_failures),
			atomic_load(&good.stalls), atomic_load(&good.link_disc),
			atomic_load(&srv.bad_good_reqs),
			atomic_load(&srv.good_disc));
		exit(1);
	}
	CHECK_EQ(ibtrs_clt_query(good.sess, &attr), 0);
	CHECK_EQ(attr.connected_paths, 1);
}

/* ------------------------------------------------------------------ */
/* raw sockets                                                          */

static int raw_connect_port(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	return rt_connect((struct sockaddr *)&a, sizeof(a), IO_TIMEOUT_MS);
}

static int raw_connect(void)
{
	return raw_connect_port(srv.port);
}

/*
 * Wait until the peer closes @fd (EOF or reset), discarding what it sends.
 * Return: the bytes discarded, or -1 if the connection stayed open.
 */
static long wait_closed(int fd, int timeout_ms)
{
	double end = t_now() + timeout_ms / 1000.0;
	char buf[4096];
	long got = 0;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int left = (int)((end - t_now()) * 1000) + 1;
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, left) != 1)
			return -1;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return errno == ECONNRESET ? got : -1;
		if (!n)
			return got;
		got += n;
	}
}

static const char *cur_case = "";

/* The server must close @fd in bounded time; @fd is closed here. */
static long expect_closed(int fd)
{
	long got = wait_closed(fd, CLOSE_TIMEOUT_MS);

	close(fd);
	if (got < 0) {
		fprintf(stderr,
			"%s: the server did not close the connection within %d ms\n",
			cur_case, CLOSE_TIMEOUT_MS);
		exit(1);
	}
	return got;
}

/* ------------------------------------------------------------------ */
/* hellos and frames                                                    */

static void send_hello(int fd, const char *magic, uint32_t status,
		       const void *priv)
{
	struct tcp_hello h;

	memcpy(h.magic, magic, 4);
	h.status = htole32(status);
	memcpy(h.priv, priv, sizeof(h.priv));
	rt_send_all(fd, &h, sizeof(h), IO_TIMEOUT_MS, NULL);
}

static void conn_req(struct ibtrs_msg_conn_req *m, uint16_t version,
		     uint16_t cid, uint16_t cid_num, bool first,
		     const uint8_t *sess_uuid, const uint8_t *path_uuid)
{
	struct ibtrs_conn_req r = {
		.version = version,
		.cid = cid,
		.cid_num = cid_num,
		.first_conn = first,
	};

	if (sess_uuid)
		memcpy(r.sess_uuid, sess_uuid, IBTRS_UUID_LEN);
	else
		rnd_bytes(r.sess_uuid, IBTRS_UUID_LEN);
	if (path_uuid)
		memcpy(r.path_uuid, path_uuid, IBTRS_UUID_LEN);
	else
		rnd_bytes(r.path_uuid, IBTRS_UUID_LEN);
	ibtrs_conn_req_encode(m, &r);
}

/*
 * Read the server's hello answer. Return: 0 and @rsp on accept, the
 * positive errno of a reject, -1 if no valid answer came.
 */
static int read_answer(int fd, struct ibtrs_conn_rsp *rsp)
{
	struct tcp_hello h;
	struct ibtrs_conn_rsp r;

	if (rt_recv_all(fd, &h, sizeof(h), IO_TIMEOUT_MS))
		return -1;
	CHECK(!memcmp(h.magic, TCP_HELLO_MAGIC, 4));
	CHECK_EQ(ibtrs_conn_rsp_decode(h.priv, sizeof(h.priv), &r), 0);
	CHECK_EQ(r.version >> 8, IBTRS_PROTO_VER_MAJOR);
	if (le32toh(h.status) == TCP_HELLO_REJECT) {
		CHECK(r.err);
		return r.err;
	}
	CHECK_EQ(le32toh(h.status), TCP_HELLO_ACCEPT);
	CHECK_EQ(r.err, 0);
	if (rsp)
		*rsp = r;
	return 0;
}

static int send_frame(int fd, uint8_t op, uint8_t flags, uint16_t reserved,
		      uint32_t imm, uint32_t len, uint32_t rkey, uint64_t raddr,
		      const void *payload, size_t plen)
{
	struct tcp_frame f = {
		.op = op,
		.flags = flags,
		.reserved = htole16(reserved),
		.imm = htole32(imm),
		.len = htole32(len),
		.rkey = htole32(rkey),
		.raddr = htole64(raddr),
	};
	int ret;

	ret = rt_send_all(fd, &f, sizeof(f), IO_TIMEOUT_MS, NULL);
	if (!ret && plen)
		ret = rt_send_all(fd, payload, plen, IO_TIMEOUT_MS, NULL);
	return ret;
}

/* ------------------------------------------------------------------ */
/* an attacking client, speaking the protocol by hand                   */

struct atk {
	int fd[IBTRS_MAX_CONS_PER_PATH];
	unsigned int nr;
	uint8_t sess_uuid[IBTRS_UUID_LEN];
	uint8_t path_uuid[IBTRS_UUID_LEN];
	struct ibtrs_conn_rsp rsp;
	unsigned int off_bits;
	struct ibtrs_desc pool;
	uint32_t gen;
};

/* Connect connection @cid of @a's path; return the fd, or -errno reject. */
static int atk_con(struct atk *a, uint16_t cid, uint16_t cid_num, bool first)
{
	struct ibtrs_msg_conn_req m;
	int fd, ret, off_bits;

	fd = raw_connect();
	conn_req(&m, IBTRS_PROTO_VER, cid, cid_num, first, a->sess_uuid,
		 a->path_uuid);
	send_hello(fd, TCP_HELLO_MAGIC, 0, &m);
	ret = read_answer(fd, &a->rsp);
	if (ret) {
		CHECK(ret > 0);
		expect_closed(fd);
		return -ret;
	}
	CHECK_EQ(a->rsp.queue_depth, SRV_QD);
	CHECK_EQ(a->rsp.max_io_size, SRV_MAX_IO);
	CHECK_EQ(a->rsp.chunk_size, ibtrs_chunk_size(SRV_MAX_IO));
	off_bits = ibtrs_imm_off_bits(a->rsp.queue_depth, a->rsp.chunk_size);
	CHECK(off_bits > 0);
	a->off_bits = (unsigned int)off_bits;
	return fd;
}

static void atk_init(struct atk *a)
{
	unsigned int i;

	memset(a, 0, sizeof(*a));
	for (i = 0; i < IBTRS_MAX_CONS_PER_PATH; i++)
		a->fd[i] = -1;
	rnd_bytes(a->sess_uuid, IBTRS_UUID_LEN);
	rnd_bytes(a->path_uuid, IBTRS_UUID_LEN);
}

static void atk_send_info(struct atk *a, unsigned int con, const char *name)
{
	struct ibtrs_msg_info_req req;

	ibtrs_info_req_encode(&req, name);
	send_frame(a->fd[con], TCP_OP_SEND, 0, 0, 0, sizeof(req), 0, 0, &req,
		   sizeof(req));
}

static void atk_recv_info(struct atk *a, unsigned int con)
{
	char buf[IBTRS_INFO_RSP_MAX_LEN];
	struct ibtrs_desc d[IBTRS_MAX_INFO_DESCS];
	struct tcp_frame f;

	rt_recv_frame(a->fd[con], &f, buf, sizeof(buf), IO_TIMEOUT_MS);
	CHECK_EQ(f.op, TCP_OP_SEND);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, f.len, d, IBTRS_MAX_INFO_DESCS), 1);
	CHECK_EQ(d[0].len, (uint64_t)SRV_QD * a->rsp.chunk_size);
	a->pool = d[0];
}

/* A fresh session with one path of @cid_num connections, INFO done. */
static void atk_open(struct atk *a, const char *name, unsigned int cid_num,
		     bool info)
{
	unsigned int i;

	atk_init(a);
	for (i = 0; i < cid_num; i++) {
		a->fd[i] = atk_con(a, (uint16_t)i, (uint16_t)cid_num, !i);
		CHECK(a->fd[i] >= 0);
		a->nr++;
	}
	if (info) {
		atk_send_info(a, 0, name);
		atk_recv_info(a, 0);
	}
}

static void atk_close(struct atk *a)
{
	unsigned int i;

	for (i = 0; i < IBTRS_MAX_CONS_PER_PATH; i++) {
		if (a->fd[i] >= 0)
			close(a->fd[i]);
		a->fd[i] = -1;
	}
}

static uint64_t chunk_addr(const struct atk *a, uint32_t chunk)
{
	return a->pool.addr + (uint64_t)chunk * a->rsp.chunk_size;
}

/*
 * A well-formed request on @chunk: WRITE of @data_len bytes, or READ of
 * @data_len bytes into the (fake) region @desc. Its header (host order)
 * into @f; returns its payload, to be freed.
 */
static unsigned char *atk_req_frame(struct atk *a, uint32_t chunk, int dir,
				    uint32_t data_len, uint16_t usr_len,
				    const struct ibtrs_desc *desc,
				    struct tcp_frame *f)
{
	struct ibtrs_req_trailer t = { .dir = dir, .usr_len = usr_len };
	size_t plen = usr_len + sizeof(struct ibtrs_trailer);
	unsigned char *buf;
	uint64_t raddr = chunk_addr(a, chunk);

	if (dir == IBTRS_WRITE)
		plen += data_len;
	else
		raddr += data_len;
	buf = malloc(plen);
	CHECK(buf);
	memset(buf, 0xc3, plen);
	t.gen = ++a->gen;
	if (desc)
		t.desc = *desc;
	ibtrs_trailer_encode(
		(struct ibtrs_trailer *)(buf + plen -
					 sizeof(struct ibtrs_trailer)),
		&t);
	memset(f, 0, sizeof(*f));
	f->op = TCP_OP_WRITE_IMM;
	f->imm = ibtrs_imm_req(chunk, data_len + usr_len, a->off_bits);
	f->len = (uint32_t)plen;
	f->rkey = a->pool.key;
	f->raddr = raddr;
	return buf;
}

/* The same, sent on connection @con. */
static int atk_req(struct atk *a, unsigned int con, uint32_t chunk, int dir,
		   uint32_t data_len, uint16_t usr_len,
		   const struct ibtrs_desc *desc)
{
	struct tcp_frame f;
	unsigned char *buf;
	int ret;

	buf = atk_req_frame(a, chunk, dir, data_len, usr_len, desc, &f);
	ret = send_frame(a->fd[con], f.op, 0, 0, f.imm, f.len, f.rkey, f.raddr,
			 buf, f.len);
	free(buf);
	return ret;
}

/* The response to a request on @chunk, with @len bytes of READ data. */
static void atk_expect_rsp(struct atk *a, unsigned int con, uint32_t chunk,
			   const struct ibtrs_desc *desc)
{
	unsigned char buf[8192];
	struct tcp_frame f;
	uint32_t i;

	rt_recv_frame(a->fd[con], &f, buf, sizeof(buf), IO_TIMEOUT_MS);
	CHECK_EQ(f.op, TCP_OP_WRITE_IMM);
	CHECK_EQ(f.imm, ibtrs_imm_rsp(chunk, 0));
	if (!desc) {
		CHECK_EQ(f.len, 0);
		return;
	}
	CHECK_EQ(f.len, desc->len);
	CHECK_EQ(f.rkey, desc->key);
	CHECK_EQ(f.raddr, desc->addr);
	for (i = 0; i < f.len; i++)
		CHECK_EQ(buf[i], 0x5a);
}

/* Positive control: the connection works before it is attacked. */
static void atk_ping(struct atk *a, unsigned int con, uint32_t chunk)
{
	struct ibtrs_desc d = { .addr = 0x1000, .key = 0x777, .len = 32 };
	struct tcp_frame f;
	char buf[16];
	int before = atomic_load(&srv.atk_reqs);

	CHECK_EQ(atk_req(a, con, chunk, IBTRS_WRITE, 64, 8, NULL), 0);
	atk_expect_rsp(a, con, chunk, NULL);
	CHECK_EQ(atk_req(a, con, chunk, IBTRS_READ, d.len, 0, &d), 0);
	atk_expect_rsp(a, con, chunk, &d);
	CHECK_EQ(atomic_load(&srv.atk_reqs), before + 2);
	/* A heartbeat is answered too. */
	send_frame(a->fd[con], TCP_OP_WRITE_IMM, 0, 0,
		   ibtrs_imm_hb(IBTRS_IMM_HB), 0, 0, 0, NULL, 0);
	rt_recv_frame(a->fd[con], &f, buf, sizeof(buf), IO_TIMEOUT_MS);
	CHECK_EQ(f.op, TCP_OP_WRITE_IMM);
	CHECK_EQ(f.imm, ibtrs_imm_hb(IBTRS_IMM_HB_ACK));
}

/* Every connection of @a must be closed by the server. */
static void atk_expect_closed(struct atk *a)
{
	unsigned int i;

	for (i = 0; i < IBTRS_MAX_CONS_PER_PATH; i++) {
		if (a->fd[i] < 0)
			continue;
		expect_closed(a->fd[i]);
		a->fd[i] = -1;
	}
}

/* ------------------------------------------------------------------ */
/* attacks on the connection setup                                      */

static void case_garbage(void)
{
	unsigned char buf[4096];
	int fd;

	fd = raw_connect();
	rnd_bytes(buf, sizeof(buf));
	buf[0] = 'X';
	rt_send_all(fd, buf, sizeof(buf), IO_TIMEOUT_MS, NULL);
	CHECK_EQ(expect_closed(fd), 0);

	/* Garbage after a correct magic and status. */
	fd = raw_connect();
	memcpy(buf, TCP_HELLO_MAGIC, 4);
	memset(buf + 4, 0, 4);
	rt_send_all(fd, buf, sizeof(buf), IO_TIMEOUT_MS, NULL);
	expect_closed(fd);

	/* A single byte of garbage, then nothing: closed once the peer ends. */
	fd = raw_connect();
	rt_send_all(fd, "\xff", 1, IO_TIMEOUT_MS, NULL);
	shutdown(fd, SHUT_WR);
	CHECK_EQ(expect_closed(fd), 0);
}

static void case_bad_hello(void)
{
	struct ibtrs_msg_conn_req m;
	int fd;

	conn_req(&m, IBTRS_PROTO_VER, 0, 1, true, NULL, NULL);
	fd = raw_connect();
	send_hello(fd, "IBTX", 0, &m);
	CHECK_EQ(expect_closed(fd), 0); /* dropped without an answer */

	fd = raw_connect();
	send_hello(fd, TCP_HELLO_MAGIC, 7, &m); /* a client status */
	CHECK_EQ(expect_closed(fd), 0);
}

/* A connection request the server must refuse with @err. */
static void expect_reject(const struct ibtrs_msg_conn_req *m, int err)
{
	int fd, ret;

	fd = raw_connect();
	send_hello(fd, TCP_HELLO_MAGIC, 0, m);
	ret = read_answer(fd, NULL);
	if (ret != err) {
		fprintf(stderr, "%s: answer %d (%s), expected reject %d (%s)\n",
			cur_case, ret, ret > 0 ? strerror(ret) : "none", err,
			strerror(err));
		exit(1);
	}
	expect_closed(fd);
}

static void case_conn_req_magic(void)
{
	struct ibtrs_msg_conn_req m;

	conn_req(&m, IBTRS_PROTO_VER, 0, 1, true, NULL, NULL);
	m.magic = htole16(0x1234);
	expect_reject(&m, EPROTO);
	/* Unknown flags. */
	conn_req(&m, IBTRS_PROTO_VER, 0, 1, true, NULL, NULL);
	m.flags |= 0x80;
	expect_reject(&m, EPROTO);
	/* Random bytes for a conn_req. */
	rnd_bytes(&m, sizeof(m));
	m.magic = htole16(0x0bad);
	expect_reject(&m, EPROTO);
}

static void case_version(void)
{
	struct ibtrs_msg_conn_req m;

	conn_req(&m, (IBTRS_PROTO_VER_MAJOR + 1) << 8, 0, 1, true, NULL, NULL);
	expect_reject(&m, EPROTONOSUPPORT);
	conn_req(&m, 0x0000, 0, 1, true, NULL, NULL);
	expect_reject(&m, EPROTONOSUPPORT);
	conn_req(&m, 0xff07, 0, 1, true, NULL, NULL);
	expect_reject(&m, EPROTONOSUPPORT);
	/* Another minor version of the same major is fine. */
	conn_req(&m, (IBTRS_PROTO_VER_MAJOR << 8) | 0x7f, 0, 1, true, NULL,
		 NULL);
	{
		int fd = raw_connect();

		send_hello(fd, TCP_HELLO_MAGIC, 0, &m);
		CHECK_EQ(read_answer(fd, NULL), 0);
		close(fd);
	}
}

static void case_cid(void)
{
	struct ibtrs_msg_conn_req m;

	conn_req(&m, IBTRS_PROTO_VER, 2, 2, true, NULL, NULL);
	expect_reject(&m, EPROTO);
	conn_req(&m, IBTRS_PROTO_VER, 0, 0, true, NULL, NULL);
	expect_reject(&m, EPROTO);
	conn_req(&m, IBTRS_PROTO_VER, 0, IBTRS_MAX_CONS_PER_PATH + 1, true,
		 NULL, NULL);
	expect_reject(&m, EPROTO);
	conn_req(&m, IBTRS_PROTO_VER, 0xffff, 0xffff, true, NULL, NULL);
	expect_reject(&m, EPROTO);
}

static void case_unknown_sess(void)
{
	struct ibtrs_msg_conn_req m;

	conn_req(&m, IBTRS_PROTO_VER, 1, 2, false, NULL, NULL);
	expect_reject(&m, ENXIO);
	conn_req(&m, IBTRS_PROTO_VER, 1, 2, true, NULL, NULL);
	expect_reject(&m, ENXIO);
	conn_req(&m, IBTRS_PROTO_VER, 0, 1, false, NULL, NULL);
	expect_reject(&m, ENXIO);
}

static void case_dup_cid(void)
{
	struct ibtrs_msg_conn_req m;
	struct atk a;

	atk_open(&a, "atk-dup", 2, false);
	/* cid 1 again, and cid 1 with another cid_num: both busy. */
	conn_req(&m, IBTRS_PROTO_VER, 1, 2, false, a.sess_uuid, a.path_uuid);
	expect_reject(&m, EBUSY);
	conn_req(&m, IBTRS_PROTO_VER, 1, 3, false, a.sess_uuid, a.path_uuid);
	expect_reject(&m, EBUSY);
	/* The path itself still works. */
	atk_send_info(&a, 0, "atk-dup");
	atk_recv_info(&a, 0);
	atk_ping(&a, 1, 2);
	/* A connection to a connected path is refused too. */
	conn_req(&m, IBTRS_PROTO_VER, 1, 2, false, a.sess_uuid, a.path_uuid);
	expect_reject(&m, EBUSY);
	atk_ping(&a, 0, 3);
	atk_close(&a);
}

/* ------------------------------------------------------------------ */
/* attacks with frames                                                  */

/* A fresh session, checked with a ping, then one bad frame: closed. */
static void frame_case(uint8_t op, uint8_t flags, uint16_t reserved,
		       uint32_t imm, uint32_t len, bool good_key,
		       uint32_t rkey_xor, uint64_t raddr, size_t plen)
{
	unsigned char *payload = calloc(1, plen + 1);
	struct atk a;

	CHECK(payload);
	atk_open(&a, "atk-frame", 1, true);
	atk_ping(&a, 0, 1);
	send_frame(a.fd[0], op, flags, reserved, imm, len,
		   (good_key ? a.pool.key : 0) ^ rkey_xor, raddr, payload,
		   plen);
	atk_expect_closed(&a);
	free(payload);
}

static void case_unknown_op(void)
{
	/* 4 is TCP_OP_HDRS: see case_hdrs(). */
	frame_case(0, 0, 0, 0, 0, false, 0, 0, 0);
	frame_case(5, 0, 0, 0, 16, false, 0, 0, 16);
	frame_case(0xff, 0, 0, 0, 0, false, 0, 0, 0);
}

static void case_frame_flags(void)
{
	frame_case(TCP_OP_SEND, 1, 0, 0, 0, false, 0, 0, 0);
	frame_case(TCP_OP_WRITE, 0x80, 0, 0, 8, true, 0, 0, 8);
	frame_case(TCP_OP_WRITE_IMM, 0, 1, ibtrs_imm_hb(IBTRS_IMM_HB), 0, false,
		   0, 0, 0);
}

static void case_send_too_big(void)
{
	struct ibtrs_msg_info_req req;
	unsigned char big[sizeof(req) + 1];
	struct atk a;

	/* Larger than the INFO receive. */
	atk_open(&a, "", 1, false);
	ibtrs_info_req_encode(&req, "atk-big");
	memset(big, 0, sizeof(big));
	memcpy(big, &req, sizeof(req));
	send_frame(a.fd[0], TCP_OP_SEND, 0, 0, 0, sizeof(big), 0, 0, big,
		   sizeof(big));
	atk_expect_closed(&a);

	/* After INFO every receive has no buffer. */
	frame_case(TCP_OP_SEND, 0, 0, 0, 1, false, 0, 0, 1);
	frame_case(TCP_OP_SEND, 0, 0, 0, 4096, false, 0, 0, 4096);
}

static void case_send_without_info(void)
{
	unsigned char junk[sizeof(struct ibtrs_msg_info_req)];
	struct atk a;

	/* Not an INFO_REQ in the INFO receive. */
	atk_open(&a, "", 1, false);
	rnd_bytes(junk, sizeof(junk));
	send_frame(a.fd[0], TCP_OP_SEND, 0, 0, 0, sizeof(junk), 0, 0, junk,
		   sizeof(junk));
	atk_expect_closed(&a);

	/* An empty SEND for the INFO receive. */
	atk_open(&a, "", 1, false);
	send_frame(a.fd[0], TCP_OP_SEND, 0, 0, 0, 0, 0, 0, NULL, 0);
	atk_expect_closed(&a);

	/* An INFO_REQ with a bad name ('/'). */
	atk_open(&a, "", 1, false);
	atk_send_info(&a, 0, "a/b");
	atk_expect_closed(&a);

	/* INFO_REQ before all connections of the path are there. */
	atk_init(&a);
	a.fd[0] = atk_con(&a, 0, 2, true);
	CHECK(a.fd[0] >= 0);
	atk_send_info(&a, 0, "atk-early");
	atk_expect_closed(&a);

	/* A SEND on a connection with no INFO receive: whole path closed. */
	atk_open(&a, "", 2, false);
	send_frame(a.fd[1], TCP_OP_SEND, 0, 0, 0, 0, 0, 0, NULL, 0);
	atk_expect_closed(&a);
	atk_open(&a, "", 2, false);
	atk_send_info(&a, 1, "atk-info-on-1");
	atk_expect_closed(&a);

	/* The same after INFO, on con 0 and con 1. */
	atk_open(&a, "atk-after", 2, true);
	atk_ping(&a, 1, 0);
	send_frame(a.fd[0], TCP_OP_SEND, 0, 0, 0, 0, 0, 0, NULL, 0);
	atk_expect_closed(&a);
	atk_open(&a, "atk-after", 2, true);
	atk_ping(&a, 0, 0);
	atk_send_info(&a, 1, "atk-after");
	atk_expect_closed(&a);
}

static void case_req_before_info(void)
{
	struct atk a;

	atk_open(&a, "", 1, false);
	send_frame(a.fd[0], TCP_OP_WRITE_IMM, 0, 0,
		   ibtrs_imm_req(0, 0, a.off_bits), 0, 0, 0, NULL, 0);
	atk_expect_closed(&a);

	/* On an I/O connection of a path whose INFO has not come yet. */
	atk_open(&a, "", 2, false);
	send_frame(a.fd[1], TCP_OP_WRITE_IMM, 0, 0,
		   ibtrs_imm_req(1, 0, a.off_bits), 0, 0, 0, NULL, 0);
	atk_expect_closed(&a);

	/* A WRITE into a region before INFO, with a guessed key. */
	atk_open(&a, "", 1, false);
	send_frame(a.fd[0], TCP_OP_WRITE, 0, 0, 0, 8, 0x10000, 0, "guessed!",
		   8);
	atk_expect_closed(&a);
}

static void case_rkey(void)
{
	/* WRITE_IMM and WRITE with a wrong generation or index. */
	frame_case(TCP_OP_WRITE_IMM, 0, 0, 0, 24, true, 0x10000, 0, 24);
	frame_case(TCP_OP_WRITE, 0, 0, 0, 24, true, 0x1, 0, 24);
	frame_case(TCP_OP_WRITE, 0, 0, 0, 24, true, 0xffff, 0, 24);
	frame_case(TCP_OP_WRITE, 0, 0, 0, 24, false, 0, 0, 24);
}

static void case_raddr(void)
{
	uint64_t pool_len = (uint64_t)SRV_QD * ibtrs_chunk_size(SRV_MAX_IO);

	frame_case(TCP_OP_WRITE_IMM, 0, 0, 0, 24, true, 0, pool_len - 8, 24);
	frame_case(TCP_OP_WRITE, 0, 0, 0, 1, true, 0, pool_len, 1);
	frame_case(TCP_OP_WRITE, 0, 0, 0, 24, true, 0, UINT64_MAX - 3, 24);
	frame_case(TCP_OP_WRITE, 0, 0, 0, 16, true, 0, 1ull << 63, 16);
	frame_case(TCP_OP_WRITE, 0, 0, 0, 4096, true, 0, pool_len - 4095, 4096);
}

static void case_huge_len(void)
{
	/* Over the frame limit, at the limit, and the largest u32. */
	frame_case(TCP_OP_WRITE, 0, 0, 0, TCP_MAX_FRAME_LEN + 1, true, 0, 0,
		   64);
	frame_case(TCP_OP_WRITE_IMM, 0, 0, 0, TCP_MAX_FRAME_LEN, true, 0, 0,
		   64);
	frame_case(TCP_OP_WRITE, 0, 0, 0, UINT32_MAX, true, 0, 0, 64);
	frame_case(TCP_OP_SEND, 0, 0, 0, UINT32_MAX, false, 0, 0, 64);
	frame_case(TCP_OP_SEND, 0, 0, 0, TCP_MAX_FRAME_LEN, false, 0, 0, 64);
}

/* ------------------------------------------------------------------ */
/* attacks with TCP_OP_HDRS runs                                        */

#define HDRS_MAX_SENT 65536 /* payload bytes sent for one described frame */
#define HDRS_OFF 0x100	    /* where the runs' valid WRITEs go in the pool */

static uint64_t pool_len(void)
{
	return (uint64_t)SRV_QD * ibtrs_chunk_size(SRV_MAX_IO);
}

/* A described header (host order); rkey is XORed into the pool's key. */
static struct tcp_frame dfr(uint8_t op, uint32_t len, uint32_t rkey_xor,
			    uint64_t raddr)
{
	struct tcp_frame f = {
		.op = op, .len = len, .rkey = rkey_xor, .raddr = raddr
	};

	return f;
}

/* A valid WRITE of 8 bytes, the @i-th of a run. */
static struct tcp_frame dw8(unsigned int i)
{
	return dfr(TCP_OP_WRITE, 8, 0, HDRS_OFF + 8 * (uint64_t)i);
}

/* The header of a run of @n headers, and nothing wrong with it. */
static struct tcp_frame hdrs_hdr(unsigned int n)
{
	struct tcp_frame h = { .op = TCP_OP_HDRS,
			       .len = n * (uint32_t)sizeof(h) };

	return h;
}

/*
 * The wire image of a run on @a's connection: header @h, the @n described
 * headers @d, @extra zero bytes, then a payload for each described frame
 * (at most HDRS_MAX_SENT bytes of it), from @payload when not NULL. In the
 * described WRITE and WRITE_IMM with a payload the rkey is XORed into the
 * pool's key. Returns the image, to be freed, its length in *@len.
 */
static unsigned char *hdrs_image(const struct atk *a, const struct tcp_frame *h,
				 const struct tcp_frame *d, unsigned int n,
				 size_t extra, const unsigned char *payload,
				 size_t *len)
{
	size_t plen = 0, pos;
	unsigned char *buf;
	unsigned int i;

	for (i = 0; i < n; i++)
		plen += d[i].len < HDRS_MAX_SENT ? d[i].len : HDRS_MAX_SENT;
	*len = sizeof(*h) * (n + 1) + extra + plen;
	buf = calloc(1, *len);
	CHECK(buf);
	rt_frame_encode(buf, h);
	pos = sizeof(*h);
	for (i = 0; i < n; i++) {
		struct tcp_frame x = d[i];

		if ((x.op == TCP_OP_WRITE || x.op == TCP_OP_WRITE_IMM) && x.len)
			x.rkey ^= a->pool.key;
		rt_frame_encode(buf + pos, &x);
		pos += sizeof(x);
	}
	pos += extra;
	if (payload)
		memcpy(buf + pos, payload, plen);
	else
		memset(buf + pos, 0xd7, plen);
	return buf;
}

/*
 * A fresh session, checked with a ping, then a malformed run (see
 * hdrs_image()): the server must close the connection. A server that took
 * the run would keep it open, as nothing else in it is wrong.
 */
static void hdrs_bad(const char *what, const struct tcp_frame *h,
		     const struct tcp_frame *d, unsigned int n, size_t extra,
		     const unsigned char *payload)
{
	const char *was = cur_case;
	unsigned char *buf;
	struct atk a;
	size_t len;

	cur_case = what;
	atk_open(&a, "atk-hdrs", 1, true);
	atk_ping(&a, 0, 1);
	buf = hdrs_image(&a, h, d, n, extra, payload, &len);
	rt_send_all(a.fd[0], buf, len, IO_TIMEOUT_MS, NULL);
	atk_expect_closed(&a);
	free(buf);
	cur_case = was;
}

/* The same, the run being @d with its right header. */
static void hdrs_bad_run(const char *what, const struct tcp_frame *d,
			 unsigned int n)
{
	struct tcp_frame h = hdrs_hdr(n);

	hdrs_bad(what, &h, d, n, 0, NULL);
}

/*
 * Positive control: a valid run is taken, its requests answered; the
 * answers may come in a run too.
 */
static void hdrs_good(void)
{
	struct ibtrs_desc desc = { .addr = 0x3000, .key = 0x31, .len = 40 };
	struct tcp_frame d[4], h, f;
	unsigned char *req[2], *buf, *p, rbuf[64];
	size_t len, plen;
	unsigned int i, got = 0;
	int before;
	struct atk a;

	atk_open(&a, "atk-hdrs-good", 1, true);
	atk_ping(&a, 0, 1);
	before = atomic_load(&srv.atk_reqs);
	/* A WRITE at the very end of the pool, two requests (one with a
	 * payload read straight into place), a heartbeat. */
	d[0] = dfr(TCP_OP_WRITE, 16, 0, pool_len() - 16);
	req[0] = atk_req_frame(&a, 2, IBTRS_WRITE, 9000, 8, NULL, &d[1]);
	req[1] = atk_req_frame(&a, 3, IBTRS_READ, desc.len, 0, &desc, &d[2]);
	d[3] = dfr(TCP_OP_WRITE_IMM, 0, 0, 0);
	d[3].imm = ibtrs_imm_hb(IBTRS_IMM_HB);
	for (i = 1; i < 3; i++)
		d[i].rkey = 0; /* XORed into the pool's key */
	plen = 16 + d[1].len + d[2].len;
	p = malloc(plen);
	CHECK(p);
	memset(p, 0xe1, 16);
	memcpy(p + 16, req[0], d[1].len);
	memcpy(p + 16 + d[1].len, req[1], d[2].len);
	h = hdrs_hdr(4);
	buf = hdrs_image(&a, &h, d, 4, 0, p, &len);
	CHECK_EQ(rt_send_all(a.fd[0], buf, len, IO_TIMEOUT_MS, NULL), 0);
	/* Two answers and a heartbeat answer, in the order they left. */
	for (i = 0; i < 3; i++) {
		int ret = rt_recv_frame_opt(a.fd[0], &f, rbuf, sizeof(rbuf),
					    IO_TIMEOUT_MS, 0);

		if (ret) {
			fprintf(stderr,
				"%s: a valid TCP_OP_HDRS run got %u of 3 answers, then %s\n",
				cur_case, i,
				ret == -ETIMEDOUT ? "nothing" : "a close");
			exit(1);
		}
		CHECK_EQ(f.op, TCP_OP_WRITE_IMM);
		if (f.imm == ibtrs_imm_rsp(2, 0)) {
			CHECK_EQ(f.len, 0);
			got |= 1;
		} else if (f.imm == ibtrs_imm_rsp(3, 0)) {
			CHECK_EQ(f.len, desc.len);
			CHECK_EQ(f.rkey, desc.key);
			CHECK_EQ(f.raddr, desc.addr);
			CHECK_EQ(rbuf[0], 0x5a);
			CHECK_EQ(rbuf[desc.len - 1], 0x5a);
			got |= 2;
		} else {
			CHECK_EQ(f.imm, ibtrs_imm_hb(IBTRS_IMM_HB_ACK));
			got |= 4;
		}
	}
	CHECK_EQ(got, 7);
	CHECK_EQ(atomic_load(&srv.atk_reqs), before + 2);
	atk_ping(&a, 0, 4);
	printf("server attack hdrs: a valid run is taken (%lu runs received)\n",
	       rt_hdrs_runs(a.fd[0]));
	atk_close(&a);
	free(buf);
	free(p);
	free(req[0]);
	free(req[1]);
}

/* A run cut short in its headers, then the end of the stream. */
static void hdrs_truncated(void)
{
	const char *was = cur_case;
	struct tcp_frame d[2], h = hdrs_hdr(2);
	unsigned char *buf;
	struct atk a;
	size_t len;

	cur_case = "hdrs-truncated";
	atk_open(&a, "atk-hdrs", 1, true);
	atk_ping(&a, 0, 1);
	d[0] = dw8(0);
	d[1] = dw8(1);
	buf = hdrs_image(&a, &h, d, 2, 0, NULL, &len);
	rt_send_all(a.fd[0], buf, 2 * sizeof(h) + 5, IO_TIMEOUT_MS, NULL);
	shutdown(a.fd[0], SHUT_WR);
	atk_expect_closed(&a);
	free(buf);
	cur_case = was;
}

static void case_hdrs(void)
{
	struct tcp_frame d[TCP_MAX_HDRS + 1], h, hb;
	unsigned char pl[8 + 2 * sizeof(h)];
	unsigned int i;

	hdrs_good();

	/* Fewer than two headers, more than TCP_MAX_HDRS. */
	d[0] = dw8(0);
	hdrs_bad_run("hdrs-n1", d, 1);
	for (i = 0; i < TCP_MAX_HDRS + 1; i++)
		d[i] = dw8(i);
	hdrs_bad_run("hdrs-n65", d, TCP_MAX_HDRS + 1);

	/* A length that is not a number of headers, none, a huge one. */
	d[0] = dw8(0);
	d[1] = dw8(1);
	h = hdrs_hdr(2);
	h.len += 8;
	hdrs_bad("hdrs-len-56", &h, d, 2, 8, NULL);
	h.len = 23;
	hdrs_bad("hdrs-len-23", &h, NULL, 0, 23, NULL);
	h.len = 47;
	hdrs_bad("hdrs-len-47", &h, d, 1, 23, NULL);
	h.len = 0;
	hdrs_bad("hdrs-len-0", &h, NULL, 0, 0, NULL);
	h.len = 100000 * (uint32_t)sizeof(h);
	hdrs_bad("hdrs-len-huge", &h, d, 2, 0, NULL);

	/* Fields of the TCP_OP_HDRS header that must be 0. */
	h = hdrs_hdr(2);
	h.imm = 1;
	hdrs_bad("hdrs-imm", &h, d, 2, 0, NULL);
	h = hdrs_hdr(2);
	h.rkey = 0x10000;
	hdrs_bad("hdrs-rkey", &h, d, 2, 0, NULL);
	h = hdrs_hdr(2);
	h.raddr = 8;
	hdrs_bad("hdrs-raddr", &h, d, 2, 0, NULL);
	h = hdrs_hdr(2);
	h.flags = 1;
	hdrs_bad("hdrs-flags", &h, d, 2, 0, NULL);
	h = hdrs_hdr(2);
	h.reserved = 1;
	hdrs_bad("hdrs-reserved", &h, d, 2, 0, NULL);

	/*
	 * A described TCP_OP_HDRS, second or first. As its payload, the
	 * headers of a valid run of two heartbeats (no key, no payload), so
	 * that a server taking the nested run would answer and stay open.
	 */
	hb = dfr(TCP_OP_WRITE_IMM, 0, 0, 0);
	hb.imm = ibtrs_imm_hb(IBTRS_IMM_HB);
	h = hdrs_hdr(2);
	memset(pl, 0xd7, 8);
	rt_frame_encode(pl + 8, &hb);
	rt_frame_encode(pl + 8 + sizeof(h), &hb);
	d[0] = dw8(0);
	d[1] = h;
	hdrs_bad("hdrs-nested-second", &h, d, 2, 0, pl);
	rt_frame_encode(pl, &hb);
	rt_frame_encode(pl + sizeof(h), &hb);
	memset(pl + 2 * sizeof(h), 0xd7, 8);
	d[0] = h;
	d[1] = dw8(0);
	hdrs_bad("hdrs-nested-first", &h, d, 2, 0, pl);

	/* A described header with an unknown op, flags, reserved bits, a
	 * length over the frame limit. */
	d[0] = dw8(0);
	d[1] = dfr(9, 8, 0, 0);
	d[2] = dw8(2);
	hdrs_bad_run("hdrs-op-9", d, 3);
	d[0] = dfr(0, 0, 0, 0);
	d[1] = dw8(1);
	hdrs_bad_run("hdrs-op-0", d, 2);
	d[0] = dw8(0);
	d[1] = dw8(1);
	d[1].flags = 0x80;
	hdrs_bad_run("hdrs-described-flags", d, 2);
	d[1] = dw8(1);
	d[1].reserved = 2;
	hdrs_bad_run("hdrs-described-reserved", d, 2);
	d[1] = dfr(TCP_OP_WRITE, TCP_MAX_FRAME_LEN + 1, 0, 0);
	hdrs_bad_run("hdrs-described-huge", d, 2);

	/*
	 * A described WRITE with a bad key, small and large (read straight
	 * into place), first or later; a heartbeat after it is answered
	 * if the run is taken.
	 */
	d[0] = dw8(0);
	d[1] = dfr(TCP_OP_WRITE, 8, 0x10000, HDRS_OFF);
	d[2] = dfr(TCP_OP_WRITE_IMM, 0, 0, 0);
	d[2].imm = ibtrs_imm_hb(IBTRS_IMM_HB);
	hdrs_bad_run("hdrs-bad-key", d, 3);
	d[0] = dfr(TCP_OP_WRITE, 4096, 0x1, HDRS_OFF);
	d[1] = dw8(1);
	hdrs_bad_run("hdrs-bad-key-large", d, 3);
	d[0] = dfr(TCP_OP_WRITE, 24, 0xffff, HDRS_OFF);
	hdrs_bad_run("hdrs-bad-key-index", d, 3);

	/* A described WRITE out of the bounds of its region. */
	d[0] = dw8(0);
	d[1] = dfr(TCP_OP_WRITE, 24, 0, pool_len() - 8);
	hdrs_bad_run("hdrs-bounds", d, 3);
	d[1] = dfr(TCP_OP_WRITE, 1, 0, pool_len());
	hdrs_bad_run("hdrs-bounds-end", d, 3);
	d[0] = dfr(TCP_OP_WRITE, 4096, 0, pool_len() - 4095);
	d[1] = dw8(1);
	hdrs_bad_run("hdrs-bounds-large", d, 3);
	d[0] = dw8(0);
	d[1] = dfr(TCP_OP_WRITE, 16, 0, UINT64_MAX - 3);
	hdrs_bad_run("hdrs-bounds-wrap", d, 3);

	/* A described SEND that finds no receive buffer (after INFO). */
	d[1] = dfr(TCP_OP_SEND, 1, 0, 0);
	hdrs_bad_run("hdrs-send-no-buffer", d, 3);

	hdrs_truncated();
}

/* A fresh session, a trailer @t written at @off of chunk 0, then imm. */
static void trailer_case(uint32_t chunk, uint32_t off, uint16_t type,
			 uint16_t usr_len, uint32_t desc_len, bool write)
{
	struct ibtrs_trailer tr;
	struct ibtrs_req_trailer t = {
		.dir = IBTRS_WRITE,
		.usr_len = usr_len,
		.gen = 1,
		.desc = { .addr = 0x2000, .key = 0x99, .len = desc_len },
	};
	struct atk a;
	uint16_t le;

	atk_open(&a, "atk-trailer", 1, true);
	atk_ping(&a, 0, 2);
	ibtrs_trailer_encode(&tr, &t);
	le = htole16(type);
	memcpy(&tr.type, &le, sizeof(le));
	if (write)
		send_frame(a.fd[0], TCP_OP_WRITE, 0, 0, 0, sizeof(tr),
			   a.pool.key,
			   chunk_addr(&a, chunk < SRV_QD ? chunk : 0) + off,
			   &tr, sizeof(tr));
	send_frame(a.fd[0], TCP_OP_WRITE_IMM, 0, 0,
		   ibtrs_imm_req(chunk, off, a.off_bits), 0, 0, 0, NULL, 0);
	atk_expect_closed(&a);
}

static void case_chunk_id(void)
{
	uint32_t chunk_size = ibtrs_chunk_size(SRV_MAX_IO);
	unsigned int off_bits =
		(unsigned int)ibtrs_imm_off_bits(SRV_QD, chunk_size);
	uint32_t max_id = (1u << (IBTRS_IMM_PAYLOAD_BITS - off_bits)) - 1;

	trailer_case(SRV_QD, 0, IBTRS_TRAILER_WRITE, 0, 0, false);
	trailer_case(SRV_QD + 1, 64, IBTRS_TRAILER_WRITE, 0, 0, false);
	trailer_case(max_id, 0, IBTRS_TRAILER_WRITE, 0, 0, false);
}

static void case_trailer_off(void)
{
	uint32_t chunk_size = ibtrs_chunk_size(SRV_MAX_IO);
	unsigned int off_bits =
		(unsigned int)ibtrs_imm_off_bits(SRV_QD, chunk_size);

	trailer_case(0, chunk_size - sizeof(struct ibtrs_trailer) + 1,
		     IBTRS_TRAILER_WRITE, 0, 0, false);
	trailer_case(0, chunk_size, IBTRS_TRAILER_WRITE, 0, 0, false);
	trailer_case(0, (1u << off_bits) - 1, IBTRS_TRAILER_WRITE, 0, 0, false);
	/* Data longer than max_io_size, trailer inside the chunk. */
	trailer_case(0, SRV_MAX_IO + 1, IBTRS_TRAILER_WRITE, 0, 0, true);
	trailer_case(0, chunk_size - sizeof(struct ibtrs_trailer),
		     IBTRS_TRAILER_WRITE, 0, 0, true);
}

static void case_trailer_type(void)
{
	trailer_case(0, 0, 0x41, 0, 0, true);
	trailer_case(3, 100, 0, 0, 0, false); /* the zeroed chunk */
	trailer_case(0, 10, 0xffff, 0, 0, true);
}

static void case_usr_len(void)
{
	trailer_case(0, 8, IBTRS_TRAILER_WRITE, 16, 0, true);
	trailer_case(0, 0, IBTRS_TRAILER_READ, 1, 0, true);
	trailer_case(0, 3000, IBTRS_TRAILER_WRITE, IBTRS_MAX_USR_MSG + 1, 0,
		     true);
	trailer_case(0, 3000, IBTRS_TRAILER_WRITE, 0xffff, 0, true);
	/* READ whose destination length is not its data length. */
	trailer_case(0, 512, IBTRS_TRAILER_READ, 0, 511, true);
	trailer_case(0, 512, IBTRS_TRAILER_READ, 0, UINT32_MAX, true);
}

static void case_dup_info(void)
{
	struct atk a;

	atk_open(&a, "", 1, false);
	atk_send_info(&a, 0, "atk-dupinfo");
	atk_send_info(&a, 0, "atk-dupinfo");
	atk_expect_closed(&a); /* the INFO_RSP may come first */

	/* INFO_REQ again later. */
	atk_open(&a, "atk-dupinfo2", 1, true);
	atk_ping(&a, 0, 0);
	atk_send_info(&a, 0, "atk-dupinfo2");
	atk_expect_closed(&a);
}

/* A second path naming the session differently is closed alone. */
static void case_name_mismatch(void)
{
	struct atk a, b;

	atk_open(&a, "atk-name-a", 1, true);
	atk_init(&b);
	memcpy(b.sess_uuid, a.sess_uuid, IBTRS_UUID_LEN);
	b.fd[0] = atk_con(&b, 0, 1, true);
	CHECK(b.fd[0] >= 0);
	atk_send_info(&b, 0, "atk-name-b");
	atk_expect_closed(&b);
	atk_ping(&a, 0, 4);
	atk_close(&a);
}

/*
 * A request on a chunk whose operation runs: the server closes the
 * connection, or answers -EBUSY without giving it to the application; in
 * that case a malformed frame ends the connection.
 */
static void busy_refused(struct atk *a, uint32_t chunk)
{
	int held = atomic_load(&srv.nr_held);
	struct tcp_frame f;
	char buf[64];
	int ret;

	ret = rt_recv_frame_opt(a->fd[0], &f, buf, sizeof(buf),
				CLOSE_TIMEOUT_MS, 0);
	if (ret == -ECONNRESET) {
		atk_close(a);
		return;
	}
	if (ret) {
		fprintf(stderr,
			"%s: no answer and no close for a request on a running chunk (%d)\n",
			cur_case, ret);
		exit(1);
	}
	CHECK_EQ(f.op, TCP_OP_WRITE_IMM);
	CHECK_EQ(f.len, 0);
	CHECK_EQ(f.imm, ibtrs_imm_rsp(chunk, -EBUSY));
	usleep(50 * 1000);
	CHECK_EQ(atomic_load(&srv.nr_held), held);
	send_frame(a->fd[0], 0x77, 0, 0, 0, 0, 0, 0, NULL, 0);
	atk_expect_closed(a);
}

static void case_busy_chunk(void)
{
	struct ibtrs_desc d = { .addr = 0x8000, .key = 0x1234, .len = 4096 };
	double end;
	struct atk a;
	int i, n, disc;

	disc = atomic_load(&srv.hold_disc);
	atk_open(&a, "hold-1", 1, true);
	CHECK_EQ(atk_req(&a, 0, 3, IBTRS_WRITE, 100, 0, NULL), 0);
	CHECK_EQ(atk_req(&a, 0, 5, IBTRS_READ, d.len, 16, &d), 0);
	end = t_now() + IO_TIMEOUT_MS / 1000.0;
	while (atomic_load(&srv.nr_held) < 2 && t_now() < end)
		usleep(1000);
	CHECK_EQ(atomic_load(&srv.nr_held), 2);
	/* Chunk 3 is running: a second request on it is refused. */
	CHECK_EQ(atk_req(&a, 0, 3, IBTRS_WRITE, 200, 0, NULL), 0);
	busy_refused(&a, 3);
	/* The session lives on until its operations are answered. */
	usleep(200 * 1000);
	CHECK_EQ(atomic_load(&srv.hold_disc), disc);
	pthread_mutex_lock(&srv.lock);
	n = atomic_load(&srv.nr_held);
	for (i = 0; i < n; i++)
		ibtrs_srv_resp_rdma(srv.held[i], 0);
	atomic_store(&srv.nr_held, 0);
	pthread_mutex_unlock(&srv.lock);
	end = t_now() + IO_TIMEOUT_MS / 1000.0;
	while (atomic_load(&srv.hold_disc) == disc && t_now() < end)
		usleep(1000);
	CHECK_EQ(atomic_load(&srv.hold_disc), disc + 1);

	/* Held with the connection still open, answered, then reused. */
	atk_open(&a, "hold-2", 1, true);
	CHECK_EQ(atk_req(&a, 0, 7, IBTRS_WRITE, 10, 0, NULL), 0);
	end = t_now() + IO_TIMEOUT_MS / 1000.0;
	while (atomic_load(&srv.nr_held) < 1 && t_now() < end)
		usleep(1000);
	CHECK_EQ(atomic_load(&srv.nr_held), 1);
	pthread_mutex_lock(&srv.lock);
	ibtrs_srv_resp_rdma(srv.held[0], -EIO);
	atomic_store(&srv.nr_held, 0);
	pthread_mutex_unlock(&srv.lock);
	{
		struct tcp_frame f;
		char buf[8];

		rt_recv_frame(a.fd[0], &f, buf, sizeof(buf), IO_TIMEOUT_MS);
		CHECK_EQ(f.op, TCP_OP_WRITE_IMM);
		CHECK_EQ(f.imm, ibtrs_imm_rsp(7, -EIO));
	}
	CHECK_EQ(atk_req(&a, 0, 7, IBTRS_WRITE, 10, 0, NULL), 0);
	end = t_now() + IO_TIMEOUT_MS / 1000.0;
	while (atomic_load(&srv.nr_held) < 1 && t_now() < end)
		usleep(1000);
	CHECK_EQ(atomic_load(&srv.nr_held), 1);
	CHECK_EQ(atk_req(&a, 0, 7, IBTRS_WRITE, 10, 0, NULL), 0);
	busy_refused(&a, 7);
	pthread_mutex_lock(&srv.lock);
	ibtrs_srv_resp_rdma(srv.held[0], 0);
	atomic_store(&srv.nr_held, 0);
	pthread_mutex_unlock(&srv.lock);
	end = t_now() + IO_TIMEOUT_MS / 1000.0;
	while (atomic_load(&srv.hold_disc) == disc + 1 && t_now() < end)
		usleep(1000);
	CHECK_EQ(atomic_load(&srv.hold_disc), disc + 2);
}

/*
 * A late copy of an old request: after the tag ran a newer one, a request
 * with an older generation (what a dead path delivers after its replay
 * ran) is dropped, unanswered and not run, and counted as stale; the same
 * generation again is a replay, answered without running.
 */
static void case_stale_gen(void)
{
	struct ibtrs_srv_stats st = { .size = sizeof(st) };
	uint64_t stale0, replays0;
	struct pollfd pfd;
	struct atk a;
	int before;

	CHECK_EQ(ibtrs_srv_get_stats(srv.ctx, &st), 0);
	stale0 = st.stale;
	replays0 = st.replays;
	atk_open(&a, "stale", 1, true);
	before = atomic_load(&srv.atk_reqs);
	a.gen = 9; /* the next request is generation 10 */
	CHECK_EQ(atk_req(&a, 0, 4, IBTRS_WRITE, 64, 8, NULL), 0);
	atk_expect_rsp(&a, 0, 4, NULL);
	a.gen = 4; /* generation 5: older than 10 */
	CHECK_EQ(atk_req(&a, 0, 4, IBTRS_WRITE, 64, 8, NULL), 0);
	a.gen = 9; /* generation 10 again: a replay */
	CHECK_EQ(atk_req(&a, 0, 4, IBTRS_WRITE, 64, 8, NULL), 0);
	atk_expect_rsp(&a, 0, 4, NULL);
	/* Generation 11: a new request, run and answered. The stale one
	 * would have been answered before the replay: one answer each. */
	CHECK_EQ(atk_req(&a, 0, 4, IBTRS_WRITE, 64, 8, NULL), 0);
	atk_expect_rsp(&a, 0, 4, NULL);
	CHECK_EQ(atomic_load(&srv.atk_reqs), before + 2);
	CHECK_EQ(ibtrs_srv_get_stats(srv.ctx, &st), 0);
	CHECK_EQ(st.stale, stale0 + 1);
	CHECK_EQ(st.replays, replays0 + 1);
	/* The connection still works, and nothing is left unread. */
	atk_ping(&a, 0, 6);
	pfd = (struct pollfd){ .fd = a.fd[0], .events = POLLIN };
	CHECK_EQ(poll(&pfd, 1, 100), 0);
	CHECK_EQ(rt_frames_pending(a.fd[0]), 0);
	atk_close(&a);
}

static void case_unknown_imm(void)
{
	frame_case(TCP_OP_WRITE_IMM, 0, 0, 5u << IBTRS_IMM_TYPE_SHIFT, 0, false,
		   0, 0, 0);
	frame_case(TCP_OP_WRITE_IMM, 0, 0,
		   (uint32_t)IBTRS_IMM_IO_RSP << IBTRS_IMM_TYPE_SHIFT, 0, false,
		   0, 0, 0);
	frame_case(TCP_OP_WRITE_IMM, 0, 0, 0xffffffffu, 0, false, 0, 0, 0);
}

static void case_truncated(void)
{
	struct tcp_frame f = { .op = TCP_OP_WRITE, .len = htole32(1000) };
	unsigned char half[500];
	struct atk a;
	int fd;

	/* Part of a header, then close. */
	atk_open(&a, "atk-trunc1", 1, true);
	rt_send_all(a.fd[0], &f, 10, IO_TIMEOUT_MS, NULL);
	atk_close(&a);

	/* Part of a payload, then close. */
	atk_open(&a, "atk-trunc2", 1, true);
	memset(half, 0xee, sizeof(half));
	send_frame(a.fd[0], TCP_OP_WRITE, 0, 0, 0, 1000, a.pool.key, 0, half,
		   sizeof(half));
	atk_close(&a);

	/* The same, half-closed: the server must close its side. */
	atk_open(&a, "atk-trunc3", 1, true);
	rt_send_all(a.fd[0], &f, 10, IO_TIMEOUT_MS, NULL);
	shutdown(a.fd[0], SHUT_WR);
	atk_expect_closed(&a);
	atk_open(&a, "atk-trunc4", 1, true);
	send_frame(a.fd[0], TCP_OP_WRITE_IMM, 0, 0,
		   ibtrs_imm_req(0, 0, a.off_bits), 1000, a.pool.key, 0, half,
		   sizeof(half));
	shutdown(a.fd[0], SHUT_WR);
	atk_expect_closed(&a);

	/* A truncated hello. */
	fd = raw_connect();
	rt_send_all(fd, TCP_HELLO_MAGIC "\0\0\0\0", 8, IO_TIMEOUT_MS, NULL);
	shutdown(fd, SHUT_WR);
	CHECK_EQ(expect_closed(fd), 0);
	fd = raw_connect();
	rt_send_all(fd, TCP_HELLO_MAGIC, 4, IO_TIMEOUT_MS, NULL);
	close(fd);

	/* Connected, then reset with unread data on both sides. */
	atk_open(&a, "atk-reset", 1, true);
	{
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		atk_req(&a, 0, 1, IBTRS_WRITE, 64, 0, NULL);
		setsockopt(a.fd[0], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	atk_close(&a);
}

/* ------------------------------------------------------------------ */
/* a slow hello, one byte per 100 ms, beside the other attacks          */

static atomic_int slow_result; /* 0 running, 1 ok, -1 failed */

static void *slow_thread(void *arg)
{
	struct ibtrs_msg_conn_req m;
	struct tcp_hello h;
	struct atk a;
	size_t i;
	int ret;

	(void)arg;
	atk_init(&a);
	conn_req(&m, IBTRS_PROTO_VER, 0, 1, true, a.sess_uuid, a.path_uuid);
	memcpy(h.magic, TCP_HELLO_MAGIC, 4);
	h.status = 0;
	memcpy(h.priv, &m, sizeof(h.priv));
	a.fd[0] = raw_connect();
	for (i = 0; i < sizeof(h); i++) {
		if (rt_send_all(a.fd[0], (char *)&h + i, 1, IO_TIMEOUT_MS,
				NULL))
			break;
		usleep(100 * 1000);
	}
	if (i < sizeof(h)) {
		/* Closed by a hello timeout: fine as well. */
		expect_closed(a.fd[0]);
		atomic_store(&slow_result, 1);
		return NULL;
	}
	ret = read_answer(a.fd[0], &a.rsp);
	if (ret < 0) {
		/* No answer: the server must have closed it. */
		expect_closed(a.fd[0]);
		atomic_store(&slow_result, 1);
		return NULL;
	}
	CHECK_EQ(ret, 0);
	a.off_bits = (unsigned int)ibtrs_imm_off_bits(a.rsp.queue_depth,
						      a.rsp.chunk_size);
	atk_send_info(&a, 0, "atk-slow");
	atk_recv_info(&a, 0);
	atk_ping(&a, 0, 0);
	send_frame(a.fd[0], 9, 0, 0, 0, 0, 0, 0, NULL, 0);
	atk_expect_closed(&a);
	atomic_store(&slow_result, 1);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* 200 connections that never send a hello                              */

static void case_silent(void)
{
	static int fds[SILENT_CONS];
	static bool closed[SILENT_CONS];
	unsigned int i, nr_closed = 0, early;
	double start, end;
	char buf[64];
	struct atk a;

	for (i = 0; i < SILENT_CONS; i++) {
		fds[i] = raw_connect();
		closed[i] = false;
	}
	start = t_now();
	end = start + SILENT_WAIT_S;
	/* While silent peers wait, a new client still gets in. */
	atk_open(&a, "atk-after-silent", 1, true);
	atk_ping(&a, 0, 0);
	atk_close(&a);
	early = 0;
	for (;;) {
		for (i = 0; i < SILENT_CONS; i++) {
			ssize_t n;

			if (closed[i])
				continue;
			n = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT);
			if (n > 0) {
				fprintf(stderr,
					"silent: the server sent %zd bytes before any hello\n",
					n);
				exit(1);
			}
			if (!n || (n < 0 && errno != EAGAIN)) {
				closed[i] = true;
				nr_closed++;
			}
		}
		if (t_now() < start + 1.0)
			early = nr_closed;
		if (nr_closed == SILENT_CONS || t_now() > end)
			break;
		usleep(20 * 1000);
	}
	if (nr_closed < SILENT_CONS)
		soft_fail(
			"silent: %u of %u connections that never sent a hello are still open after %.0f s (%u were closed within 1 s); the server has no hello timeout",
			SILENT_CONS - nr_closed, SILENT_CONS, SILENT_WAIT_S,
			early);
	else
		printf("server attack silent: all %u silent connections closed after %.1f s\n",
		       nr_closed, t_now() - start);
	for (i = 0; i < SILENT_CONS; i++)
		close(fds[i]);
}

/* ------------------------------------------------------------------ */
/* fake servers against a client                                        */

enum fake_mode {
	FAKE_VERSION_ACCEPT,
	FAKE_VERSION_REJECT,
	FAKE_REJECT_NOSUPPORT,
	FAKE_GARBAGE_HELLO,
	FAKE_CLOSE_AT_ONCE,
	FAKE_CLOSE_AFTER_HELLO,
	FAKE_BAD_GEOMETRY,
	FAKE_BAD_INFO,
	FAKE_INFO_MISMATCH,
	FAKE_NO_INFO,
	FAKE_SILENT,
	FAKE_SHORT_HELLO,
	FAKE_GEOMETRY_CHANGE,
	/* the open succeeds, then: */
	FAKE_RSP_NOT_INFLIGHT,
	FAKE_RSP_CHUNK_RANGE,
	FAKE_SEND_NO_RECV,
	FAKE_SEND_EMPTY,
	FAKE_BAD_RKEY,
	FAKE_UNKNOWN_IMM,
	FAKE_BAD_FRAME,
	FAKE_DOUBLE_RSP,
	FAKE_DROP_INFLIGHT,
	FAKE_HUGE_FRAME,
	FAKE_BAD_HDRS,
	/* the I/O connection dies while the path connects */
	FAKE_CLOSE_IO_CON,
};

static const char *const fake_names[] = {
	"version-accept",  "version-reject",   "reject-eprotonosupport",
	"garbage-hello",   "close-at-once",    "close-after-hello",
	"bad-geometry",	   "bad-info",	       "info-mismatch",
	"no-info",	   "silent",	       "short-hello",
	"geometry-change", "rsp-not-inflight", "rsp-chunk-range",
	"send-no-recv",	   "send-empty",       "bad-rkey",
	"unknown-imm",	   "bad-frame",	       "double-rsp",
	"drop-inflight",   "huge-frame",       "bad-hdrs",
	"close-io-con",
};

struct fake {
	enum fake_mode mode;
	int lfd;
	uint16_t port;
	int ctl[2]; /* main -> fake: 'g' act, 'q' quit */
	int fds[32];
	unsigned int nfds;
	int info_fd;
	atomic_int reqs;
	pthread_t thr;
};

static void fake_drop(struct fake *fk, unsigned int i)
{
	close(fk->fds[i]);
	if (fk->info_fd == fk->fds[i])
		fk->info_fd = -1;
	fk->fds[i] = fk->fds[--fk->nfds];
}

static void fake_answer(struct fake *fk, int fd, uint32_t status,
			const struct ibtrs_conn_rsp *r)
{
	struct ibtrs_msg_conn_rsp m;

	ibtrs_conn_rsp_encode(&m, r);
	send_hello(fd, TCP_HELLO_MAGIC, status, &m);
	(void)fk;
}

/* A new connection: read its hello and answer as the mode says. */
static void fake_accept(struct fake *fk)
{
	struct ibtrs_conn_rsp r = {
		.version = IBTRS_PROTO_VER,
		.queue_depth = FAKE_QD,
		.max_io_size = FAKE_MAX_IO,
		.chunk_size = ibtrs_chunk_size(FAKE_MAX_IO),
		.max_usr_msg = IBTRS_MAX_USR_MSG,
	};
	struct ibtrs_conn_req cr;
	struct tcp_hello h;
	unsigned char junk[sizeof(h)];
	int fd;

	fd = accept4(fk->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	rt_frames_reset(fd);
	if (fk->mode == FAKE_CLOSE_AT_ONCE) {
		close(fd);
		return;
	}
	if (rt_recv_all(fd, &h, sizeof(h), IO_TIMEOUT_MS)) {
		close(fd);
		return;
	}
	CHECK(!memcmp(h.magic, TCP_HELLO_MAGIC, 4));
	CHECK_EQ(ibtrs_conn_req_decode(h.priv, sizeof(h.priv), &cr), 0);
	switch (fk->mode) {
	case FAKE_VERSION_ACCEPT:
		r.version = (IBTRS_PROTO_VER_MAJOR + 1) << 8;
		fake_answer(fk, fd, TCP_HELLO_ACCEPT, &r);
		break;
	case FAKE_VERSION_REJECT:
		r.version = (IBTRS_PROTO_VER_MAJOR + 1) << 8;
		r.err = EPROTONOSUPPORT;
		fake_answer(fk, fd, TCP_HELLO_REJECT, &r);
		break;
	case FAKE_REJECT_NOSUPPORT:
		r.err = EPROTONOSUPPORT;
		fake_answer(fk, fd, TCP_HELLO_REJECT, &r);
		break;
	case FAKE_GARBAGE_HELLO:
		rnd_bytes(junk, sizeof(junk));
		junk[0] = 'Z';
		rt_send_all(fd, junk, sizeof(junk), IO_TIMEOUT_MS, NULL);
		break;
	case FAKE_CLOSE_AFTER_HELLO:
		fake_answer(fk, fd, TCP_HELLO_ACCEPT, &r);
		close(fd);
		return;
	case FAKE_BAD_GEOMETRY:
		r.chunk_size = r.max_io_size; /* no room for the header */
		fake_answer(fk, fd, TCP_HELLO_ACCEPT, &r);
		break;
	case FAKE_SILENT:
		break;
	case FAKE_SHORT_HELLO:
		rt_send_all(fd, TCP_HELLO_MAGIC "\0\0\0\0\xbd\x1b", 10,
			    IO_TIMEOUT_MS, NULL);
		close(fd);
		return;
	case FAKE_GEOMETRY_CHANGE:
		if (cr.cid)
			r.queue_depth = FAKE_QD / 2;
		fake_answer(fk, fd, TCP_HELLO_ACCEPT, &r);
		break;
	case FAKE_CLOSE_IO_CON:
		fake_answer(fk, fd, TCP_HELLO_ACCEPT, &r);
		if (cr.cid) {
			close(fd);
			return;
		}
		break;
	default:
		fake_answer(fk, fd, TCP_HELLO_ACCEPT, &r);
		break;
	}
	if (fk->nfds == sizeof(fk->fds) / sizeof(fk->fds[0])) {
		close(fd);
		return;
	}
	fk->fds[fk->nfds++] = fd;
}

static void fake_send_info(struct fake *fk, int fd)
{
	char buf[IBTRS_INFO_RSP_MAX_LEN];
	struct ibtrs_desc d = {
		.addr = 0,
		.key = FAKE_KEY,
		.len = FAKE_QD * ibtrs_chunk_size(FAKE_MAX_IO),
	};
	size_t len;

	if (fk->mode == FAKE_NO_INFO)
		return;
	if (fk->mode == FAKE_INFO_MISMATCH)
		d.len -= 4096;
	/* Let the client see its I/O connection die first. */
	if (fk->mode == FAKE_CLOSE_IO_CON)
		usleep(300 * 1000);
	len = ibtrs_info_rsp_encode(buf, &d, 1);
	if (fk->mode == FAKE_BAD_INFO)
		memset(buf + 2, 0, 2); /* sg_cnt 0 */
	send_frame(fd, TCP_OP_SEND, 0, 0, 0, (uint32_t)len, 0, 0, buf, len);
	fk->info_fd = fd;
}

/* One frame @f from the client. Return: false to drop the connection. */
static bool fake_frame_one(struct fake *fk, int fd, const struct tcp_frame *f)
{
	uint32_t chunk, off, rsp;
	unsigned int off_bits = (unsigned int)ibtrs_imm_off_bits(
		FAKE_QD, ibtrs_chunk_size(FAKE_MAX_IO));

	if (f->op == TCP_OP_SEND) {
		fake_send_info(fk, fd);
		return true;
	}
	if (f->op != TCP_OP_WRITE_IMM ||
	    ibtrs_imm_type(f->imm) != IBTRS_IMM_IO_REQ)
		return true;
	atomic_fetch_add(&fk->reqs, 1);
	ibtrs_imm_req_unpack(f->imm, off_bits, &chunk, &off);
	rsp = ibtrs_imm_rsp(chunk, 0);
	switch (fk->mode) {
	case FAKE_DROP_INFLIGHT:
		return false;
	case FAKE_DOUBLE_RSP:
		send_frame(fd, TCP_OP_WRITE_IMM, 0, 0, rsp, 0, 0, 0, NULL, 0);
		send_frame(fd, TCP_OP_WRITE_IMM, 0, 0, rsp, 0, 0, 0, NULL, 0);
		break;
	default:
		send_frame(fd, TCP_OP_WRITE_IMM, 0, 0, rsp, 0, 0, 0, NULL, 0);
		break;
	}
	return true;
}

/*
 * What the client sent: a frame, or the frames of a TCP_OP_HDRS run that
 * need no more bytes. Return: false when the connection ended.
 */
static bool fake_frame(struct fake *fk, int fd)
{
	static unsigned char buf[FAKE_MAX_IO + IBTRS_HDR_ROOM];
	struct tcp_frame f;

	do {
		if (rt_recv_frame_opt(fd, &f, buf, sizeof(buf), IO_TIMEOUT_MS,
				      RT_KEEP_HB))
			return false;
		if (!fake_frame_one(fk, fd, &f))
			return false;
	} while (rt_frames_pending(fd));
	return true;
}

/* The attack after the open succeeded, on con 0. */
static void fake_act(struct fake *fk)
{
	static unsigned char junk[4096];
	struct tcp_frame hb = { .op = TCP_OP_WRITE_IMM,
				.imm = ibtrs_imm_hb(IBTRS_IMM_HB) };
	int fd = fk->info_fd;

	if (fd < 0)
		return;
	switch (fk->mode) {
	case FAKE_RSP_NOT_INFLIGHT:
		send_frame(fd, TCP_OP_WRITE_IMM, 0, 0, ibtrs_imm_rsp(3, 0), 0,
			   0, 0, NULL, 0);
		break;
	case FAKE_RSP_CHUNK_RANGE:
		send_frame(fd, TCP_OP_WRITE_IMM, 0, 0,
			   ibtrs_imm_rsp(FAKE_QD + 5, -EIO), 0, 0, 0, NULL, 0);
		break;
	case FAKE_SEND_NO_RECV:
		send_frame(fd, TCP_OP_SEND, 0, 0, 0, 100, 0, 0, junk, 100);
		break;
	case FAKE_SEND_EMPTY:
		send_frame(fd, TCP_OP_SEND, 0, 0, 0, 0, 0, 0, NULL, 0);
		break;
	case FAKE_BAD_RKEY:
		send_frame(fd, TCP_OP_WRITE, 0, 0, 0, 16, 0xdead0001u, 0, junk,
			   16);
		break;
	case FAKE_UNKNOWN_IMM:
		send_frame(fd, TCP_OP_WRITE_IMM, 0, 0,
			   6u << IBTRS_IMM_TYPE_SHIFT, 0, 0, 0, NULL, 0);
		break;
	case FAKE_BAD_FRAME:
		send_frame(fd, 0x42, 0, 0, 0, 0, 0, 0, NULL, 0);
		break;
	case FAKE_HUGE_FRAME:
		send_frame(fd, TCP_OP_WRITE_IMM, 0, 0, ibtrs_imm_rsp(0, 0),
			   UINT32_MAX, 0, 0, junk, sizeof(junk));
		break;
	case FAKE_BAD_HDRS:
		/* A run of one heartbeat: fine but for its length. */
		rt_frame_encode(junk, &hb);
		send_frame(fd, TCP_OP_HDRS, 0, 0, 0, sizeof(hb), 0, 0, junk,
			   sizeof(hb));
		break;
	default:
		break;
	}
}

static void *fake_thread(void *arg)
{
	struct fake *fk = arg;
	double end = t_now() + 60;

	while (t_now() < end) {
		struct pollfd p[40];
		unsigned int i, n = 0;
		char c;

		p[n].fd = fk->lfd;
		p[n++].events = POLLIN;
		p[n].fd = fk->ctl[0];
		p[n++].events = POLLIN;
		for (i = 0; i < fk->nfds; i++) {
			p[n].fd = fk->fds[i];
			p[n++].events = POLLIN;
		}
		if (poll(p, n, 100) <= 0)
			continue;
		if (p[1].revents) {
			if (read(fk->ctl[0], &c, 1) != 1 || c == 'q')
				break;
			fake_act(fk);
			continue;
		}
		if (p[0].revents)
			fake_accept(fk);
		/* Connections, from the last so that dropping is safe. */
		for (i = n; i-- > 2;) {
			if (!p[i].revents)
				continue;
			if (!fake_frame(fk, p[i].fd)) {
				unsigned int j;

				for (j = 0; j < fk->nfds; j++)
					if (fk->fds[j] == p[i].fd)
						break;
				if (j < fk->nfds)
					fake_drop(fk, j);
			}
		}
	}
	while (fk->nfds)
		fake_drop(fk, 0);
	return NULL;
}

static void fake_start(struct fake *fk, enum fake_mode mode)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);

	memset(fk, 0, sizeof(*fk));
	fk->mode = mode;
	fk->info_fd = -1;
	fk->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fk->lfd >= 0);
	CHECK_EQ(bind(fk->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(listen(fk->lfd, 16), 0);
	CHECK_EQ(getsockname(fk->lfd, (struct sockaddr *)&a, &alen), 0);
	fk->port = ntohs(a.sin_port);
	CHECK_EQ(pipe2(fk->ctl, O_CLOEXEC), 0);
	CHECK_EQ(pthread_create(&fk->thr, NULL, fake_thread, fk), 0);
}

static void fake_stop(struct fake *fk)
{
	CHECK_EQ(write(fk->ctl[1], "q", 1), 1);
	pthread_join(fk->thr, NULL);
	close(fk->ctl[0]);
	close(fk->ctl[1]);
	close(fk->lfd);
}

static struct {
	pthread_mutex_t lock;
	int calls;
	int err;
} fconf = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void fake_conf(void *priv, int err)
{
	(void)priv;
	pthread_mutex_lock(&fconf.lock);
	fconf.calls++;
	fconf.err = err;
	pthread_mutex_unlock(&fconf.lock);
}

static int fconf_calls(void)
{
	int n;

	pthread_mutex_lock(&fconf.lock);
	n = fconf.calls;
	pthread_mutex_unlock(&fconf.lock);
	return n;
}

/* Whether the session's only path went down within the close timeout. */
static bool path_went_down(struct ibtrs_clt *sess)
{
	struct ibtrs_attrs attr;
	double end = t_now() + CLOSE_TIMEOUT_MS / 1000.0;

	while (ibtrs_clt_query(sess, &attr) == 0 && t_now() < end)
		usleep(1000);
	return ibtrs_clt_query(sess, &attr) == -ECOMM;
}

static void wait_path_down(struct ibtrs_clt *sess, const char *what)
{
	if (!path_went_down(sess)) {
		fprintf(stderr, "fake %s: the client path stayed up\n", what);
		exit(1);
	}
}

static void fake_case(enum fake_mode mode)
{
	static unsigned char data[4096];
	struct sockaddr_storage dst;
	struct ibtrs_addr addr = { .dst = &dst };
	struct iovec sg = { .iov_base = data, .iov_len = sizeof(data) };
	const char *what = fake_names[mode];
	struct ibtrs_clt *sess;
	struct ibtrs_tag *tag;
	struct fake fk;
	double end;
	int err;

	fake_start(&fk, mode);
	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, fk.port, &addr), 0);
	errno = 0;
	sess = ibtrs_clt_open(NULL, NULL, "fake", &addr, 1, fk.port, 0, 1, 0,
			      0);
	err = errno;
	if (mode == FAKE_CLOSE_IO_CON) {
		if (!sess) {
			fake_stop(&fk);
			printf("fake %s: open failed: %s\n", what,
			       strerror(err));
			return;
		}
		if (!path_went_down(sess)) {
			tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON,
						IBTRS_TAG_NOWAIT);
			CHECK(tag);
			err = ibtrs_clt_request(IBTRS_WRITE, fake_conf, sess,
						tag, NULL, NULL, 0,
						sizeof(data), &sg, 1);
			soft_fail(
				"fake %s: the open succeeded and the path still counts as connected although its I/O connection died while it connected; a WRITE on it returns %d (%s)",
				what, err, strerror(-err));
			if (!err) {
				end = t_now() + CLOSE_TIMEOUT_MS / 1000.0;
				while (!fconf_calls() && t_now() < end)
					usleep(1000);
			}
			ibtrs_clt_put_tag(sess, tag);
		}
		ibtrs_clt_close(sess);
		fake_stop(&fk);
		return;
	}
	if (mode < FAKE_RSP_NOT_INFLIGHT) {
		if (sess) {
			fprintf(stderr, "fake %s: the open succeeded\n", what);
			exit(1);
		}
		if (mode <= FAKE_REJECT_NOSUPPORT && err != EPROTO) {
			fprintf(stderr,
				"fake %s: errno %d (%s), expected EPROTO\n",
				what, err, strerror(err));
			exit(1);
		}
		if ((mode == FAKE_BAD_GEOMETRY || mode == FAKE_BAD_INFO ||
		     mode == FAKE_INFO_MISMATCH || mode == FAKE_GARBAGE_HELLO ||
		     mode == FAKE_GEOMETRY_CHANGE) &&
		    err != EPROTO) {
			fprintf(stderr,
				"fake %s: errno %d (%s), expected EPROTO\n",
				what, err, strerror(err));
			exit(1);
		}
		CHECK(err);
		fake_stop(&fk);
		printf("fake %s: open failed: %s\n", what, strerror(err));
		return;
	}
	if (!sess) {
		fprintf(stderr, "fake %s: open failed: %s\n", what,
			strerror(err));
		exit(1);
	}
	pthread_mutex_lock(&fconf.lock);
	fconf.calls = 0;
	fconf.err = 0;
	pthread_mutex_unlock(&fconf.lock);
	if (mode == FAKE_DOUBLE_RSP || mode == FAKE_DROP_INFLIGHT) {
		tag = ibtrs_clt_get_tag(sess, IBTRS_USR_CON, IBTRS_TAG_WAIT);
		CHECK(tag);
		CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, fake_conf, sess, tag,
					   NULL, NULL, 0, sizeof(data), &sg, 1),
			 0);
		end = t_now() + CLOSE_TIMEOUT_MS / 1000.0;
		while (!fconf_calls() && t_now() < end)
			usleep(1000);
		CHECK_EQ(fconf_calls(), 1);
		wait_path_down(sess, what);
		usleep(50 * 1000);
		pthread_mutex_lock(&fconf.lock);
		CHECK_EQ(fconf.calls, 1);
		if (mode == FAKE_DOUBLE_RSP)
			CHECK(fconf.err == 0 || fconf.err == -ECONNABORTED);
		else
			CHECK_EQ(fconf.err, -ECONNABORTED);
		pthread_mutex_unlock(&fconf.lock);
		ibtrs_clt_put_tag(sess, tag);
	} else {
		CHECK_EQ(write(fk.ctl[1], "g", 1), 1);
		wait_path_down(sess, what);
	}
	/* Nothing can be sent on a session without a path. */
	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
	CHECK(tag);
	CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, fake_conf, sess, tag, NULL,
				   NULL, 0, sizeof(data), &sg, 1),
		 -ENOTCONN);
	ibtrs_clt_put_tag(sess, tag);
	ibtrs_clt_close(sess);
	fake_stop(&fk);
	printf("fake %s: path went down, session closed\n", what);
}

/* ------------------------------------------------------------------ */
/* main                                                                 */

struct hcase {
	const char *name;
	void (*fn)(void);
};

static const struct hcase cases[] = {
	{ "garbage", case_garbage },
	{ "bad-hello", case_bad_hello },
	{ "conn-req-magic", case_conn_req_magic },
	{ "version", case_version },
	{ "cid", case_cid },
	{ "unknown-session", case_unknown_sess },
	{ "duplicate-cid", case_dup_cid },
	{ "unknown-op", case_unknown_op },
	{ "frame-flags", case_frame_flags },
	{ "send-too-big", case_send_too_big },
	{ "send-without-info", case_send_without_info },
	{ "request-before-info", case_req_before_info },
	{ "rkey", case_rkey },
	{ "raddr", case_raddr },
	{ "huge-len", case_huge_len },
	{ "hdrs", case_hdrs },
	{ "chunk-id", case_chunk_id },
	{ "trailer-offset", case_trailer_off },
	{ "trailer-type", case_trailer_type },
	{ "usr-len", case_usr_len },
	{ "duplicate-info", case_dup_info },
	{ "name-mismatch", case_name_mismatch },
	{ "busy-chunk", case_busy_chunk },
	{ "stale-generation", case_stale_gen },
	{ "unknown-imm", case_unknown_imm },
	{ "truncated", case_truncated },
};

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur < 1024 && rl.rlim_max > rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max < 1024 ? rl.rlim_max : 1024;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(void)
{
	unsigned long long before;
	pthread_t slow;
	unsigned int i;
	double end;
	int m;

	/* The attacks speak the tcp backend's framing, whatever the suite's
	 * IBTRS_BACKEND says. */
	setenv("IBTRS_BACKEND", "tcp", 1);
	signal(SIGPIPE, SIG_IGN);
	t_watchdog(WATCHDOG_S);
	setvbuf(stdout, NULL, _IOLBF, 0);
	raise_nofile();
	rnd_state ^= (unsigned long long)getpid() << 32 ^
		     (unsigned long long)(t_now() * 1e6);

	srv_start();
	good_start();
	before = atomic_load(&good.ops);
	check_good("start", before);

	CHECK_EQ(pthread_create(&slow, NULL, slow_thread, NULL), 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cur_case = cases[i].name;
		before = atomic_load(&good.ops);
		cases[i].fn();
		check_good(cur_case, before);
		printf("server attack %s: closed, good I/O unhurt (%llu ops)\n",
		       cur_case, (unsigned long long)atomic_load(&good.ops));
	}
	cur_case = "slow-hello";
	pthread_join(slow, NULL);
	CHECK_EQ(atomic_load(&slow_result), 1);
	check_good(cur_case, atomic_load(&good.ops));
	printf("server attack slow-hello: done\n");

	cur_case = "silent";
	before = atomic_load(&good.ops);
	case_silent();
	check_good(cur_case, before);

	for (m = FAKE_VERSION_ACCEPT; m <= FAKE_CLOSE_IO_CON; m++) {
		/* Early closes race with the connecting thread: repeat. */
		int reps = m == FAKE_CLOSE_AFTER_HELLO ? 10 : 1;

		before = atomic_load(&good.ops);
		while (reps--)
			fake_case((enum fake_mode)m);
		check_good(fake_names[m], before);
	}

	/* Every attacker session the server saw is gone again. */
	end = t_now() + CLOSE_TIMEOUT_MS / 1000.0;
	while (atomic_load(&srv.atk_disc) != atomic_load(&srv.atk_conn) &&
	       t_now() < end)
		usleep(1000);
	if (atomic_load(&srv.atk_disc) != atomic_load(&srv.atk_conn))
		soft_fail(
			"server: %d attacker sessions connected, only %d disconnected",
			atomic_load(&srv.atk_conn), atomic_load(&srv.atk_disc));
	CHECK_EQ(atomic_load(&srv.hold_disc), atomic_load(&srv.hold_conn));
	CHECK_EQ(atomic_load(&srv.nr_held), 0);

	atomic_store(&good.stop, true);
	pthread_join(good.thr, NULL);
	CHECK_EQ(atomic_load(&good.errors), 0);
	CHECK_EQ(atomic_load(&good.verify_failures), 0);
	CHECK_EQ(atomic_load(&good.stalls), 0);
	{
		struct ibtrs_path_stats st = { .size = sizeof(st) };

		CHECK_EQ(ibtrs_clt_path_stats(good.sess, 0, &st), 0);
		CHECK_EQ(st.state, IBTRS_PATH_CONNECTED);
		CHECK_EQ(st.errors, 0);
		CHECK_EQ(st.proto_errors, 0);
		CHECK_EQ(st.inflight, 0);
		printf("good session: %llu reads, %llu writes verified\n",
		       (unsigned long long)st.rd_ops,
		       (unsigned long long)st.wr_ops);
	}
	ibtrs_clt_close(good.sess);
	ibtrs_srv_close(srv.ctx);
	CHECK_EQ(atomic_load(&srv.good_conn), 1);
	CHECK_EQ(atomic_load(&srv.good_disc), 1);
	for (i = 0; i < LANES; i++) {
		free(good.lanes[i].wbuf);
		free(good.lanes[i].rbuf);
		free(good.lanes[i].expect);
	}
	free(srv.store);
	if (atomic_load(&soft_failures)) {
		fprintf(stderr, "hostile: %d check(s) failed\n",
			atomic_load(&soft_failures));
		return 1;
	}
	printf("hostile: OK\n");
	return 0;
}
