// SPDX-License-Identifier: MIT
/*
 * clt.c - the client side: sessions, paths, tags and requests.
 *
 * Threading: the caller's threads submit; the session's loop thread
 * receives, completes and runs every callback. A submitter holds its path's
 * lock for reading while it posts, and a path changes state only under the
 * same lock held for writing, so no request can slip onto a path that is
 * going down. A request completes once both its send has left (the caller's
 * buffers are free again) and its response has arrived; whichever comes
 * second completes it, always on the loop thread.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "addr.h"
#include "core.h"
#include "log.h"
#include "loop.h"
#include "xprt.h"

#define CLT_EXTRA_RECVS 16
#define CLT_MAX_IO_CONS 8
#define CLT_MAX_SEGMENTS 255
#define CLT_DEFAULT_CONNECT_TIMEOUT_MS 2000

#define WR_ID_IMM 0
#define WR_ID_INFO UINT64_MAX

/* Request state bits. */
#define REQ_INFLIGHT 0x1u
#define REQ_SENT 0x2u
#define REQ_RSP 0x4u

struct ibtrs_tag {
	struct ibtrs_clt *sess;
	uint32_t mem_id;
	enum ibtrs_clt_con_type con_type;
	_Atomic bool held;
} __attribute__((aligned(16)));

#define TAG_HDR_SIZE sizeof(struct ibtrs_tag)

struct clt_path;
struct clt_con;

struct clt_req {
	struct ibtrs_clt *sess;
	struct clt_path *path;
	struct clt_con *con;
	ibtrs_conf_fn *conf;
	void *priv;
	int dir;
	uint32_t mem_id;
	uint32_t data_len;
	uint32_t gen;
	int rsp_err;
	_Atomic unsigned int state;
	struct ibtrs_xprt_mr *mr; /* READ destination */
	struct ibtrs_work done_work;
	char hdr[IBTRS_MAX_USR_MSG + sizeof(struct ibtrs_trailer)];
};

struct clt_con {
	struct clt_path *path;
	unsigned int cid;
	struct ibtrs_xprt_con *xcon;
};

struct clt_path {
	struct ibtrs_clt *sess;
	unsigned int idx;
	struct sockaddr_storage src, dst;
	bool has_src;
	char src_str[IBTRS_SOCKADDR_STR_LEN];
	char dst_str[IBTRS_SOCKADDR_STR_LEN];
	uint8_t uuid[IBTRS_UUID_LEN];
	uint16_t recon_cnt;
	pthread_rwlock_t lock; /* read: submitting; write: state changes */
	_Atomic int state;
	unsigned int con_num;
	struct clt_con cons[IBTRS_MAX_CONS_PER_PATH];
	struct ibtrs_desc *rbufs; /* per chunk: address and key */

	/* INFO_RSP hand-over from the loop thread to the connecting one */
	pthread_mutex_t info_lock;
	pthread_cond_t info_cond;
	int info_status; /* 0 waiting, 1 received, <0 failed */
	int info_cnt;
	struct ibtrs_desc info_desc[IBTRS_MAX_INFO_DESCS];
	char info_buf[IBTRS_INFO_RSP_MAX_LEN];
	struct ibtrs_msg_info_req info_req;

	_Atomic uint64_t inflight, rd_ops, rd_bytes, wr_ops, wr_bytes;
	_Atomic uint64_t errors, proto_errors;
};

struct ibtrs_clt {
	char sessname[NAME_MAX];
	uint8_t uuid[IBTRS_UUID_LEN];
	void *priv;
	link_clt_ev_fn *link_ev;
	const struct ibtrs_xprt_ops *ops;
	struct ibtrs_xprt_pd *pd;
	struct ibtrs_loop *loop;
	unsigned int connect_timeout_ms;
	unsigned int io_cons;
	uint16_t port;

	struct clt_path *paths[IBTRS_MAX_PATHS];
	unsigned int path_cnt;
	_Atomic unsigned int rr;
	unsigned int paths_up; /* loop thread, after open */
	bool opened;

	/* geometry, fixed by the first path that connects */
	bool have_geometry;
	uint32_t queue_depth;
	uint32_t max_io_size;
	uint32_t chunk_size;
	uint32_t max_usr_msg;
	unsigned int off_bits;
	uint16_t max_segments;

	size_t pdu_sz;
	size_t tag_stride;
	char *tags;
	struct clt_req *reqs;
	pthread_mutex_t tag_lock;
	pthread_cond_t tag_cond;
	uint32_t *free_tags; /* stack, under tag_lock */
	uint32_t nr_free;
	bool closing;
};

static const struct ibtrs_xprt_handler clt_handler;

static inline struct ibtrs_tag *tag_at(struct ibtrs_clt *sess, uint32_t i)
{
	return (struct ibtrs_tag *)(sess->tags + (size_t)i * sess->tag_stride);
}

static const char *path_name(const struct clt_path *path)
{
	return path->dst_str;
}

/* ------------------------------------------------------------------ */
/* completions                                                          */

