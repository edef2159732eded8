// SPDX-License-Identifier: MIT
/*
 * hb.c - the heartbeat rule shared by the client and the server paths.
 */
#include <stdio.h>

#include "hb.h"

void ibtrs_hb_init(struct ibtrs_hb *hb, unsigned int timeout_ms)
{
	hb->timeout_ns = (uint64_t)timeout_ms * 1000000;
	hb->interval_ns = hb->timeout_ns / 4;
	hb->tick_ns = hb->timeout_ns / 10;
}

enum ibtrs_hb_action ibtrs_hb_tick(const struct ibtrs_hb *hb, uint64_t now,
				   uint64_t last_rx_ns, uint64_t *last_tx_ns,
				   bool may_send, char *why, size_t why_len)
{
	/* The next tick may come a tick late: count it now. */
	if (now - last_rx_ns + hb->tick_ns > hb->timeout_ns) {
		snprintf(why, why_len,
			 "heartbeat timeout: nothing received for %llu ms",
			 (unsigned long long)(now - last_rx_ns) / 1000000);
		return IBTRS_HB_DEAD;
	}
	if (!may_send || now - *last_tx_ns < hb->interval_ns)
		return IBTRS_HB_NONE;
	*last_tx_ns = now;
	return IBTRS_HB_SEND;
}

void ibtrs_hb_credit(uint64_t now, uint64_t late_ns, uint64_t *last_rx_ns)
{
	if (*last_rx_ns >= now)
		return;
	if (late_ns > now - *last_rx_ns)
		late_ns = now - *last_rx_ns;
	*last_rx_ns += late_ns;
}

bool ibtrs_hb_hold(unsigned int alive, unsigned int silent, bool *held)
{
	if (!silent || silent < alive || *held) {
		*held = false;
		return false;
	}
	*held = true;
	return true;
}
