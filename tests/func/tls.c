// SPDX-License-Identifier: MIT
/*
 * tls.c - TLS 1.3 with pre-shared keys on the tcp backend.
 *
 * - A TLS session carries verified data both ways at 4 KiB and 128 KiB
 *   (tests/cli/tls.sh checks what "ibtrs status" says of it).
 * - Refused, with the cause named on the client (errno and log line) and
 *   in the server's log, while a good TLS session on the same server
 *   keeps working: a wrong key and an unknown identity (EACCES), a
 *   plaintext client to a "require" server ("requires TLS"), a TLS client
 *   to an "off" server ("does not speak TLS", both EPROTONOSUPPORT).
 * - An "on" server takes TLS and plaintext clients. The server has keys,
 *   so its plaintext clients hold a key too (authentication needs one).
 * - TLS is for the tcp backend: the loop backend refuses it at listen and
 *   at connect (EOPNOTSUPP, with a message).
 * - Capture: through a relay in the test that keeps a copy of every byte,
 *   a known 64-byte pattern written and read back over TLS appears
 *   nowhere in the copy; the same run in plaintext shows it (so that the
 *   check can fail).
 *
 * Key files are written 0600 into a fresh directory. Skips (77) when the
 * library is built without GnuTLS.
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/stat.h>

#include "harness.h"

#define QD 32
#define MAX_IO (256 * 1024)

/* Keys: the server knows alice and carol. */
#define KEY_ALICE \
	"00112233445566778899aabbccddeeff0f1e2d3c4b5a69788796a5b4c3d2e1f0"
#define KEY_CAROL \
	"a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0"
#define KEY_WRONG \
	"ffeeddccbbaa99887766554433221100f0e1d2c3b4a5968778695a4b3c2d1e0f"

static char dir[64], f_srv[128], f_alice[128], f_wrong[128], f_mallory[128];

/* ------------------------------------------------------------------ */
/* log capture                                                          */

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

static void log_clear(void)
{
	pthread_mutex_lock(&log_lock);
	loglen = 0;
	logbuf[0] = 0;
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
	fprintf(stderr, "tls: no log line with \"%s\"; log:\n%s", s, logbuf);
	return false;
}

/* ------------------------------------------------------------------ */
/* setup                                                                */

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	CHECK(fd >= 0);
	CHECK_EQ(write(fd, text, strlen(text)), (long long)strlen(text));
	close(fd);
}

static void make_keys(void)
{
	snprintf(dir, sizeof(dir), "/tmp/ibtrs-tls-XXXXXX");
	CHECK(mkdtemp(dir));
	snprintf(f_srv, sizeof(f_srv), "%s/server.psk", dir);
	snprintf(f_alice, sizeof(f_alice), "%s/alice.psk", dir);
	snprintf(f_wrong, sizeof(f_wrong), "%s/wrong.psk", dir);
	snprintf(f_mallory, sizeof(f_mallory), "%s/mallory.psk", dir);
	write_file(f_srv, "alice:" KEY_ALICE "\ncarol:" KEY_CAROL "\n");
	write_file(f_alice, "alice:" KEY_ALICE "\n");
	write_file(f_wrong, "alice:" KEY_WRONG "\n");
	write_file(f_mallory, "mallory:" KEY_ALICE "\n");
}

static void remove_keys(void)
{
	unlink(f_srv);
	unlink(f_alice);
	unlink(f_wrong);
	unlink(f_mallory);
	rmdir(dir);
}

/* h_srv_start() with a TLS mode and the server's key file. */
static void srv_start(struct h_srv *srv, int mode)
{
	struct sockaddr_storage ss;
	struct ibtrs_addr addr = { .src = NULL, .dst = &ss };
	struct ibtrs_srv_opts opts;

	CHECK(!h_cur_srv);
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
	opts.backend = "tcp"; /* whatever IBTRS_BACKEND says: TLS is tcp's */
	opts.tls = mode;
	opts.tls_psk_file = f_srv;
	srv->ctx = ibtrs_srv_open_opts(&opts);
	if (!srv->ctx) {
		fprintf(stderr, "tls: cannot start the server: %s\n%s",
			strerror(errno), logbuf);
		exit(1);
	}
	srv->port = ibtrs_srv_get_port(srv->ctx);
}

