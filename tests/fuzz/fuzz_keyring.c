// SPDX-License-Identifier: MIT
/*
 * fuzz_keyring.c - the key file parser on any content: the key file a
 * server or client reads at start, from an administrator, an installer or
 * a configuration tool.
 *
 * The first input byte is a mode. Mode bit 0 clear: the rest of the input
 * is the file. Set: a count byte c, then a template, written c % 64 + 1
 * times, or (mode MODE_MANY) 4090 + c % 16 times, each copy behind its
 * own identity prefix "k<n>", so that files of many keys, and of more than
 * the loader takes, are in reach of short inputs. MODE_MANY is one value
 * of 256 since such a file costs a millisecond or so. The content goes
 * to ibtrs_keyring_parse(), what ibtrs_keyring_load() calls on the file
 * it read: from memory, thousands of inputs a second (the reader, its
 * mode check and its errors are the unit test's).
 *
 * A file that loads holds 1 to 4096 keys, each with an identity of 1 to
 * 128 printable bytes without ':' and a key of 16 to 64 bytes, no
 * identity twice, each found by its identity; written back in the file
 * format, it loads to the same keys. A file that does not load says why.
 */
#include <errno.h>

#include "fuzz.h"
#include "keyring.h"

#define KEYS_MAX 4096 /* the loader's limit (keyring.c) */
#define MODE_MANY 0xa5
#define ROUND_TRIP_MAX 64 /* keys: beyond, the round trip costs too much */

/**
 * check_keys() - what a loaded key file promises
 * @kr: the keys
 */
static void check_keys(const struct ibtrs_keyring *kr)
{
	unsigned int i, j;
	size_t len;

	FUZZ_CHECK(kr && kr->nr >= 1 && kr->nr <= KEYS_MAX && kr->keys);
	for (i = 0; i < kr->nr; i++) {
		const struct ibtrs_psk *k = &kr->keys[i];

		len = strnlen(k->identity, sizeof(k->identity));
		FUZZ_CHECK(len >= 1 && len <= IBTRS_IDENTITY_MAX);
		for (j = 0; j < len; j++)
			FUZZ_CHECK(k->identity[j] > ' ' &&
				   k->identity[j] < 0x7f &&
				   k->identity[j] != ':');
		FUZZ_CHECK(k->len >= IBTRS_PSK_MIN && k->len <= IBTRS_PSK_MAX);
		/* Beyond a few keys, the first and the last (the cost). */
		if (kr->nr <= ROUND_TRIP_MAX || !i || i == kr->nr - 1)
			FUZZ_CHECK(ibtrs_keyring_find(kr, k->identity) == k);
	}
}

/**
 * round_trip() - write @kr in the file format, load it, compare
 * @kr: the keys
 */
static void round_trip(const struct ibtrs_keyring *kr)
{
	struct ibtrs_keyring *again = NULL;
	size_t cap = (size_t)kr->nr *
		     (IBTRS_IDENTITY_MAX + 2 + 2 * IBTRS_PSK_MAX + 1);
	char *buf = malloc(cap + 1), err[512];
	unsigned int i, j;
	size_t n = 0;

	FUZZ_CHECK(buf);
	for (i = 0; i < kr->nr; i++) {
		const struct ibtrs_psk *k = &kr->keys[i];

		n += (size_t)sprintf(buf + n, "%s:", k->identity);
		for (j = 0; j < k->len; j++)
			n += (size_t)sprintf(buf + n, "%02x", k->key[j]);
		buf[n++] = '\n';
	}
	FUZZ_CHECK(!ibtrs_keyring_parse(buf, n, "again", &again, err,
					sizeof(err)));
	free(buf);
	FUZZ_CHECK(again->nr == kr->nr);
	for (i = 0; i < kr->nr; i++) {
		FUZZ_CHECK(
			!strcmp(again->keys[i].identity, kr->keys[i].identity));
		FUZZ_CHECK(again->keys[i].len == kr->keys[i].len);
		FUZZ_CHECK(!memcmp(again->keys[i].key, kr->keys[i].key,
				   kr->keys[i].len));
	}
	ibtrs_keyring_free(again);
}

/**
 * LLVMFuzzerTestOneInput() - load one key file
 * @data: a mode byte, then the file or the template (see above)
 * @size: its length
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct ibtrs_keyring *kr = NULL;
	uint8_t mode = fuzz_u8(&in);
	char err[512], *buf = NULL;
	const char *file = (const char *)in.p;
	size_t len = in.n;
	int ret;

	if (mode & 1) {
		uint8_t c = fuzz_u8(&in);
		unsigned int copies = mode == MODE_MANY ? 4090u + c % 16u
							: c % 64u + 1u;
		unsigned int i;
		char *p;

		buf = malloc(copies * (in.n + 8));
		FUZZ_CHECK(buf);
		for (p = buf, i = 0; i < copies; i++) {
			p += sprintf(p, "k%u", i);
			memcpy(p, in.p, in.n);
			p += in.n;
		}
		file = buf;
		len = (size_t)(p - buf);
	}
	err[0] = '\0';
	ret = ibtrs_keyring_parse(file, len, "fuzz", &kr, err, sizeof(err));
	free(buf);
	if (ret) {
		FUZZ_CHECK(ret == -EINVAL || ret == -ENOMEM);
		FUZZ_CHECK(!kr && err[0] && memchr(err, '\0', sizeof(err)));
		return 0;
	}
	check_keys(kr);
	if (kr->nr <= ROUND_TRIP_MAX)
		round_trip(kr);
	ibtrs_keyring_free(kr);
	return 0;
}
