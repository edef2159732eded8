// SPDX-License-Identifier: MIT
/*
 * tcp_hdrs.c - TCP_OP_HDRS runs of the tcp backend, against its ops table.
 *
 * A sender with several frames at once may put their headers first, in a
 * TCP_OP_HDRS frame, and then their payloads only; the receiver reads
 * large payloads of described WRITEs straight into their regions, ahead of
 * the frames before them.
 *
 * A server connection of the backend on 127.0.0.1 has two regions: one
 * mapped as a single iovec, with guard bytes after it, one as 48 iovecs
 * of odd sizes (from 1 byte on), each allocated apart with guard bytes
 * around it, so that payloads span iovecs. Its receives are re-posted as
 * they complete; every receive completion is logged. The client is a raw
 * socket (tests/lib/rawtcp.h) that registers nothing. It sends phases of
 * WRITE, WRITE_IMM and SEND frames with payloads of 0 to 64 KiB, in runs
 * of 2 to 64 frames and as plain frames, each phase ending with a plain
 * WRITE_IMM as a fence, and cuts each phase's byte stream into pieces of
 * 1, 7, 23, 25, 4095 or 4097 bytes, of random sizes, or at every frame and
 * header boundary and one byte either side, with or without pauses, so
 * that the server's reads end at every kind of place of a run. After each
 * phase both regions must equal a model of the writes byte for byte (the
 * bytes between and around the targets untouched, the guards intact),
 * and the log must hold exactly the completions of the phase, in frame
 * order: a WRITE_IMM consumed the next receive with its imm and byte_len,
 * leaving its buffer untouched, a SEND filled the next receive with its
 * bytes and nothing after them.
 *
 * Then the other direction: asked by a WRITE_IMM, the server's handler
 * posts bursts of 1, 2, 12, 100 and 96 large frames, which leave together
 * at the end of the receive batch (early flushes for the larger ones; the
 * large burst fills the socket, so that the sends resume partly sent).
 * The client must read them all back, in order, with the right headers and
 * payloads, one TCP_OP_HDRS run for the two, at least one for the others
 * and none for the single frame.
 *
 * First, rawtcp.h's own run parsing is checked on a socket pair.
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "loop.h"
#include "rawtcp.h"
#include "tcp/tcp_proto.h"
#include "test.h"
#include "xprt.h"
#include "xsrv.h"

#define WAIT_MS 5000
#define WATCHDOG_S 60

#define MR1_LEN (2u << 20)	 /* the region of one iovec */
#define MR1_GUARD 4096		 /* bytes after it that stay as they were */
#define MR2_LEN (1u << 20)	 /* the region of many iovecs */
#define NR_PIECES 48		 /* its iovecs */
#define PIECE_GUARD 64		 /* bytes either side of each */
#define NR_RECVS 32		 /* receives posted */
#define MAX_SEND 65536		 /* largest SEND payload */
#define RBUF_LEN (MAX_SEND + 64) /* receive buffers */
#define RBUF_FILL 0xa5		 /* what a receive buffer holds before use */
#define STREAM_MAX (4u << 20)	 /* bytes of one phase */
#define MAX_FRAMES 4096		 /* frames of one phase */
#define LOG_MAX 4096		 /* receive completions of one phase */
#define CMD_IMM 0x80000000u	 /* imm of a WRITE_IMM asking for a burst */
#define FENCE_IMM 0x40000000u	 /* imm of the WRITE_IMM ending a phase */
#define PATTERN_LEN (1u << 20)	 /* source of the server's payloads */

static const struct ibtrs_xprt_ops *ops;

static const struct ibtrs_xprt_con_attr con_attr = {
	.max_send_wr = 256,
	.max_recv_wr = NR_RECVS,
	.max_send_sge = 2,
};

static uint64_t fnv(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* ------------------------------------------------------------------ */
/* the server                                                           */

/* A receive completion as the handler saw it. */
struct rec {
	enum ibtrs_wc_opcode opcode;
	uint64_t wr_id;
	uint32_t imm, byte_len;
	uint64_t hash; /* IBTRS_WC_RECV: of the bytes received */
	bool clean;    /* the rest of the buffer (all, for an imm) untouched */
};

/* Bursts of frames the server posts when asked. */
enum { B_ONE, B_TWO, B_MIX, B_MANY, B_BIG, NR_BURSTS };
static const char *const burst_names[] = { "one frame", "two frames",
					   "12 mixed frames",
					   "100 small frames",
					   "96 large frames" };
static const unsigned int burst_len[] = { 1, 2, 12, 100, 96 };

static unsigned char pattern[PATTERN_LEN + MAX_SEND];

static struct {
	struct xsrv x; /* loop, listener, connection, errors, receive buffers */
	struct ibtrs_xprt_mr *mr[2];
	unsigned char *mr1;		 /* MR1_LEN + MR1_GUARD */
	unsigned char *piece[NR_PIECES]; /* PIECE_GUARD each side */
	size_t piece_len[NR_PIECES];

	/* under x.lock */
	char bad[256]; /* the first unexpected thing the handler saw */
	struct rec log[LOG_MAX];
	unsigned int nlog;
	unsigned int sends;	  /* send completions */
	unsigned int bursts_done; /* bursts posted */

	/* loop thread */
	uint64_t next_wr; /* wr_id of the receive due next */
} srv;

static unsigned char rbuf_clean[RBUF_LEN];

/* Wait on srv.x.cond, srv.x.lock held, until @pred or @ms passed. */
#define SRV_WAIT(pred, ms) XSRV_WAIT(&srv.x, pred, ms)

static void srv_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Record the first unexpected thing the handler saw. */
static void srv_bad(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&srv.x.lock);
	if (!srv.bad[0]) {
		va_start(ap, fmt);
		vsnprintf(srv.bad, sizeof(srv.bad), fmt, ap);
		va_end(ap);
	}
	pthread_cond_broadcast(&srv.x.cond);
	pthread_mutex_unlock(&srv.x.lock);
}

