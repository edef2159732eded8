// SPDX-License-Identifier: MIT
/*
 * hs_total.c - the cap on unfinished handshakes of all addresses together.
 *
 * Each source address may hold 16 connections between conn_req and
 * AUTH_RSP (max_handshakes_per_client), and the server 1024 of all
 * addresses. An attacker with many addresses (loopback takes any 127/8
 * source) holds 16 half-open connections from each of 64 of them, 1024
 * in all, every one accepted; then:
 * - a connection request from a 65th address, well under its own share,
 *   is refused with EAGAIN and counted in refused_limit, and so is a real
 *   client's session from there;
 * - a session opened before keeps working, and the control socket's
 *   "status" (which reads the sessions on the server's loop thread)
 *   answers in bounded time throughout, while the handshakes are filled
 *   and while the server is full;
 * - once the half-open connections of one address close, a real client
 *   from a new address gets in.
 * Without the total cap the 65th address would be accepted.
 *
 * The test holds the server's side of every connection too (the server
 * runs in the process): it raises its descriptor limit, and skips (77)
 * where the hard limit is too low for that.
 */
#include <arpa/inet.h>
#include <sys/un.h>

#include "hostile.h"

#define HS_PER_ADDR 16 /* the default max_handshakes_per_client */
#define HS_TOTAL 1024  /* the server's cap of all addresses */
#define HS_ADDRS (HS_TOTAL / HS_PER_ADDR)
#define HS_TIMEOUT_MS 60000 /* far beyond the test: closes are ours */
#define STATUS_TIMEOUT_MS 5000
#define NOFILE_NEED (2 * HS_TOTAL + 256)

static char rt_dir[64];

/* At exit, after the control socket's own cleanup (registered later). */
static void rt_dir_remove(void)
{
	rmdir(rt_dir);
}

static int rdma_ev(struct ibtrs_srv *sess, void *priv, struct ibtrs_srv_op *id,
		   int dir, void *data, size_t datalen, const void *usr,
		   size_t usrlen)
{
	(void)sess, (void)priv, (void)dir, (void)data, (void)datalen;
	(void)usr, (void)usrlen;
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
}

static struct ibtrs_srv_ctx *srv_open(void)
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
	o.rdma_ev = rdma_ev;
	o.sess_grace_ms = 0;
	o.tls = IBTRS_TLS_OFF;
	o.max_handshakes_per_client = HS_PER_ADDR;
	o.handshake_timeout_ms = HS_TIMEOUT_MS;
	ctx = ibtrs_srv_open_opts(&o);
	CHECK(ctx);
	return ctx;
}

static struct ibtrs_srv_stats stats(struct ibtrs_srv_ctx *ctx)
{
	struct ibtrs_srv_stats st = { .size = sizeof(st) };

	CHECK_EQ(ibtrs_srv_get_stats(ctx, &st), 0);
	return st;
}

/* 127.1.@hi.@lo */
static void addr_str(char *buf, size_t len, unsigned int hi, unsigned int lo)
{
	snprintf(buf, len, "127.1.%u.%u", hi, lo);
}

/* A session from @src to @ctx; NULL and errno. */
static struct ibtrs_clt *clt_from(struct ibtrs_srv_ctx *ctx, const char *src)
{
	struct sockaddr_storage s, d;
	struct ibtrs_addr addr = { .src = &s, .dst = &d };
	struct ibtrs_clt_opts o;
	uint16_t port = ibtrs_srv_get_port(ctx);
	char path[64];

	snprintf(path, sizeof(path), "ip:%s,ip:127.0.0.1", src);
	CHECK_EQ(ibtrs_addr_to_sockaddr(path, strlen(path), port, &addr), 0);
	ibtrs_clt_opts_init(&o, sizeof(o));
	o.sessname = "hs-total";
	o.paths = &addr;
	o.path_cnt = 1;
	o.port = port;
	o.max_reconnect_attempts = 0;
	o.tls = IBTRS_TLS_OFF;
	return ibtrs_clt_open_opts(&o);
}

static void check_up(struct ibtrs_clt *c, const char *what)
{
	struct ibtrs_attrs attr;

	if (ibtrs_clt_query(c, &attr) || attr.connected_paths != 1) {
		fprintf(stderr, "hs_total %s: the session went down\n", what);
		exit(1);
	}
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

/*
 * "status" on the process's control socket, answered within
 * STATUS_TIMEOUT_MS, naming the server's counters. Return: its seconds.
 */
static double status(const char *what)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	double start = t_now(), end = start + STATUS_TIMEOUT_MS / 1000.0;
	static char buf[256 * 1024];
	size_t got = 0;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%d.sock", rt_dir,
		 (int)getpid());
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	CHECK_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(rt_send_all(fd, "status\n", 7, STATUS_TIMEOUT_MS, NULL), 0);
	while (!memchr(buf, '\n', got)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)((end - t_now()) * 1000);
		ssize_t n;

		if (left <= 0 || poll(&p, 1, left) != 1) {
			fprintf(stderr,
				"hs_total %s: status did not answer within %d ms\n",
				what, STATUS_TIMEOUT_MS);
			exit(1);
		}
		n = read(fd, buf + got, sizeof(buf) - 1 - got);
		CHECK(n > 0);
		got += (size_t)n;
		CHECK(got < sizeof(buf) - 1);
	}
	buf[got] = '\0';
	close(fd);
	if (!strstr(buf, "\"refused_limit\"")) {
		fprintf(stderr, "hs_total %s: status without the server: %s\n",
			what, buf);
		exit(1);
	}
	return t_now() - start;
}

