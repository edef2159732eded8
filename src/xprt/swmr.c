// SPDX-License-Identifier: MIT
/*
 * swmr.c - software memory registration shared by the tcp and loop
 * backends.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "swmr.h"

struct swmr;

struct swmr_pd {
	pthread_mutex_t lock; /* slot allocation */
	unsigned int max_mrs;
	_Atomic(struct swmr *) *mrs;
};

struct swmr {
	struct ibtrs_xprt_mr base;
	struct swmr_pd *pd;
	unsigned int idx;
	pthread_spinlock_t lock;
	uint16_t gen;	  /* under @lock */
	bool mapped;	  /* under @lock */
	unsigned int cnt; /* under @lock */
	size_t len;	  /* under @lock */
	unsigned int max_sge;
	struct iovec iov[];
};

static inline struct swmr *to_swmr(struct ibtrs_xprt_mr *mr)
{
	return (struct swmr *)((char *)mr - offsetof(struct swmr, base));
}

int swmr_pd_alloc(struct ibtrs_xprt_pd **pdp, unsigned int max_mrs)
{
	struct swmr_pd *pd;

	if (!max_mrs || max_mrs > 0x10000)
		return -EINVAL;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->mrs = calloc(max_mrs, sizeof(*pd->mrs));
	if (!pd->mrs) {
		free(pd);
		return -ENOMEM;
	}
	pd->max_mrs = max_mrs;
	pthread_mutex_init(&pd->lock, NULL);
	*pdp = (struct ibtrs_xprt_pd *)pd;
	return 0;
}

void swmr_pd_free(struct ibtrs_xprt_pd *xpd)
{
	struct swmr_pd *pd = (struct swmr_pd *)xpd;

	if (!pd)
		return;
	pthread_mutex_destroy(&pd->lock);
	free(pd->mrs);
	free(pd);
}

int swmr_mr_alloc(struct ibtrs_xprt_pd *xpd, unsigned int max_sge,
		  struct ibtrs_xprt_mr **mrp)
{
	struct swmr_pd *pd = (struct swmr_pd *)xpd;
	struct swmr *mr;
	unsigned int i;

	if (!max_sge || max_sge > SWMR_MAX_SGE)
		return -EINVAL;
	mr = calloc(1, sizeof(*mr) + max_sge * sizeof(struct iovec));
	if (!mr)
		return -ENOMEM;
	mr->pd = pd;
	mr->max_sge = max_sge;
	mr->gen = (uint16_t)(rand() | 1);
	pthread_spin_init(&mr->lock, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_lock(&pd->lock);
	for (i = 0; i < pd->max_mrs; i++)
		if (!atomic_load(&pd->mrs[i]))
			break;
	if (i == pd->max_mrs) {
		pthread_mutex_unlock(&pd->lock);
		pthread_spin_destroy(&mr->lock);
		free(mr);
		return -ENOSPC;
	}
	mr->idx = i;
	atomic_store(&pd->mrs[i], mr);
	pthread_mutex_unlock(&pd->lock);
	*mrp = &mr->base;
	return 0;
}

int swmr_mr_map(struct ibtrs_xprt_mr *xmr, const struct iovec *iov,
		unsigned int cnt)
{
	struct swmr *mr = to_swmr(xmr);
	size_t len = 0;
	unsigned int i;

	if (cnt > mr->max_sge)
		return -EINVAL;
	for (i = 0; i < cnt; i++) {
		if (iov[i].iov_len > SIZE_MAX - len)
			return -EINVAL;
		len += iov[i].iov_len;
	}
	pthread_spin_lock(&mr->lock);
	if (cnt)
		memcpy(mr->iov, iov, cnt * sizeof(*iov));
	mr->cnt = cnt;
	mr->len = len;
	if (++mr->gen == 0)
		mr->gen = 1;
	mr->mapped = true;
	mr->base.key = ((uint32_t)mr->gen << 16) | mr->idx;
	mr->base.addr = 0; /* the peer addresses offsets from the start */
	pthread_spin_unlock(&mr->lock);
	return 0;
}

void swmr_mr_unmap(struct ibtrs_xprt_mr *xmr)
{
	struct swmr *mr = to_swmr(xmr);

	pthread_spin_lock(&mr->lock);
	mr->mapped = false;
	pthread_spin_unlock(&mr->lock);
}

void swmr_mr_free(struct ibtrs_xprt_mr *xmr)
{
	struct swmr *mr;

	if (!xmr)
		return;
	mr = to_swmr(xmr);
	pthread_mutex_lock(&mr->pd->lock);
	atomic_store(&mr->pd->mrs[mr->idx], NULL);
	pthread_mutex_unlock(&mr->pd->lock);
	pthread_spin_destroy(&mr->lock);
	free(mr);
}

int swmr_resolve(struct ibtrs_xprt_pd *xpd, uint32_t rkey, uint64_t raddr,
		 size_t len, struct iovec *dst, unsigned int max)
{
	struct swmr_pd *pd = (struct swmr_pd *)xpd;
	unsigned int idx = rkey & 0xffff, i, n = 0;
	struct swmr *mr;
	int ret = -EPROTO;

	if (!pd || idx >= pd->max_mrs)
		return -EPROTO;
	mr = atomic_load(&pd->mrs[idx]);
	if (!mr)
		return -EPROTO;
	pthread_spin_lock(&mr->lock);
	if (!mr->mapped || mr->base.key != rkey || raddr > mr->len ||
	    len > mr->len - raddr)
		goto out;
	for (i = 0; i < mr->cnt && len; i++) {
		size_t l = mr->iov[i].iov_len;

		if (raddr >= l) {
			raddr -= l;
			continue;
		}
		if (n == max)
			goto out;
		l -= raddr;
		if (l > len)
			l = len;
		dst[n].iov_base = (char *)mr->iov[i].iov_base + raddr;
		dst[n].iov_len = l;
		n++;
		len -= l;
		raddr = 0;
	}
	ret = (int)n;
out:
	pthread_spin_unlock(&mr->lock);
	return ret;
}

int swrq_init(struct swrq *q, unsigned int max)
{
	memset(q, 0, sizeof(*q));
	q->ent = calloc(max, sizeof(*q->ent));
	if (!q->ent)
		return -ENOMEM;
	q->max = max;
	return 0;
}

int swrq_post(struct swrq *q, void *buf, uint32_t len, uint64_t wr_id)
{
	struct swrq_ent *e;

	if (q->cnt == q->max)
		return -ENOMEM;
	e = &q->ent[(q->head + q->cnt) % q->max];
	e->buf = buf;
	e->len = len;
	e->wr_id = wr_id;
	q->cnt++;
	return 0;
}

struct swrq_ent *swrq_next(struct swrq *q, bool send, uint32_t len,
			   const char *who)
{
	struct swrq_ent *e;

	if (!q->cnt) {
		ibtrs_log_rl(IBTRS_LOG_ERR, "%s: %s with no receive posted",
			     who, send ? "SEND" : "immediate");
		return NULL;
	}
	e = &q->ent[q->head];
	if (send && len > e->len) {
		ibtrs_log_rl(IBTRS_LOG_ERR,
			     "%s: SEND of %u bytes into a %u-byte receive", who,
			     len, e->len);
		return NULL;
	}
	return e;
}

void swrq_pop(struct swrq *q)
{
	q->head = (q->head + 1) % q->max;
	q->cnt--;
}
