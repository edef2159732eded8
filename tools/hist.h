/* SPDX-License-Identifier: MIT */
/*
 * hist.h - log-linear latency histogram.
 *
 * Values (nanoseconds) below 2^HIST_SUB_BITS have one bucket each; above,
 * every power of two is split into 2^HIST_SUB_BITS linear buckets, so that
 * a bucket is at most 1/64 (about 1.6 %) of its value wide.
 */
#ifndef IBTRS_TOOL_HIST_H
#define IBTRS_TOOL_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 6
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

/**
 * struct hist - a histogram
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

#endif /* IBTRS_TOOL_HIST_H */
