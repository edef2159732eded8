// SPDX-License-Identifier: MIT
/*
 * gen_srv.c - seeds of fuzz_srv: programs (srv_prog.h) that do the
 * handshake right and then run requests, replays, several connections
 * and paths, and more sessions than the server takes.
 */
#include <stdbool.h>

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
 * connect_() - SRV_OP_CONNECT
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
	uint8_t v[4] = { SRV_OP_CONNECT,
			 (uint8_t)(slot | sess << 2 | path << 4 | 1u << 5),
			 (uint8_t)(cid | (cid_num - 1) << 4), 0 };

	put(p, 4, v);
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

	p.n = 0;
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

	p.n = 0;
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

	p.n = 0;
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
	p.n = 0;
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
}
