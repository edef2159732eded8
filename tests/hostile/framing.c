// SPDX-License-Identifier: MIT
/*
 * framing.c - attacks with malformed frames.
 *
 * On a session that works (checked with a ping first), one bad frame:
 * an unknown operation, flags or reserved bits set, a SEND larger than
 * its receive or with none posted, a length over the frame limit, an
 * unknown immediate, or a frame cut short by a close or a reset. The
 * server must close the connection in bounded time.
 */
#include "hostile.h"

static void case_unknown_op(void)
{
	/* 4 is TCP_OP_HDRS: see case_hdrs(). */
	frame_case(0, 0, 0, 0, 0, false, 0, 0, 0);
	frame_case(5, 0, 0, 0, 16, false, 0, 0, 16);
	frame_case(0xff, 0, 0, 0, 0, false, 0, 0, 0);
}

static void case_frame_flags(void)
{
	frame_case(TCP_OP_SEND, 1, 0, 0, 0, false, 0, 0, 0);
	frame_case(TCP_OP_WRITE, 0x80, 0, 0, 8, true, 0, 0, 8);
	frame_case(TCP_OP_WRITE_IMM, 0, 1, ibtrs_imm_hb(IBTRS_IMM_HB), 0, false,
		   0, 0, 0);
}

static void case_send_too_big(void)
{
	struct ibtrs_msg_info_req req;
	unsigned char big[sizeof(req) + 1];
	struct atk a;

	/* Larger than the INFO receive. */
	atk_open(&a, "", 1, false);
	ibtrs_info_req_encode(&req, "atk-big");
	memset(big, 0, sizeof(big));
	memcpy(big, &req, sizeof(req));
	send_frame(a.fd[0], TCP_OP_SEND, 0, 0, 0, sizeof(big), 0, 0, big,
		   sizeof(big));
	atk_expect_closed(&a);

	/* After INFO every receive has no buffer. */
	frame_case(TCP_OP_SEND, 0, 0, 0, 1, false, 0, 0, 1);
	frame_case(TCP_OP_SEND, 0, 0, 0, 4096, false, 0, 0, 4096);
}

static void case_huge_len(void)
{
	/* Over the frame limit, at the limit, and the largest u32. */
	frame_case(TCP_OP_WRITE, 0, 0, 0, TCP_MAX_FRAME_LEN + 1, true, 0, 0,
		   64);
	frame_case(TCP_OP_WRITE_IMM, 0, 0, 0, TCP_MAX_FRAME_LEN, true, 0, 0,
		   64);
	frame_case(TCP_OP_WRITE, 0, 0, 0, UINT32_MAX, true, 0, 0, 64);
	frame_case(TCP_OP_SEND, 0, 0, 0, UINT32_MAX, false, 0, 0, 64);
	frame_case(TCP_OP_SEND, 0, 0, 0, TCP_MAX_FRAME_LEN, false, 0, 0, 64);
}

static void case_unknown_imm(void)
{
	frame_case(TCP_OP_WRITE_IMM, 0, 0, 5u << IBTRS_IMM_TYPE_SHIFT, 0, false,
		   0, 0, 0);
	frame_case(TCP_OP_WRITE_IMM, 0, 0,
		   (uint32_t)IBTRS_IMM_IO_RSP << IBTRS_IMM_TYPE_SHIFT, 0, false,
		   0, 0, 0);
	frame_case(TCP_OP_WRITE_IMM, 0, 0, 0xffffffffu, 0, false, 0, 0, 0);
}

static void case_truncated(void)
{
	struct tcp_frame f = { .op = TCP_OP_WRITE, .len = htole32(1000) };
	unsigned char half[500];
	struct atk a;
	int fd;

	/* Part of a header, then close. */
	atk_open(&a, "atk-trunc1", 1, true);
	rt_send_all(a.fd[0], &f, 10, IO_TIMEOUT_MS, NULL);
	atk_close(&a);

	/* Part of a payload, then close. */
	atk_open(&a, "atk-trunc2", 1, true);
	memset(half, 0xee, sizeof(half));
	send_frame(a.fd[0], TCP_OP_WRITE, 0, 0, 0, 1000, a.pool.key, 0, half,
		   sizeof(half));
	atk_close(&a);

	/* The same, half-closed: the server must close its side. */
	atk_open(&a, "atk-trunc3", 1, true);
	rt_send_all(a.fd[0], &f, 10, IO_TIMEOUT_MS, NULL);
	shutdown(a.fd[0], SHUT_WR);
	atk_expect_closed(&a);
	atk_open(&a, "atk-trunc4", 1, true);
	send_frame(a.fd[0], TCP_OP_WRITE_IMM, 0, 0,
		   ibtrs_imm_req(0, 0, a.off_bits), 1000, a.pool.key, 0, half,
		   sizeof(half));
	shutdown(a.fd[0], SHUT_WR);
	atk_expect_closed(&a);

	/* A truncated hello. */
	fd = raw_connect();
	rt_send_all(fd, TCP_HELLO_MAGIC "\0\0\0\0", 8, IO_TIMEOUT_MS, NULL);
	shutdown(fd, SHUT_WR);
	CHECK_EQ(expect_closed(fd), 0);
	fd = raw_connect();
	rt_send_all(fd, TCP_HELLO_MAGIC, 4, IO_TIMEOUT_MS, NULL);
	close(fd);

	/* Connected, then reset with unread data on both sides. */
	atk_open(&a, "atk-reset", 1, true);
	{
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		atk_req(&a, 0, 1, IBTRS_WRITE, 64, 0, NULL);
		setsockopt(a.fd[0], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	atk_close(&a);
}

static const struct hcase cases[] = {
	{ "unknown-op", case_unknown_op },
	{ "frame-flags", case_frame_flags },
	{ "send-too-big", case_send_too_big },
	{ "huge-len", case_huge_len },
	{ "unknown-imm", case_unknown_imm },
	{ "truncated", case_truncated },
};

int main(void)
{
	hostile_setup();
	hostile_run(cases, sizeof(cases) / sizeof(cases[0]));
	return hostile_finish("hostile/framing");
}
