// SPDX-License-Identifier: MIT
/*
 * fuzz_clt.c - the client's state machine against a fuzzer-driven server:
 * a live client session (ibtrs_clt_open_opts() on the in-process loop
 * backend) connects to a fake server that answers conn_req, AUTH_REQ and
 * INFO_REQ right by default (with the real encoders and auth.c) and broken
 * where the input says, then answers the client's requests and heartbeats
 * or sends what the input says instead.
 *
 * The input (clt_prog.h) is read in order: first by the fake server while
 * the client connects (one byte per answer, more for a broken one), then
 * by the program of steps that runs once the session is open: requests of
 * the client, answers and raw immediates of the server, disconnects.
 * Every wait is bounded: connect timeout of the session and
 * ibtrs_clt_close()'s own bound; the program does not wait in real time.
 *
 * The library's clock is the harness's (ibtrs_set_test_clock()): it moves
 * only in CLT_OP_SYNC, by SYNC_STEP_MS, and the session's tick, whose
 * heartbeats, heartbeat timeouts and failover deadlines follow it, runs
 * right after each step (clt_tick() called on the session's loop): they
 * come where the input says, not where the machine's load puts them, and
 * cost no wait in real time. The timeouts are those of a real session
 * scaled up a hundred times (clt_prog.h), so that the session's own tick,
 * every tenth of its heartbeat timeout in real time, does not come while
 * an input runs. CLT_OP_SYNC runs the loop until nothing moves, then, if
 * a request is neither confirmed nor held by the server or the opcode
 * byte says so, moves the clock by a step, runs the tick and the loop
 * again.
 *
 * One loop, on the fuzzer's thread, runs the fake server and the session:
 * the first of the sessions' shared loops (ibtrs_clt_opts.loop_threads
 * 1), held across inputs (clt_test_hold_loop()) and taken over by this
 * thread (ibtrs_loop_test_adopt()). The program's server actions and the
 * client's requests are direct calls, and a frame of one side reaches the
 * other when the harness runs the loop (pump()), before each step and in
 * CLT_OP_SYNC: no hand-off between threads while the program runs, no
 * loop thread made per input, and the order of events is the input's,
 * not the scheduler's. ibtrs_clt_open_opts() and ibtrs_clt_close(), which
 * wait for the server, run on a helper thread (the opener) while this one
 * runs the loop; the client's connector thread is the library's.
 *
 * ASan's quarantine is kept small (__asan_default_options()): a use after
 * free within an input is still found, and the memory a session takes
 * (receive queues of IBTRS_MAX_QUEUE_DEPTH entries, its registrations) is
 * used again instead of fresh pages faulted in for every input.
 *
 * The session has a key file or not, as the input's first byte says
 * (clt_prog.h); with a key, the fake server checks the client's proof of
 * it and proves it in turn, as a server with keys does. The fake server's
 * X25519 key pair is made once: the client's side stays real.
 *
 * Checked beyond ASan and UBSan: what the client sends decodes (conn_req,
 * AUTH_REQ, INFO_REQ, request immediates and trailers within the
 * geometry it was given), the client proves its key exactly when it has
 * one, an open session has the geometry the server
 * gave, each submitted request is confirmed exactly once with 0 or a
 * negative errno, and close ends every callback.
 */
#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "clt_int.h"
#include "fuzz.h"
#include "ibtrs.h"
#include "keyring.h"
#include "loop.h"
#include "proto.h"
#include "xprt.h"
#include "clt_prog.h"

#define WR_AUTH 1
#define WR_INFO 2
#define WR_IMM 3
#define MAX_CONS 8
#define SRV_RECVS (CLT_QUEUE_DEPTH * 2 + 16)
#define WR_SIG 4	/* a signalled post of the fake server */
#define WAIT_STEP_MS 10 /* a wait in the fake server's loop */
#define SYNC_STEP_MS (CLT_FAILOVER_MS * 2) /* library time per SYNC */

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))
#endif

/**
 * struct fcon - one connection of the fake server
 * @xcon: the connection, NULL when the slot is free
 * @cr: its connection request
 * @ns: the server's nonce of it
 * @auth_req: the receive for AUTH_REQ
 * @info_req: the receive for INFO_REQ (con 0)
 * @auth_rsp: what AUTH_RSP is sent from
 * @info_rsp: what INFO_RSP is sent from
 * @stop: disconnects it, on the server's loop
 * @exact: its conn_rsp went out unbroken: the client's transcript is the
 *         server's
 * @failed: its err() came: no completion is due any more
 */
