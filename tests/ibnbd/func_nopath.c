// SPDX-License-Identifier: MIT
/*
 * func_nopath.c - requests submitted while no path is connected wait for
 * one instead of failing.
 *
 * - every path disconnected (ibtrs_clt_disconnect_path()): a WRITE and a
 *   submit_sync READ wait; reconnecting a path completes them with 0, the
 *   data is in the file;
 * - ibnbd_dev_close() waits for a waiting request, and returns once a path
 *   is back and it completed;
 * - with queue_timeout_ms 300 and no path back, a request fails with
 *   -ENOTCONN, no sooner than the timeout; with 0 it fails at once.
 */
#include "func_harness.h"

#define DISK_SIZE (1u << 20)

static struct f_srv srv;
static char disk_path[128];

/* Wait until the session has @want connected paths (bounded). */
static void wait_paths(struct ibtrs_clt *sess, uint32_t want)
{
	double end = t_now() + 20;
	struct ibtrs_attrs a;

	for (;;) {
		ibtrs_clt_query(sess, &a);
		if (a.connected_paths == want)
			return;
		CHECK(t_now() < end);
		usleep(5000);
	}
}

static void all_down(struct ibtrs_clt *sess, unsigned int npaths)
{
	unsigned int i;

	for (i = 0; i < npaths; i++)
		CHECK_EQ(ibtrs_clt_disconnect_path(sess, i), 0);
	wait_paths(sess, 0);
}

struct sync_arg {
	struct ibnbd_dev *dev;
	void *buf;
	_Atomic int ret;
	_Atomic bool done;
};

static void *sync_read(void *arg)
{
	struct sync_arg *a = arg;
	struct iovec iov = { a->buf, 4096 };

	atomic_store(&a->ret, ibnbd_submit_sync(a->dev, IBNBD_OP_READ, 0, 0,
						4096, &iov, 1));
	atomic_store(&a->done, true);
	return NULL;
}

static void *do_close(void *arg)
{
	struct sync_arg *a = arg;

	atomic_store(&a->ret, ibnbd_dev_close(a->dev));
	atomic_store(&a->done, true);
	return NULL;
}

static void test_wait_reconnect(void)
{
	unsigned char wbuf[4096], rbuf[4096], fbuf[4096];
	struct iovec iov = { wbuf, sizeof(wbuf) };
	struct sync_arg sa = { 0 };
	struct ibnbd_clt *clt;
	struct ibnbd_dev *dev;
	struct ibtrs_clt *sess;
	struct f_wait w;
	pthread_t th;

	sess = f_clt_open(srv.port, 2, "nopath-wait");
	clt = ibnbd_clt_attach(sess, NULL);
	CHECK(clt);
	dev = ibnbd_dev_open(clt, "disk", IBNBD_ACCESS_RW, NULL);
	CHECK(dev);

	all_down(sess, 2);
	f_wait_init(&w);
	t_fill(wbuf, sizeof(wbuf), 42);
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_WRITE, 0, 8192, sizeof(wbuf), &iov,
			      1, f_done, &w),
		 0);
	sa.dev = dev;
	sa.buf = rbuf;
	CHECK(!pthread_create(&th, NULL, sync_read, &sa));
	/* No path: nothing can complete them, whatever the timing. */
	CHECK(!f_wait_for(&w, 300));
	CHECK(!atomic_load(&sa.done));
	CHECK_EQ(ibtrs_clt_reconnect_path(sess, 1), 0);
	CHECK(f_wait_for(&w, 20000));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.calls, 1);
	pthread_join(th, NULL);
	CHECK_EQ(atomic_load(&sa.ret), 0);
	f_pread(disk_path, fbuf, sizeof(fbuf), 8192);
	CHECK(!memcmp(wbuf, fbuf, sizeof(fbuf)));

	/* ibnbd_dev_close() waits for a request waiting for a path. */
	all_down(sess, 2);
	f_wait_init(&w);
	t_fill(wbuf, sizeof(wbuf), 43);
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_WRITE, IBNBD_F_FUA, 16384,
			      sizeof(wbuf), &iov, 1, f_done, &w),
		 0);
	memset(&sa, 0, sizeof(sa));
	sa.dev = dev;
	CHECK(!pthread_create(&th, NULL, do_close, &sa));
	CHECK(!f_wait_for(&w, 300));
	CHECK(!atomic_load(&sa.done));
	CHECK_EQ(ibtrs_clt_reconnect_path(sess, 0), 0);
	pthread_join(th, NULL);
	CHECK_EQ(atomic_load(&sa.ret), 0);
	CHECK_EQ(w.calls, 1);
	CHECK_EQ(w.err, 0);
	f_pread(disk_path, fbuf, sizeof(fbuf), 16384);
	CHECK(!memcmp(wbuf, fbuf, sizeof(fbuf)));
	/* The close went through: the export opens rw again. */
	dev = ibnbd_dev_open(clt, "disk", IBNBD_ACCESS_RW, NULL);
	CHECK(dev);
	CHECK_EQ(ibnbd_dev_close(dev), 0);
	CHECK_EQ(ibnbd_clt_detach(clt), 0);
	ibtrs_clt_close(sess);
}

