// SPDX-License-Identifier: MIT
/*
 * stall.c - a stalled client loop is not a silent network. A session of
 * two loopback paths (heartbeat timeout 1 s) is left idle, and its loop
 * thread is held for 2.5 s (the test's sleep hook, as a starved or
 * stopped process would be) while the server (timeout 5 s) goes on
 * sending heartbeats. When the loop runs again its tick comes first, 2.4
 * s late, the heartbeats still unread in the sockets: neither path may be
 * declared dead. Then a real silence (DROP on path 1) is still found.
 */
#include <pthread.h>

#include <ibtrs_fault.h>

#include "clt_int.h"
#include "harness.h"

static struct h_srv srv;
static _Atomic int stall_state; /* 1: wanted, 2: stalling, 3: done */

/* The client's loop, about to sleep: held once, 2.5 s. */
static void sleep_hook(struct ibtrs_loop *loop)
{
	char name[16] = "";
	int want = 1;

	(void)loop;
	pthread_getname_np(pthread_self(), name, sizeof(name));
	if (strcmp(name, "ibtrs-clt") ||
	    !atomic_compare_exchange_strong(&stall_state, &want, 2))
		return;
	{
		double t0 = t_now();

		h_sleep_ms(2500);
		printf("stalled %.3f s\n", t_now() - t0);
	}
	atomic_store(&stall_state, 3);
}

static void start_srv(unsigned int hb_ms)
{
	struct sockaddr_storage ss;
	struct ibtrs_addr addr = { .src = NULL, .dst = &ss };
	struct ibtrs_srv_opts opts;

	memset(&srv, 0, sizeof(srv));
	pthread_mutex_init(&srv.lock, NULL);
	t_cond_init(&srv.cond);
	h_cur_srv = &srv;
	ibtrs_srv_opts_init(&opts, sizeof(opts));
	opts.port = 0;
	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, 0, &addr), 0);
	opts.listen_addr = (const struct sockaddr *)&ss;
	opts.rdma_ev = h_srv_rdma_ev;
	opts.link_ev = h_srv_link_ev;
	opts.hb_timeout_ms = hb_ms;
	srv.ctx = ibtrs_srv_open_opts(&opts);
	CHECK(srv.ctx);
	srv.port = ibtrs_srv_get_port(srv.ctx);
}

static void noop(void *arg)
{
	(void)arg;
}

static unsigned int count_events(struct ibtrs_clt *sess, const char *what,
				 bool print)
{
	static struct ibtrs_event ev[IBTRS_EVENT_LOG_LEN];
	size_t i, n = ibtrs_clt_get_events(sess, ev, IBTRS_EVENT_LOG_LEN);
	unsigned int hits = 0;

	for (i = 0; i < n; i++) {
		if (print)
			printf("event: path %d: %s\n", ev[i].path, ev[i].msg);
		hits += strstr(ev[i].msg, what) != NULL;
	}
	return hits;
}

static enum ibtrs_path_state state(struct ibtrs_clt *sess, unsigned int i)
{
	struct ibtrs_path_stats st = { .size = sizeof(st) };

	CHECK_EQ(ibtrs_clt_path_stats(sess, i, &st), 0);
	return st.state;
}

int main(void)
{
	struct sockaddr_storage dst[2];
	struct ibtrs_addr paths[2] = { { .dst = &dst[0] }, { .dst = &dst[1] } };
	struct ibtrs_clt_opts o;
	struct ibtrs_clt *sess;
	uint64_t ticks = 0, late = 0;
	unsigned int tries;
	double end;

	start_srv(5000);
	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, srv.port,
					&paths[0]),
		 0);
	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, srv.port,
					&paths[1]),
		 0);
	ibtrs_clt_opts_init(&o, sizeof(o));
	o.sessname = "stall";
	o.paths = paths;
	o.path_cnt = 2;
	o.port = srv.port;
	o.hb_timeout_ms = 1000;
	o.no_control = true;
	/* Two paths to the same address: the second takes its own port. */
	sess = ibtrs_clt_open_opts(&o);
	if (!sess) {
		/* Refused as a duplicate: one path then. */
		o.path_cnt = 1;
		sess = ibtrs_clt_open_opts(&o);
	}
	CHECK(sess);
	late = ibtrs_loop_late_ns(sess->loop, &ticks);
	printf("loop before the stall: %llu ticks late by %llu ms\n",
	       (unsigned long long)ticks, (unsigned long long)late / 1000000);
	ibtrs_set_test_sleep_hook(sleep_hook);
	/* Up to three stalls, until one was seen as a late tick. */
	for (tries = 0; tries < 3 && late < 2000000000ull; tries++) {
		atomic_store(&stall_state, 1);
		end = t_now() + 20;
		while (atomic_load(&stall_state) != 3 && t_now() < end)
			h_sleep_ms(10);
		CHECK_EQ(atomic_load(&stall_state), 3);
		/* The late tick has run once the loop takes work after it. */
		end = t_now() + 5;
		do {
			ibtrs_loop_call(sess->loop, noop, NULL);
			late = ibtrs_loop_late_ns(sess->loop, &ticks);
			if (late >= 2000000000ull)
				break;
			h_sleep_ms(5);
		} while (t_now() < end);
		ibtrs_loop_call(sess->loop, noop, NULL);
		printf("loop: %llu ticks late by %llu ms in all\n",
		       (unsigned long long)ticks,
		       (unsigned long long)late / 1000000);
	}
	CHECK(late >= 2000000000ull);
	CHECK_EQ(count_events(sess, "heartbeat timeout", true), 0);
	CHECK_EQ(state(sess, 0), IBTRS_PATH_CONNECTED);
	if (o.path_cnt == 2)
		CHECK_EQ(state(sess, 1), IBTRS_PATH_CONNECTED);
	ibtrs_set_test_sleep_hook(NULL);

	/* A real silence is still a verdict, within timeout + ticks. */
	CHECK_EQ(ibtrs_clt_inject_fault(sess, 0, IBTRS_FAULT_DROP, 0), 0);
	end = t_now() + 10;
	while (!count_events(sess, "heartbeat timeout", false) && t_now() < end)
		h_sleep_ms(10);
	CHECK_EQ(count_events(sess, "heartbeat timeout", true), 1);
	ibtrs_clt_close(sess);
	ibtrs_srv_close(srv.ctx);
	h_cur_srv = NULL;
	return 0;
}
