// SPDX-License-Identifier: MIT
/*
 * gray.c - unit tests of the rules against false verdicts (hb.h: the
 * stall credit, the hold when every path falls silent at once), of the
 * demotion of sick paths and the min-latency band in the policies
 * (path.h), and of the windowed histogram quantile the gray failure
 * detector reads.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hb.h"
#include "path.h"
#include "test.h"

#define MS 1000000ull
#define US 1000ull

/* A tick that came late by the stall: the stall is not silence. */
static void test_credit(void)
{
	struct ibtrs_hb hb;
	uint64_t t0 = 10000 * MS, rx = t0, tx = t0;
	char why[64] = "";

	ibtrs_hb_init(&hb, 1000);
	/* Stopped for 2 s: without the credit, 2000 ms of silence. */
	CHECK_EQ(ibtrs_hb_tick(&hb, t0 + 2100 * MS, rx, &tx, false, why,
			       sizeof(why)),
		 IBTRS_HB_DEAD);
	ibtrs_hb_credit(t0 + 2100 * MS, 2000 * MS, &rx);
	CHECK_EQ(rx, t0 + 2000 * MS);
	CHECK(ibtrs_hb_tick(&hb, t0 + 2100 * MS, rx, &tx, false, why,
			    sizeof(why)) != IBTRS_HB_DEAD);
	/* Never past now, and a timely tick changes nothing. */
	rx = t0;
	ibtrs_hb_credit(t0 + 50 * MS, 2000 * MS, &rx);
	CHECK_EQ(rx, t0 + 50 * MS);
	ibtrs_hb_credit(t0 + 60 * MS, 0, &rx);
	CHECK_EQ(rx, t0 + 50 * MS);
	/* Heard from after now (a batch time): left as it is. */
	rx = t0 + 100 * MS;
	ibtrs_hb_credit(t0, 5 * MS, &rx);
	CHECK_EQ(rx, t0 + 100 * MS);
	/* Real silence still ends in a verdict: credit only for the stall. */
	rx = t0;
	ibtrs_hb_credit(t0 + 1500 * MS, 300 * MS, &rx);
	CHECK_EQ(ibtrs_hb_tick(&hb, t0 + 1500 * MS, rx, &tx, false, why,
			       sizeof(why)),
		 IBTRS_HB_DEAD);
	CHECK(!strcmp(why, "heartbeat timeout: nothing received for 1200 ms"));
}

static void test_hold(void)
{
	bool held = false;

	/* Nothing silent, or some of the paths: act (nothing to hold). */
	CHECK(!ibtrs_hb_hold(2, 0, &held));
	CHECK(!ibtrs_hb_hold(2, 1, &held));
	CHECK(!held);
	/* All at once: held for one tick, then acted on. */
	CHECK(ibtrs_hb_hold(2, 2, &held));
	CHECK(held);
	CHECK(!ibtrs_hb_hold(2, 2, &held));
	CHECK(!held);
	/* Held, then only one still silent the tick after: act on it. */
	CHECK(ibtrs_hb_hold(3, 3, &held));
	CHECK(!ibtrs_hb_hold(3, 1, &held));
	CHECK(!held);
	/* A single path: the same. */
	CHECK(ibtrs_hb_hold(1, 1, &held));
	CHECK(!ibtrs_hb_hold(1, 1, &held));
	/* No path at all. */
	CHECK(!ibtrs_hb_hold(0, 0, &held));
}

/* Requests of @calls calls of @policy, per path. */
static void count(int policy, struct ibtrs_policy_path *p, unsigned int n,
		  unsigned int calls, unsigned int *got)
{
	unsigned int i, cursor = 0;

	memset(got, 0, n * sizeof(*got));
	for (i = 0; i < calls; i++) {
		int idx = ibtrs_policy_select(policy, p, n, &cursor);

		CHECK(idx >= 0 && (unsigned int)idx < n);
		got[idx]++;
	}
}

