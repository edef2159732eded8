// SPDX-License-Identifier: MIT
/*
 * addr.c - unit test of ibtrs_addr_to_sockaddr(), ibtrs_sockaddr_to_str()
 * and ibtrs_sockaddr_len().
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/un.h>

#include "ibtrs.h"
#include "addr.h"
#include "test.h"

static unsigned int lo_idx;

/**
 * parse() - call ibtrs_addr_to_sockaddr() on an unterminated copy of @s
 * @s: the path string
 * @len: bytes of @s to pass
 * @port: default port
 * @addr: the output addresses
 *
 * The copy has exactly @len bytes, so an over-read trips the sanitizer.
 *
 * Return: the result of ibtrs_addr_to_sockaddr().
 */
static int parse(const char *s, size_t len, uint16_t port,
		 struct ibtrs_addr *addr)
{
	char *copy = malloc(len ? len : 1);
	int ret;

	CHECK(copy);
	memcpy(copy, s, len);
	ret = ibtrs_addr_to_sockaddr(copy, len, port, addr);
	free(copy);
	return ret;
}

/**
 * check_v4() - check an IPv4 socket address
 * @ss: the address
 * @ip: expected address, dotted quad
 * @port: expected port, host order
 */
static void check_v4(const struct sockaddr_storage *ss, const char *ip,
		     uint16_t port)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
	struct in_addr want;
	const unsigned char *p = (const unsigned char *)ss;
	size_t i;

	CHECK_EQ(inet_pton(AF_INET, ip, &want), 1);
	CHECK_EQ(sin->sin_family, AF_INET);
	CHECK(!memcmp(&sin->sin_addr, &want, sizeof(want)));
	CHECK_EQ(ntohs(sin->sin_port), port);
	/* The storage was zeroed before it was filled. */
	for (i = sizeof(*sin); i < sizeof(*ss); i++)
		CHECK_EQ(p[i], 0);
}

/**
 * check_v6() - check an IPv6 socket address
 * @ss: the address
 * @ip: expected address
 * @port: expected port, host order
 * @scope: expected scope id
 */
static void check_v6(const struct sockaddr_storage *ss, const char *ip,
		     uint16_t port, uint32_t scope)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
	struct in6_addr want;
	const unsigned char *p = (const unsigned char *)ss;
	size_t i;

	CHECK_EQ(inet_pton(AF_INET6, ip, &want), 1);
	CHECK_EQ(sin6->sin6_family, AF_INET6);
	CHECK(!memcmp(&sin6->sin6_addr, &want, sizeof(want)));
	CHECK_EQ(ntohs(sin6->sin6_port), port);
	CHECK_EQ(sin6->sin6_scope_id, scope);
	CHECK_EQ(sin6->sin6_flowinfo, 0);
	for (i = sizeof(*sin6); i < sizeof(*ss); i++)
		CHECK_EQ(p[i], 0);
}

/**
 * parse_ok() - parse @s (whole string), expecting success
 * @s: the path string
 * @port: default port
 * @src: source storage, poisoned first
 * @dst: destination storage, poisoned first
 * @addr: set up to point at @src and @dst, then filled
 */
static void parse_ok(const char *s, uint16_t port, struct sockaddr_storage *src,
		     struct sockaddr_storage *dst, struct ibtrs_addr *addr)
{
	int ret;

	memset(src, 0xa5, sizeof(*src));
	memset(dst, 0xa5, sizeof(*dst));
	addr->src = src;
	addr->dst = dst;
	ret = parse(s, strlen(s), port, addr);
	if (ret) {
		fprintf(stderr, "parse of \"%s\" failed: %d\n", s, ret);
		exit(1);
	}
}

