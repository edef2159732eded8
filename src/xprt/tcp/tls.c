// SPDX-License-Identifier: MIT
/*
 * tls.c - TLS 1.3 with pre-shared keys for the tcp backend (tls.h).
 *
 * Cipher suites are pinned to AES-GCM: GnuTLS's default priority with a
 * PSK picks ChaCha20-Poly1305, which the nettle of common distributions
 * runs an order of magnitude slower than AES-GCM on CPUs with AES
 * instructions. ECDHE-PSK gives forward secrecy; plain PSK stays allowed
 * for peers without it.
 */
#ifdef IBTRS_HAVE_TLS

#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/socket.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "keyring.h"
#include "log.h"
#include "loop.h"
#include "tls.h"
#include "util.h"

#define TLS_PRIORITY                                                 \
	"NONE:+VERS-TLS1.3:+AES-128-GCM:+AES-256-GCM:+AEAD:+SHA256:" \
	"+SHA384:+ECDHE-PSK:+PSK:+GROUP-X25519:+GROUP-SECP256R1:"    \
	"+SIGN-ALL:+CTYPE-ALL"
#define TLS_RECORD 16384	  /* plaintext bytes of a full record */
#define TLS_TX_BATCH (256u << 10) /* plaintext taken per writev */
#define TLS_IN_BUF (256u << 10)	  /* ciphertext read per recv */
/*
 * Buffers of a handshake: a peer that has not proved a key costs little
 * memory; an established session gets TLS_IN_BUF, and its output buffer
 * grows to what its batches need.
 */
#define TLS_HS_BUF 4096
#define TLS_ALERT 0x15

struct tcp_tls_srv {
	_Atomic unsigned int refs; /* the listener's, and a session's each */
	gnutls_psk_server_credentials_t cred;
	struct ibtrs_keyring keys; /* a copy */
};

struct tcp_tls {
	gnutls_session_t s;
	gnutls_psk_client_credentials_t ccred;
	struct tcp_tls_srv *srv;
	int fd;
	bool server;
	bool ktls;	 /* the kernel does the record layer */
	bool user_io;	 /* records through obuf/ibuf */
	bool saw_input;	 /* the peer sent something */
	bool peer_plain; /* ... and it was no TLS record */
	bool unknown_id; /* server: the client's identity is not ours */
	char peer[64];
	char identity[IBTRS_IDENTITY_MAX + 1];

	/* output, under olock: the receiving thread may send an alert */
	pthread_mutex_t olock;
	char *obuf;
	size_t ohead, otail, ocap;
	/* input, receiving thread only */
	char *ibuf;
	size_t ihead, itail, icap;
	/* plaintext gathered into one record, sending thread only */
	char *pbuf;
};

/* ------------------------------------------------------------------ */
/* transport                                                            */

/* Does the kernel offer the "tls" upper layer protocol (kTLS)? */
static bool ktls_available(void)
{
	static int avail = -1;
	char buf[256];
	ssize_t n;
	int fd, a = 0;

	if (avail >= 0)
		return avail;
	fd = open("/proc/sys/net/ipv4/tcp_available_ulp", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		if (n > 0) {
			char *tok, *save;

			buf[n] = 0;
			for (tok = strtok_r(buf, " \n", &save); tok;
			     tok = strtok_r(NULL, " \n", &save))
				if (!strcmp(tok, "tls"))
					a = 1;
		}
		close(fd);
	}
	avail = a;
	return a;
}

static ssize_t tls_push(gnutls_transport_ptr_t ptr, const void *data,
			size_t len)
{
	struct tcp_tls *t = ptr;

	pthread_mutex_lock(&t->olock);
	if (t->ocap - t->otail < len && t->ohead) {
		memmove(t->obuf, t->obuf + t->ohead, t->otail - t->ohead);
		t->otail -= t->ohead;
		t->ohead = 0;
	}
	if (t->ocap - t->otail < len) {
		size_t cap = t->ocap * 2 > t->otail + len ? t->ocap * 2
							  : t->otail + len;
		char *nb = realloc(t->obuf, cap);

		if (!nb) {
			pthread_mutex_unlock(&t->olock);
			gnutls_transport_set_errno(t->s, ENOMEM);
			return -1;
		}
		t->obuf = nb;
		t->ocap = cap;
	}
	memcpy(t->obuf + t->otail, data, len);
	t->otail += len;
	pthread_mutex_unlock(&t->olock);
	return (ssize_t)len;
}

