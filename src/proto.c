// SPDX-License-Identifier: MIT
/*
 * proto.c - encoders and decoders of the wire format in proto.h.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "ibtrs.h"
#include "proto.h"

void ibtrs_conn_req_encode(struct ibtrs_msg_conn_req *m,
			   const struct ibtrs_conn_req *r)
{
	memset(m, 0, sizeof(*m));
	m->magic = htole16(IBTRS_MAGIC);
	m->version = htole16(r->version);
	m->cid = htole16(r->cid);
	m->cid_num = htole16(r->cid_num);
	m->recon_cnt = htole16(r->recon_cnt);
	m->flags = r->first_conn ? IBTRS_CONN_FIRST : 0;
	m->caps = r->caps;
	memcpy(m->sess_uuid, r->sess_uuid, IBTRS_UUID_LEN);
	memcpy(m->path_uuid, r->path_uuid, IBTRS_UUID_LEN);
	memcpy(m->nonce, r->nonce, IBTRS_NONCE_LEN);
}

/*
 * Checks shared by conn_req and conn_rsp: length and magic. A different
 * major version is -EPROTONOSUPPORT so that both sides can say so plainly.
 */
static int check_conn_hdr(const void *buf, size_t len, size_t want,
			  uint16_t *version)
{
	uint16_t magic, ver;

	if (!buf || len < want)
		return -EPROTO;
	memcpy(&magic, buf, 2);
	memcpy(&ver, (const char *)buf + 2, 2);
	if (le16toh(magic) != IBTRS_MAGIC)
		return -EPROTO;
	*version = le16toh(ver);
	if ((*version >> 8) != IBTRS_PROTO_VER_MAJOR)
		return -EPROTONOSUPPORT;
	return 0;
}

int ibtrs_conn_req_decode(const void *buf, size_t len, struct ibtrs_conn_req *r)
{
	struct ibtrs_msg_conn_req m;
	int ret;

	ret = check_conn_hdr(buf, len, sizeof(m), &r->version);
	if (ret)
		return ret;
	memcpy(&m, buf, sizeof(m));
	r->cid = le16toh(m.cid);
	r->cid_num = le16toh(m.cid_num);
	r->recon_cnt = le16toh(m.recon_cnt);
	r->first_conn = m.flags & IBTRS_CONN_FIRST;
	r->caps = m.caps;
	if (m.flags & ~IBTRS_CONN_FIRST)
		return -EPROTO;
	if (!r->cid_num || r->cid_num > IBTRS_MAX_CONS_PER_PATH ||
	    r->cid >= r->cid_num)
		return -EPROTO;
	memcpy(r->sess_uuid, m.sess_uuid, IBTRS_UUID_LEN);
	memcpy(r->path_uuid, m.path_uuid, IBTRS_UUID_LEN);
	memcpy(r->nonce, m.nonce, IBTRS_NONCE_LEN);
	return 0;
}

void ibtrs_conn_rsp_encode(struct ibtrs_msg_conn_rsp *m,
			   const struct ibtrs_conn_rsp *r)
{
	memset(m, 0, sizeof(*m));
	m->magic = htole16(IBTRS_MAGIC);
	m->version = htole16(r->version);
	m->err = htole16(r->err);
	m->queue_depth = htole16(r->queue_depth);
	m->max_io_size = htole32(r->max_io_size);
	m->chunk_size = htole32(r->chunk_size);
	m->max_usr_msg = htole32(r->max_usr_msg);
	m->flags = htole32(r->flags);
	m->incarnation = htole64(r->incarnation);
	memcpy(m->nonce, r->nonce, IBTRS_NONCE_LEN);
}

