/* SPDX-License-Identifier: MIT */
/*
 * harness.h - header-only helpers of the functional tests.
 *
 * - h_srv: an in-process IBTRS server with a memory target. Each session
 *   gets H_TARGET_SIZE bytes; a WRITE stores its data at the offset its user
 *   message names, a READ answers from there. The user message is checked
 *   byte for byte (struct h_usr_hdr). Hooks let a test make rdma_ev fail or
 *   hold requests until the test answers them from its own thread.
 * - h_clt_open(): a session over loopback paths ip:127.0.0.1, ip:127.0.0.2...
 * - h_req_sync(): submit one request and wait for its confirmation.
 * - t_watchdog() (test.h): a hung test fails instead of hanging.
 *
 * Only one h_srv may run at a time in a process: the server callbacks carry
 * no context pointer besides the session's.
 */
#ifndef IBTRS_HARNESS_H
#define IBTRS_HARNESS_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ibtrs.h"
#include "test.h"

#define H_TARGET_SIZE (64ull << 20) /* per session, sparse */
#define H_REQ_TIMEOUT_S 20	    /* bound of one synchronous request */
#define H_USR_MAGIC 0x48555352u
#define H_EV_LOG 1024

/* ------------------------------------------------------------------ */
/* time                                                                 */

static inline void h_sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Fast deterministic fill, 8 bytes per step. */
static inline void h_fill(void *buf, size_t len, unsigned long long seed)
{
	unsigned char *p = buf;
	unsigned long long s = seed * 0x9e3779b97f4a7c15ull + 1, v;
	size_t i = 0;

	while (i < len) {
		v = t_rand(&s);
		if (len - i >= 8) {
			memcpy(p + i, &v, 8);
			i += 8;
		} else {
			for (; i < len; i++, v >>= 8)
				p[i] = (unsigned char)v;
		}
	}
}

/* Random number in lo..hi. */
static inline size_t h_rand_range(unsigned long long *s, size_t lo, size_t hi)
{
	return lo + (size_t)(t_rand(s) % (hi - lo + 1));
}

/* ------------------------------------------------------------------ */
/* user messages                                                        */

/**
 * struct h_usr_hdr - head of a user message of at least its own size
 * @magic: H_USR_MAGIC
 * @usr_len: length of the whole user message
 * @off: target offset of the request's data
 * @seed: the rest of the message is h_fill(@seed)
 * @csum: FNV-1a of the whole message computed with @csum zero
 * @cookie: free for the test
 *
 * Shorter messages carry no header: the target uses h_srv.default_off and,
 * when the test set one, compares them with h_srv_expect_usr().
 */
struct h_usr_hdr {
	uint32_t magic;
	uint32_t usr_len;
	uint64_t off;
	uint64_t seed;
	uint32_t csum;
	uint32_t cookie;
};

