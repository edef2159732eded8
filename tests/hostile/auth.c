// SPDX-License-Identifier: MIT
/*
 * auth.c - attacks on the authentication of connections.
 *
 * Against the server without keys, where the good session runs:
 * - a stranger who knows the good session's uuid (and its path's) tries
 *   to join it as a new path, as a new connection of its path, and with
 *   a guessed secret: refused (EACCES), counted, the good path untouched;
 * - a forged hello for the good path (what once reconnected it): a
 *   connection that never proves anything, which the server does not
 *   attach to the session; it reaches none of the session's memory;
 * - a recorded handshake of a join (conn_req and AUTH_REQ bytes) replayed
 *   on a new connection: refused, while a fresh one of the same client
 *   is accepted; the same with the bytes of a real client's connections,
 *   captured by a relay;
 * - a client that does not authenticate: refused at the connection
 *   request.
 * Against servers with keys, real clients (each case fails without the
 * feature: it would connect): no key, a wrong key, an unknown identity
 * are refused on both sides (the client's errno, the server's counter);
 * the right key connects and the server names its identity; a server
 * without the client's key (an impostor) is refused by the client.
 */
#include "clt_int.h"
#include "hostile.h"
#include "keys.h"

static struct ibtrs_srv_stats stats(struct ibtrs_srv_ctx *ctx)
{
	struct ibtrs_srv_stats st = { .size = sizeof(st) };

	CHECK_EQ(ibtrs_srv_get_stats(ctx, &st), 0);
	return st;
}

static uint64_t good_reconnect_attempts(void)
{
	struct ibtrs_path_stats st = { .size = sizeof(st) };

	CHECK_EQ(ibtrs_clt_path_stats(good_session(), 0, &st), 0);
	return st.reconnect_attempts + st.reconnects;
}

/* A stranger with the good session's uuid: @path_too its path's too. */
static void stranger(struct atk *a, bool path_too)
{
	struct ibtrs_clt *good = good_session();

	atk_init(a);
	memcpy(a->sess_uuid, good->uuid, IBTRS_UUID_LEN);
	if (path_too)
		memcpy(a->path_uuid, good->paths[0]->uuid, IBTRS_UUID_LEN);
}

static void expect_refused(struct atk *a, uint16_t cid, uint16_t cid_num,
			   bool first, int err)
{
	int ret = atk_con(a, cid, cid_num, first);

	if (ret != -err) {
		fprintf(stderr, "%s: answer %d, expected refusal %d (%s)\n",
			cur_case, ret, err, strerror(err));
		exit(1);
	}
}

static void case_join_as_path(void)
{
	struct ibtrs_srv_stats st0 = stats(srv.ctx), st;
	uint64_t rc = good_reconnect_attempts();
	struct atk a;

	stranger(&a, false);
	expect_refused(&a, 0, 1, true, EACCES);
	/* A guessed secret is no better. */
	rnd_bytes(a.secret, sizeof(a.secret));
	a.has_secret = true;
	expect_refused(&a, 0, 1, true, EACCES);
	st = stats(srv.ctx);
	CHECK_EQ(st.auth_failed, st0.auth_failed + 2);
	CHECK_EQ(st.paths, st0.paths);
	CHECK_EQ(good_reconnect_attempts(), rc);
}

static void case_join_as_con(void)
{
	struct ibtrs_srv_stats st0 = stats(srv.ctx), st;
	uint64_t rc = good_reconnect_attempts();
	struct ibtrs_clt *good = good_session();
	struct atk a;

	stranger(&a, true);
	/* An extra connection of the good path, and its con 0 again. */
	expect_refused(&a, 1, (uint16_t)good->paths[0]->con_num, false, EACCES);
	expect_refused(&a, 0, (uint16_t)good->paths[0]->con_num, true, EACCES);
	rnd_bytes(a.secret, sizeof(a.secret));
	a.has_secret = true;
	expect_refused(&a, 0, (uint16_t)good->paths[0]->con_num, true, EACCES);
	st = stats(srv.ctx);
	CHECK_EQ(st.auth_failed, st0.auth_failed + 3);
	CHECK_EQ(st.paths, st0.paths);
	CHECK_EQ(good_reconnect_attempts(), rc);
}