static void test_demoted(void)
{
	static const int policies[] = { IBTRS_MP_ROUND_ROBIN,
					IBTRS_MP_MIN_INFLIGHT,
					IBTRS_MP_MIN_LATENCY };
	struct ibtrs_policy_path p[2] = {
		{ .usable = true, .rtt_ns = 100 * US },
		{ .usable = true, .rtt_ns = 100 * US, .demoted = true },
	};
	unsigned int got[2], k, calls = 100 * IBTRS_POLICY_PROBE_EVERY;

	for (k = 0; k < 3; k++) {
		/* Only the probes go to the demoted path. */
		count(policies[k], p, 2, calls, got);
		CHECK_EQ(got[1], calls / IBTRS_POLICY_PROBE_EVERY);
		CHECK_EQ(got[0], calls - got[1]);
		/* A probe still in flight: no other one, however many
		 * turns come (a slow path would hold the tags). */
		p[1].inflight = IBTRS_POLICY_PROBE_INFLIGHT;
		count(policies[k], p, 2, calls, got);
		CHECK_EQ(got[1], 0);
		CHECK_EQ(got[0], calls);
		p[1].inflight = 0;
		/* Alone usable: it carries everything. */
		p[0].usable = false;
		count(policies[k], p, 2, 1000, got);
		CHECK_EQ(got[1], 1000);
		p[0].usable = true;
		/* Re-admitted: both carry traffic again. */
		p[1].demoted = false;
		count(policies[k], p, 2, 1000, got);
		CHECK(got[0] && got[1]);
		p[1].demoted = true;
	}
	/* Every path demoted: as if none were. */
	p[0].demoted = true;
	count(IBTRS_MP_ROUND_ROBIN, p, 2, 1000, got);
	CHECK_EQ(got[0], 500);
	CHECK_EQ(got[1], 500);
}

static void test_band(void)
{
	struct ibtrs_policy_path p[3] = {
		{ .usable = true, .rtt_ns = 195 * US },
		{ .usable = true, .rtt_ns = 197 * US },
		{ .usable = true, .rtt_ns = 900 * US },
	};
	unsigned int got[3], cursor = 0;

	/* 195 and 197 us are the same latency: both in the band. */
	CHECK_EQ(ibtrs_policy_band(p, 3), 2);
	CHECK(p[0].in_band && p[1].in_band && !p[2].in_band);
	/* Within the band, the fewest in flight: both carry traffic. */
	count(IBTRS_MP_MIN_LATENCY, p, 3, 10, got);
	CHECK_EQ(got[2], 0);
	p[0].inflight = 5;
	CHECK_EQ(ibtrs_policy_select(IBTRS_MP_MIN_LATENCY, p, 3, &cursor), 1);
	p[0].inflight = 0;
	p[1].inflight = 5;
	CHECK_EQ(ibtrs_policy_select(IBTRS_MP_MIN_LATENCY, p, 3, &cursor), 0);
	p[1].inflight = 0;
	/* Hysteresis: a member stays while within 3/2 min + 50 us ... */
	p[1].rtt_ns = 330 * US; /* 195 * 3/2 + 50 = 342 */
	CHECK_EQ(ibtrs_policy_band(p, 3), 2);
	CHECK(p[1].in_band);
	/* ... and leaves beyond it ... */
	p[1].rtt_ns = 350 * US;
	CHECK_EQ(ibtrs_policy_band(p, 3), 1);
	CHECK(!p[1].in_band);
	/* ... and comes back only within 5/4 min + 20 us (263 us). */
	p[1].rtt_ns = 300 * US;
	CHECK_EQ(ibtrs_policy_band(p, 3), 1);
	CHECK(!p[1].in_band);
	CHECK_EQ(ibtrs_policy_select(IBTRS_MP_MIN_LATENCY, p, 3, &cursor), 0);
	p[1].rtt_ns = 260 * US;
	CHECK_EQ(ibtrs_policy_band(p, 3), 2);
	CHECK(p[1].in_band);
	/* Unusable or unmeasured paths are never in the band. */
	p[0].usable = false;
	p[1].rtt_ns = 0;
	CHECK_EQ(ibtrs_policy_band(p, 3), 1);
	CHECK(p[2].in_band && !p[0].in_band && !p[1].in_band);
	p[2].usable = false;
	CHECK_EQ(ibtrs_policy_band(p, 3), 0);
	/* Without a band: the lowest RTT, an unmeasured one last. */
	p[0].usable = p[2].usable = true;
	p[0].in_band = p[2].in_band = false;
	CHECK_EQ(ibtrs_policy_select(IBTRS_MP_MIN_LATENCY, p, 3, &cursor), 0);
}

