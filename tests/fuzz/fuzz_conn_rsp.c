// SPDX-License-Identifier: MIT
/*
 * fuzz_conn_rsp.c - ibtrs_conn_rsp_decode() on any bytes: the server's
 * answer to a connect, which sets the geometry of the client's session.
 *
 * An accepting answer that decodes must describe a session the client can
 * use (queue depth, chunk size and immediate layout in range); every
 * answer that decodes must survive a round trip through the encoder.
 */
#include <errno.h>

#include "fuzz.h"
#include "ibtrs.h"
#include "proto.h"

/**
 * LLVMFuzzerTestOneInput() - decode one connection response
 * @data: the bytes, as the backend delivered them
 * @size: their count
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibtrs_conn_rsp r, again;
	struct ibtrs_msg_conn_rsp m;
	int ret;

	memset(&r, 0, sizeof(r));
	ret = ibtrs_conn_rsp_decode(data, size, &r);
	FUZZ_CHECK(!ret || ret == -EPROTO || ret == -EPROTONOSUPPORT);
	if (ret)
		return 0;
	FUZZ_CHECK(size >= sizeof(m));
	if (!r.err) {
		FUZZ_CHECK(r.queue_depth &&
			   r.queue_depth <= IBTRS_MAX_QUEUE_DEPTH);
		FUZZ_CHECK(r.max_io_size && r.max_usr_msg <= IBTRS_MAX_USR_MSG);
		FUZZ_CHECK(r.chunk_size >= r.max_io_size + IBTRS_HDR_ROOM);
		FUZZ_CHECK(r.chunk_size - r.max_io_size >= IBTRS_HDR_ROOM);
		FUZZ_CHECK(ibtrs_imm_off_bits(r.queue_depth, r.chunk_size) >=
			   0);
	}
	ibtrs_conn_rsp_encode(&m, &r);
	memset(&again, 0, sizeof(again));
	FUZZ_CHECK(!ibtrs_conn_rsp_decode(&m, sizeof(m), &again));
	FUZZ_CHECK(!memcmp(&r, &again, sizeof(r)));
	return 0;
}