/* Send what waits in obuf: 0 when all left, -EAGAIN, or an error. */
static int tls_out_flush(struct tcp_tls *t)
{
	int ret = 0;

	pthread_mutex_lock(&t->olock);
	while (t->ohead < t->otail) {
		ssize_t n = send(t->fd, t->obuf + t->ohead, t->otail - t->ohead,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			break;
		}
		t->ohead += (size_t)n;
	}
	if (t->ohead == t->otail)
		t->ohead = t->otail = 0;
	pthread_mutex_unlock(&t->olock);
	return ret;
}

static ssize_t tls_pull(gnutls_transport_ptr_t ptr, void *data, size_t len)
{
	struct tcp_tls *t = ptr;
	size_t n;

	if (t->ihead == t->itail) {
		ssize_t r;

		do {
			r = recv(t->fd, t->ibuf, t->icap, MSG_DONTWAIT);
		} while (r < 0 && errno == EINTR);
		if (r < 0) {
			gnutls_transport_set_errno(t->s, errno);
			return -1;
		}
		if (!r)
			return 0;
		if (!t->saw_input) {
			t->saw_input = true;
			t->peer_plain = t->ibuf[0] != TCP_TLS_HANDSHAKE_BYTE &&
					t->ibuf[0] != TLS_ALERT;
		}
		t->ihead = 0;
		t->itail = (size_t)r;
	}
	n = t->itail - t->ihead < len ? t->itail - t->ihead : len;
	memcpy(data, t->ibuf + t->ihead, n);
	t->ihead += n;
	return (ssize_t)n;
}

static int tls_pull_timeout(gnutls_transport_ptr_t ptr, unsigned int ms)
{
	struct tcp_tls *t = ptr;
	struct pollfd p = { .fd = t->fd, .events = POLLIN };
	int r;

	if (t->ihead < t->itail)
		return 1;
	r = poll(&p, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (int)ms);
	if (r < 0)
		gnutls_transport_set_errno(t->s, errno);
	return r;
}

/* ------------------------------------------------------------------ */
/* sessions                                                             */

static int psk_lookup(gnutls_session_t s, const char *identity,
		      gnutls_datum_t *key)
{
	struct tcp_tls *t = gnutls_session_get_ptr(s);
	const struct ibtrs_psk *psk =
		ibtrs_keyring_find(&t->srv->keys, identity);

	if (!psk) {
		t->unknown_id = true;
		ibtrs_log_rl(
			IBTRS_LOG_ERR,
			"tcp: TLS from %s refused: unknown PSK identity '%.64s'",
			t->peer, identity);
		return -1;
	}
	key->data = gnutls_malloc(psk->len);
	if (!key->data)
		return -1;
	memcpy(key->data, psk->key, psk->len);
	key->size = (unsigned int)psk->len;
	snprintf(t->identity, sizeof(t->identity), "%s", psk->identity);
	return 0;
}

int tcp_tls_srv_new(const struct ibtrs_xprt_tls *cfg, struct tcp_tls_srv **srvp)
{
	struct tcp_tls_srv *srv;

	if (!cfg->keys || !cfg->keys->nr)
		return -EINVAL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->keys.keys = calloc(cfg->keys->nr, sizeof(*srv->keys.keys));
	if (!srv->keys.keys ||
	    gnutls_psk_allocate_server_credentials(&srv->cred)) {
		free(srv->keys.keys);
		free(srv);
		return -ENOMEM;
	}
	memcpy(srv->keys.keys, cfg->keys->keys,
	       cfg->keys->nr * sizeof(*srv->keys.keys));
	srv->keys.nr = cfg->keys->nr;
	atomic_init(&srv->refs, 1);
	gnutls_psk_set_server_credentials_function(srv->cred, psk_lookup);
	*srvp = srv;
	return 0;
}

