// SPDX-License-Identifier: MIT
/*
 * nopath.c - a new request when no path is connected (no_path_timeout_ms):
 *   - 0 (the default): ibtrs_clt_request() fails at once with -ENOTCONN;
 *   - set, and the path is being reconnected: the call returns 0, and the
 *     request completes successfully once the path is back;
 *   - set, and the path stays away: the request completes with
 *     -ECONNABORTED, not before its deadline.
 * The path is kept away by the library's fault injection (DROP: no
 * heartbeat, no connect reaches the server) and let back by clearing it.
 */
#include <ibtrs_fault.h>

#include "harness.h"

static struct h_srv srv;

static struct ibtrs_clt *open_sess(const char *name, uint32_t no_path_ms)
{
	struct sockaddr_storage dst;
	struct ibtrs_addr path = { .src = NULL, .dst = &dst };
	struct ibtrs_clt_opts o;
	struct ibtrs_clt *sess;

	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, srv.port, &path),
		 0);
	ibtrs_clt_opts_init(&o, sizeof(o));
	o.sessname = name;
	o.paths = &path;
	o.path_cnt = 1;
	o.port = srv.port;
	o.hb_timeout_ms = 200;
	o.reconnect_delay_sec = 0;
	o.no_path_timeout_ms = no_path_ms;
	o.no_control = true;
	sess = ibtrs_clt_open_opts(&o);
	CHECK(sess);
	return sess;
}

static enum ibtrs_path_state state(struct ibtrs_clt *sess)
{
	struct ibtrs_path_stats st = { .size = sizeof(st) };

	CHECK_EQ(ibtrs_clt_path_stats(sess, 0, &st), 0);
	return st.state;
}

/* Cut the path and wait (at most 10 s) until it is no longer connected. */
static void cut(struct ibtrs_clt *sess)
{
	uint64_t end = t_now() + 10;

	CHECK_EQ(ibtrs_clt_inject_fault(sess, 0, IBTRS_FAULT_DROP, 0), 0);
	while (state(sess) == IBTRS_PATH_CONNECTED && t_now() < end)
		h_sleep_ms(5);
	CHECK(state(sess) != IBTRS_PATH_CONNECTED);
}

static int write_one(struct ibtrs_clt *sess, struct ibtrs_tag *tag,
		     struct h_req *r)
{
	static char buf[4096];
	struct iovec sg = { .iov_base = buf, .iov_len = sizeof(buf) };

	return ibtrs_clt_request(IBTRS_WRITE, h_conf, sess, tag, r, NULL, 0,
				 sizeof(buf), &sg, 1);
}

static void test_default(void)
{
	struct ibtrs_clt *sess = open_sess("nopath-default", 0);
	struct ibtrs_tag *tag;
	struct h_wait w;
	struct h_req r = { .w = &w };

	h_wait_init(&w);
	cut(sess);
	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	CHECK_EQ(write_one(sess, tag, &r), -ENOTCONN);
	ibtrs_clt_put_tag(sess, tag);
	ibtrs_clt_close(sess);
	CHECK_EQ(w.calls, 0);
	h_wait_destroy(&w);
}

static void test_comes_back(void)
{
	struct ibtrs_clt *sess = open_sess("nopath-back", 20000);
	struct ibtrs_tag *tag;
	struct h_wait w;
	struct h_req r = { .w = &w };

	h_wait_init(&w);
	cut(sess);
	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	CHECK_EQ(write_one(sess, tag, &r), 0);
	/* Parked: no answer while the path is away. */
	CHECK(!h_wait_calls(&w, 1, 300));
	CHECK_EQ(ibtrs_clt_inject_fault(sess, 0, IBTRS_FAULT_NONE, 0), 0);
	CHECK(h_wait_calls(&w, 1, 15000));
	CHECK_EQ(r.err, 0);
	CHECK_EQ(state(sess), IBTRS_PATH_CONNECTED);
	ibtrs_clt_put_tag(sess, tag);
	ibtrs_clt_close(sess);
	CHECK_EQ(w.calls, 1);
	h_wait_destroy(&w);
}

static void test_deadline(void)
{
	struct ibtrs_clt *sess = open_sess("nopath-deadline", 400);
	struct ibtrs_tag *tag;
	struct h_wait w;
	struct h_req r = { .w = &w };
	double t0;

	h_wait_init(&w);
	cut(sess);
	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	t0 = t_now();
	CHECK_EQ(write_one(sess, tag, &r), 0);
	CHECK(h_wait_calls(&w, 1, 15000));
	CHECK(t_now() - t0 >= 0.39);
	CHECK_EQ(r.err, -ECONNABORTED);
	ibtrs_clt_put_tag(sess, tag);
	ibtrs_clt_close(sess);
	CHECK_EQ(w.calls, 1);
	h_wait_destroy(&w);
}

int main(void)
{
	h_srv_start(&srv, NULL, 0, 0);
	test_default();
	test_comes_back();
	test_deadline();
	h_srv_stop(&srv);
	return 0;
}
