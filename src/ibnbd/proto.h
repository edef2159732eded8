/* SPDX-License-Identifier: MIT */
/*
 * proto.h - the ibnbd wire format: messages carried in the user message of
 * an ibtrs request, and the replies placed in the request's data.
 *
 * Every field is little endian, every struct has a fixed size checked at
 * compile time, every reserved byte is sent as 0 and must be 0 on receive.
 * docs/ibnbd.md describes the protocol byte by byte; this header and that
 * document change together.
 *
 * Each message starts with struct ibnbd_msg_hdr: IBNBD_MAGIC, then the type.
 * The magic keeps ibnbd apart from other users of the same ibtrs server
 * (the tool's memory target reads its first 8 bytes as a byte offset below
 * 64 MiB, which IBNBD_MAGIC is not).
 *
 * Requests and their directions (ibtrs READ: the server fills the data;
 * ibtrs WRITE: the client sends data, possibly none):
 *   SESS_INFO    READ,  data = struct ibnbd_msg_sess_info_rsp
 *   OPEN         READ,  data = struct ibnbd_msg_open_rsp
 *   CLOSE        WRITE, no data
 *   IO READ      READ,  data = the blocks read
 *   IO WRITE     WRITE, data = the blocks to write
 *   IO FLUSH, DISCARD, WRITE_ZEROES   WRITE, no data
 * A request fails with the negative errno the ibtrs request completes with.
 */
#ifndef IBNBD_PROTO_H
#define IBNBD_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IBNBD_MAGIC 0x444e4249u /* "IBND" */
#define IBNBD_PROTO_VER_MAJOR 1
#define IBNBD_PROTO_VER_MINOR 0

/* Longest export name, without the terminating NUL. */
#define IBNBD_NAME_MAX 255

enum ibnbd_msg_type {
	IBNBD_MSG_SESS_INFO = 1,
	IBNBD_MSG_SESS_INFO_RSP = 2,
	IBNBD_MSG_OPEN = 3,
	IBNBD_MSG_OPEN_RSP = 4,
	IBNBD_MSG_CLOSE = 5,
	IBNBD_MSG_IO = 6,
};

/* Wire values of the access mode of OPEN (enum ibnbd_access_mode). */
enum {
	IBNBD_WIRE_ACCESS_RO = 0,
	IBNBD_WIRE_ACCESS_RW = 1,
	IBNBD_WIRE_ACCESS_MIGRATION = 2,
};

/* Wire values of the op of IO (enum ibnbd_op). */
enum {
	IBNBD_WIRE_OP_READ = 0,
	IBNBD_WIRE_OP_WRITE = 1,
	IBNBD_WIRE_OP_FLUSH = 2,
	IBNBD_WIRE_OP_DISCARD = 3,
	IBNBD_WIRE_OP_WRITE_ZEROES = 4,
};

/* Wire bits of the flags of IO (the IBNBD_F_* of ibnbd.h below bit 8). */
#define IBNBD_WIRE_F_FUA 0x1u
#define IBNBD_WIRE_F_PREFLUSH 0x2u
#define IBNBD_WIRE_F_NOUNMAP 0x4u
#define IBNBD_WIRE_F_MASK 0x7u

/* Wire bits of the flags of OPEN_RSP (the IBNBD_DEV_* of ibnbd.h). */
#define IBNBD_WIRE_DEV_READONLY 0x1u
#define IBNBD_WIRE_DEV_FUA 0x2u
#define IBNBD_WIRE_DEV_WRITE_CACHE 0x4u
#define IBNBD_WIRE_DEV_DISCARD 0x8u
#define IBNBD_WIRE_DEV_WRITE_ZEROES 0x10u
#define IBNBD_WIRE_DEV_MASK 0x1fu

/**
 * struct ibnbd_msg_hdr - first 8 bytes of every message
 * @magic: IBNBD_MAGIC
 * @type: enum ibnbd_msg_type
 * @reserved: 0
 */
struct ibnbd_msg_hdr {
	uint32_t magic;
	uint16_t type;
	uint16_t reserved;
};

