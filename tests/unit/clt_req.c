// SPDX-License-Identifier: MIT
/*
 * clt_req.c - unit tests of the client request's state table and of the
 * lifecycle that runs without a connection: the setter, the claim, send
 * completion and response in both orders, the injected delay, failover
 * to the parked list and its failure, and the race between a send
 * completion and a claim on two threads.
 */
#include <stdatomic.h>
#include <stdint.h>

#include "clt_int.h"
#include "proto.h"
#include "test.h"

#define NR_REQS 4

/* The transitions clt_req.h promises, and no others. */
static const int expected[CLT_REQ_NR_STATES][CLT_REQ_NR_STATES] = {
	/* to: FREE INFLIGHT SENT ANSWERED DONE CLAIMED PENDING */
	[CLT_REQ_FREE] = { 0, 1, 0, 0, 0, 0, 0 },
	[CLT_REQ_INFLIGHT] = { 1, 0, 1, 1, 0, 1, 0 },
	[CLT_REQ_SENT] = { 0, 0, 0, 0, 0, 1, 0 },
	[CLT_REQ_ANSWERED] = { 0, 0, 0, 0, 1, 1, 0 },
	[CLT_REQ_DONE] = { 0, 0, 0, 0, 0, 1, 0 },
	[CLT_REQ_CLAIMED] = { 1, 1, 0, 0, 0, 0, 1 },
	[CLT_REQ_PENDING] = { 0, 0, 0, 0, 0, 1, 0 },
};

static void test_transitions(void)
{
	int from, to, allowed = 0;

	/* Every (old, new) pair, including the self-transitions. */
	for (from = 0; from < CLT_REQ_NR_STATES; from++) {
		for (to = 0; to < CLT_REQ_NR_STATES; to++) {
			int ok = clt_req_transition_ok((enum clt_req_state)from,
						       (enum clt_req_state)to);

			if (ok != expected[from][to]) {
				fprintf(stderr, "%s -> %s: got %d\n",
					clt_req_state_str(from),
					clt_req_state_str(to), ok);
				exit(1);
			}
			allowed += ok;
		}
	}
	CHECK_EQ(allowed, 13);
	CHECK(!clt_req_transition_ok(CLT_REQ_NR_STATES, CLT_REQ_FREE));
	CHECK(!clt_req_transition_ok(CLT_REQ_FREE, 99));
	CHECK(!strcmp(clt_req_state_str(CLT_REQ_CLAIMED), "claimed"));
	CHECK(!strcmp(clt_req_state_str(99), "unknown"));
}

/* A session of one path and NR_REQS requests, no connection. */
struct fixture {
	struct ibtrs_clt sess;
	struct clt_path path;
	struct clt_req reqs[NR_REQS];
	struct iovec sg[NR_REQS];
	_Atomic int completions;
	_Atomic int last_err;
};

static void conf_fn(void *priv, int err)
{
	struct fixture *f = priv;

	atomic_store(&f->last_err, err);
	atomic_fetch_add(&f->completions, 1);
}

static struct fixture *fixture_new(void)
{
	struct fixture *f = calloc(1, sizeof(*f));
	uint32_t i;

	CHECK(f);
	snprintf(f->sess.sessname, sizeof(f->sess.sessname), "unit");
	f->sess.queue_depth = NR_REQS;
	f->sess.reqs = f->reqs;
	f->sess.pending_tail = &f->sess.pending;
	f->sess.failover_timeout_ns = 60ull * 1000000000;
	f->sess.paths[0] = &f->path;
	atomic_init(&f->sess.path_cnt, 1);
	f->path.sess = &f->sess;
	f->path.cons[0].path = &f->path;
	atomic_init(&f->path.state, IBTRS_PATH_CONNECTED);
	CHECK_EQ(ibtrs_loop_create(&f->sess.loop, "unit-req", NULL, NULL, 0),
		 0);
	for (i = 0; i < NR_REQS; i++)
		clt_req_init(&f->sess, &f->reqs[i], i, &f->sg[i]);
	return f;
}

