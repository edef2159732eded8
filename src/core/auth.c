// SPDX-License-Identifier: MIT
/*
 * auth.c - the cryptography of the connection handshake (auth.h).
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include <nettle/curve25519.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>

#include "auth.h"
#include "keyring.h"

_Static_assert(IBTRS_AUTH_KEY_LEN == CURVE25519_SIZE, "X25519 key size");
_Static_assert(IBTRS_AUTH_KEY_LEN == SHA256_DIGEST_SIZE, "proof size");
_Static_assert(IBTRS_AUTH_ID_MAX == IBTRS_IDENTITY_MAX, "identity size");

static const uint8_t zero_key[IBTRS_AUTH_KEY_LEN];

static uint8_t *put(uint8_t *p, const void *src, size_t len)
{
	memcpy(p, src, len);
	return p + len;
}

static uint8_t *put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	return put(p, &v, sizeof(v));
}

size_t ibtrs_auth_transcript(const struct ibtrs_auth_hs *hs, uint8_t *buf)
{
	const char *id = hs->identity ? hs->identity : "";
	size_t id_len = strnlen(id, IBTRS_AUTH_ID_MAX);
	uint8_t *p = buf;

	p = put(p, IBTRS_AUTH_LABEL, sizeof(IBTRS_AUTH_LABEL));
	p = put16(p, hs->version);
	p = put(p, hs->nc, IBTRS_NONCE_LEN);
	p = put(p, hs->ns, IBTRS_NONCE_LEN);
	p = put(p, hs->sess_uuid, IBTRS_UUID_LEN);
	p = put(p, hs->path_uuid, IBTRS_UUID_LEN);
	p = put16(p, hs->cid);
	p = put16(p, hs->cid_num);
	*p++ = hs->flags;
	*p++ = (uint8_t)id_len;
	p = put(p, id, id_len);
	p = put(p, hs->pub_c, IBTRS_AUTH_KEY_LEN);
	return (size_t)(p - buf);
}

static void clamp(uint8_t k[IBTRS_AUTH_KEY_LEN])
{
	k[0] &= 248;
	k[31] &= 127;
	k[31] |= 64;
}

int ibtrs_auth_keypair(uint8_t priv[IBTRS_AUTH_KEY_LEN],
		       uint8_t pub[IBTRS_AUTH_KEY_LEN])
{
	int ret = ibtrs_random(priv, IBTRS_AUTH_KEY_LEN);

	if (ret)
		return ret;
	clamp(priv);
	curve25519_mul_g(pub, priv);
	return 0;
}

int ibtrs_auth_x25519(uint8_t out[IBTRS_AUTH_KEY_LEN],
		      const uint8_t priv[IBTRS_AUTH_KEY_LEN],
		      const uint8_t pub[IBTRS_AUTH_KEY_LEN])
{
	uint8_t k[IBTRS_AUTH_KEY_LEN];

	memcpy(k, priv, sizeof(k));
	clamp(k);
	curve25519_mul(out, k, pub);
	ibtrs_wipe(k, sizeof(k));
	/* A low-order point gives zero: a peer choosing the secret. */
	if (memeql_sec(out, zero_key, IBTRS_AUTH_KEY_LEN))
		return -EINVAL;
	return 0;
}

void ibtrs_auth_hmac(uint8_t out[IBTRS_AUTH_KEY_LEN], const void *key,
		     size_t klen, const void *data, size_t len)
{
	struct hmac_sha256_ctx c;

	hmac_sha256_set_key(&c, klen, key);
	hmac_sha256_update(&c, len, data);
	hmac_sha256_digest(&c, SHA256_DIGEST_SIZE, out);
	ibtrs_wipe(&c, sizeof(c));
}