/**
 * struct ibnbd_msg_sess_info - version exchange, the first request
 * @hdr: type IBNBD_MSG_SESS_INFO
 * @ver_major: IBNBD_PROTO_VER_MAJOR of the client
 * @ver_minor: IBNBD_PROTO_VER_MINOR of the client
 * @reserved: 0
 *
 * A server that does not speak @ver_major answers -EPROTONOSUPPORT.
 */
struct ibnbd_msg_sess_info {
	struct ibnbd_msg_hdr hdr;
	uint8_t ver_major;
	uint8_t ver_minor;
	uint8_t reserved[6];
};

/**
 * struct ibnbd_msg_sess_info_rsp - the server's answer to SESS_INFO
 * @hdr: type IBNBD_MSG_SESS_INFO_RSP
 * @ver_major: the server's major version (the client's)
 * @ver_minor: the lower of the two minor versions
 * @reserved: 0
 * @max_devices: devices one session may hold open at once
 */
struct ibnbd_msg_sess_info_rsp {
	struct ibnbd_msg_hdr hdr;
	uint8_t ver_major;
	uint8_t ver_minor;
	uint8_t reserved[2];
	uint32_t max_devices;
};

/**
 * struct ibnbd_msg_open - open an export
 * @hdr: type IBNBD_MSG_OPEN
 * @access_mode: IBNBD_WIRE_ACCESS_*
 * @reserved: 0
 * @name_len: bytes of @name used, 1..IBNBD_NAME_MAX
 * @reserved2: 0
 * @name: the export name, @name_len bytes, the rest 0; no '/', no NUL,
 *        not "." or ".."
 */
struct ibnbd_msg_open {
	struct ibnbd_msg_hdr hdr;
	uint8_t access_mode;
	uint8_t reserved;
	uint16_t name_len;
	uint8_t reserved2[4];
	char name[IBNBD_NAME_MAX + 1];
};

/**
 * struct ibnbd_msg_open_rsp - the device an OPEN opened
 * @hdr: type IBNBD_MSG_OPEN_RSP
 * @device_id: the id later requests of this session name the device by
 * @flags: IBNBD_WIRE_DEV_*
 * @size: bytes, a multiple of @logical_block_size
 * @logical_block_size: 512..65536, a power of two: offsets and lengths of
 *                      IO are multiples of it
 * @physical_block_size: a power of two >= @logical_block_size
 * @max_transfer: largest READ or WRITE, bytes, a multiple of
 *                @logical_block_size
 * @max_discard: largest DISCARD, bytes (0 without IBNBD_WIRE_DEV_DISCARD)
 * @max_write_zeroes: largest WRITE_ZEROES, bytes (0 without
 *                    IBNBD_WIRE_DEV_WRITE_ZEROES)
 * @discard_granularity: bytes, a multiple of @logical_block_size
 * @max_segments: largest number of data buffers of one request
 * @reserved: 0
 */
struct ibnbd_msg_open_rsp {
	struct ibnbd_msg_hdr hdr;
	uint32_t device_id;
	uint32_t flags;
	uint64_t size;
	uint32_t logical_block_size;
	uint32_t physical_block_size;
	uint32_t max_transfer;
	uint32_t max_discard;
	uint32_t max_write_zeroes;
	uint32_t discard_granularity;
	uint16_t max_segments;
	uint8_t reserved[14];
};

/**
 * struct ibnbd_msg_close - close a device
 * @hdr: type IBNBD_MSG_CLOSE
 * @device_id: from OPEN_RSP
 * @reserved: 0
 */
struct ibnbd_msg_close {
	struct ibnbd_msg_hdr hdr;
	uint32_t device_id;
	uint32_t reserved;
};

/**
 * struct ibnbd_msg_io - one block request
 * @hdr: type IBNBD_MSG_IO
 * @device_id: from OPEN_RSP
 * @op: IBNBD_WIRE_OP_*
 * @reserved: 0
 * @flags: IBNBD_WIRE_F_*
 * @offset: byte offset, a multiple of the logical block size (0 for FLUSH)
 * @len: bytes, a multiple of the logical block size; equal to the ibtrs
 *       data length for READ and WRITE, 0 for FLUSH
 * @reserved2: 0
 */
