// SPDX-License-Identifier: MIT
/*
 * session_loss.c - at most once across a server restart and a full server.
 *
 * - Restart: 8 WRITEs held by a server (run, unanswered) when it is closed
 *   and another one opened on the same port. The client rejoins a session
 *   of another incarnation: one session loss, and by default every held
 *   request completes with -ECONNRESET, none reaches the new server, and
 *   the counters say so (unknown_outcome 8); with replay_on_session_loss
 *   they run on the new server and complete, counted replayed_after_loss.
 *   A new request after the loss works either way.
 * - Full server: a session in its grace period (its client's path was
 *   reset and reconnects 3 s later) with requests held is not ended to
 *   make room: with max_sessions 2 and another session open, a third
 *   client is refused with ENOSPC; the first client comes back to its
 *   session (no session loss), and its requests, replayed, run once.
 */
#include <ibtrs_fault.h>

#include "harness.h"

#define NR_HELD 8
#define IO_LEN 4096
#define MAX_HELD 64

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool hold;
	struct ibtrs_srv_op *held[MAX_HELD];
	unsigned int nr_held;
	_Atomic unsigned int runs;
} s;

static int srv_rdma_ev(struct ibtrs_srv *sess, void *priv,
		       struct ibtrs_srv_op *id, int dir, void *data,
		       size_t datalen, const void *usr, size_t usrlen)
{
	(void)sess;
	(void)priv;
	(void)dir;
	(void)data;
	(void)datalen;
	(void)usr;
	(void)usrlen;
	atomic_fetch_add(&s.runs, 1);
	pthread_mutex_lock(&s.lock);
	if (s.hold && s.nr_held < MAX_HELD) {
		s.held[s.nr_held++] = id;
		pthread_cond_broadcast(&s.cond);
		pthread_mutex_unlock(&s.lock);
		return 0;
	}
	pthread_mutex_unlock(&s.lock);
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
}

static struct ibtrs_srv_ctx *srv_open(uint16_t port, uint32_t max_sessions)
{
	struct sockaddr_storage ss;
	struct ibtrs_addr addr = { .dst = &ss };
	struct ibtrs_srv_opts o;
	struct ibtrs_srv_ctx *ctx;
	int i;

	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, 0, &addr), 0);
	ibtrs_srv_opts_init(&o, sizeof(o));
	o.listen_addr = (const struct sockaddr *)&ss;
	o.port = port;
	o.rdma_ev = srv_rdma_ev;
	o.no_control = true;
	if (max_sessions)
		o.max_sessions = max_sessions;
	/* The port of a server just closed: bounded retries. */
	for (i = 0; i < 100; i++) {
		ctx = ibtrs_srv_open_opts(&o);
		if (ctx || errno != EADDRINUSE)
			break;
		h_sleep_ms(50);
	}
	CHECK(ctx);
	return ctx;
}

static void srv_hold(bool on)
{
	pthread_mutex_lock(&s.lock);
	s.hold = on;
	pthread_mutex_unlock(&s.lock);
}

static bool srv_wait_held(unsigned int n)
{
	struct timespec ts = t_deadline(10000);
	bool ok;

	pthread_mutex_lock(&s.lock);
	while (s.nr_held < n)
		if (pthread_cond_timedwait(&s.cond, &s.lock, &ts))
			break;
	ok = s.nr_held >= n;
	pthread_mutex_unlock(&s.lock);
	return ok;
}

static void srv_answer_held(void)
{
	unsigned int i, n;
	struct ibtrs_srv_op *ops[MAX_HELD];

	pthread_mutex_lock(&s.lock);
	n = s.nr_held;
	memcpy(ops, s.held, n * sizeof(ops[0]));
	s.nr_held = 0;
	pthread_mutex_unlock(&s.lock);
	for (i = 0; i < n; i++)
		ibtrs_srv_resp_rdma(ops[i], 0);
}