/* HMAC(@key, @label (NUL included) || transcript(@hs) || @tail). */
static void proof(uint8_t out[IBTRS_AUTH_KEY_LEN], const void *key, size_t klen,
		  const char *label, const struct ibtrs_auth_hs *hs,
		  const void *tail, size_t tail_len)
{
	uint8_t t[IBTRS_AUTH_TRANSCRIPT_MAX];
	struct hmac_sha256_ctx c;
	size_t n = ibtrs_auth_transcript(hs, t);

	hmac_sha256_set_key(&c, klen, key);
	hmac_sha256_update(&c, strlen(label) + 1, (const uint8_t *)label);
	hmac_sha256_update(&c, n, t);
	if (tail_len)
		hmac_sha256_update(&c, tail_len, tail);
	hmac_sha256_digest(&c, SHA256_DIGEST_SIZE, out);
	ibtrs_wipe(&c, sizeof(c));
}

void ibtrs_auth_proof_psk(uint8_t out[IBTRS_AUTH_KEY_LEN], const void *psk,
			  size_t psk_len, const struct ibtrs_auth_hs *hs)
{
	proof(out, psk, psk_len, "client", hs, NULL, 0);
}

void ibtrs_auth_proof_sess(uint8_t out[IBTRS_AUTH_KEY_LEN],
			   const uint8_t secret[IBTRS_AUTH_KEY_LEN],
			   const struct ibtrs_auth_hs *hs)
{
	proof(out, secret, IBTRS_AUTH_KEY_LEN, "client-join", hs, NULL, 0);
}

void ibtrs_auth_secret(uint8_t out[IBTRS_AUTH_KEY_LEN], const void *psk,
		       size_t psk_len, const uint8_t shared[IBTRS_AUTH_KEY_LEN],
		       const struct ibtrs_auth_hs *hs,
		       const uint8_t pub_s[IBTRS_AUTH_KEY_LEN])
{
	static const char label[] = IBTRS_AUTH_LABEL " session";
	uint8_t m[sizeof(label) + 2 * IBTRS_NONCE_LEN + IBTRS_UUID_LEN +
		  3 * IBTRS_AUTH_KEY_LEN];
	uint8_t *p = m;

	p = put(p, label, sizeof(label));
	p = put(p, shared, IBTRS_AUTH_KEY_LEN);
	p = put(p, hs->nc, IBTRS_NONCE_LEN);
	p = put(p, hs->ns, IBTRS_NONCE_LEN);
	p = put(p, hs->sess_uuid, IBTRS_UUID_LEN);
	p = put(p, hs->pub_c, IBTRS_AUTH_KEY_LEN);
	p = put(p, pub_s, IBTRS_AUTH_KEY_LEN);
	if (!psk) {
		psk = zero_key;
		psk_len = sizeof(zero_key);
	}
	ibtrs_auth_hmac(out, psk, psk_len, m, (size_t)(p - m));
	ibtrs_wipe(m, sizeof(m));
}

void ibtrs_auth_proof_srv(uint8_t out[IBTRS_AUTH_KEY_LEN], const void *key,
			  size_t klen, const struct ibtrs_auth_hs *hs,
			  const uint8_t pub_s[IBTRS_AUTH_KEY_LEN],
			  uint32_t flags, uint64_t incarnation)
{
	uint8_t tail[IBTRS_AUTH_KEY_LEN + 4 + 8], *p = tail;
	uint32_t f = htole32(flags);
	uint64_t inc = htole64(incarnation);

	p = put(p, pub_s ? pub_s : zero_key, IBTRS_AUTH_KEY_LEN);
	p = put(p, &f, sizeof(f));
	p = put(p, &inc, sizeof(inc));
	proof(out, key, klen, "server", hs, tail, (size_t)(p - tail));
}

bool ibtrs_auth_equal(const uint8_t a[IBTRS_AUTH_KEY_LEN],
		      const uint8_t b[IBTRS_AUTH_KEY_LEN])
{
	return memeql_sec(a, b, IBTRS_AUTH_KEY_LEN);
}
