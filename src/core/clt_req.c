// SPDX-License-Identifier: MIT
/*
 * clt_req.c - the client request from submission to completion (the
 * states and their transitions are in clt_req.h).
 *
 * A request completes once both its send has left (the caller's buffers
 * are free again) and its response has arrived; whichever comes second
 * completes it, always on the loop thread. When its path dies first, the
 * request moves to another path with the same tag and generation, so the
 * server can tell a replay from a new request (docs/protocol.md).
 *
 * Of a path this file reads only its state, connections, remote buffers
 * and counters (clt_int.h), and asks the fault hook; it chooses the path of a
 * request itself (clt_select_path()). The path lifecycle (clt_path.c)
 * calls in here, never the other way.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/uio.h>

#include "clt_int.h"
#include "log.h"

#define RS(x) (1u << CLT_REQ_##x)

/* allowed[from] = set of states reachable from @from (clt_req.h). */
static const unsigned int allowed[CLT_REQ_NR_STATES] = {
	[CLT_REQ_FREE] = RS(INFLIGHT),
	[CLT_REQ_INFLIGHT] = RS(SENT) | RS(ANSWERED) | RS(CLAIMED) | RS(FREE),
	[CLT_REQ_SENT] = RS(CLAIMED),
	[CLT_REQ_ANSWERED] = RS(DONE) | RS(CLAIMED),
	[CLT_REQ_DONE] = RS(CLAIMED),
	[CLT_REQ_CLAIMED] = RS(FREE) | RS(INFLIGHT) | RS(PENDING),
	[CLT_REQ_PENDING] = RS(CLAIMED),
};

bool clt_req_transition_ok(enum clt_req_state from, enum clt_req_state to)
{
	if ((unsigned int)from >= CLT_REQ_NR_STATES ||
	    (unsigned int)to >= CLT_REQ_NR_STATES)
		return false;
	return allowed[from] & (1u << to);
}

const char *clt_req_state_str(enum clt_req_state s)
{
	static const char *const names[CLT_REQ_NR_STATES] = {
		[CLT_REQ_FREE] = "free",       [CLT_REQ_INFLIGHT] = "inflight",
		[CLT_REQ_SENT] = "sent",       [CLT_REQ_ANSWERED] = "answered",
		[CLT_REQ_DONE] = "done",       [CLT_REQ_CLAIMED] = "claimed",
		[CLT_REQ_PENDING] = "pending",
	};

	return (unsigned int)s < CLT_REQ_NR_STATES ? names[s] : "unknown";
}

enum clt_req_state clt_req_state(const struct clt_req *req)
{
	return (enum clt_req_state)atomic_load(&req->state);
}

/*
 * The only place req->state changes. A compare-and-swap from the state the
 * caller saw: the response (loop thread), the send completion (any thread)
 * and a failover (loop thread) race for a request, and the swap lets one
 * win. Sequentially consistent: whoever sees the new state sees what was
 * written before it (post: the request's fields; claim: its answer).
 */
int clt_req_change(struct clt_req *req, enum clt_req_state *from,
		   enum clt_req_state to)
{
	int expected = (int)*from;

	if (!clt_req_transition_ok(*from, to)) {
		ibtrs_log_rl(IBTRS_LOG_ERR,
			     "session %s: request %u: refused %s -> %s",
			     req->sess ? req->sess->sessname : "?", req->mem_id,
			     clt_req_state_str(*from), clt_req_state_str(to));
		return -EINVAL;
	}
	if (atomic_compare_exchange_strong(&req->state, &expected, (int)to))
		return 0;
	*from = (enum clt_req_state)expected;
	return -EAGAIN;
}

enum clt_req_state clt_req_claim(struct clt_req *req)
{
	enum clt_req_state s = clt_req_state(req);

	for (;;) {
		if (s != CLT_REQ_INFLIGHT && s != CLT_REQ_SENT &&
		    s != CLT_REQ_ANSWERED && s != CLT_REQ_DONE)
			return CLT_REQ_FREE;
		if (!clt_req_change(req, &s, CLT_REQ_CLAIMED))
			return s;
	}
}

