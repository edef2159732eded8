/* SPDX-License-Identifier: MIT */
/*
 * rawtcp.h - a peer of the tcp backend on a raw socket, for tests that
 * speak the wire format by hand: connect, send and receive whole buffers
 * with a time limit, and receive one frame, also out of a TCP_OP_HDRS run.
 */
#ifndef IBTRS_RAWTCP_H
#define IBTRS_RAWTCP_H

#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "proto.h"
#include "tcp/tcp_proto.h"
#include "test.h"

/*
 * Frames from the backend. A sender with several frames at once may put
 * their headers first, in a TCP_OP_HDRS frame; the frames it describes
 * then come as payloads only. rt_recv_frame() returns them one by one as
 * if each had its own header, so it keeps, per socket, the headers of the
 * run it is in. The state is keyed by the fd and the socket's inode: a new
 * socket on a reused fd number starts clean even without
 * rt_frames_reset(). It is shared by the threads of a test (one socket
 * each, fd numbers passed on as sockets close), under rt_frames_lock.
 */
#define RT_MAX_FDS 1024

struct rt_frames {
	dev_t dev;
	ino_t ino;			    /* the socket this is about */
	unsigned int n, next;		    /* headers of the run; next one */
	unsigned long runs;		    /* TCP_OP_HDRS frames seen */
	unsigned long described;	    /* frames of runs returned */
	struct tcp_frame hdr[TCP_MAX_HDRS]; /* host order */
};

static inline pthread_mutex_t *rt_frames_lock(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

	return &lock;
}

/* The state of @fd; rt_frames_lock() held. */
static inline struct rt_frames *rt_frames_of(int fd)
{
	static struct rt_frames tab[RT_MAX_FDS];
	struct rt_frames *r;
	struct stat st;

	CHECK(fd >= 0 && fd < RT_MAX_FDS);
	CHECK_EQ(fstat(fd, &st), 0);
	r = &tab[fd];
	if (r->dev != st.st_dev || r->ino != st.st_ino) {
		memset(r, 0, sizeof(*r));
		r->dev = st.st_dev;
		r->ino = st.st_ino;
	}
	return r;
}

/* Forget the run state of @fd (a new connection). */
static inline void rt_frames_reset(int fd)
{
	struct rt_frames *r;
	dev_t dev;
	ino_t ino;

	pthread_mutex_lock(rt_frames_lock());
	r = rt_frames_of(fd);
	dev = r->dev;
	ino = r->ino;
	memset(r, 0, sizeof(*r));
	r->dev = dev;
	r->ino = ino;
	pthread_mutex_unlock(rt_frames_lock());
}

/* A copy of the state of @fd, taken under the lock. */
static inline struct rt_frames rt_frames_get(int fd)
{
	struct rt_frames r;

	pthread_mutex_lock(rt_frames_lock());
	r = *rt_frames_of(fd);
	pthread_mutex_unlock(rt_frames_lock());
	return r;
}

/* Described frames of the current run not returned yet. */
static inline unsigned int rt_frames_pending(int fd)
{
	struct rt_frames r = rt_frames_get(fd);

	return r.n - r.next;
}

/* TCP_OP_HDRS frames received on @fd so far. */
static inline unsigned long rt_hdrs_runs(int fd)
{
	return rt_frames_get(fd).runs;
}

/* Frames received on @fd as part of a run so far (heartbeats included). */
static inline unsigned long rt_hdrs_described(int fd)
{
	return rt_frames_get(fd).described;
}

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
	rt_frames_reset(fd);
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

/* @f (host order) in wire format into @w. */
static inline void rt_frame_encode(void *w, const struct tcp_frame *f)
{
	struct tcp_frame x = {
		.op = f->op,
		.flags = f->flags,
		.reserved = htole16(f->reserved),
		.imm = htole32(f->imm),
		.len = htole32(f->len),
		.rkey = htole32(f->rkey),
		.raddr = htole64(f->raddr),
	};

	memcpy(w, &x, sizeof(x));
}

/* A frame header the backend may send, other than TCP_OP_HDRS. */
static inline void rt_check_frame(const struct tcp_frame *f)
{
	CHECK(f->op == TCP_OP_SEND || f->op == TCP_OP_WRITE ||
	      f->op == TCP_OP_WRITE_IMM);
	CHECK_EQ(f->flags, 0);
	CHECK_EQ(f->reserved, 0);
	CHECK(f->len <= TCP_MAX_FRAME_LEN);
}

/* A TCP_OP_HDRS header; returns the number of headers it carries. */
static inline unsigned int rt_check_hdrs(const struct tcp_frame *f)
{
	CHECK_EQ(f->op, TCP_OP_HDRS);
	CHECK_EQ(f->flags, 0);
	CHECK_EQ(f->reserved, 0);
	CHECK_EQ(f->imm, 0);
	CHECK_EQ(f->rkey, 0);
	CHECK_EQ(f->raddr, 0);
	CHECK_EQ(f->len % sizeof(struct tcp_frame), 0);
	CHECK(f->len >= 2 * sizeof(struct tcp_frame));
	CHECK(f->len <= TCP_MAX_HDRS * sizeof(struct tcp_frame));
	return f->len / (unsigned int)sizeof(struct tcp_frame);
}

