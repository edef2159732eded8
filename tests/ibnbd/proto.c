// SPDX-License-Identifier: MIT
/*
 * proto.c - unit test of the ibnbd wire format (src/ibnbd/proto.c).
 *
 * Every message is encoded and decoded back; the wire bytes are checked
 * at their documented offsets (docs/ibnbd.md); every hostile field (magic,
 * type, length one off, each reserved byte, access mode, names that are
 * paths or hold a NUL, name lengths, trailing bytes after the name, op,
 * flags, OPEN_RSP geometry) is refused with -EPROTO.
 */
#include <endian.h>
#include <stddef.h>

#include "ibnbd.h"
#include "proto.h"
#include "test.h"

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint16_t rd16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return le16toh(v);
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

/* The header of @m at offset 0: magic, type, reserved. */
static void check_hdr(const unsigned char *m, uint16_t type)
{
	CHECK_EQ(rd32(m), IBNBD_MAGIC);
	CHECK(!memcmp(m, "IBND", 4));
	CHECK_EQ(rd16(m + 4), type);
	CHECK_EQ(rd16(m + 6), 0);
}

/*
 * Every byte of @m (@len bytes) at the offsets [@from, @to) set to 1 in
 * turn makes ibnbd_dec_req() refuse it.
 */
static void check_reserved_req(unsigned char *m, size_t len, size_t from,
			       size_t to)
{
	struct ibnbd_req r;
	size_t i;

	for (i = from; i < to; i++) {
		unsigned char save = m[i];

		m[i] = 1;
		CHECK_EQ(ibnbd_dec_req(m, len, &r), -EPROTO);
		m[i] = save;
	}
	CHECK_EQ(ibnbd_dec_req(m, len, &r), 0);
}

/* Wire size of a request type, 0 for the others. */
static size_t req_size(uint16_t type)
{
	switch (type) {
	case IBNBD_MSG_SESS_INFO:
		return sizeof(struct ibnbd_msg_sess_info);
	case IBNBD_MSG_OPEN:
		return sizeof(struct ibnbd_msg_open);
	case IBNBD_MSG_CLOSE:
		return sizeof(struct ibnbd_msg_close);
	case IBNBD_MSG_IO:
		return sizeof(struct ibnbd_msg_io);
	}
	return 0;
}

/* The header checks every request shares: magic, type, length +-1. */
static void check_common_req(unsigned char *m, size_t len)
{
	unsigned char big[400];
	struct ibnbd_req r;
	uint16_t type;

	CHECK(len + 1 <= sizeof(big));
	CHECK_EQ(ibnbd_dec_req(m, len, &r), 0);
	CHECK_EQ(ibnbd_dec_req(m, len - 1, &r), -EPROTO);
	memcpy(big, m, len);
	big[len] = 0;
	CHECK_EQ(ibnbd_dec_req(big, len + 1, &r), -EPROTO);
	CHECK_EQ(ibnbd_dec_req(m, 0, &r), -EPROTO);
	CHECK_EQ(ibnbd_dec_req(NULL, len, &r), -EPROTO);
	CHECK_EQ(ibnbd_dec_req(m, len, NULL), -EINVAL);
	/* magic */
	m[0] ^= 0x20;
	CHECK(!ibnbd_is_msg(m, len));
	CHECK_EQ(ibnbd_dec_req(m, len, &r), -EPROTO);
	m[0] ^= 0x20;
	CHECK(ibnbd_is_msg(m, len));
	CHECK(ibnbd_is_request(m, len));
	CHECK(!ibnbd_is_request(m, 7));
	/* type: unknown ones, and the reply types */
	type = rd16(m + 4);
	for (uint16_t t = 0; t < 10; t++) {
		uint16_t le = htole16(t);

		/* SESS_INFO and CLOSE have one size: either may decode */
		if (t == type || req_size(t) == len)
			continue;
		memcpy(m + 4, &le, 2);
		CHECK_EQ(ibnbd_dec_req(m, len, &r), -EPROTO);
	}
	m[4] = (unsigned char)type;
	m[5] = 1; /* type 256 + type */
	CHECK_EQ(ibnbd_dec_req(m, len, &r), -EPROTO);
	m[5] = 0;
	/* header's reserved */
	check_reserved_req(m, len, 6, 8);
}

