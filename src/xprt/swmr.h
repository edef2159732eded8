/* SPDX-License-Identifier: MIT */
/*
 * swmr.h - memory registration in software, for backends whose wire has
 * none of its own (tcp, loop): protection domains hold regions, keys are
 * issued here and change at every map, and every access by a peer is
 * checked against the key and the bounds of the region.
 *
 * A key is (generation << 16) | slot; the address a peer uses for a
 * region is the offset from its start (the region's addr is 0).
 */
#ifndef IBTRS_SWMR_H
#define IBTRS_SWMR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "xprt.h"

#define SWMR_MAX_SGE 256 /* iovecs of one region */

int swmr_pd_alloc(struct ibtrs_xprt_pd **pd, unsigned int max_mrs);
void swmr_pd_free(struct ibtrs_xprt_pd *pd);
int swmr_mr_alloc(struct ibtrs_xprt_pd *pd, unsigned int max_sge,
		  struct ibtrs_xprt_mr **mr);
int swmr_mr_map(struct ibtrs_xprt_mr *mr, const struct iovec *iov,
		unsigned int cnt);
void swmr_mr_unmap(struct ibtrs_xprt_mr *mr);
void swmr_mr_free(struct ibtrs_xprt_mr *mr);

/*
 * A peer's access to @len bytes at @raddr of the region with key @rkey in
 * @pd: fills @dst (at most @max iovecs) with where they go and returns
 * their count, or -EPROTO for a bad key or range (a remote access error).
 */
int swmr_resolve(struct ibtrs_xprt_pd *pd, uint32_t rkey, uint64_t raddr,
		 size_t len, struct iovec *dst, unsigned int max);

/*
 * The receives a connection has posted, in order: a SEND from the peer
 * fills the oldest, an immediate consumes it. Loop thread only.
 */
struct swrq_ent {
	void *buf;
	uint32_t len;
	uint64_t wr_id;
};

struct swrq {
	struct swrq_ent *ent;
	unsigned int head, cnt, max;
};

int swrq_init(struct swrq *q, unsigned int max);
/* -ENOMEM when @max receives are posted already. */
int swrq_post(struct swrq *q, void *buf, uint32_t len, uint64_t wr_id);
/*
 * The receive the peer's next SEND of @len bytes (@send) or immediate
 * consumes, without taking it; NULL, and a log line naming @who, when
 * none is posted or a SEND does not fit it: fatal to the connection.
 */
struct swrq_ent *swrq_next(struct swrq *q, bool send, uint32_t len,
			   const char *who);
/* Take the receive swrq_next() returned. */
void swrq_pop(struct swrq *q);

#endif /* IBTRS_SWMR_H */
