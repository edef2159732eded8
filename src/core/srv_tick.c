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

/* The heartbeat of @path is due: send it. */
static void srv_send_hb(struct srv_path *path)
{
	path->sess->ctx->ops->post_write(path->cons[0]->xcon, NULL, 0, 0, 0,
					 ibtrs_imm_hb(IBTRS_IMM_HB), 0,
					 IBTRS_XPRT_IMM);
}

/*
 * The heartbeat of one path, the loop @late_ns late: sends the one that is
 * due; true if the path looks silent. It is then a suspect, drained
 * before the verdict (srv_drain_suspects()), never here: what a drain
 * delivers may close the path and free it.
 */
static bool srv_tick_path(struct srv_path *path, uint64_t now, uint64_t late_ns)
{
	struct ibtrs_srv_ctx *ctx = path->sess->ctx;
	bool may_send = path->connected && path->cons[0];
	char why[64];

	ibtrs_hb_credit(now, late_ns, &path->last_rx_ns);
	switch (ibtrs_hb_tick(&ctx->hb, now, path->last_rx_ns,
			      &path->last_hb_tx_ns, may_send, why,
			      sizeof(why))) {
	case IBTRS_HB_DEAD:
		path->suspect = true;
		path->drain_next = 0;
		return true;
	case IBTRS_HB_SEND:
		srv_send_hb(path);
		return false;
	case IBTRS_HB_NONE:
		return false;
	}
	return false;
}

/*
 * Deliver what already arrived on the connections of @sess's suspect
 * paths (hb.h), one connection at a time. What a drain delivers (an
 * error, the client's CLOSE, a protocol error) may close any path of the
 * session and free it, so no path is held across a drain: the list is
 * walked again after each. Each turn drains one connection or finishes a
 * path, so this ends. The caller holds a reference on @sess.
 */
static void srv_drain_suspects(struct ibtrs_srv *sess)
{
	struct srv_path *path;

again:
	for (path = sess->paths; path; path = path->next) {
		struct srv_con *con;

		if (!path->suspect || path->drain_next >= path->nr_cons)
			continue;
		con = path->cons[path->drain_next++];
		if (con && con->xcon)
			sess->ctx->ops->drain(con->xcon);
		goto again;
	}
}

/*
 * The suspects of the loop's sessions, drained; the number of those still
 * silent after it, their verdict for srv_tick(). A heartbeat that became
 * due is sent.
 */
static unsigned int srv_judge_suspects(struct srv_loop *sl, uint64_t now)
{
	struct ibtrs_srv_ctx *ctx = sl->ctx;
	struct ibtrs_srv *sess, *next_sess;
	struct srv_path *path;
	unsigned int silent = 0;
	char why[64];

	for (sess = sl->sessions; sess; sess = next_sess) {
		/* Held: the drains may end it. Only its own paths can
		 * close, so the next session stays. */
		atomic_fetch_add(&sess->refs, 1);
		srv_drain_suspects(sess);
		for (path = sess->paths; path; path = path->next) {
			if (!path->suspect)
				continue;
			path->suspect = false;
			switch (ibtrs_hb_tick(&ctx->hb, now, path->last_rx_ns,
					      &path->last_hb_tx_ns,
					      path->connected && path->cons[0],
					      why, sizeof(why))) {
			case IBTRS_HB_DEAD:
				silent++;
				break;
			case IBTRS_HB_SEND:
				srv_send_hb(path);
				break;
			case IBTRS_HB_NONE:
				break;
			}
		}
		next_sess = sess->loop_next;
		srv_sess_put(sess);
	}
	return silent;
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
	if (silent)
		silent = srv_judge_suspects(sl, now);
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
