/* SPDX-License-Identifier: MIT */
/*
 * proto.h - the IBTRS wire format: messages, chunk trailers and immediates.
 *
 * Wire structs only; no in-memory state lives here. Every multi-byte field
 * is little-endian on the wire and every struct has a fixed size checked at
 * compile time. Encoders write a struct from host values, decoders check
 * length, magic, type and ranges before any field is used, and return
 * -EPROTO (or -EPROTONOSUPPORT for a version mismatch) on bad input.
 * docs/protocol.md describes the same format in prose.
 */
#ifndef IBTRS_PROTO_H
#define IBTRS_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IBTRS_MAGIC 0x1BBD
#define IBTRS_PROTO_VER_MAJOR 1
#define IBTRS_PROTO_VER_MINOR 1
#define IBTRS_PROTO_VER ((IBTRS_PROTO_VER_MAJOR << 8) | IBTRS_PROTO_VER_MINOR)

#define IBTRS_UUID_LEN 16
#define IBTRS_SESSNAME_LEN 256	   /* on the wire, NUL-padded */
#define IBTRS_MAX_CONS_PER_PATH 16 /* con 0 + at most 15 I/O cons */
#define IBTRS_MAX_INFO_DESCS 64
#define IBTRS_NONCE_LEN 16    /* conn_req and conn_rsp nonces */
#define IBTRS_AUTH_KEY_LEN 32 /* X25519 keys, HMAC-SHA-256 proofs */
#define IBTRS_AUTH_ID_MAX 128 /* identity bytes in AUTH_REQ */

/* Room after the data in each chunk: user message plus trailer. */
#define IBTRS_HDR_ROOM 4096u

/* Immediate data: type in bits 31..28, payload in bits 27..0. */
#define IBTRS_IMM_TYPE_SHIFT 28
#define IBTRS_IMM_PAYLOAD_BITS 28
#define IBTRS_IMM_PAYLOAD_MASK ((1u << IBTRS_IMM_PAYLOAD_BITS) - 1)
#define IBTRS_IMM_ERRNO_BITS 12
#define IBTRS_IMM_MAX_ERRNO ((1 << IBTRS_IMM_ERRNO_BITS) - 1) /* 4095 */
#define IBTRS_IMM_RSP_ID_BITS 16

enum ibtrs_imm_type {
	IBTRS_IMM_IO_REQ = 0, /* client->server: chunk id + trailer offset */
	IBTRS_IMM_IO_RSP = 1, /* server->client: chunk id + errno */
	IBTRS_IMM_HB = 8,     /* heartbeat, payload 0 */
	IBTRS_IMM_HB_ACK = 9, /* heartbeat answer, payload 0 */
	IBTRS_IMM_CLOSE = 10, /* client->server on con 0: session closed */
};

/* Two-sided control messages (SEND into a posted receive). */
enum ibtrs_msg_type {
	IBTRS_MSG_INFO_REQ = 1,
	IBTRS_MSG_INFO_RSP = 2,
	IBTRS_MSG_AUTH_REQ = 3, /* client->server, first message of a con */
	IBTRS_MSG_AUTH_RSP = 4, /* server->client, its answer */
};

/* Trailers a request writes into its chunk, after the user message. */
enum ibtrs_trailer_type {
	IBTRS_TRAILER_READ = 0x52,  /* 'R' */
	IBTRS_TRAILER_WRITE = 0x57, /* 'W' */
};

#define IBTRS_CONN_FIRST 0x01 /* conn_req.flags: may create a session */

/*
 * conn_req.caps, what the client does that a server may rely on. In a
 * byte that servers of before neither check nor read; unknown bits are
 * ignored. IBTRS_CAP_GEN_FROM_1: the client starts every tag at
 * generation 1 in every server session it joins (a session loss
 * included), so that a never used tag can be held to the window from 0.
 */
