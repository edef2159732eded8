// SPDX-License-Identifier: MIT
/*
 * gen_window.c - the generation window of a tag (ibtrs_gen_classify())
 * and the incarnation fields of conn_rsp.
 *
 * - Serial arithmetic: ahead by 1..IBTRS_GEN_WINDOW is a new request,
 *   behind by as much a stale copy, equal a replay, anything else outside;
 *   the same across the wrap of the 32-bit counter.
 * - A never used tag stands at 0: the first request of a tag in a new
 *   server session carries 1..IBTRS_GEN_WINDOW, and the generation of
 *   the poisoning attack (0x40000000) is outside whatever the tag's state.
 * - conn_rsp carries the incarnation and its flags; a peer that sets no
 *   flag (a server of before) reads as incarnation 0, whatever the bytes.
 * - conn_req carries the client's capabilities in a byte servers of
 *   before ignore; unknown bits are accepted.
 */
#include <string.h>

#include "proto.h"
#include "test.h"

static void test_classify(void)
{
	static const uint32_t bases[] = { 0,	       1,	    1000,
					  0x7fffffffu, 0x80000000u, 0xfffffff0u,
					  0xffffffffu };
	unsigned int i;

	for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		uint32_t g = bases[i];

		CHECK_EQ(ibtrs_gen_classify(g, g), IBTRS_GEN_SAME);
		CHECK_EQ(ibtrs_gen_classify(g, g + 1), IBTRS_GEN_NEXT);
		CHECK_EQ(ibtrs_gen_classify(g, g + IBTRS_GEN_WINDOW),
			 IBTRS_GEN_NEXT);
		CHECK_EQ(ibtrs_gen_classify(g, g + IBTRS_GEN_WINDOW + 1),
			 IBTRS_GEN_OUTSIDE);
		CHECK_EQ(ibtrs_gen_classify(g, g - 1), IBTRS_GEN_STALE);
		CHECK_EQ(ibtrs_gen_classify(g, g - IBTRS_GEN_WINDOW),
			 IBTRS_GEN_STALE);
		CHECK_EQ(ibtrs_gen_classify(g, g - IBTRS_GEN_WINDOW - 1),
			 IBTRS_GEN_OUTSIDE);
		CHECK_EQ(ibtrs_gen_classify(g, g + 0x40000000u),
			 IBTRS_GEN_OUTSIDE);
		CHECK_EQ(ibtrs_gen_classify(g, g + 0x80000000u),
			 IBTRS_GEN_OUTSIDE);
	}
	/* A fresh tag: 1 and the window are new, 0x40000000 is not. */
	CHECK_EQ(ibtrs_gen_classify(0, 1), IBTRS_GEN_NEXT);
	CHECK_EQ(ibtrs_gen_classify(0, 0x40000000u), IBTRS_GEN_OUTSIDE);
	/* Across the wrap. */
	CHECK_EQ(ibtrs_gen_classify(0xffffffffu, 0), IBTRS_GEN_NEXT);
	CHECK_EQ(ibtrs_gen_classify(0, 0xffffffffu), IBTRS_GEN_STALE);
	CHECK_EQ(ibtrs_gen_classify(0xfffffff0u, 5), IBTRS_GEN_NEXT);
}

static void test_conn_req_caps(void)
{
	struct ibtrs_conn_req r = {
		.version = IBTRS_PROTO_VER,
		.cid = 0,
		.cid_num = 2,
		.first_conn = true,
		.caps = IBTRS_CAP_GEN_FROM_1,
	};
	struct ibtrs_msg_conn_req m;
	struct ibtrs_conn_req d;

	ibtrs_conn_req_encode(&m, &r);
	CHECK_EQ(((unsigned char *)&m)[11], IBTRS_CAP_GEN_FROM_1);
	CHECK_EQ(ibtrs_conn_req_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(d.caps, IBTRS_CAP_GEN_FROM_1);
	/* Unknown bits are a newer client's, not an error. */
	m.caps = 0xff;
	CHECK_EQ(ibtrs_conn_req_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(d.caps, 0xff);
}

static void test_conn_rsp(void)
{
	struct ibtrs_conn_rsp r = {
		.version = IBTRS_PROTO_VER,
		.queue_depth = 128,
		.max_io_size = 128 * 1024,
		.chunk_size = 128 * 1024 + IBTRS_HDR_ROOM,
		.max_usr_msg = 1024,
		.flags = IBTRS_RSP_INCARNATION | IBTRS_RSP_NEW_SESS,
		.incarnation = 0x0123456789abcdefull,
	};
	struct ibtrs_msg_conn_rsp m;
	struct ibtrs_conn_rsp d;

	ibtrs_conn_rsp_encode(&m, &r);
	CHECK_EQ(ibtrs_conn_rsp_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(d.flags, IBTRS_RSP_INCARNATION | IBTRS_RSP_NEW_SESS);
	CHECK(d.incarnation == 0x0123456789abcdefull);
	/* Little-endian at offset 24, flags at 20. */
	CHECK_EQ(((unsigned char *)&m)[20], 0x03);
	CHECK_EQ(((unsigned char *)&m)[24], 0xef);
	CHECK_EQ(((unsigned char *)&m)[31], 0x01);
	/* Without the flag the field means nothing. */
	m.flags = 0;
	CHECK_EQ(ibtrs_conn_rsp_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(d.flags, 0);
	CHECK(d.incarnation == 0);
}

int main(void)
{
	test_classify();
	test_conn_req_caps();
	test_conn_rsp();
	printf("PASS\n");
	return 0;
}