/*
 * Frame @i of burst @kind: its header (host order) into @f, its payload
 * at pattern + *@pat.
 */
static void burst_frame(unsigned int kind, unsigned int i, struct tcp_frame *f,
			size_t *pat)
{
	static const uint8_t op3[] = { TCP_OP_SEND, TCP_OP_WRITE,
				       TCP_OP_WRITE_IMM };
	static const uint32_t mix[] = { 0,     100, 1023, 1024, 4096, 4136,
					65536, 7,   0,	  300,	2,    1 };

	memset(f, 0, sizeof(*f));
	f->op = op3[(i + kind) % 3];
	switch (kind) {
	case B_ONE:
		f->op = TCP_OP_SEND;
		f->len = 100;
		break;
	case B_TWO:
		f->op = i ? TCP_OP_WRITE_IMM : TCP_OP_SEND;
		f->len = i ? 0 : 100;
		break;
	case B_MIX:
		f->len = mix[i];
		break;
	case B_MANY:
		f->len = 8 + (i * 37) % 200;
		break;
	default:
		f->len = i % 3 ? 65536 : 100 + i;
		break;
	}
	if (f->op == TCP_OP_WRITE_IMM)
		f->imm = 0x5000 + kind * 1000 + i;
	if (f->op != TCP_OP_SEND) {
		f->rkey = 0x10000 * (kind + 1) + i;
		f->raddr = ((uint64_t)i << 20) | kind;
	}
	*pat = (i * 4099 + kind * 131) % PATTERN_LEN;
}

/* Post burst @kind, from the handler: it leaves when the batch ends. */
static void srv_burst(struct ibtrs_xprt_con *con, unsigned int kind)
{
	unsigned int i, cnt;
	struct iovec iov[2];
	struct tcp_frame f;
	size_t pat;
	int ret;

	for (i = 0; i < burst_len[kind]; i++) {
		burst_frame(kind, i, &f, &pat);
		/* In two iovecs when it has two bytes or more. */
		iov[0].iov_base = pattern + pat;
		iov[0].iov_len = f.len / 3 ? f.len / 3 : f.len;
		iov[1].iov_base = pattern + pat + iov[0].iov_len;
		iov[1].iov_len = f.len - iov[0].iov_len;
		cnt = f.len ? (iov[1].iov_len ? 2 : 1) : 0;
		if (f.op == TCP_OP_SEND)
			ret = ops->post_send(con, iov, cnt, i,
					     IBTRS_XPRT_SIGNALED);
		else
			ret = ops->post_write(
				con, iov, cnt, f.raddr, f.rkey, f.imm, i,
				IBTRS_XPRT_SIGNALED | (f.op == TCP_OP_WRITE_IMM
							       ? IBTRS_XPRT_IMM
							       : 0));
		if (ret) {
			srv_bad("burst %u: post of frame %u: %s", kind, i,
				strerror(-ret));
			return;
		}
	}
	pthread_mutex_lock(&srv.x.lock);
	srv.bursts_done++;
	pthread_cond_broadcast(&srv.x.cond);
	pthread_mutex_unlock(&srv.x.lock);
}

static void srv_recv(struct ibtrs_xprt_con *con, const struct ibtrs_wc *wc)
{
	unsigned int slot = (unsigned int)(wc->wr_id % NR_RECVS);
	unsigned char *b = srv.x.rbuf[slot];
	struct rec r = {
		.opcode = wc->opcode,
		.wr_id = wc->wr_id,
		.imm = wc->imm,
		.byte_len = wc->byte_len,
	};
	int ret;

	if (wc->status || wc->wr_id != srv.next_wr || wc->byte_len > RBUF_LEN) {
		srv_bad("receive completion: status %d, wr_id %llu where %llu "
			"was due, byte_len %u",
			wc->status, (unsigned long long)wc->wr_id,
			(unsigned long long)srv.next_wr, wc->byte_len);
		return;
	}
	srv.next_wr++;
	if (wc->opcode == IBTRS_WC_RECV) {
		r.hash = fnv(b, wc->byte_len);
		r.clean = !memcmp(b + wc->byte_len, rbuf_clean,
				  RBUF_LEN - wc->byte_len);
		memset(b, RBUF_FILL, wc->byte_len);
	} else {
		r.clean = !memcmp(b, rbuf_clean, RBUF_LEN);
	}
	ret = ops->post_recv(con, b, RBUF_LEN, wc->wr_id + NR_RECVS);
	if (ret) {
		srv_bad("post_recv: %s", strerror(-ret));
		return;
	}
	if (wc->opcode == IBTRS_WC_RECV_IMM && (wc->imm & CMD_IMM) &&
	    (wc->imm & ~CMD_IMM) < NR_BURSTS) {
		srv_burst(con, wc->imm & ~CMD_IMM);
		return;
	}
	pthread_mutex_lock(&srv.x.lock);
	if (srv.nlog < LOG_MAX)
		srv.log[srv.nlog] = r;
	srv.nlog++;
	pthread_cond_broadcast(&srv.x.cond);
	pthread_mutex_unlock(&srv.x.lock);
}

