// SPDX-License-Identifier: MIT
/*
 * fuzz_ibnbd_open_rsp.c - ibnbd_dec_open_rsp() on any bytes: the device
 * geometry an ibnbd client gets from the server and builds its device on.
 *
 * An answer that decodes has a geometry the client may divide by (block
 * sizes powers of two in range, every limit a multiple of the logical
 * block size) and encodes back to exactly the bytes received.
 */
#include <errno.h>

#include "fuzz.h"
#include "ibnbd/proto.h"

/**
 * LLVMFuzzerTestOneInput() - decode one OPEN_RSP
 * @data: the data of the OPEN request
 * @size: its length
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibnbd_open_info info;
	uint8_t buf[sizeof(struct ibnbd_msg_open_rsp)];
	uint32_t lbs;
	size_t n;
	int ret;

	memset(&info, 0, sizeof(info));
	ret = ibnbd_dec_open_rsp(data, size, &info);
	FUZZ_CHECK(!ret || ret == -EPROTO);
	if (ret)
		return 0;
	lbs = info.logical_block_size;
	FUZZ_CHECK(lbs >= 512 && lbs <= 65536 && !(lbs & (lbs - 1)));
	FUZZ_CHECK(
		info.physical_block_size >= lbs &&
		!(info.physical_block_size & (info.physical_block_size - 1)));
	FUZZ_CHECK(!(info.size % lbs) && info.max_transfer &&
		   !(info.max_transfer % lbs) && info.max_segments);
	FUZZ_CHECK(!(info.flags & ~IBNBD_WIRE_DEV_MASK));

	n = ibnbd_enc_open_rsp(buf, sizeof(buf), &info);
	FUZZ_CHECK(n == size);
	FUZZ_CHECK(!memcmp(buf, data, n));
	return 0;
}