/* A session to 127.0.0.1:@port; NULL with errno when refused. */
static struct ibtrs_clt *clt_open(const char *name, uint16_t port, int mode,
				  const char *psk)
{
	struct sockaddr_storage dst;
	struct ibtrs_addr p = { .src = NULL, .dst = &dst };
	struct ibtrs_clt_opts o;

	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, port, &p), 0);
	ibtrs_clt_opts_init(&o, sizeof(o));
	o.sessname = name;
	o.paths = &p;
	o.path_cnt = 1;
	o.port = port;
	o.max_reconnect_attempts = 0;
	o.connect_timeout_ms = 5000;
	o.backend = "tcp";
	o.tls = mode;
	o.tls_psk_file = psk;
	return ibtrs_clt_open_opts(&o);
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

/* A refused open: NULL, @err, and the log naming @clt_why and @srv_why. */
static void check_refused(uint16_t port, int mode, const char *psk, int err,
			  const char *clt_why, const char *srv_why)
{
	struct ibtrs_clt *s;

	log_clear();
	s = clt_open("tls-bad", port, mode, psk);
	if (s)
		fprintf(stderr, "tls: %s: open succeeded\n", clt_why);
	CHECK(!s);
	if (errno != err)
		fprintf(stderr, "tls: %s: errno %d (%s)\n", clt_why, errno,
			strerror(errno));
	CHECK_EQ(errno, err);
	CHECK(log_wait(clt_why));
	CHECK(log_wait(srv_why));
}

/* ------------------------------------------------------------------ */
/* tests                                                                */

static void test_session_and_refusals(void)
{
	struct ibtrs_clt *good;
	struct h_srv srv;

	srv_start(&srv, IBTRS_TLS_REQUIRE);
	good = clt_open("tls-good", srv.port, IBTRS_TLS_REQUIRE, f_alice);
	if (!good)
		fprintf(stderr, "tls: good session: %s\n%s", strerror(errno),
			logbuf);
	CHECK(good);
	check_io(good, 4096, 0, 1);
	check_io(good, 128 * 1024, 1 << 20, 2);

	check_refused(srv.port, IBTRS_TLS_REQUIRE, f_wrong, EACCES,
		      "TLS refused by server", "failed");
	check_io(good, 4096, 8192, 3);
	check_refused(srv.port, IBTRS_TLS_ON, f_mallory, EACCES,
		      "does not know the identity 'mallory'",
		      "unknown PSK identity 'mallory'");
	check_io(good, 128 * 1024, 2 << 20, 4);
	check_refused(srv.port, IBTRS_TLS_OFF, NULL, EPROTONOSUPPORT,
		      "requires TLS", "this server requires TLS");
	check_io(good, 4096, 16384, 5);

	ibtrs_clt_close(good);
	h_srv_stop(&srv);

	srv_start(&srv, IBTRS_TLS_OFF);
	good = clt_open("plain-good", srv.port, IBTRS_TLS_OFF, f_alice);
	CHECK(good);
	check_refused(srv.port, IBTRS_TLS_REQUIRE, f_alice, EPROTONOSUPPORT,
		      "does not speak TLS", "TLS is off on this server");
	check_io(good, 128 * 1024, 0, 6);
	ibtrs_clt_close(good);
	h_srv_stop(&srv);
}

/* ------------------------------------------------------------------ */
/* the relay                                                            */

#define RELAY_MAX 16
#define CAP_MAX (64u << 20)

