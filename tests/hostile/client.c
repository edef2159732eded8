// SPDX-License-Identifier: MIT
/*
 * client.c - fake servers against a client.
 *
 * Raw listening sockets play the server to a client session: another
 * protocol version, garbage, early closes, bad geometry, bad INFO_RSP and,
 * after the session is open, malformed frames (a TCP_OP_HDRS run of one
 * among them). A server that does not authenticate, and one whose proof
 * is not over the session's secret (an impostor), are refused. The client must
 * fail the open or take the path down, never crash, and close cleanly; the good
 * session of the real server beside it goes on unhurt.
 */
#include "hostile.h"
#include "rawauth.h"

#define FAKE_QD 8
#define FAKE_MAX_IO (64u * 1024)
#define FAKE_KEY 0x4242u

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
	FAKE_NO_AUTH,
	FAKE_BAD_PROOF,
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
	"version-accept",   "version-reject",  "reject-eprotonosupport",
	"garbage-hello",    "close-at-once",   "close-after-hello",
	"bad-geometry",	    "bad-info",	       "info-mismatch",
	"no-info",	    "silent",	       "short-hello",
	"geometry-change",  "no-auth",	       "bad-proof",
	"rsp-not-inflight", "rsp-chunk-range", "send-no-recv",
	"send-empty",	    "bad-rkey",	       "unknown-imm",
	"bad-frame",	    "double-rsp",      "drop-inflight",
	"huge-frame",	    "bad-hdrs",	       "close-io-con",
};

/* A connection's handshake, as the fake server sees it. */
struct fake_con {
	struct ibtrs_conn_req cr;
	uint8_t ns[IBTRS_NONCE_LEN];
	bool authed;
};

struct fake {
	enum fake_mode mode;
	int lfd;
	uint16_t port;
	int ctl[2]; /* main -> fake: 'g' act, 'q' quit */
	int fds[32];
	struct fake_con st[32]; /* of fds[i] */
	uint8_t secret[IBTRS_AUTH_KEY_LEN];
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
	fk->st[i] = fk->st[fk->nfds - 1];
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
	uint8_t ns[IBTRS_NONCE_LEN];
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
	CHECK(cr.caps & IBTRS_CAP_AUTH);
	rnd_bytes(ns, sizeof(ns));
	memcpy(r.nonce, ns, sizeof(ns));
	r.flags = fk->mode == FAKE_NO_AUTH ? 0 : IBTRS_RSP_AUTH;
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
	fk->st[fk->nfds].cr = cr;
	memcpy(fk->st[fk->nfds].ns, ns, sizeof(ns));
	fk->st[fk->nfds].authed = false;
	fk->fds[fk->nfds++] = fd;
}

/* AUTH_REQ of connection @i: a session of no keys, made by con 0. */
static void fake_auth(struct fake *fk, unsigned int i, const void *buf,
		      uint32_t len)
{
	struct fake_con *c = &fk->st[i];
	struct ibtrs_msg_auth_rsp m;

	ra_srv_rsp(&c->cr, c->ns, buf, len, NULL, 0x5eed, fk->secret,
		   !c->cr.cid, &m);
	if (fk->mode == FAKE_BAD_PROOF)
		m.proof[7] ^= 1;
	c->authed = true;
	send_frame(fk->fds[i], TCP_OP_SEND, 0, 0, 0, sizeof(m), 0, 0, &m,
		   sizeof(m));
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

/*
 * One frame @f from the client, its payload in @buf. Return: false to
 * drop the connection.
 */
static bool fake_frame_one(struct fake *fk, int fd, const struct tcp_frame *f,
			   const void *buf)
{
	uint32_t chunk, off, rsp;
	unsigned int off_bits = (unsigned int)ibtrs_imm_off_bits(
		FAKE_QD, ibtrs_chunk_size(FAKE_MAX_IO));
	unsigned int i;

	for (i = 0; i < fk->nfds && fk->fds[i] != fd; i++)
		;
	if (f->op == TCP_OP_SEND && i < fk->nfds && !fk->st[i].authed) {
		fake_auth(fk, i, buf, f->len);
		return true;
	}
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
		if (!fake_frame_one(fk, fd, &f, buf))
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

/*
 * The attack after the open is counted as a protocol error of the path and
 * of the session: transport level for what the backend refuses (a bad
 * frame, an access out of bounds, a message without a receive), message
 * level for the rest.
 */
static void fake_check_counters(struct ibtrs_clt *sess, enum fake_mode mode)
{
	struct ibtrs_clt_stats st = { .size = sizeof(st) };
	struct ibtrs_path_stats ps = { .size = sizeof(ps) };
	bool xprt = mode == FAKE_BAD_FRAME || mode == FAKE_HUGE_FRAME ||
		    mode == FAKE_BAD_HDRS || mode == FAKE_BAD_RKEY ||
		    mode == FAKE_SEND_NO_RECV;
	bool msg = mode == FAKE_RSP_NOT_INFLIGHT ||
		   mode == FAKE_RSP_CHUNK_RANGE || mode == FAKE_UNKNOWN_IMM ||
		   mode == FAKE_DOUBLE_RSP || mode == FAKE_SEND_EMPTY;

	CHECK_EQ(ibtrs_clt_get_stats(sess, &st), 0);
	CHECK_EQ(ibtrs_clt_path_stats(sess, 0, &ps), 0);
	printf("fake %s: proto errors %llu (transport %llu)\n",
	       fake_names[mode], (unsigned long long)st.proto_errors,
	       (unsigned long long)st.proto_xprt);
	CHECK_EQ(st.proto_errors, ps.proto_errors);
	CHECK_EQ(st.proto_xprt, ps.proto_xprt);
	if (xprt) {
		CHECK_EQ(st.proto_xprt, 1);
		CHECK_EQ(st.proto_errors, 1);
	}
	if (msg) {
		CHECK_EQ(st.proto_xprt, 0);
		CHECK_EQ(st.proto_errors, 1);
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
		     mode == FAKE_GEOMETRY_CHANGE || mode == FAKE_NO_AUTH) &&
		    err != EPROTO) {
			fprintf(stderr,
				"fake %s: errno %d (%s), expected EPROTO\n",
				what, err, strerror(err));
			exit(1);
		}
		if (mode == FAKE_BAD_PROOF && err != EACCES) {
			fprintf(stderr,
				"fake %s: errno %d (%s), expected EACCES\n",
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
	fake_check_counters(sess, mode);
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

int main(void)
{
	unsigned long long before;
	int m;

	hostile_setup();
	for (m = FAKE_VERSION_ACCEPT; m <= FAKE_CLOSE_IO_CON; m++) {
		/* Early closes race with the connecting thread: repeat. */
		int reps = m == FAKE_CLOSE_AFTER_HELLO ? 10 : 1;

		cur_case = fake_names[m];
		before = good_ops();
		while (reps--)
			fake_case((enum fake_mode)m);
		check_good(fake_names[m], before);
	}
	return hostile_finish("hostile/client");
}