static inline bool rt_is_heartbeat(const struct tcp_frame *f)
{
	return f->op == TCP_OP_WRITE_IMM && !f->len &&
	       ibtrs_imm_type(f->imm) == IBTRS_IMM_HB;
}

#define RT_KEEP_HB 0x1 /* rt_recv_frame_opt(): return heartbeats too */

/*
 * Receive the next frame into @f (host order) and its payload, at most
 * @max bytes, into @buf; a frame of a TCP_OP_HDRS run comes with its
 * header from the run. Heartbeats from the peer are skipped unless @flags
 * has RT_KEEP_HB. Fails the test on a malformed frame or run.
 * Return: 0, or what rt_recv_all() returned (timeout, end of stream).
 */
static inline int rt_recv_frame_opt(int fd, struct tcp_frame *f, void *buf,
				    size_t max, int timeout_ms,
				    unsigned int flags)
{
	struct tcp_frame w[TCP_MAX_HDRS], h[TCP_MAX_HDRS];
	struct rt_frames *r;
	unsigned int i, n;
	bool in_run;
	int ret;

	for (;;) {
		pthread_mutex_lock(rt_frames_lock());
		r = rt_frames_of(fd);
		in_run = r->next < r->n;
		if (in_run) {
			*f = r->hdr[r->next++];
			r->described++;
		} else {
			r->n = r->next = 0;
		}
		pthread_mutex_unlock(rt_frames_lock());
		if (!in_run) {
			ret = rt_recv_all(fd, w, sizeof(w[0]), timeout_ms);
			if (ret)
				return ret;
			tcp_frame_decode(f, w);
			if (f->op == TCP_OP_HDRS) {
				n = rt_check_hdrs(f);
				ret = rt_recv_all(fd, w, f->len, timeout_ms);
				if (ret)
					return ret;
				for (i = 0; i < n; i++) {
					tcp_frame_decode(&h[i], &w[i]);
					rt_check_frame(&h[i]);
				}
				pthread_mutex_lock(rt_frames_lock());
				r = rt_frames_of(fd);
				memcpy(r->hdr, h, n * sizeof(h[0]));
				r->n = n;
				r->next = 0;
				r->runs++;
				pthread_mutex_unlock(rt_frames_lock());
				continue;
			}
			rt_check_frame(f);
		}
		if (f->len > max) {
			fprintf(stderr,
				"rawtcp: a frame of op %u with %u bytes, more than the %zu expected\n",
				f->op, f->len, max);
			exit(1);
		}
		if (f->len) {
			ret = rt_recv_all(fd, buf, f->len, timeout_ms);
			if (ret)
				return ret;
		}
		if ((flags & RT_KEEP_HB) || !rt_is_heartbeat(f))
			return 0;
	}
}

/*
 * Receive the next frame that is not a heartbeat into @f (host order) and
 * its payload, at most @max bytes, into @buf. Fails the test on a timeout,
 * the end of the stream or a malformed frame.
 */
static inline void rt_recv_frame(int fd, struct tcp_frame *f, void *buf,
				 size_t max, int timeout_ms)
{
	CHECK_EQ(rt_recv_frame_opt(fd, f, buf, max, timeout_ms, 0), 0);
}

/*
 * Parse the frames at the start of a byte image @buf of @len bytes of a
 * stream from the backend, which begins at a frame boundary: the whole
 * frames (TCP_OP_HDRS runs resolved) go into @f, at most @max, their
 * payloads' offsets in @buf into @off when not NULL. Fails the test on a
 * malformed frame or run. Return: the number of whole frames; the bytes
 * they take (a TCP_OP_HDRS frame included) in *@used when not NULL.
 */
static inline unsigned int rt_parse_frames(const void *buf, size_t len,
					   struct tcp_frame *f, size_t *off,
					   unsigned int max, size_t *used)
{
	const unsigned char *p = buf;
	struct tcp_frame run[TCP_MAX_HDRS];
	unsigned int nf = 0, rn = 0, ri = 0, i;
	size_t pos = 0, done = 0;

	while (nf < max) {
		struct tcp_frame h;

		if (ri < rn) {
			h = run[ri++];
		} else {
			rn = ri = 0;
			if (len - pos < sizeof(h))
				break;
			tcp_frame_decode(&h, p + pos);
			if (h.op == TCP_OP_HDRS) {
				unsigned int n = rt_check_hdrs(&h);

				if (len - pos - sizeof(h) < h.len)
					break;
				pos += sizeof(h);
				for (i = 0; i < n; i++) {
					tcp_frame_decode(&run[i], p + pos);
					rt_check_frame(&run[i]);
					pos += sizeof(h);
				}
				rn = n;
				continue;
			}
			rt_check_frame(&h);
			pos += sizeof(h);
		}
		if (len - pos < h.len)
			break;
		if (off)
			off[nf] = pos;
		f[nf++] = h;
		pos += h.len;
		done = pos;
	}
	if (used)
		*used = done;
	return nf;
}

#endif /* IBTRS_RAWTCP_H */