struct relay {
	int lfd, port;
	int stop[2];
	pthread_t thr;
	uint16_t to;
	int a[RELAY_MAX], b[RELAY_MAX];
	unsigned int n;
	unsigned char *cap;
	size_t cap_len;
};

static void relay_copy(struct relay *r, int from, int to)
{
	char buf[65536];
	ssize_t n = recv(from, buf, sizeof(buf), MSG_DONTWAIT);

	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			shutdown(to, SHUT_WR);
		return;
	}
	if (r->cap_len + (size_t)n <= CAP_MAX) {
		memcpy(r->cap + r->cap_len, buf, (size_t)n);
		r->cap_len += (size_t)n;
	}
	/* Blocking sockets: the copy is simple, the loads are small. */
	CHECK_EQ(send(to, buf, (size_t)n, MSG_NOSIGNAL), n);
}

static void *relay_fn(void *arg)
{
	struct relay *r = arg;

	for (;;) {
		struct pollfd p[2 + 2 * RELAY_MAX];
		unsigned int i, np = 0;

		p[np++] = (struct pollfd){ .fd = r->stop[0], .events = POLLIN };
		p[np++] = (struct pollfd){ .fd = r->lfd, .events = POLLIN };
		for (i = 0; i < r->n; i++) {
			p[np++] = (struct pollfd){ .fd = r->a[i],
						   .events = POLLIN };
			p[np++] = (struct pollfd){ .fd = r->b[i],
						   .events = POLLIN };
		}
		if (poll(p, np, -1) < 0)
			continue;
		if (p[0].revents)
			break;
		if (p[1].revents && r->n < RELAY_MAX) {
			struct sockaddr_in sin = { .sin_family = AF_INET };
			int c = accept(r->lfd, NULL, NULL), s;

			CHECK(c >= 0);
			s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			CHECK(s >= 0);
			sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			sin.sin_port = htons(r->to);
			CHECK_EQ(connect(s, (struct sockaddr *)&sin,
					 sizeof(sin)),
				 0);
			r->a[r->n] = c;
			r->b[r->n] = s;
			r->n++;
		}
		for (i = 0; i < r->n; i++) {
			if (p[2 + 2 * i].revents)
				relay_copy(r, r->a[i], r->b[i]);
			if (p[3 + 2 * i].revents)
				relay_copy(r, r->b[i], r->a[i]);
		}
	}
	return NULL;
}

static void relay_start(struct relay *r, uint16_t to)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);

	memset(r, 0, sizeof(*r));
	r->to = to;
	r->cap = malloc(CAP_MAX);
	CHECK(r->cap);
	CHECK_EQ(pipe(r->stop), 0);
	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(r->lfd >= 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_EQ(bind(r->lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	CHECK_EQ(listen(r->lfd, 16), 0);
	CHECK_EQ(getsockname(r->lfd, (struct sockaddr *)&sin, &len), 0);
	r->port = ntohs(sin.sin_port);
	CHECK_EQ(pthread_create(&r->thr, NULL, relay_fn, r), 0);
}

static void relay_stop(struct relay *r)
{
	unsigned int i;

	CHECK_EQ(write(r->stop[1], "x", 1), 1);
	CHECK_EQ(pthread_join(r->thr, NULL), 0);
	for (i = 0; i < r->n; i++) {
		close(r->a[i]);
		close(r->b[i]);
	}
	close(r->lfd);
	close(r->stop[0]);
	close(r->stop[1]);
}

/*
 * Write and read back blocks made of a 64-byte pattern through a relay;
 * return whether the relay's copy of the traffic contains the pattern.
 */
static bool capture_shows_pattern(uint16_t srv_port, int mode, const char *psk)
{
	unsigned char pat[64], *w = malloc(128 * 1024), *r = malloc(128 * 1024);
	struct ibtrs_clt *sess;
	struct ibtrs_tag *tag;
	struct relay rl;
	size_t i;
	bool found;

	CHECK(w && r);
	h_fill(pat, sizeof(pat), 0x5ca1ab1e);
	for (i = 0; i < 128 * 1024; i += sizeof(pat))
		memcpy(w + i, pat, sizeof(pat));
	relay_start(&rl, srv_port);
	sess = clt_open(mode == IBTRS_TLS_OFF ? "cap-plain" : "cap-tls",
			(uint16_t)rl.port, mode, psk);
	CHECK(sess);
	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, w, 4096, 0, 1), 0);
	CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, w, 128 * 1024, 65536, 2), 0);
	CHECK_EQ(h_io(sess, tag, IBTRS_READ, r, 128 * 1024, 65536, 3), 0);
	CHECK(!memcmp(w, r, 128 * 1024));
	ibtrs_clt_put_tag(sess, tag);
	ibtrs_clt_close(sess);
	relay_stop(&rl);
	CHECK(rl.cap_len > 2 * 128 * 1024);
	found = memmem(rl.cap, rl.cap_len, pat, sizeof(pat)) != NULL;
	free(rl.cap);
	free(w);
	free(r);
	return found;
}