void tcp_tls_srv_free(struct tcp_tls_srv *srv)
{
	if (!srv || atomic_fetch_sub(&srv->refs, 1) != 1)
		return;
	gnutls_psk_free_server_credentials(srv->cred);
	ibtrs_wipe(srv->keys.keys, srv->keys.nr * sizeof(*srv->keys.keys));
	free(srv->keys.keys);
	free(srv);
}

void tcp_tls_free(struct tcp_tls *t)
{
	if (!t)
		return;
	if (t->s)
		gnutls_deinit(t->s);
	if (t->ccred)
		gnutls_psk_free_client_credentials(t->ccred);
	tcp_tls_srv_free(t->srv);
	pthread_mutex_destroy(&t->olock);
	free(t->obuf);
	free(t->ibuf);
	free(t->pbuf);
	free(t);
}

static int tls_new(int fd, bool server, const char *peer, struct tcp_tls **tp)
{
	unsigned int flags = GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL;
	struct tcp_tls *t;
	const char *errpos = NULL;
	int r;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->olock, NULL);
	t->fd = fd;
	t->server = server;
	snprintf(t->peer, sizeof(t->peer), "%s", peer ? peer : "?");
	t->ocap = t->icap = TLS_HS_BUF;
	t->obuf = malloc(t->ocap);
	t->ibuf = malloc(t->icap);
	if (!t->obuf || !t->ibuf)
		goto nomem;
	/* No session tickets: every connection proves the key afresh. */
	flags |= server ? GNUTLS_SERVER | GNUTLS_NO_TICKETS : GNUTLS_CLIENT;
	if (gnutls_init(&t->s, flags))
		goto nomem;
	r = gnutls_priority_set_direct(t->s, TLS_PRIORITY, &errpos);
	if (r) {
		ibtrs_log(IBTRS_LOG_ERR, "tcp: TLS priority at '%s': %s",
			  errpos ? errpos : "?", gnutls_strerror(r));
		tcp_tls_free(t);
		return -EINVAL;
	}
	gnutls_session_set_ptr(t->s, t);
	/*
	 * Where the kernel can take the record layer, the handshake runs on
	 * the socket itself so that GnuTLS may hand the keys over at its
	 * end; otherwise the records go through the buffers here.
	 */
	if (ktls_available()) {
		gnutls_transport_set_int(t->s, fd);
	} else {
		t->user_io = true;
		gnutls_transport_set_ptr(t->s, t);
		gnutls_transport_set_push_function(t->s, tls_push);
		gnutls_transport_set_pull_function(t->s, tls_pull);
		gnutls_transport_set_pull_timeout_function(t->s,
							   tls_pull_timeout);
	}
	*tp = t;
	return 0;

nomem:
	tcp_tls_free(t);
	return -ENOMEM;
}

/*
 * After the handshake: the kernel's record layer, or ours from now on,
 * with the buffers of an established session. Return: 0 or -ENOMEM.
 */
static int tls_established(struct tcp_tls *t)
{
	char *ib;

	if (!t->user_io) {
		if (gnutls_transport_is_ktls_enabled(t->s) ==
		    GNUTLS_KTLS_DUPLEX) {
			t->ktls = true;
			return 0;
		}
		/* The handshake read records exactly: nothing is buffered. */
		t->user_io = true;
		gnutls_transport_set_ptr(t->s, t);
		gnutls_transport_set_push_function(t->s, tls_push);
		gnutls_transport_set_pull_function(t->s, tls_pull);
		gnutls_transport_set_pull_timeout_function(t->s,
							   tls_pull_timeout);
	}
	t->pbuf = malloc(TLS_RECORD);
	ib = realloc(t->ibuf, TLS_IN_BUF);
	if (ib) {
		t->ibuf = ib;
		t->icap = TLS_IN_BUF;
	}
	return t->pbuf && ib ? 0 : -ENOMEM;
}

