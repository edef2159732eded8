// SPDX-License-Identifier: MIT
/*
 * fuzz_ibnbd_sess_info_rsp.c - ibnbd_dec_sess_info_rsp() on any bytes:
 * the server's answer to an ibnbd client's version exchange.
 *
 * An answer that decodes encodes back to exactly the bytes received.
 */
#include <errno.h>

#include "fuzz.h"
#include "ibnbd/proto.h"

/**
 * LLVMFuzzerTestOneInput() - decode one SESS_INFO_RSP
 * @data: the data of the SESS_INFO request
 * @size: its length
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibnbd_sess_info info;
	uint8_t buf[sizeof(struct ibnbd_msg_sess_info_rsp)];
	size_t n;
	int ret;

	memset(&info, 0, sizeof(info));
	ret = ibnbd_dec_sess_info_rsp(data, size, &info);
	FUZZ_CHECK(!ret || ret == -EPROTO || ret == -EPROTONOSUPPORT);
	if (ret)
		return 0;
	n = ibnbd_enc_sess_info_rsp(buf, sizeof(buf), &info);
	FUZZ_CHECK(n == size);
	FUZZ_CHECK(!memcmp(buf, data, n));
	return 0;
}