/* An "on" server takes both kinds; only plaintext shows the data. */
static void test_on_and_capture(void)
{
	struct ibtrs_clt *a, *b;
	struct h_srv srv;

	srv_start(&srv, IBTRS_TLS_ON);
	a = clt_open("on-tls", srv.port, IBTRS_TLS_ON, f_alice);
	b = clt_open("on-plain", srv.port, IBTRS_TLS_OFF, f_alice);
	CHECK(a && b);
	check_io(a, 128 * 1024, 0, 7);
	check_io(b, 4096, 1 << 20, 8);
	ibtrs_clt_close(a);
	ibtrs_clt_close(b);

	CHECK(!capture_shows_pattern(srv.port, IBTRS_TLS_REQUIRE, f_alice));
	CHECK(capture_shows_pattern(srv.port, IBTRS_TLS_OFF, f_alice));
	h_srv_stop(&srv);
}

#ifdef IBTRS_HAVE_TLS
static const bool have_tls = true;
#else
static const bool have_tls = false;
#endif

/* The loop backend refuses a TLS mode, with a message naming tcp. */
static void test_other_backend(void)
{
	struct sockaddr_storage dst;
	struct ibtrs_addr p = { .src = NULL, .dst = &dst };
	struct ibtrs_srv_opts so;
	struct ibtrs_clt_opts co;

	log_clear();
	ibtrs_srv_opts_init(&so, sizeof(so));
	so.port = 0;
	so.backend = "loop";
	so.rdma_ev = h_srv_rdma_ev;
	so.link_ev = h_srv_link_ev;
	so.tls = IBTRS_TLS_REQUIRE;
	so.tls_psk_file = f_srv;
	CHECK(!ibtrs_srv_open_opts(&so));
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK(log_wait("loop: TLS is for the tcp backend"));

	log_clear();
	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, 1, &p), 0);
	ibtrs_clt_opts_init(&co, sizeof(co));
	co.sessname = "tls-loop";
	co.paths = &p;
	co.path_cnt = 1;
	co.port = 1;
	co.backend = "loop";
	co.max_reconnect_attempts = 0;
	co.tls = IBTRS_TLS_ON;
	co.tls_psk_file = f_alice;
	CHECK(!ibtrs_clt_open_opts(&co));
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK(log_wait("loop: TLS is for the tcp backend"));
}

int main(void)
{
	if (!have_tls) {
		printf("tls: built without GnuTLS, skipped\n");
		return T_SKIP;
	}
	t_watchdog(240);
	ibtrs_set_log_fn(cap_log, NULL);
	ibtrs_set_log_level(IBTRS_LOG_ERR);
	make_keys();
	test_session_and_refusals();
	test_on_and_capture();
	test_other_backend();
	remove_keys();
	printf("tls: ok\n");
	return 0;
}
