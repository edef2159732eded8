// SPDX-License-Identifier: MIT
/*
 * srv_req.c - a joined connection's messages (srv_io_handler, installed
 * by srv_join()): INFO_REQ and its answer, requests with each chunk's
 * at-most-once ledger (struct ibtrs_srv_op), their responses from any
 * thread, heartbeat answers, CLOSE, and the connection's errors. Calls
 * only srv_sess.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "srv_int.h"

static void srv_con_err(struct ibtrs_xprt_con *xcon, int err)
{
	struct srv_con *con = xcon->ctx;
	char why[64];

	if (!con->path)
		return;
	/* The backend refused what the peer sent (a bad frame, a remote
	 * access out of bounds): a protocol error below the messages. */
	if (err == -EPROTO) {
		srv_count_proto_error(con->path, PROTO_XPRT);
		ibtrs_log(
			IBTRS_LOG_ERR,
			"session %s: path %s: connection %u: transport protocol error",
			con->sess->sessname[0] ? con->sess->sessname
					       : "(unnamed)",
			con->path->peer, con->cid);
	}
	snprintf(why, sizeof(why), "connection %u: %s", con->cid,
		 strerror(-err));
	srv_path_close(con->path, why);
}

/*
 * Send the answer for @chunk on @con, which the caller holds a reference
 * on; the reference goes with the answer. A READ answer carries the chunk's
 * data, so the chunk stays referenced until it has left.
 *
 * Lazy: an answer from a thread other than the loop's (an application's
 * completion thread) is sent by the loop thread, gathered with the others
 * into one system call; the thread that answers makes none. The chunk is
 * then read by the thread that writes the client's next request into it,
 * which is also what TSan can follow (it records sendmsg's reads after
 * the call, when the peer may already have answered).
 */
static void send_rsp(struct srv_con *con, uint32_t chunk, int dir,
		     uint32_t data_len, const struct ibtrs_desc *desc, int err)
{
	struct ibtrs_srv *sess = con->sess;
	const struct ibtrs_xprt_ops *ops = sess->ctx->ops;
	uint32_t imm = ibtrs_imm_rsp(chunk, err);
	struct iovec iov;

	if (dir == IBTRS_READ && !err && data_len) {
		iov.iov_base =
			sess->chunks + (size_t)chunk * sess->ctx->chunk_size;
		iov.iov_len = data_len;
		if (ops->post_write(con->xcon, &iov, 1, desc->addr, desc->key,
				    imm, 0,
				    IBTRS_XPRT_IMM | IBTRS_XPRT_SIGNALED |
					    IBTRS_XPRT_LAZY))
			srv_con_put(con);
		return;
	}
	ops->post_write(con->xcon, NULL, 0, 0, 0, imm, 0,
			IBTRS_XPRT_IMM | IBTRS_XPRT_LAZY);
	srv_con_put(con);
}

void ibtrs_srv_resp_rdma(struct ibtrs_srv_op *op, int err)
{
	struct ibtrs_desc desc;
	struct srv_con *con;
	uint32_t data_len;
	int dir;

	if (!op)
		return;
	if (err > 0)
		err = -err;
	pthread_spin_lock(&op->lock);
	if (op->state != OP_RUNNING) {
		pthread_spin_unlock(&op->lock);
		ibtrs_log_rl(IBTRS_LOG_ERR,
			     "ibtrs_srv_resp_rdma: operation %u is not running",
			     op->chunk);
		return;
	}
	op->state = OP_DONE;
	op->result = err;
	con = op->con;
	op->con = NULL;
	dir = op->dir;
	data_len = op->data_len;
	desc = op->desc;
	pthread_spin_unlock(&op->lock);
	send_rsp(con, op->chunk, dir, data_len, &desc, err);
}

