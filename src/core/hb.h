/* SPDX-License-Identifier: MIT */
/*
 * hb.h - the heartbeat rule both sides of a path follow: from one
 * timeout, how often to tick, how often to send a heartbeat, and when
 * silence means the peer is gone.
 */
#ifndef IBTRS_HB_H
#define IBTRS_HB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ibtrs_hb {
	uint64_t timeout_ns;  /* silence longer than this: dead */
	uint64_t interval_ns; /* a heartbeat at least this often */
	uint64_t tick_ns;     /* the loop's tick that checks the above */
};

/*
 * Derive the heartbeat times from @timeout_ms: a heartbeat every quarter
 * of it, checked every tenth of it, so that a silent path is found dead
 * within the timeout, tick included.
 */
void ibtrs_hb_init(struct ibtrs_hb *hb, unsigned int timeout_ms);

enum ibtrs_hb_action {
	IBTRS_HB_NONE, /* nothing to do this tick */
	IBTRS_HB_SEND, /* send a heartbeat now */
	IBTRS_HB_DEAD, /* the peer has been silent too long */
};

/*
 * The tick of one path at @now. DEAD when nothing was received since
 * @last_rx_ns for longer than the timeout (one tick of slack counted):
 * @why then holds the reason ("heartbeat timeout: nothing received for N
 * ms"). Otherwise SEND when @may_send and a heartbeat interval passed
 * since *@last_tx_ns, which is set to @now; else NONE.
 */
enum ibtrs_hb_action ibtrs_hb_tick(const struct ibtrs_hb *hb, uint64_t now,
				   uint64_t last_rx_ns, uint64_t *last_tx_ns,
				   bool may_send, char *why, size_t why_len);

/*
 * No false verdicts. Silence is evidence against the peer only for time
 * in which this side could have heard it:
 *  - time the local loop did not run is not silence: @late_ns, how late
 *    the tick now running came (ibtrs_loop_tick_late_ns()), moves
 *    *@last_rx_ns forward by as much (never past @now). Call it each tick
 *    before ibtrs_hb_tick();
 *  - a DEAD verdict is first checked against the receive side: the caller
 *    drains what is already in its sockets or completion queues
 *    (ibtrs_xprt_ops.drain) and asks ibtrs_hb_tick() again;
 *  - when every live path of one loop is found silent on the same tick,
 *    the cause is more likely this host than all the peers at once:
 *    ibtrs_hb_hold() holds the verdicts for one more tick.
 * TCP_USER_TIMEOUT stays the kernel's backstop under all of this.
 */
void ibtrs_hb_credit(uint64_t now, uint64_t late_ns, uint64_t *last_rx_ns);

/*
 * After the verdicts of one tick: @silent of the @alive paths of a loop
 * were found DEAD. True if the caller must hold them back this tick: all
 * of them at once (and at least one), for the first tick in a row, which
 * *@held remembers. False (act on them) otherwise; *@held is then clear.
 */
bool ibtrs_hb_hold(unsigned int alive, unsigned int silent, bool *held);

#endif /* IBTRS_HB_H */
