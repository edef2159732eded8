// SPDX-License-Identifier: MIT
/*
 * limits.c - no client starves the others (ibtrs_srv_opts, the limits per
 * client).
 *
 * A server with small limits, without keys (a client is its source
 * address: loopback takes any 127/8 source) and with keys (a client is
 * its key's identity):
 * - sessions: client A opens sessions up to its limit, the next one is
 *   refused (EUSERS, counted), while client B still opens one; A's and
 *   B's sessions stay up (nobody is evicted), and once A closes one it
 *   may open one again;
 * - connections: client A's connections beyond its limit are refused
 *   (EUSERS), a session that needs one more fails to open, while client B
 *   still connects;
 * - half-open handshakes: connections from 127.0.0.2 that send their
 *   connection request and never AUTH_REQ fill that address's share,
 *   the next one from there is refused, a client from 127.0.0.1 still
 *   connects, and the server closes the half-open ones after the
 *   handshake timeout (then 127.0.0.2 gets in again).
 * Each check fails without the limit it is about: the sessions would be
 * accepted, the half-open connections would stay open.
 */
#include <arpa/inet.h>

#include "hostile.h"
#include "keys.h"

#define LIM_SESSIONS 3
#define LIM_HANDSHAKES 4
#define LIM_HS_TIMEOUT_MS 600
#define LIM_CONS 3 /* a session has 2 connections: one and a half */

static int lim_rdma_ev(struct ibtrs_srv *sess, void *priv,
		       struct ibtrs_srv_op *id, int dir, void *data,
		       size_t datalen, const void *usr, size_t usrlen)
{
	(void)sess, (void)priv, (void)dir, (void)data, (void)datalen;
	(void)usr, (void)usrlen;
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
}

static struct ibtrs_srv_ctx *lim_srv_cons(const char *keys, uint32_t cons)
{
	struct sockaddr_in any = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_ANY) };
	struct ibtrs_srv_opts o;
	struct ibtrs_srv_ctx *ctx;

	ibtrs_srv_opts_init(&o, sizeof(o));
	o.port = 0;
	o.listen_addr = (const struct sockaddr *)&any;
	o.queue_depth = SRV_QD;
	o.max_io_size = SRV_MAX_IO;
	o.rdma_ev = lim_rdma_ev;
	o.sess_grace_ms = 0;
	o.tls = IBTRS_TLS_OFF;
	o.tls_psk_file = keys;
	o.max_sessions_per_client = LIM_SESSIONS;
	o.max_cons_per_client = cons;
	o.max_handshakes_per_client = LIM_HANDSHAKES;
	o.handshake_timeout_ms = LIM_HS_TIMEOUT_MS;
	ctx = ibtrs_srv_open_opts(&o);
	CHECK(ctx);
	return ctx;
}

static struct ibtrs_srv_ctx *lim_srv(const char *keys)
{
	return lim_srv_cons(keys, 0);
}

static struct ibtrs_srv_stats stats(struct ibtrs_srv_ctx *ctx)
{
	struct ibtrs_srv_stats st = { .size = sizeof(st) };

	CHECK_EQ(ibtrs_srv_get_stats(ctx, &st), 0);
	return st;
}

/* A session from @src (an address of 127/8) to @ctx; NULL and errno. */
static struct ibtrs_clt *lim_clt(struct ibtrs_srv_ctx *ctx, const char *src,
				 const char *keys, const char *identity)
{
	struct sockaddr_storage s, d;
	struct ibtrs_addr addr = { .src = &s, .dst = &d };
	struct ibtrs_clt_opts o;
	uint16_t port = ibtrs_srv_get_port(ctx);
	char path[64];

	snprintf(path, sizeof(path), "ip:%s,ip:127.0.0.1", src);
	CHECK_EQ(ibtrs_addr_to_sockaddr(path, strlen(path), port, &addr), 0);
	ibtrs_clt_opts_init(&o, sizeof(o));
	o.sessname = "limits";
	o.paths = &addr;
	o.path_cnt = 1;
	o.port = port;
	o.max_reconnect_attempts = 0;
	o.tls = IBTRS_TLS_OFF;
	o.tls_psk_file = keys;
	o.identity = identity;
	return ibtrs_clt_open_opts(&o);
}

static void check_up(struct ibtrs_clt *c, const char *what)
{
	struct ibtrs_attrs attr;

	if (ibtrs_clt_query(c, &attr) || attr.connected_paths != 1) {
		fprintf(stderr, "limits: %s: a session went down\n", what);
		exit(1);
	}
}