static void test_sess_info(void)
{
	struct ibnbd_msg_sess_info m;
	struct ibnbd_sess_info in = { .ver_major = 1,
				      .ver_minor = 7,
				      .max_devices = 0x01020304 },
			       out;
	unsigned char rsp[16], *b = (unsigned char *)&m;
	struct ibnbd_req r;

	CHECK_EQ(ibnbd_enc_sess_info(&m, sizeof(m) - 1), 0);
	CHECK_EQ(ibnbd_enc_sess_info(NULL, sizeof(m)), 0);
	CHECK_EQ(ibnbd_enc_sess_info(&m, sizeof(m)), 16);
	check_hdr(b, IBNBD_MSG_SESS_INFO);
	CHECK_EQ(b[8], IBNBD_PROTO_VER_MAJOR);
	CHECK_EQ(b[9], IBNBD_PROTO_VER_MINOR);
	CHECK_EQ(ibnbd_dec_req(&m, sizeof(m), &r), 0);
	CHECK_EQ(r.type, IBNBD_MSG_SESS_INFO);
	CHECK_EQ(r.ver_major, IBNBD_PROTO_VER_MAJOR);
	CHECK_EQ(r.ver_minor, IBNBD_PROTO_VER_MINOR);
	/* another major version decodes: refusing it is the server's */
	b[8] = 9;
	CHECK_EQ(ibnbd_dec_req(&m, sizeof(m), &r), 0);
	CHECK_EQ(r.ver_major, 9);
	check_common_req(b, sizeof(m));
	check_reserved_req(b, sizeof(m), 10, 16);

	/* the reply */
	CHECK_EQ(ibnbd_enc_sess_info_rsp(rsp, 15, &in), 0);
	CHECK_EQ(ibnbd_enc_sess_info_rsp(rsp, 16, &in), 16);
	check_hdr(rsp, IBNBD_MSG_SESS_INFO_RSP);
	CHECK_EQ(rsp[8], 1);
	CHECK_EQ(rsp[9], 7);
	CHECK_EQ(rd16(rsp + 10), 0);
	CHECK_EQ(rd32(rsp + 12), 0x01020304);
	CHECK_EQ(ibnbd_dec_sess_info_rsp(rsp, 16, &out), 0);
	CHECK_EQ(out.ver_major, 1);
	CHECK_EQ(out.ver_minor, 7);
	CHECK_EQ(out.max_devices, 0x01020304);
	CHECK_EQ(ibnbd_dec_sess_info_rsp(rsp, 15, &out), -EPROTO);
	CHECK_EQ(ibnbd_dec_sess_info_rsp(rsp, 17, &out), -EPROTO);
	CHECK_EQ(ibnbd_dec_sess_info_rsp(rsp, 16, NULL), -EPROTO);
	rsp[10] = 1;
	CHECK_EQ(ibnbd_dec_sess_info_rsp(rsp, 16, &out), -EPROTO);
	rsp[10] = 0;
	rsp[11] = 1;
	CHECK_EQ(ibnbd_dec_sess_info_rsp(rsp, 16, &out), -EPROTO);
	rsp[11] = 0;
	rsp[6] = 1;
	CHECK_EQ(ibnbd_dec_sess_info_rsp(rsp, 16, &out), -EPROTO);
	rsp[6] = 0;
	rsp[4] = IBNBD_MSG_SESS_INFO;
	CHECK_EQ(ibnbd_dec_sess_info_rsp(rsp, 16, &out), -EPROTO);
	rsp[4] = IBNBD_MSG_SESS_INFO_RSP;
	rsp[0] = 0;
	CHECK_EQ(ibnbd_dec_sess_info_rsp(rsp, 16, &out), -EPROTO);
	/* no device allowed makes no sense */
	in.max_devices = 0;
	CHECK_EQ(ibnbd_enc_sess_info_rsp(rsp, 16, &in), 16);
	CHECK_EQ(ibnbd_dec_sess_info_rsp(rsp, 16, &out), -EPROTO);
	/* a reply is not a request */
	in.max_devices = 1;
	CHECK_EQ(ibnbd_enc_sess_info_rsp(rsp, 16, &in), 16);
	CHECK_EQ(ibnbd_dec_req(rsp, 16, &r), -EPROTO);
}