/*
 * The good path's hello, forged, on connections that then send nothing,
 * a WRITE into the good session's chunks (their address and key known),
 * or a request: nothing reaches the session, every one is closed, and the
 * good path was never replaced.
 */
static void case_forged_hello(void)
{
	struct ibtrs_clt *good = good_session();
	struct ibtrs_desc pool = good->paths[0]->rbufs[0];
	uint16_t cons = (uint16_t)good->paths[0]->con_num;
	uint64_t rc = good_reconnect_attempts();
	unsigned char junk[512];
	uint8_t ns[IBTRS_NONCE_LEN];
	struct atk a;
	int i, fd;

	rnd_bytes(junk, sizeof(junk));
	stranger(&a, true);
	for (i = 0; i < 10; i++) {
		fd = atk_con_hello(&a, 0, cons, true, ns);
		CHECK(fd >= 0);
		switch (i % 3) {
		case 0: /* a WRITE into the victim's first chunk */
			send_frame(fd, TCP_OP_WRITE, 0, 0, 0, sizeof(junk),
				   pool.key, pool.addr, junk, sizeof(junk));
			break;
		case 1: /* a request, as if joined */
			send_frame(fd, TCP_OP_WRITE_IMM, 0, 0,
				   ibtrs_imm_req(0, 64, 17), 0, 0, 0, NULL, 0);
			break;
		case 2: /* INFO_REQ instead of AUTH_REQ */
			atk_send_info(&(struct atk){ .fd = { fd } }, 0, "good");
			break;
		}
		expect_closed(fd);
	}
	CHECK_EQ(good_reconnect_attempts(), rc);
	CHECK_EQ(atomic_load(&srv.atk_reqs), 0);
}

/*
 * A join recorded (conn_req and AUTH_REQ, as a sniffer sees them), then
 * replayed byte for byte: the server's nonce is new, the proof is stale.
 */
static void case_replay(void)
{
	struct ibtrs_msg_conn_req req;
	struct ibtrs_msg_auth_req areq;
	struct ibtrs_conn_rsp rsp;
	struct ibtrs_msg_auth_rsp m;
	struct tcp_frame f;
	struct atk a, b;
	struct ibtrs_auth_rsp r;
	int fd, k;

	atk_open(&a, "atk-replay", 1, true);
	/* A second path of a's session: a join, recorded. */
	b = a;
	for (k = 0; k < IBTRS_MAX_CONS_PER_PATH; k++)
		b.fd[k] = -1;
	rnd_bytes(b.path_uuid, IBTRS_UUID_LEN);
	b.fd[0] = atk_con(&b, 0, 1, true);
	CHECK(b.fd[0] >= 0);
	req = b.last_req;
	areq = b.last_auth_req;
	atk_close(&b);
	for (k = 0; k < 2; k++) {
		fd = raw_connect();
		send_hello(fd, TCP_HELLO_MAGIC, 0, &req);
		CHECK_EQ(read_answer(fd, &rsp), 0);
		send_frame(fd, TCP_OP_SEND, 0, 0, 0, sizeof(areq), 0, 0, &areq,
			   sizeof(areq));
		rt_recv_frame(fd, &f, &m, sizeof(m), IO_TIMEOUT_MS);
		CHECK_EQ(ibtrs_auth_rsp_decode(&m, f.len, &r), 0);
		CHECK_EQ(r.err, EACCES);
		expect_closed(fd);
	}
	/* The client itself, with a fresh handshake, joins again. */
	b.fd[0] = atk_con(&b, 0, 1, true);
	CHECK(b.fd[0] >= 0);
	atk_send_info(&b, 0, "atk-replay");
	atk_recv_info(&b, 0);
	atk_ping(&b, 0, 1);
	atk_ping(&a, 0, 2);
	atk_close(&b);
	atk_close(&a);
}

/* ------------------------------------------------------------------ */
/* a relay that records what a real client sends                        */

#define RELAY_CONS 4
#define RELAY_REC                                              \
	(sizeof(struct tcp_hello) + sizeof(struct tcp_frame) + \
	 sizeof(struct ibtrs_msg_auth_req))

