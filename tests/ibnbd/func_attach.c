// SPDX-License-Identifier: MIT
/*
 * func_attach.c - the client against a scripted server that answers
 * SESS_INFO and OPEN wrongly.
 *
 * - a SESS_INFO answer of another major version: EPROTONOSUPPORT;
 * - a malformed SESS_INFO answer (bad magic, reserved bytes set, no
 *   device allowed): EPROTO;
 * - the server refusing SESS_INFO with -EPROTONOSUPPORT: passed through;
 * - an OPEN answer with a geometry that makes no sense (block size 3):
 *   EPROTO, and the client closes the device id it was given;
 * - an OPEN answer whose max_transfer is below the session's max_io_size
 *   gives that as max_io_size, rounded down to the logical block; a
 *   max_segments above the session's is capped by it.
 */
#include <endian.h>

#include "func_harness.h"
#include "proto.h"

enum mode {
	M_OK,
	M_MAJOR,
	M_BAD_MAGIC,
	M_RESERVED,
	M_NO_DEVICES,
	M_REFUSE,
	M_BAD_GEOMETRY,
};

static _Atomic int mode;
static _Atomic unsigned int closes, close_id;

static int script_ev(struct ibtrs_srv *sess, void *priv,
		     struct ibtrs_srv_op *id, int dir, void *data,
		     size_t datalen, const void *usr, size_t usrlen)
{
	struct ibnbd_sess_info si = { .ver_major = IBNBD_PROTO_VER_MAJOR,
				      .ver_minor = 0,
				      .max_devices = 4 };
	struct ibnbd_open_info oi = {
		.device_id = 77,
		.size = 1 << 20,
		.logical_block_size = 4096,
		.physical_block_size = 4096,
		.max_transfer = 65536 + 4096 + 4096,
		.max_segments = 1000,
	};
	struct ibnbd_req req;
	unsigned char *d = data;

	(void)sess;
	(void)priv;
	(void)dir;
	if (ibnbd_dec_req(usr, usrlen, &req))
		return -EPROTO;
	switch (req.type) {
	case IBNBD_MSG_SESS_INFO:
		if (datalen != sizeof(struct ibnbd_msg_sess_info_rsp))
			return -EPROTO;
		if (atomic_load(&mode) == M_REFUSE)
			return -EPROTONOSUPPORT;
		if (atomic_load(&mode) == M_MAJOR)
			si.ver_major++;
		if (atomic_load(&mode) == M_NO_DEVICES)
			si.max_devices = 0;
		memset(d, 0, datalen);
		if (atomic_load(&mode) == M_NO_DEVICES) {
			/* The encoder writes what it is given. */
			struct ibnbd_msg_sess_info_rsp m = { 0 };

			m.hdr.magic = htole32(IBNBD_MAGIC);
			m.hdr.type = htole16(IBNBD_MSG_SESS_INFO_RSP);
			m.ver_major = si.ver_major;
			memcpy(d, &m, sizeof(m));
		} else {
			CHECK(ibnbd_enc_sess_info_rsp(d, datalen, &si));
		}
		if (atomic_load(&mode) == M_BAD_MAGIC)
			d[0] ^= 0xff;
		if (atomic_load(&mode) == M_RESERVED)
			d[10] = 1;
		break;
	case IBNBD_MSG_OPEN:
		if (datalen != sizeof(struct ibnbd_msg_open_rsp))
			return -EPROTO;
		CHECK(ibnbd_enc_open_rsp(d, datalen, &oi));
		if (atomic_load(&mode) == M_BAD_GEOMETRY) {
			uint32_t bad = htole32(3);

			memcpy(d + offsetof(struct ibnbd_msg_open_rsp,
					    logical_block_size),
			       &bad, sizeof(bad));
		}
		break;
	case IBNBD_MSG_CLOSE:
		atomic_store(&close_id, req.device_id);
		atomic_fetch_add(&closes, 1);
		break;
	default:
		return -EOPNOTSUPP;
	}
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
}

static void expect_attach_fails(struct ibtrs_clt *sess, enum mode m, int err)
{
	atomic_store(&mode, m);
	errno = 0;
	CHECK(!ibnbd_clt_attach(sess, NULL));
	CHECK_EQ(errno, err);
}

int main(void)
{
	struct ibtrs_srv_ctx *ctx;
	struct ibtrs_srv_opts o;
	struct ibnbd_geometry g;
	struct ibnbd_clt *clt;
	struct ibnbd_dev *dev;
	struct ibtrs_clt *sess;
	struct ibtrs_attrs a;

	t_watchdog(120);
	ibtrs_srv_opts_init(&o, sizeof(o));
	o.port = 0;
	o.no_control = true;
	o.rdma_ev = script_ev;
	ctx = ibtrs_srv_open_opts(&o);
	CHECK(ctx);
	sess = f_clt_open(ibtrs_srv_get_port(ctx), 1, "func-attach");
	CHECK_EQ(ibtrs_clt_query(sess, &a), 0);

	expect_attach_fails(sess, M_MAJOR, EPROTONOSUPPORT);
	expect_attach_fails(sess, M_BAD_MAGIC, EPROTO);
	expect_attach_fails(sess, M_RESERVED, EPROTO);
	expect_attach_fails(sess, M_NO_DEVICES, EPROTO);
	expect_attach_fails(sess, M_REFUSE, EPROTONOSUPPORT);

	atomic_store(&mode, M_OK);
	clt = ibnbd_clt_attach(sess, NULL);
	CHECK(clt);

	/* A geometry that does not decode: EPROTO, the id is closed. */
	atomic_store(&mode, M_BAD_GEOMETRY);
	errno = 0;
	CHECK(!ibnbd_dev_open(clt, "disk", IBNBD_ACCESS_RW, NULL));
	CHECK_EQ(errno, EPROTO);
	CHECK_EQ(atomic_load(&closes), 1);
	CHECK_EQ(atomic_load(&close_id), 77);

	/* The limits are the lower of the device's and the session's. */
	atomic_store(&mode, M_OK);
	dev = ibnbd_dev_open(clt, "disk", IBNBD_ACCESS_RW, &g);
	CHECK(dev);
	CHECK_EQ(g.logical_block_size, 4096);
	CHECK_EQ(g.max_segments, a.max_segments < 1000 ? a.max_segments : 1000);
	if (a.max_io_size >= 65536 + 8192)
		CHECK_EQ(g.max_io_size, 65536 + 8192);
	else
		CHECK_EQ(g.max_io_size, a.max_io_size - a.max_io_size % 4096);
	CHECK_EQ(g.device_id, 77);
	CHECK_EQ(ibnbd_dev_close(dev), 0);
	CHECK_EQ(atomic_load(&closes), 2);
	CHECK_EQ(ibnbd_clt_detach(clt), 0);
	ibtrs_clt_close(sess);
	ibtrs_srv_close(ctx);
	printf("func_attach: ok\n");
	return 0;
}
