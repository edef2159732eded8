// SPDX-License-Identifier: MIT
/*
 * policy_loop.c - multipath policies, failover and the path state machine
 * on the loop backend, with time under the test's control.
 *
 * One server context listens on the wildcard 0.0.0.0 (loop backend: no
 * network), so that a client reaches it over three fake paths, 127.0.0.1,
 * 127.0.0.2 and 127.0.0.3, whose faults are set one by one. The clock is a
 * variable the test moves; the loops' ticks still fire in real time, so
 * every step of the clock is followed by a bounded, polling wait, and a
 * bounded wait until the library's threads ran what the step made due.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clt_int.h"
#include "loop.h"
#include "loop/loop_xprt.h"
#include "path.h"
#include "test.h"

#define NR_PATHS 3
#define HB_MS 200
#define FAILOVER_MS 1000
#define QD 64
#define MAX_REQS 2048
#define DATA_LEN 512
#define MS 1000000ull

/* Busy-wait on @cond for up to @ms milliseconds of real time. */
#define WAIT_FOR(cond, ms)                               \
	do {                                             \
		unsigned int w_;                         \
		for (w_ = 0; w_ < (ms) && !(cond); w_++) \
			sleep_ms(1);                     \
	} while (0)

struct usr_msg {
	uint32_t id;
	uint32_t tag;
};

struct req {
	_Atomic int done;
	_Atomic int err;
	_Atomic uint64_t done_ns;
	struct ibtrs_tag *tag;
	char buf[DATA_LEN];
};

static _Atomic uint64_t test_now;
static _Atomic bool pump_stop;

static struct ibtrs_srv_ctx *srv;
static _Atomic bool srv_defer;
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibtrs_srv_op *held[QD];
static unsigned int nr_held;
static _Atomic unsigned int ev_count[MAX_REQS];
static _Atomic unsigned int ev_tag[MAX_REQS];

static struct ibtrs_clt *clt;
static struct req reqs[MAX_REQS];
static unsigned int next_id;
static struct sockaddr_in path_addr[NR_PATHS];

/* ------------------------------------------------------------------ */
/* clock and waiting                                                    */

static uint64_t test_clock(void)
{
	return atomic_load(&test_now);
}