/* A server's messages are rate-limited: any peer can cause them. */
#define tls_err(t, ...)                                           \
	do {                                                      \
		if ((t)->server)                                  \
			ibtrs_log_rl(IBTRS_LOG_ERR, __VA_ARGS__); \
		else                                              \
			ibtrs_log(IBTRS_LOG_ERR, __VA_ARGS__);    \
	} while (0)

/* Why a handshake failed, as the log and errno put it. */
static int tls_handshake_error(struct tcp_tls *t, int r)
{
	const char *who = t->server ? "client" : "server";

	if (t->peer_plain) {
		tls_err(t,
			"tcp: %s %s does not speak TLS (it answered in plaintext)",
			who, t->peer);
		return -EPROTONOSUPPORT;
	}
	if (t->unknown_id)
		return -EACCES; /* logged by psk_lookup() */
	if (r == GNUTLS_E_FATAL_ALERT_RECEIVED) {
		gnutls_alert_description_t a = gnutls_alert_get(t->s);
		const char *name = gnutls_alert_get_name(a);

		if (a == GNUTLS_A_UNKNOWN_PSK_IDENTITY)
			tls_err(t,
				"tcp: TLS refused by %s %s: it does not know the identity '%s'",
				who, t->peer, t->identity);
		else
			tls_err(t, "tcp: TLS refused by %s %s: %s (wrong key?)",
				who, t->peer, name ? name : "alert");
		return -EACCES;
	}
	if (r == GNUTLS_E_DECRYPTION_FAILED ||
	    r == GNUTLS_E_KEY_USAGE_VIOLATION ||
	    r == GNUTLS_E_MAC_VERIFY_FAILED ||
	    r == GNUTLS_E_INSUFFICIENT_CREDENTIALS ||
	    r == GNUTLS_E_RECEIVED_ILLEGAL_PARAMETER) {
		tls_err(t,
			"tcp: TLS handshake with %s %s failed: %s (wrong key)",
			who, t->peer, gnutls_strerror(r));
		return -EACCES;
	}
	if (r == GNUTLS_E_PUSH_ERROR || r == GNUTLS_E_PULL_ERROR ||
	    r == GNUTLS_E_PREMATURE_TERMINATION) {
		tls_err(t,
			"tcp: TLS handshake with %s %s failed: connection closed",
			who, t->peer);
		return -ECONNRESET;
	}
	tls_err(t, "tcp: TLS handshake with %s %s failed: %s", who, t->peer,
		gnutls_strerror(r));
	return -EPROTO;
}

/* Push out what the session queued, blocking until @deadline_ns. */
static int tls_out_wait(struct tcp_tls *t, uint64_t deadline_ns)
{
	int r;

	while (t->user_io && (r = tls_out_flush(t))) {
		if (r != -EAGAIN)
			return r;
		r = ibtrs_wait_fd(t->fd, POLLOUT, deadline_ns);
		if (r)
			return r;
	}
	return 0;
}

int tcp_tls_client(int fd, const struct ibtrs_xprt_tls *cfg,
		   uint64_t deadline_ns, const char *peer, struct tcp_tls **tp)
{
	gnutls_datum_t key;
	struct tcp_tls *t;
	int r;

	if (!cfg->psk)
		return -EINVAL;
	r = tls_new(fd, false, peer, &t);
	if (r)
		return r;
	key.data = (unsigned char *)cfg->psk->key;
	key.size = (unsigned int)cfg->psk->len;
	if (gnutls_psk_allocate_client_credentials(&t->ccred) ||
	    gnutls_psk_set_client_credentials(t->ccred, cfg->psk->identity,
					      &key, GNUTLS_PSK_KEY_RAW) ||
	    gnutls_credentials_set(t->s, GNUTLS_CRD_PSK, t->ccred)) {
		tcp_tls_free(t);
		return -ENOMEM;
	}
	snprintf(t->identity, sizeof(t->identity), "%s", cfg->psk->identity);
	for (;;) {
		r = gnutls_handshake(t->s);
		if (!r) {
			r = tls_out_wait(t, deadline_ns);
			break;
		}
		if (r != GNUTLS_E_AGAIN && r != GNUTLS_E_INTERRUPTED) {
			r = tls_handshake_error(t, r);
			break;
		}
		r = tls_out_wait(t, deadline_ns);
		if (!r && gnutls_record_get_direction(t->s) == 0 &&
		    t->ihead == t->itail)
			r = ibtrs_wait_fd(fd, POLLIN, deadline_ns);
		else if (!r && !t->user_io)
			r = ibtrs_wait_fd(fd, POLLOUT, deadline_ns);
		if (r == -ETIMEDOUT)
			ibtrs_log(IBTRS_LOG_ERR,
				  "tcp: TLS handshake with server %s timed out",
				  t->peer);
		if (r)
			break;
	}
	if (!r)
		r = tls_established(t);
	if (r) {
		tcp_tls_free(t);
		return r;
	}
	*tp = t;
	return 0;
}

