/* SPDX-License-Identifier: MIT */
/*
 * rawtcp.h - a peer of the tcp backend on a raw socket, for tests that
 * speak the wire format by hand: connect, send and receive whole buffers
 * with a time limit, and receive one frame.
 */
#ifndef IBTRS_RAWTCP_H
#define IBTRS_RAWTCP_H

#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proto.h"
#include "tcp/tcp_proto.h"
#include "test.h"

/* A connected, non-blocking socket to @addr (TCP_NODELAY), or fail. */
static inline int rt_connect(const struct sockaddr *addr, socklen_t alen,
			     int timeout_ms)
{
	struct pollfd p;
	int fd, err = 0, one = 1;
	socklen_t elen = sizeof(err);

	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	CHECK(fd >= 0);
	if (connect(fd, addr, alen) && errno != EINPROGRESS) {
		fprintf(stderr, "connect: %s\n", strerror(errno));
		exit(1);
	}
	p.fd = fd;
	p.events = POLLOUT;
	CHECK_EQ(poll(&p, 1, timeout_ms), 1);
	CHECK_EQ(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen), 0);
	CHECK_EQ(err, 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/*
 * Send all of @buf, waiting at most @timeout_ms for room each time.
 * Return: 0 or a negative errno (the peer may have closed); the number of
 * send() calls it took in *@calls when not NULL.
 */
static inline int rt_send_all(int fd, const void *buf, size_t len,
			      int timeout_ms, int *calls)
{
	const char *p = buf;
	int n_calls = 0;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t n;

		if (poll(&pfd, 1, timeout_ms) != 1)
			return -ETIMEDOUT;
		n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return -errno;
		n_calls++;
		p += n;
		len -= (size_t)n;
	}
	if (calls)
		*calls = n_calls;
	return 0;
}

/*
 * Receive exactly @len bytes within @timeout_ms.
 * Return: 0, -ETIMEDOUT, -ECONNRESET at the end of the stream, or -errno.
 */
static inline int rt_recv_all(int fd, void *buf, size_t len, int timeout_ms)
{
	double end = t_now() + timeout_ms / 1000.0;
	char *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int left = (int)((end - t_now()) * 1000) + 1;
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, left) != 1)
			return -ETIMEDOUT;
		n = recv(fd, p, len, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Receive the next frame into @f (host order) and its payload, at most
 * @max bytes, into @buf; heartbeats from the peer are skipped. Fails the
 * test on a timeout or a malformed frame.
 */
static inline void rt_recv_frame(int fd, struct tcp_frame *f, void *buf,
				 size_t max, int timeout_ms)
{
	struct tcp_frame w;

	do {
		CHECK_EQ(rt_recv_all(fd, &w, sizeof(w), timeout_ms), 0);
		f->op = w.op;
		f->flags = w.flags;
		f->reserved = le16toh(w.reserved);
		f->imm = le32toh(w.imm);
		f->len = le32toh(w.len);
		f->rkey = le32toh(w.rkey);
		f->raddr = le64toh(w.raddr);
		CHECK_EQ(f->flags, 0);
		CHECK(f->len <= max);
		if (f->len)
			CHECK_EQ(rt_recv_all(fd, buf, f->len, timeout_ms), 0);
	} while (f->op == TCP_OP_WRITE_IMM && !f->len &&
		 ibtrs_imm_type(f->imm) == IBTRS_IMM_HB);
}

#endif /* IBTRS_RAWTCP_H */