static void srv_wc(struct ibtrs_xprt_con *con, const struct ibtrs_wc *wc)
{
	if (wc->opcode == IBTRS_WC_RECV || wc->opcode == IBTRS_WC_RECV_IMM) {
		srv_recv(con, wc);
		return;
	}
	if (wc->status) {
		srv_bad("send completion %llu: status %d",
			(unsigned long long)wc->wr_id, wc->status);
		return;
	}
	pthread_mutex_lock(&srv.x.lock);
	srv.sends++;
	pthread_cond_broadcast(&srv.x.cond);
	pthread_mutex_unlock(&srv.x.lock);
}

/* The two regions, filled with background bytes, and their models. */
static unsigned char *model[2];
static const size_t mr_len[2] = { MR1_LEN, MR2_LEN };

static void regions_init(void)
{
	struct iovec iov[NR_PIECES], iov1;
	/* odd sizes first, then random ones up to the region's length */
	static const size_t sizes[] = { 1,    1,     2,	    3,	   7,	 1023,
					1024, 1025,  4095,  4096,  4097, 13,
					8191, 65536, 65537, 30001, 1,	 512 };
	unsigned long long s = 0x5eed;
	size_t total = 0;
	unsigned int i;

	srv.mr1 = malloc(MR1_LEN + MR1_GUARD);
	CHECK(srv.mr1);
	t_fill(srv.mr1, MR1_LEN + MR1_GUARD, 0xb1);
	model[0] = malloc(MR1_LEN + MR1_GUARD);
	CHECK(model[0]);
	memcpy(model[0], srv.mr1, MR1_LEN + MR1_GUARD);
	model[1] = malloc(MR2_LEN);
	CHECK(model[1]);
	t_fill(model[1], MR2_LEN, 0xb2);
	for (i = 0; i < NR_PIECES; i++) {
		size_t l;

		if (i < sizeof(sizes) / sizeof(sizes[0]))
			l = sizes[i];
		else
			l = 1 + t_rand(&s) % 16000;
		if (i == NR_PIECES - 1 || l > MR2_LEN - total - 1)
			l = MR2_LEN - total;
		CHECK(l > 0);
		srv.piece_len[i] = l;
		srv.piece[i] = malloc(l + 2 * PIECE_GUARD);
		CHECK(srv.piece[i]);
		memset(srv.piece[i], 0x6c, PIECE_GUARD);
		memcpy(srv.piece[i] + PIECE_GUARD, model[1] + total, l);
		memset(srv.piece[i] + PIECE_GUARD + l, 0x6d, PIECE_GUARD);
		iov[i].iov_base = srv.piece[i] + PIECE_GUARD;
		iov[i].iov_len = l;
		total += l;
	}
	CHECK_EQ(total, MR2_LEN);
	CHECK_EQ(ops->mr_alloc(srv.x.pd, 1, &srv.mr[0]), 0);
	CHECK_EQ(ops->mr_alloc(srv.x.pd, NR_PIECES, &srv.mr[1]), 0);
	iov1.iov_base = srv.mr1;
	iov1.iov_len = MR1_LEN;
	CHECK_EQ(ops->mr_map(srv.mr[0], &iov1, 1), 0);
	CHECK_EQ(ops->mr_map(srv.mr[1], iov, NR_PIECES), 0);
}

static void regions_free(void)
{
	unsigned int i;

	ops->mr_free(srv.mr[0]);
	ops->mr_free(srv.mr[1]);
	free(srv.mr1);
	for (i = 0; i < NR_PIECES; i++)
		free(srv.piece[i]);
	free(model[0]);
	free(model[1]);
}

/* ------------------------------------------------------------------ */
/* the raw client: phases of frames                                     */

/* A frame of a phase. */
struct xf {
	struct tcp_frame h; /* host order */
	int mr;		    /* target region of a WRITE with a payload, or -1 */
	uint64_t off;	    /* offset in it */
	size_t pay;	    /* offset of the payload in the stream */
};

/* A completion a phase must bring. */
struct exp {
	enum ibtrs_wc_opcode opcode;
	uint32_t imm, len;
	uint64_t hash;
	unsigned int frame;
};

enum cut {
	CUT_WHOLE,  /* one send */
	CUT_FIXED,  /* pieces of @piece bytes */
	CUT_RANDOM, /* pieces of random sizes */
	CUT_BOUNDS, /* at every boundary of a frame or header, +-1 */
};

struct phase {
	const char *name;
	unsigned long long seed;
	size_t budget;	      /* stream bytes, about */
	uint32_t max_len;     /* largest payload */
	unsigned int max_run; /* most frames of a run */
	bool writes_only;     /* WRITE and WRITE_IMM of mostly 1 KiB or more */
	enum cut cut;
	size_t piece;
	unsigned int sleep_us; /* pause after each piece */
};

