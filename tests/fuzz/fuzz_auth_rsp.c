// SPDX-License-Identifier: MIT
/*
 * fuzz_auth_rsp.c - ibtrs_auth_rsp_decode() on any bytes: the server's
 * answer to AUTH_REQ, which tells the client which session it joined.
 *
 * A refusal that decodes carries its errno and nothing else. An accept
 * that decodes has a valid, non-zero incarnation, no unknown flag and a
 * public key only with IBTRS_RSP_NEW_SESS; it then covers every byte of
 * the message, so the encoder gives the input back byte for byte. Every
 * message that decodes survives the round trip.
 */
#include <errno.h>

#include "fuzz.h"
#include "proto.h"

/**
 * LLVMFuzzerTestOneInput() - decode one AUTH_RSP
 * @data: the received message
 * @size: its length
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibtrs_auth_rsp r, again;
	struct ibtrs_msg_auth_rsp m;
	int ret;

	memset(&r, 0xa5, sizeof(r));
	ret = ibtrs_auth_rsp_decode(data, size, &r);
	FUZZ_CHECK(!ret || ret == -EPROTO);
	if (ret)
		return 0;
	FUZZ_CHECK(size == sizeof(m));
	if (r.err) {
		FUZZ_CHECK(!r.flags && !r.incarnation);
		FUZZ_CHECK(fuzz_zero(r.pub, sizeof(r.pub)) &&
			   fuzz_zero(r.proof, sizeof(r.proof)));
	} else {
		FUZZ_CHECK(r.flags & IBTRS_RSP_INCARNATION);
		FUZZ_CHECK(!(r.flags &
			     ~(IBTRS_RSP_INCARNATION | IBTRS_RSP_NEW_SESS)));
		FUZZ_CHECK(r.incarnation);
		if (!(r.flags & IBTRS_RSP_NEW_SESS))
			FUZZ_CHECK(fuzz_zero(r.pub, sizeof(r.pub)));
	}

	ibtrs_auth_rsp_encode(&m, &r);
	if (!r.err)
		FUZZ_CHECK(!memcmp(&m, data, sizeof(m)));
	else
		FUZZ_CHECK(!memcmp(&m, data, 4) &&
			   fuzz_zero((const uint8_t *)&m + 4, sizeof(m) - 4));
	memset(&again, 0x5a, sizeof(again));
	FUZZ_CHECK(!ibtrs_auth_rsp_decode(&m, sizeof(m), &again));
	FUZZ_CHECK(again.err == r.err && again.flags == r.flags &&
		   again.incarnation == r.incarnation);
	FUZZ_CHECK(!memcmp(again.pub, r.pub, sizeof(r.pub)));
	FUZZ_CHECK(!memcmp(again.proof, r.proof, sizeof(r.proof)));
	return 0;
}