/* Claim the request; true if this caller must complete it. */
static bool req_claim(struct clt_req *req)
{
	unsigned int s = atomic_load(&req->state);

	do {
		if (!(s & REQ_INFLIGHT))
			return false;
	} while (!atomic_compare_exchange_weak(&req->state, &s, 0));
	return true;
}

/* Loop thread, request claimed: account and call the user. */
static void req_complete(struct clt_req *req, int err)
{
	struct clt_path *path = req->path;

	if (req->dir == IBTRS_READ && req->data_len)
		req->sess->ops->mr_unmap(req->mr);
	atomic_fetch_sub(&path->inflight, 1);
	if (err) {
		atomic_fetch_add(&path->errors, 1);
	} else if (req->dir == IBTRS_READ) {
		atomic_fetch_add(&path->rd_ops, 1);
		atomic_fetch_add(&path->rd_bytes, req->data_len);
	} else {
		atomic_fetch_add(&path->wr_ops, 1);
		atomic_fetch_add(&path->wr_bytes, req->data_len);
	}
	req->conf(req->priv, err);
}

static void req_done_work(struct ibtrs_work *w)
{
	struct clt_req *req = container_of(w, struct clt_req, done_work);
	unsigned int s = atomic_load(&req->state);

	if ((s & (REQ_SENT | REQ_RSP)) == (REQ_SENT | REQ_RSP) &&
	    req_claim(req))
		req_complete(req, req->rsp_err);
}

/* Fail every request in flight on @path; loop thread. */
static void path_fail_reqs(struct clt_path *path, int err)
{
	struct ibtrs_clt *sess = path->sess;
	uint32_t i;

	if (!sess->reqs)
		return;
	for (i = 0; i < sess->queue_depth; i++) {
		struct clt_req *req = &sess->reqs[i];

		if ((atomic_load(&req->state) & REQ_INFLIGHT) &&
		    req->path == path && req_claim(req))
			req_complete(req, err);
	}
}

static int path_set_state(struct clt_path *path, enum ibtrs_path_state st)
{
	int old;

	pthread_rwlock_wrlock(&path->lock);
	old = atomic_exchange(&path->state, (int)st);
	pthread_rwlock_unlock(&path->lock);
	if (old != (int)st)
		ibtrs_log(IBTRS_LOG_INFO, "session %s: path %s: %s -> %s",
			  path->sess->sessname, path_name(path),
			  ibtrs_path_state_str((enum ibtrs_path_state)old),
			  ibtrs_path_state_str(st));
	return old;
}

/* Loop thread: the path went down; fail its requests. */
static void path_down(struct clt_path *path, int err, const char *why)
{
	struct ibtrs_clt *sess = path->sess;
	unsigned int i;

	if (path_set_state(path, IBTRS_PATH_CLOSED) != IBTRS_PATH_CONNECTED)
		return;
	ibtrs_log(IBTRS_LOG_WARN, "session %s: path %s down: %s",
		  sess->sessname, path_name(path), why);
	for (i = 0; i < path->con_num; i++)
		if (path->cons[i].xcon)
			sess->ops->disconnect(path->cons[i].xcon);
	path_fail_reqs(path, err);
	if (sess->opened && sess->paths_up && !--sess->paths_up &&
	    sess->link_ev)
		sess->link_ev(sess->priv, IBTRS_CLT_LINK_EV_DISCONNECTED);
}

static void path_proto_error(struct clt_path *path, const char *what)
{
	atomic_fetch_add(&path->proto_errors, 1);
	ibtrs_log(IBTRS_LOG_ERR, "session %s: path %s: protocol error: %s",
		  path->sess->sessname, path_name(path), what);
	path_down(path, -ECONNABORTED, "-EPROTO");
}

static void clt_process_rsp(struct clt_con *con, uint32_t imm)
{
	struct clt_path *path = con->path;
	struct ibtrs_clt *sess = path->sess;
	struct clt_req *req;
	uint32_t chunk;
	unsigned int s;
	int err;

	ibtrs_imm_rsp_unpack(imm, &chunk, &err);
	if (chunk >= sess->queue_depth) {
		path_proto_error(path, "response for a chunk out of range");
		return;
	}
	req = &sess->reqs[chunk];
	s = atomic_load(&req->state);
	if (!(s & REQ_INFLIGHT) || (s & REQ_RSP) || req->con != con) {
		path_proto_error(path, "response to no request");
		return;
	}
	req->rsp_err = err;
	s = atomic_fetch_or(&req->state, REQ_RSP);
	if ((s & REQ_SENT) && req_claim(req))
		req_complete(req, err);
}

static void clt_process_info(struct clt_con *con, uint32_t len)
{
	struct clt_path *path = con->path;
	int n;

	n = ibtrs_info_rsp_decode(path->info_buf, len, path->info_desc,
				  IBTRS_MAX_INFO_DESCS);
	pthread_mutex_lock(&path->info_lock);
	path->info_cnt = n;
	path->info_status = n > 0 ? 1 : -EPROTO;
	pthread_cond_signal(&path->info_cond);
	pthread_mutex_unlock(&path->info_lock);
}

