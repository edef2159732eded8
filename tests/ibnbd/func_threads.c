// SPDX-License-Identifier: MIT
/*
 * func_threads.c - many threads submit to one device at once, with data
 * verification.
 *
 * 4 threads keep 16 requests each in flight on one device of a session of
 * two paths, a bounded number of random 4 KiB READs and WRITEs over the
 * blocks each slot owns. The completion callback checks a READ against the
 * last WRITE of its block (zeros before any) and submits the slot's next
 * request itself with IBNBD_F_NOWAIT; a slot that finds no tag (-EAGAIN)
 * goes back to its thread, which submits it waiting for a tag. At the end
 * the file holds the last WRITE of every block (pread).
 */
#include "func_harness.h"

#define NTHREADS 4
#define QD 16
#define BLKS_PER_SLOT 4
#define OPS_PER_SLOT 150
#define BS 4096
#define DISK_SIZE ((uint64_t)NTHREADS * QD * BLKS_PER_SLOT * BS)

static struct f_srv srv;
static char disk_path[128];
static struct ibnbd_dev *dev;
static _Atomic unsigned long nowait_again, cb_submits, bad_data, failures;

struct thr;

/**
 * struct slot - one request slot: its blocks, their last WRITE, its buffer
 */
struct slot {
	struct thr *t;
	unsigned int idx;
	unsigned int left;
	unsigned int blk;
	bool write;
	unsigned long long seed[BLKS_PER_SLOT];
	unsigned long long rng;
	unsigned char buf[BS];
	struct iovec iov;
	struct slot *next;
};

struct thr {
	unsigned int idx;
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct slot *idle;
	unsigned int active;
	struct slot slots[QD];
};

static struct thr thrs[NTHREADS];

static uint64_t slot_off(const struct slot *s, unsigned int blk)
{
	uint64_t n = ((uint64_t)s->t->idx * QD + s->idx) * BLKS_PER_SLOT + blk;

	return n * BS;
}

/* The buffer of a block never written, or of seed @seed. */
static void expect(unsigned char *buf, unsigned long long seed)
{
	if (seed)
		t_fill(buf, BS, seed);
	else
		memset(buf, 0, BS);
}

static void slot_done(void *priv, int err);

/* Pick and submit the slot's next request; -EAGAIN only with NOWAIT. */
static int slot_submit(struct slot *s, uint32_t flags)
{
	s->blk = (unsigned int)(t_rand(&s->rng) % BLKS_PER_SLOT);
	s->write = t_rand(&s->rng) & 1;
	if (s->write) {
		/* Seeds are unique per slot and never 0. */
		s->seed[s->blk] = ((unsigned long long)s->t->idx << 40) |
				  ((unsigned long long)s->idx << 32) | s->left;
		t_fill(s->buf, BS, s->seed[s->blk]);
	} else {
		memset(s->buf, 0xa5, BS);
	}
	s->iov.iov_base = s->buf;
	s->iov.iov_len = BS;
	return ibnbd_submit(dev, s->write ? IBNBD_OP_WRITE : IBNBD_OP_READ,
			    flags, slot_off(s, s->blk), BS, &s->iov, 1,
			    slot_done, s);
}