struct fcon {
	struct ibtrs_xprt_con *xcon;
	struct ibtrs_conn_req cr;
	uint8_t ns[IBTRS_NONCE_LEN];
	struct ibtrs_msg_auth_req auth_req;
	struct ibtrs_msg_info_req info_req;
	struct ibtrs_msg_auth_rsp auth_rsp;
	uint8_t info_rsp[IBTRS_INFO_RSP_MAX_LEN];
	struct ibtrs_work stop;
	bool exact;
	bool failed;
};

/**
 * struct pending - a request of the client the server has not answered
 * @con: the connection it came on
 * @chunk: its chunk id
 * @imm: its immediate
 */
struct pending {
	unsigned int con;
	uint32_t chunk;
	uint32_t imm;
};

static const struct ibtrs_xprt_ops *xops;
static struct ibtrs_loop *sloop;
static struct ibtrs_xprt_listener *listener;
static struct ibtrs_xprt_pd *spd;
static struct ibtrs_xprt_mr *smr;
static char *pool;
static struct sockaddr_storage srv_ss;
static uint16_t srv_port;
static char reply[CLT_MAX_IO];
static unsigned int off_bits; /* of the request immediates */

/* The input, read by the fake server and by the program. */
static pthread_mutex_t in_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fuzz_in input;

/* The fake server's state, on its loop (and under srv_lock for the
 * program's reads). */
static pthread_mutex_t srv_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fcon fcons[MAX_CONS];
static struct pending pend[CLT_MAX_PENDING];
static unsigned int nr_pend;
static bool have_secret;
static bool pool_exact;		   /* INFO_RSP went out unbroken */
static struct ibtrs_conn_rsp told; /* the geometry con 0's conn_rsp gave */
static uint8_t secret[IBTRS_AUTH_KEY_LEN];
static uint64_t incarnation;

/* The key of a keyed session, its file, and the fake server's key pair. */
static bool keyed; /* of this input, set before the session opens */
static uint8_t clt_psk[32];
static char key_path[64];
static uint8_t srv_priv[IBTRS_AUTH_KEY_LEN], srv_pub[IBTRS_AUTH_KEY_LEN];

/* The client side. */
static pthread_mutex_t conf_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibtrs_clt *clt;
static struct ibtrs_work wake; /* queued on sloop: the harness looks again */
static _Atomic uint64_t fake_ns = 1000000000000ull; /* the library's clock */

/**
 * struct opener - the thread that opens and closes the session
 * @lock: guards the rest
 * @cond: a job came
 * @opts: open the session with these, else close it
 * @busy: a job waits or runs
 * @done: it returned
 */
static struct opener {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const struct ibtrs_clt_opts *opts;
	bool busy;
	bool done;
} opener = { .lock = PTHREAD_MUTEX_INITIALIZER,
	     .cond = PTHREAD_COND_INITIALIZER };
static pthread_t opener_thread;
static unsigned int submitted, confirmed; /* under conf_lock */
static char cbuf[CLT_QUEUE_DEPTH][CLT_MAX_IO];

/**
 * __asan_default_options() - ASan's options of this target, see above
 *
 * Return: them.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=32";
}

/**
 * in8() - one byte of the input, from any thread
 *
 * Return: the byte, 0 once it is used up.
 */
static uint8_t in8(void)
{
	uint8_t v;

	pthread_mutex_lock(&in_lock);
	v = fuzz_u8(&input);
	pthread_mutex_unlock(&in_lock);
	return v;
}

/**
 * in32() - a little-endian 32-bit value of the input
 *
 * Return: the value.
 */
static uint32_t in32(void)
{
	uint32_t v;

	pthread_mutex_lock(&in_lock);
	v = fuzz_u32(&input);
	pthread_mutex_unlock(&in_lock);
	return v;
}

/**
 * corrupt() - break a message where the input says: with @how & 0x08,
 * set the byte at (next byte % @len) to the byte after; with @how & 0x10,
 * once more
 * @buf: the message
 * @len: its length
 * @how: the answer's byte
 */
static void corrupt(void *buf, size_t len, uint8_t how)
{
	uint8_t *b = buf, off;

	if (how & 0x08) {
		off = in8();
		b[off % len] = in8();
	}
	if (how & 0x10) {
		off = in8();
		b[off % len] = in8();
	}
}

/**
 * con_of() - the slot of a server connection
 * @xcon: the connection
 *
 * Return: its slot.
 */
static struct fcon *con_of(struct ibtrs_xprt_con *xcon)
{
	return xcon->ctx;
}

/**
 * srv_send() - a SEND of the fake server, signalled
 * @c: the connection
 * @iov: what it sends
 */
static void srv_send(struct fcon *c, const struct iovec *iov)
{
	xops->post_send(c->xcon, iov, 1, WR_SIG, IBTRS_XPRT_SIGNALED);
}