static void clt_con_wc(struct ibtrs_xprt_con *xcon, const struct ibtrs_wc *wc)
{
	struct clt_con *con = xcon->ctx;
	struct clt_path *path = con->path;
	struct ibtrs_clt *sess = path->sess;
	struct clt_req *req;
	unsigned int s;

	switch (wc->opcode) {
	case IBTRS_WC_WRITE:
		/* Any thread: only record, complete on the loop thread. */
		req = &sess->reqs[(uint32_t)wc->wr_id];
		if (req->gen != (uint32_t)(wc->wr_id >> 32))
			return;
		s = atomic_fetch_or(&req->state, REQ_SENT);
		if ((s & (REQ_INFLIGHT | REQ_RSP)) == (REQ_INFLIGHT | REQ_RSP))
			ibtrs_loop_queue(sess->loop, &req->done_work);
		return;
	case IBTRS_WC_SEND:
		return;
	case IBTRS_WC_RECV:
		if (wc->wr_id != WR_ID_INFO || con->cid) {
			path_proto_error(path, "unexpected message");
			return;
		}
		clt_process_info(con, wc->byte_len);
		return;
	case IBTRS_WC_RECV_IMM:
		break;
	}
	if (atomic_load(&path->state) != IBTRS_PATH_CONNECTED)
		return;
	switch (ibtrs_imm_type(wc->imm)) {
	case IBTRS_IMM_IO_RSP:
		clt_process_rsp(con, wc->imm);
		break;
	case IBTRS_IMM_HB:
		sess->ops->post_write(xcon, NULL, 0, 0, 0,
				      ibtrs_imm_hb(IBTRS_IMM_HB_ACK), 0,
				      IBTRS_XPRT_IMM);
		break;
	case IBTRS_IMM_HB_ACK:
		break;
	default:
		path_proto_error(path, "unknown immediate type");
		return;
	}
	if (atomic_load(&path->state) == IBTRS_PATH_CONNECTED)
		sess->ops->post_recv(xcon, NULL, 0, WR_ID_IMM);
}

static void clt_con_err(struct ibtrs_xprt_con *xcon, int err)
{
	struct clt_con *con = xcon->ctx;
	char why[80];

	snprintf(why, sizeof(why), "connection %u: %s", con->cid,
		 strerror(-err));
	path_down(con->path, -ECONNABORTED, why);
}

static const struct ibtrs_xprt_handler clt_handler = {
	.wc = clt_con_wc,
	.err = clt_con_err,
};

/* ------------------------------------------------------------------ */
/* session geometry, tags and request slots                             */

static int sess_set_geometry(struct ibtrs_clt *sess,
			     const struct ibtrs_conn_rsp *r)
{
	uint32_t i;
	int ret;

	if (sess->have_geometry) {
		if (r->queue_depth != sess->queue_depth ||
		    r->max_io_size != sess->max_io_size ||
		    r->chunk_size != sess->chunk_size)
			return -EPROTO;
		return 0;
	}
	sess->queue_depth = r->queue_depth;
	sess->max_io_size = r->max_io_size;
	sess->chunk_size = r->chunk_size;
	sess->max_usr_msg = r->max_usr_msg;
	sess->off_bits =
		(unsigned int)ibtrs_imm_off_bits(r->queue_depth, r->chunk_size);
	sess->tag_stride = (TAG_HDR_SIZE + sess->pdu_sz + 15) & ~(size_t)15;
	sess->tags = aligned_alloc(16, sess->tag_stride * sess->queue_depth);
	sess->reqs = calloc(sess->queue_depth, sizeof(*sess->reqs));
	sess->free_tags = calloc(sess->queue_depth, sizeof(uint32_t));
	if (!sess->tags || !sess->reqs || !sess->free_tags)
		return -ENOMEM;
	memset(sess->tags, 0, sess->tag_stride * sess->queue_depth);
	for (i = 0; i < sess->queue_depth; i++) {
		struct ibtrs_tag *tag = tag_at(sess, i);
		struct clt_req *req = &sess->reqs[i];

		tag->sess = sess;
		tag->mem_id = i;
		req->sess = sess;
		req->mem_id = i;
		req->done_work.fn = req_done_work;
		ret = sess->ops->mr_alloc(sess->pd, sess->max_segments,
					  &req->mr);
		if (ret)
			return ret;
		/* Hand the tags out from 0 upwards. */
		sess->free_tags[i] = sess->queue_depth - 1 - i;
	}
	sess->nr_free = sess->queue_depth;
	sess->have_geometry = true;
	return 0;
}

struct ibtrs_tag *ibtrs_clt_get_tag(struct ibtrs_clt *sess,
				    enum ibtrs_clt_con_type con_type, int wait)
{
	struct ibtrs_tag *tag;
	uint32_t id;

