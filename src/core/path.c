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

int ibtrs_policy_select(int policy, const struct ibtrs_policy_path *paths,
			unsigned int n, unsigned int *cursor)
{
	unsigned int i, start = *cursor;
	int best = -1;

	*cursor = start + 1;
	for (i = 0; i < n; i++) {
		unsigned int idx = (start + i) % n;
		const struct ibtrs_policy_path *p = &paths[idx];

		if (!p->usable)
			continue;
		if (policy == IBTRS_MP_ROUND_ROBIN)
			return (int)idx;
		if (best < 0) {
			best = (int)idx;
			continue;
		}
		if (policy == IBTRS_MP_MIN_LATENCY) {
			/* An unmeasured path counts as slowest. */
			uint64_t a = p->rtt_ns ? p->rtt_ns : UINT64_MAX;
			uint64_t b = paths[best].rtt_ns ? paths[best].rtt_ns
							: UINT64_MAX;

			if (a < b ||
			    (a == b && p->inflight < paths[best].inflight))
				best = (int)idx;
		} else if (p->inflight < paths[best].inflight) {
			best = (int)idx;
		}
	}
	return best;
}
