/* SPDX-License-Identifier: MIT */
/*
 * hist.h - log-linear latency histogram, one implementation for the
 * library's per-path figures and the tool's bench results.
 *
 * Values (nanoseconds) below 2^bits have one bucket each; above, every
 * power of two is split into 2^bits linear buckets, so that a bucket is at
 * most 1/2^bits of its value wide. The library keeps 3 bits (8 buckets per
 * power of two, under 12.5 %) in atomic counters any thread may read; the
 * tool keeps 6 bits (under 1.6 %) with the count, extremes and sum.
 */
#ifndef IBTRS_HIST_H
#define IBTRS_HIST_H

#include <stdint.h>

/**
 * hist_bucket() - bucket of a value
 * @v: the value
 * @bits: log2 of the buckets per power of two
 * @nb: number of buckets; larger values go to the last one
 *
 * Return: the bucket index, below @nb.
 */
unsigned int hist_bucket(uint64_t v, unsigned int bits, unsigned int nb);

/**
 * hist_bucket_low() - smallest value of a bucket
 * @idx: bucket index
 * @bits: log2 of the buckets per power of two
 *
 * Return: the smallest value hist_bucket() puts into bucket @idx.
 */
uint64_t hist_bucket_low(unsigned int idx, unsigned int bits);

/**
 * hist_quantile() - value at a quantile of bucket counts
 * @counts: count per bucket
 * @nb: number of buckets
 * @bits: log2 of the buckets per power of two
 * @q: the quantile, 0 < q <= 1
 *
 * Return: the middle of the bucket holding the @q-th value (the low end
 * of the last bucket for that one), 0 when every count is 0.
 */
uint64_t hist_quantile(const uint64_t *counts, unsigned int nb,
		       unsigned int bits, double q);

/*
 * The library's histogram: 8 buckets per power of two, in nanoseconds up to
 * about 18 minutes (larger values count in the last bucket).
 */
#define IBTRS_HIST_BITS 3
#define IBTRS_HIST_BUCKETS 320

struct ibtrs_hist {
	_Atomic uint64_t b[IBTRS_HIST_BUCKETS];
};

/* One thread adds and resets (ibtrs_counter_add()); any thread reads. */
void ibtrs_hist_add(struct ibtrs_hist *h, uint64_t ns);
void ibtrs_hist_reset(struct ibtrs_hist *h);
/* Value at quantile @q (0 < q <= 1) in nanoseconds; 0 when empty. */
uint64_t ibtrs_hist_quantile(const struct ibtrs_hist *h, double q);
unsigned int ibtrs_hist_bucket(uint64_t ns);
uint64_t ibtrs_hist_bucket_low(unsigned int idx);

/* The tool's histogram: 64 buckets per power of two, every 64-bit value. */
#define HIST_SUB_BITS 6
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

/**
 * struct hist - a histogram with its count, extremes and sum
 * @count: number of recorded values
 * @min: smallest recorded value
 * @max: largest recorded value
 * @sum: sum of the recorded values
 * @buckets: value counts per bucket
 */
struct hist {
	uint64_t count;
	uint64_t min;
	uint64_t max;
	double sum;
	uint64_t buckets[HIST_BUCKETS];
};

void hist_init(struct hist *h);
void hist_add(struct hist *h, uint64_t v);
void hist_read(struct hist *dst, const struct hist *src);
void hist_sub(struct hist *h, const struct hist *prev);
void hist_merge(struct hist *dst, const struct hist *src);
double hist_percentile(const struct hist *h, double p);
double hist_mean(const struct hist *h);

#endif /* IBTRS_HIST_H */