#define M MAX_SEND
#define H TCP_MAX_HDRS
static const struct phase phases[] = {
	{ "whole", 1, 3000000, M, H, false, CUT_WHOLE, 0, 0 },
	{ "1-byte pieces", 2, 60000, 1100, H, false, CUT_FIXED, 1, 0 },
	{ "1-byte pieces, paced", 3, 2500, 200, 8, false, CUT_FIXED, 1, 30 },
	{ "7-byte pieces", 4, 300000, 4136, H, false, CUT_FIXED, 7, 0 },
	{ "23-byte pieces", 5, 300000, 4136, H, false, CUT_FIXED, 23, 0 },
	{ "25-byte pieces", 6, 300000, 4136, H, false, CUT_FIXED, 25, 0 },
	{ "4095-byte pieces", 7, 3000000, M, H, false, CUT_FIXED, 4095, 0 },
	{ "4097-byte pieces, paced", 8, 2000000, M, H, false, CUT_FIXED, 4097,
	  30 },
	{ "random pieces", 9, 3000000, M, H, false, CUT_RANDOM, 0, 0 },
	{ "frame boundaries", 10, 1000000, M, H, false, CUT_BOUNDS, 0, 100 },
	{ "large writes", 11, 3000000, M, H, true, CUT_WHOLE, 0, 0 },
	{ "large writes, 4097-byte pieces", 12, 3000000, M, H, true, CUT_FIXED,
	  4097, 0 },
	{ "large writes, random pieces", 13, 3000000, M, H, true, CUT_RANDOM, 0,
	  0 },
};
#undef M
#undef H

static unsigned char stream[STREAM_MAX];
static size_t slen;
static struct xf xfs[MAX_FRAMES];
static unsigned int nxf;
static struct exp exps[LOG_MAX];
static unsigned int nexp;
static size_t bounds[4 * MAX_FRAMES + 8];
static unsigned int nbounds;
static unsigned int imm_seq;
static bool regions_full;

static void put_bound(size_t pos)
{
	CHECK(nbounds < sizeof(bounds) / sizeof(bounds[0]));
	bounds[nbounds++] = pos;
}

static unsigned char *put(size_t len)
{
	unsigned char *p = stream + slen;

	CHECK(len <= STREAM_MAX - slen);
	slen += len;
	return p;
}

/* A payload length for a frame of phase @ph. */
static uint32_t pick_len(const struct phase *ph, unsigned long long *s)
{
	static const uint32_t any[] = { 0, 100, 1023, 1024, 4096, 4136, 65536 };
	static const uint32_t big[] = { 1023, 1024, 4096, 4136, 65536, 8192 };
	uint32_t len;

	if (ph->writes_only) {
		if (t_rand(s) % 4 == 0)
			len = 1024 + t_rand(s) % (ph->max_len - 1023);
		else
			len = big[t_rand(s) % (sizeof(big) / sizeof(big[0]))];
	} else if (t_rand(s) % 4 == 0) {
		len = 1 + t_rand(s) % ph->max_len;
	} else {
		len = any[t_rand(s) % (sizeof(any) / sizeof(any[0]))];
	}
	return len <= ph->max_len ? len : ph->max_len;
}

/*
 * Free space of the regions in a phase: [lo, hi). Targets are taken from
 * lo on, with gaps, and now and then from hi down.
 */
struct space {
	size_t lo[2], hi[2];
};

/*
 * The next frame of a phase, header not yet in the stream: op, length,
 * target, imm.
 */
static struct xf *new_frame(const struct phase *ph, unsigned long long *s,
			    struct space *sp, bool zero)
{
	struct xf *x;
	unsigned int r = t_rand(s) % 10;
	uint32_t len = zero ? 0 : pick_len(ph, s);
	int mr, i;

	CHECK(nxf < MAX_FRAMES);
	x = &xfs[nxf++];
	memset(x, 0, sizeof(*x));
	x->mr = -1;
	if (ph->writes_only)
		x->h.op = r < 6 ? TCP_OP_WRITE : TCP_OP_WRITE_IMM;
	else
		x->h.op = r < 4	  ? TCP_OP_WRITE
			  : r < 7 ? TCP_OP_WRITE_IMM
				  : TCP_OP_SEND;
	if (x->h.op == TCP_OP_SEND && len > MAX_SEND)
		len = MAX_SEND;
	x->h.len = len;
	if (x->h.op == TCP_OP_WRITE_IMM)
		x->h.imm = ++imm_seq;
	if (x->h.op == TCP_OP_SEND)
		return x;
	if (!len) {
		/* No access: any key and address, or none. */
		if (t_rand(s) & 1) {
			x->h.rkey = srv.mr[t_rand(s) & 1]->key;
			x->h.raddr = t_rand(s) % MR2_LEN;
		}
		return x;
	}
	mr = (int)(t_rand(s) & 1);
	for (i = 0; i < 2; i++, mr ^= 1) {
		size_t gap = t_rand(s) % 3 ? 0 : 1 + t_rand(s) % 100;

		if (sp->lo[mr] + gap + len > sp->hi[mr])
			continue;
		x->mr = mr;
		/* Now and then at the end of the free space; the first time
		 * that is the end of the region. */
		if (t_rand(s) % 16 == 0) {
			x->off = sp->hi[mr] - len;
			sp->hi[mr] = x->off - (gap < x->off ? gap : 0);
		} else {
			x->off = sp->lo[mr] + gap;
			sp->lo[mr] = x->off + len;
		}
		x->h.rkey = srv.mr[mr]->key;
		x->h.raddr = srv.mr[mr]->addr + x->off;
		return x;
	}
	/* Both regions full: an empty write, and the phase ends soon. */
	x->h.len = 0;
	regions_full = true;
	return x;
}