static int srv_process_req(struct srv_con *con, uint32_t imm)
{
	struct ibtrs_srv *sess = con->sess;
	struct ibtrs_srv_ctx *ctx = sess->ctx;
	struct ibtrs_req_trailer t;
	struct ibtrs_srv_op *op;
	struct srv_con *old;
	enum ibtrs_gen_pos pos;
	uint32_t chunk, off, data_len;
	int ret, result;
	char *base;

	ibtrs_imm_req_unpack(imm, ctx->off_bits, &chunk, &off);
	if (chunk >= ctx->queue_depth ||
	    off > ctx->chunk_size - sizeof(struct ibtrs_trailer))
		return -EPROTO;
	base = sess->chunks + (size_t)chunk * ctx->chunk_size;
	if (ibtrs_trailer_decode(base + off, &t))
		return -EPROTO;
	if (t.usr_len > off)
		return -EPROTO;
	data_len = off - t.usr_len;
	if (data_len > ctx->max_io_size)
		return -EPROTO;
	if (t.dir == IBTRS_READ && t.desc.len != data_len)
		return -EPROTO;
	op = &sess->ops[chunk];
	pthread_spin_lock(&op->lock);
	pos = ibtrs_gen_classify(op->gen, t.gen);
	if (op->state == OP_IDLE && !sess->gen_from_1)
		/* A client of before goes on with its generations in a new
		 * session: the first one sets the tag's. */
		pos = IBTRS_GEN_NEXT;
	else if (pos == IBTRS_GEN_SAME && op->state == OP_IDLE)
		pos = IBTRS_GEN_OUTSIDE; /* the first request carries >= 1 */
	if (pos == IBTRS_GEN_OUTSIDE) {
		/*
		 * No request of this client: refused alone, and the tag
		 * keeps its state, so that the client's next generation is
		 * still the next one.
		 */
		pthread_spin_unlock(&op->lock);
		srv_count_proto_error(con->path, PROTO_GEN);
		ibtrs_log_rl(
			IBTRS_LOG_WARN,
			"session %s: path %s: chunk %u: generation %u outside the window of %u: refused",
			sess->sessname, con->path->peer, chunk, t.gen, op->gen);
		atomic_fetch_add(&con->refs, 1);
		send_rsp(con, chunk, IBTRS_WRITE, 0, NULL, -EPROTO);
		return 0;
	}
	if (pos == IBTRS_GEN_STALE) {
		/*
		 * Older than the request this chunk ran last: a copy that a
		 * dead path delivered after its replay ran and the client
		 * went on with the tag. Running it again would undo the
		 * requests after it. It is answered -ESTALE where it came
		 * from, which a client that went on never reads, and which
		 * ends a request that an impostor's generation overtook
		 * rather than leaving it unanswered.
		 */
		pthread_spin_unlock(&op->lock);
		atomic_fetch_add(&ctx->stale, 1);
		atomic_fetch_add(&con->refs, 1);
		send_rsp(con, chunk, IBTRS_WRITE, 0, NULL, -ESTALE);
		return 0;
	}
	atomic_fetch_add(&con->refs, 1); /* for the answer, whichever */
	if (pos == IBTRS_GEN_SAME && op->dir == t.dir &&
	    op->data_len == data_len) {
		/* A replay: the client's path died while this ran. */
		atomic_fetch_add(&ctx->replays, 1);
		op->desc = t.desc; /* a READ destination has a new key */
		if (op->state == OP_RUNNING) {
			old = op->con;
			op->con = con; /* answer where the client now waits */
			pthread_spin_unlock(&op->lock);
			srv_con_put(old);
			return 0;
		}
		result = op->result;
		pthread_spin_unlock(&op->lock);
		send_rsp(con, chunk, t.dir, data_len, &t.desc, result);
		return 0;
	}
	if (op->state == OP_RUNNING) {
		/* An earlier request on this tag is still running. */
		pthread_spin_unlock(&op->lock);
		atomic_fetch_add(&ctx->busy, 1);
		send_rsp(con, chunk, IBTRS_WRITE, 0, NULL, -EBUSY);
		return 0;
	}
	if (t.dir == IBTRS_READ) {
		con->path->rd_ops++;
		con->path->rd_bytes += data_len;
	} else {
		con->path->wr_ops++;
		con->path->wr_bytes += data_len;
	}
	op->state = OP_RUNNING;
	op->con = con;
	op->gen = t.gen;
	op->dir = t.dir;
	op->data_len = data_len;
	op->desc = t.desc;
	pthread_spin_unlock(&op->lock);
	atomic_fetch_add(&ctx->requests, 1);
	ret = ctx->rdma_ev(sess, sess->priv, op, t.dir, base, data_len,
			   base + data_len, t.usr_len);
	if (ret)
		ibtrs_srv_resp_rdma(op, ret);
	return 0;
}