/**
 * srv_write() - a WRITE (with @imm where @flags has IBTRS_XPRT_IMM) of the
 * fake server, signalled
 * @c: the connection
 * @iov: its data, NULL for none
 * @raddr: where it goes
 * @rkey: the key of that region
 * @imm: the immediate
 * @flags: IBTRS_XPRT_IMM or 0
 */
static void srv_write(struct fcon *c, const struct iovec *iov, uint64_t raddr,
		      uint32_t rkey, uint32_t imm, unsigned int flags)
{
	xops->post_write(c->xcon, iov, iov ? 1 : 0, raddr, rkey, imm, WR_SIG,
			 flags | IBTRS_XPRT_SIGNALED);
}

/**
 * answer_auth() - AUTH_RSP to an AUTH_REQ, right or broken
 * @c: the connection
 * @len: bytes of AUTH_REQ
 */
static void answer_auth(struct fcon *c, uint32_t len)
{
	struct ibtrs_auth_hs ah = {
		.version = c->cr.version,
		.cid = c->cr.cid,
		.cid_num = c->cr.cid_num,
		.flags = c->cr.first_conn ? IBTRS_CONN_FIRST : 0,
		.identity = "",
	};
	uint8_t priv[IBTRS_AUTH_KEY_LEN], pub[IBTRS_AUTH_KEY_LEN] = { 0 };
	uint8_t shared[IBTRS_AUTH_KEY_LEN];
	struct ibtrs_auth_rsp rsp = { .flags = IBTRS_RSP_INCARNATION };
	struct iovec iov = { .iov_base = &c->auth_rsp,
			     .iov_len = sizeof(c->auth_rsp) };
	struct ibtrs_auth_req ar;
	uint8_t how = in8();
	bool create;

	FUZZ_CHECK(!ibtrs_auth_req_decode(&c->auth_req, len, &ar));
	/* The client proves its key exactly when it has a key file. */
	FUZZ_CHECK(!(ar.flags & IBTRS_AUTH_PSK) == !keyed);
	FUZZ_CHECK(!(ar.flags & IBTRS_AUTH_JOIN) == !have_secret);
	memcpy(ah.nc, c->cr.nonce, IBTRS_NONCE_LEN);
	memcpy(ah.ns, c->ns, IBTRS_NONCE_LEN);
	memcpy(ah.sess_uuid, c->cr.sess_uuid, IBTRS_UUID_LEN);
	memcpy(ah.path_uuid, c->cr.path_uuid, IBTRS_UUID_LEN);
	memcpy(ah.pub_c, ar.pub, IBTRS_AUTH_KEY_LEN);
	if (keyed) {
		uint8_t proof[IBTRS_AUTH_KEY_LEN];

		FUZZ_CHECK(ar.id_len == strlen(CLT_KEY_ID) &&
			   !memcmp(ar.identity, CLT_KEY_ID, ar.id_len));
		ah.identity = CLT_KEY_ID;
		ibtrs_auth_proof_psk(proof, clt_psk, sizeof(clt_psk), &ah);
		/* A broken conn_rsp may have changed the nonce it proves. */
		FUZZ_CHECK(!c->exact || ibtrs_auth_equal(proof, ar.proof_psk));
	}
	if ((how & 7) == 7) {
		rsp = (struct ibtrs_auth_rsp){ .err = in8() };
	} else {
		/* A new session for a client without its secret, unless
		 * the input says the server lies about it. */
		create = !have_secret != !!(how & 0x20);
		if (create) {
			memcpy(priv, srv_priv, sizeof(priv));
			memcpy(pub, srv_pub, sizeof(pub));
			if (ibtrs_auth_x25519(shared, priv, ar.pub))
				memset(shared, 0, sizeof(shared));
			ibtrs_auth_secret(secret, keyed ? clt_psk : NULL,
					  keyed ? sizeof(clt_psk) : 0, shared,
					  &ah, pub);
			have_secret = true;
			incarnation = 0x1000 + in8();
			rsp.flags |= IBTRS_RSP_NEW_SESS;
		}
		rsp.incarnation = incarnation ? incarnation : 1;
		memcpy(rsp.pub, pub, sizeof(pub));
		/* With keys the server proves the key, else the secret. */
		ibtrs_auth_proof_srv(rsp.proof, keyed ? clt_psk : secret,
				     keyed ? sizeof(clt_psk) : sizeof(secret),
				     &ah, create ? pub : NULL, rsp.flags,
				     rsp.incarnation);
	}
	ibtrs_auth_rsp_encode(&c->auth_rsp, &rsp);
	corrupt(&c->auth_rsp, sizeof(c->auth_rsp), how);
	if (how & 0x40)
		iov.iov_len = in8() % sizeof(c->auth_rsp);
	srv_send(c, &iov);
}

