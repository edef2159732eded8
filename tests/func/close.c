// SPDX-License-Identifier: MIT
/*
 * close.c - closing sessions and servers.
 *
 * - ibtrs_clt_close() with 64 requests held by the server: every conf runs
 *   exactly once with -ECONNABORTED before close returns and none after;
 *   the server can still answer the held requests of the gone session,
 *   ibtrs_srv_close() returns and link_ev saw CONNECTED and DISCONNECTED
 *   once each for the session.
 * - ibtrs_srv_close() under an idle client session: the client gets
 *   IBTRS_CLT_LINK_EV_DISCONNECTED, requests fail with -ENOTCONN without
 *   conf, ibtrs_clt_close() still works.
 * - 50 sessions opened, used and closed in a row.
 */
#include "harness.h"

#define NR_REQS 64
#define NR_LOOP 50

static struct h_srv srv;
static _Atomic bool clt_closed;
static _Atomic unsigned int late_confs;

struct creq {
	_Atomic unsigned int calls;
	_Atomic int err;
	unsigned char *buf;
	size_t len;
	struct ibtrs_tag *tag;
};

static void creq_conf(void *priv, int err)
{
	struct creq *r = priv;

	if (atomic_load(&clt_closed))
		atomic_fetch_add(&late_confs, 1);
	atomic_store(&r->err, err);
	atomic_fetch_add(&r->calls, 1);
}

static void test_close_inflight(void)
{
	struct creq *reqs = calloc(NR_REQS, sizeof(*reqs));
	unsigned char usr[sizeof(struct h_usr_hdr)];
	unsigned long long rng = 99;
	struct ibtrs_clt *sess;
	struct iovec sg, v;
	unsigned int i, n;
	int dir;

	CHECK(reqs);
	h_srv_start(&srv, NULL, 0, 0);
	sess = h_clt_open("close-inflight", srv.port, 1, 0, NULL, NULL);
	h_srv_set_defer(&srv, true);
	for (i = 0; i < NR_REQS; i++) {
		reqs[i].tag =
			ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
		CHECK(reqs[i].tag);
		reqs[i].len = h_rand_range(&rng, 0, 64 * 1024);
		reqs[i].buf = malloc(reqs[i].len + 1);
		CHECK(reqs[i].buf);
		h_fill(reqs[i].buf, reqs[i].len, i);
		dir = i % 2 ? IBTRS_READ : IBTRS_WRITE;
		h_usr_build(usr, sizeof(usr), (uint64_t)i * 65536, i, i);
		v.iov_base = usr;
		v.iov_len = sizeof(usr);
		sg.iov_base = reqs[i].buf;
		sg.iov_len = reqs[i].len;
		CHECK_EQ(ibtrs_clt_request(dir, creq_conf, sess, reqs[i].tag,
					   &reqs[i], &v, 1, reqs[i].len, &sg,
					   1),
			 0);
	}
	/* Every request reached the server and waits there. */
	CHECK(h_srv_wait_held(&srv, NR_REQS, 10000));
	for (i = 0; i < NR_REQS; i++)
		CHECK_EQ(atomic_load(&reqs[i].calls), 0);

	ibtrs_clt_close(sess);
	atomic_store(&clt_closed, true);
	for (i = 0; i < NR_REQS; i++) {
		CHECK_EQ(atomic_load(&reqs[i].calls), 1);
		CHECK_EQ(atomic_load(&reqs[i].err), -ECONNABORTED);
	}
	/* The data buffers are the caller's again. */
	for (i = 0; i < NR_REQS; i++)
		free(reqs[i].buf);
	h_sleep_ms(100);
	CHECK_EQ(atomic_load(&late_confs), 0);

	/* The server answers the requests of the gone session. */
	CHECK_EQ(h_srv_count_ev(&srv, IBTRS_SRV_LINK_EV_DISCONNECTED,
				"close-inflight"),
		 0);
	n = h_srv_release_all(&srv, 0);
	CHECK_EQ(n, NR_REQS);
	/* Answered and disconnected: the session ends without srv close. */
	CHECK(h_srv_wait_ev(&srv, IBTRS_SRV_LINK_EV_DISCONNECTED,
			    "close-inflight", 1, 10000));
	h_srv_stop(&srv);
	CHECK_EQ(h_srv_count_ev(&srv, IBTRS_SRV_LINK_EV_CONNECTED,
				"close-inflight"),
		 1);
	CHECK_EQ(h_srv_count_ev(&srv, IBTRS_SRV_LINK_EV_DISCONNECTED,
				"close-inflight"),
		 1);
	CHECK_EQ(h_srv_count_ev(&srv, IBTRS_SRV_LINK_EV_CONNECTED, NULL), 1);
	CHECK_EQ(h_srv_count_ev(&srv, IBTRS_SRV_LINK_EV_DISCONNECTED, NULL), 1);
	h_sleep_ms(50);
	CHECK_EQ(atomic_load(&late_confs), 0);
	for (i = 0; i < NR_REQS; i++)
		CHECK_EQ(atomic_load(&reqs[i].calls), 1);
	free(reqs);
}