/* Payload of @x into the stream, the model and the expected completions. */
static void put_payload(struct xf *x, unsigned long long seed)
{
	struct exp *e;

	put_bound(slen);
	x->pay = slen;
	t_fill(put(x->h.len), x->h.len,
	       seed ^ ((unsigned long long)x->pay << 8));
	put_bound(slen);
	if (x->mr >= 0)
		memcpy(model[x->mr] + x->off, stream + x->pay, x->h.len);
	if (x->h.op == TCP_OP_WRITE)
		return;
	CHECK(nexp < LOG_MAX);
	e = &exps[nexp++];
	e->frame = (unsigned int)(x - xfs);
	e->len = x->h.len;
	if (x->h.op == TCP_OP_SEND) {
		e->opcode = IBTRS_WC_RECV;
		e->hash = fnv(stream + x->pay, x->h.len);
	} else {
		e->opcode = IBTRS_WC_RECV_IMM;
		e->imm = x->h.imm;
	}
}

/* A run of @n frames (1: a plain frame). */
static void put_unit(const struct phase *ph, unsigned long long *s,
		     struct space *sp, unsigned int n, bool zero)
{
	struct tcp_frame hh = { .op = TCP_OP_HDRS };
	unsigned int first = nxf, i;

	if (n == 1) {
		struct xf *x = new_frame(ph, s, sp, zero);

		put_bound(slen);
		rt_frame_encode(put(sizeof(x->h)), &x->h);
		put_payload(x, ph->seed);
		return;
	}
	for (i = 0; i < n; i++)
		new_frame(ph, s, sp, zero);
	hh.len = n * (uint32_t)sizeof(hh);
	put_bound(slen);
	rt_frame_encode(put(sizeof(hh)), &hh);
	for (i = 0; i < n; i++) {
		put_bound(slen);
		rt_frame_encode(put(sizeof(hh)), &xfs[first + i].h);
	}
	for (i = 0; i < n; i++)
		put_payload(&xfs[first + i], ph->seed);
}

/* The stream, model and expected completions of phase @ph. */
static void build_phase(const struct phase *ph)
{
	unsigned long long s = ph->seed * 0x9e3779b97f4a7c15ull | 1;
	struct space sp = { .hi = { MR1_LEN, MR2_LEN } };
	struct xf *fence;
	unsigned int n, r;

	slen = nxf = nexp = nbounds = 0;
	regions_full = false;
	/* Every kind of unit once (runs as long as the phase has them),
	 * then at random. */
	put_unit(ph, &s, &sp, 2, false);
	put_unit(ph, &s, &sp, 1, false);
	put_unit(ph, &s, &sp, ph->max_run, false);
	put_unit(ph, &s, &sp, 3, true);
	put_unit(ph, &s, &sp, ph->max_run - 1, false);
	put_unit(ph, &s, &sp, 2, false);
	while (slen < ph->budget && !regions_full &&
	       nxf + TCP_MAX_HDRS + 1 < MAX_FRAMES) {
		r = t_rand(&s) % 20;
		if (r < 6)
			n = 1;
		else if (r < 10)
			n = 2 + t_rand(&s) % 7;
		else if (r < 14)
			n = 2 + t_rand(&s) % (TCP_MAX_HDRS - 1);
		else if (r < 17)
			n = TCP_MAX_HDRS;
		else
			n = TCP_MAX_HDRS - 1;
		if (n > ph->max_run)
			n = 2 + n % (ph->max_run - 1);
		put_unit(ph, &s, &sp, n, r == 19);
	}
	/* The fence: a plain WRITE_IMM. */
	fence = &xfs[nxf++];
	memset(fence, 0, sizeof(*fence));
	fence->mr = -1;
	fence->h.op = TCP_OP_WRITE_IMM;
	fence->h.imm = FENCE_IMM | (uint32_t)(ph - phases);
	put_bound(slen);
	rt_frame_encode(put(sizeof(fence->h)), &fence->h);
	put_payload(fence, ph->seed);
}

/*
 * Give the server @us to read what came, spinning: a sleep this short
 * takes milliseconds on a busy machine, and the paced phases have
 * thousands of them.
 */
static void pace(unsigned int us)
{
	double end = t_now() + us / 1e6;

	while (t_now() < end)
		;
}

/* Send the stream of @ph in pieces as it says. */
static void send_phase(int fd, const struct phase *ph)
{
	unsigned long long s = ph->seed + 77;
	size_t pos = 0, n, next_b = 0;
	unsigned int bi = 0;
	int ret = 0;

	while (pos < slen && !ret) {
		switch (ph->cut) {
		case CUT_WHOLE:
			n = slen - pos;
			break;
		case CUT_FIXED:
			n = ph->piece;
			break;
		case CUT_RANDOM:
			switch (t_rand(&s) % 3) {
			case 0:
				n = 1 + t_rand(&s) % 30;
				break;
			case 1:
				n = 1 + t_rand(&s) % 2000;
				break;
			default:
				n = 1 + t_rand(&s) % 70000;
				break;
			}
			break;
		default:
			/* Cut at each boundary b at b - 1, b and b + 1. */
			while (bi < nbounds && bounds[bi] + 1 <= pos)
				bi++;
			next_b = bi < nbounds ? bounds[bi] + 1 : slen;
			if (bi < nbounds && bounds[bi] > pos + 1)
				next_b = bounds[bi] - 1;
			else if (bi < nbounds && bounds[bi] > pos)
				next_b = bounds[bi];
			n = next_b > pos ? next_b - pos : 1;
			break;
		}
		if (n > slen - pos)
			n = slen - pos;
		ret = rt_send_all(fd, stream + pos, n, WAIT_MS, NULL);
		if (!ret)
			pos += n;
		if (ph->sleep_us && (ph->cut != CUT_RANDOM || t_rand(&s) & 1))
			pace(ph->sleep_us);
		else if (ph->cut == CUT_RANDOM && t_rand(&s) % 4 == 0)
			pace(30);
	}
	if (ret) {
		pthread_mutex_lock(&srv.x.lock);
		fprintf(stderr,
			"phase %s: sending failed after byte %zu of %zu: %s; server: "
			"%u errors (%d), %s\n",
			ph->name, pos, slen, strerror(-ret), srv.x.errs,
			srv.x.err, srv.bad);
		exit(1);
	}
}

