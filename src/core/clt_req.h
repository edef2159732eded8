/* SPDX-License-Identifier: MIT */
/*
 * clt_req.h - the client request's lifecycle, owned by clt_req.c from
 * submission to completion: post, send completion, response, failover,
 * reroute, parking and expiry, delayed responses, claim and completion.
 *
 * The states and who moves a request between them:
 *
 *   FREE     -> INFLIGHT  post (ibtrs_clt_request())
 *   INFLIGHT -> SENT      the send completed first (any thread)
 *   INFLIGHT -> ANSWERED  the response came first (loop thread)
 *   INFLIGHT -> CLAIMED   taken by a failover, or a replay's post failed
 *   INFLIGHT -> FREE      the first post failed: the caller gets the error
 *   SENT     -> CLAIMED   taken by the response, or by a failover
 *   ANSWERED -> DONE      the send completed second: completion queued
 *   ANSWERED -> CLAIMED   taken by a failover (only the send was lost)
 *   DONE     -> CLAIMED   taken by the queued completion, or a failover
 *   CLAIMED  -> FREE      completed: the callback may submit it again
 *   CLAIMED  -> INFLIGHT  replayed on another path
 *   CLAIMED  -> PENDING   parked until a path comes back
 *   PENDING  -> CLAIMED   taken off the parked list (replay or failure)
 *
 * Every change goes through clt_req_change(), a compare-and-swap from the
 * state its caller saw. Whoever moves a request into CLAIMED (the
 * response, the queued completion, a failover through clt_req_claim(),
 * or the taking of a parked one) is its only owner until it leaves
 * CLAIMED, which makes the race between a response, a send completion
 * and a failover safe without a lock: exactly one of them wins the swap.
 *
 * Where each state is left: FREE by the post; INFLIGHT by the send
 * completion, the response or a claim (the racers), or by the post
 * itself when it fails; SENT by the response or a claim; ANSWERED by the
 * send completion or a claim; DONE by the queued completion or a claim;
 * CLAIMED by the completion, a replay's post or the parking; PENDING by
 * the taking off the list.
 */
#ifndef IBTRS_CLT_REQ_H
#define IBTRS_CLT_REQ_H

#include <stdbool.h>
#include <stdint.h>

enum clt_req_state {
	CLT_REQ_FREE,	  /* not submitted, or completed */
	CLT_REQ_INFLIGHT, /* posted on req->path; neither sent nor answered */
	CLT_REQ_SENT,	  /* the send left: the caller's buffers are free */
	CLT_REQ_ANSWERED, /* the response arrived, the send not yet done */
	CLT_REQ_DONE,	  /* both: its completion is queued on the loop */
	CLT_REQ_CLAIMED,  /* owned by one completer on the loop thread */
	CLT_REQ_PENDING,  /* its path died, none other: on sess->pending */
	CLT_REQ_NR_STATES
};

/* Whether the table above allows @from -> @to. */
bool clt_req_transition_ok(enum clt_req_state from, enum clt_req_state to);
const char *clt_req_state_str(enum clt_req_state s);

struct clt_req;
struct iovec;
struct clt_con;
struct clt_path;
struct ibtrs_clt;

enum clt_req_state clt_req_state(const struct clt_req *req);
/*
 * The one setter: move @req from *@from to @to. -EINVAL (and a log line)
 * for a transition the table refuses; -EAGAIN when the request was not in
 * *@from any more (another thread won), *@from then holds its state.
 */
int clt_req_change(struct clt_req *req, enum clt_req_state *from,
		   enum clt_req_state to);
/*
 * Take a request on its way (INFLIGHT, SENT, ANSWERED or DONE) into
 * CLAIMED; returns the state it was taken from, or CLT_REQ_FREE when it
 * was not on its way (someone else took it).
 */
enum clt_req_state clt_req_claim(struct clt_req *req);

/* clt_set_geometry(): request @i of @sess, its iovec array @sg. */
void clt_req_init(struct ibtrs_clt *sess, struct clt_req *req, uint32_t i,
		  struct iovec *sg);
/* Post @req on @path (connected; path->lock held unless loop thread). */
int clt_req_post(struct clt_path *path, struct clt_req *req);
/* Any thread: the send of work request @wr_id completed without error. */
void clt_req_sent(struct ibtrs_clt *sess, uint64_t wr_id);
/*
 * Loop thread: the response @imm arrived on @con. NULL, or the protocol
 * error it shows (the path's to handle).
 */
const char *clt_req_response(struct clt_con *con, uint32_t imm);
/* Loop thread: move the requests of @path, which went down. */
void clt_req_failover(struct clt_path *path);
/* Loop thread: replay the parked requests on the paths now connected. */
void clt_req_resubmit_pending(struct ibtrs_clt *sess);
/* Loop thread: fail every parked request with @err. */
void clt_fail_pending(struct ibtrs_clt *sess, int err);
/* Loop thread: release held responses and expire parked requests. */
void clt_req_tick(struct ibtrs_clt *sess, uint64_t now);

#endif /* IBTRS_CLT_REQ_H */
