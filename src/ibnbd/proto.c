// SPDX-License-Identifier: MIT
/*
 * proto.c - encoders and decoders of the ibnbd messages (proto.h).
 *
 * An encoder writes the whole wire struct, reserved bytes 0, and returns
 * its size, or 0 when @len is too small or an argument cannot be encoded.
 * A decoder checks every field before it fills the in-memory form: the
 * magic, the type, the exact length, the reserved bytes, the ranges of
 * enumerations and flags, and the export name. It returns 0, or -EPROTO
 * for a message that is not well formed (-EPROTONOSUPPORT for a version
 * the receiver does not speak is the caller's to decide).
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "proto.h"

/* True when the @n bytes at @p are all 0. */
static bool all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		if (*b++)
			return false;
	return true;
}

static void hdr_fill(struct ibnbd_msg_hdr *hdr, uint16_t type)
{
	hdr->magic = htole32(IBNBD_MAGIC);
	hdr->type = htole16(type);
	hdr->reserved = 0;
}

/*
 * The header of a message of @len bytes at @buf is well formed and of
 * @type, and @len is @want exactly.
 */
static bool hdr_ok(const void *buf, size_t len, uint16_t type, size_t want)
{
	struct ibnbd_msg_hdr hdr;

	if (!buf || len != want)
		return false;
	memcpy(&hdr, buf, sizeof(hdr));
	return le32toh(hdr.magic) == IBNBD_MAGIC && le16toh(hdr.type) == type &&
	       !hdr.reserved;
}

/**
 * ibnbd_is_msg() - whether @buf starts with the ibnbd magic
 * @buf: a message
 * @len: its length
 *
 * Return: true when @len covers a header and its magic is IBNBD_MAGIC.
 */
bool ibnbd_is_msg(const void *buf, size_t len)
{
	uint32_t magic;

	if (!buf || len < sizeof(struct ibnbd_msg_hdr))
		return false;
	memcpy(&magic, buf, sizeof(magic));
	return le32toh(magic) == IBNBD_MAGIC;
}

/**
 * ibnbd_name_valid() - whether @len bytes at @name make an export name
 * @name: the name, not necessarily NUL-terminated
 * @len: its length
 *
 * A name is 1..IBNBD_NAME_MAX printable bytes (0x21..0x7e), without '/',
 * and neither "." nor "..": it can name only an entry of the export table
 * or of the export directory, never a path.
 *
 * Return: true when it is valid.
 */
bool ibnbd_name_valid(const char *name, size_t len)
{
	size_t i;

	if (!name || !len || len > IBNBD_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c <= 0x20 || c >= 0x7f || c == '/')
			return false;
	}
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return false;
	return true;
}

/**
 * ibnbd_enc_sess_info() - encode SESS_INFO with this side's version
 * @buf: where the message goes
 * @len: bytes at @buf
 *
 * Return: the message size, or 0 when @len is too small.
 */
size_t ibnbd_enc_sess_info(void *buf, size_t len)
{
	struct ibnbd_msg_sess_info m;

	if (!buf || len < sizeof(m))
		return 0;
	memset(&m, 0, sizeof(m));
	hdr_fill(&m.hdr, IBNBD_MSG_SESS_INFO);
	m.ver_major = IBNBD_PROTO_VER_MAJOR;
	m.ver_minor = IBNBD_PROTO_VER_MINOR;
	memcpy(buf, &m, sizeof(m));
	return sizeof(m);
}

/**
 * ibnbd_enc_open() - encode OPEN
 * @buf: where the message goes
 * @len: bytes at @buf
 * @access_mode: IBNBD_WIRE_ACCESS_*
 * @name: the export name, NUL-terminated
 *
 * Return: the message size, or 0 when @len is too small, @access_mode is
 * unknown or @name is not a valid export name.
 */