static inline uint32_t h_fnv(uint32_t h, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

static inline uint32_t h_usr_csum(const void *usr, size_t len)
{
	struct h_usr_hdr hdr;
	uint32_t h = 2166136261u;

	memcpy(&hdr, usr, sizeof(hdr));
	hdr.csum = 0;
	h = h_fnv(h, &hdr, sizeof(hdr));
	return h_fnv(h, (const char *)usr + sizeof(hdr), len - sizeof(hdr));
}

/**
 * h_usr_build() - build a user message of @len bytes
 * @buf: IBTRS_MAX_USR_MSG bytes
 * @len: 0..IBTRS_MAX_USR_MSG
 * @off: target offset (only in messages of a header's size or more)
 * @seed: content seed
 * @cookie: free for the test
 */
static inline void h_usr_build(void *buf, size_t len, uint64_t off,
			       uint64_t seed, uint32_t cookie)
{
	struct h_usr_hdr hdr = {
		.magic = H_USR_MAGIC,
		.usr_len = (uint32_t)len,
		.off = off,
		.seed = seed,
		.cookie = cookie,
	};

	if (len < sizeof(hdr)) {
		h_fill(buf, len, seed);
		return;
	}
	memcpy(buf, &hdr, sizeof(hdr));
	h_fill((char *)buf + sizeof(hdr), len - sizeof(hdr), seed);
	hdr.csum = h_usr_csum(buf, len);
	memcpy(buf, &hdr, sizeof(hdr));
}

/* ------------------------------------------------------------------ */
/* the server                                                           */

struct h_srv;

/**
 * struct h_sess - the target of one server session
 * @srv: the server
 * @sess: the library's session (valid until DISCONNECTED)
 * @mem: H_TARGET_SIZE bytes
 * @name: name from ibtrs_srv_get_sess_name() with a full buffer
 * @name_rc: its return value
 * @short_name: the name read into a 4-byte buffer
 * @short_rc: that return value
 * @qd: ibtrs_srv_get_queue_depth()
 * @identity: ibtrs_srv_get_identity()
 * @identity_rc: its return value
 * @rdma_calls: rdma_ev calls of this session
 */
struct h_sess {
	struct h_srv *srv;
	struct ibtrs_srv *sess;
	unsigned char *mem;
	char name[NAME_MAX];
	int name_rc;
	char short_name[4];
	int short_rc;
	int qd;
	char identity[160];
	int identity_rc;
	_Atomic uint64_t rdma_calls;
	struct h_sess *next;
};

/**
 * struct h_op - a request held for the test (defer mode)
 */
struct h_op {
	struct ibtrs_srv_op *id;
	struct h_sess *hs;
	int dir;
	void *data;
	size_t datalen;
	uint64_t off;
	struct h_op *next;
};

struct h_ev {
	enum ibtrs_srv_link_ev ev;
	char name[NAME_MAX];
};

/**
 * struct h_srv - the test server
 * @ctx: the library context
 * @port: the port it listens on
 * @fail_err: when non-zero, rdma_ev returns it (after counting the call)
 * @defer: when set, rdma_ev holds requests for h_srv_pop()
 * @default_off: target offset of requests whose user message has no header
 * @rdma_calls, @rd_calls, @wr_calls: rdma_ev calls
 * @usr_bad: user messages that failed the check (answered -EBADMSG)
 * @range_bad: requests outside the target (answered -ERANGE)
 * @nr_connected, @nr_disconnected: link events
 */
struct h_srv {
	struct ibtrs_srv_ctx *ctx;
	uint16_t port;
	_Atomic int fail_err;
	_Atomic uint64_t rdma_calls, rd_calls, wr_calls, usr_bad, range_bad;
	_Atomic unsigned int nr_connected, nr_disconnected;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool defer;	      /* under @lock */
	uint64_t default_off; /* under @lock */
	bool expect_on;	      /* under @lock */
	size_t expect_len;
	unsigned char expect[IBTRS_MAX_USR_MSG];
	struct h_op *held_head, *held_tail; /* under @lock */
	unsigned int nr_held;
	struct h_sess *sessions;   /* under @lock */
	struct h_ev evs[H_EV_LOG]; /* under @lock */
	unsigned int nr_evs;
};

static struct h_srv *h_cur_srv;

/* Check the user message; return the target offset or -EBADMSG. */
static inline int h_srv_check_usr(struct h_srv *srv, const void *usr,
				  size_t usrlen, uint64_t *off)
{
	struct h_usr_hdr hdr;
	unsigned char *want;
	int ret = 0;

	if (usrlen < sizeof(hdr)) {
		pthread_mutex_lock(&srv->lock);
		*off = srv->default_off;
		if (srv->expect_on &&
		    (srv->expect_len != usrlen ||
		     (usrlen && memcmp(srv->expect, usr, usrlen))))
			ret = -EBADMSG;
		pthread_mutex_unlock(&srv->lock);
		return ret;
	}
	memcpy(&hdr, usr, sizeof(hdr));
	if (hdr.magic != H_USR_MAGIC || hdr.usr_len != usrlen ||
	    hdr.csum != h_usr_csum(usr, usrlen))
		return -EBADMSG;
	want = malloc(usrlen - sizeof(hdr) + 1);
	CHECK(want);
	h_fill(want, usrlen - sizeof(hdr), hdr.seed);
	if (memcmp(want, (const char *)usr + sizeof(hdr), usrlen - sizeof(hdr)))
		ret = -EBADMSG;
	free(want);
	*off = hdr.off;
	return ret;
}

/* Move the data of a request between the target and @data. */
static inline void h_op_io(struct h_sess *hs, int dir, void *data,
			   size_t datalen, uint64_t off)
{
	if (!datalen)
		return;
	if (dir == IBTRS_WRITE)
		memcpy(hs->mem + off, data, datalen);
	else
		memcpy(data, hs->mem + off, datalen);
}

static inline int h_srv_rdma_ev(struct ibtrs_srv *sess, void *priv,
				struct ibtrs_srv_op *id, int dir, void *data,
				size_t datalen, const void *usr, size_t usrlen)
{
	struct h_sess *hs = priv;
	struct h_srv *srv = h_cur_srv;
	struct h_op *op;
	uint64_t off = 0;
	int err;

	(void)sess;
	atomic_fetch_add(&srv->rdma_calls, 1);
	atomic_fetch_add(dir == IBTRS_READ ? &srv->rd_calls : &srv->wr_calls,
			 1);
	if (!hs)
		return -ENODEV;
	atomic_fetch_add(&hs->rdma_calls, 1);
	err = atomic_load(&srv->fail_err);
	if (err)
		return err;
	if (h_srv_check_usr(srv, usr, usrlen, &off)) {
		atomic_fetch_add(&srv->usr_bad, 1);
		return -EBADMSG;
	}
	if (off > H_TARGET_SIZE || datalen > H_TARGET_SIZE - off) {
		atomic_fetch_add(&srv->range_bad, 1);
		return -ERANGE;
	}
	pthread_mutex_lock(&srv->lock);
	if (srv->defer) {
		op = calloc(1, sizeof(*op));
		CHECK(op);
		op->id = id;
		op->hs = hs;
		op->dir = dir;
		op->data = data;
		op->datalen = datalen;
		op->off = off;
		if (srv->held_tail)
			srv->held_tail->next = op;
		else
			srv->held_head = op;
		srv->held_tail = op;
		srv->nr_held++;
		pthread_cond_broadcast(&srv->cond);
		pthread_mutex_unlock(&srv->lock);
		return 0;
	}
	pthread_mutex_unlock(&srv->lock);
	h_op_io(hs, dir, data, datalen, off);
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
}

static inline void h_srv_log_ev(struct h_srv *srv, enum ibtrs_srv_link_ev ev,
				const char *name)
{
	pthread_mutex_lock(&srv->lock);
	if (srv->nr_evs < H_EV_LOG) {
		srv->evs[srv->nr_evs].ev = ev;
		snprintf(srv->evs[srv->nr_evs].name,
			 sizeof(srv->evs[srv->nr_evs].name), "%s", name);
	}
	srv->nr_evs++;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
}

static inline int h_srv_link_ev(struct ibtrs_srv *sess,
				enum ibtrs_srv_link_ev ev, void *priv)
{
	struct h_srv *srv = h_cur_srv;
	struct h_sess *hs = priv, **pp;

	switch (ev) {
	case IBTRS_SRV_LINK_EV_CONNECTED:
		hs = calloc(1, sizeof(*hs));
		CHECK(hs);
		hs->srv = srv;
		hs->sess = sess;
		hs->name_rc = ibtrs_srv_get_sess_name(sess, hs->name,
						      sizeof(hs->name));
		hs->short_rc = ibtrs_srv_get_sess_name(sess, hs->short_name,
						       sizeof(hs->short_name));
		hs->qd = ibtrs_srv_get_queue_depth(sess);
		hs->identity_rc = ibtrs_srv_get_identity(sess, hs->identity,
							 sizeof(hs->identity));
		hs->mem = mmap(NULL, H_TARGET_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			       0);
		CHECK(hs->mem != MAP_FAILED);
		ibtrs_srv_set_sess_priv(sess, hs);
		pthread_mutex_lock(&srv->lock);
		hs->next = srv->sessions;
		srv->sessions = hs;
		pthread_mutex_unlock(&srv->lock);
		atomic_fetch_add(&srv->nr_connected, 1);
		h_srv_log_ev(srv, ev, hs->name);
		return 0;
	case IBTRS_SRV_LINK_EV_DISCONNECTED:
		CHECK(hs);
		pthread_mutex_lock(&srv->lock);
		for (pp = &srv->sessions; *pp; pp = &(*pp)->next) {
			if (*pp == hs) {
				*pp = hs->next;
				break;
			}
		}
		pthread_mutex_unlock(&srv->lock);
		atomic_fetch_add(&srv->nr_disconnected, 1);
		h_srv_log_ev(srv, ev, hs->name);
		ibtrs_srv_set_sess_priv(sess, NULL);
		munmap(hs->mem, H_TARGET_SIZE);
		free(hs);
		return 0;
	}
	return 0;
}

/*
 * A TCP port on 127.0.0.1 that nothing listens on: one the system picked,
 * held by a socket bound to it (not listening) until the process ends, so
 * that connections to it are refused and no other process can start
 * listening on it meanwhile.
 */
static inline uint16_t h_free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_EQ(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	CHECK_EQ(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	return ntohs(sin.sin_port);
}

/**
 * h_srv_start() - start the test server
 * @srv: the server to fill
 * @listen: listen address such as "ip:127.0.0.1", NULL for that one, "*"
 *          for every address (needed for paths to ip:127.0.0.2)
 * @queue_depth: chunks per session, 0 for the default
 * @max_io_size: 0 for the default
 */
static inline void h_srv_start(struct h_srv *srv, const char *listen,
			       uint32_t queue_depth, uint32_t max_io_size)
{
	struct sockaddr_storage ss;
	struct ibtrs_addr addr = { .src = NULL, .dst = &ss };
	struct ibtrs_srv_opts opts;

	CHECK(!h_cur_srv);
	memset(srv, 0, sizeof(*srv));
	pthread_mutex_init(&srv->lock, NULL);
	t_cond_init(&srv->cond);
	h_cur_srv = srv;

	ibtrs_srv_opts_init(&opts, sizeof(opts));
	opts.port = 0;
	if (!listen)
		listen = "ip:127.0.0.1";
	if (strcmp(listen, "*")) {
		CHECK_EQ(ibtrs_addr_to_sockaddr(listen, strlen(listen), 0,
						&addr),
			 0);
		opts.listen_addr = (const struct sockaddr *)&ss;
	}
	if (queue_depth)
		opts.queue_depth = queue_depth;
	if (max_io_size)
		opts.max_io_size = max_io_size;
	opts.rdma_ev = h_srv_rdma_ev;
	opts.link_ev = h_srv_link_ev;
	srv->ctx = ibtrs_srv_open_opts(&opts);
	if (!srv->ctx) {
		fprintf(stderr, "cannot start the test server: %s\n",
			strerror(errno));
		exit(1);
	}
	srv->port = ibtrs_srv_get_port(srv->ctx);
	CHECK(srv->port);
}

/**
 * h_srv_set_defer() - hold (or stop holding) new requests for the test
 * @srv: the server
 * @on: hold from now on
 */
static inline void h_srv_set_defer(struct h_srv *srv, bool on)
{
	pthread_mutex_lock(&srv->lock);
	srv->defer = on;
	pthread_mutex_unlock(&srv->lock);
}

/**
 * h_srv_expect_usr() - the next header-less user messages must equal @usr
 * @srv: the server
 * @usr: the expected message, NULL to stop checking
 * @len: its length
 * @off: target offset of the requests
 */
static inline void h_srv_expect_usr(struct h_srv *srv, const void *usr,
				    size_t len, uint64_t off)
{
	pthread_mutex_lock(&srv->lock);
	srv->expect_on = usr != NULL;
	srv->expect_len = len;
	if (usr && len)
		memcpy(srv->expect, usr, len);
	srv->default_off = off;
	pthread_mutex_unlock(&srv->lock);
}

/**
 * h_srv_wait_held() - wait until at least @n requests are held
 * @srv: the server
 * @n: number of requests
 * @ms: time limit
 *
 * Return: true when they are.
 */
static inline bool h_srv_wait_held(struct h_srv *srv, unsigned int n,
				   unsigned int ms)
{
	struct timespec ts = t_deadline(ms);
	bool ok;

	pthread_mutex_lock(&srv->lock);
	while (srv->nr_held < n &&
	       pthread_cond_timedwait(&srv->cond, &srv->lock, &ts) != ETIMEDOUT)
		;
	ok = srv->nr_held >= n;
	pthread_mutex_unlock(&srv->lock);
	return ok;
}

/**
 * h_srv_pop() - take the oldest held request, or NULL
 * @srv: the server
 */
static inline struct h_op *h_srv_pop(struct h_srv *srv)
{
	struct h_op *op;

	pthread_mutex_lock(&srv->lock);
	op = srv->held_head;
	if (op) {
		srv->held_head = op->next;
		if (!srv->held_head)
			srv->held_tail = NULL;
		srv->nr_held--;
	}
	pthread_mutex_unlock(&srv->lock);
	return op;
}

/**
 * h_op_complete() - serve (if @err is 0) and answer a held request, free it
 * @op: the request from h_srv_pop()
 * @err: 0 or the negative errno to answer with
 */
static inline void h_op_complete(struct h_op *op, int err)
{
	if (!err)
		h_op_io(op->hs, op->dir, op->data, op->datalen, op->off);
	ibtrs_srv_resp_rdma(op->id, err);
	free(op);
}

/* Answer every held request with @err; return how many there were. */
static inline unsigned int h_srv_release_all(struct h_srv *srv, int err)
{
	struct h_op *op;
	unsigned int n = 0;

	while ((op = h_srv_pop(srv))) {
		h_op_complete(op, err);
		n++;
	}
	return n;
}

/**
 * h_srv_count_ev() - number of logged link events @ev of session @name
 * @srv: the server
 * @ev: the event
 * @name: the session name, NULL for any
 */
static inline unsigned int
h_srv_count_ev(struct h_srv *srv, enum ibtrs_srv_link_ev ev, const char *name)
{
	unsigned int i, n = 0, end;

	pthread_mutex_lock(&srv->lock);
	end = srv->nr_evs < H_EV_LOG ? srv->nr_evs : H_EV_LOG;
	for (i = 0; i < end; i++)
		if (srv->evs[i].ev == ev &&
		    (!name || !strcmp(srv->evs[i].name, name)))
			n++;
	pthread_mutex_unlock(&srv->lock);
	return n;
}

/* Wait until session @name has @n events @ev; true when it has. */
static inline bool h_srv_wait_ev(struct h_srv *srv, enum ibtrs_srv_link_ev ev,
				 const char *name, unsigned int n,
				 unsigned int ms)
{
	double end = t_now() + ms / 1000.0;

	while (h_srv_count_ev(srv, ev, name) < n) {
		if (t_now() > end)
			return false;
		h_sleep_ms(5);
	}
	return true;
}

/**
 * h_srv_find() - copy the target record of the live session @name
 * @srv: the server
 * @name: session name
 * @out: filled (its @next and @mem must not be used later)
 *
 * Return: true if found.
 */
static inline bool h_srv_find(struct h_srv *srv, const char *name,
			      struct h_sess *out)
{
	struct h_sess *hs;
	bool found = false;

	pthread_mutex_lock(&srv->lock);
	for (hs = srv->sessions; hs; hs = hs->next) {
		if (!strcmp(hs->name, name)) {
			out->sess = hs->sess;
			memcpy(out->name, hs->name, sizeof(out->name));
			out->name_rc = hs->name_rc;
			memcpy(out->short_name, hs->short_name,
			       sizeof(out->short_name));
			out->short_rc = hs->short_rc;
			out->qd = hs->qd;
			memcpy(out->identity, hs->identity,
			       sizeof(out->identity));
			out->identity_rc = hs->identity_rc;
			atomic_store(&out->rdma_calls,
				     atomic_load(&hs->rdma_calls));
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&srv->lock);
	return found;
}

/**
 * h_srv_stop() - answer held requests, close the server, free the targets
 * @srv: the server; its counters and event log stay readable
 */
static inline void h_srv_stop(struct h_srv *srv)
{
	struct h_sess *hs;

	h_srv_set_defer(srv, false);
	h_srv_release_all(srv, 0);
	ibtrs_srv_close(srv->ctx);
	srv->ctx = NULL;
	/* Every session got DISCONNECTED; free what a bug may have left. */
	while ((hs = srv->sessions)) {
		fprintf(stderr, "harness: session %s left after close\n",
			hs->name);
		srv->sessions = hs->next;
		munmap(hs->mem, H_TARGET_SIZE);
		free(hs);
	}
	/* @lock stays usable: the test may still count the events. */
	h_cur_srv = NULL;
}

/* ------------------------------------------------------------------ */
/* the client                                                           */

/**
 * h_clt_open_strs() - open a session over the paths @strs
 * @name: session name
 * @port: default port of the paths
 * @strs: path strings for ibtrs_addr_to_sockaddr()
 * @n: number of paths
 * @pdu_sz: pdu size per tag
 * @link_ev: link event callback or NULL
 * @priv: its argument
 *
 * Return: the session, or NULL with errno set.
 */
static inline struct ibtrs_clt *
h_clt_open_strs(const char *name, uint16_t port, const char *const *strs,
		size_t n, size_t pdu_sz, link_clt_ev_fn *link_ev, void *priv)
{
	struct sockaddr_storage src[IBTRS_MAX_PATHS], dst[IBTRS_MAX_PATHS];
	struct ibtrs_addr paths[IBTRS_MAX_PATHS];
	size_t i;

	CHECK(n && n <= IBTRS_MAX_PATHS);
	for (i = 0; i < n; i++) {
		paths[i].src = &src[i];
		paths[i].dst = &dst[i];
		CHECK_EQ(ibtrs_addr_to_sockaddr(strs[i], strlen(strs[i]), port,
						&paths[i]),
			 0);
	}
	return ibtrs_clt_open(priv, link_ev, name, paths, n, port, pdu_sz, 1, 0,
			      0);
}

/**
 * h_clt_open() - open a session over @n loopback paths to @port
 * @name: session name
 * @port: the server port
 * @n: paths: ip:127.0.0.1, ip:127.0.0.2, ...
 * @pdu_sz: pdu size per tag
 * @link_ev: link event callback or NULL
 * @priv: its argument
 *
 * Fails the test when the session does not open.
 */
static inline struct ibtrs_clt *h_clt_open(const char *name, uint16_t port,
					   unsigned int n, size_t pdu_sz,
					   link_clt_ev_fn *link_ev, void *priv)
{
	char bufs[IBTRS_MAX_PATHS][32];
	const char *strs[IBTRS_MAX_PATHS];
	struct ibtrs_clt *sess;
	unsigned int i;

	CHECK(n && n <= IBTRS_MAX_PATHS);
	for (i = 0; i < n; i++) {
		snprintf(bufs[i], sizeof(bufs[i]), "ip:127.0.0.%u", i + 1);
		strs[i] = bufs[i];
	}
	sess = h_clt_open_strs(name, port, strs, n, pdu_sz, link_ev, priv);
	if (!sess) {
		fprintf(stderr, "cannot open session %s: %s\n", name,
			strerror(errno));
		exit(1);
	}
	return sess;
}

/* ------------------------------------------------------------------ */
/* requests                                                             */

/**
 * struct h_wait - confirmations of a group of requests
 * @calls: conf calls
 * @errors: conf calls with an error
 * @err: error of the last call
 */
struct h_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int calls;
	unsigned int errors;
	int err;
};

/**
 * struct h_req - one request of a group, the @priv of h_conf()
 * @w: the group
 * @err: the error conf got
 * @calls: conf calls for this request
 */
struct h_req {
	struct h_wait *w;
	int err;
	unsigned int calls;
};

static inline void h_wait_init(struct h_wait *w)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->lock, NULL);
	t_cond_init(&w->cond);
}

