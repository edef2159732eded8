/* SPDX-License-Identifier: MIT */
/*
 * auth.h - the cryptography of the connection handshake (docs/protocol.md,
 * "Authentication"): ephemeral X25519 keys, the transcript both sides
 * prove, the client's and the server's proofs (HMAC-SHA-256) and the
 * per-session secret. Pure functions over nettle: no I/O, no state; the
 * callers wipe the secrets they hold.
 */
#ifndef IBTRS_CORE_AUTH_H
#define IBTRS_CORE_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* Label of the transcript: the scheme and the protocol version. */
#define IBTRS_AUTH_LABEL "IBTRS-AUTH-1.1"

/* Room for the longest transcript. */
#define IBTRS_AUTH_TRANSCRIPT_MAX                                 \
	(sizeof(IBTRS_AUTH_LABEL) + 2 + 2 * IBTRS_NONCE_LEN +     \
	 2 * IBTRS_UUID_LEN + 2 + 2 + 1 + 1 + IBTRS_AUTH_ID_MAX + \
	 IBTRS_AUTH_KEY_LEN)

/**
 * struct ibtrs_auth_hs - what one connection's handshake binds
 * @version: conn_req.version
 * @nc: the client's nonce (conn_req)
 * @ns: the server's nonce (conn_rsp)
 * @sess_uuid, @path_uuid, @cid, @cid_num, @flags: of conn_req
 * @identity: the identity of AUTH_REQ, "" without a key
 * @pub_c: the client's public key of AUTH_REQ
 */
struct ibtrs_auth_hs {
	uint16_t version;
	uint8_t nc[IBTRS_NONCE_LEN];
	uint8_t ns[IBTRS_NONCE_LEN];
	uint8_t sess_uuid[IBTRS_UUID_LEN];
	uint8_t path_uuid[IBTRS_UUID_LEN];
	uint16_t cid;
	uint16_t cid_num;
	uint8_t flags;
	const char *identity;
	uint8_t pub_c[IBTRS_AUTH_KEY_LEN];
};

/*
 * The transcript of @hs into @buf (at least IBTRS_AUTH_TRANSCRIPT_MAX
 * bytes): the label (NUL included), then every field in a fixed order and
 * length, the identity behind its length byte. Return: its length.
 */
size_t ibtrs_auth_transcript(const struct ibtrs_auth_hs *hs, uint8_t *buf);

/*
 * A fresh ephemeral key pair: @priv from ibtrs_random(), clamped (RFC
 * 7748), @pub = X25519(@priv, 9). Return: 0 or a negative errno.
 */
int ibtrs_auth_keypair(uint8_t priv[IBTRS_AUTH_KEY_LEN],
		       uint8_t pub[IBTRS_AUTH_KEY_LEN]);

/*
 * X25519(@priv, @pub) into @out (the scalar clamped as RFC 7748 says).
 * Return: 0, or -EINVAL for an all-zero result (a low-order @pub).
 */
int ibtrs_auth_x25519(uint8_t out[IBTRS_AUTH_KEY_LEN],
		      const uint8_t priv[IBTRS_AUTH_KEY_LEN],
		      const uint8_t pub[IBTRS_AUTH_KEY_LEN]);

/* HMAC-SHA-256 of @len bytes at @data under @key of @klen bytes. */
void ibtrs_auth_hmac(uint8_t out[IBTRS_AUTH_KEY_LEN], const void *key,
		     size_t klen, const void *data, size_t len);

/* proof_psk = HMAC(@psk, "client" || transcript(@hs)). */
void ibtrs_auth_proof_psk(uint8_t out[IBTRS_AUTH_KEY_LEN], const void *psk,
			  size_t psk_len, const struct ibtrs_auth_hs *hs);

/* proof_sess = HMAC(@secret, "client-join" || transcript(@hs)). */
void ibtrs_auth_proof_sess(uint8_t out[IBTRS_AUTH_KEY_LEN],
			   const uint8_t secret[IBTRS_AUTH_KEY_LEN],
			   const struct ibtrs_auth_hs *hs);

/*
 * The session's secret S = HMAC(@psk, or 32 zero bytes when @psk is
 * NULL, IBTRS_AUTH_LABEL " session" || @shared || Nc || Ns || sess_uuid
 * || pub_c || @pub_s), where @shared is the X25519 result of the
 * session's first connection.
 */
void ibtrs_auth_secret(uint8_t out[IBTRS_AUTH_KEY_LEN], const void *psk,
		       size_t psk_len, const uint8_t shared[IBTRS_AUTH_KEY_LEN],
		       const struct ibtrs_auth_hs *hs,
		       const uint8_t pub_s[IBTRS_AUTH_KEY_LEN]);

/*
 * proof_s = HMAC(@key, "server" || transcript(@hs) || @pub_s (zero when
 * none) || @flags (4 bytes LE) || @incarnation (8 bytes LE)); @key is the
 * PSK with keys, else the session's secret.
 */
void ibtrs_auth_proof_srv(uint8_t out[IBTRS_AUTH_KEY_LEN], const void *key,
			  size_t klen, const struct ibtrs_auth_hs *hs,
			  const uint8_t pub_s[IBTRS_AUTH_KEY_LEN],
			  uint32_t flags, uint64_t incarnation);

/* Constant-time comparison of two proofs. */
bool ibtrs_auth_equal(const uint8_t a[IBTRS_AUTH_KEY_LEN],
		      const uint8_t b[IBTRS_AUTH_KEY_LEN]);

#endif /* IBTRS_CORE_AUTH_H */