int ibtrs_conn_rsp_decode(const void *buf, size_t len, struct ibtrs_conn_rsp *r)
{
	struct ibtrs_msg_conn_rsp m;
	int ret;

	ret = check_conn_hdr(buf, len, sizeof(m), &r->version);
	if (ret)
		return ret;
	memcpy(&m, buf, sizeof(m));
	r->err = le16toh(m.err);
	r->queue_depth = le16toh(m.queue_depth);
	r->max_io_size = le32toh(m.max_io_size);
	r->chunk_size = le32toh(m.chunk_size);
	r->max_usr_msg = le32toh(m.max_usr_msg);
	r->flags = le32toh(m.flags);
	/* Unknown flags are a newer server's: ignored, as is the field of
	 * an incarnation the flag does not vouch for. */
	r->incarnation =
		r->flags & IBTRS_RSP_INCARNATION ? le64toh(m.incarnation) : 0;
	if (r->flags & IBTRS_RSP_AUTH)
		memcpy(r->nonce, m.nonce, IBTRS_NONCE_LEN);
	else
		memset(r->nonce, 0, IBTRS_NONCE_LEN);
	if (r->err)
		return 0;
	/* The session geometry must be usable before anyone relies on it. */
	if (!r->queue_depth || r->queue_depth > IBTRS_MAX_QUEUE_DEPTH ||
	    !r->max_io_size || r->max_usr_msg > IBTRS_MAX_USR_MSG ||
	    r->chunk_size < r->max_io_size ||
	    r->chunk_size - r->max_io_size < IBTRS_HDR_ROOM ||
	    ibtrs_imm_off_bits(r->queue_depth, r->chunk_size) < 0)
		return -EPROTO;
	return 0;
}

void ibtrs_auth_req_encode(struct ibtrs_msg_auth_req *m,
			   const struct ibtrs_auth_req *r)
{
	size_t n = r->id_len <= IBTRS_AUTH_ID_MAX ? r->id_len : 0;

	memset(m, 0, sizeof(*m));
	m->type = htole16(IBTRS_MSG_AUTH_REQ);
	m->flags = r->flags;
	m->id_len = (uint8_t)n;
	memcpy(m->identity, r->identity, n);
	memcpy(m->pub, r->pub, IBTRS_AUTH_KEY_LEN);
	if (r->flags & IBTRS_AUTH_PSK)
		memcpy(m->proof_psk, r->proof_psk, IBTRS_AUTH_KEY_LEN);
	if (r->flags & IBTRS_AUTH_JOIN)
		memcpy(m->proof_sess, r->proof_sess, IBTRS_AUTH_KEY_LEN);
}

static bool all_zero(const void *p, size_t len)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (c[i])
			return false;
	return true;
}

int ibtrs_auth_req_decode(const void *buf, size_t len, struct ibtrs_auth_req *r)
{
	struct ibtrs_msg_auth_req m;
	unsigned int i;

	if (!buf || len != sizeof(m))
		return -EPROTO;
	memcpy(&m, buf, sizeof(m));
	if (le16toh(m.type) != IBTRS_MSG_AUTH_REQ || m.reserved ||
	    (m.flags & ~(IBTRS_AUTH_PSK | IBTRS_AUTH_JOIN)) ||
	    m.id_len > IBTRS_AUTH_ID_MAX)
		return -EPROTO;
	/* An identity comes with a key's proof, and only then. */
	if (!m.id_len != !(m.flags & IBTRS_AUTH_PSK))
		return -EPROTO;
	if (!all_zero(m.identity + m.id_len, sizeof(m.identity) - m.id_len))
		return -EPROTO;
	for (i = 0; i < m.id_len; i++) {
		unsigned char c = (unsigned char)m.identity[i];

		if (c <= ' ' || c >= 0x7f || c == ':')
			return -EPROTO;
	}
	if (!(m.flags & IBTRS_AUTH_PSK) &&
	    !all_zero(m.proof_psk, sizeof(m.proof_psk)))
		return -EPROTO;
	if (!(m.flags & IBTRS_AUTH_JOIN) &&
	    !all_zero(m.proof_sess, sizeof(m.proof_sess)))
		return -EPROTO;
	r->flags = m.flags;
	r->id_len = m.id_len;
	memcpy(r->identity, m.identity, m.id_len);
	r->identity[m.id_len] = '\0';
	memcpy(r->pub, m.pub, IBTRS_AUTH_KEY_LEN);
	memcpy(r->proof_psk, m.proof_psk, IBTRS_AUTH_KEY_LEN);
	memcpy(r->proof_sess, m.proof_sess, IBTRS_AUTH_KEY_LEN);
	return 0;
}