/**
 * answer_info() - INFO_RSP to an INFO_REQ: the pool, in one or two
 * descriptors, right or broken
 * @c: the connection
 * @len: bytes of INFO_REQ
 */
static void answer_info(struct fcon *c, uint32_t len)
{
	uint32_t total = CLT_QUEUE_DEPTH * CLT_CHUNK;
	struct ibtrs_desc d[2] = {
		{ smr->addr, smr->key, total },
		{ 0, 0, 0 },
	};
	char name[IBTRS_SESSNAME_LEN];
	struct iovec iov = { .iov_base = c->info_rsp };
	uint8_t how = in8();

	FUZZ_CHECK(!ibtrs_info_req_decode(&c->info_req, len, name));
	FUZZ_CHECK(!strcmp(name, CLT_SESSNAME));
	if (how & 1) {
		d[0].len = CLT_CHUNK;
		d[1] = (struct ibtrs_desc){ smr->addr + CLT_CHUNK, smr->key,
					    total - CLT_CHUNK };
	}
	iov.iov_len = ibtrs_info_rsp_encode(c->info_rsp, d, how & 1 ? 2 : 1);
	pool_exact = !(how & 0x58);
	corrupt(c->info_rsp, iov.iov_len, how);
	if (how & 0x40)
		iov.iov_len = in8() % (iov.iov_len + 1);
	srv_send(c, &iov);
}

/**
 * take_request() - an IO_REQ immediate: check it, keep it for the program
 * @c: the connection
 * @imm: the immediate
 */
static void take_request(struct fcon *c, uint32_t imm)
{
	struct ibtrs_req_trailer t;
	uint32_t chunk, off;

	ibtrs_imm_req_unpack(imm, off_bits, &chunk, &off);
	FUZZ_CHECK(chunk < CLT_QUEUE_DEPTH);
	FUZZ_CHECK(off + sizeof(struct ibtrs_trailer) <= CLT_CHUNK);
	/* Where INFO_RSP told the truth, the trailer is where it belongs. */
	if (pool_exact) {
		FUZZ_CHECK(!ibtrs_trailer_decode(pool + chunk * CLT_CHUNK + off,
						 &t));
		FUZZ_CHECK(t.usr_len <= off && off - t.usr_len <= CLT_MAX_IO);
	}
	pthread_mutex_lock(&srv_lock);
	if (nr_pend < CLT_MAX_PENDING)
		pend[nr_pend++] = (struct pending){
			.con = (unsigned int)(c - fcons),
			.chunk = chunk,
			.imm = imm,
		};
	pthread_mutex_unlock(&srv_lock);
}

/**
 * stop_work() - disconnect a server connection, as work on its loop
 * @w: the connection's stop work
 */
static void stop_work(struct ibtrs_work *w)
{
	struct fcon *c = container_of(w, struct fcon, stop);

	if (c->xcon)
		xops->disconnect(c->xcon);
}

/**
 * srv_wc() - a completion of a server connection
 * @xcon: the connection
 * @wc: the completion
 */
static void srv_wc(struct ibtrs_xprt_con *xcon, const struct ibtrs_wc *wc)
{
	struct fcon *c = con_of(xcon);
	unsigned int i;

	if (wc->status)
		return;
	switch (wc->opcode) {
	case IBTRS_WC_RECV:
		if (wc->wr_id == WR_AUTH)
			answer_auth(c, wc->byte_len);
		else if (wc->wr_id == WR_INFO)
			answer_info(c, wc->byte_len);
		return;
	case IBTRS_WC_RECV_IMM:
		break;
	default:
		return;
	}
	xops->post_recv(xcon, NULL, 0, WR_IMM);
	switch (ibtrs_imm_type(wc->imm)) {
	case IBTRS_IMM_IO_REQ:
		take_request(c, wc->imm);
		break;
	case IBTRS_IMM_HB:
		srv_write(c, NULL, 0, 0, ibtrs_imm_hb(IBTRS_IMM_HB_ACK),
			  IBTRS_XPRT_IMM);
		break;
	case IBTRS_IMM_HB_ACK:
		break;
	case IBTRS_IMM_CLOSE:
		/* The session ends: the server closes its paths. */
		for (i = 0; i < MAX_CONS; i++)
			if (fcons[i].xcon)
				ibtrs_loop_queue(sloop, &fcons[i].stop);
		break;
	default:
		FUZZ_CHECK(!"unknown immediate from the client");
	}
}

