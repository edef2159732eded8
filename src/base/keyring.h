/* SPDX-License-Identifier: MIT */
/*
 * keyring.h - pre-shared keys, read from a file in the format of GnuTLS
 * psktool: one "identity:hexkey" per line (the file nbdkit --tls-psk and
 * qemu's tls-creds-psk read). The same keys serve TLS on the tcp backend
 * and the authentication of every connection (docs/protocol.md).
 */
#ifndef IBTRS_BASE_KEYRING_H
#define IBTRS_BASE_KEYRING_H

#include <stddef.h>
#include <stdint.h>

#define IBTRS_IDENTITY_MAX 128 /* bytes of an identity, NUL excluded */
#define IBTRS_PSK_MIN 16       /* bytes of a key: at least 128 bits */
#define IBTRS_PSK_MAX 64

/**
 * struct ibtrs_psk - one pre-shared key
 * @identity: printable, no ':' nor spaces, NUL-terminated
 * @key: the key bytes (hex in the file)
 * @len: bytes of @key, IBTRS_PSK_MIN..IBTRS_PSK_MAX
 */
struct ibtrs_psk {
	char identity[IBTRS_IDENTITY_MAX + 1];
	uint8_t key[IBTRS_PSK_MAX];
	size_t len;
};

/** struct ibtrs_keyring - the keys of one file, in file order */
struct ibtrs_keyring {
	struct ibtrs_psk *keys;
	unsigned int nr;
};

/*
 * Read the key file @path. Blank lines and lines starting with '#' are
 * skipped; an identity given twice, a bad identity, a key that is not
 * even-length hex or is shorter than IBTRS_PSK_MIN bytes, or a file
 * without keys is an error: @err (of @errlen bytes) then names the file,
 * the line and the cause. A file readable by others than its owner is
 * refused too (the keys are secrets). The keys are wiped from every
 * buffer but *@kr.
 * Return: 0, or a negative errno (-EINVAL for bad content).
 */
int ibtrs_keyring_load(const char *path, struct ibtrs_keyring **kr, char *err,
		       size_t errlen);

/*
 * Parse the content of a key file, @len bytes at @buf (no NUL needed), as
 * ibtrs_keyring_load() does; @name (or "(buffer)" when NULL) stands for
 * the file in @err. Lines end at '\n' only: a NUL byte in a line makes it
 * bad. No check of the file's mode: that is the reader's. @buf is left
 * as it is (the caller wipes it).
 * Return: 0 with *@kr set, or a negative errno (-EINVAL for bad content).
 */
int ibtrs_keyring_parse(const char *buf, size_t len, const char *name,
			struct ibtrs_keyring **kr, char *err, size_t errlen);

/* The key of @identity, or NULL. */
const struct ibtrs_psk *ibtrs_keyring_find(const struct ibtrs_keyring *kr,
					   const char *identity);

/* Wipe and free @kr (NULL is fine). */
void ibtrs_keyring_free(struct ibtrs_keyring *kr);

/* Wipe @len bytes at @p in a way the compiler keeps. */
void ibtrs_wipe(void *p, size_t len);

/* @len random bytes from getrandom(2) into @buf; blocks until the kernel's
 * pool is ready. Return: 0, or a negative errno. */
int ibtrs_random(void *buf, size_t len);

#endif /* IBTRS_BASE_KEYRING_H */
