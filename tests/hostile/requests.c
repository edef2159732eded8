// SPDX-License-Identifier: MIT
/*
 * requests.c - attacks with malformed requests.
 *
 * Well-framed requests that lie: a wrong key or address, a chunk id out
 * of range, a trailer outside its chunk or of an unknown type, a user
 * message too long, a request on a chunk whose operation still runs, a
 * late copy of an old request. Each is refused, dropped or closes the
 * connection; none reaches the application.
 */
#include "hostile.h"

static void case_rkey(void)
{
	/* WRITE_IMM and WRITE with a wrong generation or index. */
	frame_case(TCP_OP_WRITE_IMM, 0, 0, 0, 24, true, 0x10000, 0, 24);
	frame_case(TCP_OP_WRITE, 0, 0, 0, 24, true, 0x1, 0, 24);
	frame_case(TCP_OP_WRITE, 0, 0, 0, 24, true, 0xffff, 0, 24);
	frame_case(TCP_OP_WRITE, 0, 0, 0, 24, false, 0, 0, 24);
}

static void case_raddr(void)
{
	uint64_t pool_len = (uint64_t)SRV_QD * ibtrs_chunk_size(SRV_MAX_IO);

	frame_case(TCP_OP_WRITE_IMM, 0, 0, 0, 24, true, 0, pool_len - 8, 24);
	frame_case(TCP_OP_WRITE, 0, 0, 0, 1, true, 0, pool_len, 1);
	frame_case(TCP_OP_WRITE, 0, 0, 0, 24, true, 0, UINT64_MAX - 3, 24);
	frame_case(TCP_OP_WRITE, 0, 0, 0, 16, true, 0, 1ull << 63, 16);
	frame_case(TCP_OP_WRITE, 0, 0, 0, 4096, true, 0, pool_len - 4095, 4096);
}

/* A fresh session, a trailer @t written at @off of chunk 0, then imm. */
static void trailer_case(uint32_t chunk, uint32_t off, uint16_t type,
			 uint16_t usr_len, uint32_t desc_len, bool write)
{
	struct ibtrs_trailer tr;
	struct ibtrs_req_trailer t = {
		.dir = IBTRS_WRITE,
		.usr_len = usr_len,
		.gen = 1,
		.desc = { .addr = 0x2000, .key = 0x99, .len = desc_len },
	};
	struct atk a;
	uint16_t le;

	atk_open(&a, "atk-trailer", 1, true);
	atk_ping(&a, 0, 2);
	ibtrs_trailer_encode(&tr, &t);
	le = htole16(type);
	memcpy(&tr.type, &le, sizeof(le));
	if (write)
		send_frame(a.fd[0], TCP_OP_WRITE, 0, 0, 0, sizeof(tr),
			   a.pool.key,
			   chunk_addr(&a, chunk < SRV_QD ? chunk : 0) + off,
			   &tr, sizeof(tr));
	send_frame(a.fd[0], TCP_OP_WRITE_IMM, 0, 0,
		   ibtrs_imm_req(chunk, off, a.off_bits), 0, 0, 0, NULL, 0);
	atk_expect_closed(&a);
}

static void case_chunk_id(void)
{
	uint32_t chunk_size = ibtrs_chunk_size(SRV_MAX_IO);
	unsigned int off_bits =
		(unsigned int)ibtrs_imm_off_bits(SRV_QD, chunk_size);
	uint32_t max_id = (1u << (IBTRS_IMM_PAYLOAD_BITS - off_bits)) - 1;

	trailer_case(SRV_QD, 0, IBTRS_TRAILER_WRITE, 0, 0, false);
	trailer_case(SRV_QD + 1, 64, IBTRS_TRAILER_WRITE, 0, 0, false);
	trailer_case(max_id, 0, IBTRS_TRAILER_WRITE, 0, 0, false);
}

static void case_trailer_off(void)
{
	uint32_t chunk_size = ibtrs_chunk_size(SRV_MAX_IO);
	unsigned int off_bits =
		(unsigned int)ibtrs_imm_off_bits(SRV_QD, chunk_size);

	trailer_case(0, chunk_size - sizeof(struct ibtrs_trailer) + 1,
		     IBTRS_TRAILER_WRITE, 0, 0, false);
	trailer_case(0, chunk_size, IBTRS_TRAILER_WRITE, 0, 0, false);
	trailer_case(0, (1u << off_bits) - 1, IBTRS_TRAILER_WRITE, 0, 0, false);
	/* Data longer than max_io_size, trailer inside the chunk. */
	trailer_case(0, SRV_MAX_IO + 1, IBTRS_TRAILER_WRITE, 0, 0, true);
	trailer_case(0, chunk_size - sizeof(struct ibtrs_trailer),
		     IBTRS_TRAILER_WRITE, 0, 0, true);
}