static void fixture_free(struct fixture *f)
{
	ibtrs_loop_destroy(f->sess.loop);
	free(f);
}

/*
 * What a post leaves behind, without a backend: the request on the path,
 * INFLIGHT, counted in flight.
 */
static void fake_post(struct fixture *f, struct clt_req *req)
{
	enum clt_req_state s = clt_req_state(req);

	req->conf = conf_fn;
	req->priv = f;
	req->dir = IBTRS_WRITE;
	req->path = &f->path;
	req->con = &f->path.cons[0];
	req->gen++;
	req->deadline_ns = 0;
	atomic_fetch_add(&f->path.inflight, 1);
	CHECK_EQ(clt_req_change(req, &s, CLT_REQ_INFLIGHT), 0);
}

static uint64_t wr_id(const struct clt_req *req)
{
	return ((uint64_t)req->gen << 32) | req->mem_id;
}

/* Bounded wait for @n completions in all. */
static void wait_completions(struct fixture *f, int n)
{
	double end = t_now() + 10;

	while (atomic_load(&f->completions) < n && t_now() < end)
		sched_yield();
	CHECK_EQ(atomic_load(&f->completions), n);
}

static void test_setter(void)
{
	struct fixture *f = fixture_new();
	struct clt_req *req = &f->reqs[0];
	enum clt_req_state s;

	CHECK_EQ(clt_req_state(req), CLT_REQ_FREE);
	/* Refused by the table: nothing changes. */
	s = CLT_REQ_FREE;
	CHECK_EQ(clt_req_change(req, &s, CLT_REQ_SENT), -EINVAL);
	CHECK_EQ(clt_req_state(req), CLT_REQ_FREE);
	/* Allowed, but the request is not where the caller thought. */
	s = CLT_REQ_CLAIMED;
	CHECK_EQ(clt_req_change(req, &s, CLT_REQ_PENDING), -EAGAIN);
	CHECK_EQ(s, CLT_REQ_FREE);
	CHECK_EQ(clt_req_state(req), CLT_REQ_FREE);
	/* Not on its way: nothing to claim. */
	CHECK_EQ(clt_req_claim(req), CLT_REQ_FREE);
	CHECK_EQ(clt_req_state(req), CLT_REQ_FREE);
	fake_post(f, req);
	CHECK_EQ(clt_req_claim(req), CLT_REQ_INFLIGHT);
	CHECK_EQ(clt_req_state(req), CLT_REQ_CLAIMED);
	/* Claimed once only. */
	CHECK_EQ(clt_req_claim(req), CLT_REQ_FREE);
	/* A request in use is refused by a new submission. */
	CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, conf_fn, &f->sess,
				   &(struct ibtrs_tag){ .sess = &f->sess }, f,
				   NULL, 0, 0, NULL, 0),
		 -EBUSY);
	fixture_free(f);
}

static void test_sent_then_response(void)
{
	struct fixture *f = fixture_new();
	struct clt_req *req = &f->reqs[1];

	fake_post(f, req);
	/* A completion of an earlier generation is not this request's. */
	clt_req_sent(&f->sess, wr_id(req) - (1ull << 32));
	CHECK_EQ(clt_req_state(req), CLT_REQ_INFLIGHT);
	clt_req_sent(&f->sess, wr_id(req));
	CHECK_EQ(clt_req_state(req), CLT_REQ_SENT);
	CHECK(!clt_req_response(&f->path.cons[0], ibtrs_imm_rsp(1, -EIO)));
	/* Second of the two: completed at once, free again. */
	CHECK_EQ(atomic_load(&f->completions), 1);
	CHECK_EQ(atomic_load(&f->last_err), -EIO);
	CHECK_EQ(clt_req_state(req), CLT_REQ_FREE);
	CHECK_EQ(atomic_load(&f->path.inflight), 0);
	CHECK_EQ(atomic_load(&f->path.errors), 1);
	/* Now nothing awaits a response on that chunk. */
	CHECK(!strcmp(clt_req_response(&f->path.cons[0], ibtrs_imm_rsp(1, 0)),
		      "response to no request"));
	CHECK(!strcmp(clt_req_response(&f->path.cons[0],
				       ibtrs_imm_rsp(NR_REQS, 0)),
		      "response for a chunk out of range"));
	fixture_free(f);
}