/* The frame of the phase that wrote byte @off of region @mr, if any. */
static void blame(int mr, size_t off)
{
	unsigned int i;

	for (i = 0; i < nxf; i++) {
		const struct xf *x = &xfs[i];

		if (x->mr == mr && off >= x->off && off < x->off + x->h.len) {
			fprintf(stderr,
				"  byte %zu of its payload: frame %u of the phase, op %u, %u bytes at offset %llu\n",
				(size_t)(off - x->off), i, x->h.op, x->h.len,
				(unsigned long long)x->off);
			return;
		}
	}
	fprintf(stderr, "  no frame of the phase wrote there\n");
}

static void check_bytes(const char *phase, const char *what, int mr,
			size_t base, const unsigned char *got,
			const unsigned char *want, size_t len)
{
	size_t i;

	if (!memcmp(got, want, len))
		return;
	for (i = 0; i < len && got[i] == want[i]; i++)
		;
	fprintf(stderr,
		"phase %s: %s: byte %zu is %#x, expected %#x (region %d offset %zu)\n",
		phase, what, i, got[i], want[i], mr, base + i);
	if (mr >= 0 && base + i < mr_len[mr])
		blame(mr, base + i);
	exit(1);
}

/* After the fence: the regions, the guards and the completion log. */
static void check_phase(const struct phase *ph)
{
	unsigned char guard[PIECE_GUARD];
	size_t off = 0;
	unsigned int i;

	check_bytes(ph->name, "region 0", 0, 0, srv.mr1, model[0],
		    MR1_LEN + MR1_GUARD);
	for (i = 0; i < NR_PIECES; i++) {
		const unsigned char *p = srv.piece[i];
		size_t l = srv.piece_len[i];

		memset(guard, 0x6c, sizeof(guard));
		check_bytes(ph->name, "guard before an iovec of region 1", -1,
			    off, p, guard, PIECE_GUARD);
		check_bytes(ph->name, "region 1", 1, off, p + PIECE_GUARD,
			    model[1] + off, l);
		memset(guard, 0x6d, sizeof(guard));
		check_bytes(ph->name, "guard after an iovec of region 1", -1,
			    off + l, p + PIECE_GUARD + l, guard, PIECE_GUARD);
		off += l;
	}
	if (srv.nlog != nexp) {
		fprintf(stderr,
			"phase %s: %u receive completions, expected %u\n",
			ph->name, srv.nlog, nexp);
		exit(1);
	}
	for (i = 0; i < nexp; i++) {
		const struct rec *r = &srv.log[i];
		const struct exp *e = &exps[i];

		if (r->opcode != e->opcode || r->byte_len != e->len ||
		    (e->opcode == IBTRS_WC_RECV_IMM && r->imm != e->imm) ||
		    (e->opcode == IBTRS_WC_RECV && r->hash != e->hash) ||
		    !r->clean) {
			fprintf(stderr,
				"phase %s: completion %u (frame %u, op %u, %u bytes): got opcode %d imm %#x byte_len %u%s%s, expected opcode %d imm %#x byte_len %u\n",
				ph->name, i, e->frame, xfs[e->frame].h.op,
				xfs[e->frame].h.len, r->opcode, r->imm,
				r->byte_len,
				e->opcode == IBTRS_WC_RECV && r->hash != e->hash
					? ", other bytes"
					: "",
				r->clean
					? ""
					: ", receive buffer written past the data",
				e->opcode, e->imm, e->len);
			exit(1);
		}
	}
}

static void run_phase(int fd, const struct phase *ph)
{
	double t0 = t_now();

	build_phase(ph);
	pthread_mutex_lock(&srv.x.lock);
	srv.nlog = 0;
	pthread_mutex_unlock(&srv.x.lock);
	send_phase(fd, ph);
	pthread_mutex_lock(&srv.x.lock);
	SRV_WAIT(srv.nlog >= nexp || srv.x.errs || srv.bad[0], WAIT_MS);
	if (srv.x.errs || srv.bad[0] || srv.nlog < nexp) {
		fprintf(stderr,
			"phase %s: %u of %u receive completions, then: %u errors (%d: %s)%s%s\n",
			ph->name, srv.nlog, nexp, srv.x.errs, srv.x.err,
			srv.x.errs ? strerror(-srv.x.err) : "-",
			srv.bad[0] ? ", " : "", srv.bad);
		exit(1);
	}
	check_phase(ph);
	pthread_mutex_unlock(&srv.x.lock);
	printf("phase %s: %u frames, %zu bytes, %u completions: ok (%.3f s)\n",
	       ph->name, nxf, slen, nexp, t_now() - t0);
}

/* ------------------------------------------------------------------ */
/* the raw client: bursts from the server                               */

