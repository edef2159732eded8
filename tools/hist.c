// SPDX-License-Identifier: MIT
/*
 * hist.c - log-linear latency histogram (see hist.h).
 */
#include <math.h>
#include <string.h>

#include "hist.h"

/**
 * hist_index() - bucket of a value
 * @v: the value
 *
 * Return: the bucket index, below HIST_BUCKETS.
 */
static unsigned int hist_index(uint64_t v)
{
	unsigned int msb, shift;

	if (v < HIST_SUB)
		return (unsigned int)v;
	msb = 63 - (unsigned int)__builtin_clzll(v);
	shift = msb - HIST_SUB_BITS;
	return (shift + 1) * HIST_SUB + (unsigned int)(v >> shift) - HIST_SUB;
}

/**
 * hist_bucket_range() - values a bucket holds
 * @idx: bucket index
 * @lo: filled with the smallest value of the bucket
 * @hi: filled with the largest value of the bucket
 */
static void hist_bucket_range(unsigned int idx, uint64_t *lo, uint64_t *hi)
{
	unsigned int shift;
	uint64_t sub;

	if (idx < HIST_SUB) {
		*lo = idx;
		*hi = idx;
		return;
	}
	shift = idx / HIST_SUB - 1;
	sub = idx % HIST_SUB + HIST_SUB;
	*lo = sub << shift;
	*hi = *lo + ((1ull << shift) - 1);
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
	unsigned int i = hist_index(v);
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
 * Return: the middle of the bucket holding the percentile, clamped to the
 * recorded minimum and maximum; 0 for an empty histogram.
 */
double hist_percentile(const struct hist *h, double p)
{
	uint64_t rank, seen = 0, lo, hi;
	unsigned int i;
	double v;

	if (!h->count)
		return 0;
	rank = (uint64_t)ceil(p / 100.0 * (double)h->count);
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank)
			break;
	}
	if (i == HIST_BUCKETS)
		return (double)h->max;
	hist_bucket_range(i, &lo, &hi);
	v = ((double)lo + (double)hi) / 2;
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