static uint64_t now_ms_rel(uint64_t since)
{
	return (test_clock() - since) / MS;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/*
 * Wait, at most @max_ms of real time, until no other thread of the process
 * runs or waits for a CPU: the loops ran what the last step of the clock
 * made due, and went back to waiting. On a busy machine a loop thread may
 * not get a CPU in the real time a step is given, and what it does late is
 * then timed by a clock that moved on (a heartbeat's round trip, say).
 */
static void settle(unsigned int max_ms)
{
	t_wait_others_blocked(1, max_ms);
}

/*
 * Move the clock @ms forward in steps of @step_ms, each followed by
 * @real_ms of real time and by settle(), so that ticks, heartbeats and
 * held frames keep up with it.
 */
static void advance(unsigned int ms, unsigned int step_ms, unsigned int real_ms)
{
	unsigned int done;

	for (done = 0; done < ms; done += step_ms) {
		atomic_fetch_add(&test_now, (uint64_t)step_ms * MS);
		sleep_ms(real_ms);
		settle(200);
	}
}

/* Keeps time moving while the library closes. */
static void *clock_pump(void *arg)
{
	(void)arg;
	while (!atomic_load(&pump_stop)) {
		atomic_fetch_add(&test_now, MS);
		sleep_ms(1);
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* server                                                               */

static int srv_rdma_ev(struct ibtrs_srv *sess, void *priv,
		       struct ibtrs_srv_op *id, int dir, void *data,
		       size_t datalen, const void *usr, size_t usrlen)
{
	struct usr_msg m;

	(void)sess, (void)priv;
	if (usrlen != sizeof(m))
		return -EINVAL;
	memcpy(&m, usr, sizeof(m));
	if (m.id >= MAX_REQS)
		return -EINVAL;
	atomic_fetch_add(&ev_count[m.id], 1);
	atomic_store(&ev_tag[m.id], m.tag);
	if (dir == IBTRS_READ)
		memset(data, (int)(m.id & 0xff), datalen);
	if (atomic_load(&srv_defer)) {
		pthread_mutex_lock(&held_lock);
		if (nr_held < QD) {
			held[nr_held++] = id;
			pthread_mutex_unlock(&held_lock);
			return 0;
		}
		pthread_mutex_unlock(&held_lock);
	}
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
}

static unsigned int held_count(void)
{
	unsigned int n;

	pthread_mutex_lock(&held_lock);
	n = nr_held;
	pthread_mutex_unlock(&held_lock);
	return n;
}

static void release_held(void)
{
	pthread_mutex_lock(&held_lock);
	while (nr_held)
		ibtrs_srv_resp_rdma(held[--nr_held], 0);
	pthread_mutex_unlock(&held_lock);
}

static struct ibtrs_srv_stats srv_stats(void)
{
	struct ibtrs_srv_stats st = { .size = sizeof(st) };

	CHECK_EQ(ibtrs_srv_get_stats(srv, &st), 0);
	return st;
}

/* ------------------------------------------------------------------ */
/* client                                                               */

static void conf(void *priv, int err)
{
	struct req *r = priv;

	atomic_store(&r->err, err);
	atomic_store(&r->done_ns, test_clock());
	ibtrs_clt_put_tag(clt, r->tag);
	atomic_store(&r->done, 1);
}

static unsigned int submit(int dir)
{
	unsigned int id = next_id++;
	struct req *r = &reqs[id];
	struct usr_msg m = { .id = id };
	struct iovec vec = { .iov_base = &m, .iov_len = sizeof(m) };
	struct iovec sg = { .iov_base = r->buf, .iov_len = DATA_LEN };

	CHECK(id < MAX_REQS);
	r->tag = ibtrs_clt_get_tag(clt, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(r->tag);
	m.tag = r->tag->mem_id;
	memset(r->buf, 0x5a, sizeof(r->buf));
	CHECK_EQ(ibtrs_clt_request(dir, conf, clt, r->tag, r, &vec, 1, DATA_LEN,
				   &sg, 1),
		 0);
	return id;
}

static bool all_done(unsigned int from, unsigned int to)
{
	unsigned int i;

	for (i = from; i < to; i++)
		if (!atomic_load(&reqs[i].done))
			return false;
	return true;
}

/* Requests [@from, @to) completed without error, each ran once. */
static void check_ok(unsigned int from, unsigned int to)
{
	unsigned int i;

	for (i = from; i < to; i++) {
		CHECK(atomic_load(&reqs[i].done));
		CHECK_EQ(atomic_load(&reqs[i].err), 0);
		CHECK_EQ(atomic_load(&ev_count[i]), 1);
	}
}

static struct ibtrs_path_stats pstat(unsigned int idx)
{
	struct ibtrs_path_stats st = { .size = sizeof(st) };

	CHECK_EQ(ibtrs_clt_path_stats(clt, idx, &st), 0);
	return st;
}

static uint64_t ops(unsigned int idx)
{
	struct ibtrs_path_stats st = pstat(idx);

	return st.rd_ops + st.wr_ops;
}

static const struct sockaddr *paddr(unsigned int idx)
{
	return (const struct sockaddr *)&path_addr[idx];
}

static bool has_event(int path, const char *what)
{
	static struct ibtrs_event ev[IBTRS_EVENT_LOG_LEN];
	size_t i, n = ibtrs_clt_get_events(clt, ev, IBTRS_EVENT_LOG_LEN);

	for (i = 0; i < n; i++)
		if (ev[i].path == path && strstr(ev[i].msg, what))
			return true;
	return false;
}

/* ------------------------------------------------------------------ */
/* the checks                                                           */

static void test_round_robin(void)
{
	unsigned int b, i, first = next_id;

	CHECK_EQ(ibtrs_clt_set_policy(clt, IBTRS_MP_ROUND_ROBIN), 0);
	ibtrs_clt_reset_stats(clt);
	for (b = 0; b < 10; b++) {
		unsigned int from = next_id;

		for (i = 0; i < 30; i++)
			submit(i & 1 ? IBTRS_READ : IBTRS_WRITE);
		WAIT_FOR(all_done(from, next_id), 5000);
		CHECK(all_done(from, next_id));
	}
	check_ok(first, next_id);
	/* The READs brought the server's pattern back. */
	for (i = first + 1; i < next_id; i += 2)
		CHECK_EQ((unsigned char)reqs[i].buf[DATA_LEN - 1], i & 0xff);
	for (i = 0; i < NR_PATHS; i++) {
		printf("  round-robin: path %u carried %llu\n", i,
		       (unsigned long long)ops(i));
		CHECK(ops(i) >= 90 && ops(i) <= 110);
	}
}

static void test_min_inflight(void)
{
	unsigned int i, first = next_id;
	uint64_t slow, fast0, fast2;

	CHECK_EQ(ibtrs_clt_set_policy(clt, IBTRS_MP_MIN_INFLIGHT), 0);
	ibtrs_clt_reset_stats(clt);
	/* Path 1 is slow: its requests stay in flight while time stands.
	 * The fast paths' requests complete before the next is submitted
	 * (settle()), however late their threads get a CPU. */
	loop_xprt_set_delay(paddr(1), 30000);
	for (i = 0; i < 60; i++) {
		submit(IBTRS_WRITE);
		sleep_ms(1);
		settle(200);
	}
	WAIT_FOR(ops(0) + ops(2) + pstat(1).inflight >= 60, 3000);
	slow = ops(1) + pstat(1).inflight;
	fast0 = ops(0);
	fast2 = ops(2);
	printf("  min-inflight: slow path %llu, fast paths %llu and %llu\n",
	       (unsigned long long)slow, (unsigned long long)fast0,
	       (unsigned long long)fast2);
	CHECK(slow >= 1 && slow <= 5);
	CHECK(fast0 >= 10 && fast2 >= 10 && fast0 + fast2 >= 10 * slow);
	CHECK_EQ(ops(1), 0); /* nothing came back: the clock stood */
	/* Let time pass: the slow path's requests complete too. */
	advance(120, 10, 5);
	WAIT_FOR(all_done(first, next_id), 3000);
	check_ok(first, next_id);
	CHECK_EQ(ops(1), slow);
	loop_xprt_set_delay(paddr(1), 0);
}

static void test_min_latency_and_switch(void)
{
	struct ibtrs_path_stats st[NR_PATHS];
	unsigned int i, first = next_id;

	/* One-way delays: path 0 20 ms, path 1 2 ms, path 2 8 ms. */
	loop_xprt_set_delay(paddr(0), 20000);
	loop_xprt_set_delay(paddr(1), 2000);
	loop_xprt_set_delay(paddr(2), 8000);
	/* Heartbeats every 50 ms measure them as time moves. */
	advance(200, 1, 2);
	for (i = 0; i < NR_PATHS; i++) {
		st[i] = pstat(i);
		printf("  min-latency: path %u hb_rtt %llu us\n", i,
		       (unsigned long long)st[i].hb_rtt_us);
		CHECK_EQ(st[i].state, IBTRS_PATH_CONNECTED);
	}
	CHECK(st[1].hb_rtt_us >= 4000 && st[1].hb_rtt_us < 10000);
	CHECK(st[2].hb_rtt_us >= 16000 && st[2].hb_rtt_us < 24000);
	CHECK(st[0].hb_rtt_us >= 40000 && st[0].hb_rtt_us < 50000);

	CHECK_EQ(ibtrs_clt_set_policy(clt, IBTRS_MP_MIN_LATENCY), 0);
	ibtrs_clt_reset_stats(clt);
	for (i = 0; i < 24; i++)
		submit(IBTRS_WRITE);
	/* Time stands: all of them are in flight, all on path 1. */
	CHECK_EQ(pstat(0).inflight, 0);
	CHECK_EQ(pstat(1).inflight, 24);
	CHECK_EQ(pstat(2).inflight, 0);

	/* Switched at run time: the very next requests go round the paths,
	 * but path 1's queue, far above the others', is skipped until
	 * theirs reach its bound (2 * 11 + IBTRS_POLICY_RR_SLACK = 24). */
	CHECK_EQ(ibtrs_clt_set_policy(clt, IBTRS_MP_ROUND_ROBIN), 0);
	for (i = 0; i < 24; i++)
		submit(IBTRS_WRITE);
	for (i = 0; i < NR_PATHS; i++)
		st[i] = pstat(i);
	printf("  round-robin after min-latency: in flight %llu %llu %llu\n",
	       (unsigned long long)st[0].inflight,
	       (unsigned long long)st[1].inflight,
	       (unsigned long long)st[2].inflight);
	CHECK(st[0].inflight >= 11 && st[0].inflight <= 13);
	CHECK(st[2].inflight >= 11 && st[2].inflight <= 13);
	CHECK(st[0].inflight + st[2].inflight >= 22);
	CHECK_EQ(st[0].inflight + st[1].inflight + st[2].inflight, 48);
	/* And back. */
	CHECK_EQ(ibtrs_clt_set_policy(clt, IBTRS_MP_MIN_LATENCY), 0);
	for (i = 0; i < 6; i++)
		submit(IBTRS_WRITE);
	for (i = 0; i < NR_PATHS; i++)
		st[i] = pstat(i);
	CHECK_EQ(st[0].inflight + st[1].inflight + st[2].inflight, 54);
	CHECK_EQ(ibtrs_clt_get_policy(clt), IBTRS_MP_MIN_LATENCY);

	advance(100, 2, 3);
	WAIT_FOR(all_done(first, next_id), 3000);
	check_ok(first, next_id);
	for (i = 0; i < NR_PATHS; i++)
		CHECK_EQ(ops(i), st[i].inflight);
	CHECK(has_event(-1, "policy round-robin"));
	CHECK(has_event(-1, "policy min-latency"));
	for (i = 0; i < NR_PATHS; i++)
		loop_xprt_set_delay(paddr(i), 0);
}

static void test_failover(void)
{
	struct ibtrs_srv_stats before = srv_stats(), after;
	unsigned int i, steps, first = next_id;
	uint64_t t_drop;

	CHECK_EQ(ibtrs_clt_set_policy(clt, IBTRS_MP_ROUND_ROBIN), 0);
	ibtrs_clt_reset_stats(clt);
	atomic_store(&srv_defer, true);
	for (i = 0; i < 9; i++)
		submit(IBTRS_WRITE);
	/* The server holds all nine, three from each path. */
	WAIT_FOR(held_count() == 9, 3000);
	CHECK_EQ(held_count(), 9);
	for (i = 0; i < NR_PATHS; i++)
		CHECK_EQ(pstat(i).inflight, 3);

	/* Pull path 1's cable; only its heartbeats can tell. */
	loop_xprt_set_drop(paddr(1), true);
	t_drop = test_clock();
	for (steps = 0; steps < 60; steps++) {
		if (pstat(1).state != IBTRS_PATH_CONNECTED)
			break;
		advance(10, 10, 25);
	}
	printf("  failover: path 1 declared dead after %llu ms\n",
	       (unsigned long long)now_ms_rel(t_drop));
	CHECK_EQ(pstat(1).state, IBTRS_PATH_RECONNECTING);
	/* Its last receive may be a heartbeat interval older than the drop,
	 * and the tick declares it a tick early. */
	CHECK(now_ms_rel(t_drop) >= HB_MS - HB_MS / 4 - HB_MS / 10);
	CHECK(has_event(1, "heartbeat timeout"));
	CHECK_EQ(pstat(0).state, IBTRS_PATH_CONNECTED);
	CHECK_EQ(pstat(2).state, IBTRS_PATH_CONNECTED);
	CHECK_EQ(pstat(1).failovers, 3);
	CHECK_EQ(pstat(1).inflight, 0);

	/* The moved requests reach the server as replays of running ones. */
	WAIT_FOR(srv_stats().replays - before.replays >= 3, 3000);
	after = srv_stats();
	CHECK_EQ(after.replays - before.replays, 3);
	CHECK_EQ(after.requests - before.requests, 9);
	CHECK(!atomic_load(&reqs[first].done));

	atomic_store(&srv_defer, false);
	release_held();
	WAIT_FOR(all_done(first, next_id), 3000);
	check_ok(first, next_id);
	CHECK_EQ(ops(0) + ops(2), 9);
	CHECK_EQ(ops(1), 0);
	for (i = first; i < next_id; i++)
		CHECK_EQ(atomic_load(&ev_tag[i]), reqs[i].tag->mem_id);
}

static void test_all_dropped(void)
{
	uint64_t t0, t_dead, done_ns;
	unsigned int id, steps;

	loop_xprt_set_drop(paddr(0), true);
	loop_xprt_set_drop(paddr(2), true);
	t0 = test_clock();
	id = submit(IBTRS_WRITE);
	for (steps = 0; steps < 80; steps++) {
		if (pstat(0).state != IBTRS_PATH_CONNECTED &&
		    pstat(2).state != IBTRS_PATH_CONNECTED)
			break;
		advance(10, 10, 25);
	}
	t_dead = test_clock();
	printf("  all dropped: no path after %llu ms\n",
	       (unsigned long long)now_ms_rel(t0));
	CHECK(pstat(0).state == IBTRS_PATH_RECONNECTING);
	CHECK(pstat(2).state == IBTRS_PATH_RECONNECTING);
	CHECK(has_event(0, "heartbeat timeout"));
	CHECK(has_event(2, "heartbeat timeout"));
	CHECK(has_event(-1, "no path connected"));

	/* Parked: waits for a path up to the failover timeout. */
	sleep_ms(50);
	CHECK(!atomic_load(&reqs[id].done));
	while (test_clock() < t0 + FAILOVER_MS * MS)
		advance(20, 20, 5);
	sleep_ms(50);
	CHECK(!atomic_load(&reqs[id].done));
	for (steps = 0; steps < 100 && !atomic_load(&reqs[id].done); steps++)
		advance(10, 10, 25);
	CHECK(atomic_load(&reqs[id].done));
	CHECK_EQ(atomic_load(&reqs[id].err), -ECONNABORTED);
	done_ns = atomic_load(&reqs[id].done_ns);
	printf("  all dropped: failed after %llu ms with -ECONNABORTED\n",
	       (unsigned long long)(done_ns - t0) / MS);
	/* The deadline runs from the first failover, after a heartbeat
	 * timeout, and the tick notices it within a few steps. */
	CHECK(done_ns >= t0 + (FAILOVER_MS + HB_MS / 2) * MS);
	CHECK(done_ns <= t_dead + (FAILOVER_MS + 100) * MS);
	CHECK_EQ(atomic_load(&ev_count[id]), 0);
}

static int state_of(const char *name, size_t len)
{
	int s;

	for (s = 0; s < IBTRS_PATH_NR_STATES; s++) {
		const char *n = ibtrs_path_state_str((enum ibtrs_path_state)s);

		if (strlen(n) == len && !strncmp(n, name, len))
			return s;
	}
	return -1;
}

/* Every transition in the log is allowed and follows the last one. */
static void test_state_machine(void)
{
	static struct ibtrs_event ev[IBTRS_EVENT_LOG_LEN];
	int last[NR_PATHS] = { IBTRS_PATH_CLOSED, IBTRS_PATH_CLOSED,
			       IBTRS_PATH_CLOSED };
	size_t i, n = ibtrs_clt_get_events(clt, ev, IBTRS_EVENT_LOG_LEN);
	unsigned int seen = 0;

	CHECK(n < IBTRS_EVENT_LOG_LEN); /* nothing fell off the log */
	for (i = 0; i < n; i++) {
		const char *arrow = strstr(ev[i].msg, " -> "), *p, *to;
		int from_s, to_s;

		if (ev[i].path < 0 || !arrow)
			continue;
		CHECK(ev[i].path < NR_PATHS);
		for (p = arrow; p > ev[i].msg && p[-1] != ' '; p--)
			;
		to = arrow + 4;
		from_s = state_of(p, (size_t)(arrow - p));
		to_s = state_of(to, strcspn(to, ":"));
		if (from_s < 0 || to_s < 0) {
			fprintf(stderr, "unparsed event: %s\n", ev[i].msg);
			exit(1);
		}
		if (!ibtrs_path_transition_ok((enum ibtrs_path_state)from_s,
					      (enum ibtrs_path_state)to_s) ||
		    from_s != last[ev[i].path]) {
			fprintf(stderr, "bad transition: path %d: %s\n",
				ev[i].path, ev[i].msg);
			exit(1);
		}
		last[ev[i].path] = to_s;
		seen++;
	}
	printf("  state machine: %u transitions checked\n", seen);
	CHECK(seen >= 3 * 2 + 3); /* connecting, connected, each one died */
	for (i = 0; i < NR_PATHS; i++)
		CHECK_EQ(last[i], pstat((unsigned int)i).state);
}

/* ------------------------------------------------------------------ */

int main(void)
{
	struct ibtrs_srv_opts so;
	struct ibtrs_clt_opts co;
	struct sockaddr_in any = { .sin_family = AF_INET };
	struct sockaddr_storage dst[NR_PATHS];
	struct ibtrs_addr paths[NR_PATHS];
	struct timespec ts;
	pthread_t pump;
	unsigned int i;
	uint16_t port;

	t_watchdog(60);
	setvbuf(stdout, NULL, _IONBF, 0);
	setenv("IBTRS_BACKEND", "loop", 1);
	setenv("IBTRS_CONTROL", "0", 1);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	atomic_store(&test_now, (uint64_t)ts.tv_sec * 1000000000ull +
					(uint64_t)ts.tv_nsec);
	ibtrs_set_test_clock(test_clock);

	ibtrs_srv_opts_init(&so, sizeof(so));
	so.listen_addr = (const struct sockaddr *)&any;
	so.port = 0;
	so.queue_depth = QD;
	so.max_io_size = 4096;
	so.hb_timeout_ms = HB_MS;
	so.no_control = true;
	so.rdma_ev = srv_rdma_ev;
	srv = ibtrs_srv_open_opts(&so);
	CHECK(srv);
	port = ibtrs_srv_get_port(srv);
	CHECK(port >= 40000);

	for (i = 0; i < NR_PATHS; i++) {
		path_addr[i].sin_family = AF_INET;
		path_addr[i].sin_port = htons(port);
		path_addr[i].sin_addr.s_addr = htonl(0x7f000001 + i);
		memset(&dst[i], 0, sizeof(dst[i]));
		memcpy(&dst[i], &path_addr[i], sizeof(path_addr[i]));
		paths[i].src = NULL;
		paths[i].dst = &dst[i];
	}
	ibtrs_clt_opts_init(&co, sizeof(co));
	co.sessname = "policy-loop";
	co.paths = paths;
	co.path_cnt = NR_PATHS;
	co.port = port;
	co.reconnect_delay_sec = 30; /* no reconnect while the test runs */
	co.max_reconnect_attempts = -1;
	co.connect_timeout_ms = 1000;
	co.policy = IBTRS_MP_ROUND_ROBIN;
	co.hb_timeout_ms = HB_MS;
	co.failover_timeout_ms = FAILOVER_MS;
	co.no_control = true;
	clt = ibtrs_clt_open_opts(&co);
	CHECK(clt);
	for (i = 0; i < NR_PATHS; i++)
		CHECK_EQ(pstat(i).state, IBTRS_PATH_CONNECTED);
	CHECK_EQ(srv_stats().paths, NR_PATHS);

	printf("round-robin\n");
	test_round_robin();
	printf("min-inflight\n");
	test_min_inflight();
	printf("min-latency, switching at run time\n");
	test_min_latency_and_switch();
	printf("failover\n");
	test_failover();
	printf("all paths dropped\n");
	test_all_dropped();
	printf("state machine\n");
	test_state_machine();

	for (i = 0; i < NR_PATHS; i++)
		loop_xprt_set_drop(paddr(i), false);
	CHECK_EQ(pthread_create(&pump, NULL, clock_pump, NULL), 0);
	ibtrs_clt_close(clt);
	ibtrs_srv_close(srv);
	atomic_store(&pump_stop, true);
	pthread_join(pump, NULL);
	ibtrs_set_test_clock(NULL);
	printf("PASS\n");
	return 0;
}
