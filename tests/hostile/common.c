// SPDX-License-Identifier: MIT
/*
 * common.c - the hostile tests' server, good client and raw sockets; see
 * hostile.h.
 */
#include "hostile.h"

#define STORE_LEN (1u << 20)
#define LANES 8
#define LANE_LEN (STORE_LEN / LANES)
#define IO_MAGIC 0x10C0FFEEu
#define PROGRESS_TIMEOUT_S 10.0
#define WATCHDOG_S 280

/* ------------------------------------------------------------------ */
/* failures                                                             */

static atomic_int soft_failures;

void soft_fail(const char *fmt, ...)
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

void rnd_bytes(void *buf, size_t len)
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

struct hostile_srv srv;

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
	/*
	 * Two loops: the good session on the listener's, the attackers'
	 * sessions on both, each handed over there after its handshake.
	 */
	o.loop_threads = 2;
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
void check_good(const char *what, unsigned long long before)
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

int raw_connect(void)
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

const char *cur_case = "";

/* The server must close @fd in bounded time; @fd is closed here. */
long expect_closed(int fd)
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

void send_hello(int fd, const char *magic, uint32_t status, const void *priv)
{
	struct tcp_hello h;

	memcpy(h.magic, magic, 4);
	h.status = htole32(status);
	memcpy(h.priv, priv, sizeof(h.priv));
	rt_send_all(fd, &h, sizeof(h), IO_TIMEOUT_MS, NULL);
}

void conn_req(struct ibtrs_msg_conn_req *m, uint16_t version, uint16_t cid,
	      uint16_t cid_num, bool first, const uint8_t *sess_uuid,
	      const uint8_t *path_uuid)
{
	struct ibtrs_conn_req r = {
		.version = version,
		.cid = cid,
		.cid_num = cid_num,
		.first_conn = first,
		.caps = IBTRS_CAP_AUTH,
	};

	if (sess_uuid)
		memcpy(r.sess_uuid, sess_uuid, IBTRS_UUID_LEN);
	else
		rnd_bytes(r.sess_uuid, IBTRS_UUID_LEN);
	if (path_uuid)
		memcpy(r.path_uuid, path_uuid, IBTRS_UUID_LEN);
	else
		rnd_bytes(r.path_uuid, IBTRS_UUID_LEN);
	rnd_bytes(r.nonce, IBTRS_NONCE_LEN);
	ibtrs_conn_req_encode(m, &r);
}

/*
 * Read the server's hello answer. Return: 0 and @rsp on accept, the
 * positive errno of a reject, -1 if no valid answer came.
 */
int read_answer(int fd, struct ibtrs_conn_rsp *rsp)
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