/**
 * srv_err() - a server connection failed
 * @xcon: the connection
 * @err: why
 */
static void srv_err(struct ibtrs_xprt_con *xcon, int err)
{
	FUZZ_CHECK(err < 0);
	con_of(xcon)->failed = true;
}

static const struct ibtrs_xprt_handler srv_handler = {
	.wc = srv_wc,
	.err = srv_err,
};

/**
 * on_connreq() - a connection request: accept it (its conn_rsp right or
 * broken) or reject it, as the input says
 * @arg: unused
 * @req: the request
 * @info: its private data
 */
static void on_connreq(void *arg, struct ibtrs_xprt_connreq *req,
		       const struct ibtrs_connreq_info *info)
{
	struct ibtrs_xprt_con_attr attr = {
		.max_send_wr = SRV_RECVS,
		.max_recv_wr = SRV_RECVS + 2,
		.max_send_sge = 2,
	};
	struct ibtrs_conn_rsp r = {
		.version = IBTRS_PROTO_VER,
		.queue_depth = CLT_QUEUE_DEPTH,
		.max_io_size = CLT_MAX_IO,
		.chunk_size = CLT_CHUNK,
		.max_usr_msg = IBTRS_MAX_USR_MSG,
		.flags = IBTRS_RSP_AUTH,
	};
	struct ibtrs_msg_conn_rsp m;
	struct ibtrs_conn_req cr;
	struct fcon *c = NULL;
	uint8_t how = in8();
	unsigned int i;

	(void)arg;
	FUZZ_CHECK(!ibtrs_conn_req_decode(info->priv, sizeof(info->priv), &cr));
	FUZZ_CHECK(cr.caps & IBTRS_CAP_AUTH);
	FUZZ_CHECK(cr.cid < cr.cid_num && cr.first_conn == !cr.cid);
	for (i = 0; i < MAX_CONS && !c; i++)
		if (!fcons[i].xcon)
			c = &fcons[i];
	if ((how & 7) == 7 || !c) {
		r = (struct ibtrs_conn_rsp){ .version = IBTRS_PROTO_VER,
					     .err = in8() };
		ibtrs_conn_rsp_encode(&m, &r);
		corrupt(&m, sizeof(m), how);
		xops->reject(req, &m);
		return;
	}
	FUZZ_CHECK(!ibtrs_random(r.nonce, sizeof(r.nonce)));
	ibtrs_conn_rsp_encode(&m, &r);
	corrupt(&m, sizeof(m), how);
	/* A broken conn_rsp may still be a valid one, of another geometry. */
	if (!cr.cid && ibtrs_conn_rsp_decode(&m, sizeof(m), &told))
		told = r;
	if (xops->accept(req, spd, &attr, &m, &c->xcon)) {
		c->xcon = NULL;
		return;
	}
	c->cr = cr;
	memcpy(c->ns, r.nonce, sizeof(c->ns));
	c->exact = !(how & 0x18);
	c->failed = false;
	c->stop.fn = stop_work;
	c->xcon->handler = &srv_handler;
	c->xcon->ctx = c;
	FUZZ_CHECK(!xops->post_recv(c->xcon, &c->auth_req, sizeof(c->auth_req),
				    WR_AUTH));
	if (!cr.cid)
		FUZZ_CHECK(!xops->post_recv(c->xcon, &c->info_req,
					    sizeof(c->info_req), WR_INFO));
	for (i = 0; i < SRV_RECVS; i++)
		FUZZ_CHECK(!xops->post_recv(c->xcon, NULL, 0, WR_IMM));
	FUZZ_CHECK(!xops->start(c->xcon, sloop));
}

/**
 * conf() - a request of the client is confirmed
 * @priv: its tag
 * @err: 0 or a negative errno
 */
static void conf(void *priv, int err)
{
	FUZZ_CHECK(err <= 0 && err >= -IBTRS_IMM_MAX_ERRNO);
	ibtrs_clt_put_tag(clt, priv);
	pthread_mutex_lock(&conf_lock);
	confirmed++;
	FUZZ_CHECK(confirmed <= submitted);
	pthread_mutex_unlock(&conf_lock);
	ibtrs_loop_queue(sloop, &wake); /* the harness may wait for it */
}

/**
 * op_req() - CLT_OP_REQ: the client sends a request
 */