#define IBTRS_CAP_GEN_FROM_1 0x01
/*
 * IBTRS_CAP_AUTH: the client fills conn_req.nonce and answers the
 * server's nonce with AUTH_REQ (docs/protocol.md, "Authentication"). A
 * server of 1.1 refuses a client without it.
 */
#define IBTRS_CAP_AUTH 0x02

/*
 * conn_rsp.flags and auth_rsp.flags. IBTRS_RSP_AUTH (conn_rsp): the
 * server authenticates, conn_rsp.nonce is its nonce, and the connection
 * belongs to no session until AUTH_RSP. IBTRS_RSP_INCARNATION and
 * IBTRS_RSP_NEW_SESS (auth_rsp; in conn_rsp in protocol 1.0): @incarnation
 * is the random identity of the server session this connection joined,
 * new with every session the server creates, and whether this connection
 * created it.
 */
#define IBTRS_RSP_INCARNATION 0x01 /* @incarnation is valid */
#define IBTRS_RSP_NEW_SESS 0x02	   /* this connection created the session */
#define IBTRS_RSP_AUTH 0x04	   /* conn_rsp: AUTH_REQ expected */

/* auth_req.flags: which proofs the client gives. */
#define IBTRS_AUTH_PSK 0x01  /* @proof_psk, over the key of @identity */
#define IBTRS_AUTH_JOIN 0x02 /* @proof_sess, over the session's secret */

/*
 * Generation window (docs/protocol.md, "At most once"). A tag's next
 * request carries a generation at most this far ahead of the last one the
 * server saw on the tag (serial arithmetic, it wraps); a copy at most this
 * far behind is a stale one. Anything else is refused for that request
 * alone. Every tag of a new server session starts at generation 0: the
 * first request of a tag carries 1..IBTRS_GEN_WINDOW.
 */
#define IBTRS_GEN_WINDOW (1u << 16)

/**
 * struct ibtrs_msg_conn_req - first message of every connection (64 bytes)
 *
 * Carried as the private data of the backend's connect.
 */
struct ibtrs_msg_conn_req {
	uint16_t magic;
	uint16_t version;
	uint16_t cid;
	uint16_t cid_num;
	uint16_t recon_cnt;
	uint8_t flags;
	uint8_t caps; /* IBTRS_CAP_*, 0 from clients of before */
	uint32_t reserved1;
	uint8_t sess_uuid[IBTRS_UUID_LEN];
	uint8_t path_uuid[IBTRS_UUID_LEN];
	uint8_t nonce[IBTRS_NONCE_LEN]; /* Nc, with IBTRS_CAP_AUTH */
} __attribute__((packed));
_Static_assert(sizeof(struct ibtrs_msg_conn_req) == 64, "conn_req size");

/**
 * struct ibtrs_msg_conn_rsp - answer to conn_req (64 bytes)
 *
 * @err is 0 on accept, a positive errno on reject; the other fields are
 * only meaningful on accept. @flags: IBTRS_RSP_*; @incarnation: see
 * IBTRS_RSP_INCARNATION (0 from a server of 1.1); @nonce: Ns, with
 * IBTRS_RSP_AUTH.
 */
struct ibtrs_msg_conn_rsp {
	uint16_t magic;
	uint16_t version;
	uint16_t err;
	uint16_t queue_depth;
	uint32_t max_io_size;
	uint32_t chunk_size;
	uint32_t max_usr_msg;
	uint32_t flags;
	uint64_t incarnation;
	uint8_t nonce[IBTRS_NONCE_LEN];
	uint8_t reserved[16];
} __attribute__((packed));
_Static_assert(sizeof(struct ibtrs_msg_conn_rsp) == 64, "conn_rsp size");

/**
 * struct ibtrs_msg_auth_req - the client's proofs (SEND, 232 bytes)
 * @flags: IBTRS_AUTH_*
 * @id_len: bytes of @identity, 0 without a key; the rest is zero
 * @pub: the client's ephemeral X25519 public key
 * @proof_psk: with IBTRS_AUTH_PSK, else zero
 * @proof_sess: with IBTRS_AUTH_JOIN, else zero
 */