struct ibnbd_msg_io {
	struct ibnbd_msg_hdr hdr;
	uint32_t device_id;
	uint8_t op;
	uint8_t reserved;
	uint16_t flags;
	uint64_t offset;
	uint32_t len;
	uint32_t reserved2;
};

_Static_assert(sizeof(struct ibnbd_msg_hdr) == 8, "ibnbd_msg_hdr: 8 bytes");
_Static_assert(sizeof(struct ibnbd_msg_sess_info) == 16,
	       "ibnbd_msg_sess_info: 16 bytes");
_Static_assert(sizeof(struct ibnbd_msg_sess_info_rsp) == 16,
	       "ibnbd_msg_sess_info_rsp: 16 bytes");
_Static_assert(sizeof(struct ibnbd_msg_open) == 272,
	       "ibnbd_msg_open: 272 bytes");
_Static_assert(sizeof(struct ibnbd_msg_open_rsp) == 64,
	       "ibnbd_msg_open_rsp: 64 bytes");
_Static_assert(sizeof(struct ibnbd_msg_close) == 16,
	       "ibnbd_msg_close: 16 bytes");
_Static_assert(sizeof(struct ibnbd_msg_io) == 32, "ibnbd_msg_io: 32 bytes");

/*
 * In-memory forms, host byte order. The decoders below fill them only from
 * messages that passed every check; the encoders write the wire form.
 */

/**
 * struct ibnbd_req - a decoded request (client to server)
 * @type: IBNBD_MSG_SESS_INFO, _OPEN, _CLOSE or _IO
 * @ver_major, @ver_minor: SESS_INFO
 * @access_mode, @name (NUL-terminated): OPEN
 * @device_id: CLOSE and IO
 * @op, @flags, @offset, @len: IO
 */
struct ibnbd_req {
	uint16_t type;
	uint8_t ver_major;
	uint8_t ver_minor;
	uint8_t access_mode;
	char name[IBNBD_NAME_MAX + 1];
	uint32_t device_id;
	uint8_t op;
	uint16_t flags;
	uint64_t offset;
	uint32_t len;
};

/**
 * struct ibnbd_open_info - a decoded OPEN_RSP, host byte order
 *
 * The fields of struct ibnbd_msg_open_rsp without the header.
 */
struct ibnbd_open_info {
	uint32_t device_id;
	uint32_t flags;
	uint64_t size;
	uint32_t logical_block_size;
	uint32_t physical_block_size;
	uint32_t max_transfer;
	uint32_t max_discard;
	uint32_t max_write_zeroes;
	uint32_t discard_granularity;
	uint16_t max_segments;
};

/**
 * struct ibnbd_sess_info - a decoded SESS_INFO_RSP
 */
struct ibnbd_sess_info {
	uint8_t ver_major;
	uint8_t ver_minor;
	uint32_t max_devices;
};

bool ibnbd_is_msg(const void *buf, size_t len);
bool ibnbd_name_valid(const char *name, size_t len);

size_t ibnbd_enc_sess_info(void *buf, size_t len);
size_t ibnbd_enc_open(void *buf, size_t len, uint8_t access_mode,
		      const char *name);
size_t ibnbd_enc_close(void *buf, size_t len, uint32_t device_id);
size_t ibnbd_enc_io(void *buf, size_t len, uint32_t device_id, uint8_t op,
		    uint16_t flags, uint64_t offset, uint32_t io_len);
int ibnbd_dec_req(const void *buf, size_t len, struct ibnbd_req *req);

size_t ibnbd_enc_sess_info_rsp(void *buf, size_t len,
			       const struct ibnbd_sess_info *info);
int ibnbd_dec_sess_info_rsp(const void *buf, size_t len,
			    struct ibnbd_sess_info *info);
size_t ibnbd_enc_open_rsp(void *buf, size_t len,
			  const struct ibnbd_open_info *info);
int ibnbd_dec_open_rsp(const void *buf, size_t len,
		       struct ibnbd_open_info *info);

#endif /* IBNBD_PROTO_H */
