/* SPDX-License-Identifier: MIT */
/*
 * tls.h - TLS 1.3 with pre-shared keys under the tcp backend's frames
 * (GnuTLS). Built with IBTRS_HAVE_TLS only.
 *
 * The record layer runs in user space over buffers of its own: records
 * are written into an output buffer that leaves in one send(), and read
 * from an input buffer that one recv() fills with many records, so that a
 * batch of frames costs the system calls it costs in plaintext. Where the
 * kernel offers kTLS and GnuTLS hands the keys to it, the kernel does the
 * record layer instead and the socket carries plaintext for the caller.
 *
 * A session is used by at most two threads at once: one sending
 * (tcp_tls_writev) and one receiving (tcp_tls_readv, the loop thread).
 */
#ifndef IBTRS_TCP_TLS_H
#define IBTRS_TCP_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "xprt.h"

/* First byte of a TLS handshake record (a ClientHello). */
#define TCP_TLS_HANDSHAKE_BYTE 0x16

struct tcp_tls;
struct tcp_tls_srv;

#ifdef IBTRS_HAVE_TLS
/*
 * Server credentials of a listener: @cfg's keys (copied), referenced by
 * the listener and by each server session made with them. Return: 0, or
 * a negative errno.
 */
int tcp_tls_srv_new(const struct ibtrs_xprt_tls *cfg, struct tcp_tls_srv **srv);
/* Drop the listener's reference (NULL is fine). */
void tcp_tls_srv_free(struct tcp_tls_srv *srv);

/*
 * Client: the TLS handshake on the connected socket @fd with @cfg's key,
 * blocking until @deadline_ns (ibtrs_now_ns()). @peer names the server in
 * messages. Refusals are logged with their cause and return -EACCES (the
 * server did not take the key or its identity), -EPROTONOSUPPORT (the
 * server answered in plaintext: it does not speak TLS), -ETIMEDOUT, or
 * another negative errno.
 */
int tcp_tls_client(int fd, const struct ibtrs_xprt_tls *cfg,
		   uint64_t deadline_ns, const char *peer, struct tcp_tls **t);

/* Server: a session on the accepted socket @fd, handshake not begun. */
int tcp_tls_server(struct tcp_tls_srv *srv, int fd, const char *peer,
		   struct tcp_tls **t);

/*
 * Server: run the handshake as far as the socket allows, never blocking.
 * Return: 0 done, -EAGAIN to be called again when the socket is readable
 * (or writable, if *@want_out), or a negative errno after logging why.
 */
int tcp_tls_handshake_step(struct tcp_tls *t, bool *want_out);

/* Free @t (NULL is fine); the socket stays open. */
void tcp_tls_free(struct tcp_tls *t);

/*
 * Like a non-blocking sendmsg(): encrypt up to a batch's worth of @iov
 * (@cnt may be 0: only push out what waits) and return the plaintext
 * bytes taken, which no longer need the caller's buffers, or -1 with
 * errno (EAGAIN while earlier records still wait for the socket).
 */
ssize_t tcp_tls_writev(struct tcp_tls *t, const struct iovec *iov,
		       unsigned int cnt);

/* Encrypted bytes still waiting for the socket. */
bool tcp_tls_tx_pending(struct tcp_tls *t);

/*
 * Like a non-blocking readv(): decrypt into @iov, in order, what has
 * arrived; 0 at the end of the stream, -1 with errno (EAGAIN: nothing
 * more for now).
 */
ssize_t tcp_tls_readv(struct tcp_tls *t, const struct iovec *iov,
		      unsigned int cnt);

/*
 * Received bytes held in user space (decrypted, or whole records not yet
 * decrypted): the socket will not report them readable.
 */
bool tcp_tls_rx_pending(struct tcp_tls *t);

/* Blocking I/O of exactly @len bytes until @deadline_ns, for the hello. */
int tcp_tls_io_deadline(struct tcp_tls *t, void *buf, size_t len, bool out,
			uint64_t deadline_ns);

/* "tls1.3 aes-128-gcm user-space" (or "kernel") into @buf. */
void tcp_tls_str(struct tcp_tls *t, char *buf, size_t len);

/* The identity the client proved ("" before the handshake is done). */
const char *tcp_tls_identity(struct tcp_tls *t);

#else /* !IBTRS_HAVE_TLS: the core refuses a TLS mode at open already */

#include <errno.h>

static inline int tcp_tls_srv_new(const struct ibtrs_xprt_tls *cfg,
				  struct tcp_tls_srv **srv)
{
	(void)cfg, (void)srv;
	return -EOPNOTSUPP;
}
static inline void tcp_tls_srv_free(struct tcp_tls_srv *srv)
{
	(void)srv;
}
static inline int tcp_tls_client(int fd, const struct ibtrs_xprt_tls *cfg,
				 uint64_t deadline_ns, const char *peer,
				 struct tcp_tls **t)
{
	(void)fd, (void)cfg, (void)deadline_ns, (void)peer, (void)t;
	return -EOPNOTSUPP;
}
static inline int tcp_tls_server(struct tcp_tls_srv *srv, int fd,
				 const char *peer, struct tcp_tls **t)
{
	(void)srv, (void)fd, (void)peer, (void)t;
	return -EOPNOTSUPP;
}
static inline int tcp_tls_handshake_step(struct tcp_tls *t, bool *want_out)
{
	(void)t, (void)want_out;
	return -EOPNOTSUPP;
}
static inline void tcp_tls_free(struct tcp_tls *t)
{
	(void)t;
}
static inline ssize_t tcp_tls_writev(struct tcp_tls *t, const struct iovec *iov,
				     unsigned int cnt)
{
	(void)t, (void)iov, (void)cnt;
	errno = EOPNOTSUPP;
	return -1;
}
static inline bool tcp_tls_tx_pending(struct tcp_tls *t)
{
	(void)t;
	return false;
}
static inline ssize_t tcp_tls_readv(struct tcp_tls *t, const struct iovec *iov,
				    unsigned int cnt)
{
	(void)t, (void)iov, (void)cnt;
	errno = EOPNOTSUPP;
	return -1;
}
static inline bool tcp_tls_rx_pending(struct tcp_tls *t)
{
	(void)t;
	return false;
}
static inline int tcp_tls_io_deadline(struct tcp_tls *t, void *buf, size_t len,
				      bool out, uint64_t deadline_ns)
{
	(void)t, (void)buf, (void)len, (void)out, (void)deadline_ns;
	return -EOPNOTSUPP;
}
static inline void tcp_tls_str(struct tcp_tls *t, char *buf, size_t len)
{
	(void)t;
	if (len)
		buf[0] = 0;
}
static inline const char *tcp_tls_identity(struct tcp_tls *t)
{
	(void)t;
	return "";
}
#endif /* IBTRS_HAVE_TLS */

#endif /* IBTRS_TCP_TLS_H */