static void test_response_then_sent(void)
{
	struct fixture *f = fixture_new();
	struct clt_req *req = &f->reqs[2];

	fake_post(f, req);
	CHECK(!clt_req_response(&f->path.cons[0], ibtrs_imm_rsp(2, 0)));
	CHECK_EQ(clt_req_state(req), CLT_REQ_ANSWERED);
	CHECK_EQ(atomic_load(&f->completions), 0);
	/* A second response to an answered request is a protocol error. */
	CHECK(clt_req_response(&f->path.cons[0], ibtrs_imm_rsp(2, 0)));
	/* The send completes second: the loop thread completes it. */
	clt_req_sent(&f->sess, wr_id(req));
	wait_completions(f, 1);
	CHECK_EQ(atomic_load(&f->last_err), 0);
	CHECK_EQ(clt_req_state(req), CLT_REQ_FREE);
	CHECK_EQ(atomic_load(&f->path.inflight), 0);
	CHECK_EQ(atomic_load(&f->path.wr_ops), 1);
	fixture_free(f);
}

static void test_delayed_response(void)
{
	struct fixture *f = fixture_new();
	struct clt_req *req = &f->reqs[0];
	uint64_t now;

	fake_post(f, req);
	clt_req_sent(&f->sess, wr_id(req));
	atomic_store(&f->path.fault_arg, 50);
	atomic_store(&f->path.fault, IBTRS_FAULT_DELAY);
	CHECK(!clt_req_response(&f->path.cons[0], ibtrs_imm_rsp(0, 0)));
	/* Held: still waiting, on the session's list. */
	CHECK_EQ(clt_req_state(req), CLT_REQ_SENT);
	CHECK(f->sess.delayed == req && req->delay.queued);
	now = req->delay.until;
	clt_req_tick(&f->sess, now - 1);
	CHECK_EQ(atomic_load(&f->completions), 0);
	clt_req_tick(&f->sess, now);
	CHECK_EQ(atomic_load(&f->completions), 1);
	CHECK(!f->sess.delayed && !req->delay.queued);
	CHECK_EQ(clt_req_state(req), CLT_REQ_FREE);
	fixture_free(f);
}