void ibtrs_auth_rsp_encode(struct ibtrs_msg_auth_rsp *m,
			   const struct ibtrs_auth_rsp *r)
{
	memset(m, 0, sizeof(*m));
	m->type = htole16(IBTRS_MSG_AUTH_RSP);
	m->err = htole16(r->err);
	if (r->err)
		return;
	m->flags = htole32(r->flags);
	m->incarnation = htole64(r->incarnation);
	if (r->flags & IBTRS_RSP_NEW_SESS)
		memcpy(m->pub, r->pub, IBTRS_AUTH_KEY_LEN);
	memcpy(m->proof, r->proof, IBTRS_AUTH_KEY_LEN);
}

int ibtrs_auth_rsp_decode(const void *buf, size_t len, struct ibtrs_auth_rsp *r)
{
	struct ibtrs_msg_auth_rsp m;

	if (!buf || len != sizeof(m))
		return -EPROTO;
	memcpy(&m, buf, sizeof(m));
	if (le16toh(m.type) != IBTRS_MSG_AUTH_RSP)
		return -EPROTO;
	memset(r, 0, sizeof(*r));
	r->err = le16toh(m.err);
	if (r->err)
		return 0;
	r->flags = le32toh(m.flags);
	r->incarnation = le64toh(m.incarnation);
	if (!(r->flags & IBTRS_RSP_INCARNATION) || !r->incarnation ||
	    (r->flags & ~(IBTRS_RSP_INCARNATION | IBTRS_RSP_NEW_SESS)))
		return -EPROTO;
	if (!(r->flags & IBTRS_RSP_NEW_SESS) && !all_zero(m.pub, sizeof(m.pub)))
		return -EPROTO;
	memcpy(r->pub, m.pub, IBTRS_AUTH_KEY_LEN);
	memcpy(r->proof, m.proof, IBTRS_AUTH_KEY_LEN);
	return 0;
}

void ibtrs_info_req_encode(struct ibtrs_msg_info_req *m, const char *name)
{
	memset(m, 0, sizeof(*m));
	m->type = htole16(IBTRS_MSG_INFO_REQ);
	strncpy(m->sessname, name, sizeof(m->sessname) - 1);
}

int ibtrs_info_req_decode(const void *buf, size_t len,
			  char name[IBTRS_SESSNAME_LEN])
{
	const struct ibtrs_msg_info_req *m = buf;
	uint16_t type;
	size_t n;

	if (len != sizeof(*m))
		return -EPROTO;
	memcpy(&type, &m->type, sizeof(type));
	if (le16toh(type) != IBTRS_MSG_INFO_REQ)
		return -EPROTO;
	n = strnlen(m->sessname, sizeof(m->sessname));
	if (!n || n == sizeof(m->sessname) || memchr(m->sessname, '/', n))
		return -EPROTO;
	memcpy(name, m->sessname, n);
	name[n] = '\0';
	return 0;
}

size_t ibtrs_info_rsp_encode(void *buf, const struct ibtrs_desc *desc,
			     unsigned int cnt)
{
	if (cnt > IBTRS_MAX_INFO_DESCS)
		cnt = IBTRS_MAX_INFO_DESCS;
	struct ibtrs_msg_info_rsp hdr = {
		.type = htole16(IBTRS_MSG_INFO_RSP),
		.sg_cnt = htole16((uint16_t)cnt),
	};
	char *p = buf;
	unsigned int i;

	memcpy(p, &hdr, sizeof(hdr));
	p += sizeof(hdr);
	for (i = 0; i < cnt; i++) {
		struct ibtrs_sg_desc d = {
			.addr = htole64(desc[i].addr),
			.key = htole32(desc[i].key),
			.len = htole32(desc[i].len),
		};

		memcpy(p, &d, sizeof(d));
		p += sizeof(d);
	}
	return (size_t)(p - (char *)buf);
}

