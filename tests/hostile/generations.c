// SPDX-License-Identifier: MIT
/*
 * generations.c - attacks on the generation window, and the counters of
 * protocol errors.
 *
 * - Poisoning: a peer that joins the good session as another path (it
 *   knows the session's uuid, name and secret: a path of the client's own
 *   gone wrong, as a stranger cannot join, hostile/auth) sends, on every chunk,
 * a request of generation 0x40000000, far outside the window of every tag. Each
 * is refused alone with -EPROTO, counted on the session and the path, the path
 * stays, and the tags keep their state: the good session's later requests
 * complete normally. Before the window the tags took the generation, every
 * later request of the good session was dropped as stale and it hung.
 * - Counters: each kind of malformed input bumps its own counter and the
 *   total: a frame the backend refuses (transport level), a message the
 *   core refuses (message level), a generation outside the window (the
 *   request alone is refused), a bad connection request.
 */
#include "clt_int.h"
#include "srv.h"

#include "hostile.h"

/*
 * A request on @chunk of generation @gen that writes nothing but its
 * trailer, at an offset no request of the good session uses: a READ of
 * SRV_MAX_IO bytes with a user message of POISON_USR bytes.
 */
#define POISON_USR 1000

static void atk_gen_req(struct atk *a, uint32_t chunk, uint32_t gen)
{
	struct ibtrs_req_trailer t = {
		.dir = IBTRS_READ,
		.usr_len = POISON_USR,
		.gen = gen,
		.desc = { .addr = 0x9000, .key = 0x99, .len = SRV_MAX_IO },
	};
	uint32_t off = SRV_MAX_IO + POISON_USR;
	struct ibtrs_trailer m;

	ibtrs_trailer_encode(&m, &t);
	CHECK_EQ(send_frame(a->fd[0], TCP_OP_WRITE_IMM, 0, 0,
			    ibtrs_imm_req(chunk, off, a->off_bits), sizeof(m),
			    a->pool.key, chunk_addr(a, chunk) + off, &m,
			    sizeof(m)),
		 0);
}

/* The good session as the control socket shows it (srv_ctl_walk()). */
struct good_view {
	bool found;
	struct srv_ctl_sess s;
	unsigned int paths;
	uint64_t path_gen_rejected;
};

static struct good_view *cur_view;

static void view_sess(void *arg, const struct srv_ctl_sess *s)
{
	struct good_view *v = arg;

	cur_view = !strcmp(s->sessname, "good") ? v : NULL;
	if (cur_view) {
		v->found = true;
		v->s = *s;
	}
}

static void view_path(void *arg, const struct srv_ctl_path *p)
{
	(void)arg;
	if (!cur_view)
		return;
	cur_view->paths++;
	cur_view->path_gen_rejected += p->gen_rejected;
}

static void view_sess_end(void *arg)
{
	(void)arg;
	cur_view = NULL;
}

static void good_view(struct good_view *v)
{
	struct srv_ctl_walker w = {
		.sess = view_sess,
		.path = view_path,
		.sess_end = view_sess_end,
		.arg = v,
	};

	memset(v, 0, sizeof(*v));
	srv_ctl_walk(srv.ctx, &w);
	CHECK(v->found);
}

static void case_gen_poison(void)
{
	struct ibtrs_srv_stats st0 = { .size = sizeof(st0) };
	struct ibtrs_srv_stats st = { .size = sizeof(st) };
	struct ibtrs_clt *good = good_session();
	struct good_view v0, v;
	unsigned long long before;
	struct atk a;
	uint32_t i;

	CHECK_EQ(ibtrs_srv_get_stats(srv.ctx, &st0), 0);
	good_view(&v0);
	atk_init(&a);
	memcpy(a.sess_uuid, good->uuid, IBTRS_UUID_LEN);
	/* An insider: a path of the good client's own, with its secret. */
	pthread_mutex_lock(&good->auth_lock);
	memcpy(a.secret, good->secret, sizeof(a.secret));
	a.has_secret = good->has_secret;
	pthread_mutex_unlock(&good->auth_lock);
	CHECK(a.has_secret);
	a.fd[0] = atk_con(&a, 0, 1, true);
	CHECK(a.fd[0] >= 0);
	a.nr = 1;
	atk_send_info(&a, 0, "good");
	atk_recv_info(&a, 0);
	before = good_ops();
	for (i = 0; i < SRV_QD; i++)
		atk_gen_req(&a, i, 0x40000000u);
	for (i = 0; i < SRV_QD; i++)
		atk_expect_err(&a, 0, i, -EPROTO);
	CHECK_EQ(ibtrs_srv_get_stats(srv.ctx, &st), 0);
	CHECK_EQ(st.gen_rejected, st0.gen_rejected + SRV_QD);
	CHECK_EQ(st.proto_errors, st0.proto_errors + SRV_QD);
	CHECK_EQ(st.proto_msg, st0.proto_msg);
	CHECK_EQ(st.stale, st0.stale);
	/* Counted on the good session and on the attacking path, which is
	 * still there beside the good one. */
	good_view(&v);
	CHECK_EQ(v.s.gen_rejected, v0.s.gen_rejected + SRV_QD);
	CHECK_EQ(v.path_gen_rejected, SRV_QD);
	CHECK_EQ(v.paths, 2);
	/* Far behind is refused too, and changes nothing. */
	atk_gen_req(&a, 0, 0xc0000000u);
	atk_expect_err(&a, 0, 0, -EPROTO);
	check_good("generation poisoning", before);
	printf("gen-poison: %u requests refused, the good session went on\n",
	       SRV_QD + 1);
	atk_close(&a);
}