static struct ibtrs_clt *clt_open(const char *name, uint16_t port, bool replay,
				  uint8_t reconnect_delay,
				  uint32_t no_path_timeout_ms)
{
	struct sockaddr_storage dst;
	struct ibtrs_addr addr = { .dst = &dst };
	struct ibtrs_clt_opts o;

	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, port, &addr), 0);
	ibtrs_clt_opts_init(&o, sizeof(o));
	o.sessname = name;
	o.paths = &addr;
	o.path_cnt = 1;
	o.port = port;
	o.reconnect_delay_sec = reconnect_delay;
	o.failover_timeout_ms = 20000;
	o.no_control = true;
	o.replay_on_session_loss = replay;
	o.no_path_timeout_ms = no_path_timeout_ms;
	return ibtrs_clt_open_opts(&o);
}

struct held_req {
	struct ibtrs_tag *tag;
	unsigned char buf[IO_LEN];
	_Atomic int calls;
	_Atomic int err;
};

static struct held_req reqs[NR_HELD];

static void held_conf(void *priv, int err)
{
	struct held_req *r = priv;

	atomic_store(&r->err, err);
	atomic_fetch_add(&r->calls, 1);
}

static void submit_held(struct ibtrs_clt *sess)
{
	unsigned int i;

	for (i = 0; i < NR_HELD; i++) {
		struct iovec sg = { .iov_base = reqs[i].buf,
				    .iov_len = IO_LEN };

		atomic_store(&reqs[i].calls, 0);
		atomic_store(&reqs[i].err, 1);
		reqs[i].tag =
			ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
		CHECK(reqs[i].tag);
		CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, held_conf, sess,
					   reqs[i].tag, &reqs[i], NULL, 0,
					   IO_LEN, &sg, 1),
			 0);
	}
}

static bool wait_all_done(unsigned int ms)
{
	double end = t_now() + ms / 1000.0;
	unsigned int i, done;

	do {
		for (i = 0, done = 0; i < NR_HELD; i++)
			done += atomic_load(&reqs[i].calls) > 0;
		if (done == NR_HELD)
			return true;
		h_sleep_ms(5);
	} while (t_now() < end);
	return false;
}

static void put_held(struct ibtrs_clt *sess)
{
	unsigned int i;

	for (i = 0; i < NR_HELD; i++)
		ibtrs_clt_put_tag(sess, reqs[i].tag);
}

static bool wait_connected(struct ibtrs_clt *sess, bool want, unsigned int ms)
{
	struct ibtrs_attrs attr;
	double end = t_now() + ms / 1000.0;

	do {
		if ((ibtrs_clt_query(sess, &attr) == 0) == want)
			return true;
		h_sleep_ms(5);
	} while (t_now() < end);
	return false;
}

static bool has_event(struct ibtrs_clt *sess, const char *what)
{
	static struct ibtrs_event ev[IBTRS_EVENT_LOG_LEN];
	size_t i, n = ibtrs_clt_get_events(sess, ev, IBTRS_EVENT_LOG_LEN);

	for (i = 0; i < n; i++)
		if (strstr(ev[i].msg, what))
			return true;
	return false;
}

static void *close_thread(void *arg)
{
	ibtrs_srv_close(arg);
	return NULL;
}

static void one_io(struct ibtrs_clt *sess)
{
	struct ibtrs_tag *tag =
		ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
	static unsigned char buf[IO_LEN];

	CHECK(tag);
	CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, buf, sizeof(buf), 0, 1), 0);
	ibtrs_clt_put_tag(sess, tag);
}

