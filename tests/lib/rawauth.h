/* SPDX-License-Identifier: MIT */
/*
 * rawauth.h - the connection handshake (docs/protocol.md,
 * "Authentication") done by hand, for tests that speak the wire format
 * from a raw socket: the client's conn_req and AUTH_REQ, its check of
 * AUTH_RSP, and the server's AUTH_RSP for a fake server.
 */
#ifndef IBTRS_RAWAUTH_H
#define IBTRS_RAWAUTH_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "auth.h"
#include "keyring.h"
#include "proto.h"
#include "test.h"

/**
 * struct ra_hs - one connection's handshake, either side
 * @hs: what the proofs bind
 * @id: the identity @hs names
 * @priv: the client's ephemeral private key
 */
struct ra_hs {
	struct ibtrs_auth_hs hs;
	char id[IBTRS_AUTH_ID_MAX + 1];
	uint8_t priv[IBTRS_AUTH_KEY_LEN];
};

/* conn_req @r gets a fresh nonce and its wire form into @m; @h records
 * it. @r->caps gets IBTRS_CAP_AUTH unless @no_auth. */
static inline void ra_conn_req(struct ra_hs *h, struct ibtrs_conn_req *r,
			       struct ibtrs_msg_conn_req *m, bool no_auth)
{
	memset(h, 0, sizeof(*h));
	CHECK_EQ(ibtrs_random(r->nonce, sizeof(r->nonce)), 0);
	if (!no_auth)
		r->caps |= IBTRS_CAP_AUTH;
	ibtrs_conn_req_encode(m, r);
	h->hs.version = r->version;
	memcpy(h->hs.nc, r->nonce, IBTRS_NONCE_LEN);
	memcpy(h->hs.sess_uuid, r->sess_uuid, IBTRS_UUID_LEN);
	memcpy(h->hs.path_uuid, r->path_uuid, IBTRS_UUID_LEN);
	h->hs.cid = r->cid;
	h->hs.cid_num = r->cid_num;
	h->hs.flags = r->first_conn ? IBTRS_CONN_FIRST : 0;
	h->hs.identity = h->id;
}

/*
 * AUTH_REQ for the server's nonce @ns into @m: with @psk the proof of its
 * key, with @secret the proof of the session's secret.
 */
static inline void ra_auth_req(struct ra_hs *h, const uint8_t *ns,
			       const struct ibtrs_psk *psk,
			       const uint8_t *secret,
			       struct ibtrs_msg_auth_req *m)
{
	struct ibtrs_auth_req ar;

	memset(&ar, 0, sizeof(ar));
	memcpy(h->hs.ns, ns, IBTRS_NONCE_LEN);
	CHECK_EQ(ibtrs_auth_keypair(h->priv, ar.pub), 0);
	memcpy(h->hs.pub_c, ar.pub, IBTRS_AUTH_KEY_LEN);
	if (psk) {
		snprintf(h->id, sizeof(h->id), "%s", psk->identity);
		ar.flags |= IBTRS_AUTH_PSK;
		ar.id_len = (uint8_t)strlen(h->id);
		memcpy(ar.identity, h->id, ar.id_len);
		ibtrs_auth_proof_psk(ar.proof_psk, psk->key, psk->len, &h->hs);
	}
	if (secret) {
		ar.flags |= IBTRS_AUTH_JOIN;
		ibtrs_auth_proof_sess(ar.proof_sess, secret, &h->hs);
	}
	ibtrs_auth_req_encode(m, &ar);
}

/*
 * Check AUTH_RSP @buf of @len bytes as the client. Return: the server's
 * positive errno for a refusal, -1 for a proof that is not the server's,
 * 0 on success: *@incarnation set, and for a new session its secret in
 * @secret (which otherwise holds the one proved with).
 */
