/* SPDX-License-Identifier: MIT */
/*
 * clt_prog.h - the input of fuzz_clt: the fake server's answers while the
 * client connects, then a program of steps, shared with the seed
 * generator.
 *
 * The first byte's CLT_KEYED bit (of the first conn_rsp's "how", where it
 * means nothing else) gives the session a key file with the one key
 * CLT_KEY_ID: the client proves it, the fake server checks the proof and
 * proves the key in turn; clear, no key file.
 *
 * While the client connects, the fake server takes one byte per answer,
 * "how", and more where it says. Bit 0x08: set the byte at (next byte %
 * length) of the answer to the byte after; 0x10: once more; 0x40 (AUTH_RSP
 * and INFO_RSP): send only (next byte % length) bytes of it.
 *   conn_rsp  how & 7 == 7: a refusal with errno (next byte); else the
 *             accept, geometry CLT_*
 *   AUTH_RSP  how & 7 == 7: a refusal with errno (next byte); else the
 *             accept with the server's proof: a new session (incarnation
 *             0x1000 + next byte) for the first connection, a join for
 *             the others, the other way round with how & 0x20
 *   INFO_RSP  the pool in one descriptor, in two with how & 1
 * The connections come in the client's order: con 0 (conn_rsp, AUTH_RSP),
 * con 1 (conn_rsp, AUTH_RSP), then INFO_RSP on con 0.
 *
 * Then each step is an opcode byte (modulo CLT_OP_NR) and its arguments,
 * at most CLT_MAX_STEPS steps:
 * CLT_OP_REQ     a, len le32: a request of the client, READ when a&1, on
 *                con 0 when a&2, (a>>2)%64 bytes of user message, len %
 *                (CLT_MAX_IO + 1) bytes of data
 * CLT_OP_ANSWER  a, raw le32: the server answers its oldest request: a
 *                READ's data first (not with a&4), then the immediate:
 *                a&3 0 right, 1 errno raw%4096, 2 for chunk raw%(depth+2),
 *                3 raw
 * CLT_OP_IMM     slot, imm le32: the server writes a raw immediate
 * CLT_OP_SEND    slot, n: the server sends a SEND of n*4 bytes
 * CLT_OP_DISC    slot: the server drops that connection
 * CLT_OP_SYNC    -: run the session and the server until nothing moves;
 *                then, if a request is neither confirmed nor held by the
 *                server, or with (opcode byte / CLT_OP_NR) odd in any
 *                case, the library's clock moves by two failover
 *                timeouts, the session's tick runs, and again until
 *                nothing moves (fuzz_clt.c)
 */
#ifndef IBTRS_FUZZ_CLT_PROG_H
#define IBTRS_FUZZ_CLT_PROG_H

enum {
	CLT_OP_REQ,
	CLT_OP_ANSWER,
	CLT_OP_IMM,
	CLT_OP_SEND,
	CLT_OP_DISC,
	CLT_OP_SYNC,
	CLT_OP_NR,
};

#define CLT_SESSNAME "fuzz-clt"
#define CLT_QUEUE_DEPTH 4
#define CLT_MAX_IO 4096
#define CLT_CHUNK (CLT_MAX_IO + 4096) /* max_io_size + IBTRS_HDR_ROOM */
#define CLT_MAX_PENDING 16
#define CLT_MAX_STEPS 48
#define CLT_CONNECT_MS 1000
/* A real session's timeouts (1 s, 100 ms) a hundred times: on the
 * harness's clock, which only CLT_OP_SYNC moves (fuzz_clt.c). */
#define CLT_HB_TIMEOUT_MS 100000
#define CLT_FAILOVER_MS 10000
#define CLT_KEYED 0x80	  /* first byte: the session has a key */
#define CLT_KEY_ID "fuzz" /* its identity */

#endif /* IBTRS_FUZZ_CLT_PROG_H */
