// SPDX-License-Identifier: MIT
/*
 * clt_tags.c - a client session's geometry and its tags: the queue depth,
 * chunk size and limits the first path's handshake brings (every later
 * path must bring the same), and with them the tags, the request slots
 * and their registrations; the tags' get and put.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clt_int.h"
#include "log.h"

static inline struct ibtrs_tag *tag_at(struct ibtrs_clt *sess, uint32_t i)
{
	return (struct ibtrs_tag *)(sess->tags + (size_t)i * sess->tag_stride);
}

int clt_set_geometry(struct ibtrs_clt *sess, const struct ibtrs_conn_rsp *r)
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
	sess->sg_mem = calloc((size_t)sess->queue_depth * sess->max_segments,
			      sizeof(struct iovec));
	if (!sess->tags || !sess->reqs || !sess->sg_mem)
		return -ENOMEM;
	ret = ibtrs_tags_init(&sess->tag_ids, sess->queue_depth, 0);
	if (ret)
		return ret;
	/*
	 * The headers (user message and trailer) go out with every request:
	 * registered once, so that a backend needing registration sends a
	 * request from registered data without a copy.
	 */
	ret = sess->ops->mr_alloc(sess->pd, 1, &sess->reqs_mr);
	if (!ret) {
		struct iovec iov = {
			.iov_base = sess->reqs,
			.iov_len = sess->queue_depth * sizeof(*sess->reqs),
		};

		ret = sess->ops->mr_map(sess->reqs_mr, &iov, 1);
	}
	if (ret)
		return ret;
	memset(sess->tags, 0, sess->tag_stride * sess->queue_depth);
	for (i = 0; i < sess->queue_depth; i++) {
		struct ibtrs_tag *tag = tag_at(sess, i);
		struct clt_req *req = &sess->reqs[i];

		tag->sess = sess;
		tag->mem_id = i;
		clt_req_init(sess, req, i,
			     sess->sg_mem + (size_t)i * sess->max_segments);
		ret = sess->ops->mr_alloc(sess->pd, sess->max_segments,
					  &req->mr);
		if (ret)
			return ret;
	}
	sess->have_geometry = true;
	return 0;
}

struct ibtrs_tag *ibtrs_clt_get_tag(struct ibtrs_clt *sess,
				    enum ibtrs_clt_con_type con_type, int wait)
{
	struct ibtrs_tag *tag;
	int id;

	if (!sess || (con_type != IBTRS_USR_CON && con_type != IBTRS_IO_CON) ||
	    (wait != IBTRS_TAG_WAIT && wait != IBTRS_TAG_NOWAIT)) {
		errno = EINVAL;
		return NULL;
	}
	id = ibtrs_tags_get(&sess->tag_ids, wait == IBTRS_TAG_WAIT);
	if (id < 0) {
		errno = -id;
		return NULL;
	}
	tag = tag_at(sess, (uint32_t)id);
	tag->con_type = con_type;
	/* The put's compare-and-swap is what catches a double put. */
	atomic_store_explicit(&tag->held, true, memory_order_release);
	return tag;
}

/* Whether a request of @sess is in flight on one of its paths. */
static bool clt_any_inflight(struct ibtrs_clt *sess)
{
	unsigned int i, n = atomic_load(&sess->path_cnt);

	for (i = 0; i < n; i++)
		if (atomic_load_explicit(&sess->paths[i]->inflight,
					 memory_order_relaxed))
			return true;
	return false;
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
	/* Tags of requests in flight come back soon: they may wake a waiter
	 * in a batch (tags.h). With nobody waiting the paths are not looked
	 * at; a waiter that comes meanwhile is woken by this put. */
	ibtrs_tags_put(&sess->tag_ids, tag->mem_id,
		       ibtrs_tags_have_waiters(&sess->tag_ids) &&
			       clt_any_inflight(sess));
}

struct ibtrs_tag *ibtrs_tag_from_pdu(void *pdu)
{
	return pdu ? (struct ibtrs_tag *)((char *)pdu - TAG_HDR_SIZE) : NULL;
}

void *ibtrs_tag_to_pdu(struct ibtrs_tag *tag)
{
	return tag ? (char *)tag + TAG_HDR_SIZE : NULL;
}