int send_frame(int fd, uint8_t op, uint8_t flags, uint16_t reserved,
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

int atk_con_hello(struct atk *a, uint16_t cid, uint16_t cid_num, bool first,
		  uint8_t *ns)
{
	struct ibtrs_conn_req r = {
		.version = IBTRS_PROTO_VER,
		.cid = cid,
		.cid_num = cid_num,
		.first_conn = first,
	};
	int fd, ret, off_bits;

	fd = raw_connect();
	memcpy(r.sess_uuid, a->sess_uuid, IBTRS_UUID_LEN);
	memcpy(r.path_uuid, a->path_uuid, IBTRS_UUID_LEN);
	ra_conn_req(&a->last, &r, &a->last_req, a->no_auth);
	send_hello(fd, TCP_HELLO_MAGIC, 0, &a->last_req);
	ret = read_answer(fd, &a->rsp);
	if (ret) {
		CHECK(ret > 0);
		expect_closed(fd);
		return -ret;
	}
	CHECK(a->rsp.flags & IBTRS_RSP_AUTH);
	CHECK_EQ(a->rsp.queue_depth, SRV_QD);
	CHECK_EQ(a->rsp.max_io_size, SRV_MAX_IO);
	CHECK_EQ(a->rsp.chunk_size, ibtrs_chunk_size(SRV_MAX_IO));
	off_bits = ibtrs_imm_off_bits(a->rsp.queue_depth, a->rsp.chunk_size);
	CHECK(off_bits > 0);
	a->off_bits = (unsigned int)off_bits;
	memcpy(ns, a->rsp.nonce, IBTRS_NONCE_LEN);
	return fd;
}

int atk_auth(struct atk *a, int fd, const uint8_t *ns)
{
	struct ibtrs_msg_auth_rsp m;
	struct tcp_frame f;
	int ret;

	ra_auth_req(&a->last, ns, a->psk, a->has_secret ? a->secret : NULL,
		    &a->last_auth_req);
	CHECK_EQ(send_frame(fd, TCP_OP_SEND, 0, 0, 0, sizeof(a->last_auth_req),
			    0, 0, &a->last_auth_req, sizeof(a->last_auth_req)),
		 0);
	rt_recv_frame(fd, &f, &m, sizeof(m), IO_TIMEOUT_MS);
	CHECK_EQ(f.op, TCP_OP_SEND);
	ret = ra_auth_rsp(&a->last, &m, f.len, a->psk, a->secret,
			  &a->incarnation);
	if (ret > 0) {
		expect_closed(fd);
		return -ret;
	}
	if (ret < 0)
		return -EBADMSG;
	a->has_secret = true;
	return 0;
}

int atk_con(struct atk *a, uint16_t cid, uint16_t cid_num, bool first)
{
	uint8_t ns[IBTRS_NONCE_LEN];
	int fd, ret;

	fd = atk_con_hello(a, cid, cid_num, first, ns);
	if (fd < 0)
		return fd;
	ret = atk_auth(a, fd, ns);
	if (ret == -EBADMSG) {
		close(fd);
		fprintf(stderr, "%s: the server's proof is wrong\n", cur_case);
		exit(1);
	}
	return ret ? ret : fd;
}

void atk_init(struct atk *a)
{
	unsigned int i;

	memset(a, 0, sizeof(*a));
	for (i = 0; i < IBTRS_MAX_CONS_PER_PATH; i++)
		a->fd[i] = -1;
	rnd_bytes(a->sess_uuid, IBTRS_UUID_LEN);
	rnd_bytes(a->path_uuid, IBTRS_UUID_LEN);
}

void atk_send_info(struct atk *a, unsigned int con, const char *name)
{
	struct ibtrs_msg_info_req req;

	ibtrs_info_req_encode(&req, name);
	send_frame(a->fd[con], TCP_OP_SEND, 0, 0, 0, sizeof(req), 0, 0, &req,
		   sizeof(req));
}

void atk_recv_info(struct atk *a, unsigned int con)
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
void atk_open(struct atk *a, const char *name, unsigned int cid_num, bool info)
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

void atk_close(struct atk *a)
{
	unsigned int i;

	for (i = 0; i < IBTRS_MAX_CONS_PER_PATH; i++) {
		if (a->fd[i] >= 0)
			close(a->fd[i]);
		a->fd[i] = -1;
	}
}

uint64_t chunk_addr(const struct atk *a, uint32_t chunk)
{
	return a->pool.addr + (uint64_t)chunk * a->rsp.chunk_size;
}

/*
 * A well-formed request on @chunk: WRITE of @data_len bytes, or READ of
 * @data_len bytes into the (fake) region @desc. Its header (host order)
 * into @f; returns its payload, to be freed.
 */
unsigned char *atk_req_frame(struct atk *a, uint32_t chunk, int dir,
			     uint32_t data_len, uint16_t usr_len,
			     const struct ibtrs_desc *desc, struct tcp_frame *f)
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
int atk_req(struct atk *a, unsigned int con, uint32_t chunk, int dir,
	    uint32_t data_len, uint16_t usr_len, const struct ibtrs_desc *desc)
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

/* An error answer @err to a request on @chunk. */
void atk_expect_err(struct atk *a, unsigned int con, uint32_t chunk, int err)
{
	unsigned char buf[64];
	struct tcp_frame f;

	rt_recv_frame(a->fd[con], &f, buf, sizeof(buf), IO_TIMEOUT_MS);
	CHECK_EQ(f.op, TCP_OP_WRITE_IMM);
	CHECK_EQ(f.imm, ibtrs_imm_rsp(chunk, err));
	CHECK_EQ(f.len, 0);
}

/* The response to a request on @chunk, with @len bytes of READ data. */
void atk_expect_rsp(struct atk *a, unsigned int con, uint32_t chunk,
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
void atk_ping(struct atk *a, unsigned int con, uint32_t chunk)
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
void atk_expect_closed(struct atk *a)
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
/* frames                                                               */

/* A fresh session, checked with a ping, then one bad frame: closed. */
void frame_case(uint8_t op, uint8_t flags, uint16_t reserved, uint32_t imm,
		uint32_t len, bool good_key, uint32_t rkey_xor, uint64_t raddr,
		size_t plen)
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

/* ------------------------------------------------------------------ */
/* the run                                                              */

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

struct ibtrs_clt *good_session(void)
{
	return good.sess;
}

unsigned long long good_ops(void)
{
	return atomic_load(&good.ops);
}

void hostile_setup(void)
{
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
	check_good("start", atomic_load(&good.ops));
}

void hostile_run(const struct hcase *cases, size_t n)
{
	unsigned long long before;
	size_t i;

	for (i = 0; i < n; i++) {
		cur_case = cases[i].name;
		before = atomic_load(&good.ops);
		cases[i].fn();
		check_good(cur_case, before);
		printf("server attack %s: closed, good I/O unhurt (%llu ops)\n",
		       cur_case, (unsigned long long)atomic_load(&good.ops));
	}
}

int hostile_finish(const char *name)
{
	unsigned int i;
	double end;

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
		fprintf(stderr, "%s: %d check(s) failed\n", name,
			atomic_load(&soft_failures));
		return 1;
	}
	printf("%s: OK\n", name);
	return 0;
}
