/* SPDX-License-Identifier: MIT */
/*
 * path.h - the client path state machine and the multipath policies, kept
 * free of session state so that unit tests can drive them directly.
 */
#ifndef IBTRS_PATH_H
#define IBTRS_PATH_H

#include <stdbool.h>
#include <stdint.h>

#include "ibtrs.h"

/*
 * Allowed transitions (every other pair is refused):
 *   CLOSED       -> CONNECTING   (open, add, manual reconnect)
 *   CONNECTING   -> CONNECTED    (handshake done)
 *   CONNECTING   -> RECONNECTING (connect failed, will retry)
 *   CONNECTING   -> CLOSED       (connect failed, no retries left)
 *   CONNECTING   -> CLOSING      (session close or path removal)
 *   CONNECTED    -> RECONNECTING (failure, will retry)
 *   CONNECTED    -> CLOSING      (disconnect, removal, session close)
 *   CONNECTED    -> CLOSED       (failure, reconnect disabled)
 *   RECONNECTING -> CONNECTING   (retry due)
 *   RECONNECTING -> CLOSING      (session close, removal, disconnect)
 *   RECONNECTING -> CLOSED       (retries exhausted)
 *   CLOSING      -> CLOSED       (connections gone)
 *   CLOSED       -> RECONNECTING (manual reconnect failed, will retry)
 *   CLOSED       -> DEAD         (removed)
 */
bool ibtrs_path_transition_ok(enum ibtrs_path_state from,
			      enum ibtrs_path_state to);

#define IBTRS_PATH_NR_STATES (IBTRS_PATH_DEAD + 1)

/* What a policy knows of one path. */
struct ibtrs_policy_path {
	bool usable; /* connected and not excluded */
	uint64_t inflight;
	uint64_t rtt_ns; /* 0: unknown */
	bool demoted;	 /* gray: no new requests while others are usable */
	bool in_band; /* min-latency: among the fastest (ibtrs_policy_band) */
	/* What a request costs on it per request in flight, measured from
	 * completions (median latency over mean in flight); 0: unknown. */
	uint64_t cost_ns;
};

/*
 * Round robin skips a path with more than twice the fewest requests in
 * flight (of the paths it could choose) plus this many, for the one with
 * the fewest: a slow path's
 * queue stays bounded instead of holding most of the session's tags.
 */
#define IBTRS_POLICY_RR_SLACK 2u

/*
 * A demoted path still gets one request in this many while healthy paths
 * are usable: its probes, which measure it for re-admission. At most
 * IBTRS_POLICY_PROBE_INFLIGHT of them are in flight on it at once: a
 * share of the requests would let a path far slower than the others hold
 * most of the session's tags (each probe holds its tag as long as the
 * path is slow), which is what demotion is to prevent.
 */
#define IBTRS_POLICY_PROBE_EVERY 256u
#define IBTRS_POLICY_PROBE_INFLIGHT 1u

/*
 * Choose a path among @n by @policy; @cursor is the round-robin position,
 * advanced on each call. Returns the index, or -1 if none is usable.
 *
 * Demoted paths are left out while a usable path is not demoted, except
 * for one call in IBTRS_POLICY_PROBE_EVERY (by @cursor), which chooses
 * among the demoted ones with fewer than IBTRS_POLICY_PROBE_INFLIGHT
 * requests in flight (if none has, the call chooses as the others); with
 * only demoted paths usable they are chosen as any. Round robin takes the paths
 * in turn but skips one whose requests in flight are above twice the fewest
 * plus IBTRS_POLICY_RR_SLACK, taking the path with the fewest instead.
 * Min-latency chooses, among the paths of the band (in_band; all
 * paths with the lowest known RTT if none is), the one with the fewest
 * requests in flight, so that paths of about the same latency share the
 * load; a path outside the band is chosen instead when its expected delay,
 * (inflight + 1) * cost_ns, is below that of the band's choice (both costs
 * known), so that a slower path takes the overflow of a loaded fast one
 * but never a queue longer than its worth.
 */
int ibtrs_policy_select(int policy, const struct ibtrs_policy_path *paths,
			unsigned int n, unsigned int *cursor);

/*
 * Min-latency hysteresis: set paths[i].in_band for the usable paths of
 * @n whose measure is close to the lowest: a path joins the band within
 * min * 5/4 + 20 us and leaves it only beyond min * 3/2 + 50 us, so that
 * measures moving by a few microseconds do not swing the traffic from
 * path to path. The measure is cost_ns once a usable path has one (a
 * heartbeat waits behind the data queued on its connection: a loaded
 * fast path's RTT is above an idle slow one's); a usable path without a
 * cost is then in the band, so that a path new or never chosen gets
 * requests, hence a cost. Before any cost, rtt_ns, and a path without
 * an RTT is not in the band. An unusable path is never in it. Returns
 * the paths in the band.
 */
unsigned int ibtrs_policy_band(struct ibtrs_policy_path *paths, unsigned int n);

/* The per-path latency histogram (struct ibtrs_hist) lives in hist.h. */
#include "hist.h"

/*
 * Value at quantile @q of what was added to @h since the last call with
 * the same @snap (IBTRS_HIST_BUCKETS counters, zero at first), which is
 * then brought up to date; *@n gets the number of values. A reset of @h
 * in between counts as a new start.
 */
uint64_t ibtrs_hist_window(const struct ibtrs_hist *h, uint64_t *snap, double q,
			   uint64_t *n);

#endif /* IBTRS_PATH_H */
