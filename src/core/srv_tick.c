// SPDX-License-Identifier: MIT
/*
 * srv_tick.c - the tick of each of the context's loops: the heartbeats of
 * the paths it runs, the close of silent ones, the end of sessions whose
 * client did not come back within their grace, and on the context's loop
 * the handshakes past their deadline (srv_hs.c).
 */
#include <stdatomic.h>

#include "log.h"
#include "srv_int.h"

/*
 * The heartbeat of one path, the loop @late_ns late; true if it is silent
 * even after its receive side was drained (hb.h). Acts on nothing but the
 * heartbeat to send: srv_tick() decides on silent paths.
 */
static bool srv_tick_path(struct srv_path *path, uint64_t now, uint64_t late_ns)
{
	struct ibtrs_srv_ctx *ctx = path->sess->ctx;
	bool may_send = path->connected && path->cons[0];
	char why[64];
	enum ibtrs_hb_action a;
	unsigned int i;

	ibtrs_hb_credit(now, late_ns, &path->last_rx_ns);
	a = ibtrs_hb_tick(&ctx->hb, now, path->last_rx_ns, &path->last_hb_tx_ns,
			  may_send, why, sizeof(why));
	if (a == IBTRS_HB_DEAD) {
		for (i = 0; i < path->nr_cons; i++)
			if (path->cons[i] && path->cons[i]->xcon)
				ctx->ops->drain(path->cons[i]->xcon);
		a = ibtrs_hb_tick(&ctx->hb, now, path->last_rx_ns,
				  &path->last_hb_tx_ns, may_send, why,
				  sizeof(why));
	}
	switch (a) {
	case IBTRS_HB_DEAD:
		return true;
	case IBTRS_HB_SEND:
		ctx->ops->post_write(path->cons[0]->xcon, NULL, 0, 0, 0,
				     ibtrs_imm_hb(IBTRS_IMM_HB), 0,
				     IBTRS_XPRT_IMM);
		return false;
	case IBTRS_HB_NONE:
		return false;
	}
	return false;
}

/* Close the paths still silent: their verdict stands (srv_tick()). */
static void srv_close_silent(struct srv_loop *sl, uint64_t now)
{
	struct ibtrs_srv_ctx *ctx = sl->ctx;
	struct ibtrs_srv *sess, *next_sess;
	struct srv_path *path, *next_path;
	char why[64];
	uint64_t tx;

	for (sess = sl->sessions; sess; sess = next_sess) {
		next_sess = sess->loop_next;
		for (path = sess->paths; path; path = next_path) {
			next_path = path->next;
			tx = path->last_hb_tx_ns;
			if (ibtrs_hb_tick(&ctx->hb, now, path->last_rx_ns, &tx,
					  false, why,
					  sizeof(why)) == IBTRS_HB_DEAD)
				srv_path_close(path, why);
		}
	}
}

/*
 * The tick of one loop, for the sessions it runs (and on the context's
 * loop for the handshakes): each loop judges its own lateness.
 */
void srv_tick(void *arg)
{
	struct srv_loop *sl = arg;
	struct ibtrs_srv_ctx *ctx = sl->ctx;
	uint64_t now = ibtrs_now_ns();
	uint64_t late = ibtrs_loop_tick_late_ns();
	struct ibtrs_srv *sess, *next_sess;
	unsigned int alive = 0, silent = 0;

	for (sess = sl->sessions; sess; sess = sess->loop_next) {
		struct srv_path *path;

		for (path = sess->paths; path; path = path->next) {
			alive++;
			silent += srv_tick_path(path, now, late);
		}
	}
	/* Every path silent on the same tick: more likely this host stalled
	 * than every client failed at once; one more tick to tell (hb.h). */
	if (!sl->idx)
		srv_tick_handshakes(ctx, now);
	if (ibtrs_hb_hold(alive, silent, &sl->hb_held))
		ibtrs_log(
			IBTRS_LOG_WARN,
			"all %u paths silent at once: a local stall? checked again next tick",
			silent);
	else if (silent)
		srv_close_silent(sl, now);
	for (sess = sl->sessions; sess; sess = next_sess) {
		next_sess = sess->loop_next;
		/* An end may free the session at once, which takes it off
		 * the list; next_sess is still valid. */
		if (!sess->dying && !sess->nr_paths && sess->grace_until &&
		    now >= sess->grace_until) {
			ibtrs_log(IBTRS_LOG_INFO,
				  "session %s: client did not come back",
				  sess->sessname);
			srv_sess_end(sess);
		}
	}
}