static void run_burst(int fd, unsigned int kind)
{
	static unsigned char buf[MAX_SEND];
	unsigned long runs0 = rt_hdrs_runs(fd), desc0 = rt_hdrs_described(fd);
	unsigned int i, done0, sends0;
	struct tcp_frame cmd = { .op = TCP_OP_WRITE_IMM,
				 .imm = CMD_IMM | kind };
	struct tcp_frame f, want;
	unsigned char w[sizeof(cmd)];
	size_t pat, total = 0;
	int queued;

	pthread_mutex_lock(&srv.x.lock);
	done0 = srv.bursts_done;
	sends0 = srv.sends;
	pthread_mutex_unlock(&srv.x.lock);
	rt_frame_encode(w, &cmd);
	CHECK_EQ(rt_send_all(fd, w, sizeof(w), WAIT_MS, NULL), 0);
	pthread_mutex_lock(&srv.x.lock);
	SRV_WAIT(srv.bursts_done > done0 || srv.x.errs || srv.bad[0], WAIT_MS);
	if (srv.bursts_done == done0) {
		fprintf(stderr, "burst of %s: never posted: %u errors, %s\n",
			burst_names[kind], srv.x.errs, srv.bad);
		exit(1);
	}
	pthread_mutex_unlock(&srv.x.lock);
	/*
	 * Let the large burst fill the socket: most of it must still be on
	 * the server's side, its sends to resume partly done.
	 */
	if (kind == B_BIG) {
		usleep(20 * 1000);
		CHECK_EQ(ioctl(fd, FIONREAD, &queued), 0);
		for (i = 0; i < burst_len[kind]; i++) {
			burst_frame(kind, i, &want, &pat);
			total += sizeof(want) + want.len;
		}
		printf("burst of %s: %d of %zu bytes arrived before the "
		       "client reads\n",
		       burst_names[kind], queued, total);
		CHECK((size_t)queued < total / 2);
	}
	for (i = 0; i < burst_len[kind]; i++) {
		burst_frame(kind, i, &want, &pat);
		rt_recv_frame(fd, &f, buf, sizeof(buf), WAIT_MS);
		if (f.op != want.op || f.len != want.len || f.imm != want.imm ||
		    f.rkey != want.rkey || f.raddr != want.raddr ||
		    memcmp(buf, pattern + pat, f.len)) {
			fprintf(stderr,
				"burst of %s: frame %u: op %u len %u imm %#x rkey %#x raddr %#llx%s, expected op %u len %u imm %#x rkey %#x raddr %#llx\n",
				burst_names[kind], i, f.op, f.len, f.imm,
				f.rkey, (unsigned long long)f.raddr,
				f.len == want.len && memcmp(buf, pattern + pat,
							    f.len)
					? ", other payload"
					: "",
				want.op, want.len, want.imm, want.rkey,
				(unsigned long long)want.raddr);
			exit(1);
		}
	}
	CHECK_EQ(rt_frames_pending(fd), 0);
	pthread_mutex_lock(&srv.x.lock);
	SRV_WAIT(srv.sends >= sends0 + burst_len[kind] || srv.x.errs ||
			 srv.bad[0],
		 WAIT_MS);
	CHECK_EQ(srv.sends, sends0 + burst_len[kind]);
	CHECK_EQ(srv.x.errs, 0);
	CHECK(!srv.bad[0]);
	pthread_mutex_unlock(&srv.x.lock);
	CHECK(!xsrv_readable(fd, 0));
	printf("burst of %s: received in order, %lu TCP_OP_HDRS runs, %lu "
	       "frames described\n",
	       burst_names[kind], rt_hdrs_runs(fd) - runs0,
	       rt_hdrs_described(fd) - desc0);
	if (kind == B_ONE) {
		CHECK_EQ(rt_hdrs_runs(fd), runs0);
	} else if (kind == B_TWO) {
		/* Both posted in one batch: one gather, one run. */
		CHECK_EQ(rt_hdrs_runs(fd), runs0 + 1);
		CHECK_EQ(rt_hdrs_described(fd), desc0 + 2);
	} else {
		CHECK(rt_hdrs_runs(fd) > runs0);
	}
}

/* ------------------------------------------------------------------ */
/* rawtcp.h's own parsing of runs                                       */