static void case_trailer_type(void)
{
	trailer_case(0, 0, 0x41, 0, 0, true);
	trailer_case(3, 100, 0, 0, 0, false); /* the zeroed chunk */
	trailer_case(0, 10, 0xffff, 0, 0, true);
}

static void case_usr_len(void)
{
	trailer_case(0, 8, IBTRS_TRAILER_WRITE, 16, 0, true);
	trailer_case(0, 0, IBTRS_TRAILER_READ, 1, 0, true);
	trailer_case(0, 3000, IBTRS_TRAILER_WRITE, IBTRS_MAX_USR_MSG + 1, 0,
		     true);
	trailer_case(0, 3000, IBTRS_TRAILER_WRITE, 0xffff, 0, true);
	/* READ whose destination length is not its data length. */
	trailer_case(0, 512, IBTRS_TRAILER_READ, 0, 511, true);
	trailer_case(0, 512, IBTRS_TRAILER_READ, 0, UINT32_MAX, true);
}

/*
 * A request on a chunk whose operation runs: the server closes the
 * connection, or answers -EBUSY without giving it to the application; in
 * that case a malformed frame ends the connection.
 */
static void busy_refused(struct atk *a, uint32_t chunk)
{
	int held = atomic_load(&srv.nr_held);
	struct tcp_frame f;
	char buf[64];
	int ret;

	ret = rt_recv_frame_opt(a->fd[0], &f, buf, sizeof(buf),
				CLOSE_TIMEOUT_MS, 0);
	if (ret == -ECONNRESET) {
		atk_close(a);
		return;
	}
	if (ret) {
		fprintf(stderr,
			"%s: no answer and no close for a request on a running chunk (%d)\n",
			cur_case, ret);
		exit(1);
	}
	CHECK_EQ(f.op, TCP_OP_WRITE_IMM);
	CHECK_EQ(f.len, 0);
	CHECK_EQ(f.imm, ibtrs_imm_rsp(chunk, -EBUSY));
	usleep(50 * 1000);
	CHECK_EQ(atomic_load(&srv.nr_held), held);
	send_frame(a->fd[0], 0x77, 0, 0, 0, 0, 0, 0, NULL, 0);
	atk_expect_closed(a);
}

static void case_busy_chunk(void)
{
	struct ibtrs_desc d = { .addr = 0x8000, .key = 0x1234, .len = 4096 };
	double end;
	struct atk a;
	int i, n, disc;

	disc = atomic_load(&srv.hold_disc);
	atk_open(&a, "hold-1", 1, true);
	CHECK_EQ(atk_req(&a, 0, 3, IBTRS_WRITE, 100, 0, NULL), 0);
	CHECK_EQ(atk_req(&a, 0, 5, IBTRS_READ, d.len, 16, &d), 0);
	end = t_now() + IO_TIMEOUT_MS / 1000.0;
	while (atomic_load(&srv.nr_held) < 2 && t_now() < end)
		usleep(1000);
	CHECK_EQ(atomic_load(&srv.nr_held), 2);
	/* Chunk 3 is running: a second request on it is refused. */
	CHECK_EQ(atk_req(&a, 0, 3, IBTRS_WRITE, 200, 0, NULL), 0);
	busy_refused(&a, 3);
	/* The session lives on until its operations are answered. */
	usleep(200 * 1000);
	CHECK_EQ(atomic_load(&srv.hold_disc), disc);
	pthread_mutex_lock(&srv.lock);
	n = atomic_load(&srv.nr_held);
	for (i = 0; i < n; i++)
		ibtrs_srv_resp_rdma(srv.held[i], 0);
	atomic_store(&srv.nr_held, 0);
	pthread_mutex_unlock(&srv.lock);
	end = t_now() + IO_TIMEOUT_MS / 1000.0;
	while (atomic_load(&srv.hold_disc) == disc && t_now() < end)
		usleep(1000);
	CHECK_EQ(atomic_load(&srv.hold_disc), disc + 1);

	/* Held with the connection still open, answered, then reused. */
	atk_open(&a, "hold-2", 1, true);
	CHECK_EQ(atk_req(&a, 0, 7, IBTRS_WRITE, 10, 0, NULL), 0);
	end = t_now() + IO_TIMEOUT_MS / 1000.0;
	while (atomic_load(&srv.nr_held) < 1 && t_now() < end)
		usleep(1000);
	CHECK_EQ(atomic_load(&srv.nr_held), 1);
	pthread_mutex_lock(&srv.lock);
	ibtrs_srv_resp_rdma(srv.held[0], -EIO);
	atomic_store(&srv.nr_held, 0);
	pthread_mutex_unlock(&srv.lock);
	{
		struct tcp_frame f;
		char buf[8];

		rt_recv_frame(a.fd[0], &f, buf, sizeof(buf), IO_TIMEOUT_MS);
		CHECK_EQ(f.op, TCP_OP_WRITE_IMM);
		CHECK_EQ(f.imm, ibtrs_imm_rsp(7, -EIO));
	}
	CHECK_EQ(atk_req(&a, 0, 7, IBTRS_WRITE, 10, 0, NULL), 0);
	end = t_now() + IO_TIMEOUT_MS / 1000.0;
	while (atomic_load(&srv.nr_held) < 1 && t_now() < end)
		usleep(1000);
	CHECK_EQ(atomic_load(&srv.nr_held), 1);
	CHECK_EQ(atk_req(&a, 0, 7, IBTRS_WRITE, 10, 0, NULL), 0);
	busy_refused(&a, 7);
	pthread_mutex_lock(&srv.lock);
	ibtrs_srv_resp_rdma(srv.held[0], 0);
	atomic_store(&srv.nr_held, 0);
	pthread_mutex_unlock(&srv.lock);
	end = t_now() + IO_TIMEOUT_MS / 1000.0;
	while (atomic_load(&srv.hold_disc) == disc + 1 && t_now() < end)
		usleep(1000);
	CHECK_EQ(atomic_load(&srv.hold_disc), disc + 2);
}