static void test_accepted(void)
{
	struct sockaddr_storage src, dst;
	struct ibtrs_addr a;

	/* IPv4, with and without port; no source sets src to NULL. */
	parse_ok("ip:1.1.1.1", 1234, &src, &dst, &a);
	CHECK(a.src == NULL);
	CHECK(a.dst == &dst);
	check_v4(&dst, "1.1.1.1", 1234);

	parse_ok("ip:1.1.1.1:4000", 1234, &src, &dst, &a);
	CHECK(a.src == NULL);
	check_v4(&dst, "1.1.1.1", 4000);

	parse_ok("ip:10.20.30.40:1", 1234, &src, &dst, &a);
	check_v4(&dst, "10.20.30.40", 1);

	parse_ok("ip:255.255.255.255:65535", 1234, &src, &dst, &a);
	check_v4(&dst, "255.255.255.255", 65535);

	parse_ok("ip:0.0.0.0", 7, &src, &dst, &a);
	check_v4(&dst, "0.0.0.0", 7);

	/* Port argument 0 is stored as is. */
	parse_ok("ip:1.1.1.1", 0, &src, &dst, &a);
	check_v4(&dst, "1.1.1.1", 0);

	/* IPv6 without brackets. */
	parse_ok("ip:::1", 1234, &src, &dst, &a);
	CHECK(a.src == NULL);
	check_v6(&dst, "::1", 1234, 0);

	parse_ok("ip:::", 1234, &src, &dst, &a);
	check_v6(&dst, "::", 1234, 0);

	parse_ok("ip:2001:db8::1:2", 1234, &src, &dst, &a);
	check_v6(&dst, "2001:db8::1:2", 1234, 0);

	parse_ok("ip:::ffff:1.2.3.4", 1234, &src, &dst, &a);
	check_v6(&dst, "::ffff:1.2.3.4", 1234, 0);

	/* Numeric scope. */
	parse_ok("ip:fe80::1%2", 1234, &src, &dst, &a);
	check_v6(&dst, "fe80::1", 1234, 2);

	/* IPv6 in brackets, with and without port. */
	parse_ok("ip:[::1]:4000", 1234, &src, &dst, &a);
	check_v6(&dst, "::1", 4000, 0);

	parse_ok("ip:[::1]", 1234, &src, &dst, &a);
	check_v6(&dst, "::1", 1234, 0);

	parse_ok("ip:[2001:db8::5]:65535", 1234, &src, &dst, &a);
	check_v6(&dst, "2001:db8::5", 65535, 0);

	parse_ok("ip:[fe80::1%3]:9", 1234, &src, &dst, &a);
	check_v6(&dst, "fe80::1", 9, 3);

	/* Scope by interface name. */
	if (lo_idx) {
		parse_ok("ip:fe80::1%lo", 1234, &src, &dst, &a);
		check_v6(&dst, "fe80::1", 1234, lo_idx);

		parse_ok("ip:[fe80::1%lo]:4000", 1234, &src, &dst, &a);
		check_v6(&dst, "fe80::1", 4000, lo_idx);

		parse_ok("ip:fe80::1%lo,ip:fe80::2%lo", 1234, &src, &dst, &a);
		CHECK(a.src == &src);
		check_v6(&src, "fe80::1", 0, lo_idx);
		check_v6(&dst, "fe80::2", 1234, lo_idx);
	} else {
		fprintf(stderr, "no \"lo\" interface: %%lo checks skipped\n");
	}

	/* Source and destination: the source gets port 0 by default. */
	parse_ok("ip:1.1.1.1,ip:2.2.2.2", 1234, &src, &dst, &a);
	CHECK(a.src == &src);
	CHECK(a.dst == &dst);
	check_v4(&src, "1.1.1.1", 0);
	check_v4(&dst, "2.2.2.2", 1234);

	parse_ok("ip:1.1.1.1:5000,ip:2.2.2.2:6000", 1234, &src, &dst, &a);
	check_v4(&src, "1.1.1.1", 5000);
	check_v4(&dst, "2.2.2.2", 6000);

	parse_ok("ip:[::1]:5000,ip:[::2]", 1234, &src, &dst, &a);
	check_v6(&src, "::1", 5000, 0);
	check_v6(&dst, "::2", 1234, 0);

	/* Mixed families are the caller's business. */
	parse_ok("ip:1.1.1.1,ip:::2", 1234, &src, &dst, &a);
	check_v4(&src, "1.1.1.1", 0);
	check_v6(&dst, "::2", 1234, 0);
}

