// SPDX-License-Identifier: MIT
/*
 * addr.c - parsing of path strings ("ip:ADDR" or "ip:SRC,ip:DST") into
 * socket addresses, and printing of socket addresses.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ibtrs.h"
#include "addr.h"

#define ADDR_STR_MAX 512 /* longest accepted path string */
#define ADDR_PREFIX "ip:"
#define ADDR_PREFIX_LEN (sizeof(ADDR_PREFIX) - 1)
#define HOSTNAME_MAX 253
#define HOSTLABEL_MAX 63

/**
 * struct addr_why - where the cause of a parse failure is written
 * @buf: the text, or NULL when the caller does not want it
 * @len: size of @buf
 */
struct addr_why {
	char *buf;
	size_t len;
};

/**
 * why() - record the cause of a failure, the first one only
 * @w: where to write it
 * @ret: the error returned
 * @fmt: printf format of the cause
 *
 * Return: @ret.
 */
static int __attribute__((format(printf, 3, 4)))
why(struct addr_why *w, int ret, const char *fmt, ...)
{
	va_list ap;

	if (!w->buf || !w->len || w->buf[0])
		return ret;
	va_start(ap, fmt);
	vsnprintf(w->buf, w->len, fmt, ap);
	va_end(ap);
	return ret;
}

/**
 * parse_port() - parse a decimal port number
 * @s: NUL-terminated text, digits only
 * @port: filled with the port in host order
 * @w: where the cause of a failure goes
 *
 * Return: 0, or -EINVAL for an empty, non-numeric or out of range (0 or
 * above 65535) port.
 */
static int parse_port(const char *s, uint16_t *port, struct addr_why *w)
{
	unsigned long v = 0;
	size_t n = 0;

	for (; s[n]; n++) {
		if (!isdigit((unsigned char)s[n]))
			return why(w, -EINVAL, "port '%s' is not a number", s);
		if (n >= 5)
			return why(w, -EINVAL,
				   "port '%s' out of range (1..65535)", s);
		v = v * 10 + (unsigned long)(s[n] - '0');
	}
	if (!n)
		return why(w, -EINVAL, "empty port");
	if (!v || v > 65535)
		return why(w, -EINVAL, "port %lu out of range (1..65535)", v);
	*port = (uint16_t)v;
	return 0;
}

/**
 * all_digits() - whether @s is a non-empty string of decimal digits
 * @s: NUL-terminated text
 *
 * Return: true if every character of @s is a digit and @s is not empty.
 */
static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/**
 * parse_scope() - parse the scope of a link-local IPv6 address
 * @s: interface name or decimal interface index, NUL-terminated
 * @scope: filled with the interface index
 *
 * Return: 0, or -EINVAL for an empty scope or an unknown interface.
 */
static int parse_scope(const char *s, uint32_t *scope)
{
	unsigned long long v = 0;
	unsigned int idx;

	if (!*s)
		return -EINVAL;
	idx = if_nametoindex(s);
	if (idx) {
		*scope = idx;
		return 0;
	}
	if (!all_digits(s) || strlen(s) > 10)
		return -EINVAL;
	for (; *s; s++)
		v = v * 10 + (unsigned long long)(*s - '0');
	if (v > UINT32_MAX)
		return -EINVAL;
	*scope = (uint32_t)v;
	return 0;
}

/**
 * parse_ipv6() - parse an IPv6 address with an optional "%scope"
 * @s: the address, NUL-terminated; modified (the '%' is cut)
 * @port: port in host order
 * @ss: zeroed storage to fill
 * @w: where the cause of a failure goes
 *
 * Return: 0, or -EINVAL when @s is not an IPv6 address.
 */
static int parse_ipv6(char *s, uint16_t port, struct sockaddr_storage *ss,
		      struct addr_why *w)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	char *pct = strchr(s, '%');
	uint32_t scope = 0;
	int ret;

	if (pct) {
		*pct = '\0';
		ret = parse_scope(pct + 1, &scope);
		if (ret)
			return why(w, ret, "unknown interface '%s'", pct + 1);
	}
	if (inet_pton(AF_INET6, s, &sin6->sin6_addr) != 1)
		return why(w, -EINVAL, "'%s' is not an IPv6 address", s);
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	sin6->sin6_scope_id = scope;
	return 0;
}

/**
 * valid_hostname() - whether @s is syntactically a host name
 * @s: NUL-terminated text
 *
 * Letters, digits, '-' and '_' in dot-separated labels of 1..63 bytes, at
 * most 253 bytes in all; a single trailing dot is allowed. The last label
 * must not be all digits (RFC 1123), so that a malformed IPv4 address such
 * as "256.1.1.1" is not taken for a name.
 *
 * Return: true if @s may be handed to the resolver.
 */
static bool valid_hostname(const char *s)
{
	size_t n = strlen(s), label = 0, i;
	bool digits = true;

	if (n && s[n - 1] == '.')
		n--;
	if (!n || n > HOSTNAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '.') {
			if (!label)
				return false;
			label = 0;
			digits = true;
			continue;
		}
		if (!isalnum(c) && c != '-' && c != '_')
			return false;
		if (++label > HOSTLABEL_MAX)
			return false;
		if (!isdigit(c))
			digits = false;
	}
	return !digits;
}