/* The band follows request cost once every usable path has one. */
static void test_band_cost(void)
{
	struct ibtrs_policy_path p[2] = {
		/* Loaded fast path: its heartbeat waits behind its data. */
		{ .usable = true, .rtt_ns = 40 * MS, .inflight = 8 },
		/* Idle slow path: a quick heartbeat, slow requests. */
		{ .usable = true, .rtt_ns = 1 * MS },
	};
	unsigned int cursor = 0;

	/* No cost yet: the RTTs judge, path 1 alone is in. */
	CHECK_EQ(ibtrs_policy_band(p, 2), 1);
	CHECK(!p[0].in_band && p[1].in_band);
	/* Path 1 measured, path 0 not yet: the cost judges, and path 0
	 * is in the band to be measured (else it never would be). */
	p[1].cost_ns = 100 * MS;
	CHECK_EQ(ibtrs_policy_band(p, 2), 2);
	CHECK(p[0].in_band && p[1].in_band);
	/* Both measured: the cost judges, whatever the heartbeats say. */
	p[0].cost_ns = 10 * MS;
	CHECK_EQ(ibtrs_policy_band(p, 2), 1);
	CHECK(p[0].in_band && !p[1].in_band);
	/* Nine in flight on the fast path: (9 + 1) * 10 is not below the
	 * slow path's (0 + 1) * 100 ... */
	p[0].inflight = 9;
	CHECK_EQ(ibtrs_policy_select(IBTRS_MP_MIN_LATENCY, p, 2, &cursor), 0);
	/* ... ten are: the slow path takes the overflow, then no more. */
	p[0].inflight = 10;
	CHECK_EQ(ibtrs_policy_select(IBTRS_MP_MIN_LATENCY, p, 2, &cursor), 1);
	p[1].inflight = 1;
	CHECK_EQ(ibtrs_policy_select(IBTRS_MP_MIN_LATENCY, p, 2, &cursor), 0);
	/* A new path with a quick heartbeat and no cost: in the band, while
	 * the others are still judged on cost. */
	p[1].cost_ns = 0;
	p[1].inflight = 0;
	CHECK_EQ(ibtrs_policy_band(p, 2), 2);
	CHECK(p[0].in_band && p[1].in_band);
	/* Unusable: never in the band. */
	p[1].usable = false;
	CHECK_EQ(ibtrs_policy_band(p, 2), 1);
	CHECK(p[0].in_band && !p[1].in_band);
}

static void test_window(void)
{
	static struct ibtrs_hist h;
	static uint64_t snap[IBTRS_HIST_BUCKETS];
	uint64_t n, v;
	unsigned int i;

	CHECK_EQ(ibtrs_hist_window(&h, snap, 0.5, &n), 0);
	CHECK_EQ(n, 0);
	for (i = 0; i < 100; i++)
		ibtrs_hist_add(&h, 100 * US);
	v = ibtrs_hist_window(&h, snap, 0.5, &n);
	CHECK_EQ(n, 100);
	CHECK(v > 87 * US && v < 113 * US);
	/* The next window sees only what came after. */
	for (i = 0; i < 10; i++)
		ibtrs_hist_add(&h, 50 * MS);
	v = ibtrs_hist_window(&h, snap, 0.5, &n);
	CHECK_EQ(n, 10);
	CHECK(v > 43 * MS && v < 57 * MS);
	CHECK_EQ(ibtrs_hist_window(&h, snap, 0.5, &n), 0);
	CHECK_EQ(n, 0);
	/* A reset in between: a new start. */
	ibtrs_hist_reset(&h);
	for (i = 0; i < 3; i++)
		ibtrs_hist_add(&h, 1 * MS);
	v = ibtrs_hist_window(&h, snap, 0.5, &n);
	CHECK_EQ(n, 3);
	CHECK(v > 870 * US && v < 1130 * US);
}

/*
 * A session at queue depth SIM_QD on two fake paths, each a pipe that
 * serves one request per @svc ticks after @delay ticks of propagation:
 * requests complete in order, and a path needs several in flight to be
 * busy. Returns the requests completed in SIM_TICKS ticks; @got gets the
 * completions per path, @maxq the most requests in flight on each.
 */
