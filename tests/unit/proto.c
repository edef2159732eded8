// SPDX-License-Identifier: MIT
/*
 * proto.c - unit test of the wire format: encoders, decoders, byte layout
 * and immediate packing (src/proto.c and src/proto.h).
 */
#include <stddef.h>
#include <stdint.h>

#include "ibtrs.h"
#include "proto.h"
#include "test.h"

/**
 * get_le() - read a little-endian integer from a byte buffer
 * @buf: the buffer
 * @off: offset of the integer
 * @size: its size in bytes, 1..8
 *
 * Return: the value.
 */
static uint64_t get_le(const void *buf, size_t off, size_t size)
{
	const unsigned char *p = (const unsigned char *)buf + off;
	uint64_t v = 0;

	while (size--)
		v = (v << 8) | p[size];
	return v;
}

/**
 * put_le() - write a little-endian integer into a byte buffer
 * @buf: the buffer
 * @off: offset of the integer
 * @size: its size in bytes, 1..8
 * @v: the value
 */
static void put_le(void *buf, size_t off, size_t size, uint64_t v)
{
	unsigned char *p = (unsigned char *)buf + off;
	size_t i;

	for (i = 0; i < size; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

/**
 * all_zero() - whether @len bytes at @buf + @off are zero
 * @buf: the buffer
 * @off: first byte
 * @len: number of bytes
 *
 * Return: true if they are all zero.
 */
static int all_zero(const void *buf, size_t off, size_t len)
{
	const unsigned char *p = (const unsigned char *)buf + off;

	while (len--)
		if (*p++)
			return 0;
	return 1;
}

static void test_layout(void)
{
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_req, magic), 0);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_req, version), 2);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_req, cid), 4);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_req, cid_num), 6);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_req, recon_cnt), 8);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_req, flags), 10);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_req, sess_uuid), 16);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_req, path_uuid), 32);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_rsp, err), 4);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_rsp, queue_depth), 6);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_rsp, max_io_size), 8);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_rsp, chunk_size), 12);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_rsp, max_usr_msg), 16);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_rsp, flags), 20);
	CHECK_EQ(offsetof(struct ibtrs_msg_info_req, sessname), 8);
	CHECK_EQ(offsetof(struct ibtrs_msg_info_rsp, desc), 8);
	CHECK_EQ(offsetof(struct ibtrs_trailer, usr_len), 2);
	CHECK_EQ(offsetof(struct ibtrs_trailer, gen), 4);
	CHECK_EQ(offsetof(struct ibtrs_trailer, desc), 8);
	CHECK_EQ(IBTRS_INFO_RSP_MAX_LEN, 8 + 64 * 16);
	CHECK_EQ(IBTRS_PROTO_VER, 0x0101);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_req, nonce), 48);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_rsp, incarnation), 24);
	CHECK_EQ(offsetof(struct ibtrs_msg_conn_rsp, nonce), 32);
	CHECK_EQ(offsetof(struct ibtrs_msg_auth_req, flags), 2);
	CHECK_EQ(offsetof(struct ibtrs_msg_auth_req, id_len), 3);
	CHECK_EQ(offsetof(struct ibtrs_msg_auth_req, identity), 8);
	CHECK_EQ(offsetof(struct ibtrs_msg_auth_req, pub), 136);
	CHECK_EQ(offsetof(struct ibtrs_msg_auth_req, proof_psk), 168);
	CHECK_EQ(offsetof(struct ibtrs_msg_auth_req, proof_sess), 200);
	CHECK_EQ(offsetof(struct ibtrs_msg_auth_rsp, err), 2);
	CHECK_EQ(offsetof(struct ibtrs_msg_auth_rsp, flags), 4);
	CHECK_EQ(offsetof(struct ibtrs_msg_auth_rsp, incarnation), 8);
	CHECK_EQ(offsetof(struct ibtrs_msg_auth_rsp, pub), 16);
	CHECK_EQ(offsetof(struct ibtrs_msg_auth_rsp, proof), 48);
}

/**
 * conn_req_sample() - a valid conn_req in host order
 * @r: filled
 */
static void conn_req_sample(struct ibtrs_conn_req *r)
{
	int i;

	memset(r, 0, sizeof(*r));
	r->version = IBTRS_PROTO_VER;
	r->cid = 3;
	r->cid_num = 4;
	r->recon_cnt = 0x1234;
	r->first_conn = true;
	r->caps = IBTRS_CAP_GEN_FROM_1 | IBTRS_CAP_AUTH;
	for (i = 0; i < IBTRS_UUID_LEN; i++) {
		r->sess_uuid[i] = (uint8_t)(0x10 + i);
		r->path_uuid[i] = (uint8_t)(0xf0 - i);
		r->nonce[i] = (uint8_t)(0x80 + i);
	}
}