/**
 * check_loopback() - check that @ss is 127.0.0.1 or ::1 with @port
 * @ss: the address
 * @port: expected port, host order
 */
static void check_loopback(const struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		check_v4(ss, "127.0.0.1", port);
	else
		check_v6(ss, "::1", port, 0);
}

static void test_names(void)
{
	struct sockaddr_storage src, dst;
	struct ibtrs_addr a = { &src, &dst };
	int ret;

	ret = parse("ip:localhost", 12, 1234, &a);
	if (ret == -EHOSTUNREACH) {
		fprintf(stderr, "localhost does not resolve: checks skipped\n");
	} else {
		CHECK_EQ(ret, 0);
		CHECK(a.src == NULL);
		check_loopback(&dst, 1234);

		parse_ok("ip:localhost:4000", 1234, &src, &dst, &a);
		check_loopback(&dst, 4000);

		parse_ok("ip:localhost,ip:localhost:99", 1234, &src, &dst, &a);
		check_loopback(&src, 0);
		check_loopback(&dst, 99);
	}

	a.src = &src;
	a.dst = &dst;
	CHECK_EQ(parse("ip:no-such-host.invalid", 23, 1234, &a), -EHOSTUNREACH);
	CHECK_EQ(parse("ip:no-such-host.invalid:4000", 28, 1234, &a),
		 -EHOSTUNREACH);
	CHECK_EQ(parse("ip:no-such-host.invalid,ip:1.1.1.1", 34, 1234, &a),
		 -EHOSTUNREACH);
	CHECK_EQ(parse("ip:1.1.1.1,ip:no-such-host.invalid", 34, 1234, &a),
		 -EHOSTUNREACH);
}

static const char *const bad_strings[] = {
	"",
	"ip:",
	"ip:1.1.1",
	"ip:1.1.1.1,",
	",ip:1.1.1.1",
	",",
	"ip:1.1.1.1,ip:2.2.2.2,ip:3.3.3.3",
	"ip:1.1.1.1,,ip:2.2.2.2",
	"tcp:1.1.1.1",
	"1.1.1.1",
	"IP:1.1.1.1",
	"ip",
	"ip:1.1.1.1:0",
	"ip:1.1.1.1:99999",
	"ip:1.1.1.1:65536",
	"ip:1.1.1.1:",
	"ip:1.1.1.1:abc",
	"ip:1.1.1.1:12a",
	"ip:1.1.1.1:-1",
	"ip:1.1.1.1:+80",
	"ip:1.1.1.1:4000:5",
	"ip::4000",
	"ip:[::1",
	"ip:[::1]x",
	"ip:[::1]:",
	"ip:[::1]:0",
	"ip:[::1]:70000",
	"ip:[::1]]",
	"ip:[]",
	"ip:[]:4000",
	"ip:[1.1.1.1]",
	"ip:[1.1.1.1]:4000",
	"ip:fe80::1%nosuchif0",
	"ip:[fe80::1%nosuchif0]:4000",
	"ip:fe80::1%",
	"ip:1.1.1.1%lo",
	"ip:::1::1",
	"ip:gg::1",
	"ip:256.1.1.1",
	"ip:1.1.1.1.1",
	"ip:1234",
	"ip:0x7f000001",
	"ip:a..b",
	"ip:host/name",
	"ip:host name",
	" ip:1.1.1.1",
	"ip:1.1.1.1 ",
	"ip: 1.1.1.1",
	"ip:1.1.1.1, ip:2.2.2.2",
	"ip:1.1.1.1 ,ip:2.2.2.2",
	"ip:1.1.1.1\t",
	"ip:1.1.1.1\n",
	"ip:1.1.1.1,tcp:2.2.2.2",
	"tcp:1.1.1.1,ip:2.2.2.2",
	"ip:1.1.1.1:0,ip:2.2.2.2",
};

