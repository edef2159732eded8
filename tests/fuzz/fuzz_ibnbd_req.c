// SPDX-License-Identifier: MIT
/*
 * fuzz_ibnbd_req.c - ibnbd_dec_req() on any bytes: the user message of
 * every request an ibnbd server receives.
 *
 * A message that decodes has a known type and fields in range; OPEN,
 * CLOSE and IO encode back to exactly the bytes received (every reserved
 * byte is 0 on the wire, so the encoding is the only one), and SESS_INFO
 * to the same bytes but for the version. A message that does not decode
 * leaves the request all 0.
 */
#include <errno.h>

#include "fuzz.h"
#include "ibnbd/proto.h"

/**
 * LLVMFuzzerTestOneInput() - decode one ibnbd request
 * @data: the user message
 * @size: its length
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct ibnbd_req zero;
	struct ibnbd_req req;
	uint8_t buf[512];
	size_t n = 0;
	int ret;

	memset(&req, 0x5a, sizeof(req));
	ret = ibnbd_dec_req(data, size, &req);
	FUZZ_CHECK(!ret || ret == -EPROTO);
	if (ret) {
		FUZZ_CHECK(!memcmp(&req, &zero, sizeof(req)));
		return 0;
	}
	FUZZ_CHECK(ibnbd_is_msg(data, size));
	switch (req.type) {
	case IBNBD_MSG_SESS_INFO:
		n = ibnbd_enc_sess_info(buf, sizeof(buf));
		FUZZ_CHECK(n == size);
		FUZZ_CHECK(!memcmp(buf, data, 8));
		FUZZ_CHECK(!memcmp(buf + 10, data + 10, n - 10));
		return 0;
	case IBNBD_MSG_OPEN:
		FUZZ_CHECK(req.access_mode <= IBNBD_WIRE_ACCESS_MIGRATION);
		FUZZ_CHECK(ibnbd_name_valid(req.name, strlen(req.name)));
		n = ibnbd_enc_open(buf, sizeof(buf), req.access_mode, req.name);
		break;
	case IBNBD_MSG_CLOSE:
		n = ibnbd_enc_close(buf, sizeof(buf), req.device_id);
		break;
	case IBNBD_MSG_IO:
		FUZZ_CHECK(req.op <= IBNBD_WIRE_OP_WRITE_ZEROES);
		FUZZ_CHECK(!(req.flags & ~IBNBD_WIRE_F_MASK));
		n = ibnbd_enc_io(buf, sizeof(buf), req.device_id, req.op,
				 req.flags, req.offset, req.len);
		break;
	default:
		FUZZ_CHECK(!"decoded an unknown type");
	}
	FUZZ_CHECK(n == size);
	FUZZ_CHECK(!memcmp(buf, data, n));
	return 0;
}
