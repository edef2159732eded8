// SPDX-License-Identifier: MIT
/*
 * fuzz_conn_req.c - ibtrs_conn_req_decode() on any bytes: the private data
 * of a client's connect, the first thing a server reads from anyone.
 *
 * A request that decodes must satisfy what the server relies on (cid below
 * cid_num, at most IBTRS_MAX_CONS_PER_PATH connections) and must survive a
 * round trip through the encoder unchanged.
 */
#include <errno.h>

#include "fuzz.h"
#include "proto.h"

/**
 * LLVMFuzzerTestOneInput() - decode one connection request
 * @data: the bytes, as the backend delivered them
 * @size: their count
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibtrs_conn_req r, again;
	struct ibtrs_msg_conn_req m;
	int ret;

	memset(&r, 0, sizeof(r));
	ret = ibtrs_conn_req_decode(data, size, &r);
	FUZZ_CHECK(!ret || ret == -EPROTO || ret == -EPROTONOSUPPORT);
	if (ret)
		return 0;
	FUZZ_CHECK(size >= sizeof(m));
	FUZZ_CHECK(r.cid_num && r.cid_num <= IBTRS_MAX_CONS_PER_PATH);
	FUZZ_CHECK(r.cid < r.cid_num);
	FUZZ_CHECK((r.version >> 8) == IBTRS_PROTO_VER_MAJOR);

	ibtrs_conn_req_encode(&m, &r);
	memset(&again, 0, sizeof(again));
	FUZZ_CHECK(!ibtrs_conn_req_decode(&m, sizeof(m), &again));
	FUZZ_CHECK(!memcmp(&r, &again, sizeof(r)));
	return 0;
}