size_t ibnbd_enc_open(void *buf, size_t len, uint8_t access_mode,
		      const char *name)
{
	struct ibnbd_msg_open m;
	size_t n;

	if (!buf || len < sizeof(m) || !name ||
	    access_mode > IBNBD_WIRE_ACCESS_MIGRATION)
		return 0;
	n = strnlen(name, IBNBD_NAME_MAX + 1);
	if (!ibnbd_name_valid(name, n))
		return 0;
	memset(&m, 0, sizeof(m));
	hdr_fill(&m.hdr, IBNBD_MSG_OPEN);
	m.access_mode = access_mode;
	m.name_len = htole16((uint16_t)n);
	memcpy(m.name, name, n);
	memcpy(buf, &m, sizeof(m));
	return sizeof(m);
}

/**
 * ibnbd_enc_close() - encode CLOSE
 * @buf: where the message goes
 * @len: bytes at @buf
 * @device_id: the device
 *
 * Return: the message size, or 0 when @len is too small.
 */
size_t ibnbd_enc_close(void *buf, size_t len, uint32_t device_id)
{
	struct ibnbd_msg_close m;

	if (!buf || len < sizeof(m))
		return 0;
	memset(&m, 0, sizeof(m));
	hdr_fill(&m.hdr, IBNBD_MSG_CLOSE);
	m.device_id = htole32(device_id);
	memcpy(buf, &m, sizeof(m));
	return sizeof(m);
}

/**
 * ibnbd_enc_io() - encode IO
 * @buf: where the message goes
 * @len: bytes at @buf
 * @device_id: the device
 * @op: IBNBD_WIRE_OP_*
 * @flags: IBNBD_WIRE_F_*
 * @offset: byte offset
 * @io_len: bytes
 *
 * Return: the message size, or 0 when @len is too small or @op or @flags
 * are unknown.
 */
size_t ibnbd_enc_io(void *buf, size_t len, uint32_t device_id, uint8_t op,
		    uint16_t flags, uint64_t offset, uint32_t io_len)
{
	struct ibnbd_msg_io m;

	if (!buf || len < sizeof(m) || op > IBNBD_WIRE_OP_WRITE_ZEROES ||
	    (flags & ~IBNBD_WIRE_F_MASK))
		return 0;
	memset(&m, 0, sizeof(m));
	hdr_fill(&m.hdr, IBNBD_MSG_IO);
	m.device_id = htole32(device_id);
	m.op = op;
	m.flags = htole16(flags);
	m.offset = htole64(offset);
	m.len = htole32(io_len);
	memcpy(buf, &m, sizeof(m));
	return sizeof(m);
}

static int dec_sess_info(const void *buf, size_t len, struct ibnbd_req *req)
{
	struct ibnbd_msg_sess_info m;

	if (!hdr_ok(buf, len, IBNBD_MSG_SESS_INFO, sizeof(m)))
		return -EPROTO;
	memcpy(&m, buf, sizeof(m));
	if (!all_zero(m.reserved, sizeof(m.reserved)))
		return -EPROTO;
	req->ver_major = m.ver_major;
	req->ver_minor = m.ver_minor;
	return 0;
}

static int dec_open(const void *buf, size_t len, struct ibnbd_req *req)
{
	struct ibnbd_msg_open m;
	size_t n;

	if (!hdr_ok(buf, len, IBNBD_MSG_OPEN, sizeof(m)))
		return -EPROTO;
	memcpy(&m, buf, sizeof(m));
	n = le16toh(m.name_len);
	if (m.access_mode > IBNBD_WIRE_ACCESS_MIGRATION || m.reserved ||
	    !all_zero(m.reserved2, sizeof(m.reserved2)) || n > IBNBD_NAME_MAX ||
	    !ibnbd_name_valid(m.name, n) ||
	    !all_zero(m.name + n, sizeof(m.name) - n))
		return -EPROTO;
	req->access_mode = m.access_mode;
	memcpy(req->name, m.name, n);
	req->name[n] = '\0';
	return 0;
}