/* OPEN of @name with name_len @n and the name bytes as given: -EPROTO. */
static void open_bad_name(const char *name, size_t n, size_t name_len)
{
	struct ibnbd_msg_open m;
	struct ibnbd_req r;

	CHECK_EQ(ibnbd_enc_open(&m, sizeof(m), IBNBD_WIRE_ACCESS_RO, "x"), 272);
	memset(m.name, 0, sizeof(m.name));
	memcpy(m.name, name, n);
	m.name_len = htole16((uint16_t)name_len);
	CHECK_EQ(ibnbd_dec_req(&m, sizeof(m), &r), -EPROTO);
}

static void test_open(void)
{
	struct ibnbd_msg_open m;
	unsigned char *b = (unsigned char *)&m;
	char name[IBNBD_NAME_MAX + 2];
	struct ibnbd_req r;
	uint8_t mode;

	CHECK_EQ(offsetof(struct ibnbd_msg_open, name), 16);
	for (mode = 0; mode <= IBNBD_WIRE_ACCESS_MIGRATION; mode++) {
		CHECK_EQ(ibnbd_enc_open(&m, sizeof(m), mode, "vol-1.img"), 272);
		check_hdr(b, IBNBD_MSG_OPEN);
		CHECK_EQ(b[8], mode);
		CHECK_EQ(rd16(b + 10), 9);
		CHECK(!memcmp(b + 16, "vol-1.img", 9));
		CHECK_EQ(ibnbd_dec_req(&m, sizeof(m), &r), 0);
		CHECK_EQ(r.type, IBNBD_MSG_OPEN);
		CHECK_EQ(r.access_mode, mode);
		CHECK(!strcmp(r.name, "vol-1.img"));
	}
	/* encoder refusals */
	CHECK_EQ(ibnbd_enc_open(&m, 271, 0, "a"), 0);
	CHECK_EQ(ibnbd_enc_open(&m, sizeof(m), 3, "a"), 0);
	CHECK_EQ(ibnbd_enc_open(&m, sizeof(m), 0, ""), 0);
	CHECK_EQ(ibnbd_enc_open(&m, sizeof(m), 0, "a/b"), 0);
	CHECK_EQ(ibnbd_enc_open(&m, sizeof(m), 0, "."), 0);
	CHECK_EQ(ibnbd_enc_open(&m, sizeof(m), 0, ".."), 0);
	CHECK_EQ(ibnbd_enc_open(&m, sizeof(m), 0, "a b"), 0);
	CHECK_EQ(ibnbd_enc_open(&m, sizeof(m), 0, NULL), 0);
	memset(name, 'n', sizeof(name));
	name[IBNBD_NAME_MAX + 1] = '\0';
	CHECK_EQ(ibnbd_enc_open(&m, sizeof(m), 0, name), 0);
	/* the longest name, and "..." which is a name */
	name[IBNBD_NAME_MAX] = '\0';
	CHECK_EQ(ibnbd_enc_open(&m, sizeof(m), 0, name), 272);
	CHECK_EQ(ibnbd_dec_req(&m, sizeof(m), &r), 0);
	CHECK_EQ(strlen(r.name), IBNBD_NAME_MAX);
	CHECK_EQ(ibnbd_enc_open(&m, sizeof(m), 0, "..."), 272);
	CHECK_EQ(ibnbd_dec_req(&m, sizeof(m), &r), 0);

	CHECK_EQ(ibnbd_enc_open(&m, sizeof(m), IBNBD_WIRE_ACCESS_RW, "disk"),
		 272);
	check_common_req(b, sizeof(m));
	check_reserved_req(b, sizeof(m), 9, 10);
	check_reserved_req(b, sizeof(m), 12, 16);
	/* trailing bytes after the name, up to the last byte */
	check_reserved_req(b, sizeof(m), 16 + 4, 272);
	/* access modes past migration */
	for (mode = 3; mode < 255; mode++) {
		b[8] = mode;
		CHECK_EQ(ibnbd_dec_req(&m, sizeof(m), &r), -EPROTO);
	}
	b[8] = 0;
	CHECK_EQ(ibnbd_dec_req(&m, sizeof(m), &r), 0);

	/* names */
	open_bad_name("", 0, 0);
	open_bad_name("a/b", 3, 3);
	open_bad_name("/etc", 4, 4);
	open_bad_name("..", 2, 2);
	open_bad_name(".", 1, 1);
	open_bad_name("../x", 4, 4);
	open_bad_name("a\0b", 3, 3);
	open_bad_name("ab", 2, 3);	 /* the length covers a NUL */
	open_bad_name("abc", 3, 2);	 /* a byte past the length */
	open_bad_name("a b", 3, 3);	 /* a space */
	open_bad_name("a\nb", 3, 3);	 /* a control byte */
	open_bad_name("a\x80", 2, 2);	 /* not printable ASCII */
	open_bad_name("abc", 3, 256);	 /* longer than the field allows */
	open_bad_name("abc", 3, 0xffff); /* way longer */
	memset(name, 'n', sizeof(name));
	open_bad_name(name, IBNBD_NAME_MAX + 1, IBNBD_NAME_MAX + 1);
	CHECK(!ibnbd_name_valid("ok", 0));
	CHECK(!ibnbd_name_valid(NULL, 2));
	CHECK(ibnbd_name_valid(".x", 2));
	CHECK(ibnbd_name_valid("x..", 3));
}