static void test_conn_req(void)
{
	struct ibtrs_msg_conn_req m;
	struct ibtrs_conn_req r, d;
	unsigned char buf[sizeof(m) + 16];
	const unsigned char *b = (const unsigned char *)&m;
	size_t len;

	/* Round trip, first connection and not. */
	conn_req_sample(&r);
	ibtrs_conn_req_encode(&m, &r);
	memset(&d, 0xa5, sizeof(d));
	CHECK_EQ(ibtrs_conn_req_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(d.version, r.version);
	CHECK_EQ(d.cid, 3);
	CHECK_EQ(d.cid_num, 4);
	CHECK_EQ(d.recon_cnt, 0x1234);
	CHECK(d.first_conn);
	CHECK(!memcmp(d.sess_uuid, r.sess_uuid, IBTRS_UUID_LEN));
	CHECK(!memcmp(d.path_uuid, r.path_uuid, IBTRS_UUID_LEN));
	CHECK(!memcmp(d.nonce, r.nonce, IBTRS_NONCE_LEN));
	CHECK_EQ(d.caps, IBTRS_CAP_GEN_FROM_1 | IBTRS_CAP_AUTH);

	r.first_conn = false;
	r.cid = 0;
	r.cid_num = 1;
	ibtrs_conn_req_encode(&m, &r);
	CHECK_EQ(ibtrs_conn_req_decode(&m, sizeof(m), &d), 0);
	CHECK(!d.first_conn);
	CHECK_EQ(d.cid, 0);
	CHECK_EQ(d.cid_num, 1);
	CHECK_EQ(b[10], 0);

	/* Byte layout, little-endian. */
	conn_req_sample(&r);
	ibtrs_conn_req_encode(&m, &r);
	CHECK_EQ(b[0], 0xBD);
	CHECK_EQ(b[1], 0x1B);
	CHECK_EQ(b[2], 0x01); /* minor */
	CHECK_EQ(b[3], 0x01); /* major */
	CHECK_EQ(b[4], 3);
	CHECK_EQ(b[5], 0);
	CHECK_EQ(get_le(b, 6, 2), 4);
	CHECK_EQ(b[8], 0x34);
	CHECK_EQ(b[9], 0x12);
	CHECK_EQ(b[10], IBTRS_CONN_FIRST);
	CHECK_EQ(b[11], IBTRS_CAP_GEN_FROM_1 | IBTRS_CAP_AUTH);
	CHECK(all_zero(b, 12, 4));
	CHECK(!memcmp(b + 16, r.sess_uuid, IBTRS_UUID_LEN));
	CHECK(!memcmp(b + 32, r.path_uuid, IBTRS_UUID_LEN));
	CHECK(!memcmp(b + 48, r.nonce, IBTRS_NONCE_LEN));

	/* Decoding from an unaligned buffer, with trailing bytes. */
	memset(buf, 0, sizeof(buf));
	memcpy(buf + 1, &m, sizeof(m));
	CHECK_EQ(ibtrs_conn_req_decode(buf + 1, sizeof(m), &d), 0);
	CHECK_EQ(d.recon_cnt, 0x1234);

	/* Truncated. */
	for (len = 0; len < sizeof(m); len++)
		CHECK_EQ(ibtrs_conn_req_decode(&m, len, &d), -EPROTO);
	CHECK_EQ(ibtrs_conn_req_decode(NULL, sizeof(m), &d), -EPROTO);

	/* Wrong magic. */
	memcpy(buf, &m, sizeof(m));
	buf[0] = 0x1B;
	buf[1] = 0xBD;
	CHECK_EQ(ibtrs_conn_req_decode(buf, sizeof(m), &d), -EPROTO);
	put_le(buf, 0, 2, 0);
	CHECK_EQ(ibtrs_conn_req_decode(buf, sizeof(m), &d), -EPROTO);
	put_le(buf, 0, 2, IBTRS_MAGIC + 1);
	CHECK_EQ(ibtrs_conn_req_decode(buf, sizeof(m), &d), -EPROTO);

	/* Versions: another major is refused, another minor is fine. */
	memcpy(buf, &m, sizeof(m));
	put_le(buf, 2, 2, 0x0200);
	CHECK_EQ(ibtrs_conn_req_decode(buf, sizeof(m), &d), -EPROTONOSUPPORT);
	put_le(buf, 2, 2, 0x0000);
	CHECK_EQ(ibtrs_conn_req_decode(buf, sizeof(m), &d), -EPROTONOSUPPORT);
	put_le(buf, 2, 2, 0xff01);
	CHECK_EQ(ibtrs_conn_req_decode(buf, sizeof(m), &d), -EPROTONOSUPPORT);
	put_le(buf, 2, 2, 0x0001); /* byte-swapped 1.0 */
	CHECK_EQ(ibtrs_conn_req_decode(buf, sizeof(m), &d), -EPROTONOSUPPORT);
	put_le(buf, 2, 2, 0x0107);
	CHECK_EQ(ibtrs_conn_req_decode(buf, sizeof(m), &d), 0);
	CHECK_EQ(d.version, 0x0107);
	put_le(buf, 2, 2, 0x01ff);
	CHECK_EQ(ibtrs_conn_req_decode(buf, sizeof(m), &d), 0);
	CHECK_EQ(d.version, 0x01ff);

	/* Connection ids. */
	conn_req_sample(&r);
	r.cid = 4;
	r.cid_num = 4;
	ibtrs_conn_req_encode(&m, &r);
	CHECK_EQ(ibtrs_conn_req_decode(&m, sizeof(m), &d), -EPROTO);
	r.cid = 0xffff;
	ibtrs_conn_req_encode(&m, &r);
	CHECK_EQ(ibtrs_conn_req_decode(&m, sizeof(m), &d), -EPROTO);
	r.cid = 0;
	r.cid_num = 0;
	ibtrs_conn_req_encode(&m, &r);
	CHECK_EQ(ibtrs_conn_req_decode(&m, sizeof(m), &d), -EPROTO);
	r.cid_num = IBTRS_MAX_CONS_PER_PATH + 1;
	ibtrs_conn_req_encode(&m, &r);
	CHECK_EQ(ibtrs_conn_req_decode(&m, sizeof(m), &d), -EPROTO);
	r.cid_num = 0xffff;
	ibtrs_conn_req_encode(&m, &r);
	CHECK_EQ(ibtrs_conn_req_decode(&m, sizeof(m), &d), -EPROTO);
	r.cid = IBTRS_MAX_CONS_PER_PATH - 1;
	r.cid_num = IBTRS_MAX_CONS_PER_PATH;
	ibtrs_conn_req_encode(&m, &r);
	CHECK_EQ(ibtrs_conn_req_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(d.cid, IBTRS_MAX_CONS_PER_PATH - 1);
	CHECK_EQ(d.cid_num, IBTRS_MAX_CONS_PER_PATH);

	/* Unknown flags. */
	conn_req_sample(&r);
	ibtrs_conn_req_encode(&m, &r);
	memcpy(buf, &m, sizeof(m));
	buf[10] = 0x02;
	CHECK_EQ(ibtrs_conn_req_decode(buf, sizeof(m), &d), -EPROTO);
	buf[10] = 0x80;
	CHECK_EQ(ibtrs_conn_req_decode(buf, sizeof(m), &d), -EPROTO);
	buf[10] = IBTRS_CONN_FIRST | 0x04;
	CHECK_EQ(ibtrs_conn_req_decode(buf, sizeof(m), &d), -EPROTO);
	buf[10] = 0;
	CHECK_EQ(ibtrs_conn_req_decode(buf, sizeof(m), &d), 0);
	CHECK(!d.first_conn);
}

/**
 * conn_rsp_sample() - a valid conn_rsp in host order
 * @r: filled
 */
static void conn_rsp_sample(struct ibtrs_conn_rsp *r)
{
	memset(r, 0, sizeof(*r));
	r->version = IBTRS_PROTO_VER;
	r->err = 0;
	r->queue_depth = 128;
	r->max_io_size = 128 * 1024;
	r->chunk_size = 128 * 1024 + IBTRS_HDR_ROOM;
	r->max_usr_msg = IBTRS_MAX_USR_MSG;
}

/**
 * rsp_geometry() - decode a conn_rsp with the given geometry
 * @qd: queue depth
 * @max_io: max_io_size
 * @chunk: chunk_size
 * @usr: max_usr_msg
 *
 * Return: the result of ibtrs_conn_rsp_decode().
 */
static int rsp_geometry(uint16_t qd, uint32_t max_io, uint32_t chunk,
			uint32_t usr)
{
	struct ibtrs_msg_conn_rsp m;
	struct ibtrs_conn_rsp r, d;

	conn_rsp_sample(&r);
	r.queue_depth = qd;
	r.max_io_size = max_io;
	r.chunk_size = chunk;
	r.max_usr_msg = usr;
	ibtrs_conn_rsp_encode(&m, &r);
	return ibtrs_conn_rsp_decode(&m, sizeof(m), &d);
}

static void test_conn_rsp(void)
{
	struct ibtrs_msg_conn_rsp m;
	struct ibtrs_conn_rsp r, d;
	unsigned char buf[sizeof(m)];
	const unsigned char *b = (const unsigned char *)&m;
	size_t len;

	/* Round trip. */
	conn_rsp_sample(&r);
	ibtrs_conn_rsp_encode(&m, &r);
	memset(&d, 0xa5, sizeof(d));
	CHECK_EQ(ibtrs_conn_rsp_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(d.version, IBTRS_PROTO_VER);
	CHECK_EQ(d.err, 0);
	CHECK_EQ(d.queue_depth, 128);
	CHECK_EQ(d.max_io_size, 128 * 1024);
	CHECK_EQ(d.chunk_size, 128 * 1024 + IBTRS_HDR_ROOM);
	CHECK_EQ(d.max_usr_msg, IBTRS_MAX_USR_MSG);

	/* Byte layout. */
	CHECK_EQ(b[0], 0xBD);
	CHECK_EQ(b[1], 0x1B);
	CHECK_EQ(get_le(b, 2, 2), IBTRS_PROTO_VER);
	CHECK_EQ(get_le(b, 4, 2), 0);
	CHECK_EQ(b[6], 128);
	CHECK_EQ(b[7], 0);
	CHECK_EQ(get_le(b, 8, 4), 128 * 1024);
	CHECK_EQ(b[8], 0x00);
	CHECK_EQ(b[9], 0x00);
	CHECK_EQ(b[10], 0x02);
	CHECK_EQ(b[11], 0x00);
	CHECK_EQ(get_le(b, 12, 4), 128 * 1024 + IBTRS_HDR_ROOM);
	CHECK_EQ(get_le(b, 16, 4), IBTRS_MAX_USR_MSG);
	CHECK(all_zero(b, 20, 44));

	/* The server's nonce, vouched for by IBTRS_RSP_AUTH only. */
	conn_rsp_sample(&r);
	r.flags = IBTRS_RSP_AUTH;
	memset(r.nonce, 0x5c, sizeof(r.nonce));
	ibtrs_conn_rsp_encode(&m, &r);
	CHECK_EQ(get_le(b, 20, 4), IBTRS_RSP_AUTH);
	CHECK(!memcmp(b + 32, r.nonce, IBTRS_NONCE_LEN));
	CHECK(all_zero(b, 48, 16));
	memset(&d, 0xa5, sizeof(d));
	CHECK_EQ(ibtrs_conn_rsp_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(d.flags, IBTRS_RSP_AUTH);
	CHECK(!memcmp(d.nonce, r.nonce, IBTRS_NONCE_LEN));
	put_le(&m, 20, 4, 0);
	CHECK_EQ(ibtrs_conn_rsp_decode(&m, sizeof(m), &d), 0);
	CHECK(all_zero(d.nonce, 0, IBTRS_NONCE_LEN));

	/* A reject carries only the error; geometry is not checked. */
	memset(&r, 0, sizeof(r));
	r.version = IBTRS_PROTO_VER;
	r.err = ECONNREFUSED;
	ibtrs_conn_rsp_encode(&m, &r);
	CHECK_EQ(get_le(b, 4, 2), ECONNREFUSED);
	CHECK_EQ(ibtrs_conn_rsp_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(d.err, ECONNREFUSED);

	/* Truncated, wrong magic, versions. */
	conn_rsp_sample(&r);
	ibtrs_conn_rsp_encode(&m, &r);
	for (len = 0; len < sizeof(m); len++)
		CHECK_EQ(ibtrs_conn_rsp_decode(&m, len, &d), -EPROTO);
	CHECK_EQ(ibtrs_conn_rsp_decode(NULL, sizeof(m), &d), -EPROTO);
	memcpy(buf, &m, sizeof(m));
	buf[1] = 0x1C;
	CHECK_EQ(ibtrs_conn_rsp_decode(buf, sizeof(m), &d), -EPROTO);
	memcpy(buf, &m, sizeof(m));
	put_le(buf, 2, 2, 0x0200);
	CHECK_EQ(ibtrs_conn_rsp_decode(buf, sizeof(m), &d), -EPROTONOSUPPORT);
	put_le(buf, 2, 2, 0x0101);
	CHECK_EQ(ibtrs_conn_rsp_decode(buf, sizeof(m), &d), 0);
	CHECK_EQ(d.version, 0x0101);

	/* Geometry. */
	CHECK_EQ(rsp_geometry(1, 1, 1 + IBTRS_HDR_ROOM, 0), 0);
	CHECK_EQ(rsp_geometry(IBTRS_MAX_QUEUE_DEPTH, 65535 - IBTRS_HDR_ROOM,
			      65535, IBTRS_MAX_USR_MSG),
		 0);
	CHECK_EQ(rsp_geometry(0, 4096, 4096 + IBTRS_HDR_ROOM, 1024), -EPROTO);
	CHECK_EQ(rsp_geometry(IBTRS_MAX_QUEUE_DEPTH + 1, 4096,
			      4096 + IBTRS_HDR_ROOM, 1024),
		 -EPROTO);
	CHECK_EQ(rsp_geometry(0xffff, 4096, 4096 + IBTRS_HDR_ROOM, 1024),
		 -EPROTO);
	CHECK_EQ(rsp_geometry(128, 0, IBTRS_HDR_ROOM, 1024), -EPROTO);
	CHECK_EQ(rsp_geometry(128, 8192, 4096, 1024), -EPROTO);
	CHECK_EQ(rsp_geometry(128, 8192, 8192, 1024), -EPROTO);
	CHECK_EQ(rsp_geometry(128, 8192, 8192 + IBTRS_HDR_ROOM - 1, 1024),
		 -EPROTO);
	CHECK_EQ(rsp_geometry(128, 0xffffffffu, 0xffffffffu, 1024), -EPROTO);
	CHECK_EQ(rsp_geometry(128, 8192, 8192 + IBTRS_HDR_ROOM,
			      IBTRS_HDR_ROOM + 1),
		 -EPROTO);
	CHECK_EQ(rsp_geometry(128, 8192, 8192 + IBTRS_HDR_ROOM, 0xffffffffu),
		 -EPROTO);
	/* Offsets and chunk ids do not fit 28 bits together. */
	CHECK_EQ(rsp_geometry(IBTRS_MAX_QUEUE_DEPTH, 65536 - IBTRS_HDR_ROOM,
			      65536, 1024),
		 -EPROTO);
	CHECK_EQ(rsp_geometry(128, 1u << 24, (1u << 24) + IBTRS_HDR_ROOM, 1024),
		 -EPROTO);
}

static void auth_req_sample(struct ibtrs_auth_req *r)
{
	int i;

	memset(r, 0, sizeof(*r));
	r->flags = IBTRS_AUTH_PSK | IBTRS_AUTH_JOIN;
	strcpy(r->identity, "client-7");
	r->id_len = 8;
	for (i = 0; i < IBTRS_AUTH_KEY_LEN; i++) {
		r->pub[i] = (uint8_t)(1 + i);
		r->proof_psk[i] = (uint8_t)(0x40 + i);
		r->proof_sess[i] = (uint8_t)(0x80 + i);
	}
}

static void test_auth_req(void)
{
	struct ibtrs_msg_auth_req m;
	struct ibtrs_auth_req r, d;
	unsigned char buf[sizeof(m) + 1];
	const unsigned char *b = (const unsigned char *)&m;
	size_t len;

	/* Round trip and layout. */
	auth_req_sample(&r);
	ibtrs_auth_req_encode(&m, &r);
	CHECK_EQ(get_le(b, 0, 2), IBTRS_MSG_AUTH_REQ);
	CHECK_EQ(b[2], IBTRS_AUTH_PSK | IBTRS_AUTH_JOIN);
	CHECK_EQ(b[3], 8);
	CHECK(all_zero(b, 4, 4));
	CHECK(!memcmp(b + 8, "client-7", 8));
	CHECK(all_zero(b, 16, 120));
	CHECK(!memcmp(b + 136, r.pub, 32));
	CHECK(!memcmp(b + 168, r.proof_psk, 32));
	CHECK(!memcmp(b + 200, r.proof_sess, 32));
	memset(&d, 0xa5, sizeof(d));
	CHECK_EQ(ibtrs_auth_req_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(d.flags, r.flags);
	CHECK_EQ(d.id_len, 8);
	CHECK(!strcmp(d.identity, "client-7"));
	CHECK(!memcmp(d.pub, r.pub, 32));
	CHECK(!memcmp(d.proof_psk, r.proof_psk, 32));
	CHECK(!memcmp(d.proof_sess, r.proof_sess, 32));

	/* Without a key: no identity, no proof of one; proofs not flagged
	 * are not sent. */
	auth_req_sample(&r);
	r.flags = 0;
	r.id_len = 0;
	ibtrs_auth_req_encode(&m, &r);
	CHECK(all_zero(b, 8, 128));
	CHECK(all_zero(b, 168, 64));
	CHECK_EQ(ibtrs_auth_req_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(d.identity[0], '\0');
	r.flags = IBTRS_AUTH_JOIN;
	ibtrs_auth_req_encode(&m, &r);
	CHECK_EQ(ibtrs_auth_req_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(d.flags, IBTRS_AUTH_JOIN);

	/* The longest identity. */
	auth_req_sample(&r);
	memset(r.identity, 'x', IBTRS_AUTH_ID_MAX);
	r.identity[IBTRS_AUTH_ID_MAX] = '\0';
	r.id_len = IBTRS_AUTH_ID_MAX;
	ibtrs_auth_req_encode(&m, &r);
	CHECK_EQ(ibtrs_auth_req_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(strlen(d.identity), IBTRS_AUTH_ID_MAX);

	/* Lengths: exactly one message. */
	auth_req_sample(&r);
	ibtrs_auth_req_encode(&m, &r);
	for (len = 0; len < sizeof(m); len++)
		CHECK_EQ(ibtrs_auth_req_decode(&m, len, &d), -EPROTO);
	memcpy(buf, &m, sizeof(m));
	CHECK_EQ(ibtrs_auth_req_decode(buf, sizeof(m) + 1, &d), -EPROTO);
	CHECK_EQ(ibtrs_auth_req_decode(NULL, sizeof(m), &d), -EPROTO);

	/* Bad values, one at a time. */
#define BAD_REQ(stmt)                                                         \
	do {                                                                  \
		memcpy(buf, &m, sizeof(m));                                   \
		stmt;                                                         \
		CHECK_EQ(ibtrs_auth_req_decode(buf, sizeof(m), &d), -EPROTO); \
	} while (0)
	BAD_REQ(put_le(buf, 0, 2, IBTRS_MSG_AUTH_RSP));
	BAD_REQ(put_le(buf, 0, 2, IBTRS_MSG_INFO_REQ));
	BAD_REQ(buf[2] |= 0x04);
	BAD_REQ(buf[2] = 0x80);
	BAD_REQ(buf[4] = 1);
	BAD_REQ(buf[7] = 1);
	BAD_REQ(buf[3] = IBTRS_AUTH_ID_MAX + 1);
	BAD_REQ(buf[3] = 0xff);
	BAD_REQ(buf[3] = 0);		   /* PSK without identity */
	BAD_REQ(buf[2] = IBTRS_AUTH_JOIN); /* identity without PSK */
	BAD_REQ(buf[3] = 7);		   /* padding not zero */
	BAD_REQ(buf[8 + 100] = 'y');	   /* padding not zero */
	BAD_REQ(buf[8 + 2] = ':');	   /* the file's separator */
	BAD_REQ(buf[8 + 2] = ' ');
	BAD_REQ(buf[8 + 2] = '\0');
	BAD_REQ(buf[8 + 2] = 0x7f);
	BAD_REQ(buf[8 + 2] = (char)0xc3);
#undef BAD_REQ
	/* A proof not flagged must be zero. */
	auth_req_sample(&r);
	r.flags = IBTRS_AUTH_PSK;
	ibtrs_auth_req_encode(&m, &r);
	memcpy(buf, &m, sizeof(m));
	buf[200] = 1;
	CHECK_EQ(ibtrs_auth_req_decode(buf, sizeof(m), &d), -EPROTO);
	r.flags = 0;
	r.id_len = 0;
	ibtrs_auth_req_encode(&m, &r);
	memcpy(buf, &m, sizeof(m));
	buf[168] = 1;
	CHECK_EQ(ibtrs_auth_req_decode(buf, sizeof(m), &d), -EPROTO);
}

static void test_auth_rsp(void)
{
	struct ibtrs_msg_auth_rsp m;
	struct ibtrs_auth_rsp r, d;
	unsigned char buf[sizeof(m) + 1];
	const unsigned char *b = (const unsigned char *)&m;
	size_t len;
	int i;

	memset(&r, 0, sizeof(r));
	r.flags = IBTRS_RSP_INCARNATION | IBTRS_RSP_NEW_SESS;
	r.incarnation = 0x1122334455667788ull;
	for (i = 0; i < IBTRS_AUTH_KEY_LEN; i++) {
		r.pub[i] = (uint8_t)(i + 1);
		r.proof[i] = (uint8_t)(0xa0 + i);
	}
	ibtrs_auth_rsp_encode(&m, &r);
	CHECK_EQ(get_le(b, 0, 2), IBTRS_MSG_AUTH_RSP);
	CHECK_EQ(get_le(b, 2, 2), 0);
	CHECK_EQ(get_le(b, 4, 4), IBTRS_RSP_INCARNATION | IBTRS_RSP_NEW_SESS);
	CHECK_EQ(get_le(b, 8, 8), 0x1122334455667788ull);
	CHECK(!memcmp(b + 16, r.pub, 32));
	CHECK(!memcmp(b + 48, r.proof, 32));
	memset(&d, 0xa5, sizeof(d));
	CHECK_EQ(ibtrs_auth_rsp_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(d.err, 0);
	CHECK_EQ(d.flags, r.flags);
	CHECK_EQ(d.incarnation, r.incarnation);
	CHECK(!memcmp(d.pub, r.pub, 32));
	CHECK(!memcmp(d.proof, r.proof, 32));

	/* A join sends no public key. */
	r.flags = IBTRS_RSP_INCARNATION;
	ibtrs_auth_rsp_encode(&m, &r);
	CHECK(all_zero(b, 16, 32));
	CHECK_EQ(ibtrs_auth_rsp_decode(&m, sizeof(m), &d), 0);

	/* A refusal carries only its error. */
	r.err = EACCES;
	ibtrs_auth_rsp_encode(&m, &r);
	CHECK_EQ(get_le(b, 2, 2), EACCES);
	CHECK(all_zero(b, 4, sizeof(m) - 4));
	CHECK_EQ(ibtrs_auth_rsp_decode(&m, sizeof(m), &d), 0);
	CHECK_EQ(d.err, EACCES);
	CHECK_EQ(d.flags, 0);

	/* Lengths. */
	r.err = 0;
	ibtrs_auth_rsp_encode(&m, &r);
	for (len = 0; len < sizeof(m); len++)
		CHECK_EQ(ibtrs_auth_rsp_decode(&m, len, &d), -EPROTO);
	memcpy(buf, &m, sizeof(m));
	CHECK_EQ(ibtrs_auth_rsp_decode(buf, sizeof(m) + 1, &d), -EPROTO);
	CHECK_EQ(ibtrs_auth_rsp_decode(NULL, sizeof(m), &d), -EPROTO);

	/* Bad values. */
#define BAD_RSP(stmt)                                                         \
	do {                                                                  \
		memcpy(buf, &m, sizeof(m));                                   \
		stmt;                                                         \
		CHECK_EQ(ibtrs_auth_rsp_decode(buf, sizeof(m), &d), -EPROTO); \
	} while (0)
	BAD_RSP(put_le(buf, 0, 2, IBTRS_MSG_AUTH_REQ));
	BAD_RSP(put_le(buf, 0, 2, IBTRS_MSG_INFO_RSP));
	BAD_RSP(put_le(buf, 4, 4, 0)); /* no incarnation */
	BAD_RSP(put_le(buf, 4, 4, IBTRS_RSP_NEW_SESS));
	BAD_RSP(put_le(buf, 4, 4, IBTRS_RSP_INCARNATION | IBTRS_RSP_AUTH));
	BAD_RSP(put_le(buf, 4, 4, IBTRS_RSP_INCARNATION | 0x80000000u));
	BAD_RSP(put_le(buf, 8, 8, 0)); /* incarnation 0 */
	BAD_RSP(buf[16] = 1);	       /* key of no session */
#undef BAD_RSP
}

static void test_info_req(void)
{
	struct ibtrs_msg_info_req m;
	char name[IBTRS_SESSNAME_LEN];
	char longname[IBTRS_SESSNAME_LEN];
	unsigned char buf[sizeof(m) + 8];
	const unsigned char *b = (const unsigned char *)&m;

	/* Round trip and layout. */
	ibtrs_info_req_encode(&m, "sess-1");
	CHECK_EQ(get_le(b, 0, 2), IBTRS_MSG_INFO_REQ);
	CHECK_EQ(b[0], 1);
	CHECK_EQ(b[1], 0);
	CHECK(all_zero(b, 2, 6));
	CHECK(!memcmp(b + 8, "sess-1", 7));
	CHECK(all_zero(b, 8 + 6, IBTRS_SESSNAME_LEN - 6));
	memset(name, 'x', sizeof(name));
	CHECK_EQ(ibtrs_info_req_decode(&m, sizeof(m), name), 0);
	CHECK(!strcmp(name, "sess-1"));

	/* The longest name: 255 bytes. */
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ibtrs_info_req_encode(&m, longname);
	CHECK_EQ(ibtrs_info_req_decode(&m, sizeof(m), name), 0);
	CHECK_EQ(strlen(name), IBTRS_SESSNAME_LEN - 1);
	CHECK(!strcmp(name, longname));

	/* A name of one byte, unaligned buffer. */
	ibtrs_info_req_encode(&m, "a");
	memcpy(buf + 1, &m, sizeof(m));
	CHECK_EQ(ibtrs_info_req_decode(buf + 1, sizeof(m), name), 0);
	CHECK(!strcmp(name, "a"));

	/* Wrong length and type. */
	ibtrs_info_req_encode(&m, "sess");
	CHECK_EQ(ibtrs_info_req_decode(&m, 0, name), -EPROTO);
	CHECK_EQ(ibtrs_info_req_decode(&m, 8, name), -EPROTO);
	CHECK_EQ(ibtrs_info_req_decode(&m, sizeof(m) - 1, name), -EPROTO);
	memcpy(buf, &m, sizeof(m));
	buf[sizeof(m)] = 0;
	CHECK_EQ(ibtrs_info_req_decode(buf, sizeof(m) + 1, name), -EPROTO);
	put_le(buf, 0, 2, IBTRS_MSG_INFO_RSP);
	CHECK_EQ(ibtrs_info_req_decode(buf, sizeof(m), name), -EPROTO);
	put_le(buf, 0, 2, 0x0100);
	CHECK_EQ(ibtrs_info_req_decode(buf, sizeof(m), name), -EPROTO);

	/* Bad names. */
	ibtrs_info_req_encode(&m, "");
	CHECK_EQ(ibtrs_info_req_decode(&m, sizeof(m), name), -EPROTO);
	ibtrs_info_req_encode(&m, "a/b");
	CHECK_EQ(ibtrs_info_req_decode(&m, sizeof(m), name), -EPROTO);
	ibtrs_info_req_encode(&m, "/");
	CHECK_EQ(ibtrs_info_req_decode(&m, sizeof(m), name), -EPROTO);
	ibtrs_info_req_encode(&m, "name/");
	CHECK_EQ(ibtrs_info_req_decode(&m, sizeof(m), name), -EPROTO);
	ibtrs_info_req_encode(&m, "sess");
	memset(m.sessname, 'z', sizeof(m.sessname)); /* no NUL */
	CHECK_EQ(ibtrs_info_req_decode(&m, sizeof(m), name), -EPROTO);

	/* A '/' after the terminating NUL is not part of the name. */
	ibtrs_info_req_encode(&m, "ok");
	m.sessname[10] = '/';
	CHECK_EQ(ibtrs_info_req_decode(&m, sizeof(m), name), 0);
	CHECK(!strcmp(name, "ok"));
}

static void test_info_rsp(void)
{
	static unsigned char buf[IBTRS_INFO_RSP_MAX_LEN + 64];
	struct ibtrs_desc in[IBTRS_MAX_INFO_DESCS + 1];
	struct ibtrs_desc out[IBTRS_MAX_INFO_DESCS + 1];
	unsigned int i;
	size_t len;

	for (i = 0; i <= IBTRS_MAX_INFO_DESCS; i++) {
		in[i].addr = 0x0102030405060708ull + i * 0x100000ull;
		in[i].key = 0xa0b0c0d0u + i;
		in[i].len = 4096 + i;
	}

	/* Round trip and layout. */
	len = ibtrs_info_rsp_encode(buf, in, 3);
	CHECK_EQ(len, 8 + 3 * 16);
	CHECK_EQ(get_le(buf, 0, 2), IBTRS_MSG_INFO_RSP);
	CHECK_EQ(get_le(buf, 2, 2), 3);
	CHECK(all_zero(buf, 4, 4));
	CHECK_EQ(buf[8], 0x08);
	CHECK_EQ(buf[15], 0x01);
	CHECK_EQ(get_le(buf, 8, 8), in[0].addr);
	CHECK_EQ(get_le(buf, 16, 4), in[0].key);
	CHECK_EQ(buf[16], 0xd0);
	CHECK_EQ(get_le(buf, 20, 4), in[0].len);
	CHECK_EQ(get_le(buf, 8 + 2 * 16, 8), in[2].addr);
	CHECK_EQ(get_le(buf, 8 + 2 * 16 + 12, 4), in[2].len);
	memset(out, 0, sizeof(out));
	CHECK_EQ(ibtrs_info_rsp_decode(buf, len, out, IBTRS_MAX_INFO_DESCS), 3);
	for (i = 0; i < 3; i++) {
		CHECK_EQ(out[i].addr, in[i].addr);
		CHECK_EQ(out[i].key, in[i].key);
		CHECK_EQ(out[i].len, in[i].len);
	}
	CHECK_EQ(ibtrs_info_rsp_decode(buf, len, out, 3), 3);

	/* The largest message. */
	len = ibtrs_info_rsp_encode(buf, in, IBTRS_MAX_INFO_DESCS);
	CHECK_EQ(len, IBTRS_INFO_RSP_MAX_LEN);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, len, out, IBTRS_MAX_INFO_DESCS),
		 IBTRS_MAX_INFO_DESCS);
	for (i = 0; i < IBTRS_MAX_INFO_DESCS; i++) {
		CHECK_EQ(out[i].addr, in[i].addr);
		CHECK_EQ(out[i].key, in[i].key);
		CHECK_EQ(out[i].len, in[i].len);
	}

	/* sg_cnt 0. */
	len = ibtrs_info_rsp_encode(buf, in, 0);
	CHECK_EQ(len, 8);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, len, out, IBTRS_MAX_INFO_DESCS),
		 -EPROTO);

	/* sg_cnt above the caller's max and above the protocol max. */
	len = ibtrs_info_rsp_encode(buf, in, 3);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, len, out, 2), -EPROTO);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, len, out, 0), -EPROTO);
	/* The encoder never writes more than the protocol allows... */
	len = ibtrs_info_rsp_encode(buf, in, IBTRS_MAX_INFO_DESCS + 1);
	CHECK_EQ(len, IBTRS_INFO_RSP_MAX_LEN);
	/* ...and the decoder refuses a count above it. */
	{
		put_le(buf, 2, 2, IBTRS_MAX_INFO_DESCS + 1);
		CHECK_EQ(ibtrs_info_rsp_decode(buf, len + 16, out,
					       IBTRS_MAX_INFO_DESCS + 1),
			 -EPROTO);
	}

	/* Length mismatch. */
	len = ibtrs_info_rsp_encode(buf, in, 3);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, len - 1, out, 64), -EPROTO);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, len + 1, out, 64), -EPROTO);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, len - 16, out, 64), -EPROTO);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, len + 16, out, 64), -EPROTO);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, 7, out, 64), -EPROTO);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, 0, out, 64), -EPROTO);
	put_le(buf, 2, 2, 2);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, len, out, 64), -EPROTO);
	put_le(buf, 2, 2, 3);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, len, out, 64), 3);

	/* Wrong type. */
	put_le(buf, 0, 2, IBTRS_MSG_INFO_REQ);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, len, out, 64), -EPROTO);
	put_le(buf, 0, 2, 0x0200);
	CHECK_EQ(ibtrs_info_rsp_decode(buf, len, out, 64), -EPROTO);

	/* A zero-length descriptor, first, middle or last. */
	for (i = 0; i < 3; i++) {
		struct ibtrs_desc z[3];

		memcpy(z, in, sizeof(z));
		z[i].len = 0;
		len = ibtrs_info_rsp_encode(buf, z, 3);
		CHECK_EQ(ibtrs_info_rsp_decode(buf, len, out, 64), -EPROTO);
	}
}