/*
 * Sessions of client A (from @src_a, or with @id_a) up to the limit; the
 * next refused; B (from 127.0.0.1, or @id_b) still gets one.
 */
static void sessions_case(const char *what, const char *keys, const char *src_a,
			  const char *id_a, const char *id_b)
{
	struct ibtrs_clt *a[LIM_SESSIONS], *b, *c;
	struct ibtrs_srv_ctx *ctx = lim_srv(keys);
	struct ibtrs_srv_stats st0, st;
	unsigned int i;

	for (i = 0; i < LIM_SESSIONS; i++) {
		a[i] = lim_clt(ctx, src_a, keys, id_a);
		CHECK(a[i]);
	}
	st0 = stats(ctx);
	errno = 0;
	c = lim_clt(ctx, src_a, keys, id_a);
	if (c || errno != EUSERS) {
		fprintf(stderr,
			"limits %s: session %u of client A: %s, errno %d (%s); expected a refusal (EUSERS)\n",
			what, LIM_SESSIONS + 1, c ? "opened" : "failed", errno,
			strerror(errno));
		exit(1);
	}
	st = stats(ctx);
	CHECK_EQ(st.refused_limit, st0.refused_limit + 1);
	CHECK_EQ(st.sessions, LIM_SESSIONS);
	b = lim_clt(ctx, "127.0.0.1", keys, id_b);
	if (!b) {
		fprintf(stderr,
			"limits %s: client B was refused (%s) while client A was at its limit\n",
			what, strerror(errno));
		exit(1);
	}
	for (i = 0; i < LIM_SESSIONS; i++)
		check_up(a[i], what);
	/* A closes one: it may open one again. */
	ibtrs_clt_close(a[0]);
	{
		double end = t_now() + CLOSE_TIMEOUT_MS / 1000.0;

		while (stats(ctx).sessions != LIM_SESSIONS && t_now() < end)
			usleep(1000);
	}
	a[0] = lim_clt(ctx, src_a, keys, id_a);
	CHECK(a[0]);
	check_up(b, what);
	printf("limits %s: client A refused at %u sessions, client B served\n",
	       what, LIM_SESSIONS);
	ibtrs_clt_close(b);
	for (i = 0; i < LIM_SESSIONS; i++)
		ibtrs_clt_close(a[i]);
	ibtrs_srv_close(ctx);
}

/* Client A at its connection limit; client B is served. */
static void case_cons(void)
{
	struct ibtrs_srv_ctx *ctx = lim_srv_cons(NULL, LIM_CONS);
	struct ibtrs_srv_stats st0;
	struct ibtrs_clt *a, *c, *b;

	a = lim_clt(ctx, "127.0.0.2", NULL, NULL);
	CHECK(a);
	st0 = stats(ctx);
	errno = 0;
	c = lim_clt(ctx, "127.0.0.2", NULL, NULL);
	if (c || errno != EUSERS) {
		fprintf(stderr,
			"limits connections: a session needing connections %u and %u of client A: %s, errno %d (%s); expected a refusal (EUSERS)\n",
			LIM_CONS, LIM_CONS + 1, c ? "opened" : "failed", errno,
			strerror(errno));
		exit(1);
	}
	CHECK(stats(ctx).refused_limit > st0.refused_limit);
	b = lim_clt(ctx, "127.0.0.1", NULL, NULL);
	if (!b) {
		fprintf(stderr,
			"limits connections: client B was refused (%s)\n",
			strerror(errno));
		exit(1);
	}
	check_up(a, "connections");
	check_up(b, "connections");
	printf("limits connections: client A refused beyond %u connections, client B served\n",
	       LIM_CONS);
	ibtrs_clt_close(b);
	ibtrs_clt_close(a);
	ibtrs_srv_close(ctx);
}

/* A raw connection from @src to @port. */
static int connect_from(const char *src, uint16_t port)
{
	struct sockaddr_in s = { .sin_family = AF_INET };
	struct sockaddr_in d = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd;

	CHECK_EQ(inet_pton(AF_INET, src, &s.sin_addr), 1);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	CHECK_EQ(bind(fd, (struct sockaddr *)&s, sizeof(s)), 0);
	CHECK_EQ(connect(fd, (struct sockaddr *)&d, sizeof(d)), 0);
	rt_frames_reset(fd);
	return fd;
}

