/* SPDX-License-Identifier: MIT */
/*
 * tcp_proto.h - framing of the tcp backend on the stream.
 *
 * A connection opens with a hello in each direction that carries the
 * 64-byte private data of connect and accept. With TLS, a TLS 1.3
 * handshake with a pre-shared key comes first, and the hello and every
 * frame after it travel inside TLS records; a server tells the two
 * apart by the first byte (0x16 opens a TLS handshake, 'I' a hello). After it,
 * every operation is one frame: a 24-byte header, then @len payload bytes.
 *
 * A sender that has several frames to send at once may put their headers
 * first: a TCP_OP_HDRS frame whose payload is the headers of the next N
 * frames (2 <= N <= TCP_MAX_HDRS), which then follow as their payloads
 * only, back to back, in that order. Knowing where the next payloads go
 * before they arrive, the receiver reads them straight into their
 * destinations instead of staging and copying them. A described header
 * is never TCP_OP_HDRS itself.
 */
#ifndef IBTRS_TCP_PROTO_H
#define IBTRS_TCP_PROTO_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

#include "xprt.h"

#define TCP_HELLO_MAGIC "IBTR"
#define TCP_HELLO_ACCEPT 0
#define TCP_HELLO_REJECT 1
/* A server requiring TLS to a plaintext client, in plaintext. */
#define TCP_HELLO_TLS_REQUIRED 2
/* A server without TLS to a TLS client, in plaintext. */
#define TCP_HELLO_NO_TLS 3

/**
 * struct tcp_hello - first bytes in each direction (72 bytes)
 * @magic: "IBTR"
 * @status: client: 0; server: TCP_HELLO_ACCEPT, TCP_HELLO_REJECT,
 *          TCP_HELLO_TLS_REQUIRED or TCP_HELLO_NO_TLS (both with @priv
 *          zero, then the server closes)
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
	TCP_OP_HDRS = 4,      /* headers of the next frames, see above */
};

/**
 * struct tcp_frame - header of one operation (24 bytes, little-endian)
 * @op: enum tcp_op
 * @flags: 0
 * @reserved: 0
 * @imm: immediate data (TCP_OP_WRITE_IMM); 0 for TCP_OP_HDRS
 * @len: payload bytes that follow; TCP_OP_HDRS: N * 24
 * @rkey: key of the target region (WRITE, WRITE_IMM with @len > 0); 0 for
 *        TCP_OP_HDRS
 * @raddr: offset into the target region; 0 for TCP_OP_HDRS
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

/* Most headers one TCP_OP_HDRS frame carries. */
#define TCP_MAX_HDRS 64

/* @wire, a header as it is on the stream, in host order into @f (may be
 * @wire itself). */
static inline void tcp_frame_decode(struct tcp_frame *f, const void *wire)
{
	struct tcp_frame w;

	memcpy(&w, wire, sizeof(w));
	f->op = w.op;
	f->flags = w.flags;
	f->reserved = le16toh(w.reserved);
	f->imm = le32toh(w.imm);
	f->len = le32toh(w.len);
	f->rkey = le32toh(w.rkey);
	f->raddr = le64toh(w.raddr);
}

#endif /* IBTRS_TCP_PROTO_H */
