// SPDX-License-Identifier: MIT
/*
 * path.c - path state table and multipath policies.
 */
#include <stdatomic.h>

#include "core.h"
#include "path.h"

#define S(x) (1u << IBTRS_PATH_##x)

/* allowed[from] = set of states reachable from @from. */
static const unsigned int allowed[IBTRS_PATH_NR_STATES] = {
	[IBTRS_PATH_CLOSED] = S(CONNECTING) | S(RECONNECTING) | S(DEAD),
	[IBTRS_PATH_CONNECTING] = S(CONNECTED) | S(RECONNECTING) | S(CLOSED) |
				  S(CLOSING),
	[IBTRS_PATH_CONNECTED] = S(RECONNECTING) | S(CLOSING) | S(CLOSED),
	[IBTRS_PATH_RECONNECTING] = S(CONNECTING) | S(CLOSING) | S(CLOSED),
	[IBTRS_PATH_CLOSING] = S(CLOSED),
	[IBTRS_PATH_DEAD] = 0,
};

bool ibtrs_path_transition_ok(enum ibtrs_path_state from,
			      enum ibtrs_path_state to)
{
	if ((unsigned int)from >= IBTRS_PATH_NR_STATES ||
	    (unsigned int)to >= IBTRS_PATH_NR_STATES)
		return false;
	return allowed[from] & (1u << to);
}

/* An unmeasured path counts as slowest. */
static uint64_t rtt_of(const struct ibtrs_policy_path *p)
{
	return p->rtt_ns ? p->rtt_ns : UINT64_MAX;
}

unsigned int ibtrs_policy_band(struct ibtrs_policy_path *paths, unsigned int n)
{
	uint64_t min = UINT64_MAX;
	unsigned int i, cnt = 0;
	bool costs = false;

	/* The cost once a path has one: the heartbeat waits behind the
	 * data queued on its connection. */
	for (i = 0; i < n; i++)
		costs |= paths[i].usable && paths[i].cost_ns;
	for (i = 0; i < n; i++) {
		const struct ibtrs_policy_path *p = &paths[i];
		uint64_t v = costs ? p->cost_ns : rtt_of(p);

		if (p->usable && v && v < min)
			min = v;
	}
	for (i = 0; i < n; i++) {
		struct ibtrs_policy_path *p = &paths[i];
		uint64_t lim = p->in_band ? min + min / 2 + 50000
					  : min + min / 4 + 20000;

		if (!p->usable || min == UINT64_MAX)
			p->in_band = false;
		else if (costs)
			/* Without a cost yet (new, or never chosen): in the
			 * band, to get requests and thus a cost. */
			p->in_band = !p->cost_ns || p->cost_ns <= lim;
		else
			p->in_band = rtt_of(p) <= lim;
		cnt += p->in_band;
	}
	return cnt;
}

/* Is @a a better choice than @b by @policy? */
static bool better(int policy, const struct ibtrs_policy_path *a,
		   const struct ibtrs_policy_path *b, bool band)
{
	if (policy == IBTRS_MP_MIN_LATENCY) {
		if (band && a->in_band != b->in_band)
			return a->in_band;
		/* Outside the band (or without one): the lower RTT. */
		if ((!band || !a->in_band) && rtt_of(a) != rtt_of(b))
			return rtt_of(a) < rtt_of(b);
	}
	return a->inflight < b->inflight;
}

/* Expected delay of one more request on @p; UINT64_MAX: unknown. */
static uint64_t delay_of(const struct ibtrs_policy_path *p)
{
	if (!p->cost_ns || p->inflight >= UINT64_MAX / p->cost_ns - 1)
		return UINT64_MAX;
	return (p->inflight + 1) * p->cost_ns;
}

/* A demoted path that has its probes in flight, at a probe's turn. */
static bool probe_busy(const struct ibtrs_policy_path *p, unsigned int healthy,
		       bool want_demoted)
{
	return healthy && want_demoted && p->demoted &&
	       p->inflight >= IBTRS_POLICY_PROBE_INFLIGHT;
}