	if (!sess || (con_type != IBTRS_USR_CON && con_type != IBTRS_IO_CON) ||
	    (wait != IBTRS_TAG_WAIT && wait != IBTRS_TAG_NOWAIT)) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&sess->tag_lock);
	while (!sess->nr_free && !sess->closing && wait == IBTRS_TAG_WAIT)
		pthread_cond_wait(&sess->tag_cond, &sess->tag_lock);
	if (sess->closing || !sess->nr_free) {
		errno = sess->closing ? ECONNABORTED : EAGAIN;
		pthread_mutex_unlock(&sess->tag_lock);
		return NULL;
	}
	id = sess->free_tags[--sess->nr_free];
	pthread_mutex_unlock(&sess->tag_lock);
	tag = tag_at(sess, id);
	tag->con_type = con_type;
	atomic_store(&tag->held, true);
	return tag;
}

void ibtrs_clt_put_tag(struct ibtrs_clt *sess, struct ibtrs_tag *tag)
{
	bool held = true;

	if (!sess || !tag)
		return;
	if (tag->sess != sess ||
	    !atomic_compare_exchange_strong(&tag->held, &held, false)) {
		ibtrs_log_rl(IBTRS_LOG_ERR,
			     "session %s: put of a tag that is not held",
			     sess->sessname);
		return;
	}
	pthread_mutex_lock(&sess->tag_lock);
	sess->free_tags[sess->nr_free++] = tag->mem_id;
	pthread_cond_signal(&sess->tag_cond);
	pthread_mutex_unlock(&sess->tag_lock);
}

struct ibtrs_tag *ibtrs_tag_from_pdu(void *pdu)
{
	return pdu ? (struct ibtrs_tag *)((char *)pdu - TAG_HDR_SIZE) : NULL;
}

void *ibtrs_tag_to_pdu(struct ibtrs_tag *tag)
{
	return tag ? (char *)tag + TAG_HDR_SIZE : NULL;
}

/* ------------------------------------------------------------------ */
/* requests                                                             */

static struct clt_con *pick_con(struct clt_path *path,
				enum ibtrs_clt_con_type type)
{
	int cpu;

	if (type == IBTRS_USR_CON || path->con_num == 1)
		return &path->cons[0];
	cpu = sched_getcpu();
	if (cpu < 0)
		cpu = 0;
	return &path->cons[1 + (unsigned int)cpu % (path->con_num - 1)];
}

/* Under path->lock for reading, path connected. */
static int req_post(struct clt_path *path, struct clt_req *req,
		    struct ibtrs_tag *tag, size_t usr_len,
		    const struct iovec *sg, unsigned int sg_cnt)
{
	struct ibtrs_clt *sess = path->sess;
	const struct ibtrs_desc *rbuf = &path->rbufs[req->mem_id];
	struct iovec iov[CLT_MAX_SEGMENTS + 1];
	struct ibtrs_req_trailer t = {
		.dir = req->dir,
		.usr_len = (uint16_t)usr_len,
	};
	struct clt_con *con = pick_con(path, tag->con_type);
	unsigned int cnt = 0;
	uint64_t raddr = rbuf->addr;
	uint32_t imm;
	int ret;

	req->gen++;
	t.gen = req->gen;
	if (req->dir == IBTRS_READ && req->data_len) {
		ret = sess->ops->mr_map(req->mr, sg, sg_cnt);
		if (ret)
			return ret;
		t.desc.addr = req->mr->addr;
		t.desc.key = req->mr->key;
		t.desc.len = req->data_len;
	}
	ibtrs_trailer_encode((struct ibtrs_trailer *)(req->hdr + usr_len), &t);
	if (req->dir == IBTRS_WRITE) {
		memcpy(iov, sg, sg_cnt * sizeof(*sg));
		cnt = sg_cnt;
	} else {
		raddr += req->data_len;
	}
	iov[cnt].iov_base = req->hdr;
	iov[cnt].iov_len = usr_len + sizeof(struct ibtrs_trailer);
	cnt++;
	imm = ibtrs_imm_req(req->mem_id, req->data_len + (uint32_t)usr_len,
			    sess->off_bits);

	req->path = path;
	req->con = con;
	atomic_fetch_add(&path->inflight, 1);
	atomic_store(&req->state, REQ_INFLIGHT);
	ret = sess->ops->post_write(con->xcon, iov, cnt, raddr, rbuf->key, imm,
				    ((uint64_t)req->gen << 32) | req->mem_id,
				    IBTRS_XPRT_IMM | IBTRS_XPRT_SIGNALED);
	if (ret) {
		atomic_store(&req->state, 0);
		atomic_fetch_sub(&path->inflight, 1);
		if (req->dir == IBTRS_READ && req->data_len)
			sess->ops->mr_unmap(req->mr);
	}
	return ret;
}

