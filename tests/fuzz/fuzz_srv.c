// SPDX-License-Identifier: MIT
/*
 * fuzz_srv.c - the server's state machine under a fuzzer-driven client:
 * connection requests, the authentication handshake (AUTH_REQ, right or
 * broken where the program says), INFO_REQ, requests with their trailers
 * and immediates, heartbeats, closes and raw writes, in any order, over any
 * number of connections and paths, through a live server on the in-process
 * loop backend, with or without keys (the program's first byte). Bugs that
 * need a handshake first are reachable, since the program (srv_prog.h) can
 * do the handshake right and then go wrong: the harness plays the client's
 * side with the real auth.c, and holds each session's secret to join it.
 *
 * The server's files (srv_int.h) are included so that the harness can
 * run the server's tick on a clock the program moves and end every
 * session after each input: inputs start from the same state, a server
 * with no session. The client end is the loop backend's ops table, driven
 * by hand, on a loop of its own. The server application answers, fails or
 * holds each request as its first user byte says.
 *
 * Both loops, the server's and the client's, run on the fuzzer's thread
 * (ibtrs_loop_test_adopt()): the harness runs them until neither has
 * anything left to do (pump()) where it waits for the server (an
 * AUTH_RSP, an INFO_RSP, SRV_OP_SYNC, the end of the input), instead of
 * a thread hand-off per message, which took most of the time. The
 * connect too runs here: the loop backend is included (loop_xprt.c),
 * its one wait (for the listener's answer to the connection request)
 * being connect_wait(), which runs the server's loop until the answer
 * came, where the backend would sleep on its condition variable; a
 * thread of its own for the connect cost two thread wake-ups each way,
 * about half the time of an input. The endpoints' eventfds and timerfds
 * are counters of the harness (fake_run()), instead of system calls that
 * took a third of the time. Both key pairs of the handshake are made
 * once, and X25519 is remembered (fuzz_x25519()), instead of a quarter
 * of the time: the server's code runs as it did, on numbers that repeat.
 *
 * Checked beyond ASan and UBSan: an accepted connection carries a usable
 * geometry, the server accepts AUTH_REQ only with the proofs it must ask
 * (the key's where it has keys, the session's secret to join one, from
 * the identity that owns it) and proves itself in AUTH_RSP, the
 * application sees only requests within the session's limits, every
 * session ends once its client is gone and its requests are answered, and
 * a DISCONNECTED event follows each CONNECTED one.
 */
#include "../../src/core/srv.c"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static int fuzz_keypair(uint8_t priv[IBTRS_AUTH_KEY_LEN],
			uint8_t pub[IBTRS_AUTH_KEY_LEN]);
static int fuzz_x25519(uint8_t out[IBTRS_AUTH_KEY_LEN],
		       const uint8_t priv[IBTRS_AUTH_KEY_LEN],
		       const uint8_t pub[IBTRS_AUTH_KEY_LEN]);
static int fuzz_random(void *buf, size_t len);
static ssize_t fuzz_getrandom(void *buf, size_t len, unsigned int flags);

/* The server's key pair, X25519 and random bytes: see fuzz_x25519()
 * and fuzz_random() below. */
#define ibtrs_auth_keypair fuzz_keypair
#define ibtrs_auth_x25519 fuzz_x25519
#define ibtrs_random fuzz_random
#define getrandom fuzz_getrandom
#include "../../src/core/srv_hs.c"
#include "../../src/core/srv_limits.c"
#include "../../src/core/srv_req.c"
#include "../../src/core/srv_sess.c"
#include "../../src/core/srv_tick.c"
#undef ibtrs_auth_keypair
#undef ibtrs_auth_x25519
#undef ibtrs_random
#undef getrandom

static int connect_wait(pthread_cond_t *cond, pthread_mutex_t *lock,
			const struct timespec *deadline);
static int fake_eventfd(void);
static int fake_timerfd(void);
static int fake_timerfd_settime(int fd, const struct itimerspec *its);
static ssize_t fake_read(int fd, void *buf, size_t len);
static ssize_t fake_write(int fd, const void *buf, size_t len);
static int fake_close(int fd);
static int fake_loop_add(struct ibtrs_loop *loop, struct ibtrs_loop_src *src,
			 uint32_t events);
static void fake_loop_del(struct ibtrs_loop *loop, struct ibtrs_loop_src *src);

/* The endpoints' descriptors are the harness's: see fake_run() below. */
#undef container_of
#define pthread_cond_timedwait connect_wait
#define eventfd(v, f) fake_eventfd()
#define timerfd_create(c, f) fake_timerfd()
#define timerfd_settime(fd, f, its, old) fake_timerfd_settime(fd, its)
#define read(fd, b, n) fake_read(fd, b, n)
#define write(fd, b, n) fake_write(fd, b, n)
#define close(fd) fake_close(fd)
#define ibtrs_loop_add(l, s, e) fake_loop_add(l, s, e)
#define ibtrs_loop_del(l, s) fake_loop_del(l, s)
#include "../../src/xprt/loop/loop_xprt.c"
#undef pthread_cond_timedwait
#undef eventfd
#undef timerfd_create
#undef timerfd_settime
#undef read
#undef write
#undef close
#undef ibtrs_loop_add
#undef ibtrs_loop_del

#include <sys/stat.h>

#include "fuzz.h"
#include "srv_prog.h"

#define CLT_BUF_LEN (64u << 10) /* READ destinations */
#define CLT_RECVS (2 * SRV_QUEUE_DEPTH + 16)
#define WR_ID_CLT_INFO 1
#define WR_ID_CLT_AUTH 2
#define CONNECT_WAIT_MS 10000
#define END_WAIT_MS 10000
#define MAX_HELD 16
#define WAIT_STEP_MS 10 /* a wait for the server's timers */

/**
 * struct slot - one client connection
 * @con: the connection, NULL when the slot is empty
 * @sess: which session uuid it was opened for
 * @geo: the geometry the server accepted it with
 * @off_bits: offset bits of its request immediates
 * @info_buf: its receive for INFO_RSP
 * @auth_buf: its receive for AUTH_RSP
 *
 * Under clt_lock: @failed (err() ran), @info_done (an INFO_RSP decoded),
 * @auth_len (bytes of AUTH_RSP, once it came).
 */
struct slot {
	struct ibtrs_xprt_con *con;
	unsigned int sess;
	struct ibtrs_conn_rsp geo;
	unsigned int off_bits;
	char info_buf[IBTRS_INFO_RSP_MAX_LEN];
	struct ibtrs_msg_auth_rsp auth_buf;
	bool failed;
	bool info_done;
	uint32_t auth_len;
};