static void op_req(void)
{
	uint8_t a = in8();
	uint32_t len = in32() % (CLT_MAX_IO + 1);
	uint8_t usr[64];
	struct iovec vec = { .iov_base = usr, .iov_len = (a >> 2) % 64 };
	struct iovec sg;
	struct ibtrs_tag *tag;
	int dir = a & 1 ? IBTRS_READ : IBTRS_WRITE;

	tag = ibtrs_clt_get_tag(clt, a & 2 ? IBTRS_USR_CON : IBTRS_IO_CON,
				IBTRS_TAG_NOWAIT);
	if (!tag)
		return;
	memset(usr, a, sizeof(usr));
	sg.iov_base = cbuf[0];
	sg.iov_len = len;
	pthread_mutex_lock(&conf_lock);
	submitted++;
	pthread_mutex_unlock(&conf_lock);
	if (ibtrs_clt_request(dir, conf, clt, tag, tag, &vec, 1, len, &sg, 1)) {
		pthread_mutex_lock(&conf_lock);
		submitted--;
		pthread_mutex_unlock(&conf_lock);
		ibtrs_clt_put_tag(clt, tag);
	}
}

/**
 * do_answer() - the server's answer to its oldest held request, on its
 * loop: a READ's data into the client's buffer first, then the immediate
 * (right, with an error, of another chunk, or raw)
 * @arg: the answer byte and raw immediate, packed by op_answer()
 */
static void do_answer(void *arg)
{
	uint64_t how = (uint64_t)(uintptr_t)arg;
	uint8_t a = (uint8_t)how;
	uint32_t raw = (uint32_t)(how >> 8), imm;
	struct ibtrs_req_trailer t;
	struct pending p;
	struct fcon *c;
	uint32_t chunk, off;
	struct iovec iov;

	pthread_mutex_lock(&srv_lock);
	if (!nr_pend) {
		pthread_mutex_unlock(&srv_lock);
		return;
	}
	p = pend[0];
	memmove(pend, pend + 1, --nr_pend * sizeof(pend[0]));
	pthread_mutex_unlock(&srv_lock);
	c = &fcons[p.con];
	if (!c->xcon)
		return;
	ibtrs_imm_req_unpack(p.imm, off_bits, &chunk, &off);
	if (!ibtrs_trailer_decode(pool + chunk * CLT_CHUNK + off, &t) &&
	    t.dir == IBTRS_READ && !(a & 4)) {
		iov.iov_base = reply;
		iov.iov_len = t.desc.len <= sizeof(reply) ? t.desc.len : 0;
		srv_write(c, &iov, t.desc.addr, t.desc.key, 0, 0);
	}
	switch (a & 3) {
	case 0:
		imm = ibtrs_imm_rsp(p.chunk, 0);
		break;
	case 1:
		imm = ibtrs_imm_rsp(p.chunk, -(int)(raw % 4096));
		break;
	case 2:
		imm = ibtrs_imm_rsp(raw % (CLT_QUEUE_DEPTH + 2), 0);
		break;
	default:
		imm = raw;
		break;
	}
	srv_write(c, NULL, 0, 0, imm, IBTRS_XPRT_IMM);
}

/**
 * do_imm() - an immediate of the server's choice, on its loop
 * @arg: connection slot and immediate, packed by op_imm()
 */
static void do_imm(void *arg)
{
	uint64_t v = (uint64_t)(uintptr_t)arg;
	struct fcon *c = &fcons[(v >> 32) % MAX_CONS];

	if (c->xcon)
		srv_write(c, NULL, 0, 0, (uint32_t)v, IBTRS_XPRT_IMM);
}

/**
 * do_send() - a SEND the client does not expect, on the server's loop
 * @arg: connection slot and length
 */
static void do_send(void *arg)
{
	uint64_t v = (uint64_t)(uintptr_t)arg;
	struct fcon *c = &fcons[(v >> 32) % MAX_CONS];
	struct iovec iov = { .iov_base = reply, .iov_len = (uint32_t)v };

	if (c->xcon)
		srv_send(c, &iov);
}

/**
 * do_disc() - the server drops a connection, on its loop
 * @arg: its slot
 */
static void do_disc(void *arg)
{
	struct fcon *c = &fcons[(uintptr_t)arg % MAX_CONS];

	if (c->xcon)
		xops->disconnect(c->xcon);
}

/**
 * pending_cnt() - requests the server holds
 *
 * Return: their count.
 */
static unsigned int pending_cnt(void)
{
	unsigned int n;

	pthread_mutex_lock(&srv_lock);
	n = nr_pend;
	pthread_mutex_unlock(&srv_lock);
	return n;
}

/**
 * wake_fn() - nothing: it woke the harness in the fake server's loop
 * @w: unused
 */
static void wake_fn(struct ibtrs_work *w)
{
	(void)w;
}

/**
 * pump() - run the fake server's loop until it has nothing left to do
 */
static void pump(void)
{
	while (ibtrs_loop_test_run(sloop, 0))
		;
}