int ibtrs_clt_request(int dir, ibtrs_conf_fn *conf, struct ibtrs_clt *sess,
		      struct ibtrs_tag *tag, void *priv,
		      const struct iovec *vec, size_t nr, size_t len,
		      const struct iovec *sg, unsigned int sg_cnt)
{
	struct clt_req *req;
	size_t usr_len = 0, sum = 0, i;
	unsigned int try;
	int ret = -ENOTCONN;

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
	if (atomic_load(&req->state) & REQ_INFLIGHT)
		return -EBUSY;

	/* The user message is copied: the caller may reuse it at once. */
	for (i = 0, sum = 0; i < nr; i++) {
		memcpy(req->hdr + sum, vec[i].iov_base, vec[i].iov_len);
		sum += vec[i].iov_len;
	}
	req->conf = conf;
	req->priv = priv;
	req->dir = dir;
	req->data_len = (uint32_t)len;

	for (try = 0; try < sess->path_cnt; try++) {
		unsigned int idx =
			atomic_fetch_add(&sess->rr, 1) % sess->path_cnt;
		struct clt_path *path = sess->paths[idx];

		if (atomic_load(&path->state) != IBTRS_PATH_CONNECTED)
			continue;
		pthread_rwlock_rdlock(&path->lock);
		if (atomic_load(&path->state) == IBTRS_PATH_CONNECTED)
			ret = req_post(path, req, tag, usr_len, sg, sg_cnt);
		else
			ret = -ENOTCONN;
		pthread_rwlock_unlock(&path->lock);
		if (ret != -ENOTCONN)
			return ret;
	}
	return ret;
}

/* ------------------------------------------------------------------ */
/* paths                                                                */

struct con_op {
	struct clt_path *path;
	unsigned int cid;
};

static void con_disconnect_fn(void *arg)
{
	struct clt_path *path = arg;
	unsigned int i;

	for (i = 0; i < path->con_num; i++)
		if (path->cons[i].xcon)
			path->sess->ops->disconnect(path->cons[i].xcon);
}

/* Disconnect (on the loop thread) and free every connection. */
static void path_destroy_cons(struct clt_path *path)
{
	unsigned int i;

	ibtrs_loop_call(path->sess->loop, con_disconnect_fn, path);
	for (i = 0; i < path->con_num; i++) {
		path->sess->ops->destroy(path->cons[i].xcon);
		path->cons[i].xcon = NULL;
	}
}

static int con_connect(struct clt_path *path, unsigned int cid)
{
	struct ibtrs_clt *sess = path->sess;
	struct clt_con *con = &path->cons[cid];
	struct ibtrs_conn_req cr = {
		.version = IBTRS_PROTO_VER,
		.cid = (uint16_t)cid,
		.cid_num = (uint16_t)path->con_num,
		.recon_cnt = path->recon_cnt,
		.first_conn = cid == 0,
	};
	struct ibtrs_xprt_con_attr attr = {
		.max_send_wr = IBTRS_MAX_QUEUE_DEPTH + CLT_EXTRA_RECVS,
		.max_recv_wr = IBTRS_MAX_QUEUE_DEPTH + CLT_EXTRA_RECVS + 1,
		.max_send_sge = sess->max_segments + 1u,
	};
	uint8_t rsp[IBTRS_XPRT_PRIV_LEN];
	struct ibtrs_msg_conn_req m;
	struct ibtrs_conn_rsp r;
	unsigned int i;
	int ret;

	if (sess->have_geometry)
		attr.max_send_wr = attr.max_recv_wr =
			sess->queue_depth + CLT_EXTRA_RECVS + 1;
	memcpy(cr.sess_uuid, sess->uuid, IBTRS_UUID_LEN);
	memcpy(cr.path_uuid, path->uuid, IBTRS_UUID_LEN);
	ibtrs_conn_req_encode(&m, &cr);
	memset(rsp, 0, sizeof(rsp));
	ret = sess->ops->connect(
		sess->pd, path->has_src ? (struct sockaddr *)&path->src : NULL,
		(struct sockaddr *)&path->dst, &attr, &m, rsp,
		sess->connect_timeout_ms, &con->xcon);
	if (ret && ret != -ECONNREFUSED)
		return ret;
	ret = ibtrs_conn_rsp_decode(rsp, sizeof(rsp), &r);
	if (ret == -EPROTONOSUPPORT) {
		ibtrs_log(
			IBTRS_LOG_ERR,
			"session %s: path %s: server speaks protocol %u.%u, this client %u.%u",
			sess->sessname, path_name(path), r.version >> 8,
			r.version & 0xff, IBTRS_PROTO_VER_MAJOR,
			IBTRS_PROTO_VER_MINOR);
		ret = -EPROTO;
	} else if (!ret && r.err) {
		ret = -(int)r.err;
		ibtrs_log(
			IBTRS_LOG_ERR,
			"session %s: path %s: server refused connection %u: %s",
			sess->sessname, path_name(path), cid, strerror(-ret));
		/* The server's word for a version mismatch. */
		if (ret == -EPROTONOSUPPORT)
			ret = -EPROTO;
	} else if (!ret && !con->xcon) {
		ret = -ECONNREFUSED;
	}
	if (!ret)
		ret = sess_set_geometry(sess, &r);
	if (ret) {
		if (con->xcon) {
			sess->ops->disconnect(con->xcon);
			sess->ops->destroy(con->xcon);
			con->xcon = NULL;
		}
		return ret;
	}
	con->path = path;
	con->cid = cid;
	con->xcon->handler = &clt_handler;
	con->xcon->ctx = con;
	if (!cid)
		ret = sess->ops->post_recv(con->xcon, path->info_buf,
					   sizeof(path->info_buf), WR_ID_INFO);
	for (i = 0; !ret && i < sess->queue_depth + CLT_EXTRA_RECVS; i++)
		ret = sess->ops->post_recv(con->xcon, NULL, 0, WR_ID_IMM);
	if (!ret)
		ret = sess->ops->start(con->xcon, sess->loop);
	return ret;
}