static void expect_reject(const struct ibtrs_msg_conn_req *m, int err)
{
	int fd = raw_connect();

	send_hello(fd, TCP_HELLO_MAGIC, 0, m);
	CHECK_EQ(read_answer(fd, NULL), err);
	expect_closed(fd);
}

static void case_counters(void)
{
	struct ibtrs_srv_stats a0 = { .size = sizeof(a0) };
	struct ibtrs_srv_stats b = { .size = sizeof(b) };
	struct ibtrs_msg_conn_req m;
	struct atk a;
	double end;

	CHECK_EQ(ibtrs_srv_get_stats(srv.ctx, &a0), 0);
	/* Transport level: a frame with flags set. */
	frame_case(TCP_OP_WRITE, 0x80, 0, 0, 8, true, 0, 0, 8);
	end = t_now() + CLOSE_TIMEOUT_MS / 1000.0;
	do {
		CHECK_EQ(ibtrs_srv_get_stats(srv.ctx, &b), 0);
	} while (b.proto_xprt == a0.proto_xprt && t_now() < end &&
		 !usleep(1000));
	CHECK_EQ(b.proto_xprt, a0.proto_xprt + 1);
	CHECK_EQ(b.proto_msg, a0.proto_msg);
	CHECK_EQ(b.proto_errors, a0.proto_errors + 1);

	/* Message level: an immediate of no known type. */
	a0 = b;
	frame_case(TCP_OP_WRITE_IMM, 0, 0, 5u << IBTRS_IMM_TYPE_SHIFT, 0, false,
		   0, 0, 0);
	CHECK_EQ(ibtrs_srv_get_stats(srv.ctx, &b), 0);
	CHECK_EQ(b.proto_msg, a0.proto_msg + 1);
	CHECK_EQ(b.proto_xprt, a0.proto_xprt);
	CHECK_EQ(b.proto_errors, a0.proto_errors + 1);

	/* A generation outside the window: refused, the path stays and
	 * takes the next generation of the tag. (This client announces no
	 * IBTRS_CAP_GEN_FROM_1, as one of before: the first generation of a
	 * tag is taken as it comes.) */
	a0 = b;
	atk_open(&a, "atk-gen", 1, true);
	a.gen = 0x7ffffff0u;
	CHECK_EQ(atk_req(&a, 0, 2, IBTRS_WRITE, 64, 8, NULL), 0);
	atk_expect_rsp(&a, 0, 2, NULL);
	a.gen = 0;
	CHECK_EQ(atk_req(&a, 0, 2, IBTRS_WRITE, 64, 8, NULL), 0);
	atk_expect_err(&a, 0, 2, -EPROTO);
	a.gen = 0x7ffffff1u;
	CHECK_EQ(atk_req(&a, 0, 2, IBTRS_WRITE, 64, 8, NULL), 0);
	atk_expect_rsp(&a, 0, 2, NULL);
	CHECK_EQ(ibtrs_srv_get_stats(srv.ctx, &b), 0);
	CHECK_EQ(b.gen_rejected, a0.gen_rejected + 1);
	CHECK_EQ(b.proto_msg, a0.proto_msg);
	CHECK_EQ(b.proto_errors, a0.proto_errors + 1);
	atk_close(&a);

	/* A connection request with a bad magic: counted in the total. */
	a0 = b;
	conn_req(&m, IBTRS_PROTO_VER, 0, 1, true, NULL, NULL);
	m.magic = htole16(0x1234);
	expect_reject(&m, EPROTO);
	CHECK_EQ(ibtrs_srv_get_stats(srv.ctx, &b), 0);
	CHECK_EQ(b.proto_errors, a0.proto_errors + 1);
	printf("counters: transport, message, generation and connection request errors counted\n");
}

static const struct hcase cases[] = {
	{ "generation-poisoning", case_gen_poison },
	{ "counters", case_counters },
};

int main(void)
{
	hostile_setup();
	hostile_run(cases, sizeof(cases) / sizeof(cases[0]));
	return hostile_finish("hostile/generations");
}