static void test_trailer(void)
{
	struct ibtrs_req_trailer t, d;
	struct ibtrs_trailer m;
	unsigned char buf[sizeof(m) + 1];
	const unsigned char *b = (const unsigned char *)&m;

	/* READ round trip and layout. */
	memset(&t, 0, sizeof(t));
	t.dir = IBTRS_READ;
	t.usr_len = 0x0123;
	t.gen = 0xdeadbeef;
	t.desc.addr = 0x1122334455667788ull;
	t.desc.key = 0x99aabbcc;
	t.desc.len = 65536;
	ibtrs_trailer_encode(&m, &t);
	CHECK_EQ(b[0], 0x52);
	CHECK_EQ(b[1], 0x00);
	CHECK_EQ(b[2], 0x23);
	CHECK_EQ(b[3], 0x01);
	CHECK_EQ(get_le(b, 4, 4), 0xdeadbeef);
	CHECK_EQ(b[4], 0xef);
	CHECK_EQ(get_le(b, 8, 8), 0x1122334455667788ull);
	CHECK_EQ(b[8], 0x88);
	CHECK_EQ(get_le(b, 16, 4), 0x99aabbcc);
	CHECK_EQ(get_le(b, 20, 4), 65536);
	memset(&d, 0xa5, sizeof(d));
	CHECK_EQ(ibtrs_trailer_decode(&m, &d), 0);
	CHECK_EQ(d.dir, IBTRS_READ);
	CHECK_EQ(d.usr_len, 0x0123);
	CHECK_EQ(d.gen, 0xdeadbeef);
	CHECK_EQ(d.desc.addr, 0x1122334455667788ull);
	CHECK_EQ(d.desc.key, 0x99aabbcc);
	CHECK_EQ(d.desc.len, 65536);

	/* WRITE round trip, unaligned, usr_len at its maximum. */
	t.dir = IBTRS_WRITE;
	t.usr_len = IBTRS_MAX_USR_MSG;
	t.gen = 7;
	memset(&t.desc, 0, sizeof(t.desc));
	ibtrs_trailer_encode(&m, &t);
	CHECK_EQ(get_le(b, 0, 2), IBTRS_TRAILER_WRITE);
	memcpy(buf + 1, &m, sizeof(m));
	CHECK_EQ(ibtrs_trailer_decode(buf + 1, &d), 0);
	CHECK_EQ(d.dir, IBTRS_WRITE);
	CHECK_EQ(d.usr_len, IBTRS_MAX_USR_MSG);
	CHECK_EQ(d.gen, 7);
	CHECK_EQ(d.desc.addr, 0);
	CHECK_EQ(d.desc.len, 0);

	/* Bad type. */
	memcpy(buf, &m, sizeof(m));
	put_le(buf, 0, 2, 0);
	CHECK_EQ(ibtrs_trailer_decode(buf, &d), -EPROTO);
	put_le(buf, 0, 2, 0x53);
	CHECK_EQ(ibtrs_trailer_decode(buf, &d), -EPROTO);
	put_le(buf, 0, 2, 0x5200);
	CHECK_EQ(ibtrs_trailer_decode(buf, &d), -EPROTO);
	put_le(buf, 0, 2, 0x0152);
	CHECK_EQ(ibtrs_trailer_decode(buf, &d), -EPROTO);
	put_le(buf, 0, 2, 0xffff);
	CHECK_EQ(ibtrs_trailer_decode(buf, &d), -EPROTO);

	/* usr_len above the maximum. */
	memcpy(buf, &m, sizeof(m));
	put_le(buf, 2, 2, IBTRS_MAX_USR_MSG + 1);
	CHECK_EQ(ibtrs_trailer_decode(buf, &d), -EPROTO);
	put_le(buf, 2, 2, 0xffff);
	CHECK_EQ(ibtrs_trailer_decode(buf, &d), -EPROTO);
	put_le(buf, 2, 2, 0);
	CHECK_EQ(ibtrs_trailer_decode(buf, &d), 0);
	CHECK_EQ(d.usr_len, 0);
}