/* Build the per-chunk table from the server's descriptors. */
static int path_set_rbufs(struct clt_path *path)
{
	struct ibtrs_clt *sess = path->sess;
	uint64_t total = 0;
	uint32_t chunk = 0;
	int i;

	for (i = 0; i < path->info_cnt; i++) {
		if (path->info_desc[i].len % sess->chunk_size)
			return -EPROTO;
		total += path->info_desc[i].len;
	}
	if (total != (uint64_t)sess->queue_depth * sess->chunk_size)
		return -EPROTO;
	if (!path->rbufs)
		path->rbufs = calloc(sess->queue_depth, sizeof(*path->rbufs));
	if (!path->rbufs)
		return -ENOMEM;
	for (i = 0; i < path->info_cnt; i++) {
		uint32_t n = path->info_desc[i].len / sess->chunk_size, j;

		for (j = 0; j < n; j++, chunk++) {
			path->rbufs[chunk].addr =
				path->info_desc[i].addr +
				(uint64_t)j * sess->chunk_size;
			path->rbufs[chunk].key = path->info_desc[i].key;
		}
	}
	return 0;
}

/* Connect every connection of @path and exchange INFO; blocks. */
static int path_connect(struct clt_path *path)
{
	struct ibtrs_clt *sess = path->sess;
	struct iovec iov = { .iov_base = &path->info_req,
			     .iov_len = sizeof(path->info_req) };
	struct timespec ts;
	unsigned int cid;
	int ret = 0;

	path_set_state(path, IBTRS_PATH_CONNECTING);
	path->recon_cnt++;
	pthread_mutex_lock(&path->info_lock);
	path->info_status = 0;
	pthread_mutex_unlock(&path->info_lock);
	for (cid = 0; cid < path->con_num && !ret; cid++)
		ret = con_connect(path, cid);
	if (ret)
		goto fail;

	ibtrs_info_req_encode(&path->info_req, sess->sessname);
	ret = sess->ops->post_send(path->cons[0].xcon, &iov, 1, 0, 0);
	if (ret)
		goto fail;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += sess->connect_timeout_ms / 1000;
	ts.tv_nsec += (long)(sess->connect_timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&path->info_lock);
	while (!path->info_status && !ret)
		ret = -pthread_cond_timedwait(&path->info_cond,
					      &path->info_lock, &ts);
	if (path->info_status < 0)
		ret = path->info_status;
	pthread_mutex_unlock(&path->info_lock);
	if (ret)
		goto fail;
	ret = path_set_rbufs(path);
	if (ret)
		goto fail;
	path_set_state(path, IBTRS_PATH_CONNECTED);
	return 0;

fail:
	path_set_state(path, IBTRS_PATH_CLOSED);
	path_destroy_cons(path);
	return ret;
}

static struct clt_path *path_alloc(struct ibtrs_clt *sess,
				   const struct ibtrs_addr *addr,
				   unsigned int idx)
{
	struct clt_path *path;

	path = calloc(1, sizeof(*path));
	if (!path)
		return NULL;
	path->sess = sess;
	path->idx = idx;
	memcpy(&path->dst, addr->dst, sizeof(path->dst));
	if (path->dst.ss_family == AF_INET &&
	    !((struct sockaddr_in *)&path->dst)->sin_port)
		((struct sockaddr_in *)&path->dst)->sin_port =
			htons(sess->port);
	else if (path->dst.ss_family == AF_INET6 &&
		 !((struct sockaddr_in6 *)&path->dst)->sin6_port)
		((struct sockaddr_in6 *)&path->dst)->sin6_port =
			htons(sess->port);
	if (addr->src) {
		memcpy(&path->src, addr->src, sizeof(path->src));
		path->has_src = true;
		ibtrs_sockaddr_to_str((struct sockaddr *)&path->src,
				      path->src_str, sizeof(path->src_str));
	}
	ibtrs_sockaddr_to_str((struct sockaddr *)&path->dst, path->dst_str,
			      sizeof(path->dst_str));
	ibtrs_uuid_gen(path->uuid);
	path->con_num = 1 + sess->io_cons;
	atomic_init(&path->state, IBTRS_PATH_CLOSED);
	pthread_rwlock_init(&path->lock, NULL);
	pthread_mutex_init(&path->info_lock, NULL);
	pthread_cond_init(&path->info_cond, NULL);
	return path;
}

