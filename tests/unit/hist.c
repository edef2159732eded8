// SPDX-License-Identifier: MIT
/*
 * hist.c - the latency histogram shared by the library and the tool: the
 * bucket layout at both resolutions, the quantile walk, and the tool's
 * count, extremes, merge and difference. (The library's wrappers are
 * walked in tests/unit/path.c.)
 */
#include <stdint.h>

#include "hist.h"
#include "test.h"

static void test_layout(void)
{
	static const unsigned int bits[] = { IBTRS_HIST_BITS, HIST_SUB_BITS };
	static const unsigned int nb[] = { IBTRS_HIST_BUCKETS, HIST_BUCKETS };
	uint64_t v, low, prev;
	unsigned int k, i, b;

	for (k = 0; k < 2; k++) {
		/* Buckets are ordered and start where the last ended. */
		prev = 0;
		for (i = 0; i < nb[k]; i++) {
			low = hist_bucket_low(i, bits[k]);
			CHECK(i == 0 || low > prev);
			CHECK_EQ(hist_bucket(low, bits[k], nb[k]), i);
			if (i)
				CHECK_EQ(hist_bucket(low - 1, bits[k], nb[k]),
					 i - 1);
			prev = low;
		}
		/* A value is in its bucket, within 1/2^bits of it. */
		for (v = 1; v < (1ull << 40); v = v * 3 + 1) {
			b = hist_bucket(v, bits[k], nb[k]);
			low = hist_bucket_low(b, bits[k]);
			CHECK(low <= v);
			CHECK((double)(v - low) <= (double)v / (1u << bits[k]));
		}
	}
	/* The tool's layout holds every 64-bit value; the library's keeps
	 * the largest in its last bucket. */
	CHECK_EQ(hist_bucket(UINT64_MAX, HIST_SUB_BITS, HIST_BUCKETS),
		 HIST_BUCKETS - 1);
	CHECK(hist_bucket_low(HIST_BUCKETS - 1, HIST_SUB_BITS) >
	      (UINT64_MAX / 2));
	CHECK_EQ(ibtrs_hist_bucket(UINT64_MAX), IBTRS_HIST_BUCKETS - 1);
	/* The library's wrappers are the shared layout at 3 bits. */
	for (v = 1; v < (1ull << 40); v = v * 5 + 3)
		CHECK_EQ(ibtrs_hist_bucket(v),
			 hist_bucket(v, IBTRS_HIST_BITS, IBTRS_HIST_BUCKETS));
}

static void test_quantile(void)
{
	uint64_t counts[24] = { 0 };

	CHECK_EQ(hist_quantile(counts, 24, 3, 0.5), 0);
	/* Values 0..15 have a bucket each: the middle of [3, 4) is 3. */
	counts[3] = 1;
	counts[17] = 1; /* [18, 20) */
	CHECK_EQ(hist_quantile(counts, 24, 3, 0.5), 3);
	CHECK_EQ(hist_quantile(counts, 24, 3, 1.0), 19);
	/* The rank rounds: 0.01 of 2 values is the first. */
	CHECK_EQ(hist_quantile(counts, 24, 3, 0.01), 3);
	/* The last bucket has no upper end: its low end. */
	counts[23] = 10;
	CHECK_EQ(hist_quantile(counts, 24, 3, 1.0), hist_bucket_low(23, 3));
}

static void test_tool(void)
{
	static struct hist a, b, c;
	unsigned int i;
	double p;

	hist_init(&a);
	CHECK_EQ(a.count, 0);
	CHECK(hist_percentile(&a, 99) == 0 && hist_mean(&a) == 0);
	for (i = 1; i <= 1000; i++)
		hist_add(&a, (uint64_t)i * 1000);
	CHECK_EQ(a.count, 1000);
	CHECK_EQ(a.min, 1000);
	CHECK_EQ(a.max, 1000000);
	CHECK(hist_mean(&a) == 500500);
	p = hist_percentile(&a, 50);
	CHECK(p > 500000 * 0.98 && p < 500000 * 1.02);
	p = hist_percentile(&a, 99);
	CHECK(p > 990000 * 0.98 && p < 990000 * 1.02);
	/* Clamped to the extremes recorded. */
	CHECK(hist_percentile(&a, 100) == 1000000);
	CHECK(hist_percentile(&a, 0) >= 1000);

	hist_init(&b);
	hist_add(&b, 7);
	hist_add(&b, 5000000);
	hist_read(&c, &a);
	hist_merge(&c, &b);
	CHECK_EQ(c.count, 1002);
	CHECK_EQ(c.min, 7);
	CHECK_EQ(c.max, 5000000);
	CHECK(hist_percentile(&c, 100) == 5000000);
	/* What was added since a copy. */
	hist_sub(&c, &a);
	CHECK_EQ(c.count, 2);
	CHECK(hist_mean(&c) == (5000000.0 + 7) / 2);
	CHECK(hist_percentile(&c, 100) > 5000000 * 0.98);
}

int main(void)
{
	test_layout();
	test_quantile();
	test_tool();
	printf("hist: ok\n");
	return 0;
}