static inline void h_wait_destroy(struct h_wait *w)
{
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
}

/* The ibtrs_conf_fn of h_req. */
static inline void h_conf(void *priv, int err)
{
	struct h_req *r = priv;
	struct h_wait *w = r->w;

	pthread_mutex_lock(&w->lock);
	r->calls++;
	r->err = err;
	w->calls++;
	if (err)
		w->errors++;
	w->err = err;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Wait until @w has @n calls; true when it has. */
static inline bool h_wait_calls(struct h_wait *w, unsigned int n,
				unsigned int ms)
{
	struct timespec ts = t_deadline(ms);
	bool ok;

	pthread_mutex_lock(&w->lock);
	while (w->calls < n &&
	       pthread_cond_timedwait(&w->cond, &w->lock, &ts) != ETIMEDOUT)
		;
	ok = w->calls >= n;
	pthread_mutex_unlock(&w->lock);
	return ok;
}

static inline unsigned int h_wait_get_calls(struct h_wait *w)
{
	unsigned int n;

	pthread_mutex_lock(&w->lock);
	n = w->calls;
	pthread_mutex_unlock(&w->lock);
	return n;
}

static inline size_t h_sg_len(const struct iovec *sg, unsigned int sg_cnt)
{
	size_t len = 0;
	unsigned int i;

	for (i = 0; i < sg_cnt; i++)
		len += sg[i].iov_len;
	return len;
}

/**
 * h_req_sync() - submit one request and wait for its confirmation
 * @sess: the session
 * @tag: a held tag
 * @dir: IBTRS_READ or IBTRS_WRITE
 * @vec: user message pieces
 * @nr: number of @vec
 * @sg: data
 * @sg_cnt: number of @sg
 *
 * Fails the test when the confirmation does not come within
 * H_REQ_TIMEOUT_S or comes more than once.
 *
 * Return: the error of ibtrs_clt_request() if it failed (conf must not
 * run then), otherwise the error conf got.
 */
static inline int h_req_vsync(struct ibtrs_clt *sess, struct ibtrs_tag *tag,
			      int dir, const struct iovec *vec, size_t nr,
			      const struct iovec *sg, unsigned int sg_cnt)
{
	struct h_wait w;
	struct h_req r = { .w = &w };
	int ret;

	h_wait_init(&w);
	ret = ibtrs_clt_request(dir, h_conf, sess, tag, &r, vec, nr,
				h_sg_len(sg, sg_cnt), sg, sg_cnt);
	if (ret) {
		h_sleep_ms(1);
		CHECK_EQ(h_wait_get_calls(&w), 0);
		h_wait_destroy(&w);
		return ret;
	}
	if (!h_wait_calls(&w, 1, H_REQ_TIMEOUT_S * 1000)) {
		fprintf(stderr, "request (dir %d, %zu bytes) not confirmed\n",
			dir, h_sg_len(sg, sg_cnt));
		exit(1);
	}
	pthread_mutex_lock(&w.lock);
	CHECK_EQ(r.calls, 1);
	ret = r.err;
	pthread_mutex_unlock(&w.lock);
	h_wait_destroy(&w);
	return ret;
}

/* h_req_vsync() with the user message in one piece. */
static inline int h_req_sync(struct ibtrs_clt *sess, struct ibtrs_tag *tag,
			     int dir, const void *usr, size_t usrlen,
			     const struct iovec *sg, unsigned int sg_cnt)
{
	struct iovec v = { .iov_base = (void *)usr, .iov_len = usrlen };

	return h_req_vsync(sess, tag, dir, usrlen ? &v : NULL, usrlen ? 1 : 0,
			   sg, sg_cnt);
}

/**
 * h_io() - a synchronous request of the harness protocol on one buffer
 * @sess: the session
 * @tag: a held tag
 * @dir: IBTRS_READ or IBTRS_WRITE
 * @buf: data
 * @len: its length
 * @off: target offset
 * @seed: seed of the user message content
 *
 * Return: as h_req_sync().
 */
static inline int h_io(struct ibtrs_clt *sess, struct ibtrs_tag *tag, int dir,
		       void *buf, size_t len, uint64_t off, uint64_t seed)
{
	unsigned char usr[sizeof(struct h_usr_hdr) + 16];
	struct iovec sg = { .iov_base = buf, .iov_len = len };

	h_usr_build(usr, sizeof(usr), off, seed, 0);
	return h_req_sync(sess, tag, dir, usr, sizeof(usr), &sg, 1);
}

/* Sum of completed operations over every path of @sess. */
static inline uint64_t h_clt_ops(struct ibtrs_clt *sess)
{
	struct ibtrs_attrs attr;
	struct ibtrs_path_stats st;
	uint64_t ops = 0;
	unsigned int i;

	ibtrs_clt_query(sess, &attr);
	for (i = 0; i < attr.path_cnt; i++) {
		memset(&st, 0, sizeof(st));
		st.size = sizeof(st);
		CHECK_EQ(ibtrs_clt_path_stats(sess, i, &st), 0);
		ops += st.rd_ops + st.wr_ops;
	}
	return ops;
}

#endif /* IBTRS_HARNESS_H */
