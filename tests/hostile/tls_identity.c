// SPDX-License-Identifier: MIT
/*
 * tls_identity.c - a client whose TLS identity is not the one it claims.
 *
 * A server with TLS required and the keys of alice and bob; bob's real
 * session (TLS with bob's key) runs verified I/O. An attacker who holds
 * both keys does the TLS handshake with alice's key and then, inside the
 * encrypted stream, sends an AUTH_REQ that proves bob's key correctly:
 * - for a new session: refused with EACCES in AUTH_RSP, counted in
 *   auth_failed, logged with both identities, no session made;
 * - to join bob's session (its uuid known): refused (EACCES);
 * - the reverse (bob's TLS key, alice's AUTH_REQ): refused too;
 * - positive control: the same hand-made client with the same identity
 *   in TLS and AUTH_REQ is accepted (AUTH_RSP err 0, a session made), so
 *   that the refusals above are the mismatch's;
 * and bob's session stays up, unreconnected, with its I/O verified.
 * Without the server's check of the TLS identity against AUTH_REQ's, the
 * mismatched AUTH_REQ would open a session of bob's.
 *
 * Skips (77) when the library is built without GnuTLS.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>

#include "clt_int.h"
#include "harness.h"
#include "keys.h"
#include "proto.h"
#include "rawauth.h"
#include "rawtcp.h"
#include "tcp/tcp_proto.h"
#include "tcp/tls.h"

#define QD 16
#define MAX_IO (64 * 1024)
#define IO_TIMEOUT_MS 5000

#ifdef IBTRS_HAVE_TLS

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char logbuf[64 * 1024];
static size_t loglen;

static void cap_log(void *arg, enum ibtrs_log_level level, const char *msg)
{
	size_t n = strlen(msg);

	(void)arg;
	(void)level;
	pthread_mutex_lock(&log_lock);
	if (loglen + n + 2 < sizeof(logbuf)) {
		memcpy(logbuf + loglen, msg, n);
		loglen += n;
		logbuf[loglen++] = '\n';
		logbuf[loglen] = 0;
	}
	pthread_mutex_unlock(&log_lock);
}

/* Wait (bounded) for a log line containing @s. */
static bool log_wait(const char *s)
{
	double end = t_now() + 10;
	bool found;

	do {
		pthread_mutex_lock(&log_lock);
		found = strstr(logbuf, s) != NULL;
		pthread_mutex_unlock(&log_lock);
		if (found)
			return true;
		h_sleep_ms(5);
	} while (t_now() < end);
	fprintf(stderr, "tls_identity: no log line with \"%s\"; log:\n%s", s,
		logbuf);
	return false;
}

static struct ibtrs_srv_stats stats(struct ibtrs_srv_ctx *ctx)
{
	struct ibtrs_srv_stats st = { .size = sizeof(st) };

	CHECK_EQ(ibtrs_srv_get_stats(ctx, &st), 0);
	return st;
}

/* A server with TLS required and the key file @keys. */
static void srv_start(struct h_srv *srv, const char *keys)
{
	struct sockaddr_storage ss;
	struct ibtrs_addr addr = { .src = NULL, .dst = &ss };
	struct ibtrs_srv_opts opts;

	memset(srv, 0, sizeof(*srv));
	pthread_mutex_init(&srv->lock, NULL);
	t_cond_init(&srv->cond);
	h_cur_srv = srv;
	ibtrs_srv_opts_init(&opts, sizeof(opts));
	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, 0, &addr), 0);
	opts.listen_addr = (const struct sockaddr *)&ss;
	opts.port = 0;
	opts.queue_depth = QD;
	opts.max_io_size = MAX_IO;
	opts.rdma_ev = h_srv_rdma_ev;
	opts.link_ev = h_srv_link_ev;
	opts.backend = "tcp";
	opts.sess_grace_ms = 0;
	opts.tls = IBTRS_TLS_REQUIRE;
	opts.tls_psk_file = keys;
	srv->ctx = ibtrs_srv_open_opts(&opts);
	if (!srv->ctx) {
		fprintf(stderr, "tls_identity: cannot start the server: %s\n%s",
			strerror(errno), logbuf);
		exit(1);
	}
	srv->port = ibtrs_srv_get_port(srv->ctx);
}

/* bob's real session: TLS with his key. */
static struct ibtrs_clt *bob_open(uint16_t port, const char *keys)
{
	struct sockaddr_storage dst;
	struct ibtrs_addr p = { .src = NULL, .dst = &dst };
	struct ibtrs_clt_opts o;
	struct ibtrs_clt *c;

	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, port, &p), 0);
	ibtrs_clt_opts_init(&o, sizeof(o));
	o.sessname = "bob";
	o.paths = &p;
	o.path_cnt = 1;
	o.port = port;
	o.max_reconnect_attempts = 0;
	o.backend = "tcp";
	o.tls = IBTRS_TLS_REQUIRE;
	o.tls_psk_file = keys;
	o.identity = "bob";
	c = ibtrs_clt_open_opts(&o);
	if (!c) {
		fprintf(stderr, "tls_identity: bob's session: %s\n%s",
			strerror(errno), logbuf);
		exit(1);
	}
	return c;
}