/**
 * struct test_key - a key the harness may prove
 * @identity: its identity
 * @key: its bytes
 * @known: in the keyed server's key file
 */
struct test_key {
	const char *identity;
	uint8_t key[32];
	bool known;
};

/**
 * struct sess_rec - what the client side knows of a server session
 * @has: it made one under this uuid, whose secret is in @secret
 * @secret: the session's secret
 * @incarnation: the session's, of its AUTH_RSP
 * @key: the key that made it, NULL without
 */
struct sess_rec {
	bool has;
	uint8_t secret[IBTRS_AUTH_KEY_LEN];
	uint64_t incarnation;
	const struct test_key *key;
};

/**
 * struct variant - one of the servers an input runs against
 * @srv: the server
 * @opts: its options
 * @port: where it listens
 * @keyed: it has a key file
 */
struct variant {
	struct ibtrs_srv_ctx *srv;
	struct ibtrs_srv_opts opts;
	uint16_t port;
	bool keyed;
};

/**
 * struct pool - a session's chunk pool as an INFO_RSP described it
 * @valid: an INFO_RSP came
 * @desc: address, key and length
 */
struct pool {
	bool valid;
	struct ibtrs_desc desc;
};

static struct ibtrs_srv_ctx *srv;  /* of the input's variant */
static struct variant variants[2]; /* without, with keys */
static struct variant *var;
static struct sockaddr_in srv_addr;
static int key_fd = -1;
static char key_path[64];
static struct sess_rec recs[4]; /* by session uuid */

/* "fuzz" and "other" are in the keyed server's file, "nobody" is not. */
static struct test_key test_keys[3] = {
	{ .identity = "fuzz", .known = true },
	{ .identity = "other", .known = true },
	{ .identity = "nobody" },
};
static const struct ibtrs_xprt_ops *xops;
static struct ibtrs_loop *cloop;
static struct ibtrs_xprt_pd *cpd;
static struct ibtrs_xprt_mr *cmr;
static char *cbuf;
static char *reqbuf;

static _Atomic uint64_t fake_ns = 1000000000000ull;

/* The client's key pair of every handshake. */
static uint8_t clt_priv[IBTRS_AUTH_KEY_LEN], clt_pub[IBTRS_AUTH_KEY_LEN];

static pthread_mutex_t clt_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot slots[SRV_SLOTS];
static struct pool pools[4]; /* under clt_lock */

static pthread_mutex_t app_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibtrs_srv_op *held[MAX_HELD]; /* under app_lock */
static unsigned int nr_held;
static int connected_evs; /* under app_lock */

/*
 * X25519 and the server's key pair. Every handshake that makes a session
 * costs three scalar multiplications (the server's key pair, its shared
 * secret, the harness's check of it), a quarter of an input's time: the
 * server's key pair is now made once per process, as the client's is,
 * and X25519, a function of its two inputs, is remembered for the last
 * few of them. The server's code runs as it did; only the numbers repeat.
 */
#define X25519_MEMO 8

struct x25519_memo {
	bool valid;
	int ret;
	uint8_t priv[IBTRS_AUTH_KEY_LEN], pub[IBTRS_AUTH_KEY_LEN];
	uint8_t out[IBTRS_AUTH_KEY_LEN];
};

static struct x25519_memo x25519_memo[X25519_MEMO];
static unsigned int x25519_next;
static bool srv_kp_made;
static uint8_t srv_priv[IBTRS_AUTH_KEY_LEN], srv_pub[IBTRS_AUTH_KEY_LEN];

/**
 * fuzz_keypair() - the server's ibtrs_auth_keypair(): one pair, made once
 * @priv: set to the private key
 * @pub: set to the public key
 *
 * Return: 0.
 */
static int fuzz_keypair(uint8_t priv[IBTRS_AUTH_KEY_LEN],
			uint8_t pub[IBTRS_AUTH_KEY_LEN])
{
	if (!srv_kp_made) {
		FUZZ_CHECK(!ibtrs_auth_keypair(srv_priv, srv_pub));
		srv_kp_made = true;
	}
	memcpy(priv, srv_priv, IBTRS_AUTH_KEY_LEN);
	memcpy(pub, srv_pub, IBTRS_AUTH_KEY_LEN);
	return 0;
}

/**
 * fuzz_x25519() - ibtrs_auth_x25519(), remembered
 * @out: the shared secret
 * @priv: one side's private key
 * @pub: the other side's public key
 *
 * Return: what ibtrs_auth_x25519() returned for these keys.
 */
static int fuzz_x25519(uint8_t out[IBTRS_AUTH_KEY_LEN],
		       const uint8_t priv[IBTRS_AUTH_KEY_LEN],
		       const uint8_t pub[IBTRS_AUTH_KEY_LEN])
{
	struct x25519_memo *m;
	unsigned int i;

	for (i = 0; i < X25519_MEMO; i++) {
		m = &x25519_memo[i];
		if (m->valid && !memcmp(m->priv, priv, IBTRS_AUTH_KEY_LEN) &&
		    !memcmp(m->pub, pub, IBTRS_AUTH_KEY_LEN)) {
			memcpy(out, m->out, IBTRS_AUTH_KEY_LEN);
			return m->ret;
		}
	}
	m = &x25519_memo[x25519_next++ % X25519_MEMO];
	m->ret = ibtrs_auth_x25519(m->out, priv, pub);
	memcpy(m->priv, priv, IBTRS_AUTH_KEY_LEN);
	memcpy(m->pub, pub, IBTRS_AUTH_KEY_LEN);
	m->valid = true;
	memcpy(out, m->out, IBTRS_AUTH_KEY_LEN);
	return m->ret;
}

/*
 * The server's random bytes (handshake nonces, session incarnations): a
 * stream that starts again with each input, so that an input runs the
 * same way each time, without a system call per nonce.
 */
static uint64_t rnd_state;

/**
 * rnd_next() - the next 64 bits of the stream (splitmix64)
 *
 * Return: them.
 */