/* A connection request from @src, answered; AUTH_REQ never follows. */
static int half_open(const char *src, uint16_t port, int *err)
{
	struct ibtrs_msg_conn_req m;
	struct ibtrs_conn_rsp rsp;
	int fd = connect_from(src, port);

	conn_req(&m, IBTRS_PROTO_VER, 0, 1, true, NULL, NULL);
	send_hello(fd, TCP_HELLO_MAGIC, 0, &m);
	*err = read_answer(fd, &rsp);
	CHECK(*err >= 0);
	return fd;
}

static bool is_closed(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

	return !n || (n < 0 && errno != EAGAIN);
}

static void case_half_open(void)
{
	struct ibtrs_srv_ctx *ctx = lim_srv(NULL);
	uint16_t port = ibtrs_srv_get_port(ctx);
	struct ibtrs_srv_stats st0;
	int fds[LIM_HANDSHAKES], fd, err;
	unsigned int i, open_left;
	struct ibtrs_clt *b;
	double start, end;

	start = t_now();
	for (i = 0; i < LIM_HANDSHAKES; i++) {
		fds[i] = half_open("127.0.0.2", port, &err);
		CHECK_EQ(err, 0);
	}
	st0 = stats(ctx);
	fd = half_open("127.0.0.2", port, &err);
	if (err != EAGAIN) {
		fprintf(stderr,
			"limits half-open: handshake %u from 127.0.0.2: answer %d, expected a refusal (EAGAIN)\n",
			LIM_HANDSHAKES + 1, err);
		exit(1);
	}
	close(fd);
	CHECK_EQ(stats(ctx).refused_limit, st0.refused_limit + 1);
	/* Another address is not blocked. */
	b = lim_clt(ctx, "127.0.0.1", NULL, NULL);
	if (!b) {
		fprintf(stderr,
			"limits half-open: a client from 127.0.0.1 was refused (%s)\n",
			strerror(errno));
		exit(1);
	}
	/* The handshake timeout closes the half-open ones. */
	end = start + (LIM_HS_TIMEOUT_MS + CLOSE_TIMEOUT_MS) / 1000.0;
	do {
		usleep(10 * 1000);
		for (i = 0, open_left = 0; i < LIM_HANDSHAKES; i++)
			open_left += fds[i] >= 0 && !is_closed(fds[i]);
	} while (open_left && t_now() < end);
	if (open_left) {
		fprintf(stderr,
			"limits half-open: %u of %u connections without AUTH_REQ still open after %.1f s (handshake timeout %u ms)\n",
			open_left, LIM_HANDSHAKES, t_now() - start,
			LIM_HS_TIMEOUT_MS);
		exit(1);
	}
	if (t_now() - start < LIM_HS_TIMEOUT_MS / 1000.0) {
		fprintf(stderr,
			"limits half-open: closed after %.2f s, before the handshake timeout\n",
			t_now() - start);
		exit(1);
	}
	printf("limits half-open: %u handshakes from 127.0.0.2 closed after %.2f s (timeout %u ms); 127.0.0.1 served meanwhile\n",
	       LIM_HANDSHAKES, t_now() - start, LIM_HS_TIMEOUT_MS);
	for (i = 0; i < LIM_HANDSHAKES; i++)
		close(fds[i]);
	/* Its share is free again. */
	fd = half_open("127.0.0.2", port, &err);
	CHECK_EQ(err, 0);
	close(fd);
	check_up(b, "half-open");
	ibtrs_clt_close(b);
	ibtrs_srv_close(ctx);
}

int main(void)
{
	static const char *const ids[] = { "client-a", "client-b" };
	uint8_t keys[2][T_KEY_LEN];
	struct t_keys k = { 0 };
	const char *file;

	t_watchdog(120);
	cur_case = "sessions";
	sessions_case("by address", NULL, "127.0.0.2", NULL, NULL);
	t_key_new(keys[0]);
	t_key_new(keys[1]);
	file = t_keys_write(&k, "keys.psk", ids, keys, 2);
	/* With keys, the identity counts, whatever the address. */
	sessions_case("by identity", file, "127.0.0.1", "client-a", "client-b");
	t_keys_cleanup(&k);
	cur_case = "connections";
	case_cons();
	cur_case = "half-open";
	case_half_open();
	printf("hostile/limits: OK\n");
	return 0;
}