int tcp_tls_server(struct tcp_tls_srv *srv, int fd, const char *peer,
		   struct tcp_tls **tp)
{
	struct tcp_tls *t;
	int r;

	r = tls_new(fd, true, peer, &t);
	if (r)
		return r;
	atomic_fetch_add(&srv->refs, 1);
	t->srv = srv;
	if (gnutls_credentials_set(t->s, GNUTLS_CRD_PSK, srv->cred)) {
		tcp_tls_free(t);
		return -ENOMEM;
	}
	*tp = t;
	return 0;
}

int tcp_tls_handshake_step(struct tcp_tls *t, bool *want_out)
{
	int r = gnutls_handshake(t->s), f = 0;

	*want_out = false;
	if (t->user_io)
		f = tls_out_flush(t);
	if (f && f != -EAGAIN)
		return f;
	if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
		*want_out = f == -EAGAIN || gnutls_record_get_direction(t->s);
		return -EAGAIN;
	}
	if (r) {
		/* Tell the client why, as far as the socket takes it. */
		if (gnutls_error_is_fatal(r) && !t->peer_plain &&
		    r != GNUTLS_E_PREMATURE_TERMINATION &&
		    r != GNUTLS_E_PULL_ERROR && r != GNUTLS_E_PUSH_ERROR) {
			if (t->unknown_id)
				gnutls_alert_send(
					t->s, GNUTLS_AL_FATAL,
					GNUTLS_A_UNKNOWN_PSK_IDENTITY);
			else
				gnutls_alert_send_appropriate(t->s, r);
			if (t->user_io)
				tls_out_flush(t);
		}
		return tls_handshake_error(t, r);
	}
	r = tls_established(t);
	if (r)
		return r;
	if (f == -EAGAIN) {
		/* The last flight waits for the socket: it leaves before
		 * anything else (tcp_tls_writev flushes first). */
		*want_out = true;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* records                                                              */

/* Encrypt @len bytes at @p into obuf, full records. */
static int tls_encrypt(struct tcp_tls *t, const char *p, size_t len)
{
	while (len) {
		ssize_t r = gnutls_record_send(t->s, p, len);

		if (r < 0) {
			ibtrs_log_rl(IBTRS_LOG_ERR, "tcp: TLS send to %s: %s",
				     t->peer, gnutls_strerror((int)r));
			return -EIO;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

ssize_t tcp_tls_writev(struct tcp_tls *t, const struct iovec *iov,
		       unsigned int cnt)
{
	size_t taken = 0, plen = 0;
	unsigned int i;
	int r;

	if (t->ktls) {
		struct msghdr msg = { .msg_iov = (struct iovec *)iov,
				      .msg_iovlen = cnt };

		return sendmsg(t->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	r = tls_out_flush(t);
	if (r) {
		errno = -r;
		return -1;
	}
	/*
	 * Small pieces (frame headers, small payloads) are gathered into
	 * full records; a large payload is encrypted from where it is.
	 */
	for (i = 0; i < cnt && taken < TLS_TX_BATCH; i++) {
		const char *p = iov[i].iov_base;
		size_t len = iov[i].iov_len;

		if (len > TLS_TX_BATCH - taken)
			len = TLS_TX_BATCH - taken;
		taken += len;
		while (len) {
			size_t n;

			if (!plen && len >= TLS_RECORD) {
				n = len - len % TLS_RECORD;
				r = tls_encrypt(t, p, n);
				if (r)
					goto fail;
				p += n;
				len -= n;
				continue;
			}
			n = TLS_RECORD - plen < len ? TLS_RECORD - plen : len;
			memcpy(t->pbuf + plen, p, n);
			plen += n;
			p += n;
			len -= n;
			if (plen == TLS_RECORD) {
				r = tls_encrypt(t, t->pbuf, plen);
				if (r)
					goto fail;
				plen = 0;
			}
		}
	}
	if (plen) {
		r = tls_encrypt(t, t->pbuf, plen);
		if (r)
			goto fail;
	}
	r = tls_out_flush(t);
	if (r && r != -EAGAIN)
		goto fail;
	return (ssize_t)taken;

fail:
	errno = -r;
	return -1;
}

bool tcp_tls_tx_pending(struct tcp_tls *t)
{
	bool p;

	if (t->ktls)
		return false;
	pthread_mutex_lock(&t->olock);
	p = t->ohead < t->otail;
	pthread_mutex_unlock(&t->olock);
	return p;
}

ssize_t tcp_tls_readv(struct tcp_tls *t, const struct iovec *iov,
		      unsigned int cnt)
{
	size_t total = 0;
	unsigned int i, spins = 0;

	if (t->ktls)
		return readv(t->fd, iov, (int)cnt);
	for (i = 0; i < cnt; i++) {
		size_t done = 0;

		while (done < iov[i].iov_len) {
			ssize_t r = gnutls_record_recv(
				t->s, (char *)iov[i].iov_base + done,
				iov[i].iov_len - done);

			if (r > 0) {
				done += (size_t)r;
				total += (size_t)r;
				continue;
			}
			if (!r || r == GNUTLS_E_PREMATURE_TERMINATION)
				return (ssize_t)total;
			if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
				/* A record that was no data (a key update):
				 * what is buffered still needs reading. */
				if (tcp_tls_rx_pending(t) && ++spins < 64)
					continue;
				goto out;
			}
			if (total)
				return (ssize_t)total; /* the error comes next
							*/
			ibtrs_log_rl(IBTRS_LOG_ERR,
				     "tcp: TLS receive from %s: %s", t->peer,
				     gnutls_strerror((int)r));
			errno = EPROTO;
			return -1;
		}
	}
out:
	if (total)
		return (ssize_t)total;
	errno = EAGAIN;
	return -1;
}

bool tcp_tls_rx_pending(struct tcp_tls *t)
{
	if (t->ktls)
		return false;
	return t->ihead < t->itail || gnutls_record_check_pending(t->s) > 0;
}

int tcp_tls_io_deadline(struct tcp_tls *t, void *buf, size_t len, bool out,
			uint64_t deadline_ns)
{
	struct iovec v = { .iov_base = buf, .iov_len = len };
	int r;

	while (v.iov_len) {
		ssize_t n = out ? tcp_tls_writev(t, &v, 1)
				: tcp_tls_readv(t, &v, 1);

		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (!n)
			return -ECONNRESET;
		if (n > 0) {
			v.iov_base = (char *)v.iov_base + n;
			v.iov_len -= (size_t)n;
			continue;
		}
		r = ibtrs_wait_fd(t->fd, out ? POLLOUT : POLLIN, deadline_ns);
		if (r)
			return r;
	}
	return out ? tls_out_wait(t, deadline_ns) : 0;
}

void tcp_tls_str(struct tcp_tls *t, char *buf, size_t len)
{
	const char *c = gnutls_cipher_get_name(gnutls_cipher_get(t->s));
	char lc[32];
	size_t i;

	snprintf(lc, sizeof(lc), "%s", c ? c : "?");
	for (i = 0; lc[i]; i++)
		if (lc[i] >= 'A' && lc[i] <= 'Z')
			lc[i] = (char)(lc[i] - 'A' + 'a');
	snprintf(buf, len, "tls1.3 %s %s", lc,
		 t->ktls ? "kernel" : "user-space");
}

const char *tcp_tls_identity(struct tcp_tls *t)
{
	return t->identity;
}

#endif /* IBTRS_HAVE_TLS */
