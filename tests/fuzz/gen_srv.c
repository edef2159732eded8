// SPDX-License-Identifier: MIT
/*
 * gen_srv.c - seeds of fuzz_srv: programs (srv_prog.h) that do the
 * handshake right, with and without keys, and then run requests, replays,
 * several connections and paths, and more sessions than the server takes;
 * and handshakes that go wrong.
 */
#include <stdbool.h>
#include <string.h>

#include "gen.h"
#include "srv_prog.h"

/**
 * struct prog - a program being written
 * @b: its bytes
 * @n: their count
 */
struct prog {
	uint8_t b[512];
	size_t n;
};

/**
 * put() - append bytes to a program
 * @p: the program
 * @cnt: how many
 * @v: the bytes
 */
static void put(struct prog *p, unsigned int cnt, const uint8_t *v)
{
	unsigned int i;

	for (i = 0; i < cnt; i++)
		p->b[p->n++] = v[i];
}

/**
 * begin() - start a program: its server byte
 * @p: the program
 * @keyed: against the server with keys
 */
static void begin(struct prog *p, bool keyed)
{
	p->n = 0;
	p->b[p->n++] = keyed ? SRV_KEYED : 0;
}

/**
 * connect_h() - SRV_OP_CONNECT with a handshake byte
 * @p: the program
 * @slot: 0..3
 * @sess: session uuid 0..3
 * @path: path uuid 0..1
 * @cid: connection id
 * @cid_num: connections of the path
 * @h: the handshake byte (srv_prog.h), 0 for a right one
 */
static void connect_h(struct prog *p, unsigned int slot, unsigned int sess,
		      unsigned int path, unsigned int cid, unsigned int cid_num,
		      unsigned int h)
{
	uint8_t v[5] = { SRV_OP_CONNECT,
			 (uint8_t)(slot | sess << 2 | path << 4 | 1u << 5),
			 (uint8_t)(cid | (cid_num - 1) << 4), 0, (uint8_t)h };

	put(p, 5, v);
}

/**
 * connect_() - SRV_OP_CONNECT with the handshake right
 * @p: the program
 * @slot: 0..3
 * @sess: session uuid 0..3
 * @path: path uuid 0..1
 * @cid: connection id
 * @cid_num: connections of the path
 */
static void connect_(struct prog *p, unsigned int slot, unsigned int sess,
		     unsigned int path, unsigned int cid, unsigned int cid_num)
{
	connect_h(p, slot, sess, path, cid, cid_num, 0);
}

/**
 * info() - SRV_OP_INFO with one of the names
 * @p: the program
 * @slot: 0..3
 * @name: 0 "s0", 1 "s1", 2 "refused"
 */
static void info(struct prog *p, unsigned int slot, unsigned int name)
{
	uint8_t v[2] = { SRV_OP_INFO, (uint8_t)(slot | name << 2) };

	put(p, 2, v);
}

/**
 * req() - SRV_OP_REQ
 * @p: the program
 * @slot: 0..3
 * @read: a READ
 * @chunk: chunk id
 * @data: data length
 * @usr: user message length
 * @gen: generation
 * @act: SRV_ACT_*
 */
static void req(struct prog *p, unsigned int slot, bool read,
		unsigned int chunk, unsigned int data, unsigned int usr,
		unsigned int gen, unsigned int act)
{
	uint8_t v[9] = { SRV_OP_REQ,
			 (uint8_t)(slot | (read ? 4 : 0)),
			 (uint8_t)chunk,
			 0,
			 0,
			 0,
			 0,
			 (uint8_t)gen,
			 (uint8_t)act };

	gen_le16(v + 3, (uint16_t)data);
	gen_le16(v + 5, (uint16_t)usr);
	put(p, 9, v);
}

/**
 * op2() - an opcode with one argument byte
 * @p: the program
 * @op: SRV_OP_*
 * @a: the argument
 */
static void op2(struct prog *p, unsigned int op, unsigned int a)
{
	uint8_t v[2] = { (uint8_t)op, (uint8_t)a };

	put(p, 2, v);
}

/**
 * gen_srv() - write the seeds of fuzz_srv
 */