static void path_free(struct clt_path *path)
{
	if (!path)
		return;
	pthread_rwlock_destroy(&path->lock);
	pthread_mutex_destroy(&path->info_lock);
	pthread_cond_destroy(&path->info_cond);
	free(path->rbufs);
	free(path);
}

/* ------------------------------------------------------------------ */
/* sessions                                                             */

void ibtrs_clt_opts_init(struct ibtrs_clt_opts *opts, size_t size)
{
	struct ibtrs_clt_opts d = {
		.size = sizeof(d),
		.port = IBTRS_DEFAULT_PORT,
		.reconnect_delay_sec = 1,
		.max_reconnect_attempts = -1,
		.connect_timeout_ms = CLT_DEFAULT_CONNECT_TIMEOUT_MS,
		.io_cons = 1,
	};

	if (!opts)
		return;
	if (size > sizeof(d)) {
		memset(opts, 0, size);
		size = sizeof(d);
	}
	memcpy(opts, &d, size);
	opts->size = size;
}

static void sess_free(struct ibtrs_clt *sess)
{
	unsigned int i;

	for (i = 0; i < sess->path_cnt; i++)
		path_free(sess->paths[i]);
	if (sess->reqs)
		for (i = 0; i < sess->queue_depth; i++)
			sess->ops->mr_free(sess->reqs[i].mr);
	if (sess->pd)
		sess->ops->pd_free(sess->pd);
	pthread_mutex_destroy(&sess->tag_lock);
	pthread_cond_destroy(&sess->tag_cond);
	free(sess->reqs);
	free(sess->tags);
	free(sess->free_tags);
	free(sess);
}

static int check_opts(const struct ibtrs_clt_opts *o)
{
	size_t n, i;

	if (!o->sessname || !o->paths || !o->path_cnt ||
	    o->path_cnt > IBTRS_MAX_PATHS ||
	    o->max_segments > CLT_MAX_SEGMENTS ||
	    o->io_cons > CLT_MAX_IO_CONS || !o->connect_timeout_ms ||
	    o->max_reconnect_attempts < -1)
		return -EINVAL;
	n = strnlen(o->sessname, NAME_MAX);
	if (!n || n >= NAME_MAX || strchr(o->sessname, '/'))
		return -EINVAL;
	for (i = 0; i < o->path_cnt; i++) {
		const struct sockaddr_storage *d = o->paths[i].dst;

		if (!d || (d->ss_family != AF_INET && d->ss_family != AF_INET6))
			return -EINVAL;
	}
	return 0;
}

static void sess_mark_open(void *arg)
{
	struct ibtrs_clt *sess = arg;
	unsigned int i;

	sess->paths_up = 0;
	for (i = 0; i < sess->path_cnt; i++)
		if (atomic_load(&sess->paths[i]->state) == IBTRS_PATH_CONNECTED)
			sess->paths_up++;
	sess->opened = true;
}

struct ibtrs_clt *ibtrs_clt_open_opts(const struct ibtrs_clt_opts *o)
{
	struct ibtrs_clt_opts opts;
	struct ibtrs_clt *sess;
	unsigned int i, up = 0;
	int ret, first_err = 0;

	if (!o ||
	    o->size < offsetof(struct ibtrs_clt_opts, connect_timeout_ms) ||
	    o->size > sizeof(opts)) {
		errno = EINVAL;
		return NULL;
	}
	ibtrs_clt_opts_init(&opts, sizeof(opts));
	memcpy(&opts, o, o->size);
	ret = check_opts(&opts);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	sess = calloc(1, sizeof(*sess));
	if (!sess) {
		errno = ENOMEM;
		return NULL;
	}
	snprintf(sess->sessname, sizeof(sess->sessname), "%s", opts.sessname);
	ibtrs_uuid_gen(sess->uuid);
	sess->priv = opts.priv;
	sess->link_ev = opts.link_ev;
	sess->pdu_sz = opts.pdu_sz;
	sess->port = opts.port;
	sess->max_segments = opts.max_segments ? opts.max_segments
					       : IBTRS_DEFAULT_MAX_SEGMENTS;
	sess->connect_timeout_ms = opts.connect_timeout_ms;
	sess->io_cons = opts.io_cons;
	pthread_mutex_init(&sess->tag_lock, NULL);
	pthread_cond_init(&sess->tag_cond, NULL);
	sess->ops = ibtrs_xprt_find(opts.backend);
	if (!sess->ops) {
		ibtrs_log(IBTRS_LOG_ERR, "session %s: unknown backend %s",
			  sess->sessname, opts.backend);
		ret = -EINVAL;
		goto free_sess;
	}
	ret = sess->ops->pd_alloc(&sess->pd, IBTRS_MAX_QUEUE_DEPTH);
	if (ret)
		goto free_sess;
	for (i = 0; i < opts.path_cnt; i++) {
		sess->paths[i] = path_alloc(sess, &opts.paths[i], i);
		if (!sess->paths[i]) {
			ret = -ENOMEM;
			goto free_sess;
		}
		sess->path_cnt++;
	}
	ret = ibtrs_loop_create(&sess->loop, "ibtrs-clt", NULL, NULL, 0);
	if (ret)
		goto free_sess;