static void test_rejected(void)
{
	struct sockaddr_storage src, dst;
	struct ibtrs_addr a;
	char big[600];
	size_t i;

	CHECK(sizeof(bad_strings) / sizeof(bad_strings[0]) >= 20);
	for (i = 0; i < sizeof(bad_strings) / sizeof(bad_strings[0]); i++) {
		const char *s = bad_strings[i];
		int ret;

		a.src = &src;
		a.dst = &dst;
		ret = parse(s, strlen(s), 1234, &a);
		if (ret != -EINVAL) {
			fprintf(stderr, "\"%s\": got %d, want -EINVAL\n", s,
				ret);
			exit(1);
		}
	}

	/* Embedded NUL bytes, a NUL counted at the end. */
	a.src = &src;
	a.dst = &dst;
	CHECK_EQ(parse("ip:1.1.1.1\0,ip:2.2.2.2", 22, 1234, &a), -EINVAL);
	CHECK_EQ(parse("ip:1.1\0.1.1", 11, 1234, &a), -EINVAL);
	CHECK_EQ(parse("ip:1.1.1.1", 11, 1234, &a), -EINVAL);
	CHECK_EQ(parse("\0", 1, 1234, &a), -EINVAL);

	/* Length limits: 0 and above 512. */
	CHECK_EQ(parse("ip:1.1.1.1", 0, 1234, &a), -EINVAL);
	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:1.1.1.1", 0, 1234, &a), -EINVAL);
	memset(big, 'a', sizeof(big));
	memcpy(big, "ip:", 3);
	CHECK_EQ(parse(big, 513, 1234, &a), -EINVAL);
	CHECK_EQ(parse(big, sizeof(big), 1234, &a), -EINVAL);
	CHECK_EQ(parse(big, 512, 1234, &a), -EINVAL);

	/* Bad arguments. */
	CHECK_EQ(ibtrs_addr_to_sockaddr(NULL, 10, 1234, &a), -EINVAL);
	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:1.1.1.1", 10, 1234, NULL), -EINVAL);
	a.dst = NULL;
	CHECK_EQ(parse("ip:1.1.1.1", 10, 1234, &a), -EINVAL);
	a.src = NULL;
	CHECK_EQ(parse("ip:1.1.1.1", 10, 1234, &a), -EINVAL);
}

static void test_src_null(void)
{
	struct sockaddr_storage src, dst;
	struct ibtrs_addr a;
	const char *s = "ip:1.1.1.1,ip:2.2.2.2";

	/* A source in the string but no storage for it. */
	a.src = NULL;
	a.dst = &dst;
	CHECK_EQ(parse(s, strlen(s), 1234, &a), -EINVAL);
	CHECK_EQ(parse("ip:[::1]:1,ip:::2", 17, 1234, &a), -EINVAL);

	/* No source in the string and no storage: fine, stays NULL. */
	a.src = NULL;
	a.dst = &dst;
	CHECK_EQ(parse("ip:2.2.2.2", 10, 1234, &a), 0);
	CHECK(a.src == NULL);
	check_v4(&dst, "2.2.2.2", 1234);

	/* No source in the string but storage given: set to NULL. */
	a.src = &src;
	CHECK_EQ(parse("ip:2.2.2.2", 10, 1234, &a), 0);
	CHECK(a.src == NULL);
}

