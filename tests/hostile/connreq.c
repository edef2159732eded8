// SPDX-License-Identifier: MIT
/*
 * connreq.c - attacks on the connection setup.
 *
 * Raw TCP connections send the server garbage, bad hellos and bad
 * connection requests (magic, flags, version, connection ids), and
 * authenticated connections to unknown sessions or duplicate connections
 * (refused in AUTH_RSP); a slow hello (one byte per 100 ms)
 * runs beside them, and at the end 200 connections never send a hello
 * at all. Every attacking connection must be refused or closed in bounded
 * time while the good session goes on without an error.
 */
#include "hostile.h"

#define SILENT_CONS 200
#define SILENT_WAIT_S 15.0 /* a silent connection must be closed by then */

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

/*
 * An authenticated connection @cid of @cid_num of @a's path that the
 * server must refuse in AUTH_RSP with @err.
 */
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

static void case_unknown_sess(void)
{
	struct atk a;

	atk_init(&a);
	expect_refused(&a, 1, 2, false, ENXIO);
	expect_refused(&a, 1, 2, true, ENXIO);
	expect_refused(&a, 0, 1, false, ENXIO);
}

static void case_dup_cid(void)
{
	struct atk a, b;
	unsigned int i;

	atk_open(&a, "atk-dup", 2, false);
	/* The same client (it has the session's secret) again. */
	b = a;
	for (i = 0; i < IBTRS_MAX_CONS_PER_PATH; i++)
		b.fd[i] = -1;
	/* cid 1 again, and cid 1 with another cid_num: both busy. */
	expect_refused(&b, 1, 2, false, EBUSY);
	expect_refused(&b, 1, 3, false, EBUSY);
	/* The path itself still works. */
	atk_send_info(&a, 0, "atk-dup");
	atk_recv_info(&a, 0);
	atk_ping(&a, 1, 2);
	/* A connection to a connected path is refused too. */
	expect_refused(&b, 1, 2, false, EBUSY);
	atk_ping(&a, 0, 3);
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

	struct ibtrs_conn_req r = {
		.version = IBTRS_PROTO_VER,
		.cid_num = 1,
		.first_conn = true,
	};

	(void)arg;
	atk_init(&a);
	memcpy(r.sess_uuid, a.sess_uuid, IBTRS_UUID_LEN);
	memcpy(r.path_uuid, a.path_uuid, IBTRS_UUID_LEN);
	ra_conn_req(&a.last, &r, &m, false);
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
	CHECK_EQ(atk_auth(&a, a.fd[0], a.rsp.nonce), 0);
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

static const struct hcase cases[] = {
	{ "garbage", case_garbage },
	{ "bad-hello", case_bad_hello },
	{ "conn-req-magic", case_conn_req_magic },
	{ "version", case_version },
	{ "cid", case_cid },
	{ "unknown-session", case_unknown_sess },
	{ "duplicate-cid", case_dup_cid },
};

int main(void)
{
	unsigned long long before;
	pthread_t slow;

	hostile_setup();
	CHECK_EQ(pthread_create(&slow, NULL, slow_thread, NULL), 0);
	hostile_run(cases, sizeof(cases) / sizeof(cases[0]));
	cur_case = "slow-hello";
	pthread_join(slow, NULL);
	CHECK_EQ(atomic_load(&slow_result), 1);
	check_good(cur_case, good_ops());
	printf("server attack slow-hello: done\n");

	cur_case = "silent";
	before = good_ops();
	case_silent();
	check_good(cur_case, before);
	return hostile_finish("hostile/connreq");
}
