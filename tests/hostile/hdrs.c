// SPDX-License-Identifier: MIT
/*
 * hdrs.c - attacks with TCP_OP_HDRS runs.
 *
 * A run of frame headers whose payloads follow in one block: a good run
 * is applied, every malformed one (bad count, key, bounds, operation,
 * truncation) closes the connection.
 */
#include "hostile.h"

/* ------------------------------------------------------------------ */
/* attacks with TCP_OP_HDRS runs                                        */

#define HDRS_MAX_SENT 65536 /* payload bytes sent for one described frame */
#define HDRS_OFF 0x100	    /* where the runs' valid WRITEs go in the pool */

static uint64_t pool_len(void)
{
	return (uint64_t)SRV_QD * ibtrs_chunk_size(SRV_MAX_IO);
}

/* A described header (host order); rkey is XORed into the pool's key. */
static struct tcp_frame dfr(uint8_t op, uint32_t len, uint32_t rkey_xor,
			    uint64_t raddr)
{
	struct tcp_frame f = {
		.op = op, .len = len, .rkey = rkey_xor, .raddr = raddr
	};

	return f;
}

/* A valid WRITE of 8 bytes, the @i-th of a run. */
static struct tcp_frame dw8(unsigned int i)
{
	return dfr(TCP_OP_WRITE, 8, 0, HDRS_OFF + 8 * (uint64_t)i);
}

/* The header of a run of @n headers, and nothing wrong with it. */
static struct tcp_frame hdrs_hdr(unsigned int n)
{
	struct tcp_frame h = { .op = TCP_OP_HDRS,
			       .len = n * (uint32_t)sizeof(h) };

	return h;
}

/*
 * The wire image of a run on @a's connection: header @h, the @n described
 * headers @d, @extra zero bytes, then a payload for each described frame
 * (at most HDRS_MAX_SENT bytes of it), from @payload when not NULL. In the
 * described WRITE and WRITE_IMM with a payload the rkey is XORed into the
 * pool's key. Returns the image, to be freed, its length in *@len.
 */
static unsigned char *hdrs_image(const struct atk *a, const struct tcp_frame *h,
				 const struct tcp_frame *d, unsigned int n,
				 size_t extra, const unsigned char *payload,
				 size_t *len)
{
	size_t plen = 0, pos;
	unsigned char *buf;
	unsigned int i;

	for (i = 0; i < n; i++)
		plen += d[i].len < HDRS_MAX_SENT ? d[i].len : HDRS_MAX_SENT;
	*len = sizeof(*h) * (n + 1) + extra + plen;
	buf = calloc(1, *len);
	CHECK(buf);
	rt_frame_encode(buf, h);
	pos = sizeof(*h);
	for (i = 0; i < n; i++) {
		struct tcp_frame x = d[i];

		if ((x.op == TCP_OP_WRITE || x.op == TCP_OP_WRITE_IMM) && x.len)
			x.rkey ^= a->pool.key;
		rt_frame_encode(buf + pos, &x);
		pos += sizeof(x);
	}
	pos += extra;
	if (payload)
		memcpy(buf + pos, payload, plen);
	else
		memset(buf + pos, 0xd7, plen);
	return buf;
}

/*
 * A fresh session, checked with a ping, then a malformed run (see
 * hdrs_image()): the server must close the connection. A server that took
 * the run would keep it open, as nothing else in it is wrong.
 */
static void hdrs_bad(const char *what, const struct tcp_frame *h,
		     const struct tcp_frame *d, unsigned int n, size_t extra,
		     const unsigned char *payload)
{
	const char *was = cur_case;
	unsigned char *buf;
	struct atk a;
	size_t len;

	cur_case = what;
	atk_open(&a, "atk-hdrs", 1, true);
	atk_ping(&a, 0, 1);
	buf = hdrs_image(&a, h, d, n, extra, payload, &len);
	rt_send_all(a.fd[0], buf, len, IO_TIMEOUT_MS, NULL);
	atk_expect_closed(&a);
	free(buf);
	cur_case = was;
}

/* The same, the run being @d with its right header. */
static void hdrs_bad_run(const char *what, const struct tcp_frame *d,
			 unsigned int n)
{
	struct tcp_frame h = hdrs_hdr(n);

	hdrs_bad(what, &h, d, n, 0, NULL);
}

/*
 * Positive control: a valid run is taken, its requests answered; the
 * answers may come in a run too.
 */