static void test_len(void)
{
	struct sockaddr_storage src, dst;
	struct ibtrs_addr a;
	const char *s = "ip:1.1.1.1,ip:2.2.2.2";

	/* Only the first @len bytes count. */
	a.src = &src;
	a.dst = &dst;
	memset(&dst, 0xa5, sizeof(dst));
	CHECK_EQ(ibtrs_addr_to_sockaddr(s, 10, 1234, &a), 0);
	CHECK(a.src == NULL);
	check_v4(&dst, "1.1.1.1", 1234);

	a.src = &src;
	CHECK_EQ(parse(s, 10, 1234, &a), 0);
	CHECK(a.src == NULL);
	check_v4(&dst, "1.1.1.1", 1234);

	a.src = &src;
	CHECK_EQ(parse(s, 9, 1234, &a), -EINVAL);  /* "ip:1.1.1." */
	CHECK_EQ(parse(s, 11, 1234, &a), -EINVAL); /* trailing comma */
	CHECK_EQ(parse(s, 13, 1234, &a), -EINVAL); /* "...,ip" */
	CHECK_EQ(parse(s, 14, 1234, &a), -EINVAL); /* "...,ip:" */
	CHECK_EQ(parse(s, 20, 1234, &a), -EINVAL); /* "...,ip:2.2.2." */
	CHECK_EQ(parse(s, 21, 1234, &a), 0);
	CHECK(a.src == &src);
	check_v4(&src, "1.1.1.1", 0);
	check_v4(&dst, "2.2.2.2", 1234);

	/* A port cut short by @len. */
	a.src = &src;
	CHECK_EQ(parse("ip:1.1.1.1:4000", 12, 1234, &a), 0);
	check_v4(&dst, "1.1.1.1", 4);
	CHECK_EQ(parse("ip:[::1]:4000", 8, 1234, &a), 0);
	check_v6(&dst, "::1", 1234, 0);
}

/**
 * check_str() - print @ss and compare with @want
 * @ss: the address
 * @want: expected text
 */
static void check_str(const struct sockaddr_storage *ss, const char *want)
{
	char buf[IBTRS_SOCKADDR_STR_LEN];
	int ret;

	ret = ibtrs_sockaddr_to_str((const struct sockaddr *)ss, buf,
				    sizeof(buf));
	CHECK_EQ(ret, 0);
	if (strcmp(buf, want)) {
		fprintf(stderr, "to_str: got \"%s\", want \"%s\"\n", buf, want);
		exit(1);
	}
}

/**
 * round_trip() - parse @s, print the result, parse the print again
 * @s: a destination-only path string
 * @port: default port
 * @want: expected text of the parsed address, or NULL to skip that check
 */
static void round_trip(const char *s, uint16_t port, const char *want)
{
	struct sockaddr_storage a_ss, b_ss, src;
	struct ibtrs_addr a = { &src, &a_ss }, b = { &src, &b_ss };
	char text[IBTRS_SOCKADDR_STR_LEN], path[IBTRS_SOCKADDR_STR_LEN + 3];
	socklen_t sl;

	CHECK_EQ(parse(s, strlen(s), port, &a), 0);
	CHECK_EQ(ibtrs_sockaddr_to_str((struct sockaddr *)&a_ss, text,
				       sizeof(text)),
		 0);
	if (want && strcmp(text, want)) {
		fprintf(stderr, "\"%s\": printed \"%s\", want \"%s\"\n", s,
			text, want);
		exit(1);
	}
	snprintf(path, sizeof(path), "ip:%s", text);
	CHECK_EQ(parse(path, strlen(path), 1, &b), 0);
	sl = ibtrs_sockaddr_len((struct sockaddr *)&a_ss);
	CHECK(sl > 0);
	CHECK_EQ(ibtrs_sockaddr_len((struct sockaddr *)&b_ss), sl);
	if (memcmp(&a_ss, &b_ss, sl)) {
		fprintf(stderr, "\"%s\" -> \"%s\" does not round trip\n", s,
			path);
		exit(1);
	}
}

