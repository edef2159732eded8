// SPDX-License-Identifier: MIT
/*
 * gen_clt.c - seeds of fuzz_clt: answers (clt_prog.h) that let the client
 * connect, then requests answered right, with errors, out of turn, and a
 * server that drops the path; and answers broken in one place each.
 */
#include <stdbool.h>

#include "clt_prog.h"
#include "gen.h"

/**
 * struct prog - an input being written
 * @b: its bytes
 * @n: their count
 */
struct prog {
	uint8_t b[256];
	size_t n;
};

/**
 * put() - append one byte
 * @p: the input
 * @v: the byte
 */
static void put(struct prog *p, unsigned int v)
{
	p->b[p->n++] = (uint8_t)v;
}

/**
 * handshake() - the answers of a right handshake: conn_rsp and AUTH_RSP
 * (a new session) of con 0, conn_rsp and AUTH_RSP (a join) of con 1,
 * INFO_RSP in @info descriptors
 * @p: the input
 * @info: 1 or 2
 */
static void handshake(struct prog *p, unsigned int info)
{
	p->n = 0;
	put(p, 0);
	put(p, 0);
	put(p, 5); /* incarnation 0x1005 */
	put(p, 0);
	put(p, 0);
	put(p, info == 2 ? 1 : 0);
}

/**
 * req() - CLT_OP_REQ
 * @p: the input
 * @a: its first byte (direction, connection, user message length)
 * @len: data length
 */
static void req(struct prog *p, unsigned int a, uint32_t len)
{
	put(p, CLT_OP_REQ);
	put(p, a);
	p->n += gen_le32(p->b + p->n, len);
}

/**
 * answer() - CLT_OP_ANSWER
 * @p: the input
 * @a: how (clt_prog.h)
 * @raw: the raw value
 */
static void answer(struct prog *p, unsigned int a, uint32_t raw)
{
	put(p, CLT_OP_ANSWER);
	put(p, a);
	p->n += gen_le32(p->b + p->n, raw);
}

/**
 * gen_clt() - write the seeds of fuzz_clt
 */
void gen_clt(void)
{
	struct prog p;
	unsigned int i;

	handshake(&p, 1);
	req(&p, 8 << 2, 512);	   /* WRITE, 8 bytes of user message */
	req(&p, 1 | 4 << 2, 1024); /* READ */
	req(&p, 2, 0);		   /* on con 0, nothing */
	answer(&p, 0, 0);
	answer(&p, 0, 0);
	answer(&p, 1, 5); /* -EIO */
	put(&p, CLT_OP_SYNC);
	req(&p, 1, 4096);
	answer(&p, 4, 0); /* a READ answered without its data */
	put(&p, CLT_OP_SYNC);
	gen_write("clt", "io", p.b, p.n);
	p.b[0] |= CLT_KEYED; /* the same with a key */
	gen_write("clt", "io-keyed", p.b, p.n);

	handshake(&p, 2);
	req(&p, 0, 100);
	req(&p, 1, 100);
	answer(&p, 2, 1);	   /* the answer of another chunk */
	answer(&p, 3, 0x10000000); /* a raw immediate: IO_RSP of chunk 0 */
	put(&p, CLT_OP_IMM);
	put(&p, 0);
	p.n += gen_le32(p.b + p.n, 0x80000000); /* a heartbeat */
	put(&p, CLT_OP_SEND);
	put(&p, 1);
	put(&p, 8);
	put(&p, CLT_OP_SYNC);
	gen_write("clt", "out-of-turn", p.b, p.n);

	handshake(&p, 1);
	req(&p, 0, 64);
	req(&p, 1, 64);
	put(&p, CLT_OP_DISC);
	put(&p, 1);
	req(&p, 0, 64);
	put(&p, CLT_OP_SYNC);
	gen_write("clt", "disconnect", p.b, p.n);

	/* Requests held while time passes: heartbeats, then their end. */
	handshake(&p, 1);
	req(&p, 0, 64);
	req(&p, 1, 64);
	for (i = 0; i < 7; i++)
		put(&p, CLT_OP_SYNC + CLT_OP_NR); /* the time passes */
	answer(&p, 0, 0);
	put(&p, CLT_OP_SYNC);
	gen_write("clt", "held-while-time-passes", p.b, p.n);

	/* Answers broken in one place: a refusal, a byte, a short one. */
	p.n = 0;
	put(&p, 7);
	put(&p, 111); /* ECONNREFUSED */
	gen_write("clt", "conn-refused", p.b, p.n);
	p.n = 0;
	put(&p, 0x08);
	put(&p, 6); /* conn_rsp.queue_depth */
	put(&p, 0);
	gen_write("clt", "conn-rsp-byte", p.b, p.n);
	p.n = 0;
	put(&p, 0);
	put(&p, 7);
	put(&p, 13); /* EACCES */
	gen_write("clt", "auth-refused", p.b, p.n);
	p.n = 0;
	put(&p, 0);
	put(&p, 0x08);
	put(&p, 5);
	put(&p, 48); /* a byte of the proof */
	put(&p, 0xff);
	gen_write("clt", "auth-bad-proof", p.b, p.n);
	p.b[0] |= CLT_KEYED;
	gen_write("clt", "auth-bad-proof-keyed", p.b, p.n);
	handshake(&p, 1);
	p.b[4] = 0x20; /* con 1 told it made a new session */
	gen_write("clt", "auth-join-lie", p.b, p.n);
	handshake(&p, 1);
	p.b[5] = 0x40; /* INFO_RSP cut to 10 bytes */
	put(&p, 10);
	gen_write("clt", "info-short", p.b, p.n);
}