static struct {
	int lfd, stop[2];
	uint16_t port;
	pthread_t thr;
	pthread_mutex_t lock;
	unsigned int nr;			  /* connections relayed */
	unsigned char rec[RELAY_CONS][RELAY_REC]; /* client -> server */
	size_t got[RELAY_CONS];
} relay = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Move what @from has to @to; false at the end of either. */
static bool relay_move(int from, int to, unsigned int idx, bool record)
{
	char buf[65536];
	ssize_t n = recv(from, buf, sizeof(buf), MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0)
		return false;
	if (record) {
		size_t k;

		pthread_mutex_lock(&relay.lock);
		k = RELAY_REC - relay.got[idx];
		if (k > (size_t)n)
			k = (size_t)n;
		memcpy(relay.rec[idx] + relay.got[idx], buf, k);
		relay.got[idx] += k;
		pthread_mutex_unlock(&relay.lock);
	}
	return !rt_send_all(to, buf, (size_t)n, IO_TIMEOUT_MS, NULL);
}

static void *relay_thread(void *arg)
{
	int c[RELAY_CONS], sv[RELAY_CONS];
	unsigned int n = 0, i;

	(void)arg;
	for (;;) {
		struct pollfd p[2 + 2 * RELAY_CONS];
		unsigned int np = 0;

		p[np].fd = relay.stop[0];
		p[np++].events = POLLIN;
		p[np].fd = relay.lfd;
		p[np++].events = POLLIN;
		for (i = 0; i < n; i++) {
			p[np].fd = c[i];
			p[np++].events = c[i] >= 0 ? POLLIN : 0;
			p[np].fd = sv[i];
			p[np++].events = sv[i] >= 0 ? POLLIN : 0;
		}
		if (poll(p, np, 1000) <= 0)
			continue;
		if (p[0].revents)
			break;
		if (p[1].revents && n < RELAY_CONS) {
			c[n] = accept4(relay.lfd, NULL, NULL,
				       SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (c[n] >= 0) {
				sv[n] = raw_connect();
				pthread_mutex_lock(&relay.lock);
				relay.nr = ++n;
				pthread_mutex_unlock(&relay.lock);
			}
			continue;
		}
		for (i = 0; i < n; i++) {
			if (c[i] < 0)
				continue;
			if ((p[2 + 2 * i].revents &&
			     !relay_move(c[i], sv[i], i, true)) ||
			    (p[3 + 2 * i].revents &&
			     !relay_move(sv[i], c[i], i, false))) {
				close(c[i]);
				close(sv[i]);
				c[i] = sv[i] = -1;
			}
		}
	}
	for (i = 0; i < n; i++) {
		if (c[i] >= 0) {
			close(c[i]);
			close(sv[i]);
		}
	}
	return NULL;
}

static void relay_start(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);

	relay.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(relay.lfd >= 0);
	CHECK_EQ(bind(relay.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(listen(relay.lfd, 8), 0);
	CHECK_EQ(getsockname(relay.lfd, (struct sockaddr *)&a, &alen), 0);
	relay.port = ntohs(a.sin_port);
	CHECK_EQ(pipe2(relay.stop, O_CLOEXEC), 0);
	CHECK_EQ(pthread_create(&relay.thr, NULL, relay_thread, NULL), 0);
}

static void relay_stop(void)
{
	CHECK_EQ(write(relay.stop[1], "q", 1), 1);
	pthread_join(relay.thr, NULL);
	close(relay.stop[0]);
	close(relay.stop[1]);
	close(relay.lfd);
}

/*
 * A real client's session through the relay (two connections: con 0
 * made the session, con 1 joined it); then each connection's recorded
 * hello and AUTH_REQ replayed to the server, byte for byte, while that
 * session is up: refused.
 */
static void case_replay_real(void)
{
	struct sockaddr_storage dst;
	struct ibtrs_addr addr = { .dst = &dst };
	struct ibtrs_srv_stats st0, st;
	struct ibtrs_clt_opts o;
	struct ibtrs_msg_auth_rsp m;
	struct ibtrs_auth_rsp r;
	struct ibtrs_clt *c;
	struct tcp_frame f;
	unsigned int i;
	int fd;

	relay_start();
	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, relay.port, &addr),
		 0);
	ibtrs_clt_opts_init(&o, sizeof(o));
	o.sessname = "atk-relayed";
	o.paths = &addr;
	o.path_cnt = 1;
	o.port = relay.port;
	o.max_reconnect_attempts = 0;
	c = ibtrs_clt_open_opts(&o);
	CHECK(c);
	pthread_mutex_lock(&relay.lock);
	CHECK_EQ(relay.nr, 2);
	for (i = 0; i < 2; i++)
		CHECK_EQ(relay.got[i], RELAY_REC);
	pthread_mutex_unlock(&relay.lock);
	st0 = stats(srv.ctx);
	for (i = 0; i < 2; i++) {
		const unsigned char *rec = relay.rec[i];

		tcp_frame_decode(&f, rec + sizeof(struct tcp_hello));
		CHECK_EQ(f.op, TCP_OP_SEND);
		CHECK_EQ(f.len, sizeof(struct ibtrs_msg_auth_req));
		fd = raw_connect();
		CHECK_EQ(rt_send_all(fd, rec, sizeof(struct tcp_hello),
				     IO_TIMEOUT_MS, NULL),
			 0);
		CHECK_EQ(read_answer(fd, NULL), 0);
		CHECK_EQ(rt_send_all(fd, rec + sizeof(struct tcp_hello),
				     RELAY_REC - sizeof(struct tcp_hello),
				     IO_TIMEOUT_MS, NULL),
			 0);
		rt_recv_frame(fd, &f, &m, sizeof(m), IO_TIMEOUT_MS);
		CHECK_EQ(ibtrs_auth_rsp_decode(&m, f.len, &r), 0);
		if (r.err != EACCES) {
			fprintf(stderr,
				"replay-real: connection %u replayed: answer %u, expected EACCES\n",
				i, r.err);
			exit(1);
		}
		expect_closed(fd);
	}
	st = stats(srv.ctx);
	CHECK_EQ(st.auth_failed, st0.auth_failed + 2);
	{
		struct ibtrs_attrs attr;

		CHECK_EQ(ibtrs_clt_query(c, &attr), 0);
		CHECK_EQ(attr.connected_paths, 1);
	}
	ibtrs_clt_close(c);
	relay_stop();
}