static void hdrs_good(void)
{
	struct ibtrs_desc desc = { .addr = 0x3000, .key = 0x31, .len = 40 };
	struct tcp_frame d[4], h, f;
	unsigned char *req[2], *buf, *p, rbuf[64];
	size_t len, plen;
	unsigned int i, got = 0;
	int before;
	struct atk a;

	atk_open(&a, "atk-hdrs-good", 1, true);
	atk_ping(&a, 0, 1);
	before = atomic_load(&srv.atk_reqs);
	/* A WRITE at the very end of the pool, two requests (one with a
	 * payload read straight into place), a heartbeat. */
	d[0] = dfr(TCP_OP_WRITE, 16, 0, pool_len() - 16);
	req[0] = atk_req_frame(&a, 2, IBTRS_WRITE, 9000, 8, NULL, &d[1]);
	req[1] = atk_req_frame(&a, 3, IBTRS_READ, desc.len, 0, &desc, &d[2]);
	d[3] = dfr(TCP_OP_WRITE_IMM, 0, 0, 0);
	d[3].imm = ibtrs_imm_hb(IBTRS_IMM_HB);
	for (i = 1; i < 3; i++)
		d[i].rkey = 0; /* XORed into the pool's key */
	plen = 16 + d[1].len + d[2].len;
	p = malloc(plen);
	CHECK(p);
	memset(p, 0xe1, 16);
	memcpy(p + 16, req[0], d[1].len);
	memcpy(p + 16 + d[1].len, req[1], d[2].len);
	h = hdrs_hdr(4);
	buf = hdrs_image(&a, &h, d, 4, 0, p, &len);
	CHECK_EQ(rt_send_all(a.fd[0], buf, len, IO_TIMEOUT_MS, NULL), 0);
	/* Two answers and a heartbeat answer, in the order they left. */
	for (i = 0; i < 3; i++) {
		int ret = rt_recv_frame_opt(a.fd[0], &f, rbuf, sizeof(rbuf),
					    IO_TIMEOUT_MS, 0);

		if (ret) {
			fprintf(stderr,
				"%s: a valid TCP_OP_HDRS run got %u of 3 answers, then %s\n",
				cur_case, i,
				ret == -ETIMEDOUT ? "nothing" : "a close");
			exit(1);
		}
		CHECK_EQ(f.op, TCP_OP_WRITE_IMM);
		if (f.imm == ibtrs_imm_rsp(2, 0)) {
			CHECK_EQ(f.len, 0);
			got |= 1;
		} else if (f.imm == ibtrs_imm_rsp(3, 0)) {
			CHECK_EQ(f.len, desc.len);
			CHECK_EQ(f.rkey, desc.key);
			CHECK_EQ(f.raddr, desc.addr);
			CHECK_EQ(rbuf[0], 0x5a);
			CHECK_EQ(rbuf[desc.len - 1], 0x5a);
			got |= 2;
		} else {
			CHECK_EQ(f.imm, ibtrs_imm_hb(IBTRS_IMM_HB_ACK));
			got |= 4;
		}
	}
	CHECK_EQ(got, 7);
	CHECK_EQ(atomic_load(&srv.atk_reqs), before + 2);
	atk_ping(&a, 0, 4);
	printf("server attack hdrs: a valid run is taken (%lu runs received)\n",
	       rt_hdrs_runs(a.fd[0]));
	atk_close(&a);
	free(buf);
	free(p);
	free(req[0]);
	free(req[1]);
}

/* A run cut short in its headers, then the end of the stream. */
static void hdrs_truncated(void)
{
	const char *was = cur_case;
	struct tcp_frame d[2], h = hdrs_hdr(2);
	unsigned char *buf;
	struct atk a;
	size_t len;

	cur_case = "hdrs-truncated";
	atk_open(&a, "atk-hdrs", 1, true);
	atk_ping(&a, 0, 1);
	d[0] = dw8(0);
	d[1] = dw8(1);
	buf = hdrs_image(&a, &h, d, 2, 0, NULL, &len);
	rt_send_all(a.fd[0], buf, 2 * sizeof(h) + 5, IO_TIMEOUT_MS, NULL);
	shutdown(a.fd[0], SHUT_WR);
	atk_expect_closed(&a);
	free(buf);
	cur_case = was;
}

