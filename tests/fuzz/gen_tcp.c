// SPDX-License-Identifier: MIT
/*
 * gen_tcp.c - seeds of fuzz_tcp_frames: streams of well-formed frames for
 * the receives and regions that target sets up (tcp_env.h).
 */
#include "fuzz.h"
#include "gen.h"
#include "tcp/tcp_proto.h"
#include "tcp_env.h"

/**
 * put_frame() - append a frame header
 * @p: where
 * @op: enum tcp_op
 * @imm: immediate
 * @len: payload length
 * @rkey: key
 * @raddr: offset
 *
 * Return: sizeof(struct tcp_frame).
 */
static size_t put_frame(uint8_t *p, uint8_t op, uint32_t imm, uint32_t len,
			uint32_t rkey, uint64_t raddr)
{
	memset(p, 0, sizeof(struct tcp_frame));
	p[0] = op;
	gen_le32(p + 4, imm);
	gen_le32(p + 8, len);
	gen_le32(p + 12, rkey);
	gen_le64(p + 16, raddr);
	return sizeof(struct tcp_frame);
}

/**
 * put_bytes() - append a payload
 * @p: where
 * @len: its length
 * @fill: its first byte, the next ones count up
 *
 * Return: @len.
 */
static size_t put_bytes(uint8_t *p, size_t len, uint8_t fill)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(fill + i);
	return len;
}

/**
 * gen_tcp() - write the seeds of fuzz_tcp_frames
 */
void gen_tcp(void)
{
	static uint8_t buf[64 << 10];
	struct fuzz_tcp_env env;
	uint32_t k0, k1;
	size_t n;

	fuzz_tcp_env_init(&env);
	k0 = env.mr[0]->key;
	k1 = env.mr[1]->key;
	fuzz_tcp_env_fini(&env);

	/* 8 receives, one split seed, reads up to 4096 bytes. */
	n = 0;
	buf[n++] = 7;
	buf[n++] = 1;
	n += gen_le16(buf + n, 4095);
	n += put_frame(buf + n, TCP_OP_SEND, 0, 264, 0, 0);
	n += put_bytes(buf + n, 264, 1);
	n += put_frame(buf + n, TCP_OP_WRITE_IMM, 0x10000005, 0, 0, 0);
	n += put_frame(buf + n, TCP_OP_WRITE, 0, 5000, k0, 10);
	n += put_bytes(buf + n, 5000, 2);
	n += put_frame(buf + n, TCP_OP_WRITE_IMM, 7, 9000, k1, 100);
	n += put_bytes(buf + n, 9000, 3);
	n += put_frame(buf + n, TCP_OP_SEND, 0, 24, 0, 0);
	n += put_bytes(buf + n, 24, 4);
	gen_write("tcp_frames", "frames", buf, n);

	/* A run of three described frames, read in small pieces. */
	n = 0;
	buf[n++] = 7;
	buf[n++] = 2;
	n += gen_le16(buf + n, 700);
	n += put_frame(buf + n, TCP_OP_HDRS, 0, 3 * 24, 0, 0);
	n += put_frame(buf + n, TCP_OP_WRITE, 0, 2000, k0, 4000);
	n += put_frame(buf + n, TCP_OP_WRITE_IMM, 9, 12000, k1, 0);
	n += put_frame(buf + n, TCP_OP_SEND, 0, 200, 0, 0);
	n += put_bytes(buf + n, 2000, 5);
	n += put_bytes(buf + n, 12000, 6);
	n += put_bytes(buf + n, 200, 7);
	n += put_frame(buf + n, TCP_OP_WRITE_IMM, 1, 0, 0, 0);
	gen_write("tcp_frames", "hdrs-run", buf, n);

	/* Byte by byte. */
	n = 0;
	buf[n++] = 0;
	buf[n++] = 3;
	n += gen_le16(buf + n, 0);
	n += put_frame(buf + n, TCP_OP_SEND, 0, 100, 0, 0);
	n += put_bytes(buf + n, 100, 8);
	n += put_frame(buf + n, TCP_OP_WRITE, 0, 30, k0, 4090);
	n += put_bytes(buf + n, 30, 9);
	gen_write("tcp_frames", "bytewise", buf, n);
}