/**
 * resolve_host() - resolve a host name, taking the first answer
 * @name: the name, NUL-terminated
 * @port: port in host order
 * @ss: zeroed storage to fill
 * @w: where the cause of a failure goes: the resolver's own words
 *     (gai_strerror())
 *
 * Return: 0, -ENOMEM, or -EHOSTUNREACH when @name does not resolve to an
 * IPv4 or IPv6 address.
 */
static int resolve_host(const char *name, uint16_t port,
			struct sockaddr_storage *ss, struct addr_why *w)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = 0, /* no AI_ADDRCONFIG: loopback-only hosts work */
	};
	struct addrinfo *res = NULL, *ai;
	int ret;

	ret = getaddrinfo(name, NULL, &hints, &res);
	if (ret)
		return why(w, ret == EAI_MEMORY ? -ENOMEM : -EHOSTUNREACH,
			   "cannot resolve host '%s': %s", name,
			   ret == EAI_SYSTEM ? strerror(errno)
					     : gai_strerror(ret));
	ret = -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET &&
		    ai->ai_addrlen >= sizeof(struct sockaddr_in)) {
			struct sockaddr_in *sin = (struct sockaddr_in *)ss;

			memcpy(sin, ai->ai_addr, sizeof(*sin));
			sin->sin_port = htons(port);
			ret = 0;
			break;
		}
		if (ai->ai_family == AF_INET6 &&
		    ai->ai_addrlen >= sizeof(struct sockaddr_in6)) {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

			memcpy(sin6, ai->ai_addr, sizeof(*sin6));
			sin6->sin6_port = htons(port);
			ret = 0;
			break;
		}
	}
	freeaddrinfo(res);
	if (ret)
		why(w, ret, "host '%s' has no IPv4 or IPv6 address", name);
	return ret;
}

/**
 * parse_host() - parse an IPv4 address or a host name
 * @s: the host, NUL-terminated, without port
 * @port: port in host order
 * @ss: zeroed storage to fill
 * @w: where the cause of a failure goes
 *
 * Numeric forms that are not a dotted quad ("1.1.1", "0x7f000001") are
 * rejected rather than handed to the resolver, which would accept them.
 *
 * Return: 0, -EINVAL for a malformed host, -EHOSTUNREACH when a name does
 * not resolve, -ENOMEM.
 */
static int parse_host(const char *s, uint16_t port, struct sockaddr_storage *ss,
		      struct addr_why *w)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct in_addr ia;

	if (inet_pton(AF_INET, s, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return 0;
	}
	if (inet_aton(s, &ia) || !valid_hostname(s))
		return why(w, -EINVAL,
			   "'%s' is neither an IPv4 address nor a host name",
			   s);
	return resolve_host(s, port, ss, w);
}

/**
 * parse_one() - parse one "ip:ADDR" element of a path string
 * @s: the element, NUL-terminated; modified while parsing
 * @port: port in host order used when @s carries none
 * @ss: storage to fill; zeroed first
 * @w: where the cause of a failure goes
 *
 * Return: 0, -EINVAL for a malformed element, -EHOSTUNREACH when a host
 * name does not resolve, -ENOMEM.
 */
static int parse_one(char *s, uint16_t port, struct sockaddr_storage *ss,
		     struct addr_why *w)
{
	char *host, *colon;
	int ret;

	memset(ss, 0, sizeof(*ss));
	if (strncmp(s, ADDR_PREFIX, ADDR_PREFIX_LEN))
		return why(w, -EINVAL, "'%s' does not start with ip:", s);
	host = s + ADDR_PREFIX_LEN;
	if (!*host)
		return why(w, -EINVAL, "no address after ip:");

	if (*host == '[') {
		char *end = strchr(host, ']');

		if (!end || end == host + 1)
			return why(w, -EINVAL, "malformed [IPv6] address");
		*end = '\0';
		if (end[1]) {
			if (end[1] != ':')
				return why(w, -EINVAL,
					   "expected ':PORT' after ']'");
			ret = parse_port(end + 2, &port, w);
			if (ret)
				return ret;
		}
		return parse_ipv6(host + 1, port, ss, w);
	}

	colon = strchr(host, ':');
	if (colon && strchr(colon + 1, ':'))
		/* Two colons or more: a bare IPv6 address, no port. */
		return parse_ipv6(host, port, ss, w);
	if (colon) {
		*colon = '\0';
		ret = parse_port(colon + 1, &port, w);
		if (ret)
			return ret;
	}
	if (!*host)
		return why(w, -EINVAL, "no host before ':PORT'");
	return parse_host(host, port, ss, w);
}