int ibtrs_policy_select(int policy, const struct ibtrs_policy_path *paths,
			unsigned int n, unsigned int *cursor)
{
	unsigned int i, start = *cursor, healthy = 0, probe = 0;
	uint64_t least = UINT64_MAX, cap;
	bool band = false, want_demoted, skipped = false;
	int best = -1, over = -1;

	*cursor = start + 1;
	for (i = 0; i < n; i++) {
		if (!paths[i].usable)
			continue;
		if (paths[i].demoted)
			probe += paths[i].inflight <
				 IBTRS_POLICY_PROBE_INFLIGHT;
		else
			healthy++;
		band |= paths[i].in_band;
	}
	/* While a healthy path is usable the demoted ones only get their
	 * probes, one in flight at a time; without one, every usable path
	 * is as good as any. */
	want_demoted = healthy && probe &&
		       start % IBTRS_POLICY_PROBE_EVERY == 0;
	for (i = 0; i < n; i++) {
		const struct ibtrs_policy_path *p = &paths[i];

		if (p->usable && (!healthy || p->demoted == want_demoted) &&
		    !probe_busy(p, healthy, want_demoted) &&
		    p->inflight < least)
			least = p->inflight;
	}
	/* Round robin's bound on a path's queue, against the shortest. */
	cap = least < UINT64_MAX / 4 ? 2 * least + IBTRS_POLICY_RR_SLACK
				     : UINT64_MAX;
	for (i = 0; i < n; i++) {
		unsigned int idx = (start + i) % n;
		const struct ibtrs_policy_path *p = &paths[idx];

		if (!p->usable)
			continue;
		if ((healthy && p->demoted != want_demoted) ||
		    probe_busy(p, healthy, want_demoted))
			continue;
		if (policy == IBTRS_MP_ROUND_ROBIN) {
			/* The path at turn is over its bound: the one with
			 * the fewest in flight instead, so that the turn
			 * does not fall to whichever path comes next. */
			if (p->inflight > cap) {
				skipped = true;
				continue;
			}
			if (!skipped)
				return (int)idx;
			if (best < 0 || p->inflight < paths[best].inflight)
				best = (int)idx;
			continue;
		}
		/* Min-latency: the overflow candidate outside the band. */
		if (policy == IBTRS_MP_MIN_LATENCY && band && !p->in_band) {
			if (delay_of(p) != UINT64_MAX &&
			    (over < 0 || delay_of(p) < delay_of(&paths[over])))
				over = (int)idx;
			continue;
		}
		if (best < 0 || better(policy, p, &paths[best], band))
			best = (int)idx;
	}
	/* Both costs known: the overflow only if it is expected sooner. */
	if (over >= 0 &&
	    (best < 0 || (delay_of(&paths[best]) != UINT64_MAX &&
			  delay_of(&paths[over]) < delay_of(&paths[best]))))
		return over;
	if (best < 0 && policy == IBTRS_MP_MIN_LATENCY && band) {
		/* Only paths outside the band, none with a known cost. */
		for (i = 0; i < n; i++) {
			unsigned int idx = (start + i) % n;
			const struct ibtrs_policy_path *p = &paths[idx];

			if (!p->usable ||
			    (healthy && p->demoted != want_demoted) ||
			    probe_busy(p, healthy, want_demoted))
				continue;
			if (best < 0 || better(policy, p, &paths[best], false))
				best = (int)idx;
		}
	}
	return best;
}

uint64_t ibtrs_hist_window(const struct ibtrs_hist *h, uint64_t *snap, double q,
			   uint64_t *n)
{
	uint64_t d[IBTRS_HIST_BUCKETS], total = 0, want, seen = 0;
	bool reset = false;
	unsigned int i;

	for (i = 0; i < IBTRS_HIST_BUCKETS; i++) {
		uint64_t v =
			atomic_load_explicit(&h->b[i], memory_order_relaxed);

		reset |= v < snap[i];
		d[i] = v - snap[i];
		snap[i] = v;
	}
	for (i = 0; i < IBTRS_HIST_BUCKETS; i++) {
		if (reset)
			d[i] = snap[i];
		total += d[i];
	}
	*n = total;
	if (!total)
		return 0;
	want = (uint64_t)(q * (double)total + 0.5);
	if (want < 1)
		want = 1;
	for (i = 0; i < IBTRS_HIST_BUCKETS; i++) {
		seen += d[i];
		if (seen >= want)
			break;
	}
	if (i >= IBTRS_HIST_BUCKETS - 1)
		return ibtrs_hist_bucket_low(IBTRS_HIST_BUCKETS - 1);
	return ibtrs_hist_bucket_low(i) +
	       (ibtrs_hist_bucket_low(i + 1) - ibtrs_hist_bucket_low(i)) / 2;
}