/* Release the READ destination mapped for the last post, if any. */
static void req_unmap(struct clt_req *req, bool sync)
{
	if (!req->mr_mapped)
		return;
	if (sync)
		req->sess->ops->mr_sync(req->mr);
	req->sess->ops->mr_unmap(req->mr);
	req->mr_mapped = false;
}

/* ------------------------------------------------------------------ */
/* completion                                                           */

/*
 * Loop thread, request claimed: the one way out of CLAIMED to FREE. The
 * request is free before its callback runs, which may submit it again.
 */
static void req_complete(struct clt_req *req, int err)
{
	enum clt_req_state s = CLT_REQ_CLAIMED;
	struct clt_path *path = req->path;
	ibtrs_conf_fn *conf = req->conf;
	void *priv = req->priv;

	req_unmap(req, !err);
	if (path) {
		/* The time the loop woke up for this batch: when the answer
		 * was taken in. A request posted during the batch (from
		 * another thread, or from a completion of this batch, which
		 * then starts at the batch's time) can be answered in it:
		 * then read the clock, or it would count 0 ns. */
		uint64_t now = ibtrs_loop_now_ns(req->sess->loop);

		if (now <= req->start_ns)
			now = ibtrs_now_ns();
		/* The loop thread is the only writer of these. */
		if (err) {
			ibtrs_counter_add(&path->errors, 1);
		} else if (req->dir == IBTRS_READ) {
			ibtrs_counter_add(&path->rd_ops, 1);
			ibtrs_counter_add(&path->rd_bytes, req->data_len);
		} else {
			ibtrs_counter_add(&path->wr_ops, 1);
			ibtrs_counter_add(&path->wr_bytes, req->data_len);
		}
		ibtrs_hist_add(&path->hist, now - req->start_ns);
	}
	if (clt_req_change(req, &s, CLT_REQ_FREE))
		return;
	conf(priv, err);
}

/* Loop thread: the send completed second (clt_req_sent()). */
static void req_done_work(struct ibtrs_work *w)
{
	struct clt_req *req = container_of(w, struct clt_req, done_work);
	enum clt_req_state s = CLT_REQ_DONE;

	if (!clt_req_change(req, &s, CLT_REQ_CLAIMED)) {
		atomic_fetch_sub(&req->path->inflight, 1);
		req_complete(req, req->rsp_err);
	}
}

void clt_req_init(struct ibtrs_clt *sess, struct clt_req *req, uint32_t i,
		  struct iovec *sg)
{
	req->sess = sess;
	req->mem_id = i;
	req->sg = sg;
	req->done_work.fn = req_done_work;
	atomic_init(&req->state, CLT_REQ_FREE);
}

/* ------------------------------------------------------------------ */
/* path selection                                                       */

/* Choose a connected path by the session's policy; -1 if none. */
int clt_select_path(struct ibtrs_clt *sess, const struct clt_path *exclude)
{
	struct ibtrs_policy_path pp[IBTRS_MAX_PATHS];
	unsigned int i, n = atomic_load(&sess->path_cnt), cursor;

	for (i = 0; i < n; i++) {
		struct clt_path *p = sess->paths[i];

		pp[i].usable = p != exclude &&
			       atomic_load(&p->state) == IBTRS_PATH_CONNECTED;
		pp[i].inflight = atomic_load_explicit(&p->inflight,
						      memory_order_relaxed);
		pp[i].rtt_ns = atomic_load_explicit(&p->hb_rtt_ns,
						    memory_order_relaxed);
		pp[i].demoted =
			atomic_load_explicit(&p->demoted, memory_order_relaxed);
		pp[i].in_band = atomic_load_explicit(&p->lat_band,
						     memory_order_relaxed);
		pp[i].cost_ns = atomic_load_explicit(&p->lat_cost_ns,
						     memory_order_relaxed);
	}
	/* Round robin need not be exact: two submitters racing here may
	 * take the same turn, which costs less than a locked add on every
	 * request. */
	cursor = atomic_load_explicit(&sess->rr, memory_order_relaxed);
	atomic_store_explicit(&sess->rr, cursor + 1, memory_order_relaxed);
	return ibtrs_policy_select(atomic_load(&sess->policy), pp, n, &cursor);
}