/* Raise the descriptor limit to what the test holds; false if it cannot. */
static bool nofile(void)
{
	struct rlimit rl;

	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur >= NOFILE_NEED)
		return true;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < NOFILE_NEED)
		return false;
	rl.rlim_cur = NOFILE_NEED;
	return !setrlimit(RLIMIT_NOFILE, &rl);
}

int main(void)
{
	static int fds[HS_ADDRS][HS_PER_ADDR];
	struct ibtrs_srv_stats st0, st;
	struct ibtrs_srv_ctx *ctx;
	struct ibtrs_clt *before, *late;
	char src[32];
	double worst = 0, t, start, end;
	unsigned int a, i;
	uint16_t port;
	int fd, err;

	if (!nofile()) {
		printf("hs_total: the descriptor limit is below %u, skipped\n",
		       NOFILE_NEED);
		return 77;
	}
	setenv("IBTRS_BACKEND", "tcp", 1);
	setenv("IBTRS_CONTROL", "1", 1);
	snprintf(rt_dir, sizeof(rt_dir), "/tmp/ibtrs-hs-XXXXXX");
	CHECK(mkdtemp(rt_dir));
	atexit(rt_dir_remove);
	setenv("IBTRS_RUNTIME_DIR", rt_dir, 1);
	signal(SIGPIPE, SIG_IGN);
	t_watchdog(240);
	setvbuf(stdout, NULL, _IOLBF, 0);
	cur_case = "hs-total";

	ctx = srv_open();
	port = ibtrs_srv_get_port(ctx);
	before = clt_from(ctx, "127.0.0.1");
	CHECK(before);
	status("start");

	/* 64 addresses, each at its share: 1024 half-open in all. */
	st0 = stats(ctx);
	start = t_now();
	for (a = 0; a < HS_ADDRS; a++) {
		addr_str(src, sizeof(src), 0, a + 1);
		for (i = 0; i < HS_PER_ADDR; i++) {
			fds[a][i] = half_open(src, port, &err);
			if (err) {
				fprintf(stderr,
					"hs_total: half-open %u of %s (%u in all): refused %d (%s) below the caps\n",
					i + 1, src, a * HS_PER_ADDR + i + 1,
					err, strerror(err));
				exit(1);
			}
		}
		if (a % 8 == 7) {
			t = status("filling");
			worst = t > worst ? t : worst;
		}
	}
	CHECK_EQ(stats(ctx).refused_limit, st0.refused_limit);
	printf("hs_total: %u half-open connections from %u addresses accepted in %.2f s\n",
	       HS_TOTAL, HS_ADDRS, t_now() - start);

	/* Full: a new address, well under its share, is refused. */
	addr_str(src, sizeof(src), 1, 1);
	fd = half_open(src, port, &err);
	if (err != EAGAIN) {
		fprintf(stderr,
			"hs_total: a new address with %u handshakes open in all: answer %d, expected a refusal (EAGAIN)\n",
			HS_TOTAL, err);
		exit(1);
	}
	close(fd);
	st = stats(ctx);
	CHECK_EQ(st.refused_limit, st0.refused_limit + 1);
	errno = 0;
	late = clt_from(ctx, src);
	if (late || errno != EAGAIN) {
		fprintf(stderr,
			"hs_total: a session from a new address while full: %s, errno %d (%s); expected EAGAIN\n",
			late ? "opened" : "failed", errno, strerror(errno));
		exit(1);
	}
	CHECK(stats(ctx).refused_limit > st.refused_limit);
	check_up(before, "full");
	t = status("full");
	worst = t > worst ? t : worst;
	printf("hs_total: full: a new address refused (EAGAIN), counted; the session of before is up\n");

	/* One address's half-open connections close: a client gets in. */
	for (i = 0; i < HS_PER_ADDR; i++) {
		close(fds[0][i]);
		fds[0][i] = -1;
	}
	addr_str(src, sizeof(src), 1, 2);
	end = t_now() + CLOSE_TIMEOUT_MS / 1000.0;
	do {
		errno = 0;
		late = clt_from(ctx, src);
		if (late || errno != EAGAIN)
			break;
		usleep(10 * 1000);
	} while (t_now() < end);
	if (!late) {
		fprintf(stderr,
			"hs_total: after %u half-open connections closed, a client from %s was refused (%s)\n",
			HS_PER_ADDR, src, strerror(errno));
		exit(1);
	}
	check_up(late, "after close");
	check_up(before, "after close");
	t = status("after close");
	worst = t > worst ? t : worst;
	printf("hs_total: after one address's half-open connections closed, a client from %s got in; status answered in %.3f s at worst\n",
	       src, worst);

	ibtrs_clt_close(late);
	ibtrs_clt_close(before);
	for (a = 0; a < HS_ADDRS; a++)
		for (i = 0; i < HS_PER_ADDR; i++)
			if (fds[a][i] >= 0)
				close(fds[a][i]);
	ibtrs_srv_close(ctx);
	printf("hostile/hs_total: OK\n");
	return 0;
}
