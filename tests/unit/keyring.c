// SPDX-License-Identifier: MIT
/*
 * keyring.c - the psktool key file: good files read back exactly, and every
 * kind of bad file refused with the line and the cause.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "keyring.h"
#include "test.h"

static char dir[] = "/tmp/ibtrs-keyring-XXXXXX";

/* @text into a file of mode @mode; returns its path (static buffer). */
static const char *put(const char *text, mode_t mode)
{
	static char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/keys", dir);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	CHECK(!fchmod(fd, mode));
	close(fd);
	return path;
}

static void refused(const char *text, mode_t mode, int want, const char *cause)
{
	struct ibtrs_keyring *kr = NULL;
	char err[256] = "";

	CHECK_EQ(ibtrs_keyring_load(put(text, mode), &kr, err, sizeof(err)),
		 want);
	CHECK(kr == NULL);
	if (!strstr(err, cause))
		fprintf(stderr, "keyring: got '%s', want '%s'\n", err, cause);
	CHECK(strstr(err, cause) != NULL);
}

static void test_good(void)
{
	struct ibtrs_keyring *kr = NULL;
	const struct ibtrs_psk *k;
	char err[256] = "";

	CHECK_EQ(
		ibtrs_keyring_load(
			put("# keys\n\nalice:000102030405060708090a0b0c0d0e0f\r\n"
			    "bob:FFEEDDCCBBAA99887766554433221100ffeeddccbbaa99887766554433221100\n",
			    0600),
			&kr, err, sizeof(err)),
		0);
	CHECK_EQ(kr->nr, 2);
	k = ibtrs_keyring_find(kr, "alice");
	CHECK(k && k->len == 16 && k->key[0] == 0 && k->key[15] == 15);
	k = ibtrs_keyring_find(kr, "bob");
	CHECK(k && k->len == 32 && k->key[0] == 0xff && k->key[31] == 0);
	CHECK(!ibtrs_keyring_find(kr, "carol"));
	CHECK(!ibtrs_keyring_find(kr, "alic"));
	CHECK(!strcmp(kr->keys[0].identity, "alice"));
	ibtrs_keyring_free(kr);
}

static void test_bad(void)
{
	struct ibtrs_keyring *kr = NULL;
	char err[256] = "";

	refused("alice:000102030405060708090a0b0c0d0e0f\n", 0644, -EPERM,
		"chmod 600");
	refused("", 0600, -EINVAL, "no key in it");
	refused("# only a comment\n", 0600, -EINVAL, "no key in it");
	refused("alice\n", 0600, -EINVAL, "line 1: no ':'");
	refused("ok:000102030405060708090a0b0c0d0e0f\n:0011\n", 0600, -EINVAL,
		"line 2: bad identity");
	refused("a b:000102030405060708090a0b0c0d0e0f\n", 0600, -EINVAL,
		"bad identity");
	refused("alice:0001020304050607\n", 0600, -EINVAL, "shorter than 16");
	refused("alice:000102030405060708090a0b0c0d0e0\n", 0600, -EINVAL,
		"even length");
	refused("alice:000102030405060708090a0b0c0d0eXY\n", 0600, -EINVAL,
		"even length");
	refused("alice:000102030405060708090a0b0c0d0e0f\n"
		"alice:000102030405060708090a0b0c0d0e0f\n",
		0600, -EINVAL, "line 2: identity 'alice' given twice");
	CHECK_EQ(ibtrs_keyring_load("/nonexistent/keys", &kr, err, sizeof(err)),
		 -ENOENT);
	CHECK(strstr(err, "/nonexistent/keys") != NULL);
	CHECK_EQ(ibtrs_keyring_load(dir, &kr, err, sizeof(err)), -EINVAL);
}

/* The parser of a buffer: no NUL needed, a NUL in a line is bad, and the
 * check of identities given twice holds over a full file of keys. */
static void test_parse(void)
{
	static const char one[] = "alice:000102030405060708090a0b0c0d0e0fXX";
	const char *key = ":000102030405060708090a0b0c0d0e0f\n";
	struct ibtrs_keyring *kr = NULL;
	char err[256] = "", *buf, *p;
	unsigned int i;

	/* Not NUL-terminated: the two bytes after the length are not read. */
	CHECK_EQ(ibtrs_keyring_parse(one, sizeof(one) - 3, "mem", &kr, err,
				     sizeof(err)),
		 0);
	CHECK(kr->nr == 1 && kr->keys[0].len == 16 &&
	      kr->keys[0].key[15] == 15);
	ibtrs_keyring_free(kr);
	kr = NULL;
	CHECK_EQ(ibtrs_keyring_parse("ali\0ce:000102030405060708090a0b0c0d0e0f",
				     40, NULL, &kr, err, sizeof(err)),
		 -EINVAL);
	CHECK(!kr && strstr(err, "(buffer) line 1: bad identity"));
	CHECK_EQ(ibtrs_keyring_parse(NULL, 0, "empty", &kr, err, sizeof(err)),
		 -EINVAL);
	CHECK(!kr && strstr(err, "empty: no key in it"));

	buf = malloc(4097 * 48);
	CHECK(buf != NULL);
	for (p = buf, i = 0; i < 4096; i++)
		p += sprintf(p, "k%u%s", i, key);
	CHECK_EQ(ibtrs_keyring_parse(buf, (size_t)(p - buf), "full", &kr, err,
				     sizeof(err)),
		 0);
	CHECK_EQ(kr->nr, 4096);
	CHECK(ibtrs_keyring_find(kr, "k4095") == &kr->keys[4095]);
	ibtrs_keyring_free(kr);
	kr = NULL;
	/* The last identity is the first one again. */
	p -= strlen(key) + 5;
	p += sprintf(p, "k0%s", key);
	CHECK_EQ(ibtrs_keyring_parse(buf, (size_t)(p - buf), "full", &kr, err,
				     sizeof(err)),
		 -EINVAL);
	CHECK(!kr && strstr(err, "line 4096: identity 'k0' given twice"));
	p -= strlen(key) + 2;
	p += sprintf(p, "k4095%sk4096%s", key, key);
	CHECK_EQ(ibtrs_keyring_parse(buf, (size_t)(p - buf), "full", &kr, err,
				     sizeof(err)),
		 -EINVAL);
	CHECK(!kr && strstr(err, "full: more than 4096 keys"));
	free(buf);
}

static void test_random(void)
{
	uint8_t a[32] = { 0 }, b[32] = { 0 }, zero[32] = { 0 };

	CHECK_EQ(ibtrs_random(a, sizeof(a)), 0);
	CHECK_EQ(ibtrs_random(b, sizeof(b)), 0);
	CHECK(memcmp(a, b, sizeof(a)) && memcmp(a, zero, sizeof(a)));
}

int main(void)
{
	CHECK(mkdtemp(dir));
	test_good();
	test_bad();
	test_parse();
	test_random();
	unlink(put("", 0600));
	rmdir(dir);
	printf("keyring: ok\n");
	return 0;
}
