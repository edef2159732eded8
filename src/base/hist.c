// SPDX-License-Identifier: MIT
/*
 * hist.c - log-linear latency histogram (see hist.h).
 */
#include <stdatomic.h>
#include <string.h>

#include "hist.h"
#include "util.h"

unsigned int hist_bucket(uint64_t v, unsigned int bits, unsigned int nb)
{
	unsigned int shift, idx;

	if (v < (1ull << bits))
		return v < nb ? (unsigned int)v : nb - 1;
	shift = 63u - (unsigned int)__builtin_clzll(v) - bits;
	idx = (shift + 1) << bits;
	idx += (unsigned int)(v >> shift) - (1u << bits);
	return idx < nb ? idx : nb - 1;
}

uint64_t hist_bucket_low(unsigned int idx, unsigned int bits)
{
	unsigned int sub = 1u << bits;

	if (idx < sub)
		return idx;
	return (uint64_t)(sub + idx % sub) << (idx / sub - 1);
}

uint64_t hist_quantile(const uint64_t *counts, unsigned int nb,
		       unsigned int bits, double q)
{
	uint64_t total = 0, want, seen = 0;
	unsigned int i;

	for (i = 0; i < nb; i++)
		total += counts[i];
	if (!total)
		return 0;
	want = (uint64_t)(q * (double)total + 0.5);
	if (want < 1)
		want = 1;
	for (i = 0; i < nb; i++) {
		seen += counts[i];
		if (seen >= want) {
			uint64_t lo = hist_bucket_low(i, bits);
			uint64_t hi = i + 1 < nb ? hist_bucket_low(i + 1, bits)
						 : lo;

			return lo + (hi - lo) / 2;
		}
	}
	return hist_bucket_low(nb - 1, bits);
}

unsigned int ibtrs_hist_bucket(uint64_t ns)
{
	return hist_bucket(ns, IBTRS_HIST_BITS, IBTRS_HIST_BUCKETS);
}

uint64_t ibtrs_hist_bucket_low(unsigned int idx)
{
	return hist_bucket_low(idx, IBTRS_HIST_BITS);
}

void ibtrs_hist_add(struct ibtrs_hist *h, uint64_t ns)
{
	ibtrs_counter_add(&h->b[ibtrs_hist_bucket(ns)], 1);
}

void ibtrs_hist_reset(struct ibtrs_hist *h)
{
	unsigned int i;

	for (i = 0; i < IBTRS_HIST_BUCKETS; i++)
		atomic_store_explicit(&h->b[i], 0, memory_order_relaxed);
}

uint64_t ibtrs_hist_quantile(const struct ibtrs_hist *h, double q)
{
	uint64_t counts[IBTRS_HIST_BUCKETS];
	unsigned int i;

	/* A copy, so that the walk sees the total it computed. */
	for (i = 0; i < IBTRS_HIST_BUCKETS; i++)
		counts[i] =
			atomic_load_explicit(&h->b[i], memory_order_relaxed);
	return hist_quantile(counts, IBTRS_HIST_BUCKETS, IBTRS_HIST_BITS, q);
}

/**
 * hist_init() - empty a histogram
 * @h: the histogram
 */
void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

/**
 * hist_add() - record a value
 * @h: the histogram
 * @v: the value
 *
 * One thread may add while another reads with hist_read(): the fields are
 * written with relaxed atomic stores, each of which the reader sees whole.
 */
void hist_add(struct hist *h, uint64_t v)
{
	unsigned int i = hist_bucket(v, HIST_SUB_BITS, HIST_BUCKETS);
	double sum = h->sum + (double)v;

	__atomic_store_n(&h->buckets[i], h->buckets[i] + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&h->count, h->count + 1, __ATOMIC_RELAXED);
	__atomic_store(&h->sum, &sum, __ATOMIC_RELAXED);
	if (v < h->min)
		__atomic_store_n(&h->min, v, __ATOMIC_RELAXED);
	if (v > h->max)
		__atomic_store_n(&h->max, v, __ATOMIC_RELAXED);
}

/**
 * hist_read() - copy a histogram that another thread adds to
 * @dst: the copy
 * @src: the histogram, which only one thread adds to
 *
 * The copy may miss the values added while it is taken, or count one in
 * a field and not yet in another; each field is read whole.
 */
void hist_read(struct hist *dst, const struct hist *src)
{
	unsigned int i;

	for (i = 0; i < HIST_BUCKETS; i++)
		dst->buckets[i] =
			__atomic_load_n(&src->buckets[i], __ATOMIC_RELAXED);
	dst->count = __atomic_load_n(&src->count, __ATOMIC_RELAXED);
	__atomic_load(&src->sum, &dst->sum, __ATOMIC_RELAXED);
	dst->min = __atomic_load_n(&src->min, __ATOMIC_RELAXED);
	dst->max = __atomic_load_n(&src->max, __ATOMIC_RELAXED);
}

/**
 * hist_sub() - take the values of an earlier copy out of a histogram
 * @h: a histogram that holds every value of @prev, such as a later copy
 *     (hist_read()) of the histogram @prev was copied from
 * @prev: the values to take out
 *
 * Leaves in @h the values recorded since @prev. Its minimum and maximum
 * stay as they were: they only bound those of the values left.
 */
void hist_sub(struct hist *h, const struct hist *prev)
{
	unsigned int i;

	for (i = 0; i < HIST_BUCKETS; i++)
		h->buckets[i] -= prev->buckets[i];
	h->count -= prev->count;
	h->sum -= prev->sum;
}

/**
 * hist_merge() - add the values of @src to @dst
 * @dst: the histogram to add to
 * @src: the histogram to add
 */
void hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned int i;

	for (i = 0; i < HIST_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

/**
 * hist_percentile() - value below which a share of the values lie
 * @h: the histogram
 * @p: the share, 0..100
 *
 * Return: hist_quantile() of the buckets, clamped to the recorded minimum
 * and maximum; 0 for an empty histogram.
 */
double hist_percentile(const struct hist *h, double p)
{
	double v;

	if (!h->count)
		return 0;
	v = (double)hist_quantile(h->buckets, HIST_BUCKETS, HIST_SUB_BITS,
				  p / 100.0);
	if (v < (double)h->min)
		v = (double)h->min;
	if (v > (double)h->max)
		v = (double)h->max;
	return v;
}

/**
 * hist_mean() - mean of the recorded values
 * @h: the histogram
 *
 * Return: the mean, 0 for an empty histogram.
 */
double hist_mean(const struct hist *h)
{
	return h->count ? h->sum / (double)h->count : 0;
}