/* A client of protocol 1.0, which does not authenticate. */
static void case_no_auth(void)
{
	struct ibtrs_srv_stats st0 = stats(srv.ctx);
	struct atk a;

	atk_init(&a);
	a.no_auth = true;
	CHECK_EQ(atk_con(&a, 0, 1, true), -EACCES);
	CHECK_EQ(stats(srv.ctx).auth_failed, st0.auth_failed + 1);
}

/* ------------------------------------------------------------------ */
/* servers and clients with keys                                        */

static int key_rdma_ev(struct ibtrs_srv *sess, void *priv,
		       struct ibtrs_srv_op *id, int dir, void *data,
		       size_t datalen, const void *usr, size_t usrlen)
{
	(void)sess, (void)priv, (void)dir, (void)data, (void)datalen;
	(void)usr, (void)usrlen;
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
}

static pthread_mutex_t id_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_identity[IBTRS_IDENTITY_MAX + 1];

static int key_link_ev(struct ibtrs_srv *sess, enum ibtrs_srv_link_ev ev,
		       void *priv)
{
	(void)priv;
	if (ev == IBTRS_SRV_LINK_EV_CONNECTED) {
		pthread_mutex_lock(&id_lock);
		CHECK_EQ(ibtrs_srv_get_identity(sess, last_identity,
						sizeof(last_identity)),
			 0);
		pthread_mutex_unlock(&id_lock);
	}
	return 0;
}

static struct ibtrs_srv_ctx *key_srv(const char *keys)
{
	struct sockaddr_in lo = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct ibtrs_srv_opts o;
	struct ibtrs_srv_ctx *ctx;

	ibtrs_srv_opts_init(&o, sizeof(o));
	o.port = 0;
	o.listen_addr = (const struct sockaddr *)&lo;
	o.queue_depth = SRV_QD;
	o.max_io_size = SRV_MAX_IO;
	o.rdma_ev = key_rdma_ev;
	o.link_ev = key_link_ev;
	o.sess_grace_ms = 0;
	o.tls = IBTRS_TLS_OFF;
	o.tls_psk_file = keys;
	ctx = ibtrs_srv_open_opts(&o);
	CHECK(ctx);
	return ctx;
}