/* Can any path of the session still carry requests, now or later? */
bool clt_sess_has_hope(struct ibtrs_clt *sess)
{
	unsigned int i, n = atomic_load(&sess->path_cnt);

	for (i = 0; i < n; i++) {
		int st = atomic_load(&sess->paths[i]->state);

		if (st == IBTRS_PATH_CONNECTED || st == IBTRS_PATH_CONNECTING ||
		    st == IBTRS_PATH_RECONNECTING)
			return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* submission                                                           */

static struct clt_con *pick_con(struct clt_path *path,
				enum ibtrs_clt_con_type type)
{
	int cpu;

	if (type == IBTRS_USR_CON || path->con_num == 1)
		return &path->cons[0];
	if (path->con_num == 2) /* one I/O connection: no CPU to ask */
		return &path->cons[1];
	cpu = sched_getcpu();
	if (cpu < 0)
		cpu = 0;
	return &path->cons[1 + (unsigned int)cpu % (path->con_num - 1)];
}

/*
 * A READ whose one destination iovec lies in registered memory is
 * answered straight into it: the region's key, at the iovec's offset.
 * No lock: the table is read under its sequence count, and read again if
 * a registration changed it meanwhile.
 */
static bool mem_desc(struct ibtrs_clt *sess, struct clt_req *req,
		     struct ibtrs_desc *desc)
{
	uintptr_t base = (uintptr_t)req->sg[0].iov_base;
	unsigned int seq, i, n;
	bool found;

	if (req->sg_cnt != 1 ||
	    !atomic_load_explicit(&sess->nr_mems, memory_order_relaxed))
		return false;
	do {
		seq = ibtrs_seq_read_begin(&sess->mem_seq);
		n = atomic_load_explicit(&sess->nr_mems, memory_order_relaxed);
		found = false;
		for (i = 0; i < n && i < IBTRS_MAX_MEM_REGS; i++) {
			const struct clt_mem_ent *e = &sess->mem_tab[i];
			uintptr_t a = atomic_load_explicit(
				&e->addr, memory_order_relaxed);
			size_t len = atomic_load_explicit(&e->len,
							  memory_order_relaxed);

			if (base >= a && req->data_len <= len &&
			    base - a <= len - req->data_len) {
				desc->addr = atomic_load_explicit(
						     &e->raddr,
						     memory_order_relaxed) +
					     (base - a);
				desc->key = atomic_load_explicit(
					&e->key, memory_order_relaxed);
				found = true;
				break;
			}
		}
	} while (ibtrs_seq_read_retry(&sess->mem_seq, seq));
	return found;
}

/*
 * Post @req on @path; path connected, path->lock held for reading unless
 * on the loop thread. Every post of one request, replays after a failover
 * included, carries the same generation, so that the server recognises a
 * replay.
 */
int clt_req_post(struct clt_path *path, struct clt_req *req)
{
	enum clt_req_state from = clt_req_state(req), s;
	struct ibtrs_clt *sess = path->sess;
	const struct ibtrs_desc *rbuf = &path->rbufs[req->mem_id];
	struct iovec iov[CLT_MAX_SEGMENTS + 1];
	struct ibtrs_req_trailer t = {
		.dir = req->dir,
		.usr_len = (uint16_t)req->usr_len,
	};
	struct clt_con *con = pick_con(path, req->con_type);
	unsigned int cnt = 0, flags = IBTRS_XPRT_IMM | IBTRS_XPRT_SIGNALED;
	uint64_t raddr = rbuf->addr;
	uint32_t imm;
	bool was_posted;
	int ret;

	if (req->epoch != path->epoch) {
		/* A path still on a server session that was lost. */
		if ((int32_t)(req->epoch - path->epoch) > 0)
			return -ENOTCONN;
		/* The tag's first request in this server session: every tag
		 * of a new session starts at generation 0 there. */
		req->epoch = path->epoch;
		req->gen = 1;
	}
	t.gen = req->gen;
	if (req->dir == IBTRS_READ && req->data_len) {
		if (!mem_desc(sess, req, &t.desc)) {
			ret = sess->ops->mr_map(req->mr, req->sg, req->sg_cnt);
			if (ret)
				return ret;
			req->mr_mapped = true;
			t.desc.addr = req->mr->addr;
			t.desc.key = req->mr->key;
		}
		t.desc.len = req->data_len;
	}
	ibtrs_trailer_encode((struct ibtrs_trailer *)(req->hdr + req->usr_len),
			     &t);
	if (req->dir == IBTRS_WRITE) {
		memcpy(iov, req->sg, req->sg_cnt * sizeof(*iov));
		cnt = req->sg_cnt;
	} else {
		raddr += req->data_len;
	}
	iov[cnt].iov_base = req->hdr;
	iov[cnt].iov_len = req->usr_len + sizeof(struct ibtrs_trailer);
	cnt++;
	imm = ibtrs_imm_req(req->mem_id, req->data_len + req->usr_len,
			    sess->off_bits);

	was_posted = req->posted;
	req->path = path;
	req->con = con;
	req->posted = true;
	/* With others in flight on the path, their completions are due and
	 * more requests are likely to follow: the backend may gather this one
	 * with them. Alone, it leaves at once. */
	if (atomic_fetch_add(&path->inflight, 1))
		flags |= IBTRS_XPRT_LAZY;
	/* Whoever sees INFLIGHT sees the fields set above. */
	s = from;
	if (clt_req_change(req, &s, CLT_REQ_INFLIGHT)) {
		atomic_fetch_sub(&path->inflight, 1);
		req->posted = was_posted;
		req_unmap(req, false);
		return -EINVAL;
	}
	/* A dropping path swallows the request, as a dead link would. */
	if (clt_fault_hit(path, CLT_FAULT_POST, NULL))
		return 0;
	ret = sess->ops->post_write(con->xcon, iov, cnt, raddr, rbuf->key, imm,
				    ((uint64_t)req->gen << 32) | req->mem_id,
				    flags);
	if (ret) {
		/* Not sent: back to its owner, the submitter or the replay.
		 * A response for its chunk may have come meanwhile (from a
		 * server answering what it never got; the loop thread took it
		 * while this thread posted): the request did not leave, the
		 * answer goes with it. Else the submitter, told it was not
		 * sent, and the answer's completion both had it. */
		req->posted = was_posted;
		s = CLT_REQ_INFLIGHT;
		if (clt_req_change(req, &s, from) && s == CLT_REQ_ANSWERED &&
		    !clt_req_change(req, &s, CLT_REQ_CLAIMED) &&
		    from != CLT_REQ_CLAIMED) {
			s = CLT_REQ_CLAIMED;
			clt_req_change(req, &s, from);
		}
		atomic_fetch_sub(&path->inflight, 1);
		req_unmap(req, false);
	}
	return ret;
}

static void req_reroute(struct ibtrs_clt *sess, struct clt_req *req,
			const struct clt_path *from);

struct park_new {
	struct clt_req *req;
	int ret;
};

/*
 * Loop thread: a new request without a path waits on the parked list. All
 * of it here, where failover runs: no failover sees the request half
 * taken, nor reads its last path while it is cleared.
 */
static void req_park_new_fn(void *arg)
{
	struct park_new *a = arg;
	struct clt_req *req = a->req;
	enum clt_req_state s = CLT_REQ_FREE;

	req->path = NULL;
	req->con = NULL;
	if (clt_req_change(req, &s, CLT_REQ_INFLIGHT)) {
		a->ret = -EBUSY;
		return;
	}
	s = CLT_REQ_INFLIGHT;
	if (clt_req_change(req, &s, CLT_REQ_CLAIMED)) {
		a->ret = -EINVAL;
		return;
	}
	a->ret = 0;
	req->deadline_ns = ibtrs_now_ns() + req->sess->no_path_timeout_ns;
	/* A path may have come up since: posted then, else parked. */
	req_reroute(req->sess, req, NULL);
}

/*
 * No path connected, but one may come back (no_path_timeout_ms): the
 * loop thread, which owns the parked list, takes the request.
 */
static int req_park_new(struct ibtrs_clt *sess, struct clt_req *req,
			bool on_loop)
{
	struct park_new a = { .req = req, .ret = -ENOTCONN };

	if (on_loop)
		req_park_new_fn(&a);
	else
		ibtrs_loop_call(sess->loop, req_park_new_fn, &a);
	return a.ret;
}

int ibtrs_clt_request(int dir, ibtrs_conf_fn *conf, struct ibtrs_clt *sess,
		      struct ibtrs_tag *tag, void *priv,
		      const struct iovec *vec, size_t nr, size_t len,
		      const struct iovec *sg, unsigned int sg_cnt)
{
	struct clt_req *req;
	size_t usr_len = 0, sum = 0, i;
	unsigned int try, n;
	uint32_t old_gen, old_epoch;
	int ret = -ENOTCONN;
	bool on_loop;

	if (!sess || !tag || !conf || tag->sess != sess ||
	    (dir != IBTRS_READ && dir != IBTRS_WRITE) || (nr && !vec) ||
	    (sg_cnt && !sg))
		return -EINVAL;
	if (sg_cnt > sess->max_segments)
		return -EINVAL;
	if (len > sess->max_io_size)
		return -EMSGSIZE;
	for (i = 0; i < sg_cnt; i++)
		sum += sg[i].iov_len;
	if (sum != len)
		return -EINVAL;
	for (i = 0; i < nr; i++) {
		usr_len += vec[i].iov_len;
		if (usr_len > sess->max_usr_msg)
			return -EMSGSIZE;
	}
	req = &sess->reqs[tag->mem_id];
	if (clt_req_state(req) != CLT_REQ_FREE)
		return -EBUSY;

	/* The user message and the iovec array are copied. */
	for (i = 0, sum = 0; i < nr; i++) {
		memcpy(req->hdr + sum, vec[i].iov_base, vec[i].iov_len);
		sum += vec[i].iov_len;
	}
	/* A request without data may pass sg NULL: copy nothing then. */
	if (sg_cnt)
		memcpy(req->sg, sg, sg_cnt * sizeof(*sg));
	req->sg_cnt = sg_cnt;
	req->usr_len = (uint32_t)usr_len;
	req->conf = conf;
	req->priv = priv;
	req->dir = dir;
	req->con_type = tag->con_type;
	req->data_len = (uint32_t)len;
	/* Only the loop thread takes a path out of CONNECTED (path_change()):
	 * a completion callback submitting on it needs no lock to keep the
	 * path as it found it. */
	on_loop = ibtrs_loop_on_thread(sess->loop);
	/* Submitted from a completion: the loop's time of this batch, like
	 * the end of the request; from another thread: the clock. */
	req->start_ns = on_loop ? ibtrs_loop_batch_ns(sess->loop)
				: ibtrs_now_ns();
	req->deadline_ns = 0;
	req->posted = false;
	/* A request never posted leaves no gap in the tag's generations:
	 * the server's window counts on few. */
	old_gen = req->gen;
	old_epoch = req->epoch;
	req->gen++; /* a new request; every post of it carries this */
	n = atomic_load(&sess->path_cnt);
	for (try = 0; try < n; try++) {
		int idx = clt_select_path(sess, NULL);
		struct clt_path *path;

		if (idx < 0)
			break;
		path = sess->paths[idx];
		if (!on_loop)
			pthread_rwlock_rdlock(&path->lock);
		if (atomic_load(&path->state) == IBTRS_PATH_CONNECTED)
			ret = clt_req_post(path, req);
		else
			ret = -ENOTCONN;
		if (!on_loop)
			pthread_rwlock_unlock(&path->lock);
		if (!ret)
			return 0;
		if (ret != -ENOTCONN)
			break;
	}
	if (ret == -ENOTCONN && sess->no_path_timeout_ns &&
	    !atomic_load(&sess->closing) && clt_sess_has_hope(sess))
		return req_park_new(sess, req, on_loop);
	req->gen = old_gen;
	req->epoch = old_epoch;
	return ret;
}

/* ------------------------------------------------------------------ */
/* send completion and response                                         */

void clt_req_sent(struct ibtrs_clt *sess, uint64_t wr_id)
{
	struct clt_req *req = &sess->reqs[(uint32_t)wr_id];
	enum clt_req_state s = clt_req_state(req), to;

	/* A late completion of an earlier generation is not this one's. */
	if (req->gen != (uint32_t)(wr_id >> 32))
		return;
	do {
		if (s == CLT_REQ_INFLIGHT)
			to = CLT_REQ_SENT;
		else if (s == CLT_REQ_ANSWERED)
			to = CLT_REQ_DONE;
		else
			return; /* taken by a failover meanwhile */
	} while (clt_req_change(req, &s, to));
	/* Any thread: only record, complete on the loop thread. */
	if (to == CLT_REQ_DONE)
		ibtrs_loop_queue(sess->loop, &req->done_work);
}

/*
 * Loop thread: the response to a request arrived. If its send completed
 * already, take the request and complete it; if not, mark the response,
 * and the send completion completes it. One compare-and-swap does either.
 */
static void apply_rsp(struct clt_req *req, int err)
{
	enum clt_req_state s = clt_req_state(req), to;

	req->rsp_err = err;
	do {
		if (s == CLT_REQ_INFLIGHT)
			to = CLT_REQ_ANSWERED;
		else if (s == CLT_REQ_SENT)
			to = CLT_REQ_CLAIMED;
		else
			return;
	} while (clt_req_change(req, &s, to));
	if (to == CLT_REQ_CLAIMED) {
		atomic_fetch_sub(&req->path->inflight, 1);
		req_complete(req, err);
	}
}

/* On its way and not answered yet: what a response may answer. */
static bool req_awaits_rsp(const struct clt_req *req)
{
	enum clt_req_state s = clt_req_state(req);

	return s == CLT_REQ_INFLIGHT || s == CLT_REQ_SENT;
}

const char *clt_req_response(struct clt_con *con, uint32_t imm)
{
	struct clt_path *path = con->path;
	struct ibtrs_clt *sess = path->sess;
	struct clt_req *req;
	unsigned int delay_ms;
	uint32_t chunk;
	int err;

	ibtrs_imm_rsp_unpack(imm, &chunk, &err);
	if (chunk >= sess->queue_depth)
		return "response for a chunk out of range";
	req = &sess->reqs[chunk];
	if (!req_awaits_rsp(req) || req->con != con)
		return "response to no request";
	if (clt_fault_hit(path, CLT_FAULT_RSP, &delay_ms)) {
		/* Injected delay: apply it from the tick. */
		req->delay.until =
			ibtrs_now_ns() + (uint64_t)delay_ms * 1000000;
		req->delay.gen = req->gen;
		req->delay.con = con;
		req->rsp_err = err;
		if (!req->delay.queued) {
			req->delay.queued = true;
			req->delay.next = sess->delayed;
			sess->delayed = req;
		}
		return NULL;
	}
	apply_rsp(req, err);
	return NULL;
}

/* Loop thread: answer the held responses whose delay is over. */
static void tick_delayed(struct ibtrs_clt *sess, uint64_t now)
{
	struct clt_req **pp = &sess->delayed;

	while (*pp) {
		struct clt_req *req = *pp;

		if (now < req->delay.until) {
			pp = &req->delay.next;
			continue;
		}
		*pp = req->delay.next;
		req->delay.queued = false;
		/* Still the same request, on its path, not yet answered? */
		if (req_awaits_rsp(req) && req->gen == req->delay.gen &&
		    req->con == req->delay.con &&
		    atomic_load(&req->path->state) == IBTRS_PATH_CONNECTED)
			apply_rsp(req, req->rsp_err);
	}
}

/* ------------------------------------------------------------------ */
/* failover: reroute, park, expire                                       */

/* Loop thread, request claimed: park it on the session's list. */
static void pending_add(struct ibtrs_clt *sess, struct clt_req *req)
{
	enum clt_req_state s = CLT_REQ_CLAIMED;

	if (clt_req_change(req, &s, CLT_REQ_PENDING))
		return;
	req->next_pending = NULL;
	*sess->pending_tail = req;
	sess->pending_tail = &req->next_pending;
}

/* Loop thread: a request just taken off the parked list is claimed. */
static void pending_take(struct clt_req *req)
{
	enum clt_req_state s = CLT_REQ_PENDING;

	clt_req_change(req, &s, CLT_REQ_CLAIMED);
}

void clt_fail_pending(struct ibtrs_clt *sess, int err)
{
	while (sess->pending) {
		struct clt_req *req = sess->pending;

		sess->pending = req->next_pending;
		if (!sess->pending)
			sess->pending_tail = &sess->pending;
		pending_take(req);
		req_complete(req, err);
	}
}

/*
 * Loop thread, request claimed: post it on a path other than @from, or
 * park it until a path comes back, or fail it if none can.
 *
 * Every request here was posted to the server session of its epoch and
 * not answered, or (no_path_timeout_ms) never posted at all. If the path
 * found is on a newer session (a session loss, path_check_incarnation()),
 * nobody can tell whether the old session ran a posted request: by
 * default it completes with -ECONNRESET ("may or may not have run"); with
 * replay_on_session_loss it is sent to the new session as a new request,
 * which runs it, perhaps a second time.
 */
static void req_reroute(struct ibtrs_clt *sess, struct clt_req *req,
			const struct clt_path *from)
{
	unsigned int try, n = atomic_load(&sess->path_cnt);
	uint64_t now = ibtrs_now_ns();

	if (!req->deadline_ns)
		req->deadline_ns = now + sess->failover_timeout_ns;
	for (try = 0; try < n && !atomic_load(&sess->closing); try++) {
		int idx = clt_select_path(sess, from);
		struct clt_path *path;
		int ret = -ENOTCONN;
		bool lost;

		if (idx < 0)
			break;
		path = sess->paths[idx];
		/* Loop thread: the path stays as checked (path_change()). */
		if (atomic_load(&path->state) != IBTRS_PATH_CONNECTED)
			continue;
		/* Parked before it was ever posted (no_path_timeout_ms), it
		 * cannot have run anywhere: it is simply sent. */
		lost = req->posted && (int32_t)(path->epoch - req->epoch) > 0;
		if (lost && !sess->replay_on_loss) {
			atomic_fetch_add(&sess->unknown_outcome, 1);
			req_complete(req, -ECONNRESET);
			return;
		}
		ret = clt_req_post(path, req);
		if (!ret) {
			if (lost)
				atomic_fetch_add(&sess->replayed_after_loss, 1);
			return;
		}
	}
	if (!atomic_load(&sess->closing) && clt_sess_has_hope(sess) &&
	    now < req->deadline_ns) {
		pending_add(sess, req);
		return;
	}
	req_complete(req, -ECONNABORTED);
}

void clt_req_failover(struct clt_path *path)
{
	struct ibtrs_clt *sess = path->sess;
	uint32_t i;

	if (!sess->reqs)
		return;
	for (i = 0; i < sess->queue_depth; i++) {
		struct clt_req *req = &sess->reqs[i];
		enum clt_req_state was = clt_req_state(req);

		/* On its way: its submitter set req->path before the state
		 * that says so (clt_req_post()), and this load sees both. */
		if (was == CLT_REQ_FREE || was == CLT_REQ_CLAIMED ||
		    was == CLT_REQ_PENDING || req->path != path)
			continue;
		was = clt_req_claim(req);
		if (was == CLT_REQ_FREE)
			continue;
		atomic_fetch_sub(&path->inflight, 1);
		if (was == CLT_REQ_ANSWERED || was == CLT_REQ_DONE) {
			/* Answered already; only the send completion was
			 * lost with the connection. */
			req_complete(req, req->rsp_err);
			continue;
		}
		/* The replay maps its destination anew. */
		req_unmap(req, false);
		atomic_fetch_add(&path->failovers, 1);
		req_reroute(sess, req, path);
	}
}

void clt_req_resubmit_pending(struct ibtrs_clt *sess)
{
	struct clt_req *list = sess->pending;

	sess->pending = NULL;
	sess->pending_tail = &sess->pending;
	while (list) {
		struct clt_req *req = list;

		list = req->next_pending;
		pending_take(req);
		req_reroute(sess, req, NULL);
	}
}

/* Loop thread: fail the parked requests whose deadline passed. */
static void expire_pending(struct ibtrs_clt *sess, uint64_t now)
{
	struct clt_req **pp = &sess->pending;

	while (*pp) {
		struct clt_req *req = *pp;

		if (now < req->deadline_ns && clt_sess_has_hope(sess)) {
			pp = &req->next_pending;
			continue;
		}
		*pp = req->next_pending;
		pending_take(req);
		req_complete(req, -ECONNABORTED);
	}
	sess->pending_tail = pp;
}

void clt_req_tick(struct ibtrs_clt *sess, uint64_t now)
{
	tick_delayed(sess, now);
	if (sess->pending)
		expire_pending(sess, now);
}