struct ibtrs_msg_auth_req {
	uint16_t type;
	uint8_t flags;
	uint8_t id_len;
	uint32_t reserved;
	char identity[IBTRS_AUTH_ID_MAX];
	uint8_t pub[IBTRS_AUTH_KEY_LEN];
	uint8_t proof_psk[IBTRS_AUTH_KEY_LEN];
	uint8_t proof_sess[IBTRS_AUTH_KEY_LEN];
} __attribute__((packed));
_Static_assert(sizeof(struct ibtrs_msg_auth_req) == 232, "auth_req size");

/**
 * struct ibtrs_msg_auth_rsp - the server's answer to AUTH_REQ (80 bytes)
 * @err: 0, or the positive errno of a refusal (the rest is then zero)
 * @flags: IBTRS_RSP_INCARNATION, IBTRS_RSP_NEW_SESS
 * @incarnation: the session's, never 0
 * @pub: with IBTRS_RSP_NEW_SESS, the server's ephemeral X25519 public key
 * @proof: the server's proof
 */
struct ibtrs_msg_auth_rsp {
	uint16_t type;
	uint16_t err;
	uint32_t flags;
	uint64_t incarnation;
	uint8_t pub[IBTRS_AUTH_KEY_LEN];
	uint8_t proof[IBTRS_AUTH_KEY_LEN];
} __attribute__((packed));
_Static_assert(sizeof(struct ibtrs_msg_auth_rsp) == 80, "auth_rsp size");

/** struct ibtrs_msg_info_req - session name, sent once per path on con 0 */
struct ibtrs_msg_info_req {
	uint16_t type;
	uint16_t reserved0;
	uint32_t reserved1;
	char sessname[IBTRS_SESSNAME_LEN];
} __attribute__((packed));
_Static_assert(sizeof(struct ibtrs_msg_info_req) == 264, "info_req size");

/** struct ibtrs_sg_desc - one registered memory region of the peer */
struct ibtrs_sg_desc {
	uint64_t addr;
	uint32_t key;
	uint32_t len;
} __attribute__((packed));
_Static_assert(sizeof(struct ibtrs_sg_desc) == 16, "sg_desc size");

/** struct ibtrs_msg_info_rsp - the chunk pool of the session */
struct ibtrs_msg_info_rsp {
	uint16_t type;
	uint16_t sg_cnt;
	uint32_t reserved;
	struct ibtrs_sg_desc desc[];
} __attribute__((packed));
_Static_assert(sizeof(struct ibtrs_msg_info_rsp) == 8, "info_rsp size");

#define IBTRS_INFO_RSP_MAX_LEN               \
	(sizeof(struct ibtrs_msg_info_rsp) + \
	 IBTRS_MAX_INFO_DESCS * sizeof(struct ibtrs_sg_desc))

/**
 * struct ibtrs_trailer - last bytes a request writes into its chunk
 * @type: IBTRS_TRAILER_READ or IBTRS_TRAILER_WRITE
 * @usr_len: bytes of user message just before the trailer
 * @gen: request generation of the tag (at-most-once bookkeeping)
 * @desc: READ only: where the server writes the answer
 *
 * Chunk layout, WRITE: [data][user message][trailer], written from offset 0.
 * READ: [room for data_len bytes][user message][trailer], written from
 * offset data_len. The immediate carries the trailer's offset, which is
 * data_len + usr_len.
 */
struct ibtrs_trailer {
	uint16_t type;
	uint16_t usr_len;
	uint32_t gen;
	struct ibtrs_sg_desc desc;
} __attribute__((packed));
_Static_assert(sizeof(struct ibtrs_trailer) == 24, "trailer size");

/* Largest user message that fits the header room with the trailer. */
_Static_assert(IBTRS_HDR_ROOM >= 1024 + sizeof(struct ibtrs_trailer),
	       "header room");