/**
 * fake_clock() - the library's clock, moved by CLT_OP_SYNC only
 *
 * Return: nanoseconds.
 */
static uint64_t fake_clock(void)
{
	return atomic_load(&fake_ns);
}

/**
 * await() - CLT_OP_SYNC: run the fake server and the session until nothing
 * moves; then, unless every submitted request is confirmed or held by the
 * server and @step is false, move the library's clock by a step, run the
 * session's tick and again until nothing moves. Both run on this thread:
 * nothing moves any more once the loop has nothing left to do, and the
 * request held or confirmed, a time out or a heartbeat come where the
 * input says.
 * @step: the time passes in any case
 */
static void await(bool step)
{
	bool done;

	pump();
	pthread_mutex_lock(&conf_lock);
	done = confirmed + pending_cnt() >= submitted;
	pthread_mutex_unlock(&conf_lock);
	if (done && !step)
		return;
	/* Only time can move the client now. */
	atomic_fetch_add(&fake_ns, SYNC_STEP_MS * 1000000ull);
	ibtrs_loop_call(clt->loop, clt_tick, clt);
	pump();
}

/**
 * opener_main() - the opener: open or close the session when asked
 * @arg: unused
 *
 * Return: never.
 */
static void *opener_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&opener.lock);
	for (;;) {
		const struct ibtrs_clt_opts *o;

		while (!opener.busy || opener.done)
			pthread_cond_wait(&opener.cond, &opener.lock);
		o = opener.opts;
		pthread_mutex_unlock(&opener.lock);
		if (o)
			clt = ibtrs_clt_open_opts(o);
		else
			ibtrs_clt_close(clt);
		pthread_mutex_lock(&opener.lock);
		opener.done = true;
		ibtrs_loop_queue(sloop, &wake);
	}
	return NULL;
}

/**
 * open_close() - open the session with @o (NULL: close it) on the opener,
 * the fake server run here until it returned
 * @o: the options, or NULL
 */
static void open_close(const struct ibtrs_clt_opts *o)
{
	bool done;

	pthread_mutex_lock(&opener.lock);
	opener.opts = o;
	opener.busy = true;
	opener.done = false;
	pthread_cond_signal(&opener.cond);
	pthread_mutex_unlock(&opener.lock);
	for (;;) {
		pump();
		pthread_mutex_lock(&opener.lock);
		done = opener.done;
		pthread_mutex_unlock(&opener.lock);
		if (done)
			break;
		ibtrs_loop_test_run(sloop, WAIT_STEP_MS);
	}
	pthread_mutex_lock(&opener.lock);
	opener.busy = false;
	pthread_mutex_unlock(&opener.lock);
}

/**
 * free_cons() - end the fake server's connections, on its loop
 * @arg: unused
 */
static void free_cons(void *arg)
{
	unsigned int i;

	(void)arg;
	for (i = 0; i < MAX_CONS; i++) {
		if (!fcons[i].xcon)
			continue;
		ibtrs_loop_cancel(sloop, &fcons[i].stop);
		xops->disconnect(fcons[i].xcon);
		xops->destroy(fcons[i].xcon);
		fcons[i].xcon = NULL;
	}
	nr_pend = 0;
	have_secret = false;
	pool_exact = false;
	incarnation = 0;
}

/**
 * write_key() - the keyed session's key file: a memfd of mode 0600
 */
static void write_key(void)
{
	char buf[128];
	unsigned int j;
	size_t n;
	int fd;

	fd = memfd_create("fuzz-clt-key", MFD_CLOEXEC);
	FUZZ_CHECK(fd >= 0 && !fchmod(fd, 0600));
	n = (size_t)snprintf(buf, sizeof(buf), "%s:", CLT_KEY_ID);
	for (j = 0; j < sizeof(clt_psk); j++) {
		clt_psk[j] = (uint8_t)(0x40 + j);
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%02x",
				      clt_psk[j]);
	}
	buf[n++] = '\n';
	FUZZ_CHECK(write(fd, buf, n) == (ssize_t)n);
	snprintf(key_path, sizeof(key_path), "/proc/self/fd/%d", fd);
}