static uint64_t rnd_next(void)
{
	uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/**
 * fuzz_random() - the server's ibtrs_random()
 * @buf: filled from the stream
 * @len: its length
 *
 * Return: 0.
 */
static int fuzz_random(void *buf, size_t len)
{
	uint8_t *b = buf;

	while (len) {
		uint64_t v = rnd_next();
		size_t n = len < sizeof(v) ? len : sizeof(v);

		memcpy(b, &v, n);
		b += n;
		len -= n;
	}
	return 0;
}

/**
 * fuzz_getrandom() - the server's getrandom()
 * @buf: filled from the stream
 * @len: its length
 * @flags: unused
 *
 * Return: @len.
 */
static ssize_t fuzz_getrandom(void *buf, size_t len, unsigned int flags)
{
	(void)flags;
	fuzz_random(buf, len);
	return (ssize_t)len;
}

/*
 * The loop backend's descriptors. Each endpoint has an eventfd (its
 * loop's wake-up) and a timerfd (delayed frames) in its loop's epoll set:
 * six system calls to start and end an endpoint, a write and a read per
 * message and more, a third of an input's time. In this harness they are
 * counters (struct fake_fd), numbered from FAKE_FD_BASE where no real
 * descriptor is, and a loop's epoll set is the fake_fds registered on it:
 * turn() runs a loop's ready ones after the loop's own turn (its work and
 * real descriptors: its wake-up and tick), in the order they became
 * ready, as epoll_wait() reports them. Descriptors that are not fake go
 * to the system as before.
 */
#define FAKE_FD_BASE (1 << 24)
#define FAKE_FDS 1024
#define FAKE_BATCH 64 /* as the loop's epoll_wait() */

/**
 * struct fake_fd - an endpoint's eventfd or timerfd
 * @used: open
 * @count: the eventfd's counter, or the timer's expirations
 * @loop: the loop whose set it is in, NULL when in none
 * @src: its source there
 * @seq: when it became ready, for the order
 */
struct fake_fd {
	bool used;
	uint64_t count;
	struct ibtrs_loop *loop;
	struct ibtrs_loop_src *src;
	uint64_t seq;
};

static struct fake_fd fake_fds[FAKE_FDS];
static unsigned int fake_top; /* fake_fds[] at or above are unused */
static unsigned int fake_open;
static uint64_t fake_seq;

/**
 * fake_get() - the fake descriptor @fd is
 * @fd: a descriptor
 *
 * Return: it, NULL when @fd is not an open fake one.
 */
static struct fake_fd *fake_get(int fd)
{
	unsigned int i = (unsigned int)fd - FAKE_FD_BASE;

	if (fd < FAKE_FD_BASE || i >= fake_top || !fake_fds[i].used)
		return NULL;
	return &fake_fds[i];
}

/**
 * fake_new() - open a fake descriptor
 *
 * Return: the descriptor.
 */
static int fake_new(void)
{
	unsigned int i;

	for (i = 0; i < FAKE_FDS && fake_fds[i].used; i++)
		;
	FUZZ_CHECK(i < FAKE_FDS); /* a leak of descriptors */
	memset(&fake_fds[i], 0, sizeof(fake_fds[i]));
	fake_fds[i].used = true;
	if (i >= fake_top)
		fake_top = i + 1;
	fake_open++;
	return FAKE_FD_BASE + (int)i;
}

/* eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) */
static int fake_eventfd(void)
{
	return fake_new();
}

/* timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK) */
static int fake_timerfd(void)
{
	return fake_new();
}

/**
 * fake_timerfd_settime() - arm a timer: only for delayed frames, which
 * this harness never asks (loop_xprt_set_delay())
 * @fd: the timer
 * @its: when
 *
 * Return: does not return.
 */
static int fake_timerfd_settime(int fd, const struct itimerspec *its)
{
	(void)fd;
	(void)its;
	FUZZ_CHECK(!"a delayed frame in a harness without delays");
	return -1;
}

/**
 * fake_ready() - @f has something: it is ready from now on, after those
 * ready before it
 * @f: the descriptor
 */
static void fake_ready(struct fake_fd *f)
{
	f->seq = ++fake_seq;
}

static ssize_t fake_read(int fd, void *buf, size_t len)
{
	struct fake_fd *f = fake_get(fd);

	if (!f)
		return read(fd, buf, len);
	FUZZ_CHECK(len == sizeof(f->count));
	if (!f->count) {
		errno = EAGAIN;
		return -1;
	}
	memcpy(buf, &f->count, sizeof(f->count));
	f->count = 0;
	return (ssize_t)len;
}

static ssize_t fake_write(int fd, const void *buf, size_t len)
{
	struct fake_fd *f = fake_get(fd);
	uint64_t v;

	if (!f)
		return write(fd, buf, len);
	FUZZ_CHECK(len == sizeof(v));
	memcpy(&v, buf, sizeof(v));
	if (v && !f->count)
		fake_ready(f);
	f->count += v;
	return (ssize_t)len;
}

static int fake_close(int fd)
{
	struct fake_fd *f = fake_get(fd);

	if (!f)
		return close(fd);
	f->used = false;
	f->loop = NULL;
	fake_open--;
	while (fake_top && !fake_fds[fake_top - 1].used)
		fake_top--;
	return 0;
}

static int fake_loop_add(struct ibtrs_loop *loop, struct ibtrs_loop_src *src,
			 uint32_t events)
{
	struct fake_fd *f = fake_get(src->fd);

	if (!f)
		return ibtrs_loop_add(loop, src, events);
	FUZZ_CHECK(events == EPOLLIN);
	if (f->loop)
		return -EEXIST;
	f->loop = loop;
	f->src = src;
	if (f->count)
		fake_ready(f);
	return 0;
}

static void fake_loop_del(struct ibtrs_loop *loop, struct ibtrs_loop_src *src)
{
	struct fake_fd *f = fake_get(src->fd);

	if (!f) {
		ibtrs_loop_del(loop, src);
		return;
	}
	if (f->loop == loop)
		f->loop = NULL;
}

/**
 * fake_run() - @loop's ready fake descriptors, to their callbacks: the
 * rest of its epoll_wait()
 * @loop: the loop
 *
 * A descriptor closed or taken out of the set by an earlier callback of
 * the batch is skipped (epoll would hand its stale event over).
 *
 * Return: true if any was ready.
 */
static bool fake_run(struct ibtrs_loop *loop)
{
	unsigned int idx[FAKE_BATCH], i, j, n = 0;

	for (i = 0; i < fake_top; i++) {
		struct fake_fd *f = &fake_fds[i];

		if (!f->used || f->loop != loop || !f->count)
			continue;
		/* Insert by seq; past a full batch, the latest wait. */
		for (j = n; j && fake_fds[idx[j - 1]].seq > f->seq; j--)
			if (j < FAKE_BATCH)
				idx[j] = idx[j - 1];
		if (j < FAKE_BATCH) {
			idx[j] = i;
			if (n < FAKE_BATCH)
				n++;
		}
	}
	for (i = 0; i < n; i++) {
		struct fake_fd *f = &fake_fds[idx[i]];

		if (!f->used || f->loop != loop || !f->count)
			continue;
		f->src->cb(f->src, EPOLLIN);
		/* Level-triggered: still ready, again at the end. */
		if (f->used && f->loop == loop && f->count)
			fake_ready(f);
	}
	return n;
}

/**
 * app_rdma_ev() - the server application: check a request and act on it
 * @sess: the session
 * @priv: unused
 * @id: the request
 * @dir: IBTRS_READ or IBTRS_WRITE
 * @data: its data in the chunk
 * @datalen: its data length
 * @usr: its user message, right after the data
 * @usrlen: the user message's length
 *
 * Return: 0, or -EIO for SRV_ACT_FAIL.
 */
static int app_rdma_ev(struct ibtrs_srv *sess, void *priv,
		       struct ibtrs_srv_op *id, int dir, void *data,
		       size_t datalen, const void *usr, size_t usrlen)
{
	uint8_t act = usrlen ? *(const uint8_t *)usr : SRV_ACT_OK;

	(void)priv;
	FUZZ_CHECK(dir == IBTRS_READ || dir == IBTRS_WRITE);
	FUZZ_CHECK(datalen <= SRV_MAX_IO && usrlen <= IBTRS_MAX_USR_MSG);
	FUZZ_CHECK((const char *)usr == (const char *)data + datalen);
	FUZZ_CHECK((char *)data >= sess->chunks &&
		   (const char *)usr + usrlen + sizeof(struct ibtrs_trailer) <=
			   sess->chunks + sess->pool_len);
	switch (act % 4) {
	case SRV_ACT_FAIL:
		return -EIO;
	case SRV_ACT_HOLD:
		pthread_mutex_lock(&app_lock);
		if (nr_held < MAX_HELD) {
			held[nr_held++] = id;
			pthread_mutex_unlock(&app_lock);
			return 0;
		}
		pthread_mutex_unlock(&app_lock);
		break;
	case SRV_ACT_ERROR:
		ibtrs_srv_resp_rdma(id, -ENOSPC);
		return 0;
	}
	if (dir == IBTRS_READ)
		memset(data, 0xab, datalen);
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
}

/**
 * app_link_ev() - the server application's session events
 * @sess: the session
 * @ev: connected or disconnected
 * @priv: unused
 *
 * Return: -EPERM for a session whose name starts with 'r', else 0.
 */
static int app_link_ev(struct ibtrs_srv *sess, enum ibtrs_srv_link_ev ev,
		       void *priv)
{
	char name[IBTRS_SESSNAME_LEN];

	(void)priv;
	if (ev == IBTRS_SRV_LINK_EV_DISCONNECTED) {
		pthread_mutex_lock(&app_lock);
		FUZZ_CHECK(connected_evs > 0);
		connected_evs--;
		pthread_mutex_unlock(&app_lock);
		return 0;
	}
	FUZZ_CHECK(ev == IBTRS_SRV_LINK_EV_CONNECTED);
	FUZZ_CHECK(!ibtrs_srv_get_sess_name(sess, name, sizeof(name)));
	FUZZ_CHECK(name[0] && !strchr(name, '/'));
	if (name[0] == 'r')
		return -EPERM;
	pthread_mutex_lock(&app_lock);
	connected_evs++;
	pthread_mutex_unlock(&app_lock);
	return 0;
}

/**
 * answer_held() - answer every held request
 * @err: 0 or a negative errno
 */
static void answer_held(int err)
{
	struct ibtrs_srv_op *ops[MAX_HELD];
	unsigned int i, n;

	pthread_mutex_lock(&app_lock);
	n = nr_held;
	memcpy(ops, held, n * sizeof(ops[0]));
	nr_held = 0;
	pthread_mutex_unlock(&app_lock);
	for (i = 0; i < n; i++)
		ibtrs_srv_resp_rdma(ops[i], err);
}

/**
 * clt_wc() - a completion of a client connection
 * @con: the connection
 * @wc: the completion
 */
static void clt_wc(struct ibtrs_xprt_con *con, const struct ibtrs_wc *wc)
{
	struct slot *s = con->ctx;
	struct ibtrs_desc d;

	if (wc->opcode == IBTRS_WC_RECV && wc->wr_id == WR_ID_CLT_AUTH) {
		pthread_mutex_lock(&clt_lock);
		s->auth_len = wc->byte_len;
		pthread_mutex_unlock(&clt_lock);
		return;
	}
	if (wc->opcode == IBTRS_WC_RECV) {
		/* Only the INFO and AUTH receives have room for a SEND. */
		FUZZ_CHECK(wc->wr_id == WR_ID_CLT_INFO);
		if (ibtrs_info_rsp_decode(s->info_buf, wc->byte_len, &d, 1) ==
		    1) {
			pthread_mutex_lock(&clt_lock);
			pools[s->sess].valid = true;
			pools[s->sess].desc = d;
			s->info_done = true;
			pthread_mutex_unlock(&clt_lock);
		}
		return;
	}
	if (wc->opcode != IBTRS_WC_RECV_IMM)
		return;
	FUZZ_CHECK(ibtrs_imm_type(wc->imm) == IBTRS_IMM_IO_RSP ||
		   ibtrs_imm_type(wc->imm) == IBTRS_IMM_HB ||
		   ibtrs_imm_type(wc->imm) == IBTRS_IMM_HB_ACK);
	if (wc->wr_id == WR_ID_CLT_INFO)
		xops->post_recv(con, s->info_buf, sizeof(s->info_buf),
				WR_ID_CLT_INFO);
	else if (wc->wr_id == WR_ID_CLT_AUTH)
		xops->post_recv(con, &s->auth_buf, sizeof(s->auth_buf),
				WR_ID_CLT_AUTH);
	else
		xops->post_recv(con, NULL, 0, 0);
}

/**
 * clt_err() - a client connection failed
 * @con: the connection
 * @err: why
 */
static void clt_err(struct ibtrs_xprt_con *con, int err)
{
	struct slot *s = con->ctx;

	FUZZ_CHECK(err < 0);
	pthread_mutex_lock(&clt_lock);
	s->failed = true;
	pthread_mutex_unlock(&clt_lock);
}

static const struct ibtrs_xprt_handler clt_handler = {
	.wc = clt_wc,
	.err = clt_err,
};

/**
 * do_disconnect() - disconnect a client connection, on its loop
 * @arg: the connection
 */
static void do_disconnect(void *arg)
{
	xops->disconnect(arg);
}

/**
 * slot_close() - disconnect and free a slot's connection
 * @s: the slot
 */
static void slot_close(struct slot *s)
{
	if (!s->con)
		return;
	do_disconnect(s->con); /* on the client's loop: this thread */
	xops->destroy(s->con);
	s->con = NULL;
}

/**
 * turn() - one turn of each loop: its work and real descriptors, then
 * its endpoints (fake_run())
 *
 * Nothing queues work on the client's loop and it has no tick: its own
 * turn, a system call, only comes once the rest had nothing to do.
 *
 * Return: true if anything ran.
 */
static bool turn(void)
{
	bool ran = ibtrs_loop_test_run(srv->loop, 0);

	ran = fake_run(srv->loop) || ran;
	ran = fake_run(cloop) || ran;
	return ran || ibtrs_loop_test_run(cloop, 0);
}

/**
 * pump() - run both loops until neither has anything left to do
 *
 * Then nothing more happens until the harness sends, or a timer fires
 * (the server's periodic tick, in real time).
 */
static void pump(void)
{
	while (turn())
		;
}

/**
 * sync_all() - both ends handled what was sent so far
 */
static void sync_all(void)
{
	pump();
}

/**
 * wait_info() - a slot's INFO_RSP or failure, if it comes
 * @s: the slot
 *
 * Once both loops are idle, an INFO_RSP not there does not come: the
 * server answers an INFO_REQ at once or never. The loops stop as soon as
 * it came: what the server does after it (its send's completion) may
 * still be pending when the program goes on, as with loops of their own.
 */
static void wait_info(struct slot *s)
{
	bool done;

	do {
		pthread_mutex_lock(&clt_lock);
		done = s->info_done || s->failed;
		pthread_mutex_unlock(&clt_lock);
	} while (!done && turn());
}

/**
 * wait_auth() - a slot's AUTH_RSP or failure, if it comes
 * @s: the slot
 *
 * As for INFO_RSP: the server answers an AUTH_REQ at once or never (a
 * handshake left open ends at its deadline, on the program's clock), and
 * the loops stop as soon as it came.
 *
 * Return: the bytes of AUTH_RSP, 0 when none came.
 */
static uint32_t wait_auth(struct slot *s)
{
	uint32_t len;
	bool done;

	do {
		pthread_mutex_lock(&clt_lock);
		len = s->auth_len;
		done = len || s->failed;
		pthread_mutex_unlock(&clt_lock);
	} while (!done && turn());
	return len;
}

/**
 * connect_wait() - the loop backend's wait in connect() for the
 * listener's answer, on this thread: run the server's loop (whose
 * connection request handler answers) instead of sleeping, as a wake-up
 * without a signal, which the backend's loop around the wait allows
 * @cond: the link's condition, signalled by the answer
 * @lock: the link's lock, held
 * @deadline: CLOCK_MONOTONIC bound of the connect
 *
 * Return: 0, or ETIMEDOUT once @deadline passed.
 */
static int connect_wait(pthread_cond_t *cond, pthread_mutex_t *lock,
			const struct timespec *deadline)
{
	uint64_t end = (uint64_t)deadline->tv_sec * 1000000000ull +
		       (uint64_t)deadline->tv_nsec;

	(void)cond;
	if (ibtrs_real_now_ns() >= end)
		return ETIMEDOUT;
	pthread_mutex_unlock(lock);
	if (!turn())
		ibtrs_loop_test_run(srv->loop, WAIT_STEP_MS);
	pthread_mutex_lock(lock);
	return 0;
}

/**
 * do_connect() - xops->connect(), the server run meanwhile by
 * connect_wait()
 * @attr: the connection's attributes
 * @priv: the connection request
 * @rsp: the answer
 * @conp: the connection
 *
 * Return: what connect returned.
 */
static int do_connect(const struct ibtrs_xprt_con_attr *attr, const void *priv,
		      void *rsp, struct ibtrs_xprt_con **conp)
{
	pump();
	return xops->connect(cpd, NULL, (struct sockaddr *)&srv_addr, attr,
			     priv, rsp, CONNECT_WAIT_MS, conp);
}

/**
 * pick_key() - the key an AUTH_REQ proves, as the handshake byte says
 * @h: the handshake byte (srv_prog.h)
 *
 * Return: the key, NULL for none.
 */
static const struct test_key *pick_key(uint8_t h)
{
	if (var->keyed)
		return (h & 3) == 3 ? NULL : &test_keys[h & 3];
	/* Without keys a client proves none; a key is ignored. */
	return (h & 3) == 2 ? &test_keys[0] : NULL;
}

/**
 * auth() - the client's side of the handshake on slot @s
 * @s: the slot, connected, with conn_rsp in @s->geo
 * @cr: the connection request it sent
 * @h: the handshake byte: what to break (srv_prog.h)
 * @in: the program, for a raw AUTH_REQ
 *
 * Return: true when the server accepted the connection into a session.
 */
static bool auth(struct slot *s, const struct ibtrs_conn_req *cr, uint8_t h,
		 struct fuzz_in *in)
{
	struct ibtrs_auth_hs ah = {
		.version = cr->version,
		.cid = cr->cid,
		.cid_num = cr->cid_num,
		.flags = cr->first_conn ? IBTRS_CONN_FIRST : 0,
		.identity = "",
	};
	uint8_t priv[IBTRS_AUTH_KEY_LEN], shared[IBTRS_AUTH_KEY_LEN];
	uint8_t secret[IBTRS_AUTH_KEY_LEN], proof[IBTRS_AUTH_KEY_LEN];
	const struct test_key *key = pick_key(h);
	struct sess_rec *rec = &recs[s->sess];
	struct ibtrs_auth_req ar = { .flags = 0 };
	struct ibtrs_msg_auth_req m;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct ibtrs_auth_rsp rsp;
	bool raw = h & 0x80, join, created;
	uint8_t rawbuf[sizeof(m) + 8];
	uint32_t len;

	if (h & 0x40)
		return false; /* no AUTH_REQ: the handshake times out */
	memcpy(ah.nc, cr->nonce, IBTRS_NONCE_LEN);
	memcpy(ah.ns, s->geo.nonce, IBTRS_NONCE_LEN);
	memcpy(ah.sess_uuid, cr->sess_uuid, IBTRS_UUID_LEN);
	memcpy(ah.path_uuid, cr->path_uuid, IBTRS_UUID_LEN);
	memcpy(priv, clt_priv, sizeof(priv));
	memcpy(ar.pub, clt_pub, sizeof(ar.pub));
	if (h & 0x20)
		memset(ar.pub, 0, sizeof(ar.pub)); /* of low order */
	memcpy(ah.pub_c, ar.pub, IBTRS_AUTH_KEY_LEN);
	if (key) {
		ar.flags |= IBTRS_AUTH_PSK;
		ar.id_len = (uint8_t)strlen(key->identity);
		memcpy(ar.identity, key->identity, ar.id_len + 1u);
		ah.identity = key->identity;
		ibtrs_auth_proof_psk(ar.proof_psk, key->key, sizeof(key->key),
				     &ah);
		if (h & 4)
			ar.proof_psk[h % IBTRS_AUTH_KEY_LEN] ^= 0x10;
	}
	/* Join what it made, unless told otherwise; or try without. */
	join = rec->has != !!(h & 8);
	if (join) {
		ar.flags |= IBTRS_AUTH_JOIN;
		if (rec->has)
			ibtrs_auth_proof_sess(ar.proof_sess, rec->secret, &ah);
		else
			memset(ar.proof_sess, h, sizeof(ar.proof_sess));
		if (h & 0x10)
			ar.proof_sess[h % IBTRS_AUTH_KEY_LEN] ^= 0x01;
	}
	ibtrs_auth_req_encode(&m, &ar);
	if (raw) {
		size_t n;
		const uint8_t *p =
			fuzz_bytes(in, fuzz_u16(in) % sizeof(rawbuf), &n);

		memcpy(rawbuf, p, n);
		iov.iov_base = rawbuf;
		iov.iov_len = n;
	}
	if (xops->post_send(s->con, &iov, 1, 0, 0))
		return false;
	len = wait_auth(s);
	if (!len)
		return false;
	FUZZ_CHECK(!ibtrs_auth_rsp_decode(&s->auth_buf, len, &rsp));
	if (rsp.err)
		return false;
	created = rsp.flags & IBTRS_RSP_NEW_SESS;
	if (raw) {
		/* Accepted on proofs the harness cannot check. */
		if (created)
			rec->has = false;
		return true;
	}
	/* Accepted: only with what the server must ask. */
	if (var->keyed)
		FUZZ_CHECK(key && key->known && !(h & 4));
	if (created) {
		FUZZ_CHECK(cr->first_conn && !cr->cid && !(h & 0x20));
		FUZZ_CHECK(!fuzz_x25519(shared, priv, rsp.pub));
		ibtrs_auth_secret(secret, var->keyed ? key->key : NULL,
				  var->keyed ? sizeof(key->key) : 0, shared,
				  &ah, rsp.pub);
	} else {
		FUZZ_CHECK(join && rec->has && !(h & 0x10));
		FUZZ_CHECK(rsp.incarnation == rec->incarnation);
		FUZZ_CHECK(!var->keyed || rec->key == key);
		memcpy(secret, rec->secret, sizeof(secret));
	}
	/* And the server proves the key, or the session's secret. */
	if (var->keyed)
		ibtrs_auth_proof_srv(proof, key->key, sizeof(key->key), &ah,
				     created ? rsp.pub : NULL, rsp.flags,
				     rsp.incarnation);
	else
		ibtrs_auth_proof_srv(proof, secret, sizeof(secret), &ah,
				     created ? rsp.pub : NULL, rsp.flags,
				     rsp.incarnation);
	FUZZ_CHECK(ibtrs_auth_equal(proof, rsp.proof));
	if (created) {
		rec->has = true;
		memcpy(rec->secret, secret, sizeof(secret));
		rec->incarnation = rsp.incarnation;
		rec->key = var->keyed ? key : NULL;
	}
	return true;
}

/**
 * op_connect() - SRV_OP_CONNECT: the connection request, then the
 * handshake
 * @in: the program
 */
static void op_connect(struct fuzz_in *in)
{
	struct ibtrs_xprt_con_attr attr = {
		.max_send_wr = 64,
		.max_recv_wr = CLT_RECVS + 2,
		.max_send_sge = 2,
	};
	uint8_t a = fuzz_u8(in), b = fuzz_u8(in), recon = fuzz_u8(in);
	uint8_t h = fuzz_u8(in);
	struct slot *s = &slots[a & 3];
	struct ibtrs_conn_req r = {
		.version = IBTRS_PROTO_VER,
		.cid = b & 15,
		.cid_num = (uint16_t)((b >> 4) + 1),
		.recon_cnt = recon,
		.first_conn = (a >> 5) & 1,
		.caps = IBTRS_CAP_GEN_FROM_1 | (a & 0x40 ? 0 : IBTRS_CAP_AUTH),
	};
	uint8_t rsp[IBTRS_XPRT_PRIV_LEN];
	struct ibtrs_msg_conn_req m;
	struct ibtrs_xprt_con *con;
	unsigned int i;
	int ret;

	r.sess_uuid[0] = (uint8_t)(1 + ((a >> 2) & 3));
	r.path_uuid[0] = (uint8_t)(1 + ((a >> 4) & 1));
	memset(r.nonce, b ^ recon, sizeof(r.nonce));
	r.nonce[0] = h;
	if (a & 0x80)
		r.version = fuzz_u16(in); /* the transcript binds it too */
	ibtrs_conn_req_encode(&m, &r);
	slot_close(s);

	memset(rsp, 0, sizeof(rsp));
	ret = do_connect(&attr, &m, rsp, &con);
	FUZZ_CHECK(ret != -ETIMEDOUT);
	if (ret)
		return;
	FUZZ_CHECK(!ibtrs_conn_rsp_decode(rsp, sizeof(rsp), &s->geo));
	FUZZ_CHECK(!s->geo.err && s->geo.queue_depth == SRV_QUEUE_DEPTH);
	FUZZ_CHECK(s->geo.flags & IBTRS_RSP_AUTH);
	ret = ibtrs_imm_off_bits(s->geo.queue_depth, s->geo.chunk_size);
	FUZZ_CHECK(ret >= 0);
	s->off_bits = (unsigned int)ret;
	s->sess = (a >> 2) & 3;
	pthread_mutex_lock(&clt_lock);
	s->failed = false;
	s->info_done = false;
	s->auth_len = 0;
	pthread_mutex_unlock(&clt_lock);
	con->handler = &clt_handler;
	con->ctx = s;
	/* AUTH_RSP comes first, then INFO_RSP, then immediates. */
	FUZZ_CHECK(!xops->post_recv(con, &s->auth_buf, sizeof(s->auth_buf),
				    WR_ID_CLT_AUTH));
	FUZZ_CHECK(!xops->post_recv(con, s->info_buf, sizeof(s->info_buf),
				    WR_ID_CLT_INFO));
	for (i = 0; i < CLT_RECVS; i++)
		FUZZ_CHECK(!xops->post_recv(con, NULL, 0, 0));
	FUZZ_CHECK(!xops->start(con, cloop));
	s->con = con;
	/* A refused connection stays: what it sends next must be ignored. */
	auth(s, &r, h, in);
}

/**
 * op_info() - SRV_OP_INFO
 * @in: the program
 */
static void op_info(struct fuzz_in *in)
{
	static const char *const names[] = { "s0", "s1", "refused" };
	uint8_t a = fuzz_u8(in);
	struct slot *s = &slots[a & 3];
	struct ibtrs_msg_info_req m;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	char raw[300];
	size_t n;

	if (((a >> 2) & 3) == 3) {
		const uint8_t *p =
			fuzz_bytes(in, fuzz_u16(in) % sizeof(raw), &n);

		memcpy(raw, p, n);
		iov.iov_base = raw;
		iov.iov_len = n;
	} else {
		ibtrs_info_req_encode(&m, names[(a >> 2) & 3]);
	}
	if (!s->con)
		return;
	pthread_mutex_lock(&clt_lock);
	s->info_done = false;
	pthread_mutex_unlock(&clt_lock);
	if (!xops->post_send(s->con, &iov, 1, 0, 0))
		wait_info(s);
}

/**
 * op_req() - SRV_OP_REQ: data, user message and trailer, then the
 * immediate, in one WRITE into the chunk
 * @in: the program
 */
static void op_req(struct fuzz_in *in)
{
	uint8_t a = fuzz_u8(in), chunk8 = fuzz_u8(in);
	uint32_t data_len = fuzz_u16(in) % (SRV_MAX_IO + 2);
	uint32_t usr_len = fuzz_u16(in) % (IBTRS_MAX_USR_MSG + 2);
	uint8_t gen = fuzz_u8(in), act = fuzz_u8(in);
	uint32_t raw_imm = (a >> 3) & 1 ? fuzz_u32(in) : 0;
	struct slot *s = &slots[a & 3];
	struct ibtrs_req_trailer t = {
		.dir = (a >> 2) & 1 ? IBTRS_READ : IBTRS_WRITE,
		.usr_len = (uint16_t)usr_len,
		.gen = gen,
	};
	struct ibtrs_desc pool;
	struct ibtrs_trailer tr;
	uint32_t chunk, off, imm, start;
	struct iovec iov;
	size_t len = 0;

	if (!s->con)
		return;
	pthread_mutex_lock(&clt_lock);
	pool = pools[s->sess].desc;
	pthread_mutex_unlock(&clt_lock);
	chunk = chunk8 % (s->geo.queue_depth + 1u);
	off = data_len + usr_len;
	if (t.dir == IBTRS_READ) {
		t.desc.addr = cmr->addr + (uint64_t)gen * 64;
		t.desc.key = cmr->key ^ ((a >> 4) & 1);
		t.desc.len = data_len + ((a >> 5) & 1);
		start = data_len;
	} else {
		memset(reqbuf, 0x5c, data_len);
		len = data_len;
		start = 0;
	}
	memset(reqbuf + len, 0x33, usr_len);
	if (usr_len)
		reqbuf[len] = (char)act;
	len += usr_len;
	ibtrs_trailer_encode(&tr, &t);
	memcpy(reqbuf + len, &tr, sizeof(tr));
	len += sizeof(tr);

	imm = (a >> 3) & 1 ? raw_imm : ibtrs_imm_req(chunk, off, s->off_bits);
	iov.iov_base = reqbuf;
	iov.iov_len = len;
	xops->post_write(s->con, &iov, 1,
			 pool.addr + (uint64_t)chunk * s->geo.chunk_size +
				 start,
			 pool.key, imm, 0, IBTRS_XPRT_IMM);
}

/**
 * op_imm() - SRV_OP_IMM: an immediate without data
 * @in: the program
 */
static void op_imm(struct fuzz_in *in)
{
	uint8_t a = fuzz_u8(in), kind = fuzz_u8(in) % 5;
	struct slot *s = &slots[a & 3];
	uint32_t imm;

	switch (kind) {
	case 0:
		imm = ibtrs_imm_hb(IBTRS_IMM_HB);
		break;
	case 1:
		imm = ibtrs_imm_hb(IBTRS_IMM_HB_ACK);
		break;
	case 2:
		imm = ibtrs_imm_hb(IBTRS_IMM_CLOSE);
		break;
	case 3:
		imm = fuzz_u32(in);
		break;
	default:
		imm = fuzz_u32(in) & IBTRS_IMM_PAYLOAD_MASK;
		break;
	}
	if (s->con)
		xops->post_write(s->con, NULL, 0, 0, 0, imm, 0, IBTRS_XPRT_IMM);
}

/**
 * op_write() - SRV_OP_WRITE: bytes into the pool, no immediate
 * @in: the program
 */
static void op_write(struct fuzz_in *in)
{
	uint8_t a = fuzz_u8(in);
	uint32_t off = fuzz_u32(in), len = fuzz_u16(in) % 4097u;
	struct slot *s = &slots[a & 3];
	struct iovec iov = { .iov_base = reqbuf, .iov_len = len };
	struct ibtrs_desc pool;

	if (!s->con)
		return;
	pthread_mutex_lock(&clt_lock);
	pool = pools[s->sess].desc;
	pthread_mutex_unlock(&clt_lock);
	memset(reqbuf, 0x77, len);
	xops->post_write(s->con, &iov, 1, pool.addr + off, pool.key, 0, 0, 0);
}

/**
 * fake_clock() - the clock of the library, moved by SRV_OP_TICK only
 *
 * Return: nanoseconds.
 */
static uint64_t fake_clock(void)
{
	return atomic_load(&fake_ns);
}

/* Nothing: a batch of the loop that reads the clock (clock_work). */
static void clock_fn(struct ibtrs_work *w)
{
	(void)w;
}

/*
 * The loop reads the clock for a batch (ibtrs_loop_batch_ns()) when it
 * runs work or real descriptors, not the endpoints of fake_run(): after
 * the clock moved, this work makes the next turn read it.
 */
static struct ibtrs_work clock_work = { .fn = clock_fn };

/**
 * op_tick() - SRV_OP_TICK: time passes, the server's tick runs
 * @in: the program
 */
static void op_tick(struct fuzz_in *in)
{
	uint64_t step = (fuzz_u8(in) + 1ull) * SRV_TICK_STEP_MS * 1000000ull;

	atomic_fetch_add(&fake_ns, step);
	ibtrs_loop_queue(srv->loop, &clock_work);
	srv_tick(&srv->loops[0]); /* on the server's loop: this thread */
}

/**
 * close_sessions() - end every handshake and session, on the loop
 * @arg: unused
 *
 * As ibtrs_srv_close() does, but the listener stays: the next input
 * connects to the same server without the cost of listening again.
 */
static void close_sessions(void *arg)
{
	(void)arg;
	while (srv->handshakes)
		srv_hs_close(srv->handshakes->con, "input done");
	while (srv->sessions) {
		struct ibtrs_srv *sess = srv->sessions;

		srv_sess_close(sess, "input done");
		srv_sess_unlink_put(sess);
	}
}

/**
 * end_input() - back to a server with no session
 *
 * A session that does not end once its client is gone and its requests
 * are answered is a leak: the check fails after END_WAIT_MS (of the
 * server's loop run, its timers included).
 */
static void end_input(void)
{
	uint64_t end = ibtrs_real_now_ns() + END_WAIT_MS * 1000000ull;
	unsigned int i, left;

	answer_held(0);
	for (i = 0; i < SRV_SLOTS; i++)
		slot_close(&slots[i]);
	close_sessions(NULL); /* on the server's loop: this thread */
	for (;;) {
		pump();
		answer_held(0);
		pthread_mutex_lock(&srv->lock);
		left = srv->nr_sessions + srv->nr_cons;
		pthread_mutex_unlock(&srv->lock);
		if (!left || ibtrs_real_now_ns() >= end)
			break;
		ibtrs_loop_test_run(srv->loop, WAIT_STEP_MS);
	}
	FUZZ_CHECK(!left);
	FUZZ_CHECK(!fake_open); /* every endpoint closed its descriptors */
	pthread_mutex_lock(&app_lock);
	FUZZ_CHECK(!connected_evs && !nr_held);
	pthread_mutex_unlock(&app_lock);
	pthread_mutex_lock(&clt_lock);
	memset(pools, 0, sizeof(pools));
	pthread_mutex_unlock(&clt_lock);
	memset(recs, 0, sizeof(recs));
}

/**
 * open_server() - one server variant
 * @v: the variant
 * @keyed: with the key file of test_keys
 */
static void open_server(struct variant *v, bool keyed)
{
	struct ibtrs_srv_opts *o = &v->opts;

	ibtrs_srv_opts_init(o, sizeof(*o));
	o->port = 0;
	o->listen_addr = (struct sockaddr *)&srv_addr;
	o->backend = "loop";
	o->queue_depth = SRV_QUEUE_DEPTH;
	o->max_io_size = SRV_MAX_IO;
	o->max_sessions = SRV_MAX_SESSIONS;
	o->hb_timeout_ms = SRV_HB_TIMEOUT_MS;
	o->sess_grace_ms = SRV_GRACE_MS;
	o->handshake_timeout_ms = SRV_HS_TIMEOUT_MS;
	o->no_control = true;
	o->rdma_ev = app_rdma_ev;
	o->link_ev = app_link_ev;
	o->tls = IBTRS_TLS_OFF;
	o->tls_psk_file = keyed ? key_path : NULL;
	v->keyed = keyed;
	v->srv = ibtrs_srv_open_opts(o);
	FUZZ_CHECK(v->srv);
	FUZZ_CHECK(!v->srv->sec.keys == !keyed);
	v->port = v->srv->port;
}

/**
 * write_keys() - the keyed server's key file: a memfd of mode 0600
 */
static void write_keys(void)
{
	char buf[256];
	unsigned int i, j;
	size_t n = 0;

	key_fd = memfd_create("fuzz-srv-keys", MFD_CLOEXEC);
	FUZZ_CHECK(key_fd >= 0 && !fchmod(key_fd, 0600));
	for (i = 0; i < 3; i++) {
		for (j = 0; j < sizeof(test_keys[i].key); j++)
			test_keys[i].key[j] = (uint8_t)(i * 32 + j);
		if (!test_keys[i].known)
			continue;
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				      "%s:", test_keys[i].identity);
		for (j = 0; j < sizeof(test_keys[i].key); j++)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%02x",
					      test_keys[i].key[j]);
		buf[n++] = '\n';
	}
	FUZZ_CHECK(write(key_fd, buf, n) == (ssize_t)n);
	snprintf(key_path, sizeof(key_path), "/proc/self/fd/%d", key_fd);
}