/* Open a session to @ctx with @keys and @identity; NULL and errno. */
static struct ibtrs_clt *key_clt(struct ibtrs_srv_ctx *ctx, const char *keys,
				 const char *identity)
{
	struct sockaddr_storage dst;
	struct ibtrs_addr addr = { .dst = &dst };
	struct ibtrs_clt_opts o;
	uint16_t port = ibtrs_srv_get_port(ctx);

	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, port, &addr), 0);
	ibtrs_clt_opts_init(&o, sizeof(o));
	o.sessname = "keyed";
	o.paths = &addr;
	o.path_cnt = 1;
	o.port = port;
	o.max_reconnect_attempts = 0;
	o.tls = IBTRS_TLS_OFF;
	o.tls_psk_file = keys;
	o.identity = identity;
	return ibtrs_clt_open_opts(&o);
}

static void expect_clt_refused(struct ibtrs_srv_ctx *ctx, const char *keys,
			       const char *identity, bool srv_counts,
			       const char *what)
{
	struct ibtrs_srv_stats st0 = stats(ctx), st;
	struct ibtrs_clt *c;
	double end;

	errno = 0;
	c = key_clt(ctx, keys, identity);
	if (c || errno != EACCES) {
		fprintf(stderr, "keys %s: open %s, errno %d (%s)\n", what,
			c ? "succeeded" : "failed", errno, strerror(errno));
		exit(1);
	}
	/* An impostor made a session before the client refused it: it
	 * goes with the connection the client closed. */
	end = t_now() + CLOSE_TIMEOUT_MS / 1000.0;
	while ((st = stats(ctx)).sessions != st0.sessions && t_now() < end)
		usleep(1000);
	CHECK_EQ(st.auth_failed, st0.auth_failed + (srv_counts ? 1 : 0));
	CHECK_EQ(st.sessions, st0.sessions);
	printf("keys %s: refused (EACCES), server counted %llu\n", what,
	       (unsigned long long)(st.auth_failed - st0.auth_failed));
}

static void case_keys(void)
{
	static const char *const ids[] = { "alice", "bob" };
	static const char *const wrong_ids[] = { "alice" };
	static const char *const carol_ids[] = { "carol" };
	uint8_t keys[2][T_KEY_LEN], wrong[1][T_KEY_LEN], carol[1][T_KEY_LEN];
	struct ibtrs_srv_ctx *ctx, *plain;
	struct t_keys k = { 0 };
	const char *srv_keys, *alice_wrong, *carol_keys;
	struct ibtrs_clt *c;

	t_key_new(keys[0]);
	t_key_new(keys[1]);
	t_key_new(wrong[0]);
	t_key_new(carol[0]);
	srv_keys = t_keys_write(&k, "server.psk", ids, keys, 2);
	alice_wrong = t_keys_write(&k, "wrong.psk", wrong_ids, wrong, 1);
	carol_keys = t_keys_write(&k, "carol.psk", carol_ids, carol, 1);
	ctx = key_srv(srv_keys);

	/* The right key connects; the server knows who. */
	c = key_clt(ctx, srv_keys, "bob");
	CHECK(c);
	pthread_mutex_lock(&id_lock);
	CHECK(!strcmp(last_identity, "bob"));
	pthread_mutex_unlock(&id_lock);
	ibtrs_clt_close(c);

	expect_clt_refused(ctx, NULL, NULL, true, "client without a key");
	expect_clt_refused(ctx, alice_wrong, "alice", true, "wrong key");
	expect_clt_refused(ctx, carol_keys, "carol", true, "unknown identity");

	/* An impostor server, without the client's key: the client
	 * refuses it (it cannot prove the key). */
	plain = key_srv(NULL);
	expect_clt_refused(plain, srv_keys, "alice", false,
			   "server without the key");
	ibtrs_srv_close(plain);
	/* One with another key for the identity: refused either way. */
	plain = key_srv(alice_wrong);
	expect_clt_refused(plain, srv_keys, "alice", true,
			   "server with another key");
	ibtrs_srv_close(plain);

	ibtrs_srv_close(ctx);
	t_keys_cleanup(&k);
}

static const struct hcase cases[] = {
	{ "join-as-path", case_join_as_path },
	{ "join-as-connection", case_join_as_con },
	{ "forged-hello", case_forged_hello },
	{ "replay", case_replay },
	{ "replay-real", case_replay_real },
	{ "no-auth", case_no_auth },
	{ "keys", case_keys },
};

int main(void)
{
	hostile_setup();
	hostile_run(cases, sizeof(cases) / sizeof(cases[0]));
	return hostile_finish("hostile/auth");
}
