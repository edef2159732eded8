/* SPDX-License-Identifier: MIT */
/*
 * srv_prog.h - the input of fuzz_srv: a program of client actions against
 * a live server, shared with the seed generator.
 *
 * The first byte picks the server: SRV_KEYED set, the one with a key file
 * holding the keys "fuzz" and "other" (the harness knows a third, "nobody",
 * the server does not); clear, the one without keys. Then each step is an
 * opcode byte (taken modulo SRV_OP_NR), then its arguments; missing bytes
 * read as 0. A program runs at most SRV_MAX_STEPS steps. Connections live
 * in SRV_SLOTS slots.
 *
 * SRV_OP_CONNECT  a, b, recon, h: slot a&3, session uuid (a>>2)&3, path
 *                 uuid (a>>4)&1, first-connection flag (a>>5)&1, no
 *                 IBTRS_CAP_AUTH when a&0x40, a raw version (le16 follows)
 *                 when a&0x80; cid b&15, cid_num (b>>4)+1. Then, on an
 *                 accepted request, the handshake, right when h is 0, else
 *                 broken as h says: the key proven h&3 (keyed: "fuzz",
 *                 "other", "nobody", none; else none, none, "fuzz", none),
 *                 a wrong proof of it (h&4), the session's proof left out
 *                 where the harness holds its secret or given, made up,
 *                 where it does not (h&8), a wrong one (h&0x10), a
 *                 low-order public key (h&0x20), no AUTH_REQ (h&0x40), raw
 *                 AUTH_REQ bytes (h&0x80: len le16 % 240, bytes follow)
 * SRV_OP_INFO     a [, len le16, bytes]: INFO_REQ on slot a&3 with name
 *                 "s0", "s1", "refused" or (a>>2)&3 == 3: len%300 raw bytes
 * SRV_OP_REQ      a, chunk, data le16, usr le16, gen, act [, imm le32]:
 *                 a request on slot a&3, READ when (a>>2)&1; the chunk id is
 *                 chunk % (queue depth + 1); data % (max_io_size + 2),
 *                 usr % 1026; the first user byte is act, which tells the
 *                 server application what to do (SRV_ACT_*); a raw
 *                 immediate follows when (a>>3)&1; a READ's destination has
 *                 a wrong key when (a>>4)&1, a wrong length when (a>>5)&1
 * SRV_OP_IMM      a, kind [, imm le32]: on slot a&3 a heartbeat, heartbeat
 *                 ack, close, or (kind%5 == 3) a raw immediate, or (4) a
 *                 raw request immediate
 * SRV_OP_WRITE    a, off le32, len le16: a WRITE without immediate into the
 *                 session's pool at off, len % 4097 bytes
 * SRV_OP_DISC     a: disconnect slot a&3
 * SRV_OP_ANSWER   a: answer the held requests, with an error when a&1
 * SRV_OP_SYNC     -: wait until both ends have handled everything sent
 * SRV_OP_TICK     a: move the server's clock (ibtrs_set_test_clock()) on
 *                 by (a + 1) * 50 ms and run its tick: heartbeats,
 *                 heartbeat timeouts, the grace of sessions without a path
 */
#ifndef IBTRS_FUZZ_SRV_PROG_H
#define IBTRS_FUZZ_SRV_PROG_H

enum {
	SRV_OP_CONNECT,
	SRV_OP_INFO,
	SRV_OP_REQ,
	SRV_OP_IMM,
	SRV_OP_WRITE,
	SRV_OP_DISC,
	SRV_OP_ANSWER,
	SRV_OP_SYNC,
	SRV_OP_TICK,
	SRV_OP_NR,
};

/* What the server application does with a request (first user byte). */
enum {
	SRV_ACT_OK,    /* answer at once, READ data filled */
	SRV_ACT_FAIL,  /* return an error from rdma_ev */
	SRV_ACT_HOLD,  /* keep it, answered by SRV_OP_ANSWER or at the end */
	SRV_ACT_ERROR, /* answer at once with an error */
};

#define SRV_KEYED 0x01 /* first byte: the server with keys */

#define SRV_SLOTS 4
#define SRV_MAX_STEPS 48
#define SRV_QUEUE_DEPTH 4
#define SRV_MAX_IO 4096
#define SRV_MAX_SESSIONS 2
#define SRV_HB_TIMEOUT_MS 1000
#define SRV_GRACE_MS 10000
#define SRV_HS_TIMEOUT_MS 2000
#define SRV_TICK_STEP_MS 50

#endif /* IBTRS_FUZZ_SRV_PROG_H */