static void test_close(void)
{
	struct ibnbd_msg_close m;
	unsigned char *b = (unsigned char *)&m;
	struct ibnbd_req r;

	CHECK_EQ(ibnbd_enc_close(&m, 15, 1), 0);
	CHECK_EQ(ibnbd_enc_close(&m, sizeof(m), 0xa1b2c3d4u), 16);
	check_hdr(b, IBNBD_MSG_CLOSE);
	CHECK_EQ(rd32(b + 8), 0xa1b2c3d4u);
	CHECK_EQ(ibnbd_dec_req(&m, sizeof(m), &r), 0);
	CHECK_EQ(r.type, IBNBD_MSG_CLOSE);
	CHECK_EQ(r.device_id, 0xa1b2c3d4u);
	check_common_req(b, sizeof(m));
	check_reserved_req(b, sizeof(m), 12, 16);
}

static void test_io(void)
{
	struct ibnbd_msg_io m;
	unsigned char *b = (unsigned char *)&m;
	struct ibnbd_req r;
	uint8_t op;
	uint16_t f;

	for (op = 0; op <= IBNBD_WIRE_OP_WRITE_ZEROES; op++) {
		CHECK_EQ(ibnbd_enc_io(&m, sizeof(m), 7, op, IBNBD_WIRE_F_MASK,
				      0x0102030405060708ull, 0x8000),
			 32);
		check_hdr(b, IBNBD_MSG_IO);
		CHECK_EQ(rd32(b + 8), 7);
		CHECK_EQ(b[12], op);
		CHECK_EQ(b[13], 0);
		CHECK_EQ(rd16(b + 14), IBNBD_WIRE_F_MASK);
		CHECK_EQ(rd64(b + 16), 0x0102030405060708ull);
		CHECK_EQ(rd32(b + 24), 0x8000);
		CHECK_EQ(rd32(b + 28), 0);
		CHECK_EQ(ibnbd_dec_req(&m, sizeof(m), &r), 0);
		CHECK_EQ(r.type, IBNBD_MSG_IO);
		CHECK_EQ(r.device_id, 7);
		CHECK_EQ(r.op, op);
		CHECK_EQ(r.flags, IBNBD_WIRE_F_MASK);
		CHECK_EQ(r.offset, 0x0102030405060708ull);
		CHECK_EQ(r.len, 0x8000);
	}
	CHECK_EQ(ibnbd_enc_io(&m, 31, 1, 0, 0, 0, 0), 0);
	CHECK_EQ(ibnbd_enc_io(&m, sizeof(m), 1, 5, 0, 0, 0), 0);
	CHECK_EQ(ibnbd_enc_io(&m, sizeof(m), 1, 0, 0x8, 0, 0), 0);
	/* the wire flags are the public ones */
	CHECK_EQ(IBNBD_WIRE_F_FUA, IBNBD_F_FUA);
	CHECK_EQ(IBNBD_WIRE_F_PREFLUSH, IBNBD_F_PREFLUSH);
	CHECK_EQ(IBNBD_WIRE_F_NOUNMAP, IBNBD_F_NOUNMAP);
	CHECK_EQ(IBNBD_WIRE_DEV_MASK,
		 IBNBD_DEV_READONLY | IBNBD_DEV_FUA | IBNBD_DEV_WRITE_CACHE |
			 IBNBD_DEV_DISCARD | IBNBD_DEV_WRITE_ZEROES);

	CHECK_EQ(ibnbd_enc_io(&m, sizeof(m), 1, IBNBD_WIRE_OP_WRITE, 0, 4096,
			      512),
		 32);
	check_common_req(b, sizeof(m));
	check_reserved_req(b, sizeof(m), 13, 14);
	check_reserved_req(b, sizeof(m), 28, 32);
	for (op = 5; op < 255; op++) {
		b[12] = op;
		CHECK_EQ(ibnbd_dec_req(&m, sizeof(m), &r), -EPROTO);
	}
	b[12] = IBNBD_WIRE_OP_WRITE;
	for (f = 0; f < 16; f++) {
		uint16_t le = htole16((uint16_t)(1u << f));

		memcpy(b + 14, &le, 2);
		CHECK_EQ(ibnbd_dec_req(&m, sizeof(m), &r),
			 (1u << f) & IBNBD_WIRE_F_MASK ? 0 : -EPROTO);
	}
}

