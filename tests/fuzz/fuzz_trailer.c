// SPDX-License-Identifier: MIT
/*
 * fuzz_trailer.c - the request trailer and the immediates: what a server
 * finds at the end of a chunk a client wrote, and the 32 bits that come
 * with every request and response.
 *
 * Input: a 24-byte trailer, then an immediate, a queue depth, a chunk
 * size, a chunk id and an errno. A trailer that decodes encodes back to
 * the same fields. An immediate unpacks into fields in range that pack
 * back into the same immediate, for every geometry a session can have,
 * and a response packs an errno and a chunk id that unpack unchanged.
 */
#include <errno.h>

#include "fuzz.h"
#include "ibtrs.h"
#include "proto.h"

/**
 * check_trailer() - decode a trailer and check its round trip
 * @buf: sizeof(struct ibtrs_trailer) bytes
 */
static void check_trailer(const uint8_t *buf)
{
	struct ibtrs_req_trailer t, again;
	struct ibtrs_trailer m;
	int ret;

	memset(&t, 0, sizeof(t));
	ret = ibtrs_trailer_decode(buf, &t);
	FUZZ_CHECK(!ret || ret == -EPROTO);
	if (ret)
		return;
	FUZZ_CHECK(t.dir == IBTRS_READ || t.dir == IBTRS_WRITE);
	FUZZ_CHECK(t.usr_len <= IBTRS_MAX_USR_MSG);
	ibtrs_trailer_encode(&m, &t);
	memset(&again, 0, sizeof(again));
	FUZZ_CHECK(!ibtrs_trailer_decode(&m, &again));
	FUZZ_CHECK(!memcmp(&t, &again, sizeof(t)));
}

/**
 * check_imm() - unpack and repack request and response immediates
 * @imm: an immediate from the wire
 * @qd: a queue depth
 * @chunk_size: a chunk size
 * @chunk: a chunk id to pack
 * @err: an errno to pack
 */
static void check_imm(uint32_t imm, uint32_t qd, uint32_t chunk_size,
		      uint32_t chunk, int err)
{
	uint32_t c, off, back;
	int bits, e;

	bits = ibtrs_imm_off_bits(qd, chunk_size);
	if (bits >= 0) {
		FUZZ_CHECK(bits <= IBTRS_IMM_PAYLOAD_BITS);
		ibtrs_imm_req_unpack(imm, (unsigned int)bits, &c, &off);
		FUZZ_CHECK(bits == 32 || off < (1ull << bits));
		FUZZ_CHECK(c < (1ull << (IBTRS_IMM_PAYLOAD_BITS - bits)));
		back = ibtrs_imm_req(c, off, (unsigned int)bits);
		FUZZ_CHECK(back == (imm & IBTRS_IMM_PAYLOAD_MASK));
		FUZZ_CHECK(ibtrs_imm_type(back) == IBTRS_IMM_IO_REQ);
		/* Every chunk of the session and every offset fits. */
		chunk %= qd;
		off = chunk_size ? (uint32_t)(imm % chunk_size) : 0;
		ibtrs_imm_req_unpack(ibtrs_imm_req(chunk, off,
						   (unsigned int)bits),
				     (unsigned int)bits, &c, &back);
		FUZZ_CHECK(c == chunk && back == off);
	}

	ibtrs_imm_rsp_unpack(imm, &c, &e);
	FUZZ_CHECK(c <= 0xffff && e <= 0 && e >= -IBTRS_IMM_MAX_ERRNO);
	back = ibtrs_imm_rsp(c, e);
	FUZZ_CHECK(ibtrs_imm_type(back) == IBTRS_IMM_IO_RSP);
	FUZZ_CHECK((back & IBTRS_IMM_PAYLOAD_MASK) ==
		   (imm & IBTRS_IMM_PAYLOAD_MASK));

	ibtrs_imm_rsp_unpack(ibtrs_imm_rsp(chunk, err), &c, &e);
	FUZZ_CHECK(c == (chunk & 0xffff));
	if (err <= 0 && err >= -IBTRS_IMM_MAX_ERRNO)
		FUZZ_CHECK(e == err);
	else
		FUZZ_CHECK(e == -EIO);
}

/**
 * LLVMFuzzerTestOneInput() - one trailer and one set of immediates
 * @data: trailer, immediate, queue depth, chunk size, chunk id, errno
 * @size: its length
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t trailer[sizeof(struct ibtrs_trailer)] = { 0 };
	struct fuzz_in in = { data, size };
	uint32_t imm, qd, cs, chunk;
	const uint8_t *p;
	size_t n;
	int err;

	p = fuzz_bytes(&in, sizeof(trailer), &n);
	memcpy(trailer, p, n);
	check_trailer(trailer);

	imm = fuzz_u32(&in);
	qd = fuzz_u16(&in) % (IBTRS_MAX_QUEUE_DEPTH + 2);
	cs = fuzz_u32(&in);
	chunk = fuzz_u32(&in);
	err = (int)fuzz_u32(&in);
	check_imm(imm, qd, cs, chunk, err);
	return 0;
}