/**
 * bits_needed() - reference for ibtrs_bits_for(): bits to hold @v
 * @v: the value
 *
 * Return: the smallest b with @v < 2^b.
 */
static unsigned int bits_needed(uint64_t v)
{
	unsigned int b = 0;

	while (b < 64 && v >= (1ull << b))
		b++;
	return b;
}

/**
 * sample_next() - next sample of 0..@max: dense at both ends, strided
 * between
 * @i: the current sample
 * @max: the last value
 *
 * Return: the next value, or @max + 1 after @max.
 */
static uint64_t sample_next(uint64_t i, uint64_t max)
{
	uint64_t step = max / 97 + 1;

	if (i < 64 || i + 64 >= max || i + step > max)
		return i + 1;
	return i + step;
}

/**
 * check_req_imms() - pack and unpack request immediates of one geometry
 * @qd: queue depth
 * @chunk_size: chunk size; offsets run 0..@chunk_size
 */
static void check_req_imms(uint32_t qd, uint32_t chunk_size)
{
	int off_bits = ibtrs_imm_off_bits(qd, chunk_size);
	uint64_t id, off;

	if (off_bits < 0) {
		fprintf(stderr, "off_bits(%u, %u) = %d\n", qd, chunk_size,
			off_bits);
		exit(1);
	}
	CHECK_EQ(off_bits, bits_needed(chunk_size));
	CHECK((uint64_t)chunk_size < (1ull << off_bits));
	CHECK(off_bits + bits_needed(qd - 1) <= IBTRS_IMM_PAYLOAD_BITS);

	for (id = 0; id < qd; id = sample_next(id, qd - 1)) {
		for (off = 0; off <= chunk_size;
		     off = sample_next(off, chunk_size)) {
			uint32_t imm, c, o;

			imm = ibtrs_imm_req((uint32_t)id, (uint32_t)off,
					    (unsigned int)off_bits);
			CHECK_EQ(ibtrs_imm_type(imm), IBTRS_IMM_IO_REQ);
			CHECK_EQ(imm & ~IBTRS_IMM_PAYLOAD_MASK, 0);
			c = 0xffffffff;
			o = 0xffffffff;
			ibtrs_imm_req_unpack(imm, (unsigned int)off_bits, &c,
					     &o);
			if (c != id || o != off) {
				fprintf(stderr,
					"qd %u chunk %u: (%llu, %llu) -> %#x -> (%u, %u)\n",
					qd, chunk_size, (unsigned long long)id,
					(unsigned long long)off, imm, c, o);
				exit(1);
			}
		}
	}
}

