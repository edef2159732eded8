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

#include "keyring.h"
#include "log.h"
#include "seqcount.h"
#include "swmr.h"

struct swmr;

struct swmr_pd {
	pthread_mutex_t lock; /* slot allocation */
	unsigned int max_mrs;
	/* Under @lock: every slot below it is taken, so that a session's
	 * queue depth of registrations is not quadratic in it. */
	unsigned int free_hint;
	_Atomic(struct swmr *) *mrs;
};

struct swmr {
	struct ibtrs_xprt_mr base;
	struct swmr_pd *pd;
	unsigned int idx;
	/*
	 * Map and unmap change what follows under @lock and @seq; a peer's
	 * access reads it under @seq alone, with relaxed atomic loads, and
	 * reads it again if a map or unmap ran meanwhile.
	 */
	pthread_spinlock_t lock;
	ibtrs_seqcount_t seq;
	uint16_t gen; /* under @lock only */
	bool mapped;
	unsigned int cnt;
	size_t len;
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
	void *p, *table;
	int ret;

	ret = ibtrs_xprt_pd_new(sizeof(*pd), max_mrs, sizeof(*pd->mrs), &p,
				&table);
	if (ret)
		return ret;
	pd = p;
	pd->mrs = table;
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
	if (ibtrs_random(&mr->gen, sizeof(mr->gen))) {
		free(mr);
		return -EAGAIN;
	}
	mr->gen |= 1;
	pthread_spin_init(&mr->lock, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_lock(&pd->lock);
	for (i = pd->free_hint; i < pd->max_mrs; i++)
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
	pd->free_hint = i + 1;
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
	ibtrs_seq_write_begin(&mr->seq);
	for (i = 0; i < cnt; i++) {
		__atomic_store_n(&mr->iov[i].iov_base, iov[i].iov_base,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&mr->iov[i].iov_len, iov[i].iov_len,
				 __ATOMIC_RELAXED);
	}
	__atomic_store_n(&mr->cnt, cnt, __ATOMIC_RELAXED);
	__atomic_store_n(&mr->len, len, __ATOMIC_RELAXED);
	if (++mr->gen == 0)
		mr->gen = 1;
	__atomic_store_n(&mr->mapped, true, __ATOMIC_RELAXED);
	__atomic_store_n(&mr->base.key, ((uint32_t)mr->gen << 16) | mr->idx,
			 __ATOMIC_RELAXED);
	mr->base.addr = 0; /* the peer addresses offsets from the start */
	ibtrs_seq_write_end(&mr->seq);
	pthread_spin_unlock(&mr->lock);
	return 0;
}

void swmr_mr_unmap(struct ibtrs_xprt_mr *xmr)
{
	struct swmr *mr = to_swmr(xmr);

	pthread_spin_lock(&mr->lock);
	ibtrs_seq_write_begin(&mr->seq);
	__atomic_store_n(&mr->mapped, false, __ATOMIC_RELAXED);
	ibtrs_seq_write_end(&mr->seq);
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
	if (mr->idx < mr->pd->free_hint)
		mr->pd->free_hint = mr->idx;
	pthread_mutex_unlock(&mr->pd->lock);
	pthread_spin_destroy(&mr->lock);
	free(mr);
}

/* swmr_resolve() on one snapshot of @mr, read under its sequence count. */
static int swmr_resolve_one(struct swmr *mr, uint32_t rkey, uint64_t raddr,
			    size_t len, struct iovec *dst, unsigned int max)
{
	size_t mr_len = __atomic_load_n(&mr->len, __ATOMIC_RELAXED);
	unsigned int i, n = 0,
			cnt = __atomic_load_n(&mr->cnt, __ATOMIC_RELAXED);

	if (!__atomic_load_n(&mr->mapped, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&mr->base.key, __ATOMIC_RELAXED) != rkey ||
	    raddr > mr_len || len > mr_len - raddr || cnt > mr->max_sge)
		return -EPROTO;
	for (i = 0; i < cnt && len; i++) {
		size_t l =
			__atomic_load_n(&mr->iov[i].iov_len, __ATOMIC_RELAXED);

		if (raddr >= l) {
			raddr -= l;
			continue;
		}
		if (n == max)
			return -EPROTO;
		l -= raddr;
		if (l > len)
			l = len;
		dst[n].iov_base = (char *)__atomic_load_n(&mr->iov[i].iov_base,
							  __ATOMIC_RELAXED) +
				  raddr;
		dst[n].iov_len = l;
		n++;
		len -= l;
		raddr = 0;
	}
	return (int)n;
}

/*
 * No lock: accesses come with every frame, maps and unmaps with requests
 * at most. A snapshot torn by a map or unmap is read again.
 */
int swmr_resolve(struct ibtrs_xprt_pd *xpd, uint32_t rkey, uint64_t raddr,
		 size_t len, struct iovec *dst, unsigned int max)
{
	struct swmr_pd *pd = (struct swmr_pd *)xpd;
	unsigned int idx = rkey & 0xffff, seq;
	struct swmr *mr;
	int ret;

	if (!pd || idx >= pd->max_mrs)
		return -EPROTO;
	mr = atomic_load(&pd->mrs[idx]);
	if (!mr)
		return -EPROTO;
	do {
		seq = ibtrs_seq_read_begin(&mr->seq);
		ret = swmr_resolve_one(mr, rkey, raddr, len, dst, max);
	} while (ibtrs_seq_read_retry(&mr->seq, seq));
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