void gen_srv(void)
{
	struct prog p = { .n = 0 };
	uint8_t v[3];
	unsigned int k;
	bool keyed;

	begin(&p, false);
	connect_(&p, 0, 0, 0, 0, 1);
	info(&p, 0, 0);
	req(&p, 0, false, 1, 512, 16, 1, SRV_ACT_OK);
	req(&p, 0, true, 2, 1024, 8, 1, SRV_ACT_OK);
	req(&p, 0, false, 3, 100, 4, 2, SRV_ACT_HOLD);
	req(&p, 0, true, 0, 0, 0, 1, SRV_ACT_OK);
	req(&p, 0, false, 0, 64, 1, 2, SRV_ACT_FAIL);
	p.b[p.n++] = SRV_OP_SYNC;
	op2(&p, SRV_OP_ANSWER, 0);
	v[0] = SRV_OP_IMM;
	v[1] = 0;
	v[2] = 0;
	put(&p, 3, v);
	v[2] = 2;
	put(&p, 3, v);
	gen_write("srv", "handshake-io", p.b, p.n);
	p.b[0] = SRV_KEYED;
	gen_write("srv", "keyed-handshake-io", p.b, p.n);

	begin(&p, false);
	connect_(&p, 0, 0, 0, 0, 2);
	connect_(&p, 1, 0, 0, 1, 2);
	info(&p, 0, 1);
	req(&p, 1, false, 0, 256, 8, 5, SRV_ACT_HOLD);
	req(&p, 0, false, 0, 256, 8, 5, SRV_ACT_OK);
	req(&p, 0, false, 0, 256, 8, 4, SRV_ACT_OK);
	req(&p, 1, false, 0, 256, 8, 6, SRV_ACT_OK);
	op2(&p, SRV_OP_ANSWER, 1);
	p.b[p.n++] = SRV_OP_SYNC;
	req(&p, 1, false, 0, 256, 8, 5, SRV_ACT_OK);
	gen_write("srv", "replay", p.b, p.n);
	p.b[0] = SRV_KEYED;
	gen_write("srv", "keyed-replay", p.b, p.n);

	begin(&p, false);
	connect_(&p, 0, 0, 0, 0, 1);
	info(&p, 0, 0);
	connect_(&p, 1, 0, 1, 0, 1);
	info(&p, 1, 0);
	req(&p, 1, true, 1, 4096, 1024, 1, SRV_ACT_HOLD);
	op2(&p, SRV_OP_DISC, 0);
	req(&p, 1, false, 2, 4096, 0, 1, SRV_ACT_ERROR);
	connect_(&p, 2, 0, 0, 0, 1);
	info(&p, 2, 0);
	req(&p, 2, true, 1, 4096, 1024, 1, SRV_ACT_OK);
	gen_write("srv", "two-paths", p.b, p.n);

	begin(&p, false);
	connect_(&p, 0, 0, 0, 0, 1);
	info(&p, 0, 0);
	connect_(&p, 1, 1, 0, 0, 1);
	info(&p, 1, 2);
	connect_(&p, 2, 2, 0, 0, 1);
	info(&p, 2, 1);
	op2(&p, SRV_OP_DISC, 0);
	connect_(&p, 3, 3, 0, 0, 1);
	info(&p, 3, 1);
	gen_write("srv", "sessions", p.b, p.n);

	/* Heartbeats, a timeout, a grace that runs out. */
	begin(&p, false);
	connect_(&p, 0, 0, 0, 0, 1);
	info(&p, 0, 0);
	op2(&p, SRV_OP_TICK, 5);
	v[0] = SRV_OP_IMM;
	v[1] = 0;
	v[2] = 1;
	put(&p, 3, v);
	op2(&p, SRV_OP_TICK, 30);
	connect_(&p, 1, 1, 0, 0, 1);
	info(&p, 1, 1);
	req(&p, 1, false, 0, 8, 1, 1, SRV_ACT_HOLD);
	op2(&p, SRV_OP_DISC, 1);
	p.b[p.n++] = SRV_OP_SYNC;
	op2(&p, SRV_OP_TICK, 255);
	op2(&p, SRV_OP_ANSWER, 0);
	gen_write("srv", "tick", p.b, p.n);

	/* Joins that go wrong, then right; a reconnect of the path. */
	for (k = 0; k < 2; k++) {
		keyed = k;
		begin(&p, keyed);
		connect_(&p, 0, 0, 0, 0, 2);
		connect_h(&p, 1, 0, 0, 1, 2, 0x08); /* no proof_sess */
		connect_h(&p, 1, 0, 0, 1, 2, 0x10); /* a wrong one */
		connect_h(&p, 2, 0, 1, 0, 1, 0x01); /* keyed: "other" */
		connect_(&p, 1, 0, 0, 1, 2);
		info(&p, 0, 0);
		req(&p, 1, false, 0, 64, 4, 1, SRV_ACT_OK);
		connect_(&p, 0, 0, 0, 0, 2);
		info(&p, 0, 0);
		p.b[p.n++] = SRV_OP_SYNC;
		gen_write("srv", keyed ? "keyed-joins" : "joins", p.b, p.n);
	}

	/* Handshakes refused or left open, then the deadline. */
	for (k = 0; k < 2; k++) {
		keyed = k;
		begin(&p, keyed);
		connect_h(&p, 0, 0, 0, 0, 1, 0x02); /* keyed: "nobody" */
		connect_h(&p, 1, 1, 0, 0, 1, 0x03); /* keyed: no key */
		connect_h(&p, 2, 2, 0, 0, 1, 0x04); /* wrong key proof */
		connect_h(&p, 3, 3, 0, 0, 1, 0x20); /* low-order key */
		info(&p, 3, 0);
		connect_h(&p, 0, 0, 0, 0, 1, 0x40); /* no AUTH_REQ */
		info(&p, 0, 0);
		op2(&p, SRV_OP_TICK, 60);
		connect_(&p, 1, 1, 0, 0, 1);
		info(&p, 1, 1);
		gen_write("srv", keyed ? "keyed-refused" : "refused", p.b, p.n);
	}

	/* A raw AUTH_REQ: flags 0, a public key, no proof. */
	begin(&p, false);
	connect_h(&p, 0, 0, 0, 0, 1, 0x80);
	p.n += gen_le16(p.b + p.n, 232);
	p.n += gen_le16(p.b + p.n, 3); /* IBTRS_MSG_AUTH_REQ */
	memset(p.b + p.n, 0, 230);
	memset(p.b + p.n + 6 + 128, 0x42, 32);
	p.n += 230;
	info(&p, 0, 0);
	req(&p, 0, false, 0, 64, 4, 1, SRV_ACT_OK);
	gen_write("srv", "raw-auth", p.b, p.n);
}