static void test_imm_req(void)
{
	static const struct {
		uint32_t qd;
		uint32_t chunk_size;
	} geo[] = {
		{ 1, 1 },
		{ 1, 4096 },
		{ 2, 4096 + 512 },
		{ 128, 128 * 1024 + IBTRS_HDR_ROOM },
		{ 256, 512 * 1024 + IBTRS_HDR_ROOM },
		{ 4096, 65535 },
		{ 4096, 4096 + IBTRS_HDR_ROOM },
		{ 65536, 4095 },
		{ 1000, 100000 },
		{ 1, (1u << 28) - 1 },
		{ 3, (1u << 26) - 1 },
	};
	size_t i;

	for (i = 0; i < sizeof(geo) / sizeof(geo[0]); i++)
		check_req_imms(geo[i].qd, geo[i].chunk_size);

	/* Geometries whose bits do not fit. */
	CHECK_EQ(ibtrs_imm_off_bits(65536, 128 * 1024), -1);
	CHECK_EQ(ibtrs_imm_off_bits(0, 4096), -1);
	CHECK_EQ(ibtrs_imm_off_bits(0, 1), -1);
	CHECK_EQ(ibtrs_imm_off_bits(65537, 1), -1);
	CHECK_EQ(ibtrs_imm_off_bits(0xffffffffu, 1), -1);
	CHECK_EQ(ibtrs_imm_off_bits(1, 1u << 28), -1);
	CHECK_EQ(ibtrs_imm_off_bits(1, 0xffffffffu), -1);
	CHECK_EQ(ibtrs_imm_off_bits(4096, 65536), -1);
	CHECK_EQ(ibtrs_imm_off_bits(4097, 65535), -1);
	CHECK_EQ(ibtrs_imm_off_bits(4096, 65535), 16);
	CHECK_EQ(ibtrs_imm_off_bits(1, (1u << 28) - 1), 28);
	CHECK_EQ(ibtrs_imm_off_bits(65536, 4095), 12);
	CHECK_EQ(ibtrs_imm_off_bits(65536, 4096), -1);

	/* ibtrs_bits_for() against the reference. */
	CHECK_EQ(ibtrs_bits_for(0), 0);
	CHECK_EQ(ibtrs_bits_for(1), 1);
	CHECK_EQ(ibtrs_bits_for(2), 2);
	CHECK_EQ(ibtrs_bits_for(3), 2);
	CHECK_EQ(ibtrs_bits_for(4), 3);
	CHECK_EQ(ibtrs_bits_for(0x80000000u), 32);
	CHECK_EQ(ibtrs_bits_for(0xffffffffu), 32);
	for (i = 0; i < 32; i++) {
		uint32_t v = 1u << i;

		CHECK_EQ(ibtrs_bits_for(v), bits_needed(v));
		CHECK_EQ(ibtrs_bits_for(v - 1), bits_needed(v - 1));
		CHECK_EQ(ibtrs_bits_for(v + 1), bits_needed(v + 1));
	}
}