/* WRITE and READ back @len bytes at @off, compared. */
static void check_io(struct ibtrs_clt *sess, size_t len, uint64_t off,
		     uint64_t seed)
{
	unsigned char *w = malloc(len), *r = malloc(len);
	struct ibtrs_tag *tag;

	CHECK(w && r);
	h_fill(w, len, seed);
	memset(r, 0, len);
	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, w, len, off, seed), 0);
	CHECK_EQ(h_io(sess, tag, IBTRS_READ, r, len, off, seed + 1), 0);
	CHECK(!memcmp(w, r, len));
	ibtrs_clt_put_tag(sess, tag);
	free(w);
	free(r);
}

/* bob's path: connected, never reconnected, no errors. */
static void check_bob(struct ibtrs_clt *bob, uint64_t seed)
{
	struct ibtrs_path_stats st = { .size = sizeof(st) };

	CHECK_EQ(ibtrs_clt_path_stats(bob, 0, &st), 0);
	if (st.state != IBTRS_PATH_CONNECTED || st.reconnects ||
	    st.reconnect_attempts || st.errors) {
		fprintf(stderr,
			"tls_identity: bob's session was hurt: state %d, reconnects %llu, attempts %llu, errors %llu\n",
			(int)st.state, (unsigned long long)st.reconnects,
			(unsigned long long)st.reconnect_attempts,
			(unsigned long long)st.errors);
		exit(1);
	}
	check_io(bob, 4096, 0, seed);
	check_io(bob, MAX_IO, 65536, seed + 7);
}

/*
 * The hand-made client: TLS with @tls_psk, then conn_req (for session
 * @sess_uuid, NULL for a new one) and an AUTH_REQ proving @auth_psk,
 * all inside TLS. Return: the server's errno in AUTH_RSP (0: accepted;
 * then the connection is left open in *@fdp and TLS in *@tp).
 */
static int tls_atk(uint16_t port, const struct ibtrs_keyring *kr,
		   const struct ibtrs_psk *tls_psk,
		   const struct ibtrs_psk *auth_psk, const uint8_t *sess_uuid,
		   int *fdp, struct tcp_tls **tp)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct ibtrs_xprt_tls cfg = { .mode = IBTRS_TLS_REQUIRE,
				      .keys = kr,
				      .psk = tls_psk };
	uint64_t deadline = ibtrs_now_ns() + IO_TIMEOUT_MS * 1000000ull;
	struct ibtrs_conn_req r = { .version = IBTRS_PROTO_VER,
				    .cid = 0,
				    .cid_num = 1,
				    .first_conn = true };
	unsigned char wire[sizeof(struct tcp_frame)];
	struct ibtrs_msg_auth_req areq;
	struct ibtrs_msg_auth_rsp arsp;
	struct ibtrs_msg_conn_req m;
	struct ibtrs_conn_rsp rsp;
	struct tcp_hello h;
	struct tcp_frame f;
	struct tcp_tls *t;
	struct ra_hs hs;
	uint8_t secret[IBTRS_AUTH_KEY_LEN] = { 0 };
	uint64_t incarnation;
	int fd, ret;

	fd = rt_connect((struct sockaddr *)&a, sizeof(a), IO_TIMEOUT_MS);
	CHECK(fd >= 0);
	CHECK_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
	CHECK_EQ(tcp_tls_client(fd, &cfg, deadline, "server", &t), 0);

	if (sess_uuid)
		memcpy(r.sess_uuid, sess_uuid, IBTRS_UUID_LEN);
	else
		CHECK_EQ(ibtrs_random(r.sess_uuid, IBTRS_UUID_LEN), 0);
	CHECK_EQ(ibtrs_random(r.path_uuid, IBTRS_UUID_LEN), 0);
	ra_conn_req(&hs, &r, &m, false);
	memcpy(h.magic, TCP_HELLO_MAGIC, 4);
	h.status = htole32(TCP_HELLO_ACCEPT);
	memcpy(h.priv, &m, sizeof(h.priv));
	CHECK_EQ(tcp_tls_io_deadline(t, &h, sizeof(h), true, deadline), 0);
	CHECK_EQ(tcp_tls_io_deadline(t, &h, sizeof(h), false, deadline), 0);
	CHECK(!memcmp(h.magic, TCP_HELLO_MAGIC, 4));
	CHECK_EQ(le32toh(h.status), TCP_HELLO_ACCEPT);
	CHECK_EQ(ibtrs_conn_rsp_decode(h.priv, sizeof(h.priv), &rsp), 0);
	CHECK(rsp.flags & IBTRS_RSP_AUTH);

	ra_auth_req(&hs, rsp.nonce, auth_psk, NULL, &areq);
	f = (struct tcp_frame){ .op = TCP_OP_SEND, .len = sizeof(areq) };
	rt_frame_encode(wire, &f);
	CHECK_EQ(tcp_tls_io_deadline(t, wire, sizeof(wire), true, deadline), 0);
	CHECK_EQ(tcp_tls_io_deadline(t, &areq, sizeof(areq), true, deadline),
		 0);
	CHECK_EQ(tcp_tls_io_deadline(t, wire, sizeof(wire), false, deadline),
		 0);
	tcp_frame_decode(&f, wire);
	CHECK_EQ(f.op, TCP_OP_SEND);
	CHECK_EQ(f.len, sizeof(arsp));
	CHECK_EQ(tcp_tls_io_deadline(t, &arsp, sizeof(arsp), false, deadline),
		 0);
	ret = ra_auth_rsp(&hs, &arsp, sizeof(arsp), auth_psk, secret,
			  &incarnation);
	CHECK(ret >= 0); /* the server proved the key it was asked for */
	if (ret || !fdp) {
		tcp_tls_free(t);
		close(fd);
		return ret;
	}
	*fdp = fd;
	*tp = t;
	return 0;
}