/**
 * LLVMFuzzerInitialize() - the servers, the client's loop, pd and region,
 * the loops taken over by this thread, and the key pair
 * @argc: unused
 * @argv: unused
 *
 * Return: 0.
 */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct iovec iov;

	(void)argc;
	(void)argv;

	/* Heartbeats, graces and handshake deadlines follow the program's
	 * clock; the periodic tick still runs in real time but sees only
	 * that clock. */
	ibtrs_set_test_clock(fake_clock);
	srv_addr.sin_family = AF_INET;
	srv_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	write_keys();
	open_server(&variants[0], false);
	open_server(&variants[1], true);

	xops = ibtrs_xprt_find("loop");
	FUZZ_CHECK(xops);
	FUZZ_CHECK(!ibtrs_loop_create(&cloop, "fuzz-clt", NULL, NULL, 0));
	FUZZ_CHECK(!xops->pd_alloc(&cpd, 1));
	FUZZ_CHECK(!xops->mr_alloc(cpd, 1, &cmr));
	cbuf = calloc(1, CLT_BUF_LEN);
	reqbuf = calloc(1, 2 * SRV_MAX_IO + IBTRS_MAX_USR_MSG + 64);
	FUZZ_CHECK(cbuf && reqbuf);
	iov.iov_base = cbuf;
	iov.iov_len = CLT_BUF_LEN;
	FUZZ_CHECK(!xops->mr_map(cmr, &iov, 1));

	ibtrs_loop_test_adopt(variants[0].srv->loop);
	ibtrs_loop_test_adopt(variants[1].srv->loop);
	ibtrs_loop_test_adopt(cloop);
	FUZZ_CHECK(!ibtrs_auth_keypair(clt_priv, clt_pub));
	return 0;
}

/**
 * LLVMFuzzerTestOneInput() - run one program against the server
 * @data: the program, see srv_prog.h
 * @size: its length
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	unsigned int step;

	rnd_state = 0;
	var = &variants[fuzz_u8(&in) & SRV_KEYED];
	srv = var->srv;
	srv_addr.sin_port = htons(var->port);

	for (step = 0; step < SRV_MAX_STEPS && in.n; step++) {
		switch (fuzz_u8(&in) % SRV_OP_NR) {
		case SRV_OP_CONNECT:
			op_connect(&in);
			break;
		case SRV_OP_INFO:
			op_info(&in);
			break;
		case SRV_OP_REQ:
			op_req(&in);
			break;
		case SRV_OP_IMM:
			op_imm(&in);
			break;
		case SRV_OP_WRITE:
			op_write(&in);
			break;
		case SRV_OP_DISC:
			slot_close(&slots[fuzz_u8(&in) & 3]);
			break;
		case SRV_OP_ANSWER:
			answer_held(fuzz_u8(&in) & 1 ? -EIO : 0);
			break;
		case SRV_OP_SYNC:
			sync_all();
			break;
		default:
			op_tick(&in);
			break;
		}
	}
	sync_all();
	end_input();
	return 0;
}