/*
 * A late copy of an old request: after the tag ran a newer one, a request
 * with an older generation (what a dead path delivers after its replay
 * ran) is not run, answered -ESTALE where it came from, and counted as
 * stale; the same generation again is a replay, answered without running.
 */
static void case_stale_gen(void)
{
	struct ibtrs_srv_stats st = { .size = sizeof(st) };
	uint64_t stale0, replays0;
	struct pollfd pfd;
	struct atk a;
	int before;

	CHECK_EQ(ibtrs_srv_get_stats(srv.ctx, &st), 0);
	stale0 = st.stale;
	replays0 = st.replays;
	atk_open(&a, "stale", 1, true);
	before = atomic_load(&srv.atk_reqs);
	a.gen = 9; /* the next request is generation 10 */
	CHECK_EQ(atk_req(&a, 0, 4, IBTRS_WRITE, 64, 8, NULL), 0);
	atk_expect_rsp(&a, 0, 4, NULL);
	a.gen = 4; /* generation 5: older than 10 */
	CHECK_EQ(atk_req(&a, 0, 4, IBTRS_WRITE, 64, 8, NULL), 0);
	atk_expect_err(&a, 0, 4, -ESTALE);
	a.gen = 9; /* generation 10 again: a replay */
	CHECK_EQ(atk_req(&a, 0, 4, IBTRS_WRITE, 64, 8, NULL), 0);
	atk_expect_rsp(&a, 0, 4, NULL);
	/* Generation 11: a new request, run and answered: one answer
	 * each. */
	CHECK_EQ(atk_req(&a, 0, 4, IBTRS_WRITE, 64, 8, NULL), 0);
	atk_expect_rsp(&a, 0, 4, NULL);
	CHECK_EQ(atomic_load(&srv.atk_reqs), before + 2);
	CHECK_EQ(ibtrs_srv_get_stats(srv.ctx, &st), 0);
	CHECK_EQ(st.stale, stale0 + 1);
	CHECK_EQ(st.replays, replays0 + 1);
	/* The connection still works, and nothing is left unread. */
	atk_ping(&a, 0, 6);
	pfd = (struct pollfd){ .fd = a.fd[0], .events = POLLIN };
	CHECK_EQ(poll(&pfd, 1, 100), 0);
	CHECK_EQ(rt_frames_pending(a.fd[0]), 0);
	atk_close(&a);
}

static const struct hcase cases[] = {
	{ "rkey", case_rkey },
	{ "raddr", case_raddr },
	{ "chunk-id", case_chunk_id },
	{ "trailer-offset", case_trailer_off },
	{ "trailer-type", case_trailer_type },
	{ "usr-len", case_usr_len },
	{ "busy-chunk", case_busy_chunk },
	{ "stale-generation", case_stale_gen },
};

int main(void)
{
	hostile_setup();
	hostile_run(cases, sizeof(cases) / sizeof(cases[0]));
	return hostile_finish("hostile/requests");
}