static void test_restart(bool replay)
{
	struct ibtrs_clt_stats st = { .size = sizeof(st) };
	struct ibtrs_srv_ctx *srv;
	struct ibtrs_clt *sess;
	pthread_t thr;
	uint64_t inc0;
	uint16_t port;
	unsigned int i, runs;

	atomic_store(&s.runs, 0);
	srv = srv_open(0, 0);
	port = ibtrs_srv_get_port(srv);
	sess = clt_open(replay ? "restart-replay" : "restart", port, replay, 1,
			0);
	CHECK(sess);
	CHECK_EQ(ibtrs_clt_get_stats(sess, &st), 0);
	CHECK(st.incarnation != 0);
	inc0 = st.incarnation;
	CHECK_EQ(st.session_losses, 0);

	srv_hold(true);
	submit_held(sess);
	CHECK(srv_wait_held(NR_HELD));
	/* The server goes away with the requests run, unanswered: close it
	 * and answer them when the client can no longer see the answers. */
	CHECK_EQ(pthread_create(&thr, NULL, close_thread, srv), 0);
	CHECK(wait_connected(sess, false, 10000));
	srv_hold(false);
	srv_answer_held();
	CHECK_EQ(pthread_join(thr, NULL), 0);
	for (i = 0; i < NR_HELD; i++)
		CHECK_EQ(atomic_load(&reqs[i].calls), 0);

	/* Another server on the same port: the client rejoins. */
	runs = atomic_load(&s.runs);
	srv = srv_open(port, 0);
	CHECK(wait_connected(sess, true, 10000));
	CHECK(wait_all_done(10000));
	CHECK_EQ(ibtrs_clt_get_stats(sess, &st), 0);
	printf("restart%s: session losses %llu, unknown outcome %llu, replayed %llu, incarnation %016llx -> %016llx\n",
	       replay ? " (replay)" : "", (unsigned long long)st.session_losses,
	       (unsigned long long)st.unknown_outcome,
	       (unsigned long long)st.replayed_after_loss,
	       (unsigned long long)inc0, (unsigned long long)st.incarnation);
	CHECK_EQ(st.session_losses, 1);
	CHECK(st.incarnation != 0 && st.incarnation != inc0);
	CHECK(has_event(sess, "session lost"));
	for (i = 0; i < NR_HELD; i++) {
		CHECK_EQ(atomic_load(&reqs[i].calls), 1);
		CHECK_EQ(atomic_load(&reqs[i].err), replay ? 0 : -ECONNRESET);
	}
	if (replay) {
		CHECK_EQ(st.unknown_outcome, 0);
		CHECK_EQ(st.replayed_after_loss, NR_HELD);
		CHECK_EQ(atomic_load(&s.runs), runs + NR_HELD);
	} else {
		CHECK_EQ(st.unknown_outcome, NR_HELD);
		CHECK_EQ(st.replayed_after_loss, 0);
		CHECK_EQ(atomic_load(&s.runs), runs);
	}
	put_held(sess);
	/* New requests are new requests of the new session. */
	for (i = 0; i < 3; i++)
		one_io(sess);
	ibtrs_clt_close(sess);
	ibtrs_srv_close(srv);
}