struct clt_evs {
	_Atomic unsigned int reconnected;
	_Atomic unsigned int disconnected;
};

static void clt_link_ev(void *priv, enum ibtrs_clt_link_ev ev)
{
	struct clt_evs *e = priv;

	if (ev == IBTRS_CLT_LINK_EV_DISCONNECTED)
		atomic_fetch_add(&e->disconnected, 1);
	else
		atomic_fetch_add(&e->reconnected, 1);
}

static _Atomic unsigned int stray_confs;

static void stray_conf(void *priv, int err)
{
	(void)priv;
	(void)err;
	atomic_fetch_add(&stray_confs, 1);
}

static void test_srv_close_idle(void)
{
	struct clt_evs evs = { 0 };
	struct ibtrs_path_stats st;
	struct ibtrs_attrs attr;
	struct ibtrs_clt *sess;
	struct ibtrs_tag *tag;
	unsigned char buf[4096];
	struct iovec sg = { .iov_base = buf, .iov_len = sizeof(buf) };
	double end;

	h_srv_start(&srv, NULL, 0, 0);
	sess = h_clt_open("close-idle", srv.port, 1, 0, clt_link_ev, &evs);
	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
	CHECK(tag);
	h_fill(buf, sizeof(buf), 3);
	CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, buf, sizeof(buf), 0, 1), 0);

	h_srv_stop(&srv);
	CHECK_EQ(h_srv_count_ev(&srv, IBTRS_SRV_LINK_EV_CONNECTED,
				"close-idle"),
		 1);
	CHECK_EQ(h_srv_count_ev(&srv, IBTRS_SRV_LINK_EV_DISCONNECTED,
				"close-idle"),
		 1);

	end = t_now() + 10;
	while (!atomic_load(&evs.disconnected) && t_now() < end)
		h_sleep_ms(5);
	CHECK_EQ(atomic_load(&evs.disconnected), 1);
	CHECK_EQ(atomic_load(&evs.reconnected), 0);

	CHECK_EQ(ibtrs_clt_query(sess, &attr), -ECOMM);
	CHECK_EQ(attr.path_cnt, 1);
	CHECK_EQ(attr.connected_paths, 0);
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	CHECK_EQ(ibtrs_clt_path_stats(sess, 0, &st), 0);
	CHECK(st.state != IBTRS_PATH_CONNECTED);
	CHECK_EQ(st.inflight, 0);

	CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, stray_conf, sess, tag, NULL,
				   NULL, 0, sizeof(buf), &sg, 1),
		 -ENOTCONN);
	CHECK_EQ(ibtrs_clt_request(IBTRS_READ, stray_conf, sess, tag, NULL,
				   NULL, 0, sizeof(buf), &sg, 1),
		 -ENOTCONN);
	h_sleep_ms(50);
	CHECK_EQ(atomic_load(&stray_confs), 0);

	ibtrs_clt_put_tag(sess, tag);
	ibtrs_clt_close(sess);
	CHECK_EQ(atomic_load(&evs.disconnected), 1);
	CHECK_EQ(atomic_load(&stray_confs), 0);
}

static void test_loop(void)
{
	unsigned char w[2048], r[2048];
	struct ibtrs_clt *sess;
	struct ibtrs_tag *tag;
	unsigned int i;

	h_srv_start(&srv, NULL, 0, 0);
	for (i = 0; i < NR_LOOP; i++) {
		sess = h_clt_open("close-loop", srv.port, 1, 8, NULL, NULL);
		tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
		CHECK(tag);
		h_fill(w, sizeof(w), i);
		CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, w, sizeof(w), 0, i), 0);
		memset(r, 0, sizeof(r));
		CHECK_EQ(h_io(sess, tag, IBTRS_READ, r, sizeof(r), 0, i), 0);
		CHECK(!memcmp(w, r, sizeof(w)));
		/* Every other session closes with its tag still held. */
		if (i % 2)
			ibtrs_clt_put_tag(sess, tag);
		ibtrs_clt_close(sess);
	}
	CHECK(h_srv_wait_ev(&srv, IBTRS_SRV_LINK_EV_DISCONNECTED, "close-loop",
			    NR_LOOP, 10000));
	h_srv_stop(&srv);
	CHECK_EQ(h_srv_count_ev(&srv, IBTRS_SRV_LINK_EV_CONNECTED,
				"close-loop"),
		 NR_LOOP);
	CHECK_EQ(h_srv_count_ev(&srv, IBTRS_SRV_LINK_EV_DISCONNECTED,
				"close-loop"),
		 NR_LOOP);
	CHECK_EQ(atomic_load(&srv.usr_bad), 0);
}

int main(void)
{
	t_watchdog(120);
	test_close_inflight();
	test_srv_close_idle();
	test_loop();
	/* NULL is a no-op. */
	ibtrs_clt_close(NULL);
	ibtrs_srv_close(NULL);
	printf("close: ok\n");
	return 0;
}