static void case_hdrs(void)
{
	struct tcp_frame d[TCP_MAX_HDRS + 1], h, hb;
	unsigned char pl[8 + 2 * sizeof(h)];
	unsigned int i;

	hdrs_good();

	/* Fewer than two headers, more than TCP_MAX_HDRS. */
	d[0] = dw8(0);
	hdrs_bad_run("hdrs-n1", d, 1);
	for (i = 0; i < TCP_MAX_HDRS + 1; i++)
		d[i] = dw8(i);
	hdrs_bad_run("hdrs-n65", d, TCP_MAX_HDRS + 1);

	/* A length that is not a number of headers, none, a huge one. */
	d[0] = dw8(0);
	d[1] = dw8(1);
	h = hdrs_hdr(2);
	h.len += 8;
	hdrs_bad("hdrs-len-56", &h, d, 2, 8, NULL);
	h.len = 23;
	hdrs_bad("hdrs-len-23", &h, NULL, 0, 23, NULL);
	h.len = 47;
	hdrs_bad("hdrs-len-47", &h, d, 1, 23, NULL);
	h.len = 0;
	hdrs_bad("hdrs-len-0", &h, NULL, 0, 0, NULL);
	h.len = 100000 * (uint32_t)sizeof(h);
	hdrs_bad("hdrs-len-huge", &h, d, 2, 0, NULL);

	/* Fields of the TCP_OP_HDRS header that must be 0. */
	h = hdrs_hdr(2);
	h.imm = 1;
	hdrs_bad("hdrs-imm", &h, d, 2, 0, NULL);
	h = hdrs_hdr(2);
	h.rkey = 0x10000;
	hdrs_bad("hdrs-rkey", &h, d, 2, 0, NULL);
	h = hdrs_hdr(2);
	h.raddr = 8;
	hdrs_bad("hdrs-raddr", &h, d, 2, 0, NULL);
	h = hdrs_hdr(2);
	h.flags = 1;
	hdrs_bad("hdrs-flags", &h, d, 2, 0, NULL);
	h = hdrs_hdr(2);
	h.reserved = 1;
	hdrs_bad("hdrs-reserved", &h, d, 2, 0, NULL);

	/*
	 * A described TCP_OP_HDRS, second or first. As its payload, the
	 * headers of a valid run of two heartbeats (no key, no payload), so
	 * that a server taking the nested run would answer and stay open.
	 */
	hb = dfr(TCP_OP_WRITE_IMM, 0, 0, 0);
	hb.imm = ibtrs_imm_hb(IBTRS_IMM_HB);
	h = hdrs_hdr(2);
	memset(pl, 0xd7, 8);
	rt_frame_encode(pl + 8, &hb);
	rt_frame_encode(pl + 8 + sizeof(h), &hb);
	d[0] = dw8(0);
	d[1] = h;
	hdrs_bad("hdrs-nested-second", &h, d, 2, 0, pl);
	rt_frame_encode(pl, &hb);
	rt_frame_encode(pl + sizeof(h), &hb);
	memset(pl + 2 * sizeof(h), 0xd7, 8);
	d[0] = h;
	d[1] = dw8(0);
	hdrs_bad("hdrs-nested-first", &h, d, 2, 0, pl);

	/* A described header with an unknown op, flags, reserved bits, a
	 * length over the frame limit. */
	d[0] = dw8(0);
	d[1] = dfr(9, 8, 0, 0);
	d[2] = dw8(2);
	hdrs_bad_run("hdrs-op-9", d, 3);
	d[0] = dfr(0, 0, 0, 0);
	d[1] = dw8(1);
	hdrs_bad_run("hdrs-op-0", d, 2);
	d[0] = dw8(0);
	d[1] = dw8(1);
	d[1].flags = 0x80;
	hdrs_bad_run("hdrs-described-flags", d, 2);
	d[1] = dw8(1);
	d[1].reserved = 2;
	hdrs_bad_run("hdrs-described-reserved", d, 2);
	d[1] = dfr(TCP_OP_WRITE, TCP_MAX_FRAME_LEN + 1, 0, 0);
	hdrs_bad_run("hdrs-described-huge", d, 2);

	/*
	 * A described WRITE with a bad key, small and large (read straight
	 * into place), first or later; a heartbeat after it is answered
	 * if the run is taken.
	 */
	d[0] = dw8(0);
	d[1] = dfr(TCP_OP_WRITE, 8, 0x10000, HDRS_OFF);
	d[2] = dfr(TCP_OP_WRITE_IMM, 0, 0, 0);
	d[2].imm = ibtrs_imm_hb(IBTRS_IMM_HB);
	hdrs_bad_run("hdrs-bad-key", d, 3);
	d[0] = dfr(TCP_OP_WRITE, 4096, 0x1, HDRS_OFF);
	d[1] = dw8(1);
	hdrs_bad_run("hdrs-bad-key-large", d, 3);
	d[0] = dfr(TCP_OP_WRITE, 24, 0xffff, HDRS_OFF);
	hdrs_bad_run("hdrs-bad-key-index", d, 3);

	/* A described WRITE out of the bounds of its region. */
	d[0] = dw8(0);
	d[1] = dfr(TCP_OP_WRITE, 24, 0, pool_len() - 8);
	hdrs_bad_run("hdrs-bounds", d, 3);
	d[1] = dfr(TCP_OP_WRITE, 1, 0, pool_len());
	hdrs_bad_run("hdrs-bounds-end", d, 3);
	d[0] = dfr(TCP_OP_WRITE, 4096, 0, pool_len() - 4095);
	d[1] = dw8(1);
	hdrs_bad_run("hdrs-bounds-large", d, 3);
	d[0] = dw8(0);
	d[1] = dfr(TCP_OP_WRITE, 16, 0, UINT64_MAX - 3);
	hdrs_bad_run("hdrs-bounds-wrap", d, 3);

	/* A described SEND that finds no receive buffer (after INFO). */
	d[1] = dfr(TCP_OP_SEND, 1, 0, 0);
	hdrs_bad_run("hdrs-send-no-buffer", d, 3);

	hdrs_truncated();
}

static const struct hcase cases[] = {
	{ "hdrs", case_hdrs },
};

int main(void)
{
	hostile_setup();
	hostile_run(cases, sizeof(cases) / sizeof(cases[0]));
	return hostile_finish("hostile/hdrs");
}