static void selftest(void)
{
	struct tcp_frame d[] = {
		{ .op = TCP_OP_HDRS, .len = 3 * sizeof(struct tcp_frame) },
		{ .op = TCP_OP_SEND, .len = 5 },
		{ .op = TCP_OP_WRITE_IMM, .imm = ibtrs_imm_hb(IBTRS_IMM_HB) },
		{ .op = TCP_OP_WRITE, .len = 3, .rkey = 7, .raddr = 9 },
		{ .op = TCP_OP_SEND, .len = 2 },
		{ .op = TCP_OP_HDRS, .len = 2 * sizeof(struct tcp_frame) },
		{ .op = TCP_OP_WRITE_IMM, .imm = 5 },
		{ .op = TCP_OP_SEND, .len = 1 },
	};
	unsigned char img[sizeof(d) + 16], buf[16], *p = img;
	struct tcp_frame f[8];
	size_t off[8], used;
	unsigned int i;
	int sv[2], fd;

	for (i = 0; i < 4; i++, p += sizeof(d[0]))
		rt_frame_encode(p, &d[i]);
	memcpy(p, "helloabc", 8);
	p += 8;
	rt_frame_encode(p, &d[4]);
	p += sizeof(d[0]);
	memcpy(p, "xy", 2);
	p += 2;
	for (i = 5; i < 8; i++, p += sizeof(d[0]))
		rt_frame_encode(p, &d[i]);
	*p++ = 'z';
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CHECK_EQ(rt_send_all(sv[1], img, (size_t)(p - img), WAIT_MS, NULL), 0);
	fd = sv[0];
	rt_recv_frame(fd, &f[0], buf, sizeof(buf), WAIT_MS);
	CHECK(f[0].op == TCP_OP_SEND && f[0].len == 5 &&
	      !memcmp(buf, "hello", 5));
	rt_recv_frame(fd, &f[0], buf, sizeof(buf), WAIT_MS); /* hb skipped */
	CHECK(f[0].op == TCP_OP_WRITE && f[0].len == 3 && f[0].rkey == 7 &&
	      f[0].raddr == 9 && !memcmp(buf, "abc", 3));
	rt_recv_frame(fd, &f[0], buf, sizeof(buf), WAIT_MS);
	CHECK(f[0].op == TCP_OP_SEND && f[0].len == 2 && !memcmp(buf, "xy", 2));
	CHECK_EQ(rt_frames_pending(fd), 0);
	rt_recv_frame(fd, &f[0], buf, sizeof(buf), WAIT_MS);
	CHECK(f[0].op == TCP_OP_WRITE_IMM && f[0].imm == 5 && !f[0].len);
	CHECK_EQ(rt_frames_pending(fd), 1);
	rt_recv_frame(fd, &f[0], buf, sizeof(buf), WAIT_MS);
	CHECK(f[0].op == TCP_OP_SEND && f[0].len == 1 && buf[0] == 'z');
	CHECK_EQ(rt_frames_pending(fd), 0);
	CHECK_EQ(rt_hdrs_runs(fd), 2);
	CHECK_EQ(rt_hdrs_described(fd), 5);
	CHECK(!xsrv_readable(fd, 0));
	/* The same image parsed in memory, whole and cut short. */
	CHECK_EQ(rt_parse_frames(img, (size_t)(p - img), f, off, 8, &used), 6);
	CHECK_EQ(used, (size_t)(p - img));
	CHECK(f[2].op == TCP_OP_WRITE && !memcmp(img + off[2], "abc", 3));
	CHECK(f[5].op == TCP_OP_SEND && img[off[5]] == 'z');
	CHECK_EQ(rt_parse_frames(img, (size_t)(p - img) - 1, f, off, 8, &used),
		 5);
	CHECK_EQ(used, (size_t)(p - img) - 1);
	CHECK_EQ(rt_parse_frames(img, 4 * sizeof(d[0]) + 7, f, off, 8, &used),
		 2); /* the SEND and the heartbeat */
	CHECK_EQ(used, 4 * sizeof(d[0]) + 5);
	/* A new socket on the same fd number starts with no run. */
	p = img + 5 * sizeof(d[0]) + 10; /* the second run */
	CHECK_EQ(rt_send_all(sv[1], p, 3 * sizeof(d[0]), WAIT_MS, NULL), 0);
	rt_recv_frame(fd, &f[0], buf, sizeof(buf), WAIT_MS);
	CHECK(f[0].op == TCP_OP_WRITE_IMM && f[0].imm == 5);
	CHECK_EQ(rt_frames_pending(fd), 1);
	close(sv[0]);
	close(sv[1]);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CHECK_EQ(sv[0], fd);
	CHECK_EQ(rt_frames_pending(fd), 0);
	CHECK_EQ(rt_hdrs_runs(fd), 0);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	struct tcp_hello hello;
	struct sockaddr_storage bound;
	unsigned int i;
	double t0;
	int fd, rcvbuf = 128 << 10;

	signal(SIGPIPE, SIG_IGN);
	t_watchdog(WATCHDOG_S);
	setvbuf(stdout, NULL, _IOLBF, 0);
	t0 = t_now();
	selftest();

	if (xsrv_init(&srv.x, &con_attr, srv_wc, NR_RECVS, RBUF_LEN))
		return T_SKIP;
	ops = srv.x.ops;
	for (i = 0; i < IBTRS_XPRT_PRIV_LEN; i++)
		srv.x.answer[i] = (uint8_t)(0x30 + i);
	memset(rbuf_clean, RBUF_FILL, sizeof(rbuf_clean));
	for (i = 0; i < NR_RECVS; i++)
		memset(srv.x.rbuf[i], RBUF_FILL, RBUF_LEN);
	t_fill(pattern, sizeof(pattern), 0xfeed);

	regions_init();
	if (xsrv_listen(&srv.x, &bound)) {
		regions_free();
		xsrv_fini(&srv.x);
		return T_SKIP;
	}

	fd = rt_connect((struct sockaddr *)&bound, sizeof(struct sockaddr_in),
			WAIT_MS);
	/* A small window, so that the large burst fills the socket. */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	xsrv_hello(fd, &hello, WAIT_MS);
	xsrv_accepted(&srv.x, WAIT_MS);

	for (i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
		run_phase(fd, &phases[i]);
	CHECK(!xsrv_readable(fd, 0));

	for (i = 0; i < NR_BURSTS; i++)
		run_burst(fd, i);

	xsrv_close(&srv.x);
	pthread_mutex_lock(&srv.x.lock);
	CHECK_EQ(srv.x.errs, 0);
	CHECK(!srv.bad[0]);
	pthread_mutex_unlock(&srv.x.lock);
	close(fd);
	regions_free();
	xsrv_fini(&srv.x);
	printf("tcp_hdrs: ok (%.2f s)\n", t_now() - t0);
	return 0;
}