static void test_imm_rsp(void)
{
	/* Chunk ids and errnos to combine. */
	static const uint32_t ids[] = { 0, 1, 2, 255, 4095, 32768, 65535 };
	static const int errs[] = { 0, -1, -EIO, -ENOMEM, -4094, -4095 };
	size_t i, j;
	uint32_t imm, c;
	int e;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		for (j = 0; j < sizeof(errs) / sizeof(errs[0]); j++) {
			imm = ibtrs_imm_rsp(ids[i], errs[j]);
			CHECK_EQ(ibtrs_imm_type(imm), IBTRS_IMM_IO_RSP);
			c = 0xffffffff;
			e = 12345;
			ibtrs_imm_rsp_unpack(imm, &c, &e);
			CHECK_EQ(c, ids[i]);
			CHECK_EQ(e, errs[j]);
		}
	}

	/* All chunk ids with one errno. */
	for (i = 0; i <= 65535; i++) {
		imm = ibtrs_imm_rsp((uint32_t)i, -EIO);
		ibtrs_imm_rsp_unpack(imm, &c, &e);
		CHECK_EQ(c, i);
		CHECK_EQ(e, -EIO);
	}

	/* Layout: errno in bits 27..16, chunk id in 15..0. */
	imm = ibtrs_imm_rsp(0x1234, -EIO);
	CHECK_EQ(imm, (1u << 28) | ((uint32_t)EIO << 16) | 0x1234);
	CHECK_EQ(ibtrs_imm_rsp(0, 0), 1u << 28);
	CHECK_EQ(ibtrs_imm_rsp(65535, -4095), 0x1fffffffu);

	/* Errnos beyond 4095 become -EIO. */
	ibtrs_imm_rsp_unpack(ibtrs_imm_rsp(7, -5000), &c, &e);
	CHECK_EQ(c, 7);
	CHECK_EQ(e, -EIO);
	ibtrs_imm_rsp_unpack(ibtrs_imm_rsp(8, -4096), &c, &e);
	CHECK_EQ(c, 8);
	CHECK_EQ(e, -EIO);
	ibtrs_imm_rsp_unpack(ibtrs_imm_rsp(9, -65536 - 5), &c, &e);
	CHECK_EQ(c, 9);
	CHECK_EQ(e, -EIO);

	/* Heartbeats. */
	CHECK_EQ(ibtrs_imm_type(ibtrs_imm_hb(IBTRS_IMM_HB)), IBTRS_IMM_HB);
	CHECK_EQ(ibtrs_imm_type(ibtrs_imm_hb(IBTRS_IMM_HB_ACK)),
		 IBTRS_IMM_HB_ACK);
	CHECK_EQ(ibtrs_imm_hb(IBTRS_IMM_HB) & IBTRS_IMM_PAYLOAD_MASK, 0);
	CHECK_EQ(ibtrs_imm_hb(IBTRS_IMM_HB_ACK) & IBTRS_IMM_PAYLOAD_MASK, 0);
}

int main(void)
{
	test_layout();
	test_conn_req();
	test_conn_rsp();
	test_auth_req();
	test_auth_rsp();
	test_info_req();
	test_info_rsp();
	test_trailer();
	test_imm_req();
	test_imm_rsp();
	printf("proto: ok\n");
	return 0;
}