static void test_to_str(void)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_un sun;
	char buf[IBTRS_SOCKADDR_STR_LEN];
	size_t n;

	memset(&ss, 0, sizeof(ss));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(1234);
	CHECK_EQ(inet_pton(AF_INET, "1.2.3.4", &sin->sin_addr), 1);
	check_str(&ss, "1.2.3.4:1234");
	CHECK_EQ(ibtrs_sockaddr_len((struct sockaddr *)&ss),
		 sizeof(struct sockaddr_in));

	/* Buffer sizes: exact fits, one less is -ENOBUFS. */
	n = strlen("1.2.3.4:1234") + 1;
	CHECK_EQ(ibtrs_sockaddr_to_str((struct sockaddr *)&ss, buf, n), 0);
	CHECK(!strcmp(buf, "1.2.3.4:1234"));
	CHECK_EQ(ibtrs_sockaddr_to_str((struct sockaddr *)&ss, buf, n - 1),
		 -ENOBUFS);
	CHECK_EQ(ibtrs_sockaddr_to_str((struct sockaddr *)&ss, buf, 0),
		 -ENOBUFS);

	memset(&ss, 0, sizeof(ss));
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(1234);
	CHECK_EQ(inet_pton(AF_INET6, "::1", &sin6->sin6_addr), 1);
	check_str(&ss, "[::1]:1234");
	CHECK_EQ(ibtrs_sockaddr_len((struct sockaddr *)&ss),
		 sizeof(struct sockaddr_in6));
	CHECK_EQ(ibtrs_sockaddr_to_str((struct sockaddr *)&ss, buf, 5),
		 -ENOBUFS);

	CHECK_EQ(inet_pton(AF_INET6, "fe80::1", &sin6->sin6_addr), 1);
	if (lo_idx) {
		sin6->sin6_scope_id = lo_idx;
		check_str(&ss, "[fe80::1%lo]:1234");
	}
	/* An index without interface is printed as a number. */
	sin6->sin6_scope_id = 999999;
	if (!if_indextoname(999999, buf))
		check_str(&ss, "[fe80::1%999999]:1234");

	/* Other families and NULL. */
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	CHECK_EQ(ibtrs_sockaddr_to_str((struct sockaddr *)&sun, buf,
				       sizeof(buf)),
		 -EINVAL);
	CHECK_EQ(ibtrs_sockaddr_len((struct sockaddr *)&sun), 0);
	ss.ss_family = AF_UNSPEC;
	CHECK_EQ(ibtrs_sockaddr_to_str((struct sockaddr *)&ss, buf,
				       sizeof(buf)),
		 -EINVAL);
	CHECK_EQ(ibtrs_sockaddr_len((struct sockaddr *)&ss), 0);
	CHECK_EQ(ibtrs_sockaddr_to_str(NULL, buf, sizeof(buf)), -EINVAL);
	CHECK_EQ(ibtrs_sockaddr_to_str((struct sockaddr *)sin6, NULL, 10),
		 -EINVAL);
	CHECK_EQ(ibtrs_sockaddr_len(NULL), 0);

	/* Round trips through the parser. */
	round_trip("ip:1.2.3.4", 1234, "1.2.3.4:1234");
	round_trip("ip:1.2.3.4:4000", 1234, "1.2.3.4:4000");
	round_trip("ip:255.255.255.255:65535", 1, "255.255.255.255:65535");
	round_trip("ip:::1", 1234, "[::1]:1234");
	round_trip("ip:[::1]:4000", 1234, "[::1]:4000");
	round_trip("ip:2001:db8::1:2", 80, "[2001:db8::1:2]:80");
	round_trip("ip:::ffff:1.2.3.4", 80, "[::ffff:1.2.3.4]:80");
	round_trip("ip:fe80::1%999999", 80, NULL);
	if (lo_idx) {
		round_trip("ip:fe80::1%lo", 1234, "[fe80::1%lo]:1234");
		round_trip("ip:[fe80::abcd%lo]:9", 1, "[fe80::abcd%lo]:9");
	}
}

int main(void)
{
	lo_idx = if_nametoindex("lo");

	test_accepted();
	test_names();
	test_rejected();
	test_src_null();
	test_len();
	test_to_str();
	printf("addr: ok\n");
	return 0;
}
