/* SPDX-License-Identifier: MIT */
/*
 * tcp_proto.h - framing of the tcp backend on the stream.
 *
 * A connection opens with a hello in each direction that carries the
 * 64-byte private data of connect and accept. After it, every operation is
 * one frame: a 24-byte header, then @len payload bytes.
 */
#ifndef IBTRS_TCP_PROTO_H
#define IBTRS_TCP_PROTO_H

#include <stdint.h>

#include "xprt.h"

#define TCP_HELLO_MAGIC "IBTR"
#define TCP_HELLO_ACCEPT 0
#define TCP_HELLO_REJECT 1

/**
 * struct tcp_hello - first bytes in each direction (72 bytes)
 * @magic: "IBTR"
 * @status: client: 0; server: TCP_HELLO_ACCEPT or TCP_HELLO_REJECT
 * @priv: private data (conn_req from the client, conn_rsp from the server)
 */
struct tcp_hello {
	uint8_t magic[4];
	uint32_t status;
	uint8_t priv[IBTRS_XPRT_PRIV_LEN];
} __attribute__((packed));
_Static_assert(sizeof(struct tcp_hello) == 72, "tcp hello size");

enum tcp_op {
	TCP_OP_SEND = 1,      /* payload fills the next posted receive */
	TCP_OP_WRITE = 2,     /* payload goes to (rkey, raddr) */
	TCP_OP_WRITE_IMM = 3, /* as WRITE, then consumes a receive with imm */
};

/**
 * struct tcp_frame - header of one operation (24 bytes, little-endian)
 * @op: enum tcp_op
 * @flags: 0
 * @reserved: 0
 * @imm: immediate data (TCP_OP_WRITE_IMM)
 * @len: payload bytes that follow
 * @rkey: key of the target region (WRITE, WRITE_IMM with @len > 0)
 * @raddr: offset into the target region
 */
struct tcp_frame {
	uint8_t op;
	uint8_t flags;
	uint16_t reserved;
	uint32_t imm;
	uint32_t len;
	uint32_t rkey;
	uint64_t raddr;
} __attribute__((packed));
_Static_assert(sizeof(struct tcp_frame) == 24, "tcp frame size");

/* Largest payload of one frame. */
#define TCP_MAX_FRAME_LEN (64u << 20)

#endif /* IBTRS_TCP_PROTO_H */
