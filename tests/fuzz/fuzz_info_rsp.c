// SPDX-License-Identifier: MIT
/*
 * fuzz_info_rsp.c - ibtrs_info_rsp_decode() on any bytes: the chunk pool
 * description a server sends a client.
 *
 * The first input byte picks how many descriptors the caller has room for
 * (as a client with a smaller table would); the rest is the message. A
 * message that decodes fills no more than that room, no descriptor is
 * empty, and it encodes back to the same descriptors.
 */
#include <errno.h>

#include "fuzz.h"
#include "proto.h"

/**
 * LLVMFuzzerTestOneInput() - decode one INFO_RSP
 * @data: one byte of room, then the received message
 * @size: its length
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibtrs_desc desc[IBTRS_MAX_INFO_DESCS + 1];
	struct ibtrs_desc again[IBTRS_MAX_INFO_DESCS];
	static char buf[IBTRS_INFO_RSP_MAX_LEN];
	struct fuzz_in in = { data, size };
	unsigned int room, i;
	int ret, ret2;
	size_t len;

	room = fuzz_u8(&in) % (IBTRS_MAX_INFO_DESCS + 1);
	memset(desc, 0, sizeof(desc));
	/* A canary after the room: the decoder must not write it. */
	desc[room].key = 0xcafe;
	ret = ibtrs_info_rsp_decode(in.p, in.n, desc, room);
	FUZZ_CHECK(ret > 0 || ret == -EPROTO);
	FUZZ_CHECK(desc[room].key == 0xcafe && !desc[room].len);
	if (ret < 0)
		return 0;
	FUZZ_CHECK((unsigned int)ret <= room && ret <= IBTRS_MAX_INFO_DESCS);
	for (i = 0; i < (unsigned int)ret; i++)
		FUZZ_CHECK(desc[i].len);

	len = ibtrs_info_rsp_encode(buf, desc, (unsigned int)ret);
	FUZZ_CHECK(len == in.n);
	ret2 = ibtrs_info_rsp_decode(buf, len, again, IBTRS_MAX_INFO_DESCS);
	FUZZ_CHECK(ret2 == ret);
	FUZZ_CHECK(!memcmp(desc, again, (size_t)ret * sizeof(desc[0])));
	return 0;
}