static inline int ra_auth_rsp(struct ra_hs *h, const void *buf, size_t len,
			      const struct ibtrs_psk *psk, uint8_t *secret,
			      uint64_t *incarnation)
{
	uint8_t shared[IBTRS_AUTH_KEY_LEN], s[IBTRS_AUTH_KEY_LEN];
	uint8_t proof[IBTRS_AUTH_KEY_LEN];
	struct ibtrs_auth_rsp r;
	bool created;

	CHECK_EQ(ibtrs_auth_rsp_decode(buf, len, &r), 0);
	if (r.err)
		return r.err;
	created = r.flags & IBTRS_RSP_NEW_SESS;
	memcpy(s, secret, sizeof(s));
	if (created) {
		CHECK_EQ(ibtrs_auth_x25519(shared, h->priv, r.pub), 0);
		ibtrs_auth_secret(s, psk ? psk->key : NULL, psk ? psk->len : 0,
				  shared, &h->hs, r.pub);
	}
	if (psk)
		ibtrs_auth_proof_srv(proof, psk->key, psk->len, &h->hs,
				     created ? r.pub : NULL, r.flags,
				     r.incarnation);
	else
		ibtrs_auth_proof_srv(proof, s, sizeof(s), &h->hs,
				     created ? r.pub : NULL, r.flags,
				     r.incarnation);
	if (!ibtrs_auth_equal(proof, r.proof))
		return -1;
	memcpy(secret, s, sizeof(s));
	*incarnation = r.incarnation;
	return 0;
}

/*
 * A fake server's side: from the client's conn_req @cr, the server nonce
 * @ns and AUTH_REQ @buf of @len bytes, the AUTH_RSP into @m. With
 * @create a new session (incarnation @incarnation) whose secret goes to
 * @secret; else a join of the session of @secret. Proved with @psk, or
 * without keys with the secret.
 */
static inline void ra_srv_rsp(const struct ibtrs_conn_req *cr,
			      const uint8_t *ns, const void *buf, size_t len,
			      const struct ibtrs_psk *psk, uint64_t incarnation,
			      uint8_t *secret, bool create,
			      struct ibtrs_msg_auth_rsp *m)
{
	uint8_t priv[IBTRS_AUTH_KEY_LEN], shared[IBTRS_AUTH_KEY_LEN];
	struct ibtrs_auth_req ar;
	struct ibtrs_auth_rsp r = {
		.flags = IBTRS_RSP_INCARNATION,
		.incarnation = incarnation,
	};
	struct ibtrs_auth_hs hs = {
		.version = cr->version,
		.cid = cr->cid,
		.cid_num = cr->cid_num,
		.flags = cr->first_conn ? IBTRS_CONN_FIRST : 0,
	};

	CHECK_EQ(ibtrs_auth_req_decode(buf, len, &ar), 0);
	memcpy(hs.nc, cr->nonce, IBTRS_NONCE_LEN);
	memcpy(hs.ns, ns, IBTRS_NONCE_LEN);
	memcpy(hs.sess_uuid, cr->sess_uuid, IBTRS_UUID_LEN);
	memcpy(hs.path_uuid, cr->path_uuid, IBTRS_UUID_LEN);
	memcpy(hs.pub_c, ar.pub, IBTRS_AUTH_KEY_LEN);
	hs.identity = ar.identity;
	if (create) {
		r.flags |= IBTRS_RSP_NEW_SESS;
		CHECK_EQ(ibtrs_auth_keypair(priv, r.pub), 0);
		CHECK_EQ(ibtrs_auth_x25519(shared, priv, ar.pub), 0);
		ibtrs_auth_secret(secret, psk ? psk->key : NULL,
				  psk ? psk->len : 0, shared, &hs, r.pub);
	}
	if (psk)
		ibtrs_auth_proof_srv(r.proof, psk->key, psk->len, &hs,
				     create ? r.pub : NULL, r.flags,
				     r.incarnation);
	else
		ibtrs_auth_proof_srv(r.proof, secret, IBTRS_AUTH_KEY_LEN, &hs,
				     create ? r.pub : NULL, r.flags,
				     r.incarnation);
	ibtrs_auth_rsp_encode(m, &r);
}

#endif /* IBTRS_RAWAUTH_H */
