// SPDX-License-Identifier: MIT
/*
 * keyring.c - the pre-shared key file (keyring.h) and getrandom.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keyring.h"

#define KEYRING_MAX_FILE (1u << 20)
#define KEYRING_MAX_KEYS 4096

void ibtrs_wipe(void *p, size_t len)
{
	/* A memset the compiler may not drop as a dead store (glibc 2.25). */
	explicit_bzero(p, len);
}

int ibtrs_random(void *buf, size_t len)
{
	unsigned char *b = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom(b + got, len - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	return 0;
}

static int kr_err(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool identity_ok(const char *s, size_t len)
{
	size_t i;

	if (!len || len > IBTRS_IDENTITY_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (!isgraph((unsigned char)s[i]) || s[i] == ':')
			return false;
	return true;
}

/* One "identity:hexkey" line of @len bytes into @k; a cause on error. */
static const char *parse_line(const char *line, size_t len, struct ibtrs_psk *k)
{
	const char *colon = memchr(line, ':', len);
	size_t idlen, hexlen, i;

	if (!colon)
		return "no ':' between identity and key";
	idlen = (size_t)(colon - line);
	if (!identity_ok(line, idlen))
		return "bad identity (1 to 128 printable bytes, no spaces)";
	hexlen = len - idlen - 1;
	if (!hexlen || hexlen % 2)
		return "the key is not hex of even length";
	if (hexlen / 2 < IBTRS_PSK_MIN)
		return "the key is shorter than 16 bytes (psktool -s 32 makes one)";
	if (hexlen / 2 > IBTRS_PSK_MAX)
		return "the key is longer than 64 bytes";
	for (i = 0; i < hexlen / 2; i++) {
		int hi = hexval((unsigned char)colon[1 + 2 * i]);
		int lo = hexval((unsigned char)colon[2 + 2 * i]);

		if (hi < 0 || lo < 0)
			return "the key is not hex of even length";
		k->key[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(k->identity, line, idlen);
	k->identity[idlen] = '\0';
	k->len = hexlen / 2;
	return NULL;
}

static int read_file(const char *path, char **buf, size_t *len, char *err,
		     size_t errlen)
{
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kr_err(err, errlen, -errno, "key file %s: %s", path,
			      strerror(errno));
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		return kr_err(err, errlen, ret, "key file %s: %s", path,
			      strerror(-ret));
	}
	if (!S_ISREG(st.st_mode) || st.st_size > KEYRING_MAX_FILE) {
		close(fd);
		return kr_err(
			err, errlen, -EINVAL,
			"key file %s: not a regular file of at most 1 MiB",
			path);
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		close(fd);
		return kr_err(
			err, errlen, -EPERM,
			"key file %s: readable by others than its owner (mode %03o): chmod 600 it",
			path, (unsigned int)(st.st_mode & 0777));
	}
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf) {
		close(fd);
		return kr_err(err, errlen, -ENOMEM, "key file %s: %s", path,
			      strerror(ENOMEM));
	}
	while (got < (size_t)st.st_size) {
		n = read(fd, *buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	(*buf)[got] = '\0';
	*len = got;
	return 0;
}

/* FNV-1a of the NUL-terminated @s. */
static uint32_t id_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/*
 * Enter the identity of @kr->keys[@nr] into @slots (@mask + 1 of them, at
 * least twice the keys, each a key's index + 1, 0 when free). Return: false
 * when an earlier key has the same identity. A hash table rather than a
 * comparison with every earlier key: a file of thousands of keys loads in
 * linear time.
 */
static bool id_insert(uint16_t *slots, uint32_t mask,
		      const struct ibtrs_keyring *kr, unsigned int nr)
{
	const char *id = kr->keys[nr].identity;
	uint32_t i = id_hash(id) & mask;

	for (; slots[i]; i = (i + 1) & mask)
		if (!strcmp(kr->keys[slots[i] - 1].identity, id))
			return false;
	slots[i] = (uint16_t)(nr + 1);
	return true;
}

int ibtrs_keyring_parse(const char *buf, size_t len, const char *name,
			struct ibtrs_keyring **krp, char *err, size_t errlen)
{
	struct ibtrs_keyring *kr;
	const char *p, *end, *nl;
	const char *cause;
	unsigned int lineno = 0, cap = 0; /* cap: entries of keys */
	uint32_t mask = 15; /* slots - 1: twice the lines, a power of 2 */
	unsigned int lines = 1;
	uint16_t *slots;
	int ret;

	if (!krp || (!buf && len))
		return kr_err(err, errlen, -EINVAL, "no key file given");
	if (!name)
		name = "(buffer)";
	kr = calloc(1, sizeof(*kr));
	/* No more keys than lines, and no more than the limit. */
	for (p = buf, end = len ? buf + len : buf;
	     p < end && lines <= KEYRING_MAX_KEYS &&
	     (nl = memchr(p, '\n', (size_t)(end - p)));
	     p = nl + 1)
		lines++;
	while (mask + 1 < 2 * lines)
		mask = 2 * mask + 1;
	slots = calloc(mask + 1, sizeof(*slots));
	if (!kr || !slots) {
		free(kr);
		free(slots);
		return kr_err(err, errlen, -ENOMEM, "key file %s: %s", name,
			      strerror(ENOMEM));
	}
	/* No arithmetic on a NULL buf (of length 0). */
	for (p = buf, end = len ? buf + len : buf; p < end; p = nl + 1) {
		size_t l;
		struct ibtrs_psk *k;

		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		l = (size_t)(nl - p);
		lineno++;
		while (l && (p[l - 1] == '\r' || p[l - 1] == ' ' ||
			     p[l - 1] == '\t'))
			l--;
		if (!l || p[0] == '#')
			continue;
		if (kr->nr == KEYRING_MAX_KEYS) {
			ret = kr_err(err, errlen, -EINVAL,
				     "key file %s: more than %u keys", name,
				     KEYRING_MAX_KEYS);
			goto fail;
		}
		/* Doubling: a file of thousands of keys loads in linear
		 * time, whatever the allocator does with realloc(). */
		if (kr->nr == cap) {
			unsigned int n = cap ? 2 * cap : 8;

			k = realloc(kr->keys, n * sizeof(*k));
			if (!k) {
				ret = kr_err(err, errlen, -ENOMEM,
					     "key file %s: %s", name,
					     strerror(ENOMEM));
				goto fail;
			}
			kr->keys = k;
			cap = n;
		}
		k = &kr->keys[kr->nr];
		memset(k, 0, sizeof(*k));
		cause = parse_line(p, l, k);
		if (cause) {
			ret = kr_err(err, errlen, -EINVAL,
				     "key file %s line %u: %s", name, lineno,
				     cause);
			goto fail;
		}
		if (!id_insert(slots, mask, kr, kr->nr)) {
			ret = kr_err(
				err, errlen, -EINVAL,
				"key file %s line %u: identity '%s' given twice",
				name, lineno, k->identity);
			goto fail;
		}
		kr->nr++;
	}
	if (!kr->nr) {
		ret = kr_err(err, errlen, -EINVAL, "key file %s: no key in it",
			     name);
		goto fail;
	}
	free(slots);
	*krp = kr;
	return 0;
fail:
	free(slots);
	/* The entry being parsed holds key bytes too, when there is one. */
	if (cap)
		ibtrs_wipe(kr->keys, cap * sizeof(*kr->keys));
	ibtrs_keyring_free(kr);
	return ret;
}

int ibtrs_keyring_load(const char *path, struct ibtrs_keyring **krp, char *err,
		       size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	int ret;

	if (!path || !krp)
		return kr_err(err, errlen, -EINVAL, "no key file given");
	ret = read_file(path, &buf, &len, err, errlen);
	if (ret)
		return ret;
	ret = ibtrs_keyring_parse(buf, len, path, krp, err, errlen);
	ibtrs_wipe(buf, len);
	free(buf);
	return ret;
}

const struct ibtrs_psk *ibtrs_keyring_find(const struct ibtrs_keyring *kr,
					   const char *identity)
{
	unsigned int i;

	if (!kr || !identity)
		return NULL;
	for (i = 0; i < kr->nr; i++)
		if (!strcmp(kr->keys[i].identity, identity))
			return &kr->keys[i];
	return NULL;
}

void ibtrs_keyring_free(struct ibtrs_keyring *kr)
{
	if (!kr)
		return;
	if (kr->keys)
		ibtrs_wipe(kr->keys, kr->nr * sizeof(*kr->keys));
	free(kr->keys);
	free(kr);
}