static void test_failover(void)
{
	struct fixture *f = fixture_new();
	struct clt_req *answered = &f->reqs[0], *orphan = &f->reqs[1];

	fake_post(f, answered);
	fake_post(f, orphan);
	CHECK(!clt_req_response(&f->path.cons[0], ibtrs_imm_rsp(0, 0)));
	/* The path goes down and will come back: the answered request is
	 * completed (only its send was lost), the other one is parked. */
	atomic_store(&f->path.state, IBTRS_PATH_RECONNECTING);
	clt_req_failover(&f->path);
	CHECK_EQ(atomic_load(&f->completions), 1);
	CHECK_EQ(clt_req_state(answered), CLT_REQ_FREE);
	CHECK_EQ(clt_req_state(orphan), CLT_REQ_PENDING);
	CHECK(f->sess.pending == orphan);
	CHECK_EQ(atomic_load(&f->path.inflight), 0);
	CHECK_EQ(atomic_load(&f->path.failovers), 1);
	/* Parked requests cannot be claimed, nor submitted again. */
	CHECK_EQ(clt_req_claim(orphan), CLT_REQ_FREE);
	/* A second failover finds nothing of this path on its way. */
	clt_req_failover(&f->path);
	CHECK_EQ(atomic_load(&f->path.failovers), 1);
	/* Before its deadline and with hope, it stays parked. */
	clt_req_tick(&f->sess, ibtrs_now_ns());
	CHECK_EQ(clt_req_state(orphan), CLT_REQ_PENDING);
	/* Past its deadline it fails. */
	clt_req_tick(&f->sess, orphan->deadline_ns);
	CHECK_EQ(atomic_load(&f->completions), 2);
	CHECK_EQ(atomic_load(&f->last_err), -ECONNABORTED);
	CHECK_EQ(clt_req_state(orphan), CLT_REQ_FREE);
	CHECK(!f->sess.pending && f->sess.pending_tail == &f->sess.pending);

	/* No path that may come back: failed at once. */
	fake_post(f, orphan);
	atomic_store(&f->path.state, IBTRS_PATH_CLOSED);
	clt_req_failover(&f->path);
	CHECK_EQ(atomic_load(&f->completions), 3);
	CHECK_EQ(atomic_load(&f->last_err), -ECONNABORTED);
	CHECK_EQ(clt_req_state(orphan), CLT_REQ_FREE);

	/* Parked, then failed by the session. */
	fake_post(f, orphan);
	atomic_store(&f->path.state, IBTRS_PATH_RECONNECTING);
	clt_req_failover(&f->path);
	CHECK_EQ(clt_req_state(orphan), CLT_REQ_PENDING);
	clt_fail_pending(&f->sess, -ESHUTDOWN);
	CHECK_EQ(atomic_load(&f->completions), 4);
	CHECK_EQ(atomic_load(&f->last_err), -ESHUTDOWN);
	CHECK_EQ(clt_req_state(orphan), CLT_REQ_FREE);
	fixture_free(f);
}

/* The send completion (any thread) racing a failover's claim. */
struct race {
	struct fixture *f;
	struct clt_req *req;
	_Atomic int go;
	_Atomic int round;
};

static void *race_sender(void *arg)
{
	struct race *r = arg;
	int round;

	for (round = 1; round <= 2000; round++) {
		while (atomic_load(&r->go) != round)
			sched_yield();
		clt_req_sent(&r->f->sess, wr_id(r->req));
		atomic_store(&r->round, round);
	}
	return NULL;
}

static void test_sent_claim_race(void)
{
	struct race r = { .f = fixture_new() };
	unsigned int won_inflight = 0, won_sent = 0;
	pthread_t t;
	int round;

	r.req = &r.f->reqs[3];
	CHECK_EQ(pthread_create(&t, NULL, race_sender, &r), 0);
	for (round = 1; round <= 2000; round++) {
		enum clt_req_state was, s = CLT_REQ_CLAIMED;

		fake_post(r.f, r.req);
		atomic_store(&r.go, round);
		was = clt_req_claim(r.req);
		while (atomic_load(&r.round) != round)
			sched_yield();
		/* Exactly one order happened, and the claim holds. */
		CHECK(was == CLT_REQ_INFLIGHT || was == CLT_REQ_SENT);
		won_inflight += was == CLT_REQ_INFLIGHT;
		won_sent += was == CLT_REQ_SENT;
		CHECK_EQ(clt_req_state(r.req), CLT_REQ_CLAIMED);
		atomic_fetch_sub(&r.f->path.inflight, 1);
		CHECK_EQ(clt_req_change(r.req, &s, CLT_REQ_FREE), 0);
	}
	pthread_join(t, NULL);
	CHECK_EQ(won_inflight + won_sent, 2000);
	CHECK_EQ(atomic_load(&r.f->completions), 0);
	fixture_free(r.f);
}

int main(void)
{
	t_watchdog(120);
	/* The refused transitions the tests try are logged as errors. */
	ibtrs_set_log_level(IBTRS_LOG_NONE);
	test_transitions();
	test_setter();
	test_sent_then_response();
	test_response_then_sent();
	test_delayed_response();
	test_failover();
	test_sent_claim_race();
	return 0;
}