#define SIM_QD 16u
#define SIM_TICKS 4000u
#define SIM_DELAY 4u

struct sim_path {
	uint64_t done[SIM_QD]; /* completion ticks, in order */
	unsigned int head, n;
	uint64_t busy_until; /* the pipe is serving until */
	unsigned int svc;
};

static unsigned int sim_run(int policy, const unsigned int *svc,
			    unsigned int *got, unsigned int *maxq)
{
	struct ibtrs_policy_path pp[2];
	struct sim_path sp[2];
	unsigned int i, total = 0, inflight = 0, cursor = 0;
	uint64_t t;

	memset(pp, 0, sizeof(pp));
	memset(sp, 0, sizeof(sp));
	for (i = 0; i < 2; i++) {
		sp[i].svc = svc[i];
		pp[i].usable = true;
		/* What gray_measure would find on a busy pipe: the cost of
		 * one request in flight, its service time (1 ms a tick). */
		pp[i].cost_ns = pp[i].rtt_ns = svc[i] * MS;
		got[i] = maxq[i] = 0;
	}
	ibtrs_policy_band(pp, 2);
	for (t = 0; t < SIM_TICKS; t++) {
		for (i = 0; i < 2; i++) {
			struct sim_path *q = &sp[i];

			while (q->n && q->done[q->head] <= t) {
				q->head = (q->head + 1) % SIM_QD;
				q->n--;
				inflight--;
				got[i]++;
				total++;
			}
			pp[i].inflight = q->n;
		}
		while (inflight < SIM_QD) {
			int idx = ibtrs_policy_select(policy, pp, 2, &cursor);
			struct sim_path *q;

			CHECK(idx == 0 || idx == 1);
			q = &sp[idx];
			if (q->busy_until < t)
				q->busy_until = t;
			q->busy_until += q->svc;
			q->done[(q->head + q->n) % SIM_QD] =
				q->busy_until + SIM_DELAY;
			q->n++;
			pp[idx].inflight = q->n;
			if (q->n > maxq[idx])
				maxq[idx] = q->n;
			inflight++;
		}
	}
	return total;
}

/*
 * Aggregation under every policy: two equal paths carry about twice one,
 * and a path ten times slower neither drags the session below 0.9 of the
 * fast path alone nor holds most of the session's requests in its queue
 * (round robin's bound; min-latency's expected delay) - before any
 * demotion.
 */
static void test_aggregate(void)
{
	static const int policies[] = { IBTRS_MP_ROUND_ROBIN,
					IBTRS_MP_MIN_INFLIGHT,
					IBTRS_MP_MIN_LATENCY };
	static const char *const names[] = { "round-robin", "min-inflight",
					     "min-latency" };
	static const unsigned int equal[2] = { 1, 1 }, slow[2] = { 1, 10 };
	unsigned int k, got[2], maxq[2], one, two, mixed;

	/* The fast pipe alone, kept busy: one request a tick once the
	 * first has crossed. */
	one = SIM_TICKS - SIM_DELAY - 1;
	for (k = 0; k < 3; k++) {
		two = sim_run(policies[k], equal, got, maxq);
		printf("  %s: two equal paths %u (%u + %u), one path %u\n",
		       names[k], two, got[0], got[1], one);
		CHECK(two * 10 >= one * 18);
		CHECK(got[0] * 10 >= two * 4 && got[1] * 10 >= two * 4);
		mixed = sim_run(policies[k], slow, got, maxq);
		printf("  %s: R + R/10 %u (slow path %u, at most %u in flight; fast at most %u)\n",
		       names[k], mixed, got[1], maxq[1], maxq[0]);
		CHECK(mixed * 10 >= one * 9);
		CHECK(got[1] > 0);
		/* Never most of the session's tags on the slow path. */
		CHECK(maxq[1] <= (SIM_QD * 3) / 4);
		/* Min-latency: one more there is worth it only when empty. */
		if (policies[k] == IBTRS_MP_MIN_LATENCY)
			CHECK(maxq[1] <= 2);
	}
}

int main(void)
{
	test_credit();
	test_hold();
	test_demoted();
	test_band();
	test_band_cost();
	test_aggregate();
	test_window();
	return 0;
}