/* Host-order views used by the encoders and decoders. */
struct ibtrs_conn_req {
	uint16_t version;
	uint16_t cid;
	uint16_t cid_num;
	uint16_t recon_cnt;
	bool first_conn;
	uint8_t caps; /* IBTRS_CAP_* */
	uint8_t sess_uuid[IBTRS_UUID_LEN];
	uint8_t path_uuid[IBTRS_UUID_LEN];
	uint8_t nonce[IBTRS_NONCE_LEN];
};

struct ibtrs_conn_rsp {
	uint16_t version;
	uint16_t err;
	uint16_t queue_depth;
	uint32_t max_io_size;
	uint32_t chunk_size;
	uint32_t max_usr_msg;
	uint32_t flags;			/* IBTRS_RSP_* */
	uint64_t incarnation;		/* valid with IBTRS_RSP_INCARNATION */
	uint8_t nonce[IBTRS_NONCE_LEN]; /* valid with IBTRS_RSP_AUTH */
};

struct ibtrs_auth_req {
	uint8_t flags; /* IBTRS_AUTH_* */
	uint8_t id_len;
	char identity[IBTRS_AUTH_ID_MAX + 1]; /* NUL-terminated */
	uint8_t pub[IBTRS_AUTH_KEY_LEN];
	uint8_t proof_psk[IBTRS_AUTH_KEY_LEN];
	uint8_t proof_sess[IBTRS_AUTH_KEY_LEN];
};

struct ibtrs_auth_rsp {
	uint16_t err;
	uint32_t flags; /* IBTRS_RSP_INCARNATION, IBTRS_RSP_NEW_SESS */
	uint64_t incarnation;
	uint8_t pub[IBTRS_AUTH_KEY_LEN];
	uint8_t proof[IBTRS_AUTH_KEY_LEN];
};

/* Where @gen lies against @last, the tag's last generation (serial). */
enum ibtrs_gen_pos {
	IBTRS_GEN_SAME,	  /* a replay of the last request */
	IBTRS_GEN_NEXT,	  /* ahead within the window: a new request */
	IBTRS_GEN_STALE,  /* behind within the window: an old copy */
	IBTRS_GEN_OUTSIDE /* neither: refused */
};

static inline enum ibtrs_gen_pos ibtrs_gen_classify(uint32_t last, uint32_t gen)
{
	uint32_t ahead = gen - last, behind = last - gen;

	if (!ahead)
		return IBTRS_GEN_SAME;
	if (ahead <= IBTRS_GEN_WINDOW)
		return IBTRS_GEN_NEXT;
	if (behind <= IBTRS_GEN_WINDOW)
		return IBTRS_GEN_STALE;
	return IBTRS_GEN_OUTSIDE;
}

struct ibtrs_desc {
	uint64_t addr;
	uint32_t key;
	uint32_t len;
};

struct ibtrs_req_trailer {
	int dir; /* IBTRS_READ or IBTRS_WRITE */
	uint16_t usr_len;
	uint32_t gen;
	struct ibtrs_desc desc;
};

void ibtrs_conn_req_encode(struct ibtrs_msg_conn_req *m,
			   const struct ibtrs_conn_req *r);
int ibtrs_conn_req_decode(const void *buf, size_t len,
			  struct ibtrs_conn_req *r);
void ibtrs_conn_rsp_encode(struct ibtrs_msg_conn_rsp *m,
			   const struct ibtrs_conn_rsp *r);
int ibtrs_conn_rsp_decode(const void *buf, size_t len,
			  struct ibtrs_conn_rsp *r);

void ibtrs_auth_req_encode(struct ibtrs_msg_auth_req *m,
			   const struct ibtrs_auth_req *r);
/*
 * Exactly one AUTH_REQ: known flags only, reserved and padding zero, an
 * identity of printable bytes without ':' or spaces, present exactly when
 * IBTRS_AUTH_PSK is.
 */