/* A valid OPEN_RSP. */
static struct ibnbd_open_info good_info(void)
{
	return (struct ibnbd_open_info){
		.device_id = 0x00010002,
		.flags = IBNBD_WIRE_DEV_MASK,
		.size = 1ull << 40,
		.logical_block_size = 512,
		.physical_block_size = 4096,
		.max_transfer = 128 << 10,
		.max_discard = 1u << 30,
		.max_write_zeroes = 1u << 30,
		.discard_granularity = 4096,
		.max_segments = 128,
	};
}

/* @i must not encode and, encoded by hand, must not decode. */
static void bad_info(struct ibnbd_open_info i)
{
	struct ibnbd_open_info good = good_info(), out;
	unsigned char b[64];

	CHECK_EQ(ibnbd_enc_open_rsp(b, sizeof(b), &i), 0);
	/* encode the good one, then patch the fields in by hand */
	CHECK_EQ(ibnbd_enc_open_rsp(b, sizeof(b), &good), 64);
	i.device_id = htole32(i.device_id);
	memcpy(b + 8, &i.device_id, 4);
	i.flags = htole32(i.flags);
	memcpy(b + 12, &i.flags, 4);
	i.size = htole64(i.size);
	memcpy(b + 16, &i.size, 8);
	i.logical_block_size = htole32(i.logical_block_size);
	memcpy(b + 24, &i.logical_block_size, 4);
	i.physical_block_size = htole32(i.physical_block_size);
	memcpy(b + 28, &i.physical_block_size, 4);
	i.max_transfer = htole32(i.max_transfer);
	memcpy(b + 32, &i.max_transfer, 4);
	i.max_discard = htole32(i.max_discard);
	memcpy(b + 36, &i.max_discard, 4);
	i.max_write_zeroes = htole32(i.max_write_zeroes);
	memcpy(b + 40, &i.max_write_zeroes, 4);
	i.discard_granularity = htole32(i.discard_granularity);
	memcpy(b + 44, &i.discard_granularity, 4);
	i.max_segments = htole16(i.max_segments);
	memcpy(b + 48, &i.max_segments, 2);
	CHECK_EQ(ibnbd_dec_open_rsp(b, sizeof(b), &out), -EPROTO);
}