static void test_full(void)
{
	struct ibtrs_clt_stats st = { .size = sizeof(st) };
	struct ibtrs_srv_stats ss = { .size = sizeof(ss) };
	struct ibtrs_clt *x, *y, *z;
	struct ibtrs_srv_ctx *srv;
	double end;
	uint16_t port;
	unsigned int i, runs;

	atomic_store(&s.runs, 0);
	srv = srv_open(0, 2);
	port = ibtrs_srv_get_port(srv);
	x = clt_open("full-x", port, false, 3, 0);
	CHECK(x);
	srv_hold(true);
	submit_held(x);
	CHECK(srv_wait_held(NR_HELD));
	runs = atomic_load(&s.runs);

	/* X's path is reset; the server keeps X's session in grace. */
	CHECK_EQ(ibtrs_clt_inject_fault(x, 0, IBTRS_FAULT_CLOSE, 0), 0);
	end = t_now() + 10;
	do {
		CHECK_EQ(ibtrs_srv_get_stats(srv, &ss), 0);
		if (!ss.paths)
			break;
		h_sleep_ms(5);
	} while (t_now() < end);
	CHECK_EQ(ss.paths, 0);
	CHECK_EQ(ss.sessions, 1);

	/* Another client takes the last room; a third is refused. */
	y = clt_open("full-y", port, false, 1, 0);
	CHECK(y);
	errno = 0;
	z = clt_open("full-z", port, false, 1, 0);
	printf("full: third client: %s (%s)\n", z ? "opened" : "refused",
	       strerror(errno));
	CHECK(!z);
	CHECK_EQ(errno, ENOSPC);
	CHECK_EQ(ibtrs_srv_get_stats(srv, &ss), 0);
	CHECK(ss.refused_full >= 1);
	CHECK_EQ(ss.sessions, 2);

	/* X comes back to its own session and replays; the held requests
	 * finish and answer the replays, each run once. */
	CHECK(wait_connected(x, true, 10000));
	srv_hold(false);
	srv_answer_held();
	CHECK(wait_all_done(10000));
	for (i = 0; i < NR_HELD; i++)
		CHECK_EQ(atomic_load(&reqs[i].err), 0);
	CHECK_EQ(atomic_load(&s.runs), runs);
	CHECK_EQ(ibtrs_clt_get_stats(x, &st), 0);
	printf("full: X session losses %llu, unknown outcome %llu\n",
	       (unsigned long long)st.session_losses,
	       (unsigned long long)st.unknown_outcome);
	CHECK_EQ(st.session_losses, 0);
	CHECK_EQ(st.unknown_outcome, 0);
	CHECK_EQ(ibtrs_srv_get_stats(srv, &ss), 0);
	CHECK(ss.replays >= NR_HELD);
	put_held(x);
	one_io(x);
	one_io(y);
	ibtrs_clt_close(y);
	ibtrs_clt_close(x);
	ibtrs_srv_close(srv);
}

/*
 * Requests submitted while the server is away wait for a path
 * (no_path_timeout_ms): never posted, they cannot have run on the lost
 * server session, so the new one simply runs them, once each; they are no
 * unknown outcome.
 */
static void test_parked_new(void)
{
	struct ibtrs_clt_stats st = { .size = sizeof(st) };
	struct ibtrs_srv_ctx *srv;
	struct ibtrs_clt *sess;
	uint16_t port;
	unsigned int i, runs;

	srv = srv_open(0, 0);
	port = ibtrs_srv_get_port(srv);
	sess = clt_open("parked-new", port, false, 1, 20000);
	CHECK(sess);
	for (i = 0; i < NR_HELD; i++)
		one_io(sess);
	ibtrs_srv_close(srv);
	CHECK(wait_connected(sess, false, 10000));
	submit_held(sess);
	for (i = 0; i < NR_HELD; i++)
		CHECK_EQ(atomic_load(&reqs[i].calls), 0);
	runs = atomic_load(&s.runs);
	srv = srv_open(port, 0);
	CHECK(wait_all_done(15000));
	CHECK_EQ(ibtrs_clt_get_stats(sess, &st), 0);
	printf("parked new: session losses %llu, unknown outcome %llu, runs %u\n",
	       (unsigned long long)st.session_losses,
	       (unsigned long long)st.unknown_outcome,
	       atomic_load(&s.runs) - runs);
	CHECK_EQ(st.session_losses, 1);
	CHECK_EQ(st.unknown_outcome, 0);
	for (i = 0; i < NR_HELD; i++)
		CHECK_EQ(atomic_load(&reqs[i].err), 0);
	CHECK_EQ(atomic_load(&s.runs), runs + NR_HELD);
	put_held(sess);
	ibtrs_clt_close(sess);
	ibtrs_srv_close(srv);
}

int main(void)
{
	t_watchdog(240);
	pthread_mutex_init(&s.lock, NULL);
	t_cond_init(&s.cond);
	test_restart(false);
	test_restart(true);
	test_full();
	test_parked_new();
	printf("PASS\n");
	return 0;
}
