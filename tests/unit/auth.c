// SPDX-License-Identifier: MIT
/*
 * auth.c - the handshake's cryptography: X25519 and HMAC-SHA-256 against
 * their RFC vectors, both sides of a key exchange agree, a low-order
 * point is refused, and every field of the transcript, of the secret's
 * inputs and of the server's proof changes the result.
 */
#include "auth.h"
#include "test.h"

static void unhex(const char *hex, uint8_t *out, size_t len)
{
	size_t i;

	CHECK_EQ(strlen(hex), 2 * len);
	for (i = 0; i < len; i++)
		CHECK_EQ(sscanf(hex + 2 * i, "%2hhx", &out[i]), 1);
}

static void check_hex(const uint8_t *got, const char *want_hex)
{
	uint8_t want[IBTRS_AUTH_KEY_LEN];

	unhex(want_hex, want, sizeof(want));
	CHECK(!memcmp(got, want, sizeof(want)));
}

/* RFC 7748, 5.2 (first vector) and 6.1 (the Diffie-Hellman example). */
static void test_x25519(void)
{
	uint8_t k[32], u[32], out[32], a[32], b[32], apub[32], bpub[32];
	uint8_t nine[32] = { 9 }, s1[32], s2[32], zero[32] = { 0 };

	unhex("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
	      k, 32);
	unhex("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
	      u, 32);
	CHECK_EQ(ibtrs_auth_x25519(out, k, u), 0);
	check_hex(
		out,
		"c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552");

	unhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
	      a, 32);
	unhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb",
	      b, 32);
	CHECK_EQ(ibtrs_auth_x25519(apub, a, nine), 0);
	check_hex(
		apub,
		"8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
	CHECK_EQ(ibtrs_auth_x25519(bpub, b, nine), 0);
	check_hex(
		bpub,
		"de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
	CHECK_EQ(ibtrs_auth_x25519(s1, a, bpub), 0);
	CHECK_EQ(ibtrs_auth_x25519(s2, b, apub), 0);
	check_hex(
		s1,
		"4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
	CHECK(!memcmp(s1, s2, 32));

	/* A low-order point (u = 0) gives the all-zero secret: refused. */
	CHECK_EQ(ibtrs_auth_x25519(out, a, zero), -EINVAL);
}

/* Fresh key pairs: clamped, distinct, pub = X25519(priv, 9), agreeing. */
static void test_keypair(void)
{
	uint8_t p1[32], q1[32], p2[32], q2[32], nine[32] = { 9 }, q[32];
	uint8_t s1[32], s2[32];

	CHECK_EQ(ibtrs_auth_keypair(p1, q1), 0);
	CHECK_EQ(ibtrs_auth_keypair(p2, q2), 0);
	CHECK(memcmp(p1, p2, 32) && memcmp(q1, q2, 32));
	CHECK_EQ(p1[0] & 7, 0);
	CHECK_EQ(p1[31] & 0xc0, 0x40);
	CHECK_EQ(ibtrs_auth_x25519(q, p1, nine), 0);
	CHECK(!memcmp(q, q1, 32));
	CHECK_EQ(ibtrs_auth_x25519(s1, p1, q2), 0);
	CHECK_EQ(ibtrs_auth_x25519(s2, p2, q1), 0);
	CHECK(!memcmp(s1, s2, 32));
}

/* RFC 4231, test case 2. */
static void test_hmac(void)
{
	static const char data[] = "what do ya want for nothing?";
	uint8_t out[32];

	ibtrs_auth_hmac(out, "Jefe", 4, data, strlen(data));
	check_hex(
		out,
		"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

static void base_hs(struct ibtrs_auth_hs *hs)
{
	memset(hs, 0, sizeof(*hs));
	hs->version = IBTRS_PROTO_VER;
	t_fill(hs->nc, sizeof(hs->nc), 1);
	t_fill(hs->ns, sizeof(hs->ns), 2);
	t_fill(hs->sess_uuid, sizeof(hs->sess_uuid), 3);
	t_fill(hs->path_uuid, sizeof(hs->path_uuid), 4);
	hs->cid = 1;
	hs->cid_num = 2;
	hs->flags = IBTRS_CONN_FIRST;
	hs->identity = "alice";
	t_fill(hs->pub_c, sizeof(hs->pub_c), 5);
}

/* Every proof and the secret of @hs, in that order, into @out[5]. */
static void all_proofs(const struct ibtrs_auth_hs *hs, uint8_t out[5][32])
{
	static const uint8_t key[32] = { 0x11, 0x22 }, pub_s[32] = { 0x33 };
	static const uint8_t shared[32] = { 0x44 };

	ibtrs_auth_proof_psk(out[0], key, sizeof(key), hs);
	ibtrs_auth_proof_sess(out[1], key, hs);
	ibtrs_auth_proof_srv(out[2], key, sizeof(key), hs, pub_s, 3, 7);
	ibtrs_auth_proof_srv(out[3], key, sizeof(key), hs, NULL, 1, 7);
	ibtrs_auth_secret(out[4], key, sizeof(key), shared, hs, pub_s);
}

/*
 * Every field of the transcript changes every proof; the secret's inputs
 * (nonces, session, client key) change it, the others do not.
 */
static void test_transcript(void)
{
	uint8_t ref[5][32], got[5][32], t[IBTRS_AUTH_TRANSCRIPT_MAX];
	struct ibtrs_auth_hs hs;
	unsigned int field, i;

	base_hs(&hs);
	all_proofs(&hs, ref);
	for (i = 0; i < 5; i++)
		for (field = i + 1; field < 5; field++)
			CHECK(memcmp(ref[i], ref[field], 32));
	CHECK(ibtrs_auth_transcript(&hs, t) <= IBTRS_AUTH_TRANSCRIPT_MAX);
	for (field = 0; field < 11; field++) {
		bool in_secret = false;

		base_hs(&hs);
		switch (field) {
		case 0:
			hs.version ^= 1;
			break;
		case 1:
			hs.nc[15] ^= 1;
			in_secret = true;
			break;
		case 2:
			hs.ns[0] ^= 0x80;
			in_secret = true;
			break;
		case 3:
			hs.sess_uuid[7] ^= 1;
			in_secret = true;
			break;
		case 4:
			hs.path_uuid[9] ^= 1;
			break;
		case 5:
			hs.cid = 0;
			break;
		case 6:
			hs.cid_num = 3;
			break;
		case 7:
			hs.flags = 0;
			break;
		case 8:
			hs.identity = "alicf";
			break;
		case 9:
			hs.identity = "";
			break;
		case 10:
			hs.pub_c[31] ^= 1;
			in_secret = true;
			break;
		}
		all_proofs(&hs, got);
		for (i = 0; i < 4; i++)
			if (!memcmp(ref[i], got[i], 32)) {
				fprintf(stderr,
					"field %u: proof %u unchanged\n", field,
					i);
				exit(1);
			}
		CHECK_EQ(!memcmp(ref[4], got[4], 32), !in_secret);
	}
}

/* The server's proof binds its key, flags and incarnation; the secret
 * binds the PSK, the shared secret and the server's key. */
static void test_bindings(void)
{
	static const uint8_t key[32] = { 1 }, key2[32] = { 2 };
	uint8_t pub_s[32] = { 9 }, shared[32] = { 4 }, a[32], b[32];
	struct ibtrs_auth_hs hs;

	base_hs(&hs);
	ibtrs_auth_proof_srv(a, key, 32, &hs, pub_s, 3, 7);
	ibtrs_auth_proof_srv(b, key2, 32, &hs, pub_s, 3, 7);
	CHECK(memcmp(a, b, 32));
	ibtrs_auth_proof_srv(b, key, 32, &hs, pub_s, 1, 7);
	CHECK(memcmp(a, b, 32));
	ibtrs_auth_proof_srv(b, key, 32, &hs, pub_s, 3, 8);
	CHECK(memcmp(a, b, 32));
	pub_s[5] ^= 1;
	ibtrs_auth_proof_srv(b, key, 32, &hs, pub_s, 3, 7);
	CHECK(memcmp(a, b, 32));
	pub_s[5] ^= 1;
	ibtrs_auth_proof_srv(b, key, 32, &hs, pub_s, 3, 7);
	CHECK(!memcmp(a, b, 32));

	ibtrs_auth_secret(a, key, 32, shared, &hs, pub_s);
	ibtrs_auth_secret(b, NULL, 0, shared, &hs, pub_s);
	CHECK(memcmp(a, b, 32));
	ibtrs_auth_secret(b, key2, 32, shared, &hs, pub_s);
	CHECK(memcmp(a, b, 32));
	shared[0] ^= 1;
	ibtrs_auth_secret(b, key, 32, shared, &hs, pub_s);
	CHECK(memcmp(a, b, 32));
	shared[0] ^= 1;
	pub_s[0] ^= 1;
	ibtrs_auth_secret(b, key, 32, shared, &hs, pub_s);
	CHECK(memcmp(a, b, 32));

	CHECK(ibtrs_auth_equal(a, a));
	memcpy(b, a, 32);
	b[31] ^= 1;
	CHECK(!ibtrs_auth_equal(a, b));
}

int main(void)
{
	test_x25519();
	test_keypair();
	test_hmac();
	test_transcript();
	test_bindings();
	printf("auth: ok\n");
	return 0;
}