static void srv_send_info_rsp(struct srv_con *con)
{
	struct ibtrs_srv *sess = con->sess;
	struct ibtrs_desc desc = {
		.addr = sess->mr->addr,
		.key = sess->mr->key,
		.len = (uint32_t)sess->pool_len,
	};
	struct iovec iov = { .iov_base = con->rsp_buf };

	iov.iov_len = ibtrs_info_rsp_encode(con->rsp_buf, &desc, 1);
	sess->ctx->ops->post_send(con->xcon, &iov, 1, 0, 0);
}

static void srv_process_info(struct srv_con *con, uint32_t len)
{
	struct srv_path *path = con->path;
	struct ibtrs_srv *sess = con->sess;
	char name[IBTRS_SESSNAME_LEN];

	if (con->cid || path->connected ||
	    ibtrs_info_req_decode(con->info_buf, len, name)) {
		srv_path_proto_error(path, "bad INFO_REQ");
		return;
	}
	if (path->nr_cons != path->cid_num) {
		srv_path_proto_error(path, "INFO_REQ before all connections");
		return;
	}
	if (!sess->sessname[0]) {
		memcpy(sess->sessname, name, sizeof(sess->sessname));
	} else if (strcmp(sess->sessname, name)) {
		srv_path_proto_error(path,
				     "session name differs between paths");
		return;
	}
	path->connected = true;
	ibtrs_log(IBTRS_LOG_INFO, "session %s: path %s connected (%u cons)",
		  sess->sessname, path->peer, path->cid_num);
	if (srv_sess_connected(sess))
		return;
	srv_send_info_rsp(con);
}

static void srv_hb_ack(struct srv_con *con)
{
	con->sess->ctx->ops->post_write(con->xcon, NULL, 0, 0, 0,
					ibtrs_imm_hb(IBTRS_IMM_HB_ACK), 0,
					IBTRS_XPRT_IMM);
}

static void srv_con_wc(struct ibtrs_xprt_con *xcon, const struct ibtrs_wc *wc)
{
	struct srv_con *con = xcon->ctx;
	struct srv_path *path = con->path;
	int ret;

	switch (wc->opcode) {
	case IBTRS_WC_WRITE:
		/* A READ answer left, or was flushed: the chunk is free. */
		srv_con_put(con);
		return;
	case IBTRS_WC_SEND:
		return;
	case IBTRS_WC_RECV:
		if (!path)
			return;
		if (wc->wr_id != WR_ID_INFO) {
			srv_path_proto_error(path, "unexpected message");
			return;
		}
		path->last_rx_ns = ibtrs_now_ns();
		srv_process_info(con, wc->byte_len);
		return;
	case IBTRS_WC_RECV_IMM:
		break;
	}
	if (!path)
		return;
	path->last_rx_ns = ibtrs_loop_batch_ns(con->loop);
	switch (ibtrs_imm_type(wc->imm)) {
	case IBTRS_IMM_IO_REQ:
		if (!path->connected) {
			srv_path_proto_error(path, "request before INFO_REQ");
			return;
		}
		ret = srv_process_req(con, wc->imm);
		if (ret) {
			srv_path_proto_error(path, "malformed request");
			return;
		}
		break;
	case IBTRS_IMM_HB:
		srv_hb_ack(con);
		break;
	case IBTRS_IMM_HB_ACK:
		break;
	case IBTRS_IMM_CLOSE:
		if (con->cid) {
			srv_path_proto_error(path,
					     "CLOSE on an I/O connection");
			return;
		}
		srv_path_close_by_client(path);
		return;
	default:
		srv_path_proto_error(path, "unknown immediate type");
		return;
	}
	/* rdma_ev may have closed the path through a failed response. */
	if (con->path)
		con->sess->ctx->ops->post_recv(xcon, NULL, 0, WR_ID_IMM);
}

/* A joined connection's completions (srv_join() installs it). */
const struct ibtrs_xprt_handler srv_io_handler = {
	.wc = srv_con_wc,
	.err = srv_con_err,
};