/**
 * ibtrs_addr_parse() - parse a path string and say what is wrong with it
 * @str: as for ibtrs_addr_to_sockaddr()
 * @len: length of @str
 * @port: port stored in the destination when @str names none
 * @addr: as for ibtrs_addr_to_sockaddr()
 * @cause: filled with the cause of a failure, NUL-terminated, e.g. "port
 *         99999 out of range (1..65535)" or "cannot resolve host 'x': Name
 *         or service not known"; may be NULL
 * @cause_len: size of @cause
 *
 * Return: as ibtrs_addr_to_sockaddr().
 */
int ibtrs_addr_parse(const char *str, size_t len, uint16_t port,
		     struct ibtrs_addr *addr, char *cause, size_t cause_len)
{
	struct addr_why w = { .buf = cause, .len = cause_len };
	struct sockaddr_storage src, dst;
	char buf[ADDR_STR_MAX + 1];
	char *comma, *dst_str;
	size_t i;
	int ret;

	if (cause && cause_len)
		cause[0] = '\0';
	if (!str || !addr || !addr->dst)
		return why(&w, -EINVAL, "no string or no storage");
	if (!len || len > ADDR_STR_MAX)
		return why(&w, -EINVAL, "%zu bytes long (1..%d)", len,
			   ADDR_STR_MAX);
	memcpy(buf, str, len);
	buf[len] = '\0';
	for (i = 0; i < len; i++)
		if (!buf[i] || isspace((unsigned char)buf[i]))
			return why(&w, -EINVAL, "a blank or NUL byte in it");

	comma = strchr(buf, ',');
	if (comma) {
		if (strchr(comma + 1, ','))
			return why(&w, -EINVAL, "more than one ','");
		if (comma == buf || !comma[1])
			return why(&w, -EINVAL,
				   "an empty source or destination");
		if (!addr->src)
			return why(&w, -EINVAL,
				   "a source, but no storage for it");
		*comma = '\0';
		dst_str = comma + 1;
		ret = parse_one(buf, 0, &src, &w);
		if (ret)
			return ret;
	} else {
		dst_str = buf;
	}
	ret = parse_one(dst_str, port, &dst, &w);
	if (ret)
		return ret;

	if (comma)
		memcpy(addr->src, &src, sizeof(src));
	else
		addr->src = NULL;
	memcpy(addr->dst, &dst, sizeof(dst));
	return 0;
}

/**
 * ibtrs_addr_to_sockaddr() - parse a path string
 * @str: "DST" or "SRC,DST", each "ip:ADDR"; need not be NUL-terminated
 * @len: length of @str, 1..512 bytes
 * @port: port stored in the destination when @str names none
 * @addr: @addr->dst is filled; @addr->src is filled when @str has a source,
 *        set to NULL when it has none
 *
 * The source gets port 0 unless @str names one. The outputs are written
 * only on success. ibtrs_addr_parse() says what is wrong.
 *
 * Return: 0, -EINVAL for a malformed string, a missing destination storage
 * or a source without storage; -EHOSTUNREACH when a host name does not
 * resolve; -ENOMEM.
 *
 * Context: may block in name resolution for host names.
 */
int ibtrs_addr_to_sockaddr(const char *str, size_t len, uint16_t port,
			   struct ibtrs_addr *addr)
{
	return ibtrs_addr_parse(str, len, port, addr, NULL, 0);
}

/**
 * ibtrs_sockaddr_to_str() - print a socket address with its port
 * @sa: an AF_INET or AF_INET6 address
 * @buf: output buffer
 * @len: size of @buf; IBTRS_SOCKADDR_STR_LEN is always enough
 *
 * Formats "1.2.3.4:1234", "[::1]:1234" or "[fe80::1%eth0]:1234" (the scope
 * as interface name, or as number when no interface has that index).
 *
 * Return: 0, -EINVAL for NULL arguments or another family, -ENOBUFS when
 * @buf is too small (it then holds a truncated string if @len > 0).
 */
int ibtrs_sockaddr_to_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	int n;

	if (!sa || !buf)
		return -EINVAL;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

		if (!inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip)))
			return -EINVAL;
		n = snprintf(buf, len, "%s:%u", ip, ntohs(sin->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 =
			(const struct sockaddr_in6 *)sa;
		char scope[IF_NAMESIZE + 1] = "";

		if (!inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip)))
			return -EINVAL;
		if (sin6->sin6_scope_id) {
			char ifname[IF_NAMESIZE];

			if (if_indextoname(sin6->sin6_scope_id, ifname))
				snprintf(scope, sizeof(scope), "%%%s", ifname);
			else
				snprintf(scope, sizeof(scope), "%%%u",
					 sin6->sin6_scope_id);
		}
		n = snprintf(buf, len, "[%s%s]:%u", ip, scope,
			     ntohs(sin6->sin6_port));
	} else {
		return -EINVAL;
	}
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= len)
		return -ENOBUFS;
	return 0;
}

/**
 * ibtrs_sockaddr_len() - size of the socket address structure of @sa
 * @sa: a socket address, or NULL
 *
 * Return: sizeof(struct sockaddr_in) or sizeof(struct sockaddr_in6) by
 * family, 0 for NULL or another family.
 */
socklen_t ibtrs_sockaddr_len(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}
