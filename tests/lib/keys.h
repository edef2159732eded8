/* SPDX-License-Identifier: MIT */
/*
 * keys.h - key files for tests: psktool-format files ("identity:hexkey"
 * lines) of mode 0600 in a fresh mkdtemp directory, keys from
 * ibtrs_random(). t_keys_cleanup() removes what t_keys_write() made.
 */
#ifndef IBTRS_TESTS_KEYS_H
#define IBTRS_TESTS_KEYS_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keyring.h"
#include "test.h"

#define T_KEY_LEN 32
#define T_KEYS_MAX_FILES 16

struct t_keys {
	char dir[64];
	char files[T_KEYS_MAX_FILES][128];
	unsigned int nr;
};

/* A fresh random key into @key (T_KEY_LEN bytes). */
static inline void t_key_new(uint8_t *key)
{
	CHECK_EQ(ibtrs_random(key, T_KEY_LEN), 0);
}

/*
 * A key file @name in @k's directory (made on first use) holding @n
 * lines @ids[i]:hex(@keys[i]). Return: its path, valid until cleanup.
 */
static inline const char *t_keys_write(struct t_keys *k, const char *name,
				       const char *const *ids,
				       const uint8_t (*keys)[T_KEY_LEN],
				       unsigned int n)
{
	char *path, dir[sizeof(k->dir)];
	unsigned int i, j;
	FILE *f;
	int fd;

	if (!k->dir[0]) {
		snprintf(k->dir, sizeof(k->dir), "/tmp/ibtrs-keys-XXXXXX");
		CHECK(mkdtemp(k->dir));
	}
	CHECK(k->nr < T_KEYS_MAX_FILES);
	path = k->files[k->nr++];
	memcpy(dir, k->dir, sizeof(dir));
	snprintf(path, sizeof(k->files[0]), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	f = fdopen(fd, "w");
	CHECK(f);
	for (i = 0; i < n; i++) {
		fprintf(f, "%s:", ids[i]);
		for (j = 0; j < T_KEY_LEN; j++)
			fprintf(f, "%02x", keys[i][j]);
		fprintf(f, "\n");
	}
	CHECK_EQ(fclose(f), 0);
	return path;
}

/* Remove the files and the directory of @k. */
static inline void t_keys_cleanup(struct t_keys *k)
{
	unsigned int i;

	for (i = 0; i < k->nr; i++)
		unlink(k->files[i]);
	if (k->dir[0])
		rmdir(k->dir);
	k->nr = 0;
	k->dir[0] = '\0';
}

#endif /* IBTRS_TESTS_KEYS_H */
