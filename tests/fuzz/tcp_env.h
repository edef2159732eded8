/* SPDX-License-Identifier: MIT */
/*
 * tcp_env.h - the registered memory fuzz_tcp_frames offers the peer, shared
 * with the seed generator so that its frames carry the keys the target
 * issues: two regions of a software pd, the first of three segments (a
 * WRITE may span them), the second large enough for direct reads.
 */
#ifndef IBTRS_FUZZ_TCP_ENV_H
#define IBTRS_FUZZ_TCP_ENV_H

#include <stdlib.h>
#include <sys/uio.h>

#include "fuzz.h"
#include "swmr.h"

#define FUZZ_TCP_SEGS 4
#define FUZZ_TCP_KEY_GEN 0x5a5bu /* the regions' keys: see below */
static const size_t fuzz_tcp_seg_len[FUZZ_TCP_SEGS] = { 4096, 100, 8192,
							16384 };

/**
 * struct fuzz_tcp_env - a pd and its two regions
 * @pd: the pd
 * @mr: region 0 (segments 0..2) and region 1 (segment 3)
 * @seg: the segments, each its own heap block so that ASan sees an
 *       overrun of any of them
 */
struct fuzz_tcp_env {
	struct ibtrs_xprt_pd *pd;
	struct ibtrs_xprt_mr *mr[2];
	void *seg[FUZZ_TCP_SEGS];
};

/**
 * fuzz_tcp_env_init() - make the pd and map the regions
 * @e: filled
 *
 * The regions' keys are set to fixed values after mapping: swmr draws a
 * random generation per region, and keys that change from run to run
 * would make the seeds' and the corpus's keys stale, the placement into
 * regions out of reach. A key is the generation above the region's index
 * (swmr.c), which is what swmr_resolve() compares.
 */
static inline void fuzz_tcp_env_init(struct fuzz_tcp_env *e)
{
	struct iovec iov[FUZZ_TCP_SEGS];
	unsigned int i;

	FUZZ_CHECK(!swmr_pd_alloc(&e->pd, 4));
	for (i = 0; i < FUZZ_TCP_SEGS; i++) {
		e->seg[i] = calloc(1, fuzz_tcp_seg_len[i]);
		FUZZ_CHECK(e->seg[i]);
		iov[i].iov_base = e->seg[i];
		iov[i].iov_len = fuzz_tcp_seg_len[i];
	}
	FUZZ_CHECK(!swmr_mr_alloc(e->pd, 3, &e->mr[0]));
	FUZZ_CHECK(!swmr_mr_alloc(e->pd, 1, &e->mr[1]));
	FUZZ_CHECK(!swmr_mr_map(e->mr[0], iov, 3));
	FUZZ_CHECK(!swmr_mr_map(e->mr[1], iov + 3, 1));
	for (i = 0; i < 2; i++)
		__atomic_store_n(&e->mr[i]->key,
				 FUZZ_TCP_KEY_GEN << 16 |
					 (e->mr[i]->key & 0xffff),
				 __ATOMIC_RELAXED);
}

/**
 * fuzz_tcp_env_fini() - free what fuzz_tcp_env_init() made
 * @e: the environment
 */
static inline void fuzz_tcp_env_fini(struct fuzz_tcp_env *e)
{
	unsigned int i;

	for (i = 0; i < 2; i++) {
		swmr_mr_unmap(e->mr[i]);
		swmr_mr_free(e->mr[i]);
	}
	swmr_pd_free(e->pd);
	for (i = 0; i < FUZZ_TCP_SEGS; i++)
		free(e->seg[i]);
}

#endif /* IBTRS_FUZZ_TCP_ENV_H */