static int dec_close(const void *buf, size_t len, struct ibnbd_req *req)
{
	struct ibnbd_msg_close m;

	if (!hdr_ok(buf, len, IBNBD_MSG_CLOSE, sizeof(m)))
		return -EPROTO;
	memcpy(&m, buf, sizeof(m));
	if (m.reserved)
		return -EPROTO;
	req->device_id = le32toh(m.device_id);
	return 0;
}

static int dec_io(const void *buf, size_t len, struct ibnbd_req *req)
{
	struct ibnbd_msg_io m;

	if (!hdr_ok(buf, len, IBNBD_MSG_IO, sizeof(m)))
		return -EPROTO;
	memcpy(&m, buf, sizeof(m));
	if (m.reserved || m.reserved2 || m.op > IBNBD_WIRE_OP_WRITE_ZEROES ||
	    (le16toh(m.flags) & ~IBNBD_WIRE_F_MASK))
		return -EPROTO;
	req->device_id = le32toh(m.device_id);
	req->op = m.op;
	req->flags = le16toh(m.flags);
	req->offset = le64toh(m.offset);
	req->len = le32toh(m.len);
	return 0;
}

/**
 * ibnbd_dec_req() - decode a request from the user message of an ibtrs
 * request
 * @buf: the message
 * @len: its length
 * @req: filled on success (all of it: fields the type has not are 0)
 *
 * Return: 0, or -EPROTO for a message that is not a well formed
 * SESS_INFO, OPEN, CLOSE or IO.
 */
int ibnbd_dec_req(const void *buf, size_t len, struct ibnbd_req *req)
{
	struct ibnbd_msg_hdr hdr;
	int ret;

	if (!req)
		return -EINVAL;
	memset(req, 0, sizeof(*req));
	if (!ibnbd_is_msg(buf, len))
		return -EPROTO;
	memcpy(&hdr, buf, sizeof(hdr));
	switch (le16toh(hdr.type)) {
	case IBNBD_MSG_SESS_INFO:
		ret = dec_sess_info(buf, len, req);
		break;
	case IBNBD_MSG_OPEN:
		ret = dec_open(buf, len, req);
		break;
	case IBNBD_MSG_CLOSE:
		ret = dec_close(buf, len, req);
		break;
	case IBNBD_MSG_IO:
		ret = dec_io(buf, len, req);
		break;
	default:
		ret = -EPROTO;
		break;
	}
	if (ret)
		memset(req, 0, sizeof(*req));
	else
		req->type = le16toh(hdr.type);
	return ret;
}

/**
 * ibnbd_enc_sess_info_rsp() - encode SESS_INFO_RSP
 * @buf: where the message goes
 * @len: bytes at @buf
 * @info: the answer
 *
 * Return: the message size, or 0 when @len is too small.
 */
size_t ibnbd_enc_sess_info_rsp(void *buf, size_t len,
			       const struct ibnbd_sess_info *info)
{
	struct ibnbd_msg_sess_info_rsp m;

	if (!buf || !info || len < sizeof(m))
		return 0;
	memset(&m, 0, sizeof(m));
	hdr_fill(&m.hdr, IBNBD_MSG_SESS_INFO_RSP);
	m.ver_major = info->ver_major;
	m.ver_minor = info->ver_minor;
	m.max_devices = htole32(info->max_devices);
	memcpy(buf, &m, sizeof(m));
	return sizeof(m);
}

/**
 * ibnbd_dec_sess_info_rsp() - decode SESS_INFO_RSP
 * @buf: the data of the SESS_INFO request
 * @len: its length
 * @info: filled on success
 *
 * Return: 0, or -EPROTO (malformed, or no device allowed).
 */
int ibnbd_dec_sess_info_rsp(const void *buf, size_t len,
			    struct ibnbd_sess_info *info)
{
	struct ibnbd_msg_sess_info_rsp m;

	if (!info || !hdr_ok(buf, len, IBNBD_MSG_SESS_INFO_RSP, sizeof(m)))
		return -EPROTO;
	memcpy(&m, buf, sizeof(m));
	if (!all_zero(m.reserved, sizeof(m.reserved)) || !m.max_devices)
		return -EPROTO;
	info->ver_major = m.ver_major;
	info->ver_minor = m.ver_minor;
	info->max_devices = le32toh(m.max_devices);
	return 0;
}