static void test_open_rsp(void)
{
	struct ibnbd_open_info in = good_info(), out, i;
	unsigned char b[65], c[64];
	size_t k;

	CHECK_EQ(ibnbd_enc_open_rsp(b, 63, &in), 0);
	CHECK_EQ(ibnbd_enc_open_rsp(b, 64, NULL), 0);
	CHECK_EQ(ibnbd_enc_open_rsp(b, 64, &in), 64);
	check_hdr(b, IBNBD_MSG_OPEN_RSP);
	CHECK_EQ(rd32(b + 8), in.device_id);
	CHECK_EQ(rd32(b + 12), in.flags);
	CHECK_EQ(rd64(b + 16), in.size);
	CHECK_EQ(rd32(b + 24), 512);
	CHECK_EQ(rd32(b + 28), 4096);
	CHECK_EQ(rd32(b + 32), 128 << 10);
	CHECK_EQ(rd32(b + 36), 1u << 30);
	CHECK_EQ(rd32(b + 40), 1u << 30);
	CHECK_EQ(rd32(b + 44), 4096);
	CHECK_EQ(rd16(b + 48), 128);
	CHECK_EQ(ibnbd_dec_open_rsp(b, 64, &out), 0);
	CHECK_EQ(out.device_id, in.device_id);
	CHECK_EQ(out.flags, in.flags);
	CHECK_EQ(out.size, in.size);
	CHECK_EQ(out.logical_block_size, in.logical_block_size);
	CHECK_EQ(out.physical_block_size, in.physical_block_size);
	CHECK_EQ(out.max_transfer, in.max_transfer);
	CHECK_EQ(out.max_discard, in.max_discard);
	CHECK_EQ(out.max_write_zeroes, in.max_write_zeroes);
	CHECK_EQ(out.discard_granularity, in.discard_granularity);
	CHECK_EQ(out.max_segments, in.max_segments);
	CHECK_EQ(ibnbd_dec_open_rsp(b, 63, &out), -EPROTO);
	b[64] = 0;
	CHECK_EQ(ibnbd_dec_open_rsp(b, 65, &out), -EPROTO);
	CHECK_EQ(ibnbd_dec_open_rsp(b, 64, NULL), -EPROTO);
	/* header and reserved bytes */
	memcpy(c, b, 64);
	for (k = 0; k < 8; k++) {
		if (k == 4)
			continue;
		c[k] ^= 1;
		CHECK_EQ(ibnbd_dec_open_rsp(c, 64, &out), -EPROTO);
		c[k] ^= 1;
	}
	c[4] = IBNBD_MSG_OPEN;
	CHECK_EQ(ibnbd_dec_open_rsp(c, 64, &out), -EPROTO);
	c[4] = IBNBD_MSG_OPEN_RSP;
	for (k = 50; k < 64; k++) {
		c[k] = 1;
		CHECK_EQ(ibnbd_dec_open_rsp(c, 64, &out), -EPROTO);
		c[k] = 0;
	}
	CHECK_EQ(ibnbd_dec_open_rsp(c, 64, &out), 0);
	/* a reply is not a request */
	CHECK_EQ(ibnbd_dec_req(c, 64, &(struct ibnbd_req){ 0 }), -EPROTO);

	/* without discard and write zeroes, their limits are 0 */
	i = good_info();
	i.flags = IBNBD_WIRE_DEV_READONLY;
	i.max_discard = i.max_write_zeroes = 0;
	CHECK_EQ(ibnbd_enc_open_rsp(b, 64, &i), 64);
	CHECK_EQ(ibnbd_dec_open_rsp(b, 64, &out), 0);
	CHECK_EQ(out.flags, IBNBD_WIRE_DEV_READONLY);
	/* the extremes of the block sizes */
	i = good_info();
	i.logical_block_size = i.physical_block_size = 65536;
	i.max_transfer = 65536;
	i.discard_granularity = 65536;
	CHECK_EQ(ibnbd_enc_open_rsp(b, 64, &i), 64);
	i.size = 0;
	CHECK_EQ(ibnbd_enc_open_rsp(b, 64, &i), 64);

	/* hostile geometry */
	i = good_info();
	i.flags |= 0x20;
	bad_info(i);
	i = good_info();
	i.logical_block_size = 256;
	i.physical_block_size = 256;
	bad_info(i);
	i = good_info();
	i.logical_block_size = 131072;
	i.physical_block_size = 131072;
	i.max_transfer = 131072;
	i.discard_granularity = 131072;
	bad_info(i);
	i = good_info();
	i.logical_block_size = 1536;
	bad_info(i);
	i = good_info();
	i.logical_block_size = 0;
	bad_info(i);
	i = good_info();
	i.physical_block_size = 256;
	bad_info(i);
	i = good_info();
	i.physical_block_size = 6144;
	bad_info(i);
	i = good_info();
	i.size += 100;
	bad_info(i);
	i = good_info();
	i.max_transfer = 0;
	bad_info(i);
	i = good_info();
	i.max_transfer = 1000;
	bad_info(i);
	i = good_info();
	i.max_segments = 0;
	bad_info(i);
	i = good_info();
	i.max_discard = 1000;
	bad_info(i);
	i = good_info();
	i.max_write_zeroes = 1000;
	bad_info(i);
	i = good_info();
	i.discard_granularity = 1000;
	bad_info(i);
	i = good_info();
	i.flags &= ~IBNBD_WIRE_DEV_DISCARD;
	bad_info(i);
	i = good_info();
	i.max_discard = 0;
	bad_info(i);
	i = good_info();
	i.flags &= ~IBNBD_WIRE_DEV_WRITE_ZEROES;
	bad_info(i);
	i = good_info();
	i.max_write_zeroes = 0;
	bad_info(i);
}

int main(void)
{
	test_sess_info();
	test_open();
	test_close();
	test_io();
	test_open_rsp();
	printf("ok\n");
	return 0;
}
