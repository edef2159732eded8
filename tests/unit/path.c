// SPDX-License-Identifier: MIT
/*
 * path.c - unit tests of the path state table, the multipath policies and
 * the latency histogram.
 */
#include <stdint.h>

#include "path.h"
#include "test.h"

/* The transitions docs/protocol.md and path.h promise, and no others. */
static const int expected[IBTRS_PATH_NR_STATES][IBTRS_PATH_NR_STATES] = {
	/* to: CONNECTING CONNECTED RECONNECTING CLOSING CLOSED DEAD */
	[IBTRS_PATH_CONNECTING] = { 0, 1, 1, 1, 1, 0 },
	[IBTRS_PATH_CONNECTED] = { 0, 0, 1, 1, 1, 0 },
	[IBTRS_PATH_RECONNECTING] = { 1, 0, 0, 1, 1, 0 },
	[IBTRS_PATH_CLOSING] = { 0, 0, 0, 0, 1, 0 },
	[IBTRS_PATH_CLOSED] = { 1, 0, 1, 0, 0, 1 },
	[IBTRS_PATH_DEAD] = { 0, 0, 0, 0, 0, 0 },
};

static void test_transitions(void)
{
	int from, to, allowed = 0;

	/* Every (old, new) pair, including the self-transitions. */
	for (from = 0; from < IBTRS_PATH_NR_STATES; from++) {
		for (to = 0; to < IBTRS_PATH_NR_STATES; to++) {
			int ok = ibtrs_path_transition_ok(
				(enum ibtrs_path_state)from,
				(enum ibtrs_path_state)to);

			if (ok != expected[from][to]) {
				fprintf(stderr, "%s -> %s: got %d\n",
					ibtrs_path_state_str(from),
					ibtrs_path_state_str(to), ok);
				exit(1);
			}
			allowed += ok;
		}
	}
	CHECK_EQ(allowed, 14);
	/* Out of range. */
	CHECK(!ibtrs_path_transition_ok(IBTRS_PATH_NR_STATES,
					IBTRS_PATH_CLOSED));
	CHECK(!ibtrs_path_transition_ok(IBTRS_PATH_CLOSED, 99));
	/* DEAD is final. */
	for (to = 0; to < IBTRS_PATH_NR_STATES; to++)
		CHECK(!ibtrs_path_transition_ok(IBTRS_PATH_DEAD, to));
}

static void test_round_robin(void)
{
	struct ibtrs_policy_path p[3] = { { .usable = true },
					  { .usable = false },
					  { .usable = true } };
	unsigned int cursor = 0, hits[3] = { 0 }, i;

	for (i = 0; i < 1000; i++) {
		int idx = ibtrs_policy_select(IBTRS_MP_ROUND_ROBIN, p, 3,
					      &cursor);

		CHECK(idx == 0 || idx == 2);
		hits[idx]++;
	}
	CHECK_EQ(hits[1], 0);
	/* Each usable path gets a fair share (the dead one's turn goes to
	 * its successor, so 2:1 at worst). */
	CHECK(hits[0] >= 300 && hits[2] >= 300);
	p[0].usable = p[2].usable = false;
	CHECK_EQ(ibtrs_policy_select(IBTRS_MP_ROUND_ROBIN, p, 3, &cursor), -1);
}

static void test_min_inflight(void)
{
	struct ibtrs_policy_path p[3] = {
		{ .usable = true, .inflight = 10 },
		{ .usable = true, .inflight = 3 },
		{ .usable = true, .inflight = 7 },
	};
	unsigned int cursor = 5;

	CHECK_EQ(ibtrs_policy_select(IBTRS_MP_MIN_INFLIGHT, p, 3, &cursor), 1);
	p[1].usable = false;
	CHECK_EQ(ibtrs_policy_select(IBTRS_MP_MIN_INFLIGHT, p, 3, &cursor), 2);
	/* Ties rotate with the cursor so equal paths share the load. */
	p[0].inflight = p[2].inflight = 4;
	{
		unsigned int c = 0, a = 0, b = 0, i;

		for (i = 0; i < 100; i++) {
			int idx = ibtrs_policy_select(IBTRS_MP_MIN_INFLIGHT, p,
						      3, &c);

			a += idx == 0;
			b += idx == 2;
		}
		CHECK(a > 20 && b > 20);
	}
}

static void test_min_latency(void)
{
	struct ibtrs_policy_path p[3] = {
		{ .usable = true, .rtt_ns = 900 },
		{ .usable = true, .rtt_ns = 0 }, /* unmeasured */
		{ .usable = true, .rtt_ns = 300 },
	};
	unsigned int cursor = 0;

	CHECK_EQ(ibtrs_policy_select(IBTRS_MP_MIN_LATENCY, p, 3, &cursor), 2);
	p[2].usable = false;
	CHECK_EQ(ibtrs_policy_select(IBTRS_MP_MIN_LATENCY, p, 3, &cursor), 0);
	p[0].usable = false;
	/* Only an unmeasured path left: still used. */
	CHECK_EQ(ibtrs_policy_select(IBTRS_MP_MIN_LATENCY, p, 3, &cursor), 1);
}

static void test_hist(void)
{
	static struct ibtrs_hist h;
	uint64_t v, prev_low = 0, p50, p99, p999;
	unsigned int i;

	/* Buckets are ordered and contain their values within 12.5 %. */
	for (i = 0; i < IBTRS_HIST_BUCKETS; i++) {
		uint64_t low = ibtrs_hist_bucket_low(i);

		CHECK(i == 0 || low > prev_low);
		CHECK_EQ(ibtrs_hist_bucket(low), i);
		prev_low = low;
	}
	for (v = 1; v < (1ull << 40); v = v * 3 + 1) {
		unsigned int b = ibtrs_hist_bucket(v);

		CHECK(ibtrs_hist_bucket_low(b) <= v);
		CHECK((double)(v - ibtrs_hist_bucket_low(b)) <= 0.125 * v + 1);
	}
	CHECK_EQ(ibtrs_hist_quantile(&h, 0.5), 0);
	/* 1000 samples: 1..1000 microseconds. */
	for (i = 1; i <= 1000; i++)
		ibtrs_hist_add(&h, (uint64_t)i * 1000);
	p50 = ibtrs_hist_quantile(&h, 0.50);
	p99 = ibtrs_hist_quantile(&h, 0.99);
	p999 = ibtrs_hist_quantile(&h, 0.999);
	CHECK(p50 > 450000 && p50 < 560000);
	CHECK(p99 > 900000 && p99 < 1100000);
	CHECK(p999 >= p99 && p999 < 1130000);
	ibtrs_hist_reset(&h);
	CHECK_EQ(ibtrs_hist_quantile(&h, 0.99), 0);
}

int main(void)
{
	test_transitions();
	test_round_robin();
	test_min_inflight();
	test_min_latency();
	test_hist();
	printf("path: ok\n");
	return 0;
}