/* A mismatched client: refused with EACCES, counted, logged, no session. */
static void expect_mismatch(struct h_srv *srv, const struct ibtrs_keyring *kr,
			    const char *tls_id, const char *auth_id,
			    const uint8_t *sess_uuid, const char *what)
{
	const struct ibtrs_psk *tp = ibtrs_keyring_find(kr, tls_id);
	const struct ibtrs_psk *ap = ibtrs_keyring_find(kr, auth_id);
	struct ibtrs_srv_stats st0 = stats(srv->ctx), st;
	int err;

	CHECK(tp && ap);
	err = tls_atk(srv->port, kr, tp, ap, sess_uuid, NULL, NULL);
	st = stats(srv->ctx);
	if (err != EACCES) {
		fprintf(stderr,
			"tls_identity %s: TLS as %s, AUTH_REQ as %s: answer %d (%s), expected EACCES\n",
			what, tls_id, auth_id, err, strerror(err));
		exit(1);
	}
	CHECK_EQ(st.auth_failed, st0.auth_failed + 1);
	CHECK_EQ(st.sessions, st0.sessions);
	printf("tls_identity %s: TLS as %s, AUTH_REQ as %s: refused (EACCES), counted\n",
	       what, tls_id, auth_id);
}

static int run(void)
{
	static const char *const ids[] = { "alice", "bob" };
	static const char *const bob_ids[] = { "bob" };
	uint8_t keys[2][T_KEY_LEN];
	struct ibtrs_srv_stats st0, st;
	struct ibtrs_keyring *kr;
	struct t_keys k = { 0 };
	const char *srv_keys, *bob_keys;
	struct ibtrs_clt *bob;
	struct tcp_tls *t;
	struct h_srv srv;
	char err[256];
	double end;
	int fd;

	t_key_new(keys[0]);
	t_key_new(keys[1]);
	srv_keys = t_keys_write(&k, "server.psk", ids, keys, 2);
	bob_keys = t_keys_write(&k, "bob.psk", bob_ids, &keys[1], 1);
	CHECK_EQ(ibtrs_keyring_load(srv_keys, &kr, err, sizeof(err)), 0);
	srv_start(&srv, srv_keys);
	bob = bob_open(srv.port, bob_keys);
	check_bob(bob, 1);

	/* Positive control: the hand-made client, one identity in both. */
	st0 = stats(srv.ctx);
	CHECK_EQ(tls_atk(srv.port, kr, ibtrs_keyring_find(kr, "alice"),
			 ibtrs_keyring_find(kr, "alice"), NULL, &fd, &t),
		 0);
	st = stats(srv.ctx);
	CHECK_EQ(st.sessions, st0.sessions + 1);
	CHECK_EQ(st.auth_failed, st0.auth_failed);
	tcp_tls_free(t);
	close(fd);
	end = t_now() + IO_TIMEOUT_MS / 1000.0;
	while (stats(srv.ctx).sessions != st0.sessions && t_now() < end)
		h_sleep_ms(1);
	CHECK_EQ(stats(srv.ctx).sessions, st0.sessions);
	printf("tls_identity control: TLS and AUTH_REQ as alice: accepted\n");

	expect_mismatch(&srv, kr, "alice", "bob", NULL, "new session");
	CHECK(log_wait("identity bob, but TLS proved identity alice"));
	expect_mismatch(&srv, kr, "alice", "bob", bob->uuid, "join bob's");
	expect_mismatch(&srv, kr, "bob", "alice", NULL, "reverse");
	check_bob(bob, 100);
	CHECK_EQ(stats(srv.ctx).sessions, 1);

	ibtrs_clt_close(bob);
	ibtrs_srv_close(srv.ctx);
	h_cur_srv = NULL;
	ibtrs_keyring_free(kr);
	t_keys_cleanup(&k);
	printf("hostile/tls_identity: OK\n");
	return 0;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	t_watchdog(120);
	setvbuf(stdout, NULL, _IOLBF, 0);
	ibtrs_set_log_fn(cap_log, NULL);
	ibtrs_set_log_level(IBTRS_LOG_WARN);
	return run();
}

#else

int main(void)
{
	printf("hostile/tls_identity: built without GnuTLS, skipped\n");
	return 77;
}

#endif
