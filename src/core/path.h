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
};

/*
 * Choose a path among @n by @policy; @cursor is the round-robin position,
 * advanced on each call. Returns the index, or -1 if none is usable.
 */
int ibtrs_policy_select(int policy, const struct ibtrs_policy_path *paths,
			unsigned int n, unsigned int *cursor);

/* The per-path latency histogram (struct ibtrs_hist) lives in hist.h. */
#include "hist.h"

#endif /* IBTRS_PATH_H */