/**
 * ibnbd_enc_open_rsp() - encode OPEN_RSP
 * @buf: where the message goes
 * @len: bytes at @buf
 * @info: the device
 *
 * Return: the message size, or 0 when @len is too small or @info would
 * not pass ibnbd_dec_open_rsp().
 */
size_t ibnbd_enc_open_rsp(void *buf, size_t len,
			  const struct ibnbd_open_info *info)
{
	struct ibnbd_msg_open_rsp m;

	if (!buf || !info || len < sizeof(m))
		return 0;
	memset(&m, 0, sizeof(m));
	hdr_fill(&m.hdr, IBNBD_MSG_OPEN_RSP);
	m.device_id = htole32(info->device_id);
	m.flags = htole32(info->flags);
	m.size = htole64(info->size);
	m.logical_block_size = htole32(info->logical_block_size);
	m.physical_block_size = htole32(info->physical_block_size);
	m.max_transfer = htole32(info->max_transfer);
	m.max_discard = htole32(info->max_discard);
	m.max_write_zeroes = htole32(info->max_write_zeroes);
	m.discard_granularity = htole32(info->discard_granularity);
	m.max_segments = htole16(info->max_segments);
	if (ibnbd_dec_open_rsp(&m, sizeof(m), &(struct ibnbd_open_info){ 0 }))
		return 0;
	memcpy(buf, &m, sizeof(m));
	return sizeof(m);
}

static bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/**
 * ibnbd_dec_open_rsp() - decode OPEN_RSP
 * @buf: the data of the OPEN request
 * @len: its length
 * @info: filled on success
 *
 * Checks that the geometry makes sense: block sizes powers of two in
 * range, the size and every limit a multiple of the logical block size, a
 * non-zero max transfer and segment count, discard and write-zeroes limits
 * present exactly when their flags are.
 *
 * Return: 0, or -EPROTO.
 */
int ibnbd_dec_open_rsp(const void *buf, size_t len,
		       struct ibnbd_open_info *info)
{
	struct ibnbd_msg_open_rsp m;
	struct ibnbd_open_info i;

	if (!info || !hdr_ok(buf, len, IBNBD_MSG_OPEN_RSP, sizeof(m)))
		return -EPROTO;
	memcpy(&m, buf, sizeof(m));
	if (!all_zero(m.reserved, sizeof(m.reserved)))
		return -EPROTO;
	i.device_id = le32toh(m.device_id);
	i.flags = le32toh(m.flags);
	i.size = le64toh(m.size);
	i.logical_block_size = le32toh(m.logical_block_size);
	i.physical_block_size = le32toh(m.physical_block_size);
	i.max_transfer = le32toh(m.max_transfer);
	i.max_discard = le32toh(m.max_discard);
	i.max_write_zeroes = le32toh(m.max_write_zeroes);
	i.discard_granularity = le32toh(m.discard_granularity);
	i.max_segments = le16toh(m.max_segments);

	if ((i.flags & ~IBNBD_WIRE_DEV_MASK) || !pow2(i.logical_block_size) ||
	    i.logical_block_size < 512 || i.logical_block_size > 65536 ||
	    !pow2(i.physical_block_size) ||
	    i.physical_block_size < i.logical_block_size ||
	    i.size % i.logical_block_size || !i.max_transfer ||
	    i.max_transfer % i.logical_block_size || !i.max_segments ||
	    i.max_discard % i.logical_block_size ||
	    i.max_write_zeroes % i.logical_block_size ||
	    i.discard_granularity % i.logical_block_size ||
	    !(i.flags & IBNBD_WIRE_DEV_DISCARD) != !i.max_discard ||
	    !(i.flags & IBNBD_WIRE_DEV_WRITE_ZEROES) != !i.max_write_zeroes)
		return -EPROTO;
	*info = i;
	return 0;
}
