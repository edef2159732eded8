// SPDX-License-Identifier: MIT
/*
 * func_allow.c - the allow list of the ibnbd server (ibnbd_srv_allow()).
 *
 * - without rules every export opens (the server as it always was);
 * - bad patterns are refused -EINVAL;
 * - with a rule for "addr:127.0.0.1" (the identity of a client without
 *   keys on loopback) and "pub*", "pub1" opens and "priv" is refused
 *   -EACCES, as is an export that does not exist (no probing of names);
 * - an open device stays open when rules come later; a rule naming
 *   another identity does not let this one in, a rule added while the
 *   server runs does;
 * - the refusal leaves the session usable: the allowed device serves I/O.
 */
#include "func_harness.h"

#define DISK_SIZE (1u << 20)

static struct f_srv srv;

static struct ibnbd_dev *try_open(struct ibnbd_clt *clt, const char *name,
				  int *err)
{
	struct ibnbd_dev *dev;

	errno = 0;
	dev = ibnbd_dev_open(clt, name, IBNBD_ACCESS_RW, NULL);
	*err = dev ? 0 : errno;
	return dev;
}

int main(void)
{
	unsigned char buf[4096];
	struct iovec iov = { buf, sizeof(buf) };
	struct ibnbd_dev *early, *pub, *dev;
	char longid[300];
	struct ibnbd_clt *clt;
	struct ibtrs_clt *sess;
	int err;

	t_watchdog(120);
	f_srv_start(&srv, 0);
	f_export(&srv, "pub1", DISK_SIZE, false, NULL);
	f_export(&srv, "priv", DISK_SIZE, false, NULL);

	sess = f_clt_open(srv.port, 1, "allow");
	clt = ibnbd_clt_attach(sess, NULL);
	CHECK(clt);

	/* No rule yet: everything opens. */
	early = try_open(clt, "priv", &err);
	CHECK(early);

	CHECK_EQ(ibnbd_srv_allow(NULL, "*", "*"), -EINVAL);
	CHECK_EQ(ibnbd_srv_allow(srv.nbd, "", "*"), -EINVAL);
	CHECK_EQ(ibnbd_srv_allow(srv.nbd, "*", ""), -EINVAL);
	CHECK_EQ(ibnbd_srv_allow(srv.nbd, NULL, "*"), -EINVAL);
	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	CHECK_EQ(ibnbd_srv_allow(srv.nbd, longid, "*"), -EINVAL);

	/* Another identity's rule does not let this client in. */
	CHECK_EQ(ibnbd_srv_allow(srv.nbd, "alice", "*"), 0);
	dev = try_open(clt, "pub1", &err);
	CHECK(!dev);
	CHECK_EQ(err, EACCES);

	CHECK_EQ(ibnbd_srv_allow(srv.nbd, "addr:127.0.0.1", "pub*"), 0);
	pub = try_open(clt, "pub1", &err);
	CHECK(pub);
	dev = try_open(clt, "priv", &err);
	CHECK(!dev);
	CHECK_EQ(err, EACCES);
	/* Not ENOENT: a refused identity learns nothing of the names. */
	dev = try_open(clt, "nosuch", &err);
	CHECK(!dev);
	CHECK_EQ(err, EACCES);
	/* An allowed name that does not exist is still ENOENT. */
	dev = try_open(clt, "pub2", &err);
	CHECK(!dev);
	CHECK_EQ(err, ENOENT);

	/* The refusals did not hurt the session, nor the earlier open. */
	memset(buf, 0x5a, sizeof(buf));
	CHECK_EQ(ibnbd_submit_sync(pub, IBNBD_OP_WRITE, 0, 0, sizeof(buf), &iov,
				   1),
		 0);
	CHECK_EQ(ibnbd_submit_sync(early, IBNBD_OP_READ, 0, 0, sizeof(buf),
				   &iov, 1),
		 0);

	/* A rule added while the server runs counts from the next OPEN. */
	CHECK_EQ(ibnbd_srv_allow(srv.nbd, "addr:127.*", "pr?v"), 0);
	CHECK_EQ(ibnbd_dev_close(early), 0);
	dev = try_open(clt, "priv", &err);
	CHECK(dev);
	CHECK_EQ(ibnbd_dev_close(dev), 0);

	CHECK_EQ(ibnbd_dev_close(pub), 0);
	CHECK_EQ(ibnbd_clt_detach(clt), 0);
	ibtrs_clt_close(sess);
	f_srv_stop(&srv);
	printf("func_allow: ok\n");
	return 0;
}