static void test_timeout(void)
{
	unsigned char buf[4096];
	struct iovec iov = { buf, sizeof(buf) };
	struct ibnbd_clt_opts o;
	struct ibnbd_clt *clt;
	struct ibnbd_dev *dev;
	struct ibtrs_clt *sess;
	struct f_wait w;
	double t0, dt;

	sess = f_clt_open(srv.port, 1, "nopath-timeout");
	ibnbd_clt_opts_init(&o, sizeof(o));
	o.queue_timeout_ms = 300;
	clt = ibnbd_clt_attach(sess, &o);
	CHECK(clt);
	dev = ibnbd_dev_open(clt, "disk", IBNBD_ACCESS_RO, NULL);
	CHECK(dev);
	all_down(sess, 1);
	f_wait_init(&w);
	t0 = t_now();
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_READ, 0, 0, sizeof(buf), &iov, 1,
			      f_done, &w),
		 0);
	CHECK(f_wait_for(&w, 60000));
	dt = t_now() - t0;
	CHECK_EQ(w.err, -ENOTCONN);
	CHECK(dt >= 0.3);
	CHECK_EQ(ibnbd_submit_sync(dev, IBNBD_OP_READ, 0, 0, sizeof(buf), &iov,
				   1),
		 -ENOTCONN);
	CHECK_EQ(ibtrs_clt_reconnect_path(sess, 0), 0);
	CHECK_EQ(ibnbd_submit_sync(dev, IBNBD_OP_READ, 0, 0, sizeof(buf), &iov,
				   1),
		 0);
	CHECK_EQ(ibnbd_dev_close(dev), 0);
	CHECK_EQ(ibnbd_clt_detach(clt), 0);

	/* queue_timeout_ms 0: no wait at all, the callback says -ENOTCONN. */
	o.queue_timeout_ms = 0;
	clt = ibnbd_clt_attach(sess, &o);
	CHECK(clt);
	dev = ibnbd_dev_open(clt, "disk", IBNBD_ACCESS_RO, NULL);
	CHECK(dev);
	all_down(sess, 1);
	f_wait_init(&w);
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_READ, 0, 0, sizeof(buf), &iov, 1,
			      f_done, &w),
		 0);
	CHECK(f_wait_for(&w, 60000));
	CHECK_EQ(w.err, -ENOTCONN);
	CHECK_EQ(ibtrs_clt_reconnect_path(sess, 0), 0);
	CHECK_EQ(ibnbd_dev_close(dev), 0);
	CHECK_EQ(ibnbd_clt_detach(clt), 0);
	ibtrs_clt_close(sess);
}

int main(void)
{
	t_watchdog(240);
	f_srv_start(&srv, 0);
	f_export(&srv, "disk", DISK_SIZE, false, disk_path);
	test_wait_reconnect();
	test_timeout();
	f_srv_stop(&srv);
	printf("func_nopath: ok\n");
	return 0;
}