	for (i = 0; i < sess->path_cnt; i++) {
		struct clt_path *path = sess->paths[i];

		ret = path_connect(path);
		if (!ret) {
			up++;
			continue;
		}
		if (!first_err)
			first_err = ret;
		ibtrs_log(IBTRS_LOG_WARN,
			  "session %s: path %s: connect failed: %s",
			  sess->sessname, path_name(path), strerror(-ret));
	}
	if (!up) {
		ret = first_err;
		goto destroy_loop;
	}
	ibtrs_loop_call(sess->loop, sess_mark_open, sess);
	ibtrs_log(
		IBTRS_LOG_INFO,
		"session %s: open, %u of %u paths connected, queue depth %u, max I/O %u",
		sess->sessname, up, sess->path_cnt, sess->queue_depth,
		sess->max_io_size);
	return sess;

destroy_loop:
	ibtrs_loop_destroy(sess->loop);
free_sess:
	sess_free(sess);
	errno = -ret;
	return NULL;
}

struct ibtrs_clt *
ibtrs_clt_open(void *priv, link_clt_ev_fn *link_ev, const char *sessname,
	       const struct ibtrs_addr *paths, size_t path_cnt, uint16_t port,
	       size_t pdu_sz, uint8_t reconnect_delay_sec,
	       uint16_t max_segments, int16_t max_reconnect_attempts)
{
	struct ibtrs_clt_opts opts;

	ibtrs_clt_opts_init(&opts, sizeof(opts));
	opts.priv = priv;
	opts.link_ev = link_ev;
	opts.sessname = sessname;
	opts.paths = paths;
	opts.path_cnt = path_cnt;
	opts.port = port;
	opts.pdu_sz = pdu_sz;
	opts.reconnect_delay_sec = reconnect_delay_sec;
	opts.max_segments = max_segments;
	opts.max_reconnect_attempts = max_reconnect_attempts;
	return ibtrs_clt_open_opts(&opts);
}

static void sess_close_paths(void *arg)
{
	struct ibtrs_clt *sess = arg;
	unsigned int i;

	for (i = 0; i < sess->path_cnt; i++)
		path_down(sess->paths[i], -ECONNABORTED, "session closing");
	sess->opened = false;
}

void ibtrs_clt_close(struct ibtrs_clt *sess)
{
	unsigned int i;

	if (!sess)
		return;
	pthread_mutex_lock(&sess->tag_lock);
	sess->closing = true;
	pthread_cond_broadcast(&sess->tag_cond);
	pthread_mutex_unlock(&sess->tag_lock);

	ibtrs_loop_call(sess->loop, sess_close_paths, sess);
	for (i = 0; i < sess->path_cnt; i++)
		path_destroy_cons(sess->paths[i]);
	/* Runs the completions still queued, then no callback is left. */
	ibtrs_loop_destroy(sess->loop);
	sess_free(sess);
}

int ibtrs_clt_query(struct ibtrs_clt *sess, struct ibtrs_attrs *attr)
{
	unsigned int i, up = 0;

	if (!sess || !attr)
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->queue_depth = sess->queue_depth;
	attr->max_io_size = sess->max_io_size;
	attr->max_segments = sess->max_segments;
	attr->path_cnt = sess->path_cnt;
	snprintf((char *)attr->sessname, sizeof(attr->sessname), "%s",
		 sess->sessname);
	for (i = 0; i < sess->path_cnt; i++)
		if (atomic_load(&sess->paths[i]->state) == IBTRS_PATH_CONNECTED)
			up++;
	attr->connected_paths = up;
	return up ? 0 : -ECOMM;
}

int ibtrs_clt_path_stats(struct ibtrs_clt *sess, unsigned int idx,
			 struct ibtrs_path_stats *st)
{
	struct ibtrs_path_stats v;
	struct clt_path *path;

	if (!sess || !st || st->size < offsetof(struct ibtrs_path_stats, src))
		return -EINVAL;
	if (idx >= sess->path_cnt)
		return -ENOENT;
	path = sess->paths[idx];
	memset(&v, 0, sizeof(v));
	v.size = st->size < sizeof(v) ? st->size : sizeof(v);
	v.state = (enum ibtrs_path_state)atomic_load(&path->state);
	snprintf(v.src, sizeof(v.src), "%s", path->src_str);
	snprintf(v.dst, sizeof(v.dst), "%s", path->dst_str);
	v.inflight = atomic_load(&path->inflight);
	v.rd_ops = atomic_load(&path->rd_ops);
	v.rd_bytes = atomic_load(&path->rd_bytes);
	v.wr_ops = atomic_load(&path->wr_ops);
	v.wr_bytes = atomic_load(&path->wr_bytes);
	v.errors = atomic_load(&path->errors);
	v.proto_errors = atomic_load(&path->proto_errors);
	memcpy(st, &v, v.size);
	return 0;
}