int ibtrs_auth_req_decode(const void *buf, size_t len,
			  struct ibtrs_auth_req *r);
void ibtrs_auth_rsp_encode(struct ibtrs_msg_auth_rsp *m,
			   const struct ibtrs_auth_rsp *r);
/*
 * Exactly one AUTH_RSP. A refusal (@err set) carries nothing else; an
 * accept has IBTRS_RSP_INCARNATION, a non-zero incarnation and no unknown
 * flag.
 */
int ibtrs_auth_rsp_decode(const void *buf, size_t len,
			  struct ibtrs_auth_rsp *r);

void ibtrs_info_req_encode(struct ibtrs_msg_info_req *m, const char *name);
/* @name gets the NUL-terminated name; rejects empty names and '/'. */
int ibtrs_info_req_decode(const void *buf, size_t len,
			  char name[IBTRS_SESSNAME_LEN]);
/* Returns the encoded length. */
size_t ibtrs_info_rsp_encode(void *buf, const struct ibtrs_desc *desc,
			     unsigned int cnt);
/* Fills at most @max descriptors; returns their count or -EPROTO. */
int ibtrs_info_rsp_decode(const void *buf, size_t len, struct ibtrs_desc *desc,
			  unsigned int max);

void ibtrs_trailer_encode(struct ibtrs_trailer *m,
			  const struct ibtrs_req_trailer *t);
int ibtrs_trailer_decode(const void *buf, struct ibtrs_req_trailer *t);

/*
 * Immediate packing. A request carries {chunk id, trailer offset}: the chunk
 * id sits above @off_bits bits of offset, where off_bits is fixed per
 * session by ibtrs_imm_off_bits(). A response carries {errno, chunk id}:
 * errno (0..4095) in bits 27..16, chunk id in bits 15..0.
 */
static inline unsigned int ibtrs_bits_for(uint32_t max_value)
{
	unsigned int bits = 0;

	while (bits < 32 && (max_value >> bits))
		bits++;
	return bits;
}

/* Offset bits for a chunk size; -1 if @queue_depth does not fit beside. */
static inline int ibtrs_imm_off_bits(uint32_t queue_depth, uint32_t chunk_size)
{
	unsigned int off_bits = ibtrs_bits_for(chunk_size);
	unsigned int id_bits = ibtrs_bits_for(queue_depth - 1);

	if (!queue_depth || queue_depth > (1u << IBTRS_IMM_RSP_ID_BITS) ||
	    off_bits + id_bits > IBTRS_IMM_PAYLOAD_BITS)
		return -1;
	return (int)off_bits;
}

static inline uint32_t ibtrs_imm_type(uint32_t imm)
{
	return imm >> IBTRS_IMM_TYPE_SHIFT;
}

static inline uint32_t ibtrs_imm_req(uint32_t chunk, uint32_t off,
				     unsigned int off_bits)
{
	return (IBTRS_IMM_IO_REQ << IBTRS_IMM_TYPE_SHIFT) |
	       (chunk << off_bits) | off;
}

static inline void ibtrs_imm_req_unpack(uint32_t imm, unsigned int off_bits,
					uint32_t *chunk, uint32_t *off)
{
	uint32_t payload = imm & IBTRS_IMM_PAYLOAD_MASK;

	*chunk = payload >> off_bits;
	*off = payload & ((1u << off_bits) - 1);
}

/* @err is 0 or a negative errno; values beyond -4095 become -EIO. */
uint32_t ibtrs_imm_rsp(uint32_t chunk, int err);
void ibtrs_imm_rsp_unpack(uint32_t imm, uint32_t *chunk, int *err);

static inline uint32_t ibtrs_imm_hb(enum ibtrs_imm_type type)
{
	return (uint32_t)type << IBTRS_IMM_TYPE_SHIFT;
}

#endif /* IBTRS_PROTO_H */