/**
 * LLVMFuzzerInitialize() - the fake server: its loop, listener, pool and
 * key pair, and the key file
 * @argc: unused
 * @argv: unused
 *
 * Return: 0.
 */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&srv_ss;
	struct sockaddr_storage bound;
	struct iovec iov;

	(void)argc;
	(void)argv;

	xops = ibtrs_xprt_find("loop");
	FUZZ_CHECK(xops);
	/* The fake server's loop is the one the sessions share. */
	FUZZ_CHECK(!clt_test_hold_loop(true, &sloop));
	FUZZ_CHECK(!xops->pd_alloc(&spd, 1));
	FUZZ_CHECK(!xops->mr_alloc(spd, 1, &smr));
	pool = calloc(CLT_QUEUE_DEPTH, CLT_CHUNK);
	FUZZ_CHECK(pool);
	iov.iov_base = pool;
	iov.iov_len = CLT_QUEUE_DEPTH * CLT_CHUNK;
	FUZZ_CHECK(!xops->mr_map(smr, &iov, 1));
	memset(reply, 0xcd, sizeof(reply));
	FUZZ_CHECK(ibtrs_imm_off_bits(CLT_QUEUE_DEPTH, CLT_CHUNK) >= 0);
	off_bits = (unsigned int)ibtrs_imm_off_bits(CLT_QUEUE_DEPTH, CLT_CHUNK);
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	FUZZ_CHECK(!xops->listen(sloop, (struct sockaddr *)&srv_ss, NULL,
				 on_connreq, NULL, &listener));
	FUZZ_CHECK(!xops->listener_addr(listener, &bound));
	srv_port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
	sin->sin_port = htons(srv_port);
	FUZZ_CHECK(!ibtrs_auth_keypair(srv_priv, srv_pub));
	write_key();
	ibtrs_set_test_clock(fake_clock);
	ibtrs_loop_test_adopt(sloop);
	wake.fn = wake_fn;
	FUZZ_CHECK(!pthread_create(&opener_thread, NULL, opener_main, NULL));
	return 0;
}

/**
 * LLVMFuzzerTestOneInput() - one client session against the fake server
 * @data: the answers and the program, see clt_prog.h
 * @size: its length
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibtrs_addr path = { .src = NULL, .dst = &srv_ss };
	struct ibtrs_clt_opts o;
	struct ibtrs_attrs attrs;
	unsigned int step;
	uint64_t v;
	uint8_t op;
	int ret;

	pthread_mutex_lock(&in_lock);
	input = (struct fuzz_in){ data, size };
	pthread_mutex_unlock(&in_lock);
	submitted = confirmed = 0;
	keyed = size && (data[0] & CLT_KEYED);

	ibtrs_clt_opts_init(&o, sizeof(o));
	o.sessname = CLT_SESSNAME;
	o.paths = &path;
	o.path_cnt = 1;
	o.port = srv_port;
	o.backend = "loop";
	o.max_reconnect_attempts = 0;
	o.connect_timeout_ms = CLT_CONNECT_MS;
	o.hb_timeout_ms = CLT_HB_TIMEOUT_MS;
	o.failover_timeout_ms = CLT_FAILOVER_MS;
	o.io_cons = 1;
	o.loop_threads = 1;
	o.no_control = true;
	o.tls = IBTRS_TLS_OFF;
	o.tls_psk_file = keyed ? key_path : NULL;
	open_close(&o);
	if (clt) {
		/* -ECOMM: the server dropped the path already. */
		ret = ibtrs_clt_query(clt, &attrs);
		FUZZ_CHECK(!ret || ret == -ECOMM);
		FUZZ_CHECK(attrs.queue_depth == told.queue_depth &&
			   attrs.max_io_size == told.max_io_size);
		for (step = 0; step < CLT_MAX_STEPS; step++) {
			pthread_mutex_lock(&in_lock);
			if (!input.n) {
				pthread_mutex_unlock(&in_lock);
				break;
			}
			pthread_mutex_unlock(&in_lock);
			pump(); /* what the client sent so far */
			op = in8();
			switch (op % CLT_OP_NR) {
			case CLT_OP_REQ:
				op_req();
				break;
			case CLT_OP_ANSWER:
				v = in8();
				v |= (uint64_t)in32() << 8;
				do_answer((void *)(uintptr_t)v);
				break;
			case CLT_OP_IMM:
				v = (uint64_t)in8() << 32;
				v |= in32();
				do_imm((void *)(uintptr_t)v);
				break;
			case CLT_OP_SEND:
				v = (uint64_t)in8() << 32;
				v |= in8() * 4u;
				do_send((void *)(uintptr_t)v);
				break;
			case CLT_OP_DISC:
				do_disc((void *)(uintptr_t)in8());
				break;
			default:
				await(op / CLT_OP_NR & 1);
				break;
			}
		}
		/* Answer what is left; close fails what is still out. */
		pump();
		while (pending_cnt())
			do_answer(NULL);
		open_close(NULL);
		pthread_mutex_lock(&conf_lock);
		FUZZ_CHECK(confirmed == submitted);
		pthread_mutex_unlock(&conf_lock);
		clt = NULL;
	}
	free_cons(NULL); /* on the fake server's loop: this thread */
	return 0;
}