int ibtrs_info_rsp_decode(const void *buf, size_t len, struct ibtrs_desc *desc,
			  unsigned int max)
{
	struct ibtrs_msg_info_rsp hdr;
	const char *p = buf;
	unsigned int i, cnt;

	if (len < sizeof(hdr))
		return -EPROTO;
	memcpy(&hdr, p, sizeof(hdr));
	if (le16toh(hdr.type) != IBTRS_MSG_INFO_RSP)
		return -EPROTO;
	cnt = le16toh(hdr.sg_cnt);
	if (!cnt || cnt > max || cnt > IBTRS_MAX_INFO_DESCS ||
	    len != sizeof(hdr) + cnt * sizeof(struct ibtrs_sg_desc))
		return -EPROTO;
	p += sizeof(hdr);
	for (i = 0; i < cnt; i++) {
		struct ibtrs_sg_desc d;

		memcpy(&d, p + i * sizeof(d), sizeof(d));
		desc[i].addr = le64toh(d.addr);
		desc[i].key = le32toh(d.key);
		desc[i].len = le32toh(d.len);
		if (!desc[i].len)
			return -EPROTO;
	}
	return (int)cnt;
}

void ibtrs_trailer_encode(struct ibtrs_trailer *m,
			  const struct ibtrs_req_trailer *t)
{
	struct ibtrs_trailer v = {
		.type = htole16(t->dir == IBTRS_READ ? IBTRS_TRAILER_READ :
						       IBTRS_TRAILER_WRITE),
		.usr_len = htole16(t->usr_len),
		.gen = htole32(t->gen),
		.desc = {
			.addr = htole64(t->desc.addr),
			.key = htole32(t->desc.key),
			.len = htole32(t->desc.len),
		},
	};

	memcpy(m, &v, sizeof(v));
}

int ibtrs_trailer_decode(const void *buf, struct ibtrs_req_trailer *t)
{
	struct ibtrs_trailer m;

	memcpy(&m, buf, sizeof(m));
	switch (le16toh(m.type)) {
	case IBTRS_TRAILER_READ:
		t->dir = IBTRS_READ;
		break;
	case IBTRS_TRAILER_WRITE:
		t->dir = IBTRS_WRITE;
		break;
	default:
		return -EPROTO;
	}
	t->usr_len = le16toh(m.usr_len);
	t->gen = le32toh(m.gen);
	t->desc.addr = le64toh(m.desc.addr);
	t->desc.key = le32toh(m.desc.key);
	t->desc.len = le32toh(m.desc.len);
	if (t->usr_len > IBTRS_MAX_USR_MSG)
		return -EPROTO;
	return 0;
}

uint32_t ibtrs_imm_rsp(uint32_t chunk, int err)
{
	uint32_t e;

	/* Success is 0; a positive value or one out of range becomes EIO. */
	if (!err)
		e = 0;
	else if (err < 0 && err >= -IBTRS_IMM_MAX_ERRNO)
		e = (uint32_t)-err;
	else
		e = EIO;
	return ((uint32_t)IBTRS_IMM_IO_RSP << IBTRS_IMM_TYPE_SHIFT) |
	       (e << IBTRS_IMM_RSP_ID_BITS) |
	       (chunk & ((1u << IBTRS_IMM_RSP_ID_BITS) - 1));
}

void ibtrs_imm_rsp_unpack(uint32_t imm, uint32_t *chunk, int *err)
{
	uint32_t payload = imm & IBTRS_IMM_PAYLOAD_MASK;

	*chunk = payload & ((1u << IBTRS_IMM_RSP_ID_BITS) - 1);
	*err = -(int)(payload >> IBTRS_IMM_RSP_ID_BITS);
}