static void slot_idle(struct slot *s, bool finished)
{
	struct thr *t = s->t;

	pthread_mutex_lock(&t->lock);
	if (finished) {
		t->active--;
	} else {
		s->next = t->idle;
		t->idle = s;
	}
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void slot_done(void *priv, int err)
{
	struct slot *s = priv;
	unsigned char want[BS];
	int ret;

	if (err) {
		fprintf(stderr, "request failed: %s\n", strerror(-err));
		atomic_fetch_add(&failures, 1);
	} else if (!s->write) {
		expect(want, s->seed[s->blk]);
		if (memcmp(want, s->buf, BS))
			atomic_fetch_add(&bad_data, 1);
	}
	if (!--s->left || err) {
		slot_idle(s, true);
		return;
	}
	ret = slot_submit(s, IBNBD_F_NOWAIT);
	if (!ret) {
		atomic_fetch_add(&cb_submits, 1);
		return;
	}
	if (ret != -EAGAIN) {
		fprintf(stderr, "resubmit failed: %s\n", strerror(-ret));
		atomic_fetch_add(&failures, 1);
		slot_idle(s, true);
		return;
	}
	atomic_fetch_add(&nowait_again, 1);
	slot_idle(s, false);
}

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	struct slot *s;
	unsigned int i;
	int ret;

	pthread_mutex_lock(&t->lock);
	for (i = 0; i < QD; i++) {
		s = &t->slots[i];
		s->next = t->idle;
		t->idle = s;
	}
	t->active = QD;
	while (t->active) {
		while (!t->idle && t->active)
			pthread_cond_wait(&t->cond, &t->lock);
		while (t->idle) {
			s = t->idle;
			t->idle = s->next;
			pthread_mutex_unlock(&t->lock);
			ret = slot_submit(s, 0);
			pthread_mutex_lock(&t->lock);
			if (ret) {
				fprintf(stderr, "submit failed: %s\n",
					strerror(-ret));
				atomic_fetch_add(&failures, 1);
				t->active--;
			}
		}
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int main(void)
{
	unsigned char want[BS], got[BS];
	struct ibnbd_clt *clt;
	struct ibtrs_clt *sess;
	unsigned int i, j, k;

	t_watchdog(240);
	f_srv_start(&srv, 0);
	f_export(&srv, "disk", (off_t)DISK_SIZE, false, disk_path);
	sess = f_clt_open(srv.port, 2, "func-threads");
	clt = ibnbd_clt_attach(sess, NULL);
	CHECK(clt);
	dev = ibnbd_dev_open(clt, "disk", IBNBD_ACCESS_RW, NULL);
	CHECK(dev);

	for (i = 0; i < NTHREADS; i++) {
		struct thr *t = &thrs[i];

		t->idx = i;
		pthread_mutex_init(&t->lock, NULL);
		pthread_cond_init(&t->cond, NULL);
		for (j = 0; j < QD; j++) {
			t->slots[j].t = t;
			t->slots[j].idx = j;
			t->slots[j].left = OPS_PER_SLOT;
			t->slots[j].rng = (i * 1000ull + j) * 7919 + 1;
		}
	}
	for (i = 0; i < NTHREADS; i++)
		CHECK(!pthread_create(&thrs[i].th, NULL, thr_main, &thrs[i]));
	for (i = 0; i < NTHREADS; i++)
		pthread_join(thrs[i].th, NULL);
	CHECK_EQ(atomic_load(&failures), 0);
	CHECK_EQ(atomic_load(&bad_data), 0);
	/* Most requests came from the callbacks. */
	CHECK(atomic_load(&cb_submits) > 0);
	printf("callback submits %lu, NOWAIT without a tag %lu\n",
	       atomic_load(&cb_submits), atomic_load(&nowait_again));

	/* The close waits for nothing now; the file has every last WRITE. */
	CHECK_EQ(ibnbd_dev_close(dev), 0);
	for (i = 0; i < NTHREADS; i++)
		for (j = 0; j < QD; j++)
			for (k = 0; k < BLKS_PER_SLOT; k++) {
				struct slot *s = &thrs[i].slots[j];

				expect(want, s->seed[k]);
				f_pread(disk_path, got, BS,
					(off_t)slot_off(s, k));
				CHECK(!memcmp(want, got, BS));
			}
	CHECK_EQ(ibnbd_clt_detach(clt), 0);
	ibtrs_clt_close(sess);
	for (i = 0; i < NTHREADS; i++) {
		pthread_cond_destroy(&thrs[i].cond);
		pthread_mutex_destroy(&thrs[i].lock);
	}
	f_srv_stop(&srv);
	printf("func_threads: ok\n");
	return 0;
}
