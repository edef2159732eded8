// SPDX-License-Identifier: MIT
/*
 * fuzz_auth_req.c - ibtrs_auth_req_decode() on any bytes: the client's
 * proofs, the first message a server takes from a connection that has
 * not yet shown it may reach anything.
 *
 * An AUTH_REQ that decodes keeps what the decoder promises: known flags,
 * an identity of printable bytes without ':' exactly when the key's proof
 * is given, proofs that are zero where their flag is not set. Since every
 * byte it does not carry must be zero, the encoder gives the input back
 * byte for byte, and that decodes to the same message.
 */
#include <errno.h>

#include "fuzz.h"
#include "proto.h"

/**
 * LLVMFuzzerTestOneInput() - decode one AUTH_REQ
 * @data: the received message
 * @size: its length
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibtrs_auth_req r, again;
	struct ibtrs_msg_auth_req m;
	unsigned int i;
	int ret;

	memset(&r, 0xa5, sizeof(r));
	ret = ibtrs_auth_req_decode(data, size, &r);
	FUZZ_CHECK(!ret || ret == -EPROTO);
	if (ret)
		return 0;
	FUZZ_CHECK(size == sizeof(m));
	FUZZ_CHECK(!(r.flags & ~(IBTRS_AUTH_PSK | IBTRS_AUTH_JOIN)));
	FUZZ_CHECK(r.id_len <= IBTRS_AUTH_ID_MAX);
	FUZZ_CHECK(!r.id_len == !(r.flags & IBTRS_AUTH_PSK));
	FUZZ_CHECK(strlen(r.identity) == r.id_len);
	for (i = 0; i < r.id_len; i++)
		FUZZ_CHECK(r.identity[i] > ' ' && r.identity[i] < 0x7f &&
			   r.identity[i] != ':');
	if (!(r.flags & IBTRS_AUTH_PSK))
		FUZZ_CHECK(fuzz_zero(r.proof_psk, sizeof(r.proof_psk)));
	if (!(r.flags & IBTRS_AUTH_JOIN))
		FUZZ_CHECK(fuzz_zero(r.proof_sess, sizeof(r.proof_sess)));

	ibtrs_auth_req_encode(&m, &r);
	FUZZ_CHECK(!memcmp(&m, data, sizeof(m)));
	memset(&again, 0x5a, sizeof(again));
	FUZZ_CHECK(!ibtrs_auth_req_decode(&m, sizeof(m), &again));
	FUZZ_CHECK(again.flags == r.flags && again.id_len == r.id_len);
	FUZZ_CHECK(!memcmp(again.identity, r.identity, r.id_len + 1u));
	FUZZ_CHECK(!memcmp(again.pub, r.pub, sizeof(r.pub)));
	FUZZ_CHECK(!memcmp(again.proof_psk, r.proof_psk, sizeof(r.proof_psk)));
	FUZZ_CHECK(
		!memcmp(again.proof_sess, r.proof_sess, sizeof(r.proof_sess)));
	return 0;
}
